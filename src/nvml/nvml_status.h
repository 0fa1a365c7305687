// SPDX-License-Identifier: Apache-2.0
// The one place where NVML return codes become warpscope Status values, counter reasons and
// operator text. Everything here is a pure function of the code: no library handle needed, so
// it also works when nvmlErrorString is missing or NVML failed to load.
#ifndef WARPSCOPE_NVML_NVML_STATUS_H_
#define WARPSCOPE_NVML_NVML_STATUS_H_

#include <string_view>

#include "base/status.h"
#include "nvml/abi.h"

namespace warpscope::nvml {

using abi::nvmlReturn_t;

// "NVML_ERROR_GPU_IS_LOST"; "NVML_ERROR_<code>" is not produced: unknown codes give
// "NVML_ERROR_UNRECOGNIZED".
std::string_view ReturnCodeName(nvmlReturn_t rc);

// Short snake_case reason for self-metrics and error counters: "not_supported", "gpu_is_lost",
// "no_permission", "unknown", ... ("unrecognized" for codes outside the table).
std::string_view ReturnCodeReason(nvmlReturn_t rc);

// Status class of a code:
//   SUCCESS -> kOk
//   NOT_SUPPORTED, FUNCTION_NOT_FOUND (also: symbol missing from the library) -> kUnsupported
//   NO_PERMISSION, OPERATING_SYSTEM -> kPermissionDenied
//   NOT_FOUND, LIBRARY_NOT_FOUND, GPU_NOT_FOUND -> kNotFound
//   INVALID_ARGUMENT, ARGUMENT_VERSION_MISMATCH -> kInvalidArgument
//   GPU_IS_LOST, RESET_REQUIRED, DRIVER_NOT_LOADED, LIB_RM_VERSION_MISMATCH, UNINITIALIZED,
//   TIMEOUT, IRQ_ISSUE, INSUFFICIENT_POWER, IN_USE, NOT_READY -> kUnavailable
//   INSUFFICIENT_SIZE, MEMORY, INSUFFICIENT_RESOURCES -> kResourceExhausted
//   anything else (UNKNOWN, CORRUPTED_INFOROM, ...) -> kInternal
base::StatusCode ToStatusCode(nvmlReturn_t rc);

// "<call>: <text> (<NAME>, <code>)" plus a remedy for the codes that have one (driver not loaded,
// version mismatch, no permission, GPU lost). `text` is nvmlErrorString's output when the caller
// has it, else empty (the name then stands alone). SUCCESS gives OkStatus().
base::Status ToStatus(nvmlReturn_t rc, std::string_view call, std::string_view text = {});

// The operator remedy for `rc`, or "" when there is none to give.
std::string_view ReturnCodeRemedy(nvmlReturn_t rc);

// Cheap predicates used on every poll.
inline bool IsSuccess(nvmlReturn_t rc) { return rc == abi::kSuccess; }
// The query is not available on this device/driver: the metric is absent, never zero.
inline bool IsUnsupported(nvmlReturn_t rc) {
  return rc == abi::kErrorNotSupported || rc == abi::kErrorFunctionNotFound;
}
// The device is gone until it is reset or comes back: degrade that GPU only.
inline bool IsGpuLost(nvmlReturn_t rc) {
  return rc == abi::kErrorGpuIsLost || rc == abi::kErrorResetRequired;
}

}  // namespace warpscope::nvml

#endif  // WARPSCOPE_NVML_NVML_STATUS_H_
