// Status and Result<T>: the one error mechanism below the API (STYLE.md rule 6).
// A Status carries a code (the API's trncclResult_t values), a message, and the peer rank
// the error concerns (-1 when none). The API layer turns it into trncclResult_t and records
// the message for trncclGetLastError.
#pragma once

#include <fmt/format.h>

#include <memory>
#include <string>
#include <utility>
#include <variant>

namespace trnccl {

enum class Code : int {
  kOk = 0,
  kDeviceError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
  kTimeout = 8,
};

// An ok Status is one null pointer: the hot path builds, moves and destroys dozens per call
// (every TRN_TRY, every Result<T>), and a std::string member cost ~5-10 instructions each time
// (src/device/README.md, "Instructions per small call"). Only an error allocates.
class [[nodiscard]] Status {
 public:
  Status() = default;
  // A code of kOk makes an ok Status: the message and peer of a success are not kept.
  Status(Code code, std::string message, int peer = -1)
      : error_(code == Code::kOk ? nullptr : new Error{code, std::move(message), peer}) {}
  Status(const Status& other) : error_(other.error_ ? new Error(*other.error_) : nullptr) {}
  Status& operator=(const Status& other) {
    if (this != &other) error_.reset(other.error_ ? new Error(*other.error_) : nullptr);
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status ok() { return {}; }

  bool isOk() const { return error_ == nullptr; }
  explicit operator bool() const { return isOk(); }
  Code code() const { return error_ ? error_->code : Code::kOk; }
  const std::string& message() const { return error_ ? error_->message : noMessage(); }
  int peer() const { return error_ ? error_->peer : -1; }

 private:
  struct Error {
    Code code;
    std::string message;
    int peer;
  };
  static const std::string& noMessage();  // the empty message of every ok Status

  std::unique_ptr<Error> error_;
};

// Builds an error Status with a fmt-formatted message.
template <typename... Args>
Status makeError(Code code, fmt::format_string<Args...> format, Args&&... args) {
  return Status(code, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
Status invalidArgument(fmt::format_string<Args...> format, Args&&... args) {
  return Status(Code::kInvalidArgument, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
Status systemError(fmt::format_string<Args...> format, Args&&... args) {
  return Status(Code::kSystemError, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
Status internalError(fmt::format_string<Args...> format, Args&&... args) {
  return Status(Code::kInternalError, fmt::format(format, std::forward<Args>(args)...));
}

// A value or an error Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

  bool isOk() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return isOk(); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  T* operator->() { return &value(); }
  Status status() const { return isOk() ? Status() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

const char* codeName(Code code);

}  // namespace trnccl

// The one propagation helper: returns the Status of `expr` from the enclosing function on error.
#define TRN_TRY(expr)                                    \
  do {                                                   \
    ::trnccl::Status trn_try_status_ = (expr);           \
    if (!trn_try_status_.isOk()) return trn_try_status_; \
  } while (0)
