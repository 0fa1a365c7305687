// SPDX-License-Identifier: Apache-2.0
#include "nvml/nvml_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/logging.h"

namespace warpscope::nvml {
namespace {

std::string DlError() {
  const char* e = dlerror();
  return e == nullptr ? std::string("unknown dlopen error") : std::string(e);
}

// NVML_VALUE_NOT_AVAILABLE for unsigned long long fields (usedGpuMemory under WDDM, and when
// the driver cannot attribute memory).
constexpr uint64_t kValueNotAvailable = ~0ull;

// Byte pattern pre-filled into the process-list buffer; the highest byte that differs after the
// call tells how far the driver wrote.
constexpr unsigned char kSentinel = 0xA5;

// Sizing call, then up to this many attempts with a grown buffer: processes can start between
// the sizing call and the fill call, so INSUFFICIENT_SIZE may repeat a few times.
constexpr int kMaxProcessListAttempts = 5;

template <typename T>
T LoadAt(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Strides each process-list version is known to have written (nvml-abi.md §5): v1 16; v2 24;
// v3 24 or 32 and, per one unconfirmed report, 16.
unsigned ObservedStride(int version, size_t written, unsigned count) {
  static constexpr unsigned kV3[] = {16, 24, 32};
  static constexpr unsigned kV2[] = {24};
  static constexpr unsigned kV1[] = {16};
  const unsigned* begin = version == 3 ? kV3 : (version == 2 ? kV2 : kV1);
  const unsigned* end = version == 3 ? kV3 + 3 : begin + 1;
  for (const unsigned* s = begin; s != end; ++s) {
    // The last entry ends within (count-1)*s .. count*s bytes: trailing bytes of the last entry
    // may equal the sentinel or be untouched padding, so only that window is required.
    if (written <= static_cast<size_t>(count) * *s &&
        written > static_cast<size_t>(count - 1) * *s) {
      return *s;
    }
  }
  return 0;
}

}  // namespace

void ProcessListBuffer::Reserve(unsigned entries) {
  if (entries <= capacity_) {
    return;
  }
  storage_.resize(static_cast<size_t>(entries) * kMaxEntryBytes / sizeof(uint64_t));
  capacity_ = entries;
}

NvmlLibrary::NvmlLibrary(void* handle, std::string path)
    : handle_(handle), path_(std::move(path)) {}

NvmlLibrary::~NvmlLibrary() {
  if (initialized_ && api_.nvmlShutdown != nullptr) {
    nvmlReturn_t rc = api_.nvmlShutdown();
    if (rc != abi::kSuccess) {
      WARPSCOPE_LOG(WARNING, "nvmlShutdown: {} ({})", ErrorString(rc), rc);
    }
  }
  if (handle_ != nullptr) {
    dlclose(handle_);
  }
}

base::Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Load(std::string_view path) {
  void* handle = nullptr;
  std::string opened;
  if (path.empty()) {
    std::string first_error;
    for (std::string_view name : {kDefaultSoname, kDevSoname}) {
      std::string candidate(name);
      handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle != nullptr) {
        opened = std::move(candidate);
        break;
      }
      if (first_error.empty()) {
        first_error = DlError();
      }
    }
    if (handle == nullptr) {
      return base::Error(base::NotFound(
          "NVML library not found ({}): is the NVIDIA driver installed? use --nvml-path to "
          "point at libnvidia-ml.so.1 ({})",
          kDefaultSoname, first_error));
    }
  } else {
    opened = std::string(path);
    handle = dlopen(opened.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      return base::Error(base::NotFound(
          "NVML library not found at {}: {}; check --nvml-path (it must name libnvidia-ml.so.1)",
          opened, DlError()));
    }
  }
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary(handle, std::move(opened)));
  base::Status status = lib->ResolveAndInit();
  if (!status.ok()) {
    return base::Error(std::move(status));
  }
  return lib;
}

void* NvmlLibrary::FindSymbol(const char* name) const {
  return handle_ == nullptr ? nullptr : dlsym(handle_, name);
}

base::Status NvmlLibrary::ResolveAndInit() {
#define WARPSCOPE_NVML_RESOLVE(ret, name, params) \
  api_.name = reinterpret_cast<abi::name##_fn>(FindSymbol(#name));
  WARPSCOPE_NVML_FUNCTIONS(WARPSCOPE_NVML_RESOLVE)
  WARPSCOPE_NVML_LEGACY_FUNCTIONS(WARPSCOPE_NVML_RESOLVE)
#undef WARPSCOPE_NVML_RESOLVE
  probes_.conf_compute_mem_size_info = FindSymbol("nvmlDeviceGetConfComputeMemSizeInfo") != nullptr;
  probes_.running_process_detail_list =
      FindSymbol("nvmlDeviceGetRunningProcessDetailList") != nullptr;

  if (api_.nvmlInit_v2 == nullptr && api_.nvmlInit == nullptr) {
    return base::Unsupported(
        "{} is not an NVML library: it exports neither nvmlInit_v2 nor nvmlInit; check "
        "--nvml-path",
        path_);
  }
  std::string_view call = "nvmlInit_v2";
  nvmlReturn_t rc = Invoke(api_.nvmlInit_v2);
  if (rc == abi::kErrorFunctionNotFound) {
    call = "nvmlInit";
    rc = Invoke(api_.nvmlInit);
  }
  if (rc != abi::kSuccess) {
    base::Status status = ToStatus(rc, fmt::format("{} ({})", call, path_));
    // The warpscope NVML simulator explains a rejected scenario through this optional export;
    // real drivers do not have it.
    using LastErrorFn = const char* (*)();
    if (auto last_error = reinterpret_cast<LastErrorFn>(FindSymbol("warpscope_sim_last_error"));
        last_error != nullptr) {
      const char* why = last_error();
      if (why != nullptr && *why != '\0') {
        status = base::Status(status.code(), fmt::format("{}: {}", status.message(), why));
      }
    }
    return status;
  }
  initialized_ = true;
  return base::OkStatus();
}

std::string_view NvmlLibrary::ErrorString(nvmlReturn_t rc) const {
  if (api_.nvmlErrorString != nullptr) {
    const char* text = api_.nvmlErrorString(rc);
    if (text != nullptr) {
      return text;
    }
  }
  return ReturnCodeName(rc);
}

base::Status NvmlLibrary::ToStatus(nvmlReturn_t rc, std::string_view call) const {
  if (rc == abi::kSuccess) {
    return base::OkStatus();
  }
  std::string_view text = ErrorString(rc);
  // Without nvmlErrorString the text is the name, which ToStatus prints anyway.
  return nvml::ToStatus(rc, call, text == ReturnCodeName(rc) ? std::string_view() : text);
}

nvmlReturn_t NvmlLibrary::DeviceGetCount(unsigned* count) const {
  nvmlReturn_t rc = Invoke(api_.nvmlDeviceGetCount_v2, count);
  if (rc == abi::kErrorFunctionNotFound) {
    rc = Invoke(api_.nvmlDeviceGetCount, count);
  }
  return rc;
}

nvmlReturn_t NvmlLibrary::DeviceGetHandleByIndex(unsigned index, Device* device) const {
  nvmlReturn_t rc = Invoke(api_.nvmlDeviceGetHandleByIndex_v2, index, device);
  if (rc == abi::kErrorFunctionNotFound) {
    rc = Invoke(api_.nvmlDeviceGetHandleByIndex, index, device);
  }
  return rc;
}

nvmlReturn_t NvmlLibrary::SystemGetCudaDriverVersion(int* version) const {
  nvmlReturn_t rc = Invoke(api_.nvmlSystemGetCudaDriverVersion_v2, version);
  if (rc == abi::kErrorFunctionNotFound) {
    rc = Invoke(api_.nvmlSystemGetCudaDriverVersion, version);
  }
  return rc;
}

nvmlReturn_t NvmlLibrary::DeviceGetPciInfo(Device device, abi::nvmlPciInfo_t* pci) const {
  nvmlReturn_t rc = Invoke(api_.nvmlDeviceGetPciInfo_v3, device, pci);
  if (rc == abi::kErrorFunctionNotFound) {
    rc = Invoke(api_.nvmlDeviceGetPciInfo_v2, device, pci);
  }
  return rc;
}

nvmlReturn_t NvmlLibrary::DeviceGetClocksEventReasons(Device device,
                                                      unsigned long long* reasons) const {
  nvmlReturn_t rc = Invoke(api_.nvmlDeviceGetCurrentClocksEventReasons, device, reasons);
  if (rc == abi::kErrorFunctionNotFound) {
    rc = Invoke(api_.nvmlDeviceGetCurrentClocksThrottleReasons, device, reasons);
  }
  return rc;
}

nvmlReturn_t NvmlLibrary::DeviceGetMemoryInfo(Device device, MemoryInfo* out) const {
  if (!memory_v2_unusable_.load(std::memory_order_relaxed)) {
    abi::nvmlMemory_v2_t v2{};
    // The size-encoded version, not the bare 2 that some tools pass (nvml-abi.md §4.1).
    v2.version = abi::kMemoryV2Version;
    nvmlReturn_t rc = Invoke(api_.nvmlDeviceGetMemoryInfo_v2, device, &v2);
    if (rc == abi::kSuccess) {
      out->total = v2.total;
      out->reserved = v2.reserved;
      out->free = v2.free;
      out->used = v2.used;
      out->has_reserved = true;
      return rc;
    }
    if (rc == abi::kErrorFunctionNotFound || rc == abi::kErrorArgumentVersionMismatch) {
      memory_v2_unusable_.store(true, std::memory_order_relaxed);
    } else if (rc != abi::kErrorNotSupported) {
      return rc;
    }
  }
  abi::nvmlMemory_t v1{};
  nvmlReturn_t rc = Invoke(api_.nvmlDeviceGetMemoryInfo, device, &v1);
  if (rc == abi::kSuccess) {
    out->total = v1.total;
    out->reserved = 0;
    out->free = v1.free;
    out->used = v1.used;
    out->has_reserved = false;
  }
  return rc;
}

unsigned NvmlLibrary::ProcessStride() const {
  if (api_.nvmlDeviceGetComputeRunningProcesses_v3 != nullptr) {
    // R535.43-535.86 wrote the 32-byte layout through _v3; those drivers already had the
    // confidential-computing query but not yet the process detail list that replaced it.
    return (probes_.conf_compute_mem_size_info && !probes_.running_process_detail_list) ? 32 : 24;
  }
  if (api_.nvmlDeviceGetComputeRunningProcesses_v2 != nullptr) {
    return 24;
  }
  return 16;
}

nvmlReturn_t NvmlLibrary::DeviceGetRunningProcesses(Device device, ProcessListKind kind,
                                                    ProcessListBuffer& buffer,
                                                    std::vector<ProcessEntry>& out) const {
  out.clear();
  const bool compute = kind == ProcessListKind::kCompute;
  std::atomic<int>& known_version = process_version_[compute ? 0 : 1];
  int version = known_version.load(std::memory_order_relaxed);
  if (version == 0) {
    version = 3;
  }
  auto call = [&](int v, unsigned* count, void* infos) -> nvmlReturn_t {
    auto* v2 = static_cast<abi::nvmlProcessInfo_t*>(infos);
    auto* v1 = static_cast<abi::nvmlProcessInfo_v1_t*>(infos);
    switch (v) {
      case 3:
        return compute ? Invoke(api_.nvmlDeviceGetComputeRunningProcesses_v3, device, count, v2)
                       : Invoke(api_.nvmlDeviceGetGraphicsRunningProcesses_v3, device, count, v2);
      case 2:
        return compute ? Invoke(api_.nvmlDeviceGetComputeRunningProcesses_v2, device, count, v2)
                       : Invoke(api_.nvmlDeviceGetGraphicsRunningProcesses_v2, device, count, v2);
      default:
        return compute ? Invoke(api_.nvmlDeviceGetComputeRunningProcesses, device, count, v1)
                       : Invoke(api_.nvmlDeviceGetGraphicsRunningProcesses, device, count, v1);
    }
  };

  nvmlReturn_t rc = abi::kErrorInsufficientSize;
  unsigned count = 0;
  for (int attempt = 0; attempt < kMaxProcessListAttempts;) {
    count = buffer.capacity();
    void* infos = nullptr;
    if (count > 0) {
      infos = buffer.data();
      std::memset(buffer.data(), kSentinel, buffer.size_bytes());
    }
    rc = call(version, &count, infos);
    if (rc == abi::kErrorFunctionNotFound && version > 1) {
      --version;  // an older symbol, not a failed attempt
      continue;
    }
    ++attempt;
    if (rc == abi::kErrorInsufficientSize ||
        (rc == abi::kSuccess && infos == nullptr && count > 0)) {
      // `count` holds the number needed now; leave room for processes starting meanwhile.
      buffer.Reserve(std::max(count, buffer.capacity()) * 2 + 5);
      continue;
    }
    break;
  }
  if (rc != abi::kErrorFunctionNotFound) {
    known_version.store(version, std::memory_order_relaxed);
  }
  if (rc != abi::kSuccess) {
    return rc;
  }
  if (count == 0) {
    return rc;
  }
  count = std::min(count, buffer.capacity());

  unsigned expected = version == 3 ? ProcessStride() : (version == 2 ? 24u : 16u);
  if (version == 3) {
    if (unsigned learned = learned_v3_stride_.load(std::memory_order_relaxed); learned != 0) {
      expected = learned;
    }
  }
  // Highest byte the driver changed. No stride exceeds 32 bytes, so nothing past count * 32 can
  // belong to an entry: start the backward scan there.
  const std::byte* bytes = buffer.data();
  size_t written =
      std::min(buffer.size_bytes(), static_cast<size_t>(count) * ProcessListBuffer::kMaxEntryBytes);
  while (written > 0 && static_cast<unsigned char>(bytes[written - 1]) == kSentinel) {
    --written;
  }
  unsigned stride = expected;
  unsigned observed = ObservedStride(version, written, count);
  if (observed != 0 && observed != expected) {
    stride_mismatches_.fetch_add(1, std::memory_order_relaxed);
    WARPSCOPE_LOG_FIRST_N(WARNING, 1,
                          "NVML process list v{} wrote {} bytes for {} entries: parsing with a "
                          "{}-byte stride instead of the expected {}",
                          version, written, count, observed, expected);
    stride = observed;
    if (version == 3) {
      // A driver property: expect it from now on, so it is reported once, not every poll.
      learned_v3_stride_.store(observed, std::memory_order_relaxed);
    }
  }
  last_stride_.store(stride, std::memory_order_relaxed);

  out.reserve(count);
  for (unsigned i = 0; i < count; ++i) {
    const std::byte* e = bytes + static_cast<size_t>(i) * stride;
    ProcessEntry entry;
    // Offsets are the same in all layouts: pid@0, usedGpuMemory@8, then (24/32) GI@16, CI@20.
    entry.pid = LoadAt<unsigned>(e + offsetof(abi::nvmlProcessInfo_t, pid));
    uint64_t mem = LoadAt<unsigned long long>(e + offsetof(abi::nvmlProcessInfo_t, usedGpuMemory));
    entry.has_used_memory = mem != kValueNotAvailable;
    entry.used_memory = entry.has_used_memory ? mem : 0;
    if (stride >= sizeof(abi::nvmlProcessInfo_t)) {
      entry.gpu_instance_id = LoadAt<unsigned>(e + offsetof(abi::nvmlProcessInfo_t, gpuInstanceId));
      entry.compute_instance_id =
          LoadAt<unsigned>(e + offsetof(abi::nvmlProcessInfo_t, computeInstanceId));
    }
    out.push_back(entry);
  }
  return rc;
}

}  // namespace warpscope::nvml
