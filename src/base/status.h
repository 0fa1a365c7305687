// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_BASE_STATUS_H_
#define WARPSCOPE_BASE_STATUS_H_

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <utility>

namespace warpscope::base {

// Coarse error classes. Callers branch on the code; the message is for operators and names the
// object that failed and, where there is one, the remedy.
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // bad input from a user: flag, config, request body
  kNotFound,          // a file, symbol, device or entity is absent
  kUnsupported,       // the platform or device cannot do this (NVML NOT_SUPPORTED)
  kPermissionDenied,  // EACCES, NVML NO_PERMISSION
  kUnavailable,       // transient: retry later (network, GPU lost, server down)
  kResourceExhausted, // a bound was hit (queue full, too many series)
  kInternal,          // a bug or an unexpected library failure
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  // Lets `return Error(status);` and the WARPSCOPE_*_RETURN macros work in functions returning
  // Status as well as Result<T>.
  Status(tl::unexpected<Status> error) : Status(std::move(error.value())) {}  // NOLINT

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: --collect-metrics-interval=0s: must be at least 100ms"
  std::string ToString() const;
  // Returns a copy whose message is "<context>: <message>".
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }

template <typename... Args>
Status ErrStatus(StatusCode code, fmt::format_string<Args...> f, Args&&... args) {
  return Status(code, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status InvalidArgument(fmt::format_string<Args...> f, Args&&... args) {
  return ErrStatus(StatusCode::kInvalidArgument, f, std::forward<Args>(args)...);
}
template <typename... Args>
Status NotFound(fmt::format_string<Args...> f, Args&&... args) {
  return ErrStatus(StatusCode::kNotFound, f, std::forward<Args>(args)...);
}
template <typename... Args>
Status Unsupported(fmt::format_string<Args...> f, Args&&... args) {
  return ErrStatus(StatusCode::kUnsupported, f, std::forward<Args>(args)...);
}
template <typename... Args>
Status PermissionDenied(fmt::format_string<Args...> f, Args&&... args) {
  return ErrStatus(StatusCode::kPermissionDenied, f, std::forward<Args>(args)...);
}
template <typename... Args>
Status Unavailable(fmt::format_string<Args...> f, Args&&... args) {
  return ErrStatus(StatusCode::kUnavailable, f, std::forward<Args>(args)...);
}
template <typename... Args>
Status Internal(fmt::format_string<Args...> f, Args&&... args) {
  return ErrStatus(StatusCode::kInternal, f, std::forward<Args>(args)...);
}

// Result<T> holds a T or the Status that explains why there is none.
template <typename T>
using Result = tl::expected<T, Status>;

// `return Error(NotFound("..."));` inside a function returning Result<T>.
inline tl::unexpected<Status> Error(Status status) { return tl::unexpected<Status>(std::move(status)); }

}  // namespace warpscope::base

#define WARPSCOPE_INTERNAL_CONCAT2(a, b) a##b
#define WARPSCOPE_INTERNAL_CONCAT(a, b) WARPSCOPE_INTERNAL_CONCAT2(a, b)

// Returns the Status from the enclosing function (returning Status or Result<T>) if `expr` (a
// Status) is an error.
#define WARPSCOPE_RETURN_IF_ERROR(expr)                                            \
  do {                                                                             \
    ::warpscope::base::Status warpscope_status_ = (expr);                          \
    if (!warpscope_status_.ok()) return ::warpscope::base::Error(warpscope_status_); \
  } while (0)

// `WARPSCOPE_ASSIGN_OR_RETURN(auto x, MakeX());` in a function returning Status or Result<U>.
#define WARPSCOPE_ASSIGN_OR_RETURN(lhs, expr)                                        \
  auto WARPSCOPE_INTERNAL_CONCAT(warpscope_result_, __LINE__) = (expr);              \
  if (!WARPSCOPE_INTERNAL_CONCAT(warpscope_result_, __LINE__))                       \
    return ::warpscope::base::Error(                                                 \
        std::move(WARPSCOPE_INTERNAL_CONCAT(warpscope_result_, __LINE__).error()));  \
  lhs = std::move(*WARPSCOPE_INTERNAL_CONCAT(warpscope_result_, __LINE__))

#endif  // WARPSCOPE_BASE_STATUS_H_
