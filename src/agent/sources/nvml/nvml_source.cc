// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/nvml/nvml_source.h"

#include <pthread.h>

#include <algorithm>
#include <bitset>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "agent/sources/nvml/nvml_metrics.h"
#include "base/logging.h"
#include "model/xid.h"

namespace warpscope::agent {
namespace {

namespace abi = nvml::abi;
namespace m = nvml_metrics;
using abi::nvmlReturn_t;
using model::Labels;
using nvml::Device;
using nvml::NvmlLibrary;

// Every per-device query whose support is remembered. NOT_SUPPORTED on one of them stops the
// calls for that (device, query) until the device recovers.
enum Query : uint8_t {
  kQUtilization,
  kQEncoder,
  kQDecoder,
  kQMemory,
  kQPower,
  kQPowerLimit,
  kQEnforcedLimit,
  kQEnergy,
  kQTemperature,
  kQMemoryTemperature,
  kQSmClock,
  kQMemClock,
  kQClockReasons,
  kQPcieTx,
  kQPcieRx,
  kQPcieReplay,
  kQFieldValues,
  kQNvlink,
  kQEccCorrectedVolatile,
  kQEccUncorrectedVolatile,
  kQEccCorrectedAggregate,
  kQEccUncorrectedAggregate,
  kQRemappedRows,
  kQComputeProcesses,
  kQGraphicsProcesses,
  kQProcessUtilization,
  kQGpm,
  kQIdentity,
  kQMig,
  kQueryCount,
};
using Support = std::bitset<kQueryCount>;

constexpr std::string_view kQueryNames[kQueryCount] = {
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetEncoderUtilization",
    "nvmlDeviceGetDecoderUtilization",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetPowerManagementLimit",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetTotalEnergyConsumption",
    "nvmlDeviceGetTemperature",
    "memory temperature (field 82)",
    "nvmlDeviceGetClockInfo(SM)",
    "nvmlDeviceGetClockInfo(MEM)",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetPcieThroughput(TX)",
    "nvmlDeviceGetPcieThroughput(RX)",
    "nvmlDeviceGetPcieReplayCounter",
    "nvmlDeviceGetFieldValues",
    "NVLink throughput (fields 138/139)",
    "nvmlDeviceGetTotalEccErrors(corrected, volatile)",
    "nvmlDeviceGetTotalEccErrors(uncorrected, volatile)",
    "nvmlDeviceGetTotalEccErrors(corrected, aggregate)",
    "nvmlDeviceGetTotalEccErrors(uncorrected, aggregate)",
    "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetGraphicsRunningProcesses",
    "nvmlDeviceGetProcessUtilization",
    "NVML GPM",
    "device identity",
    "MIG",
};

struct ClockReason {
  unsigned long long bit;
  std::string_view name;
};
// Bit values identical from the 11.0 to the 13.3 header; names as dcgm-exporter's clock_event.
constexpr ClockReason kClockReasons[] = {
    {0x1, "gpu_idle"},    {0x2, "clocks_setting"},  {0x4, "power_cap"},
    {0x8, "hw_slowdown"}, {0x10, "sync_boost"},     {0x20, "sw_thermal"},
    {0x40, "hw_thermal"}, {0x80, "hw_power_brake"}, {0x100, "display_clocks"},
};
constexpr size_t kClockReasonCount = sizeof(kClockReasons) / sizeof(kClockReasons[0]);

struct GpmMetricSpec {
  unsigned id;
  const model::MetricDesc* desc;
  double scale;  // GPM value -> base unit
};
constexpr double kPercent = 0.01;
constexpr double kMiBPerSecond = 1048576.0;
const GpmMetricSpec kGpmMetrics[] = {
    {abi::kGpmGraphicsUtil, &m::kGraphicsEngineActive, kPercent},
    {abi::kGpmSmUtil, &m::kSmActive, kPercent},
    {abi::kGpmSmOccupancy, &m::kSmOccupancy, kPercent},
    {abi::kGpmAnyTensorUtil, &m::kTensorActive, kPercent},
    {abi::kGpmHmmaTensorUtil, &m::kTensorHmmaActive, kPercent},
    {abi::kGpmImmaTensorUtil, &m::kTensorImmaActive, kPercent},
    {abi::kGpmDfmaTensorUtil, &m::kTensorDfmaActive, kPercent},
    {abi::kGpmDramBwUtil, &m::kDramActive, kPercent},
    {abi::kGpmFp64Util, &m::kFp64Active, kPercent},
    {abi::kGpmFp32Util, &m::kFp32Active, kPercent},
    {abi::kGpmFp16Util, &m::kFp16Active, kPercent},
    {abi::kGpmIntegerUtil, &m::kIntActive, kPercent},
    {abi::kGpmPcieTxPerSec, &m::kProfPcieTransmitRate, kMiBPerSecond},
    {abi::kGpmPcieRxPerSec, &m::kProfPcieReceiveRate, kMiBPerSecond},
    {abi::kGpmNvlinkTotalTxPerSec, &m::kProfNvlinkTransmitRate, kMiBPerSecond},
    {abi::kGpmNvlinkTotalRxPerSec, &m::kProfNvlinkReceiveRate, kMiBPerSecond},
};
constexpr size_t kGpmMetricCount = sizeof(kGpmMetrics) / sizeof(kGpmMetrics[0]);
static_assert(kGpmMetricCount <= 98, "older drivers accept at most 98 GPM metrics per call");

// NVML_NVLINK_MAX_LINKS grew 12 -> 18 -> 36; probing stops at the first INVALID_ARGUMENT.
constexpr unsigned kMaxNvlinkLinks = 36;
// NVML reports temperatures above this as garbage on some boards (DCGM discards them too).
constexpr double kMaxPlausibleCelsius = 200;

constexpr unsigned long long kEventMask = abi::kEventTypeXidCriticalError |
                                          abi::kEventTypeSingleBitEccError |
                                          abi::kEventTypeDoubleBitEccError;

std::string_view ArchitectureName(unsigned arch) {
  switch (arch) {
    case abi::kArchKepler:
      return "kepler";
    case abi::kArchMaxwell:
      return "maxwell";
    case abi::kArchPascal:
      return "pascal";
    case abi::kArchVolta:
      return "volta";
    case abi::kArchTuring:
      return "turing";
    case abi::kArchAmpere:
      return "ampere";
    case abi::kArchAda:
      return "ada";
    case abi::kArchHopper:
      return "hopper";
    case abi::kArchBlackwell:
      return "blackwell";
    default:
      return {};
  }
}

// "NVIDIA A100-SXM4-40GB MIG 1g.5gb" -> "1g.5gb".
std::string MigProfileFromName(std::string_view name) {
  size_t pos = name.rfind("MIG ");
  if (pos == std::string_view::npos) {
    return {};
  }
  std::string_view rest = name.substr(pos + 4);
  while (!rest.empty() && rest.front() == ' ') {
    rest.remove_prefix(1);
  }
  while (!rest.empty() && rest.back() == ' ') {
    rest.remove_suffix(1);
  }
  return std::string(rest);
}

// The union member selected by valueType, as a double.
double FieldAsDouble(const abi::nvmlFieldValue_t& f) {
  switch (f.valueType) {
    case abi::kValueTypeDouble:
      return f.value.dVal;
    case abi::kValueTypeUnsignedInt:
      return f.value.uiVal;
    case abi::kValueTypeUnsignedLong:
      return static_cast<double>(f.value.ulVal);
    case abi::kValueTypeUnsignedLongLong:
      return static_cast<double>(f.value.ullVal);
    case abi::kValueTypeSignedLongLong:
      return static_cast<double>(f.value.sllVal);
    case abi::kValueTypeSignedInt:
      return f.value.siVal;
    case abi::kValueTypeUnsignedShort:
      return f.value.usVal;
    default:
      return static_cast<double>(f.value.ullVal);
  }
}

uint64_t FieldAsU64(const abi::nvmlFieldValue_t& f) {
  switch (f.valueType) {
    case abi::kValueTypeDouble:
      return f.value.dVal > 0 ? static_cast<uint64_t>(f.value.dVal) : 0;
    case abi::kValueTypeUnsignedInt:
      return f.value.uiVal;
    case abi::kValueTypeSignedInt:
      return f.value.siVal > 0 ? f.value.siVal : 0;
    case abi::kValueTypeSignedLongLong:
      return f.value.sllVal > 0 ? f.value.sllVal : 0;
    case abi::kValueTypeUnsignedShort:
      return f.value.usVal;
    default:
      return f.value.ullVal;
  }
}

// Field 82: R545 drivers tagged it as a double while filling uiVal (NVIDIA bug 4300930, the
// reason DCGM ignores valueType here). Trust the tag only when it gives a plausible reading.
double MemoryTemperature(const abi::nvmlFieldValue_t& f) {
  if (f.valueType == abi::kValueTypeDouble) {
    double d = f.value.dVal;
    if (std::isfinite(d) && d > 1e-3 && d <= kMaxPlausibleCelsius) {
      return d;
    }
    return f.value.uiVal;
  }
  return FieldAsDouble(f);
}

std::string CopyString(const char* buf, size_t size) {
  return std::string(buf, strnlen(buf, size));
}

}  // namespace

namespace {

// Two GPM samples used alternately: each poll fills the older one and computes metrics from
// (previous, new), so one nvmlGpmSampleGet per device per poll.
class GpmSampler {
 public:
  GpmSampler() = default;
  GpmSampler(const GpmSampler&) = delete;
  GpmSampler& operator=(const GpmSampler&) = delete;
  ~GpmSampler() { Free(); }

  // Returns the first failing code, SUCCESS when both samples exist.
  nvmlReturn_t Allocate(const NvmlLibrary& lib) {
    Free();
    lib_ = &lib;
    for (auto& s : samples_) {
      nvmlReturn_t rc = WARPSCOPE_NVML_CALL(lib, nvmlGpmSampleAlloc, &s);
      if (rc != abi::kSuccess) {
        s = nullptr;
        Free();
        return rc;
      }
    }
    return abi::kSuccess;
  }
  void Free() {
    if (lib_ != nullptr) {
      for (auto& s : samples_) {
        if (s != nullptr) {
          (void)WARPSCOPE_NVML_CALL(*lib_, nvmlGpmSampleFree, s);
          s = nullptr;
        }
      }
    }
    lib_ = nullptr;
    Reset();
  }
  bool allocated() const { return samples_[0] != nullptr && samples_[1] != nullptr; }
  void Reset() { latest_ = -1; }
  bool has_baseline() const { return latest_ >= 0; }
  base::Duration latest_time() const { return latest_time_; }
  abi::nvmlGpmSample_t next() const { return samples_[latest_ < 0 ? 0 : 1 - latest_]; }
  abi::nvmlGpmSample_t latest() const { return samples_[latest_]; }
  // The sample returned by next() now holds the newest reading.
  void Advance(base::Duration when) {
    latest_ = latest_ < 0 ? 0 : 1 - latest_;
    latest_time_ = when;
  }

 private:
  const NvmlLibrary* lib_ = nullptr;
  abi::nvmlGpmSample_t samples_[2] = {nullptr, nullptr};
  int latest_ = -1;
  base::Duration latest_time_{};
};

struct LinkState {
  unsigned link = 0;
  const Labels* labels = nullptr;
  bool has_prev = false;
  uint64_t tx_kib = 0;
  uint64_t rx_kib = 0;
  int64_t tx_us = 0;
  int64_t rx_us = 0;
  base::Duration prev_mono{};
  // Filled during one poll.
  uint64_t new_tx_kib = 0;
  uint64_t new_rx_kib = 0;
  int64_t new_tx_us = 0;
  int64_t new_rx_us = 0;
  bool got_tx = false;
  bool got_rx = false;
};

enum class FieldKind : uint8_t { kMemoryTemperature, kNvlinkTx, kNvlinkRx };
struct FieldSlot {
  FieldKind kind;
  unsigned field_id;
  unsigned scope;
  size_t link;  // index into GpuState::links for NVLink slots
};

struct MigState {
  Device handle = nullptr;
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  std::string uuid;
  model::Entity entity;
  Support unsupported;
  GpmSampler gpm;
  std::vector<uint8_t> gpm_metrics;  // indexes into kGpmMetrics still answered for this instance
  Labels process_labels[2];          // compute, graphics
  Labels consumer_labels;
};

struct GpuState {
  unsigned index = 0;
  Device handle = nullptr;
  std::string uuid;
  std::string name;
  model::Entity entity;
  const std::string& id() const { return entity.id; }

  bool degraded = false;
  uint64_t degraded_polls = 0;
  int error_streak = 0;
  Support unsupported;

  std::optional<double> max_sm_hz;
  std::optional<double> max_mem_hz;
  std::optional<bool> mig_enabled;
  std::vector<std::unique_ptr<MigState>> migs;

  std::vector<LinkState> links;
  std::vector<abi::nvmlFieldValue_t> fields;
  std::vector<FieldSlot> field_slots;

  bool gpm_supported = false;
  GpmSampler gpm;
  std::vector<uint8_t> gpm_metrics;  // indexes into kGpmMetrics still answered by the driver

  Labels process_labels[2];  // compute, graphics: {gpu.index, gpu.uuid, type}
  Labels consumer_labels;    // {gpu.index, gpu.uuid}
  unsigned long long last_util_timestamp = 0;

  bool events_registered = false;
  uint64_t last_xid = 0;
  std::map<uint64_t, uint64_t> xid_counts;
};

struct RawEvent {
  Device device;
  unsigned long long type;
  unsigned long long data;
  unsigned gpu_instance_id;
  std::chrono::steady_clock::time_point when;
};

// One running process on one GPU (or MIG instance) in the current poll.
struct ProcessRow {
  unsigned pid;
  uint64_t memory;
  bool has_memory;
  uint8_t type;  // 0 compute, 1 graphics
  unsigned gpu_instance_id;
};

struct UtilAccumulator {
  unsigned pid;
  double sm_sum;
  double mem_sum;
  unsigned samples;
};

// What the source knows about one pid across polls, so that entities and ids are built once.
struct ProcessCacheEntry {
  bool from_nvml_name = false;
  uint64_t start_ticks = 0;
  model::Entity process;
  model::Entity executable;
  std::optional<model::Entity> container;
  uint64_t seen_poll = 0;
  uint64_t emitted_poll = 0;
};

struct Rollup {
  const ProcessCacheEntry* entry;
  double memory;
  double sm;
  bool has_memory;
  unsigned processes;
};

}  // namespace

class NvmlSource::Impl {
 public:
  Impl(const NvmlSourceOptions& options, const base::Clock& clock, ProcessResolver& resolver,
       SourceErrorHook on_error)
      : options_(options), clock_(clock), resolver_(resolver), on_error_(std::move(on_error)) {
    if (options_.lost_retry_polls < 1) {
      options_.lost_retry_polls = 1;
    }
    if (options_.error_streak_to_degrade < 1) {
      options_.error_streak_to_degrade = 1;
    }
    for (size_t i = 0; i < kClockReasonCount; ++i) {
      reason_labels_[i].Set(m::kLabelReason, kClockReasons[i].name);
    }
    link_labels_.resize(kMaxNvlinkLinks);
    for (unsigned i = 0; i < kMaxNvlinkLinks; ++i) {
      link_labels_[i].Set(m::kLabelLink, std::to_string(i));
    }
    gpm_get_ = std::make_unique<abi::nvmlGpmMetricsGet_t>();
  }
  ~Impl() { Stop(); }

  base::Status Start();
  void Poll(base::TimePoint now, model::SampleSink& out);
  void Stop();

  const std::map<std::string, uint64_t, std::less<>>& error_counts() const { return error_counts_; }
  size_t gpu_count() const { return gpus_.size(); }
  const NvmlLibrary* library() const { return library_.get(); }
  bool WaitForEvents(uint64_t count, std::chrono::milliseconds timeout) {
    std::unique_lock lock(queue_mu_);
    return queue_cv_.wait_for(lock, timeout, [&] { return events_received_ >= count; });
  }

 private:
  struct Ctx {
    base::TimePoint now;
    model::SampleSink& out;
  };

  void ReportError(std::string_view reason) {
    auto it = error_counts_.find(reason);
    if (it == error_counts_.end()) {
      it = error_counts_.emplace(std::string(reason), 0).first;
    }
    ++it->second;
    if (on_error_) {
      on_error_(reason);
    }
  }

  // --- Start ---
  base::Status StartLocked();
  void InitGpu(GpuState& g);
  void InitStatic(GpuState& g);
  void InitLinks(GpuState& g);
  void RebuildFields(GpuState& g);
  void InitGpm(GpuState& g);
  void InitMig(GpuState& g);
  void SetupEvents();
  bool RegisterEvents(GpuState& g);
  void EventLoop(std::stop_token stop);

  // --- Poll ---
  bool Check(GpuState& g, Support& support, Query q, nvmlReturn_t rc);
  void MarkDegraded(GpuState& g, nvmlReturn_t rc, Query q);
  void TryRecover(GpuState& g);
  void PollGpu(GpuState& g, Ctx& ctx);
  void PollUtilization(GpuState& g, Ctx& ctx);
  void PollMemory(GpuState& g, Ctx& ctx);
  void EmitMemory(GpuState& g, Support& support, Device handle, const std::string& id, Ctx& ctx);
  void PollPower(GpuState& g, Ctx& ctx);
  void PollThermalsAndClocks(GpuState& g, Ctx& ctx);
  void PollPcie(GpuState& g, Ctx& ctx);
  void PollFields(GpuState& g, Ctx& ctx);
  void PollErrors(GpuState& g, Ctx& ctx);
  void PollGpm(GpuState& g, Ctx& ctx);
  void SampleGpm(GpuState& g, Support& support, GpmSampler& sampler, std::vector<uint8_t>& metrics,
                 Device device, std::optional<unsigned> gpu_instance_id, const std::string& id,
                 Ctx& ctx);
  void PollMig(GpuState& g, Ctx& ctx);
  void PollProcesses(GpuState& g, Ctx& ctx);
  bool CollectProcessRows(GpuState& g, Support& support, Device handle);
  bool ReadProcessUtilization(GpuState& g);
  void EmitProcesses(const Labels (&labels)[2], const Labels& consumer_labels, bool util_known,
                     Ctx& ctx);
  ProcessCacheEntry& ResolveProcess(unsigned pid);
  void EmitProcessEntities(ProcessCacheEntry& entry, Ctx& ctx);
  void DrainEvents(Ctx& ctx);
  void FlushPendingEvents(Ctx& ctx);
  GpuState* FindGpuByHandle(Device device);
  void AddEvent(base::TimePoint when, const std::string& entity, std::string_view kind,
                int64_t code, std::string message);

  NvmlSourceOptions options_;
  const base::Clock& clock_;
  ProcessResolver& resolver_;
  SourceErrorHook on_error_;
  std::map<std::string, uint64_t, std::less<>> error_counts_;

  // Declared before the GPU states so it outlives their GPM samples.
  std::unique_ptr<NvmlLibrary> library_;
  std::string driver_version_;
  std::string cuda_version_;
  std::vector<std::unique_ptr<GpuState>> gpus_;
  bool started_ = false;
  uint64_t poll_seq_ = 0;
  base::TimePoint poll_now_;

  // Precomputed label sets.
  Labels reason_labels_[kClockReasonCount];
  std::vector<Labels> link_labels_;
  std::map<uint64_t, Labels> xid_labels_;

  std::unique_ptr<abi::nvmlGpmMetricsGet_t> gpm_get_;

  // Reused per-poll scratch space (no allocation once warmed up).
  nvml::ProcessListBuffer process_buffer_;
  std::vector<nvml::ProcessEntry> process_entries_;
  std::vector<ProcessRow> rows_;
  std::vector<ProcessRow> mig_rows_;  // MIG fallback: the parent's list
  std::vector<abi::nvmlProcessUtilizationSample_t> util_samples_;
  std::vector<UtilAccumulator> util_acc_;
  std::vector<Rollup> rollups_;
  std::vector<std::string_view> emitted_executables_;
  std::vector<std::string_view> emitted_containers_;
  std::unordered_map<unsigned, ProcessCacheEntry> process_cache_;
  uint64_t reported_stride_mismatches_ = 0;

  std::vector<model::Event> pending_events_;

  // Event thread and its queue.
  abi::nvmlEventSet_t event_set_ = nullptr;
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::vector<RawEvent> queue_;    // guarded by queue_mu_
  uint64_t events_received_ = 0;   // guarded by queue_mu_
  std::vector<RawEvent> drained_;  // main sequence only
  std::atomic<uint64_t> events_dropped_{0};
  std::atomic<uint64_t> wait_errors_{0};
  uint64_t reported_dropped_ = 0;
  uint64_t reported_wait_errors_ = 0;
  std::jthread event_thread_;
};

// ------------------------------------------------------------------------------------------------
// Start / Stop

base::Status NvmlSource::Impl::Start() {
  if (started_) {
    return base::OkStatus();
  }
  base::Status status = StartLocked();
  if (!status.ok()) {
    Stop();
  }
  return status;
}

base::Status NvmlSource::Impl::StartLocked() {
  auto loaded = NvmlLibrary::Load(options_.library_path);
  if (!loaded) {
    ReportError(loaded.error().code() == base::StatusCode::kNotFound ? "library_load" : "init");
    return loaded.error();
  }
  library_ = std::move(*loaded);
  const NvmlLibrary& lib = *library_;

  char buf[abi::kSystemDriverVersionBufferSize] = {};
  if (WARPSCOPE_NVML_CALL(lib, nvmlSystemGetDriverVersion, buf, sizeof(buf)) == abi::kSuccess) {
    driver_version_ = CopyString(buf, sizeof(buf));
  }
  int cuda = 0;
  if (lib.SystemGetCudaDriverVersion(&cuda) == abi::kSuccess && cuda > 0) {
    cuda_version_ = fmt::format("{}.{}", cuda / 1000, (cuda % 1000) / 10);
  }

  unsigned count = 0;
  nvmlReturn_t rc = lib.DeviceGetCount(&count);
  if (rc != abi::kSuccess) {
    ReportError(nvml::ReturnCodeReason(rc));
    return lib.ToStatus(rc, "nvmlDeviceGetCount_v2");
  }
  if (count == 0) {
    return base::NotFound("NVML ({}, driver {}) reports no GPU; GPU metrics are off", lib.path(),
                          driver_version_);
  }
  unsigned no_permission = 0;
  for (unsigned i = 0; i < count; ++i) {
    Device handle = nullptr;
    rc = lib.DeviceGetHandleByIndex(i, &handle);
    if (rc == abi::kErrorNoPermission) {
      ++no_permission;
      ReportError("no_permission");
      WARPSCOPE_LOG(WARNING, "GPU {}: no permission to open it (hidden by cgroups?); skipping", i);
      continue;
    }
    auto g = std::make_unique<GpuState>();
    g->index = i;
    g->handle = handle;
    if (rc != abi::kSuccess) {
      // Keep the GPU: a lost GPU may come back and is reported as degraded meanwhile.
      WARPSCOPE_LOG(WARNING, "{}",
                    lib.ToStatus(rc, fmt::format("nvmlDeviceGetHandleByIndex({})", i)).message());
      ReportError(nvml::ReturnCodeReason(rc));
      g->entity.kind = model::EntityKind::kGpu;
      g->entity.id = fmt::format("nvml-index-{}", i);
      g->entity.attributes.Set(model::attr::kGpuIndex, std::to_string(i));
      g->degraded = true;
      AddEvent(clock_.Now(), g->entity.id, "gpu_lost", rc,
               lib.ToStatus(rc, "nvmlDeviceGetHandleByIndex").message());
      gpus_.push_back(std::move(g));
      continue;
    }
    InitGpu(*g);
    gpus_.push_back(std::move(g));
  }
  if (gpus_.empty()) {
    return base::ErrStatus(base::StatusCode::kPermissionDenied,
                           "NVML found {} GPU(s) but none can be opened (no permission): run the "
                           "agent as root or give it access to /dev/nvidia*",
                           count);
  }
  SetupEvents();
  started_ = true;
  WARPSCOPE_LOG(INFO, "NVML {}: driver {}, CUDA {}, {} GPU(s){}", lib.path(), driver_version_,
                cuda_version_, gpus_.size(),
                no_permission > 0 ? fmt::format(" ({} without permission skipped)", no_permission)
                                  : std::string());
  return base::OkStatus();
}

void NvmlSource::Impl::Stop() {
  if (event_thread_.joinable()) {
    event_thread_.request_stop();
    event_thread_.join();
  }
  if (event_set_ != nullptr && library_ != nullptr) {
    (void)WARPSCOPE_NVML_CALL(*library_, nvmlEventSetFree, event_set_);
  }
  event_set_ = nullptr;
  gpus_.clear();  // frees GPM samples while the library is still loaded
  process_cache_.clear();
  pending_events_.clear();
  {
    std::lock_guard lock(queue_mu_);
    queue_.clear();
  }
  library_.reset();
  started_ = false;
}

void NvmlSource::Impl::InitGpu(GpuState& g) {
  const NvmlLibrary& lib = *library_;
  Device h = g.handle;
  char buf[abi::kDeviceUuidBufferSize] = {};
  // Identity: read once. A failure drops that attribute only.
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetUUID, h, buf, sizeof(buf)) == abi::kSuccess) {
    g.uuid = CopyString(buf, sizeof(buf));
  }
  std::memset(buf, 0, sizeof(buf));
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetName, h, buf, sizeof(buf)) == abi::kSuccess) {
    g.name = CopyString(buf, sizeof(buf));
  }
  model::Entity& e = g.entity;
  e.kind = model::EntityKind::kGpu;
  e.id = g.uuid.empty() ? fmt::format("nvml-index-{}", g.index) : g.uuid;
  e.attributes = Labels();
  e.attributes.Set(model::attr::kGpuIndex, std::to_string(g.index));
  if (!g.uuid.empty()) {
    e.attributes.Set(model::attr::kGpuUuid, g.uuid);
  }
  if (!g.name.empty()) {
    e.attributes.Set(model::attr::kGpuModel, g.name);
  }
  abi::nvmlPciInfo_t pci{};
  if (lib.DeviceGetPciInfo(h, &pci) == abi::kSuccess) {
    e.attributes.Set(model::attr::kGpuPciBusId, CopyString(pci.busId, sizeof(pci.busId)));
  }
  char serial[abi::kDeviceSerialBufferSize] = {};
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetSerial, h, serial, sizeof(serial)) == abi::kSuccess) {
    std::string s = CopyString(serial, sizeof(serial));
    if (!s.empty()) {
      e.attributes.Set(model::attr::kGpuSerial, s);
    }
  }
  unsigned minor = 0;
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetMinorNumber, h, &minor) == abi::kSuccess) {
    e.attributes.Set(model::attr::kGpuMinor, std::to_string(minor));
  }
  unsigned arch = 0;
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetArchitecture, h, &arch) == abi::kSuccess) {
    std::string_view arch_name = ArchitectureName(arch);
    e.attributes.Set(model::attr::kGpuArchitecture,
                     arch_name.empty() ? fmt::format("unknown-{}", arch) : std::string(arch_name));
  }
  int cc_major = 0;
  int cc_minor = 0;
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetCudaComputeCapability, h, &cc_major, &cc_minor) ==
      abi::kSuccess) {
    e.attributes.Set(model::attr::kGpuComputeCapability, fmt::format("{}.{}", cc_major, cc_minor));
  }
  if (!driver_version_.empty()) {
    e.attributes.Set(model::attr::kDriverVersion, driver_version_);
  }
  if (!cuda_version_.empty()) {
    e.attributes.Set(model::attr::kCudaVersion, cuda_version_);
  }

  std::string index = std::to_string(g.index);
  g.consumer_labels = Labels{{std::string(model::attr::kGpuIndex), index},
                             {std::string(model::attr::kGpuUuid), e.id}};
  for (int t = 0; t < 2; ++t) {
    g.process_labels[t] = g.consumer_labels;
    g.process_labels[t].Set(m::kLabelType, t == 0 ? "compute" : "graphics");
  }
  InitStatic(g);
}

// Everything re-probed when a GPU recovers: support flags, clocks, MIG, NVLink, GPM.
void NvmlSource::Impl::InitStatic(GpuState& g) {
  const NvmlLibrary& lib = *library_;
  g.unsupported.reset();
  g.error_streak = 0;
  g.last_util_timestamp = 0;
  unsigned mhz = 0;
  g.max_sm_hz.reset();
  g.max_mem_hz.reset();
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetMaxClockInfo, g.handle, abi::kClockSm, &mhz) ==
      abi::kSuccess) {
    g.max_sm_hz = mhz * 1e6;
  }
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetMaxClockInfo, g.handle, abi::kClockMem, &mhz) ==
      abi::kSuccess) {
    g.max_mem_hz = mhz * 1e6;
  }
  InitMig(g);
  if (g.degraded) {
    return;
  }
  InitLinks(g);
  if (g.degraded) {
    return;
  }
  RebuildFields(g);
  InitGpm(g);
}

void NvmlSource::Impl::InitLinks(GpuState& g) {
  g.links.clear();
  for (unsigned link = 0; link < kMaxNvlinkLinks; ++link) {
    unsigned active = 0;
    nvmlReturn_t rc =
        WARPSCOPE_NVML_CALL(*library_, nvmlDeviceGetNvLinkState, g.handle, link, &active);
    if (rc == abi::kErrorInvalidArgument || rc == abi::kErrorNotFound) {
      break;  // past the last link of this device
    }
    if (rc != abi::kSuccess) {
      if (link == 0) {
        (void)Check(g, g.unsupported, kQNvlink, rc);
      }
      break;
    }
    if (active == abi::kFeatureEnabled) {
      LinkState ls;
      ls.link = link;
      ls.labels = &link_labels_[link];
      g.links.push_back(ls);
    }
  }
  if (g.links.empty()) {
    g.unsupported.set(kQNvlink);
  }
}

void NvmlSource::Impl::RebuildFields(GpuState& g) {
  g.fields.clear();
  g.field_slots.clear();
  if (g.unsupported[kQFieldValues]) {
    return;
  }
  if (!g.unsupported[kQMemoryTemperature]) {
    g.field_slots.push_back({FieldKind::kMemoryTemperature, abi::kFiMemoryTemp, 0, 0});
  }
  if (!g.unsupported[kQNvlink]) {
    for (size_t i = 0; i < g.links.size(); ++i) {
      g.field_slots.push_back(
          {FieldKind::kNvlinkTx, abi::kFiNvlinkThroughputDataTx, g.links[i].link, i});
      g.field_slots.push_back(
          {FieldKind::kNvlinkRx, abi::kFiNvlinkThroughputDataRx, g.links[i].link, i});
    }
  }
  g.fields.resize(g.field_slots.size());
}

void NvmlSource::Impl::InitGpm(GpuState& g) {
  g.gpm_supported = false;
  g.gpm.Free();
  for (auto& mig : g.migs) {
    mig->gpm.Free();
  }
  g.gpm_metrics.clear();
  const NvmlLibrary& lib = *library_;
  abi::nvmlGpmSupport_t support{};
  support.version = abi::kGpmSupportVersion;
  nvmlReturn_t rc = WARPSCOPE_NVML_CALL(lib, nvmlGpmQueryDeviceSupport, g.handle, &support);
  if (rc != abi::kSuccess) {
    (void)Check(g, g.unsupported, kQGpm, rc);
    g.unsupported.set(kQGpm);
    return;
  }
  if (support.isSupportedDevice == 0) {
    g.unsupported.set(kQGpm);  // pre-Hopper: expected, not an error
    return;
  }
  if (lib.api().nvmlGpmMetricsGet == nullptr || lib.api().nvmlGpmSampleGet == nullptr) {
    g.unsupported.set(kQGpm);
    ReportError("not_supported");
    return;
  }
  rc = g.gpm.Allocate(lib);
  if (rc != abi::kSuccess) {
    WARPSCOPE_LOG(WARNING, "GPU {}: {}", g.index, lib.ToStatus(rc, "nvmlGpmSampleAlloc").message());
    ReportError("gpm_alloc");
    g.unsupported.set(kQGpm);
    return;
  }
  g.gpm_supported = true;
  for (size_t i = 0; i < kGpmMetricCount; ++i) {
    g.gpm_metrics.push_back(static_cast<uint8_t>(i));
  }
  if (lib.api().nvmlGpmMigSampleGet != nullptr) {
    for (auto& mig : g.migs) {
      if (mig->gpm.Allocate(lib) != abi::kSuccess) {
        ReportError("gpm_alloc");
        mig->unsupported.set(kQGpm);
        continue;
      }
      mig->gpm_metrics = g.gpm_metrics;
    }
  } else {
    for (auto& mig : g.migs) {
      mig->unsupported.set(kQGpm);
    }
  }
}

void NvmlSource::Impl::InitMig(GpuState& g) {
  const NvmlLibrary& lib = *library_;
  g.migs.clear();
  g.mig_enabled.reset();
  unsigned current = 0;
  unsigned pending = 0;
  nvmlReturn_t rc = WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetMigMode, g.handle, &current, &pending);
  if (rc != abi::kSuccess) {
    if (!nvml::IsUnsupported(rc)) {
      (void)Check(g, g.unsupported, kQMig, rc);
    }
    g.unsupported.set(kQMig);
    return;
  }
  g.mig_enabled = current == abi::kMigEnable;
  if (!*g.mig_enabled) {
    return;
  }
  unsigned max_count = 0;
  rc = WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetMaxMigDeviceCount, g.handle, &max_count);
  if (!Check(g, g.unsupported, kQMig, rc)) {
    return;
  }
  for (unsigned i = 0; i < max_count; ++i) {
    Device mig_handle = nullptr;
    rc = WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetMigDeviceHandleByIndex, g.handle, i, &mig_handle);
    if (rc == abi::kErrorNotFound) {
      continue;  // empty slot
    }
    if (rc != abi::kSuccess) {
      if (!Check(g, g.unsupported, kQMig, rc) && g.degraded) {
        return;
      }
      continue;
    }
    auto mig = std::make_unique<MigState>();
    mig->handle = mig_handle;
    unsigned id = 0;
    if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetGpuInstanceId, mig_handle, &id) == abi::kSuccess) {
      mig->gpu_instance_id = id;
    }
    if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetComputeInstanceId, mig_handle, &id) ==
        abi::kSuccess) {
      mig->compute_instance_id = id;
    }
    char buf[abi::kDeviceUuidBufferSize] = {};
    if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetUUID, mig_handle, buf, sizeof(buf)) ==
        abi::kSuccess) {
      mig->uuid = CopyString(buf, sizeof(buf));
    }
    std::string profile;
    std::memset(buf, 0, sizeof(buf));
    if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetName, mig_handle, buf, sizeof(buf)) ==
        abi::kSuccess) {
      profile = MigProfileFromName(CopyString(buf, sizeof(buf)));
    }
    model::Entity& e = mig->entity;
    e.kind = model::EntityKind::kMigInstance;
    e.id =
        mig->uuid.empty() ? fmt::format("{}/gi{}", g.entity.id, mig->gpu_instance_id) : mig->uuid;
    e.parent = g.entity.id;
    // The parent GPU's identity, so exporters label MIG series like dcgm-exporter does
    // (gpu, UUID, modelName of the GPU plus GPU_I_ID / GPU_I_PROFILE).
    for (std::string_view key :
         {model::attr::kGpuIndex, model::attr::kGpuUuid, model::attr::kGpuModel,
          model::attr::kGpuPciBusId, model::attr::kDriverVersion, model::attr::kCudaVersion}) {
      if (g.entity.attributes.Has(key)) {
        e.attributes.Set(key, g.entity.attributes.Get(key));
      }
    }
    e.attributes.Set(model::attr::kMigGpuInstanceId, std::to_string(mig->gpu_instance_id));
    e.attributes.Set(model::attr::kMigComputeInstanceId, std::to_string(mig->compute_instance_id));
    if (!profile.empty()) {
      e.attributes.Set(model::attr::kMigProfile, profile);
    }
    mig->consumer_labels = Labels{{std::string(model::attr::kGpuIndex), std::to_string(g.index)},
                                  {std::string(model::attr::kGpuUuid), e.id}};
    for (int t = 0; t < 2; ++t) {
      mig->process_labels[t] = mig->consumer_labels;
      mig->process_labels[t].Set(m::kLabelType, t == 0 ? "compute" : "graphics");
    }
    g.migs.push_back(std::move(mig));
  }
}

void NvmlSource::Impl::SetupEvents() {
  const NvmlLibrary& lib = *library_;
  if (lib.api().nvmlEventSetCreate == nullptr || lib.api().nvmlEventSetWait_v2 == nullptr ||
      lib.api().nvmlDeviceRegisterEvents == nullptr) {
    WARPSCOPE_LOG(WARNING, "NVML {} has no event API: XID errors will not be reported", lib.path());
    ReportError("not_supported");
    return;
  }
  nvmlReturn_t rc = WARPSCOPE_NVML_CALL(lib, nvmlEventSetCreate, &event_set_);
  if (rc != abi::kSuccess) {
    event_set_ = nullptr;
    WARPSCOPE_LOG(WARNING, "{}; XID errors will not be reported",
                  lib.ToStatus(rc, "nvmlEventSetCreate").message());
    ReportError(nvml::ReturnCodeReason(rc));
    return;
  }
  bool any = false;
  for (auto& g : gpus_) {
    if (!g->degraded) {
      any = RegisterEvents(*g) || any;
    }
  }
  if (!any && std::none_of(gpus_.begin(), gpus_.end(), [](auto& g) { return g->degraded; })) {
    (void)WARPSCOPE_NVML_CALL(lib, nvmlEventSetFree, event_set_);
    event_set_ = nullptr;
    return;
  }
  event_thread_ = std::jthread([this](std::stop_token stop) { EventLoop(std::move(stop)); });
}

bool NvmlSource::Impl::RegisterEvents(GpuState& g) {
  const NvmlLibrary& lib = *library_;
  if (event_set_ == nullptr) {
    return false;
  }
  unsigned long long mask = kEventMask;
  unsigned long long supported = 0;
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetSupportedEventTypes, g.handle, &supported) ==
      abi::kSuccess) {
    mask &= supported;
  }
  if (mask == 0) {
    return false;
  }
  nvmlReturn_t rc = WARPSCOPE_NVML_CALL(lib, nvmlDeviceRegisterEvents, g.handle, mask, event_set_);
  if (rc != abi::kSuccess && mask != abi::kEventTypeXidCriticalError &&
      (mask & abi::kEventTypeXidCriticalError) != 0) {
    // NOT_SUPPORTED for a combined mask registers nothing: retry with XID alone.
    rc = WARPSCOPE_NVML_CALL(lib, nvmlDeviceRegisterEvents, g.handle,
                             abi::kEventTypeXidCriticalError, event_set_);
  }
  if (rc != abi::kSuccess) {
    WARPSCOPE_LOG(WARNING, "GPU {}: {}; XID errors will not be reported for it", g.index,
                  lib.ToStatus(rc, "nvmlDeviceRegisterEvents").message());
    ReportError(nvml::ReturnCodeReason(rc));
    return false;
  }
  g.events_registered = true;
  return true;
}

void NvmlSource::Impl::EventLoop(std::stop_token stop) {
  pthread_setname_np(pthread_self(), "nvml-events");
  const NvmlLibrary& lib = *library_;
  const auto timeout = options_.event_wait_timeout;
  const unsigned timeout_ms = static_cast<unsigned>(std::max<int64_t>(1, timeout.count()));
  std::mutex sleep_mu;
  std::condition_variable_any sleep_cv;
  while (!stop.stop_requested()) {
    try {
      abi::nvmlEventData_t data{};
      const auto started = std::chrono::steady_clock::now();
      nvmlReturn_t rc =
          WARPSCOPE_NVML_CALL(lib, nvmlEventSetWait_v2, event_set_, &data, timeout_ms);
      if (rc == abi::kSuccess) {
        RawEvent ev{data.device, data.eventType, data.eventData, data.gpuInstanceId,
                    std::chrono::steady_clock::now()};
        std::lock_guard lock(queue_mu_);
        if (queue_.size() >= options_.event_queue_capacity) {
          events_dropped_.fetch_add(1, std::memory_order_relaxed);
        } else {
          queue_.push_back(ev);
        }
        ++events_received_;
        queue_cv_.notify_all();
        continue;
      }
      if (rc != abi::kErrorTimeout) {
        wait_errors_.fetch_add(1, std::memory_order_relaxed);
      }
      // Never spin: a wait that returned early (an error, or a library that does not block)
      // sleeps for the rest of the timeout, and wakes at once on Stop().
      auto remaining = timeout - (std::chrono::steady_clock::now() - started);
      if (remaining > std::chrono::steady_clock::duration::zero()) {
        std::unique_lock lock(sleep_mu);
        sleep_cv.wait_for(lock, stop, remaining, [] { return false; });
      }
    } catch (...) {
      WARPSCOPE_LOG_FIRST_N(ERROR, 1, "NVML event thread: unexpected exception; stopping it");
      return;
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Poll

bool NvmlSource::Impl::Check(GpuState& g, Support& support, Query q, nvmlReturn_t rc) {
  if (rc == abi::kSuccess) {
    g.error_streak = 0;
    return true;
  }
  if (nvml::IsUnsupported(rc)) {
    support.set(q);
    ReportError("not_supported");
    WARPSCOPE_VLOG(1, "GPU {}: {} not supported ({}); metric absent", g.index, kQueryNames[q],
                   nvml::ReturnCodeName(rc));
    return false;
  }
  if (nvml::IsGpuLost(rc)) {
    MarkDegraded(g, rc, q);
    return false;
  }
  if (rc == abi::kErrorNoPermission) {
    support.set(q);
    ReportError("no_permission");
    WARPSCOPE_LOG_FIRST_N(WARNING, 8, "GPU {}: {}: no permission; metric absent", g.index,
                          kQueryNames[q]);
    return false;
  }
  ReportError(nvml::ReturnCodeReason(rc));
  WARPSCOPE_LOG_EVERY_N(WARNING, 64, "GPU {}: {}", g.index,
                        library_->ToStatus(rc, kQueryNames[q]).message());
  if (++g.error_streak >= options_.error_streak_to_degrade) {
    MarkDegraded(g, rc, q);
  }
  return false;
}

void NvmlSource::Impl::MarkDegraded(GpuState& g, nvmlReturn_t rc, Query q) {
  if (g.degraded) {
    return;
  }
  g.degraded = true;
  g.degraded_polls = 0;
  g.error_streak = 0;
  g.gpm.Reset();
  for (auto& mig : g.migs) {
    mig->gpm.Reset();
  }
  for (auto& link : g.links) {
    link.has_prev = false;
  }
  // A lost GPU is counted here; the codes of an error streak were counted one by one in Check.
  ReportError(nvml::IsGpuLost(rc) ? nvml::ReturnCodeReason(rc) : "degraded_after_errors");
  std::string why = library_->ToStatus(rc, kQueryNames[q]).message();
  if (!nvml::IsGpuLost(rc)) {
    why = fmt::format("{} failed NVML calls in a row, the last: {}",
                      options_.error_streak_to_degrade, why);
  }
  WARPSCOPE_LOG(WARNING, "GPU {} ({}) degraded: {}; retrying every {} polls", g.index, g.entity.id,
                why, options_.lost_retry_polls);
  AddEvent(started_ ? poll_now_ : clock_.Now(), g.entity.id, "gpu_lost", rc, std::move(why));
}

void NvmlSource::Impl::TryRecover(GpuState& g) {
  const NvmlLibrary& lib = *library_;
  Device handle = nullptr;
  nvmlReturn_t rc = lib.DeviceGetHandleByIndex(g.index, &handle);
  char buf[abi::kDeviceUuidBufferSize] = {};
  if (rc == abi::kSuccess) {
    rc = WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetUUID, handle, buf, sizeof(buf));
  }
  if (rc != abi::kSuccess) {
    WARPSCOPE_VLOG(1, "GPU {} still unavailable: {}", g.index, nvml::ReturnCodeName(rc));
    return;
  }
  if (!g.uuid.empty() && CopyString(buf, sizeof(buf)) != g.uuid) {
    // The index now names another GPU (re-enumeration after a reset): look for ours by UUID.
    handle = nullptr;
    unsigned count = 0;
    if (lib.DeviceGetCount(&count) == abi::kSuccess) {
      for (unsigned i = 0; i < count && handle == nullptr; ++i) {
        Device candidate = nullptr;
        std::memset(buf, 0, sizeof(buf));
        if (lib.DeviceGetHandleByIndex(i, &candidate) == abi::kSuccess &&
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetUUID, candidate, buf, sizeof(buf)) ==
                abi::kSuccess &&
            CopyString(buf, sizeof(buf)) == g.uuid) {
          handle = candidate;
        }
      }
    }
    if (handle == nullptr) {
      return;
    }
  }
  const bool handle_changed = handle != g.handle;
  const bool was_known = !g.uuid.empty();
  g.handle = handle;
  g.degraded = false;
  if (was_known) {
    InitStatic(g);
  } else {
    InitGpu(g);  // never identified (lost at start)
  }
  if (g.degraded) {
    return;  // lost again while re-probing
  }
  if (event_set_ != nullptr && (handle_changed || !g.events_registered)) {
    (void)RegisterEvents(g);
  }
  WARPSCOPE_LOG(INFO, "GPU {} ({}) recovered", g.index, g.entity.id);
  AddEvent(poll_now_, g.entity.id, "gpu_recovered", 0, "GPU answers NVML queries again");
}

void NvmlSource::Impl::Poll(base::TimePoint now, model::SampleSink& out) {
  if (!started_) {
    return;
  }
  ++poll_seq_;
  poll_now_ = now;
  Ctx ctx{now, out};
  emitted_executables_.clear();
  emitted_containers_.clear();
  for (auto& g : gpus_) {
    out.AddEntity(g->entity);
    for (auto& mig : g->migs) {
      out.AddEntity(mig->entity);
    }
  }
  DrainEvents(ctx);
  for (auto& g : gpus_) {
    PollGpu(*g, ctx);
  }
  // Forget processes that were not seen in this poll.
  for (auto it = process_cache_.begin(); it != process_cache_.end();) {
    if (it->second.seen_poll != poll_seq_) {
      it = process_cache_.erase(it);
    } else {
      ++it;
    }
  }
  uint64_t mismatches = library_->stride_mismatches();
  for (; reported_stride_mismatches_ < mismatches; ++reported_stride_mismatches_) {
    ReportError("process_stride_mismatch");
  }
  FlushPendingEvents(ctx);
}

void NvmlSource::Impl::PollGpu(GpuState& g, Ctx& ctx) {
  if (g.degraded) {
    ++g.degraded_polls;
    if (g.degraded_polls % static_cast<uint64_t>(options_.lost_retry_polls) == 0) {
      TryRecover(g);
      if (!g.degraded) {
        // A GPU first seen lost gets its real identity now, and the re-probe may have found
        // other MIG instances: declare them for this poll.
        ctx.out.AddEntity(g.entity);
        for (auto& mig : g.migs) {
          ctx.out.AddEntity(mig->entity);
        }
      }
    }
    if (g.degraded) {
      ctx.out.AddValue(m::kDegraded, g.entity.id, 1);
      return;
    }
  }
  ctx.out.AddValue(m::kInfo, g.entity.id, 1);
  using Step = void (Impl::*)(GpuState&, Ctx&);
  static constexpr Step kSteps[] = {
      &Impl::PollUtilization, &Impl::PollMemory,    &Impl::PollPower,  &Impl::PollThermalsAndClocks,
      &Impl::PollPcie,        &Impl::PollFields,    &Impl::PollErrors, &Impl::PollGpm,
      &Impl::PollMig,         &Impl::PollProcesses,
  };
  for (Step step : kSteps) {
    if (g.degraded) {
      break;
    }
    (this->*step)(g, ctx);
  }
  ctx.out.AddValue(m::kDegraded, g.entity.id, g.degraded ? 1 : 0);
}

void NvmlSource::Impl::PollUtilization(GpuState& g, Ctx& ctx) {
  const NvmlLibrary& lib = *library_;
  const std::string& id = g.entity.id;
  if (!g.unsupported[kQUtilization]) {
    abi::nvmlUtilization_t u{};
    if (Check(g, g.unsupported, kQUtilization,
              WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetUtilizationRates, g.handle, &u))) {
      ctx.out.AddValue(m::kGpuUtilization, id, u.gpu / 100.0);
      ctx.out.AddValue(m::kMemoryCopyUtilization, id, u.memory / 100.0);
    }
  }
  unsigned util = 0;
  unsigned period_us = 0;
  if (!g.degraded && !g.unsupported[kQEncoder] &&
      Check(
          g, g.unsupported, kQEncoder,
          WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetEncoderUtilization, g.handle, &util, &period_us))) {
    ctx.out.AddValue(m::kEncoderUtilization, id, util / 100.0);
  }
  if (!g.degraded && !g.unsupported[kQDecoder] &&
      Check(
          g, g.unsupported, kQDecoder,
          WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetDecoderUtilization, g.handle, &util, &period_us))) {
    ctx.out.AddValue(m::kDecoderUtilization, id, util / 100.0);
  }
}

void NvmlSource::Impl::PollMemory(GpuState& g, Ctx& ctx) {
  EmitMemory(g, g.unsupported, g.handle, g.entity.id, ctx);
}

void NvmlSource::Impl::EmitMemory(GpuState& g, Support& support, Device handle,
                                  const std::string& id, Ctx& ctx) {
  if (support[kQMemory]) {
    return;
  }
  nvml::MemoryInfo mem;
  if (!Check(g, support, kQMemory, library_->DeviceGetMemoryInfo(handle, &mem))) {
    return;
  }
  ctx.out.AddValue(m::kMemoryTotal, id, static_cast<double>(mem.total));
  ctx.out.AddValue(m::kMemoryUsed, id, static_cast<double>(mem.used));
  ctx.out.AddValue(m::kMemoryFree, id, static_cast<double>(mem.free));
  if (mem.has_reserved) {
    ctx.out.AddValue(m::kMemoryReserved, id, static_cast<double>(mem.reserved));
  }
  uint64_t usable = mem.total > mem.reserved ? mem.total - mem.reserved : 0;
  if (usable > 0) {
    ctx.out.AddValue(m::kMemoryUtilization, id,
                     static_cast<double>(mem.used) / static_cast<double>(usable));
  }
}

void NvmlSource::Impl::PollPower(GpuState& g, Ctx& ctx) {
  const NvmlLibrary& lib = *library_;
  const std::string& id = g.entity.id;
  struct MilliwattQuery {
    Query q;
    abi::nvmlDeviceGetPowerUsage_fn fn;
    const model::MetricDesc* desc;
  };
  const MilliwattQuery queries[] = {
      {kQPower, lib.api().nvmlDeviceGetPowerUsage, &m::kPowerUsage},
      {kQPowerLimit, lib.api().nvmlDeviceGetPowerManagementLimit, &m::kPowerLimit},
      {kQEnforcedLimit, lib.api().nvmlDeviceGetEnforcedPowerLimit, &m::kEnforcedPowerLimit},
  };
  for (const auto& query : queries) {
    if (g.degraded) {
      return;
    }
    unsigned mw = 0;
    if (!g.unsupported[query.q] &&
        Check(g, g.unsupported, query.q, NvmlLibrary::Invoke(query.fn, g.handle, &mw))) {
      ctx.out.AddValue(*query.desc, id, mw / 1000.0);
    }
  }
  unsigned long long mj = 0;
  if (!g.degraded && !g.unsupported[kQEnergy] &&
      Check(g, g.unsupported, kQEnergy,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetTotalEnergyConsumption, g.handle, &mj))) {
    ctx.out.AddValue(m::kEnergyConsumed, id, static_cast<double>(mj) / 1000.0);
  }
}

void NvmlSource::Impl::PollThermalsAndClocks(GpuState& g, Ctx& ctx) {
  const NvmlLibrary& lib = *library_;
  const std::string& id = g.entity.id;
  unsigned value = 0;
  if (!g.unsupported[kQTemperature] &&
      Check(g, g.unsupported, kQTemperature,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetTemperature, g.handle, abi::kTemperatureGpu,
                                &value)) &&
      value <= kMaxPlausibleCelsius) {
    ctx.out.AddValue(m::kTemperature, id, value);
  }
  if (!g.degraded && !g.unsupported[kQSmClock] &&
      Check(g, g.unsupported, kQSmClock,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetClockInfo, g.handle, abi::kClockSm, &value))) {
    ctx.out.AddValue(m::kSmClock, id, value * 1e6);
  }
  if (!g.degraded && !g.unsupported[kQMemClock] &&
      Check(g, g.unsupported, kQMemClock,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetClockInfo, g.handle, abi::kClockMem, &value))) {
    ctx.out.AddValue(m::kMemoryClock, id, value * 1e6);
  }
  if (g.max_sm_hz) {
    ctx.out.AddValue(m::kMaxSmClock, id, *g.max_sm_hz);
  }
  if (g.max_mem_hz) {
    ctx.out.AddValue(m::kMaxMemoryClock, id, *g.max_mem_hz);
  }
  if (g.mig_enabled) {
    ctx.out.AddValue(m::kMigMode, id, *g.mig_enabled ? 1 : 0);
  }
  unsigned long long reasons = 0;
  if (!g.degraded && !g.unsupported[kQClockReasons] &&
      Check(g, g.unsupported, kQClockReasons,
            lib.DeviceGetClocksEventReasons(g.handle, &reasons))) {
    ctx.out.AddValue(m::kClockEventReasons, id, static_cast<double>(reasons));
    for (size_t i = 0; i < kClockReasonCount; ++i) {
      ctx.out.AddValue(m::kClockEventReasonActive, id, reason_labels_[i],
                       (reasons & kClockReasons[i].bit) != 0 ? 1 : 0);
    }
  }
}

void NvmlSource::Impl::PollPcie(GpuState& g, Ctx& ctx) {
  const NvmlLibrary& lib = *library_;
  const std::string& id = g.entity.id;
  unsigned kb_per_s = 0;
  if (!g.unsupported[kQPcieTx] &&
      Check(g, g.unsupported, kQPcieTx,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetPcieThroughput, g.handle, abi::kPcieUtilTxBytes,
                                &kb_per_s))) {
    ctx.out.AddValue(m::kPcieTransmitRate, id, kb_per_s * 1024.0);
  }
  if (!g.degraded && !g.unsupported[kQPcieRx] &&
      Check(g, g.unsupported, kQPcieRx,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetPcieThroughput, g.handle, abi::kPcieUtilRxBytes,
                                &kb_per_s))) {
    ctx.out.AddValue(m::kPcieReceiveRate, id, kb_per_s * 1024.0);
  }
  unsigned replays = 0;
  if (!g.degraded && !g.unsupported[kQPcieReplay] &&
      Check(g, g.unsupported, kQPcieReplay,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetPcieReplayCounter, g.handle, &replays))) {
    ctx.out.AddValue(m::kPcieReplays, id, replays);
  }
}

void NvmlSource::Impl::PollFields(GpuState& g, Ctx& ctx) {
  if (g.fields.empty()) {
    return;
  }
  const std::string& id = g.entity.id;
  for (size_t i = 0; i < g.fields.size(); ++i) {
    abi::nvmlFieldValue_t& f = g.fields[i];
    f = abi::nvmlFieldValue_t{};
    f.fieldId = g.field_slots[i].field_id;
    f.scopeId = g.field_slots[i].scope;
  }
  nvmlReturn_t rc = WARPSCOPE_NVML_CALL(*library_, nvmlDeviceGetFieldValues, g.handle,
                                        static_cast<int>(g.fields.size()), g.fields.data());
  if (!Check(g, g.unsupported, kQFieldValues, rc)) {
    if (g.unsupported[kQFieldValues]) {
      g.unsupported.set(kQMemoryTemperature);
      g.unsupported.set(kQNvlink);
      RebuildFields(g);
    }
    return;
  }
  for (auto& link : g.links) {
    link.got_tx = false;
    link.got_rx = false;
  }
  bool rebuild = false;
  for (size_t i = 0; i < g.fields.size(); ++i) {
    const abi::nvmlFieldValue_t& f = g.fields[i];
    const FieldSlot& slot = g.field_slots[i];
    const Query q = slot.kind == FieldKind::kMemoryTemperature ? kQMemoryTemperature : kQNvlink;
    if (f.nvmlReturn != abi::kSuccess) {
      if (g.unsupported[q]) {
        continue;  // already reported for another link in this poll
      }
      if (!Check(g, g.unsupported, q, f.nvmlReturn)) {
        if (g.degraded) {
          return;
        }
        rebuild = rebuild || g.unsupported[q];
      }
      continue;
    }
    switch (slot.kind) {
      case FieldKind::kMemoryTemperature: {
        double celsius = MemoryTemperature(f);
        if (celsius <= kMaxPlausibleCelsius) {
          ctx.out.AddValue(m::kMemoryTemperature, id, celsius);
        }
        break;
      }
      case FieldKind::kNvlinkTx: {
        LinkState& link = g.links[slot.link];
        link.new_tx_kib = FieldAsU64(f);
        link.new_tx_us = f.timestamp;
        link.got_tx = true;
        break;
      }
      case FieldKind::kNvlinkRx: {
        LinkState& link = g.links[slot.link];
        link.new_rx_kib = FieldAsU64(f);
        link.new_rx_us = f.timestamp;
        link.got_rx = true;
        break;
      }
    }
  }
  if (!g.unsupported[kQNvlink] && !g.links.empty()) {
    const base::Duration mono = clock_.Monotonic();
    double total = 0;
    bool have_total = false;
    for (auto& link : g.links) {
      if (!link.got_tx || !link.got_rx) {
        continue;
      }
      ctx.out.AddValue(m::kNvlinkTransmitBytes, id, *link.labels, link.new_tx_kib * 1024.0);
      ctx.out.AddValue(m::kNvlinkReceiveBytes, id, *link.labels, link.new_rx_kib * 1024.0);
      if (link.has_prev) {
        // Seconds between the readings from the fields' own timestamps; the agent's clock when
        // the driver gives none.
        const double mono_seconds = base::ToSeconds(mono - link.prev_mono);
        auto seconds = [&](int64_t now_us, int64_t prev_us) {
          return now_us > prev_us ? (now_us - prev_us) / 1e6 : mono_seconds;
        };
        const double tx_s = seconds(link.new_tx_us, link.tx_us);
        const double rx_s = seconds(link.new_rx_us, link.rx_us);
        // A counter that went backwards was reset (driver reload): re-baseline, no rate.
        const bool tx_ok = link.new_tx_kib >= link.tx_kib && tx_s > 0;
        const bool rx_ok = link.new_rx_kib >= link.rx_kib && rx_s > 0;
        if (tx_ok) {
          double rate = (link.new_tx_kib - link.tx_kib) * 1024.0 / tx_s;
          ctx.out.AddValue(m::kNvlinkTransmitRate, id, *link.labels, rate);
          total += rate;
        }
        if (rx_ok) {
          double rate = (link.new_rx_kib - link.rx_kib) * 1024.0 / rx_s;
          ctx.out.AddValue(m::kNvlinkReceiveRate, id, *link.labels, rate);
          total += rate;
        }
        have_total = have_total || tx_ok || rx_ok;
      }
      link.tx_kib = link.new_tx_kib;
      link.rx_kib = link.new_rx_kib;
      link.tx_us = link.new_tx_us;
      link.rx_us = link.new_rx_us;
      link.prev_mono = mono;
      link.has_prev = true;
    }
    if (have_total) {
      ctx.out.AddValue(m::kNvlinkBandwidthTotal, id, total);
    }
  }
  if (rebuild) {
    RebuildFields(g);
  }
}

void NvmlSource::Impl::PollErrors(GpuState& g, Ctx& ctx) {
  const NvmlLibrary& lib = *library_;
  const std::string& id = g.entity.id;
  struct EccQuery {
    Query q;
    unsigned error_type;
    unsigned counter_type;
    const model::MetricDesc* desc;
  };
  static constexpr EccQuery kEcc[] = {
      {kQEccCorrectedVolatile, abi::kMemoryErrorCorrected, abi::kEccCounterVolatile,
       &m::kEccCorrectedVolatile},
      {kQEccUncorrectedVolatile, abi::kMemoryErrorUncorrected, abi::kEccCounterVolatile,
       &m::kEccUncorrectedVolatile},
      {kQEccCorrectedAggregate, abi::kMemoryErrorCorrected, abi::kEccCounterAggregate,
       &m::kEccCorrectedAggregate},
      {kQEccUncorrectedAggregate, abi::kMemoryErrorUncorrected, abi::kEccCounterAggregate,
       &m::kEccUncorrectedAggregate},
  };
  for (const auto& e : kEcc) {
    if (g.degraded) {
      return;
    }
    unsigned long long count = 0;
    if (!g.unsupported[e.q] && Check(g, g.unsupported, e.q,
                                     WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetTotalEccErrors, g.handle,
                                                         e.error_type, e.counter_type, &count))) {
      ctx.out.AddValue(*e.desc, id, static_cast<double>(count));
    }
  }
  unsigned corr = 0;
  unsigned unc = 0;
  unsigned pending = 0;
  unsigned failure = 0;
  if (!g.degraded && !g.unsupported[kQRemappedRows] &&
      Check(g, g.unsupported, kQRemappedRows,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetRemappedRows, g.handle, &corr, &unc, &pending,
                                &failure))) {
    ctx.out.AddValue(m::kRemappedRowsCorrectable, id, corr);
    ctx.out.AddValue(m::kRemappedRowsUncorrectable, id, unc);
    ctx.out.AddValue(m::kRemappedRowsPending, id, pending != 0 ? 1 : 0);
    ctx.out.AddValue(m::kRemappedRowsFailure, id, failure != 0 ? 1 : 0);
  }
  if (g.events_registered) {
    ctx.out.AddValue(m::kXidLast, id, static_cast<double>(g.last_xid));
    for (const auto& [xid, count] : g.xid_counts) {
      ctx.out.AddValue(m::kXidErrors, id, xid_labels_[xid], static_cast<double>(count));
    }
  }
}

void NvmlSource::Impl::PollGpm(GpuState& g, Ctx& ctx) {
  if (!g.gpm_supported || g.unsupported[kQGpm]) {
    return;
  }
  SampleGpm(g, g.unsupported, g.gpm, g.gpm_metrics, g.handle, std::nullopt, g.entity.id, ctx);
}

void NvmlSource::Impl::SampleGpm(GpuState& g, Support& support, GpmSampler& sampler,
                                 std::vector<uint8_t>& metrics, Device device,
                                 std::optional<unsigned> gpu_instance_id, const std::string& id,
                                 Ctx& ctx) {
  if (!sampler.allocated() || support[kQGpm]) {
    return;
  }
  const NvmlLibrary& lib = *library_;
  const base::Duration mono = clock_.Monotonic();
  if (sampler.has_baseline() && mono - sampler.latest_time() < options_.gpm_min_interval) {
    return;  // too soon for GPM: keep the baseline, no values this poll
  }
  abi::nvmlGpmSample_t next = sampler.next();
  nvmlReturn_t rc = gpu_instance_id ? WARPSCOPE_NVML_CALL(lib, nvmlGpmMigSampleGet, device,
                                                          *gpu_instance_id, next)
                                    : WARPSCOPE_NVML_CALL(lib, nvmlGpmSampleGet, device, next);
  if (!Check(g, support, kQGpm, rc)) {
    sampler.Reset();
    return;
  }
  if (!sampler.has_baseline()) {
    sampler.Advance(mono);  // first sample: the baseline only
    return;
  }
  abi::nvmlGpmMetricsGet_t& get = *gpm_get_;
  get.version = abi::kGpmMetricsGetVersion;
  get.numMetrics = static_cast<unsigned>(metrics.size());
  get.sample1 = sampler.latest();
  get.sample2 = next;
  for (size_t i = 0; i < metrics.size(); ++i) {
    abi::nvmlGpmMetric_t& metric = get.metrics[i];
    metric.metricId = kGpmMetrics[metrics[i]].id;
    metric.nvmlReturn = abi::kSuccess;
    metric.value = 0;
  }
  sampler.Advance(mono);
  rc = WARPSCOPE_NVML_CALL(lib, nvmlGpmMetricsGet, &get);
  if (!Check(g, support, kQGpm, rc)) {
    return;
  }
  bool drop = false;
  for (size_t i = 0; i < metrics.size(); ++i) {
    const abi::nvmlGpmMetric_t& metric = get.metrics[i];
    const GpmMetricSpec& spec = kGpmMetrics[metrics[i]];
    if (metric.nvmlReturn != abi::kSuccess) {
      if (nvml::IsUnsupported(metric.nvmlReturn)) {
        // This driver lacks the metric: stop asking for it on this GPU (or instance).
        metrics[i] = UINT8_MAX;
        drop = true;
        ReportError("not_supported");
      } else {
        ReportError(nvml::ReturnCodeReason(metric.nvmlReturn));
      }
      continue;
    }
    if (!std::isfinite(metric.value)) {
      continue;  // NaN: no value for this interval
    }
    ctx.out.AddValue(*spec.desc, id, metric.value * spec.scale);
  }
  if (drop) {
    std::erase(metrics, UINT8_MAX);
    if (metrics.empty()) {
      support.set(kQGpm);
    }
  }
}

void NvmlSource::Impl::PollMig(GpuState& g, Ctx& ctx) {
  for (auto& mig : g.migs) {
    if (g.degraded) {
      return;
    }
    EmitMemory(g, mig->unsupported, mig->handle, mig->entity.id, ctx);
    if (!g.degraded && g.gpm_supported && !g.unsupported[kQGpm]) {
      SampleGpm(g, mig->unsupported, mig->gpm, mig->gpm_metrics, g.handle, mig->gpu_instance_id,
                mig->entity.id, ctx);
    }
  }
}

void NvmlSource::Impl::PollProcesses(GpuState& g, Ctx& ctx) {
  if (!options_.collect_processes) {
    return;
  }
  if (g.mig_enabled.value_or(false) && !g.migs.empty()) {
    // Per MIG instance through its own handle; when that is refused, through the parent's list
    // attributed by GPU instance id.
    bool need_parent = false;
    for (auto& mig : g.migs) {
      if (mig->unsupported[kQComputeProcesses] && mig->unsupported[kQGraphicsProcesses]) {
        need_parent = true;
        continue;
      }
      if (CollectProcessRows(g, mig->unsupported, mig->handle)) {
        EmitProcesses(mig->process_labels, mig->consumer_labels, false, ctx);
      } else if (g.degraded) {
        return;
      } else if (mig->unsupported[kQComputeProcesses] && mig->unsupported[kQGraphicsProcesses]) {
        need_parent = true;
      }
    }
    if (!need_parent || !CollectProcessRows(g, g.unsupported, g.handle)) {
      return;
    }
    mig_rows_.swap(rows_);  // every process of the GPU, with its GPU instance id
    for (auto& mig : g.migs) {
      if (!(mig->unsupported[kQComputeProcesses] && mig->unsupported[kQGraphicsProcesses])) {
        continue;
      }
      rows_.clear();
      for (const auto& row : mig_rows_) {
        if (row.gpu_instance_id == mig->gpu_instance_id) {
          rows_.push_back(row);
        }
      }
      EmitProcesses(mig->process_labels, mig->consumer_labels, false, ctx);
    }
    return;
  }
  if (!CollectProcessRows(g, g.unsupported, g.handle) || rows_.empty()) {
    return;  // nothing runs: no need for utilisation samples
  }
  const bool util_known = ReadProcessUtilization(g);
  if (g.degraded) {
    return;
  }
  EmitProcesses(g.process_labels, g.consumer_labels, util_known, ctx);
}

bool NvmlSource::Impl::CollectProcessRows(GpuState& g, Support& support, Device handle) {
  rows_.clear();
  bool any = false;
  for (uint8_t type = 0; type < 2; ++type) {
    const Query q = type == 0 ? kQComputeProcesses : kQGraphicsProcesses;
    if (support[q]) {
      continue;
    }
    nvmlReturn_t rc = library_->DeviceGetRunningProcesses(
        handle, type == 0 ? nvml::ProcessListKind::kCompute : nvml::ProcessListKind::kGraphics,
        process_buffer_, process_entries_);
    if (!Check(g, support, q, rc)) {
      if (g.degraded) {
        return false;
      }
      continue;
    }
    any = true;
    for (const auto& e : process_entries_) {
      auto it = std::find_if(rows_.begin(), rows_.end(),
                             [&](const ProcessRow& r) { return r.pid == e.pid; });
      if (it != rows_.end()) {
        // Both a compute and a graphics context: one row, typed compute, memory counted once.
        it->memory = std::max(it->memory, e.used_memory);
        it->has_memory = it->has_memory || e.has_used_memory;
        continue;
      }
      rows_.push_back({e.pid, e.used_memory, e.has_used_memory, type, e.gpu_instance_id});
    }
  }
  return any;
}

bool NvmlSource::Impl::ReadProcessUtilization(GpuState& g) {
  util_acc_.clear();
  if (g.unsupported[kQProcessUtilization]) {
    return false;
  }
  nvmlReturn_t rc = abi::kSuccess;
  unsigned count = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    count = static_cast<unsigned>(util_samples_.size());
    rc = WARPSCOPE_NVML_CALL(*library_, nvmlDeviceGetProcessUtilization, g.handle,
                             util_samples_.empty() ? nullptr : util_samples_.data(), &count,
                             g.last_util_timestamp);
    if (rc == abi::kErrorInsufficientSize ||
        (rc == abi::kSuccess && util_samples_.empty() && count > 0)) {
      util_samples_.resize(std::max<size_t>(count, util_samples_.size()) * 2 + 8);
      continue;
    }
    break;
  }
  if (rc == abi::kErrorNotFound) {
    return true;  // no samples since the last poll: every running process was idle
  }
  if (!Check(g, g.unsupported, kQProcessUtilization, rc)) {
    return false;
  }
  count = std::min<unsigned>(count, static_cast<unsigned>(util_samples_.size()));
  unsigned long long newest = g.last_util_timestamp;
  for (unsigned i = 0; i < count; ++i) {
    const auto& s = util_samples_[i];
    // Stale or out-of-range samples (nvtop bug #110) are dropped.
    if (s.timeStamp <= g.last_util_timestamp || s.smUtil > 100 || s.memUtil > 100) {
      continue;
    }
    newest = std::max(newest, s.timeStamp);
    util_acc_.push_back({s.pid, static_cast<double>(s.smUtil), static_cast<double>(s.memUtil), 1});
  }
  g.last_util_timestamp = newest;
  // One accumulator per pid, sorted for the binary search in EmitProcesses (n log n, not n^2
  // with 64 processes and several samples each).
  std::sort(util_acc_.begin(), util_acc_.end(),
            [](const UtilAccumulator& a, const UtilAccumulator& b) { return a.pid < b.pid; });
  size_t out = 0;
  for (size_t i = 0; i < util_acc_.size(); ++i) {
    if (out > 0 && util_acc_[out - 1].pid == util_acc_[i].pid) {
      util_acc_[out - 1].sm_sum += util_acc_[i].sm_sum;
      util_acc_[out - 1].mem_sum += util_acc_[i].mem_sum;
      util_acc_[out - 1].samples += util_acc_[i].samples;
    } else {
      util_acc_[out++] = util_acc_[i];
    }
  }
  util_acc_.resize(out);
  return true;
}

ProcessCacheEntry& NvmlSource::Impl::ResolveProcess(unsigned pid) {
  auto [it, inserted] = process_cache_.try_emplace(pid);
  ProcessCacheEntry& entry = it->second;
  entry.seen_poll = poll_seq_;
  const ProcessInfo* info = resolver_.Resolve(static_cast<int>(pid));
  auto build = [&](const ProcessInfo& p, bool from_nvml) {
    entry.from_nvml_name = from_nvml;
    entry.start_ticks = p.start_ticks;
    entry.process = MakeProcessEntity(p);
    entry.executable = MakeExecutableEntity(p);
    if (p.container_id.empty()) {
      entry.container.reset();
    } else {
      entry.container = MakeContainerEntity(p);
    }
    entry.emitted_poll = 0;
  };
  if (info != nullptr) {
    if (inserted || entry.from_nvml_name || entry.start_ticks != info->start_ticks) {
      build(*info, false);
    }
    return entry;
  }
  if (!inserted && entry.from_nvml_name) {
    return entry;
  }
  // Not in /proc (another pid namespace, already exited, or a simulated process): NVML's name.
  ProcessInfo fallback;
  fallback.pid = static_cast<int>(pid);
  fallback.container_pid = static_cast<int>(pid);
  char name[256] = {};
  nvmlReturn_t rc =
      WARPSCOPE_NVML_CALL(*library_, nvmlSystemGetProcessName, pid, name, sizeof(name));
  std::string full = rc == abi::kSuccess ? CopyString(name, sizeof(name)) : std::string();
  if (full.empty()) {
    ReportError("process_name");
    fallback.executable = "unknown";
  } else {
    size_t slash = full.rfind('/');
    fallback.executable = slash == std::string::npos ? full : full.substr(slash + 1);
    if (full.front() == '/') {
      fallback.executable_path = full;
    }
  }
  build(fallback, true);
  return entry;
}

void NvmlSource::Impl::EmitProcessEntities(ProcessCacheEntry& entry, Ctx& ctx) {
  if (entry.emitted_poll == poll_seq_) {
    return;
  }
  entry.emitted_poll = poll_seq_;
  ctx.out.AddEntity(entry.process);
  std::string_view exe = entry.executable.id;
  if (std::find(emitted_executables_.begin(), emitted_executables_.end(), exe) ==
      emitted_executables_.end()) {
    emitted_executables_.push_back(exe);
    ctx.out.AddEntity(entry.executable);
  }
  if (entry.container) {
    std::string_view ctr = entry.container->id;
    if (std::find(emitted_containers_.begin(), emitted_containers_.end(), ctr) ==
        emitted_containers_.end()) {
      emitted_containers_.push_back(ctr);
      ctx.out.AddEntity(*entry.container);
    }
  }
}

void NvmlSource::Impl::EmitProcesses(const Labels (&labels)[2], const Labels& consumer_labels,
                                     bool util_known, Ctx& ctx) {
  rollups_.clear();
  for (const ProcessRow& row : rows_) {
    ProcessCacheEntry& entry = ResolveProcess(row.pid);
    EmitProcessEntities(entry, ctx);
    const Labels& l = labels[row.type];
    const std::string& pid_id = entry.process.id;
    if (row.has_memory) {
      ctx.out.AddValue(m::kProcessMemoryUsed, pid_id, l, static_cast<double>(row.memory));
    }
    double sm = 0;
    if (util_known) {
      double mem_util = 0;
      auto it =
          std::lower_bound(util_acc_.begin(), util_acc_.end(), row.pid,
                           [](const UtilAccumulator& a, unsigned pid) { return a.pid < pid; });
      if (it != util_acc_.end() && it->pid == row.pid && it->samples > 0) {
        sm = it->sm_sum / it->samples / 100.0;
        mem_util = it->mem_sum / it->samples / 100.0;
      }
      ctx.out.AddValue(m::kProcessSmUtilization, pid_id, l, sm);
      ctx.out.AddValue(m::kProcessMemoryUtilization, pid_id, l, mem_util);
    }
    auto r = std::find_if(rollups_.begin(), rollups_.end(), [&](const Rollup& x) {
      return x.entry->executable.id == entry.executable.id;
    });
    if (r == rollups_.end()) {
      rollups_.push_back({&entry, 0, 0, false, 0});
      r = rollups_.end() - 1;
    }
    if (row.has_memory) {
      r->memory += static_cast<double>(row.memory);
      r->has_memory = true;
    }
    r->sm += sm;
    ++r->processes;
  }
  for (const Rollup& r : rollups_) {
    const std::string& exe_id = r.entry->executable.id;
    if (r.has_memory) {
      ctx.out.AddValue(m::kExecutableMemoryUsed, exe_id, consumer_labels, r.memory);
    }
    if (util_known) {
      ctx.out.AddValue(m::kExecutableSmUtilization, exe_id, consumer_labels, r.sm);
    }
    ctx.out.AddValue(m::kExecutableProcesses, exe_id, consumer_labels, r.processes);
  }
}

GpuState* NvmlSource::Impl::FindGpuByHandle(Device device) {
  for (auto& g : gpus_) {
    if (g->handle == device) {
      return g.get();
    }
  }
  return nullptr;
}

void NvmlSource::Impl::AddEvent(base::TimePoint when, const std::string& entity,
                                std::string_view kind, int64_t code, std::string message) {
  model::Event e;
  e.time = when;
  e.entity = entity;
  e.kind = std::string(kind);
  e.code = code;
  e.message = std::move(message);
  pending_events_.push_back(std::move(e));
}

void NvmlSource::Impl::DrainEvents(Ctx& ctx) {
  {
    std::lock_guard lock(queue_mu_);
    drained_.swap(queue_);
  }
  const auto steady_now = std::chrono::steady_clock::now();
  for (const RawEvent& ev : drained_) {
    GpuState* g = FindGpuByHandle(ev.device);
    if (g == nullptr) {
      ReportError("event_unknown_device");
      continue;
    }
    // The event's own time: `now` minus how long it waited in the queue.
    base::TimePoint when =
        ctx.now - std::chrono::duration_cast<base::Duration>(
                      std::max(steady_now - ev.when, std::chrono::steady_clock::duration::zero()));
    const std::string* entity = &g->entity.id;
    for (auto& mig : g->migs) {
      if (ev.gpu_instance_id != abi::kInvalidInstanceId &&
          mig->gpu_instance_id == ev.gpu_instance_id) {
        entity = &mig->entity.id;
        break;
      }
    }
    if ((ev.type & abi::kEventTypeXidCriticalError) != 0) {
      g->last_xid = ev.data;
      ++g->xid_counts[ev.data];
      auto [it, inserted] = xid_labels_.try_emplace(ev.data);
      if (inserted) {
        it->second.Set(m::kLabelXid, std::to_string(ev.data));
      }
      std::string_view text = model::XidDescription(ev.data);
      AddEvent(
          when, *entity, "xid", static_cast<int64_t>(ev.data),
          text.empty() ? fmt::format("XID {}", ev.data) : fmt::format("XID {}: {}", ev.data, text));
      pending_events_.back().attributes.Set(m::kLabelXid, std::to_string(ev.data));
      WARPSCOPE_LOG(WARNING, "GPU {} ({}): {}", g->index, g->entity.id,
                    pending_events_.back().message);
    } else if ((ev.type & abi::kEventTypeDoubleBitEccError) != 0) {
      AddEvent(when, *entity, "ecc_uncorrected", 0, "uncorrectable (double-bit) ECC error");
    } else if ((ev.type & abi::kEventTypeSingleBitEccError) != 0) {
      AddEvent(when, *entity, "ecc_corrected", 0, "corrected (single-bit) ECC error");
    }
  }
  drained_.clear();
  uint64_t dropped = events_dropped_.load(std::memory_order_relaxed);
  for (; reported_dropped_ < dropped; ++reported_dropped_) {
    ReportError("event_queue_full");
  }
  uint64_t wait_errors = wait_errors_.load(std::memory_order_relaxed);
  for (; reported_wait_errors_ < wait_errors; ++reported_wait_errors_) {
    ReportError("event_wait");
  }
}

void NvmlSource::Impl::FlushPendingEvents(Ctx& ctx) {
  for (const auto& e : pending_events_) {
    ctx.out.AddEvent(e);
  }
  pending_events_.clear();
}

// ------------------------------------------------------------------------------------------------
// NvmlSource

std::unique_ptr<NvmlSource> NvmlSource::Create(const NvmlSourceOptions& options,
                                               const base::Clock& clock, ProcessResolver& resolver,
                                               SourceErrorHook on_error) {
  return std::unique_ptr<NvmlSource>(
      new NvmlSource(std::make_unique<Impl>(options, clock, resolver, std::move(on_error))));
}

NvmlSource::NvmlSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

NvmlSource::~NvmlSource() = default;

base::Status NvmlSource::Start() { return impl_->Start(); }

void NvmlSource::Poll(base::TimePoint now, model::SampleSink& out) { impl_->Poll(now, out); }

void NvmlSource::Stop() { impl_->Stop(); }

const std::map<std::string, uint64_t, std::less<>>& NvmlSource::error_counts() const {
  return impl_->error_counts();
}

uint64_t NvmlSource::error_count(std::string_view reason) const {
  const auto& counts = impl_->error_counts();
  auto it = counts.find(reason);
  return it == counts.end() ? 0 : it->second;
}

size_t NvmlSource::gpu_count() const { return impl_->gpu_count(); }

const nvml::NvmlLibrary* NvmlSource::library() const { return impl_->library(); }

bool NvmlSource::WaitForEventsForTesting(uint64_t count, std::chrono::milliseconds timeout) {
  return impl_->WaitForEvents(count, timeout);
}

}  // namespace warpscope::agent
