// SPDX-License-Identifier: Apache-2.0
#include "nvml/nvml_status.h"

#include <fmt/format.h>

namespace warpscope::nvml {
namespace {

struct CodeInfo {
  nvmlReturn_t code;
  std::string_view name;
  std::string_view reason;
  base::StatusCode status;
};

using SC = base::StatusCode;

// Codes 0..30 and 999 as numbered in every NVML header since 11.0 (newer codes appended).
constexpr CodeInfo kCodes[] = {
    {0, "NVML_SUCCESS", "success", SC::kOk},
    {1, "NVML_ERROR_UNINITIALIZED", "uninitialized", SC::kUnavailable},
    {2, "NVML_ERROR_INVALID_ARGUMENT", "invalid_argument", SC::kInvalidArgument},
    {3, "NVML_ERROR_NOT_SUPPORTED", "not_supported", SC::kUnsupported},
    {4, "NVML_ERROR_NO_PERMISSION", "no_permission", SC::kPermissionDenied},
    {5, "NVML_ERROR_ALREADY_INITIALIZED", "already_initialized", SC::kInternal},
    {6, "NVML_ERROR_NOT_FOUND", "not_found", SC::kNotFound},
    {7, "NVML_ERROR_INSUFFICIENT_SIZE", "insufficient_size", SC::kResourceExhausted},
    {8, "NVML_ERROR_INSUFFICIENT_POWER", "insufficient_power", SC::kUnavailable},
    {9, "NVML_ERROR_DRIVER_NOT_LOADED", "driver_not_loaded", SC::kUnavailable},
    {10, "NVML_ERROR_TIMEOUT", "timeout", SC::kUnavailable},
    {11, "NVML_ERROR_IRQ_ISSUE", "irq_issue", SC::kUnavailable},
    {12, "NVML_ERROR_LIBRARY_NOT_FOUND", "library_not_found", SC::kNotFound},
    {13, "NVML_ERROR_FUNCTION_NOT_FOUND", "function_not_found", SC::kUnsupported},
    {14, "NVML_ERROR_CORRUPTED_INFOROM", "corrupted_inforom", SC::kInternal},
    {15, "NVML_ERROR_GPU_IS_LOST", "gpu_is_lost", SC::kUnavailable},
    {16, "NVML_ERROR_RESET_REQUIRED", "reset_required", SC::kUnavailable},
    {17, "NVML_ERROR_OPERATING_SYSTEM", "operating_system", SC::kPermissionDenied},
    {18, "NVML_ERROR_LIB_RM_VERSION_MISMATCH", "lib_rm_version_mismatch", SC::kUnavailable},
    {19, "NVML_ERROR_IN_USE", "in_use", SC::kUnavailable},
    {20, "NVML_ERROR_MEMORY", "memory", SC::kResourceExhausted},
    {21, "NVML_ERROR_NO_DATA", "no_data", SC::kNotFound},
    {22, "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED", "vgpu_ecc_not_supported", SC::kUnsupported},
    {23, "NVML_ERROR_INSUFFICIENT_RESOURCES", "insufficient_resources", SC::kResourceExhausted},
    {24, "NVML_ERROR_FREQ_NOT_SUPPORTED", "freq_not_supported", SC::kUnsupported},
    {25, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH", "argument_version_mismatch", SC::kInvalidArgument},
    {26, "NVML_ERROR_DEPRECATED", "deprecated", SC::kUnsupported},
    {27, "NVML_ERROR_NOT_READY", "not_ready", SC::kUnavailable},
    {28, "NVML_ERROR_GPU_NOT_FOUND", "gpu_not_found", SC::kNotFound},
    {29, "NVML_ERROR_INVALID_STATE", "invalid_state", SC::kInternal},
    {30, "NVML_ERROR_RESET_TYPE_NOT_SUPPORTED", "reset_type_not_supported", SC::kUnsupported},
};
constexpr CodeInfo kUnknown{999, "NVML_ERROR_UNKNOWN", "unknown", SC::kInternal};
constexpr CodeInfo kUnrecognized{-1, "NVML_ERROR_UNRECOGNIZED", "unrecognized", SC::kInternal};

const CodeInfo& Lookup(nvmlReturn_t rc) {
  constexpr int kCount = static_cast<int>(sizeof(kCodes) / sizeof(kCodes[0]));
  if (rc >= 0 && rc < kCount) {
    return kCodes[rc];
  }
  if (rc == kUnknown.code) {
    return kUnknown;
  }
  return kUnrecognized;
}

}  // namespace

std::string_view ReturnCodeName(nvmlReturn_t rc) { return Lookup(rc).name; }

std::string_view ReturnCodeReason(nvmlReturn_t rc) { return Lookup(rc).reason; }

base::StatusCode ToStatusCode(nvmlReturn_t rc) { return Lookup(rc).status; }

std::string_view ReturnCodeRemedy(nvmlReturn_t rc) {
  switch (rc) {
    case abi::kErrorDriverNotLoaded:
      return "the NVIDIA kernel driver is not loaded: load it (modprobe nvidia) or install the "
             "driver";
    case abi::kErrorLibRmVersionMismatch:
      return "the NVML library and the loaded kernel driver have different versions (usually "
             "after a driver upgrade): reboot or reload the driver";
    case abi::kErrorNoPermission:
      return "no permission to use the GPU device files: run the agent as root or as a user "
             "with access to /dev/nvidia*";
    case abi::kErrorGpuIsLost:
      return "the GPU fell off the bus: check dmesg for XID 79 and reset or reboot the node";
    case abi::kErrorResetRequired:
      return "the GPU needs a reset (nvidia-smi -r) or a reboot";
    case abi::kErrorLibraryNotFound:
      return "a library NVML depends on is missing: reinstall the NVIDIA driver";
    default:
      return {};
  }
}

base::Status ToStatus(nvmlReturn_t rc, std::string_view call, std::string_view text) {
  if (rc == abi::kSuccess) {
    return base::OkStatus();
  }
  const CodeInfo& info = Lookup(rc);
  std::string message = text.empty() ? fmt::format("{}: {} ({})", call, info.name, rc)
                                     : fmt::format("{}: {} ({}, {})", call, text, info.name, rc);
  std::string_view remedy = ReturnCodeRemedy(rc);
  if (!remedy.empty()) {
    message += "; ";
    message += remedy;
  }
  return base::Status(info.status, std::move(message));
}

}  // namespace warpscope::nvml
