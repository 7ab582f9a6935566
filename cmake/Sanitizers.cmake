# Sanitizer and fuzzing builds (issue 7). Included from the top-level CMakeLists.txt before any
# target is defined, so the flags reach every object of libtrnrt, libtrnccl and the tests.
#
#   -DTRNCCL_SANITIZE=address   AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer on)
#   -DTRNCCL_SANITIZE=thread    ThreadSanitizer (cannot be combined with address)
#   -DTRNCCL_FUZZ=ON            libFuzzer targets in fuzz/ (clang only); adds coverage
#                               instrumentation (-fsanitize=fuzzer-no-link) to every object
#
# The presets "asan" and "tsan" (CMakePresets.json) and `make asan-test` / `make tsan-test` use
# these; they are not part of `make test`.
set(TRNCCL_SANITIZE "" CACHE STRING "Sanitizer build: '', 'address' (ASan+UBSan) or 'thread'")
set_property(CACHE TRNCCL_SANITIZE PROPERTY STRINGS "" address thread)
option(TRNCCL_FUZZ "Build the libFuzzer targets in fuzz/ (clang only)" OFF)

if(TRNCCL_SANITIZE STREQUAL "address")
  set(_trnccl_san -fsanitize=address,undefined -fno-sanitize-recover=undefined
    -fno-omit-frame-pointer)
elseif(TRNCCL_SANITIZE STREQUAL "thread")
  set(_trnccl_san -fsanitize=thread -fno-omit-frame-pointer)
elseif(NOT TRNCCL_SANITIZE STREQUAL "")
  message(FATAL_ERROR "TRNCCL_SANITIZE must be empty, 'address' or 'thread', got '${TRNCCL_SANITIZE}'")
endif()
if(_trnccl_san)
  # GCC's flow warnings report false positives once sanitizer instrumentation changes inlining
  # (-Wmaybe-uninitialized: std::variant moves in src/api/group.cc; -Warray-bounds: switch
  # branches that are dead for an inlined element type);
  # -Werror would stop the build. The normal build keeps them.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    list(APPEND _trnccl_san -Wno-maybe-uninitialized -Wno-array-bounds)
    # GCC 12 warns that TSan does not model atomic_thread_fence, which Boost.Asio's handler
    # invocation uses (std_fenced_block); its queues are mutex-protected, which TSan sees.
    if(TRNCCL_SANITIZE STREQUAL "thread")
      list(APPEND _trnccl_san -Wno-tsan)
    endif()
  endif()
  add_compile_options(${_trnccl_san})
  add_link_options(${_trnccl_san})
  message(STATUS "trnccl: sanitizer build (${TRNCCL_SANITIZE}): ${_trnccl_san}")
endif()

if(TRNCCL_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TRNCCL_FUZZ=ON needs clang (libFuzzer): "
      "cmake -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DTRNCCL_FUZZ=ON ...")
  endif()
  # Coverage feedback for everything; the fuzzer's main() is linked into fuzz/ targets only.
  add_compile_options(-fsanitize=fuzzer-no-link)
  if(NOT _trnccl_san)
    add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer)
    add_link_options(-fsanitize=address,undefined)
  endif()
endif()
