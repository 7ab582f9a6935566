// A move-only callable whose captures live inside the object: never a heap allocation.
//
// Why: std::function allocates as soon as a lambda's captures exceed two pointers or are not
// trivially copyable (a shared_ptr), and a stream's task was exactly that: every collective
// call paid a malloc and a free on the hot path. A stream's ring slot holds an InlineFunction,
// so enqueueing moves the captures into the slot. A callable too large for `Capacity` does not
// compile: capture less (one pointer to a struct that owns the rest). A moved-from
// InlineFunction is empty.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace trnccl {

template <typename Signature, size_t Capacity>
class InlineFunction;

template <typename R, typename... Args, size_t Capacity>
class InlineFunction<R(Args...), Capacity> {
 public:
  InlineFunction() = default;
  InlineFunction(std::nullptr_t) {}  // NOLINT: as std::function, nullptr is "empty"

  template <typename F, typename Fn = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<Fn, InlineFunction> &&
                                        std::is_invocable_r_v<R, Fn&, Args...>>>
  InlineFunction(F&& f) {  // NOLINT: implicit, as std::function
    static_assert(sizeof(Fn) <= Capacity, "the callable's captures do not fit: capture less");
    static_assert(alignof(Fn) <= alignof(std::max_align_t), "over-aligned captures");
    static_assert(std::is_nothrow_move_constructible_v<Fn>, "captures must move without throwing");
    ::new (static_cast<void*>(storage_)) Fn(std::forward<F>(f));
    ops_ = &kOps<Fn>;
  }

  InlineFunction(InlineFunction&& other) noexcept { take(other); }
  InlineFunction& operator=(InlineFunction&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  InlineFunction& operator=(std::nullptr_t) {
    reset();
    return *this;
  }
  InlineFunction(const InlineFunction&) = delete;
  InlineFunction& operator=(const InlineFunction&) = delete;
  ~InlineFunction() { reset(); }

  explicit operator bool() const { return ops_ != nullptr; }
  R operator()(Args... args) { return ops_->call(storage_, std::forward<Args>(args)...); }

 private:
  struct Ops {
    R (*call)(void* self, Args&&... args);
    void (*move)(void* to, void* from);  // move-constructs into `to`, destroys `from`
    void (*destroy)(void* self);
  };
  template <typename Fn>
  static constexpr Ops kOps{[](void* self, Args&&... args) -> R {
                              return (*static_cast<Fn*>(self))(std::forward<Args>(args)...);
                            },
                            [](void* to, void* from) {
                              ::new (to) Fn(std::move(*static_cast<Fn*>(from)));
                              static_cast<Fn*>(from)->~Fn();
                            },
                            [](void* self) { static_cast<Fn*>(self)->~Fn(); }};

  void take(InlineFunction& other) {
    if (other.ops_ == nullptr) return;
    other.ops_->move(storage_, other.storage_);
    ops_ = std::exchange(other.ops_, nullptr);
  }
  void reset() {
    if (ops_ != nullptr) std::exchange(ops_, nullptr)->destroy(storage_);
  }

  alignas(std::max_align_t) unsigned char storage_[Capacity];
  const Ops* ops_ = nullptr;
};

}  // namespace trnccl
