// SPDX-License-Identifier: Apache-2.0
// NvmlLibrary: NVML opened with dlopen, every symbol of nvml/abi.h resolved, nvmlInit done.
//
// There is no link-time dependency on anything from NVIDIA: the agent runs on hosts without a
// driver and reports a clear Status instead. A symbol the library lacks is a null pointer in
// api() and behaves exactly like NVML_ERROR_FUNCTION_NOT_FOUND through Invoke() and the typed
// wrappers below, so callers handle "old driver" and "not supported" in one branch
// (IsUnsupported()).
//
// Thread safety: NVML itself is thread-safe. Load/destruction are not concurrent with anything.
// All const methods may be called from any thread; DeviceGetRunningProcesses() uses a
// caller-owned buffer and touches only atomics of the library, so it is thread-safe as long as
// each thread uses its own ProcessListBuffer.
//
//   WARPSCOPE_ASSIGN_OR_RETURN(auto lib, NvmlLibrary::Load(options.nvml_path));
//   unsigned count = 0;
//   WARPSCOPE_NVML_RETURN_IF_ERROR(*lib, lib->DeviceGetCount(&count));
//   unsigned mw = 0;
//   nvmlReturn_t rc = WARPSCOPE_NVML_CALL(*lib, nvmlDeviceGetPowerUsage, dev, &mw);
#ifndef WARPSCOPE_NVML_NVML_LIBRARY_H_
#define WARPSCOPE_NVML_NVML_LIBRARY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "nvml/abi.h"
#include "nvml/nvml_status.h"

namespace warpscope::nvml {

using Device = abi::nvmlDevice_t;

// One pointer per symbol of WARPSCOPE_NVML_FUNCTIONS and WARPSCOPE_NVML_LEGACY_FUNCTIONS, named
// exactly like the symbol; nullptr when the library does not export it.
struct NvmlFunctions {
#define WARPSCOPE_NVML_DECLARE_POINTER(ret, name, params) abi::name##_fn name = nullptr;
  WARPSCOPE_NVML_FUNCTIONS(WARPSCOPE_NVML_DECLARE_POINTER)
  WARPSCOPE_NVML_LEGACY_FUNCTIONS(WARPSCOPE_NVML_DECLARE_POINTER)
#undef WARPSCOPE_NVML_DECLARE_POINTER
};

// Which WARPSCOPE_NVML_PROBE_SYMBOLS the library exports (resolved, never called).
struct NvmlProbes {
  bool conf_compute_mem_size_info = false;   // nvmlDeviceGetConfComputeMemSizeInfo
  bool running_process_detail_list = false;  // nvmlDeviceGetRunningProcessDetailList
};

// Framebuffer memory in bytes. With the v1 call (drivers before R510) `used` includes the
// driver-reserved memory and `has_reserved` is false.
struct MemoryInfo {
  uint64_t total = 0;
  uint64_t reserved = 0;
  uint64_t free = 0;
  uint64_t used = 0;
  bool has_reserved = false;
};

enum class ProcessListKind : uint8_t { kCompute, kGraphics };

// One entry of a running-process list, whatever struct version the driver wrote.
struct ProcessEntry {
  unsigned pid = 0;
  uint64_t used_memory = 0;      // bytes
  bool has_used_memory = false;  // false when NVML reports NVML_VALUE_NOT_AVAILABLE
  unsigned gpu_instance_id = abi::kInvalidInstanceId;      // MIG GI, or kInvalidInstanceId
  unsigned compute_instance_id = abi::kInvalidInstanceId;  // MIG CI, or kInvalidInstanceId
};

// Reusable scratch space for DeviceGetRunningProcesses(). Always `capacity() * 32` bytes (the
// widest stride any driver writes), 8-byte aligned, so a driver writing wider entries than we
// parse can never overflow it. Grows, never shrinks. Not thread-safe.
class ProcessListBuffer {
 public:
  static constexpr size_t kMaxEntryBytes = 32;
  unsigned capacity() const { return capacity_; }
  std::byte* data() { return reinterpret_cast<std::byte*>(storage_.data()); }
  const std::byte* data() const { return reinterpret_cast<const std::byte*>(storage_.data()); }
  size_t size_bytes() const { return static_cast<size_t>(capacity_) * kMaxEntryBytes; }
  void Reserve(unsigned entries);

 private:
  std::vector<uint64_t> storage_;
  unsigned capacity_ = 0;
};

class NvmlLibrary {
 public:
  static constexpr std::string_view kDefaultSoname = "libnvidia-ml.so.1";
  static constexpr std::string_view kDevSoname = "libnvidia-ml.so";

  // Opens `path` (or, when empty, libnvidia-ml.so.1 then libnvidia-ml.so through the normal
  // dynamic-loader search) with RTLD_NOW | RTLD_LOCAL, resolves every symbol and initialises
  // NVML with nvmlInit_v2 (nvmlInit on old drivers).
  // Errors: kNotFound "NVML library not found ..." naming the path and --nvml-path;
  // kUnsupported when the file exports no nvmlInit; the init code's class (e.g. kUnavailable
  // for DRIVER_NOT_LOADED / LIB_RM_VERSION_MISMATCH) with the NVML text, code and remedy.
  [[nodiscard]] static base::Result<std::unique_ptr<NvmlLibrary>> Load(std::string_view path);

  // nvmlShutdown, then dlclose.
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const NvmlFunctions& api() const { return api_; }
  const NvmlProbes& probes() const { return probes_; }
  // The name dlopen succeeded with ("libnvidia-ml.so.1" or the --nvml-path value).
  const std::string& path() const { return path_; }
  // dlsym on the opened library, for optional extensions (nullptr when absent).
  void* FindSymbol(const char* name) const;

  // Calls `fn(args...)`, or returns FUNCTION_NOT_FOUND when the symbol was missing.
  template <typename Fn, typename... Args>
  [[nodiscard]] static nvmlReturn_t Invoke(Fn fn, Args... args) {
    return fn == nullptr ? abi::kErrorFunctionNotFound : fn(args...);
  }

  // nvmlErrorString when available, else the code's name. Never null.
  std::string_view ErrorString(nvmlReturn_t rc) const;
  // nvml::ToStatus() with the library's error text.
  base::Status ToStatus(nvmlReturn_t rc, std::string_view call) const;

  // --- Calls with fallbacks to legacy symbols. A fallback is taken when the preferred symbol
  // is missing or returns FUNCTION_NOT_FOUND (old drivers, or the simulator's missing_symbols).
  [[nodiscard]] nvmlReturn_t DeviceGetCount(unsigned* count) const;
  [[nodiscard]] nvmlReturn_t DeviceGetHandleByIndex(unsigned index, Device* device) const;
  [[nodiscard]] nvmlReturn_t SystemGetCudaDriverVersion(int* version) const;
  [[nodiscard]] nvmlReturn_t DeviceGetPciInfo(Device device, abi::nvmlPciInfo_t* pci) const;
  // nvmlDeviceGetCurrentClocksEventReasons, else ...ThrottleReasons (same bits).
  [[nodiscard]] nvmlReturn_t DeviceGetClocksEventReasons(Device device,
                                                         unsigned long long* reasons) const;
  // nvmlDeviceGetMemoryInfo_v2 with version 0x02000028, else v1 (also after the v2 call
  // answers FUNCTION_NOT_FOUND, ARGUMENT_VERSION_MISMATCH or NOT_SUPPORTED).
  [[nodiscard]] nvmlReturn_t DeviceGetMemoryInfo(Device device, MemoryInfo* out) const;

  // Running compute or graphics processes: _v3, else _v2, else v1, with the two-call protocol
  // (size, allocate 2n+5, retry on INSUFFICIENT_SIZE up to 4 times). `out` is cleared first and
  // holds the entries on SUCCESS. The stride is chosen by ProcessStride() and verified by
  // sentinel fill: when the bytes the driver wrote imply a different stride, that stride is
  // used for parsing and stride_mismatches() counts it.
  [[nodiscard]] nvmlReturn_t DeviceGetRunningProcesses(Device device, ProcessListKind kind,
                                                       ProcessListBuffer& buffer,
                                                       std::vector<ProcessEntry>& out) const;

  // Bytes per entry the heuristic expects from the newest available process-list symbol:
  // _v3 present AND nvmlDeviceGetConfComputeMemSizeInfo present AND
  // nvmlDeviceGetRunningProcessDetailList absent -> 32 (R535.43-535.86); else 24; _v2 -> 24;
  // v1 -> 16.
  unsigned ProcessStride() const;
  // How often the sentinel check contradicted the expected stride (driver wrote another one).
  // The stride it found is expected from then on, so a driver with the R535 32-byte layout
  // counts once.
  uint64_t stride_mismatches() const { return stride_mismatches_.load(std::memory_order_relaxed); }
  // The stride the last successful DeviceGetRunningProcesses() parsed with (0 before any).
  unsigned last_process_stride() const { return last_stride_.load(std::memory_order_relaxed); }

 private:
  NvmlLibrary(void* handle, std::string path);
  [[nodiscard]] base::Status ResolveAndInit();

  void* handle_ = nullptr;
  std::string path_;
  NvmlFunctions api_;
  NvmlProbes probes_;
  bool initialized_ = false;
  // Set once v2 memory info proved unusable on this driver (skip straight to v1 afterwards).
  mutable std::atomic<bool> memory_v2_unusable_{false};
  // Highest process-list version that answered something other than FUNCTION_NOT_FOUND, per
  // kind (3, 2, 1); 0 until known.
  mutable std::atomic<int> process_version_[2] = {0, 0};
  mutable std::atomic<uint64_t> stride_mismatches_{0};
  // _v3 stride found by the sentinel check when it differed from ProcessStride(); 0 = none.
  mutable std::atomic<unsigned> learned_v3_stride_{0};
  mutable std::atomic<unsigned> last_stride_{0};
};

}  // namespace warpscope::nvml

// `nvmlReturn_t rc = WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetPowerUsage, dev, &mw);` — calls the
// resolved symbol, FUNCTION_NOT_FOUND when it is missing. `lib` is an NvmlLibrary (not a pointer).
#define WARPSCOPE_NVML_CALL(lib, fn, ...) \
  ::warpscope::nvml::NvmlLibrary::Invoke((lib).api().fn, __VA_ARGS__)

// In a function returning base::Status: evaluates `expr` (an nvmlReturn_t, usually a
// WARPSCOPE_NVML_CALL or a typed wrapper call) and returns lib.ToStatus(rc, "<expr>") when it is
// not SUCCESS.
#define WARPSCOPE_NVML_RETURN_IF_ERROR(lib, expr)                     \
  do {                                                                \
    ::warpscope::nvml::abi::nvmlReturn_t warpscope_nvml_rc_ = (expr); \
    if (warpscope_nvml_rc_ != ::warpscope::nvml::abi::kSuccess) {     \
      return (lib).ToStatus(warpscope_nvml_rc_, #expr);               \
    }                                                                 \
  } while (0)

#endif  // WARPSCOPE_NVML_NVML_LIBRARY_H_
