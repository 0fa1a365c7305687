// SPDX-License-Identifier: Apache-2.0
// NvmlSource: loading and enumeration (Start), the order of one poll, and Stop. The reading of
// each GPU is GpuPoller's (gpu_poller.h), events are EventWatcher's (nvml_events.h), process
// entities and series are ProcessEmitter's (process_emitter.h).
#include "agent/sources/nvml/nvml_source.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "agent/sources/nvml/gpu_poller.h"
#include "agent/sources/nvml/nvml_events.h"
#include "agent/sources/nvml/nvml_metrics.h"
#include "agent/sources/nvml/process_emitter.h"
#include "base/logging.h"

namespace warpscope::agent {

namespace abi = nvml::abi;
namespace m = nvml_metrics;
using abi::nvmlReturn_t;
using nvml::Device;
using nvml::NvmlLibrary;
using nvml_internal::GpuPoller;
using nvml_internal::GpuState;

class NvmlSource::Impl final : public nvml_internal::Reporter {
 public:
  Impl(const NvmlSourceOptions& options, const base::Clock& clock, ProcessResolver& resolver,
       SourceErrorHook on_error)
      : clock_(clock), on_error_(std::move(on_error)), events_(ctx_.options), emitter_(resolver) {
    ctx_.options = options;
    ctx_.options.lost_retry_polls = std::max(ctx_.options.lost_retry_polls, 1);
    ctx_.options.error_streak_to_degrade = std::max(ctx_.options.error_streak_to_degrade, 1);
    ctx_.clock = &clock_;
    for (size_t i = 0; i < nvml_internal::kClockReasonCount; ++i) {
      ctx_.reason_labels[i].Set(m::kLabelReason, nvml_internal::kClockReasons[i].name);
    }
    ctx_.link_labels.resize(nvml_internal::kMaxNvlinkLinks);
    for (unsigned i = 0; i < nvml_internal::kMaxNvlinkLinks; ++i) {
      ctx_.link_labels[i].Set(m::kLabelLink, std::to_string(i));
    }
  }
  ~Impl() override { Stop(); }

  base::Status Start();
  void Poll(base::TimePoint now, model::SampleSink& out);
  void Stop();

  const std::map<std::string, uint64_t, std::less<>>& error_counts() const { return error_counts_; }
  size_t gpu_count() const { return gpus_.size(); }
  const NvmlLibrary* library() const { return library_.get(); }
  bool WaitForEvents(uint64_t count, std::chrono::milliseconds timeout) {
    return events_.WaitForEvents(count, timeout);
  }

  // nvml_internal::Reporter
  void ReportError(std::string_view reason) override {
    auto it = error_counts_.find(reason);
    if (it == error_counts_.end()) {
      it = error_counts_.emplace(std::string(reason), 0).first;
    }
    ++it->second;
    if (on_error_) {
      on_error_(reason);
    }
  }
  void AddEvent(model::Event event) override { pending_events_.push_back(std::move(event)); }

 private:
  base::Status StartLocked();
  void SetupEvents();
  GpuState* FindGpuByHandle(Device device);

  const base::Clock& clock_;
  SourceErrorHook on_error_;
  std::map<std::string, uint64_t, std::less<>> error_counts_;
  nvml_internal::PollerContext ctx_;

  // Declared before the GPUs and the event set so that it outlives their samples and handles.
  std::unique_ptr<NvmlLibrary> library_;
  nvml_internal::EventWatcher events_;
  nvml_internal::PollScratch scratch_;  // the GPUs are polled one after another
  std::vector<std::unique_ptr<GpuPoller>> gpus_;
  nvml_internal::ProcessEmitter emitter_;
  bool started_ = false;

  std::vector<model::Event> pending_events_;
  std::vector<nvml_internal::RawEvent> raw_events_;  // reused per poll
  uint64_t reported_stride_mismatches_ = 0;
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
  auto loaded = NvmlLibrary::Load(ctx_.options.library_path);
  if (!loaded) {
    ReportError(loaded.error().code() == base::StatusCode::kNotFound ? "library_load" : "init");
    return loaded.error();
  }
  library_ = std::move(*loaded);
  const NvmlLibrary& lib = *library_;
  ctx_.lib = &lib;

  char buf[abi::kSystemDriverVersionBufferSize] = {};
  if (WARPSCOPE_NVML_CALL(lib, nvmlSystemGetDriverVersion, buf, sizeof(buf)) == abi::kSuccess) {
    ctx_.driver_version = nvml_internal::CopyString(buf, sizeof(buf));
  }
  int cuda = 0;
  if (lib.SystemGetCudaDriverVersion(&cuda) == abi::kSuccess && cuda > 0) {
    ctx_.cuda_version = fmt::format("{}.{}", cuda / 1000, (cuda % 1000) / 10);
  }

  unsigned count = 0;
  nvmlReturn_t rc = lib.DeviceGetCount(&count);
  if (rc != abi::kSuccess) {
    ReportError(nvml::ReturnCodeReason(rc));
    return lib.ToStatus(rc, "nvmlDeviceGetCount_v2");
  }
  if (count == 0) {
    return base::NotFound("NVML ({}, driver {}) reports no GPU; GPU metrics are off", lib.path(),
                          ctx_.driver_version);
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
    auto g = std::make_unique<GpuPoller>(ctx_, *this, scratch_, i, handle);
    if (rc != abi::kSuccess) {
      g->MarkLostAtStart(rc, clock_.Now());
    } else {
      g->Identify(clock_.Now());
    }
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
  WARPSCOPE_LOG(INFO, "NVML {}: driver {}, CUDA {}, {} GPU(s){}", lib.path(), ctx_.driver_version,
                ctx_.cuda_version, gpus_.size(),
                no_permission > 0 ? fmt::format(" ({} without permission skipped)", no_permission)
                                  : std::string());
  return base::OkStatus();
}

void NvmlSource::Impl::SetupEvents() {
  if (!events_.Create(*library_, *this)) {
    return;
  }
  bool any = false;
  for (auto& g : gpus_) {
    if (!g->state().degraded) {
      any = events_.Register(g->state(), *this) || any;
    }
  }
  if (!any &&
      std::none_of(gpus_.begin(), gpus_.end(), [](auto& g) { return g->state().degraded; })) {
    events_.Stop();  // frees the set: no GPU can deliver events
    return;
  }
  ctx_.events = &events_;
  events_.Start();
}

void NvmlSource::Impl::Stop() {
  events_.Stop();
  ctx_.events = nullptr;
  gpus_.clear();  // frees GPM samples while the library is still loaded
  emitter_.Clear();
  pending_events_.clear();
  library_.reset();
  ctx_.lib = nullptr;
  started_ = false;
}

// ------------------------------------------------------------------------------------------------
// Poll

void NvmlSource::Impl::Poll(base::TimePoint now, model::SampleSink& out) {
  if (!started_) {
    return;
  }
  emitter_.BeginPoll();
  for (auto& g : gpus_) {
    out.AddEntity(g->state().entity);
    for (auto& mig : g->state().migs) {
      out.AddEntity(mig->entity);
    }
  }
  events_.Take(raw_events_);
  nvml_internal::DeliverEvents(
      raw_events_, now, [this](Device device) { return FindGpuByHandle(device); }, *this);
  events_.ReportCounters(*this);
  for (auto& g : gpus_) {
    g->Poll(now, out);
    for (const auto& group : g->process_groups()) {
      emitter_.Emit(group, g->process_rows(), g->utilization(), *library_, *this, out);
    }
  }
  emitter_.EndPoll();
  uint64_t mismatches = library_->stride_mismatches();
  for (; reported_stride_mismatches_ < mismatches; ++reported_stride_mismatches_) {
    ReportError("process_stride_mismatch");
  }
  for (const auto& e : pending_events_) {
    out.AddEvent(e);
  }
  pending_events_.clear();
}

GpuState* NvmlSource::Impl::FindGpuByHandle(Device device) {
  for (auto& g : gpus_) {
    if (g->state().handle == device) {
      return &g->state();
    }
  }
  return nullptr;
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
