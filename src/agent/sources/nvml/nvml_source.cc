// SPDX-License-Identifier: Apache-2.0
// NvmlSource: loading and enumeration (Start), the order of one poll with its per-GPU deadline,
// the process step (Finish), and Stop. Reading one GPU is GpuPoller's (gpu_poller.h), on one of
// the poll workers (poll_pool.h, device_runner.h); events are EventWatcher's (nvml_events.h);
// process entities and series are ProcessEmitter's (process_emitter.h).
#include "agent/sources/nvml/nvml_source.h"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "agent/sources/nvml/device_runner.h"
#include "agent/sources/nvml/gpu_poller.h"
#include "agent/sources/nvml/nvml_events.h"
#include "agent/sources/nvml/nvml_metrics.h"
#include "agent/sources/nvml/poll_pool.h"
#include "agent/sources/nvml/process_emitter.h"
#include "base/logging.h"

namespace warpscope::agent {

namespace abi = nvml::abi;
namespace m = nvml_metrics;
using abi::nvmlReturn_t;
using nvml::Device;
using nvml::NvmlLibrary;
using nvml_internal::DeviceRunner;
using nvml_internal::EventWatcher;
using nvml_internal::PollerContext;
using nvml_internal::PollPool;
using Clock = PollPool::Clock;

namespace {

// The per-GPU deadline when the agent did not say how long the source may take.
constexpr auto kDefaultDeviceDeadline = std::chrono::seconds(5);
// How long Stop waits for a poll worker after shutting NVML down under it.
constexpr auto kStopGrace = std::chrono::milliseconds(1000);

// What poll workers still inside NVML at Stop use; kept allocated for the rest of the process.
struct LeftBehind {
  std::unique_ptr<PollerContext> ctx;
  std::unique_ptr<NvmlLibrary> library;
  std::unique_ptr<EventWatcher> events;
  std::vector<std::unique_ptr<DeviceRunner>> gpus;
  std::unique_ptr<PollPool> pool;
};

void KeepForever(LeftBehind left) {
  static std::mutex mu;
  static auto* kept = new std::vector<LeftBehind>();
  std::lock_guard lock(mu);
  kept->push_back(std::move(left));
}

}  // namespace

class NvmlSource::Impl final : public nvml_internal::Reporter {
 public:
  Impl(const NvmlSourceOptions& options, const base::Clock& clock, model::ProcessResolver& resolver,
       SourceErrorHook on_error)
      : clock_(clock), on_error_(std::move(on_error)), options_(options), emitter_(resolver) {
    options_.lost_retry_polls = std::max(options_.lost_retry_polls, 1);
    options_.error_streak_to_degrade = std::max(options_.error_streak_to_degrade, 1);
    ResetShared();
  }
  ~Impl() override { Stop(); }

  base::Status Start();
  void Poll(base::TimePoint now, model::SampleSink& out);
  void Finish(model::SampleSink& out);
  void Stop();

  void SetPollDeadline(base::Duration deadline) { poll_deadline_ = deadline; }
  base::Duration device_deadline() const {
    if (options_.device_deadline > std::chrono::milliseconds(0)) {
      return options_.device_deadline;
    }
    if (poll_deadline_ > base::Duration::zero()) {
      return poll_deadline_ / 2;
    }
    return kDefaultDeviceDeadline;
  }

  const std::map<std::string, uint64_t, std::less<>>& error_counts() const { return error_counts_; }
  size_t gpu_count() const { return gpus_.size(); }
  const NvmlLibrary* library() const { return library_.get(); }
  bool WaitForEvents(uint64_t count, std::chrono::milliseconds timeout) {
    return events_->WaitForEvents(count, timeout);
  }
  bool WaitForGpuIdle(size_t index, std::chrono::milliseconds timeout) {
    return index >= gpus_.size() || pool_->WaitIdle(index, Clock::now() + timeout);
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
  // A fresh context and event watcher (at construction, and after GPUs were left behind).
  void ResetShared() {
    ctx_ = std::make_unique<PollerContext>();
    ctx_->options = options_;
    for (size_t i = 0; i < nvml_internal::kClockReasonCount; ++i) {
      ctx_->reason_labels[i].Set(m::kLabelReason, nvml_internal::kClockReasons[i].name);
    }
    ctx_->link_labels.resize(nvml_internal::kMaxNvlinkLinks);
    for (unsigned i = 0; i < nvml_internal::kMaxNvlinkLinks; ++i) {
      ctx_->link_labels[i].Set(m::kLabelLink, std::to_string(i));
    }
    events_ = std::make_unique<EventWatcher>(ctx_->options);
  }

  base::Status StartLocked();
  void SetupEvents();
  void Rejoin(base::TimePoint now);
  void MarkLate(DeviceRunner& gpu, base::TimePoint now, model::SampleSink& out);
  // Ends the poll workers; false when one stays inside NVML.
  bool StopGpus();

  const base::Clock& clock_;
  SourceErrorHook on_error_;
  std::map<std::string, uint64_t, std::less<>> error_counts_;
  NvmlSourceOptions options_;  // normalised
  base::Duration poll_deadline_{0};

  // The poll workers use these: on the heap, so that they can be left behind with them. The
  // library is declared before the GPUs and the event set so that it outlives them, and the GPUs
  // before the pool whose threads read them.
  std::unique_ptr<PollerContext> ctx_;
  std::unique_ptr<NvmlLibrary> library_;
  std::unique_ptr<EventWatcher> events_;
  std::vector<std::unique_ptr<DeviceRunner>> gpus_;
  std::unique_ptr<PollPool> pool_;
  nvml_internal::ProcessEmitter emitter_;
  bool started_ = false;

  std::vector<model::Event> pending_events_;
  std::vector<nvml_internal::RawEvent> raw_events_;  // reused per poll
  std::vector<DeviceRunner*> answered_;              // GPUs of the last Poll that answered
  std::vector<size_t> batch_;                        // GPUs this Poll reads (reused)
  std::vector<char> in_batch_;                       // by GPU (reused)
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
  auto loaded = NvmlLibrary::Load(options_.library_path);
  if (!loaded) {
    ReportError(loaded.error().code() == base::StatusCode::kNotFound ? "library_load" : "init");
    return loaded.error();
  }
  library_ = std::move(*loaded);
  const NvmlLibrary& lib = *library_;
  ctx_->lib = &lib;

  char buf[abi::kSystemDriverVersionBufferSize] = {};
  if (WARPSCOPE_NVML_CALL(lib, nvmlSystemGetDriverVersion, buf, sizeof(buf)) == abi::kSuccess) {
    ctx_->driver_version = nvml_internal::CopyString(buf, sizeof(buf));
  }
  int cuda = 0;
  if (lib.SystemGetCudaDriverVersion(&cuda) == abi::kSuccess && cuda > 0) {
    ctx_->cuda_version = fmt::format("{}.{}", cuda / 1000, (cuda % 1000) / 10);
  }

  unsigned count = 0;
  nvmlReturn_t rc = lib.DeviceGetCount(&count);
  if (rc != abi::kSuccess) {
    ReportError(nvml::ReturnCodeReason(rc));
    return lib.ToStatus(rc, "nvmlDeviceGetCount_v2");
  }
  if (count == 0) {
    return base::NotFound("NVML ({}, driver {}) reports no GPU; GPU metrics are off", lib.path(),
                          ctx_->driver_version);
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
    auto gpu = std::make_unique<DeviceRunner>(*ctx_, i, handle);
    if (rc != abi::kSuccess) {
      gpu->poller().MarkLostAtStart(rc, clock_.Now());
    } else {
      gpu->poller().Identify(clock_.Now());
    }
    gpu->TakeReports(*this);
    gpu->RefreshIdentity();
    gpus_.push_back(std::move(gpu));
  }
  if (gpus_.empty()) {
    return base::ErrStatus(base::StatusCode::kPermissionDenied,
                           "NVML found {} GPU(s) but none can be opened (no permission): run the "
                           "agent as root or give it access to /dev/nvidia*",
                           count);
  }
  std::vector<DeviceRunner*> runners;
  for (auto& gpu : gpus_) {
    runners.push_back(gpu.get());
  }
  // The job holds the runners, not the source: a worker left behind at Stop outlives the source.
  pool_ = std::make_unique<PollPool>(
      gpus_.size(), [runners = std::move(runners)](size_t i) { runners[i]->RunPoll(); });
  SetupEvents();
  started_ = true;
  WARPSCOPE_LOG(INFO, "NVML {}: driver {}, CUDA {}, {} GPU(s){}; per-GPU deadline {}", lib.path(),
                ctx_->driver_version, ctx_->cuda_version, gpus_.size(),
                no_permission > 0 ? fmt::format(" ({} without permission skipped)", no_permission)
                                  : std::string(),
                base::FormatDuration(device_deadline()));
  return base::OkStatus();
}

void NvmlSource::Impl::SetupEvents() {
  if (!events_->Create(*library_, *this)) {
    return;
  }
  bool any = false;
  for (auto& gpu : gpus_) {
    if (!gpu->poller().state().degraded) {
      any = events_->Register(gpu->poller().state(), *this) || any;
    }
  }
  if (!any && std::none_of(gpus_.begin(), gpus_.end(),
                           [](auto& gpu) { return gpu->poller().state().degraded; })) {
    events_->Stop();  // frees the set: no GPU can deliver events
    return;
  }
  ctx_->events = events_.get();
  events_->Start();
}

bool NvmlSource::Impl::StopGpus() {
  if (pool_ == nullptr) {
    return true;
  }
  if (pool_->any_in_flight() && library_ != nullptr) {
    // A poll worker is inside an NVML call that does not return. Shutting NVML down is the only
    // thing that may release it (the simulator's hangs end there); nothing else uses NVML now.
    WARPSCOPE_LOG(WARNING, "NVML calls on a GPU have not returned; shutting NVML down under them");
    (void)NvmlLibrary::Invoke(library_->api().nvmlShutdown);
  }
  return pool_->Stop(kStopGrace);  // returns at once for idle workers
}

void NvmlSource::Impl::Stop() {
  events_->StopThread();
  if (!StopGpus()) {
    WARPSCOPE_LOG(ERROR,
                  "NVML: a poll worker is still inside an NVML call after shutdown; leaving it, "
                  "the library and the GPU states behind until the process exits");
    KeepForever({std::move(ctx_), std::move(library_), std::move(events_), std::move(gpus_),
                 std::move(pool_)});
    gpus_.clear();
    ResetShared();
  }
  events_->Stop();
  ctx_->events = nullptr;
  answered_.clear();
  pool_.reset();  // its threads have ended
  gpus_.clear();  // frees GPM samples while the library is still loaded
  emitter_.Clear();
  pending_events_.clear();
  library_.reset();
  ctx_->lib = nullptr;
  started_ = false;
}

// ------------------------------------------------------------------------------------------------
// Poll

void NvmlSource::Impl::Poll(base::TimePoint now, model::SampleSink& out) {
  if (!started_) {
    return;
  }
  answered_.clear();
  const base::Duration mono = clock_.Monotonic();
  Rejoin(now);
  for (auto& gpu : gpus_) {
    out.AddEntity(gpu->identity().entity);
    for (const auto& mig : gpu->identity().migs) {
      out.AddEntity(mig.entity);
    }
  }
  events_->Take(raw_events_);
  nvml_internal::DeliverEvents(
      raw_events_, now,
      [this](Device device) -> std::optional<nvml_internal::EventTarget> {
        for (auto& gpu : gpus_) {
          if (gpu->identity().handle == device) {
            return nvml_internal::EventTarget{gpu->index(), &gpu->identity(), &gpu->pending_xids()};
          }
        }
        return std::nullopt;
      },
      *this);
  events_->ReportCounters(*this);

  // Every GPU that is not inside a late poll is read now, and must answer by the same due time.
  // They are read one after another on one worker; a GPU that has not answered after the stall
  // time hands the GPUs after it to another worker. The stall time leaves each GPU at least half
  // the deadline to itself, however many before it stall (section 9).
  const base::Duration deadline = device_deadline();
  const Clock::time_point due =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(deadline);
  const auto stall = std::chrono::duration_cast<Clock::duration>(deadline) /
                     static_cast<Clock::rep>(2 * gpus_.size());
  batch_.clear();
  in_batch_.assign(gpus_.size(), 0);
  for (size_t i = 0; i < gpus_.size(); ++i) {
    if (!gpus_[i]->late) {
      gpus_[i]->PreparePoll(now, mono);
      batch_.push_back(i);
      in_batch_[i] = 1;
    }
  }
  pool_->Poll(batch_, due, stall);

  // Merged in GPU order, on this thread.
  for (size_t i = 0; i < gpus_.size(); ++i) {
    DeviceRunner& gpu = *gpus_[i];
    if (!in_batch_[i]) {
      out.AddValue(m::kDegraded, gpu.identity().entity.id, 1);  // still inside a late poll
      continue;
    }
    if (!pool_->answered(i)) {
      MarkLate(gpu, now, out);
      continue;
    }
    gpu.values().ReplayInto(out);
    gpu.TakeReports(*this);
    gpu.RefreshIdentity();
    answered_.push_back(&gpu);
  }

  uint64_t mismatches = library_->stride_mismatches();
  for (; reported_stride_mismatches_ < mismatches; ++reported_stride_mismatches_) {
    ReportError("process_stride_mismatch");
  }
  for (const auto& e : pending_events_) {
    out.AddEvent(e);
  }
  pending_events_.clear();
}

void NvmlSource::Impl::MarkLate(DeviceRunner& gpu, base::TimePoint now, model::SampleSink& out) {
  gpu.late = true;
  gpu.late_since = now;
  const std::string& id = gpu.identity().entity.id;
  std::string why = fmt::format(
      "NVML calls on GPU {} did not answer within {}; its metrics are left out until they do",
      gpu.index(), base::FormatDuration(device_deadline()));
  WARPSCOPE_LOG(WARNING, "GPU {} ({}) late: {}", gpu.index(), id, why);
  ReportError("gpu_late");
  AddEvent(nvml_internal::MakeEvent(now, id, "gpu_late", 0, std::move(why)));
  out.AddValue(m::kDegraded, id, 1);
}

// A GPU whose late poll has returned rejoins: what that poll reported still counts (its values
// are too old and are dropped), and it is polled again in this poll.
void NvmlSource::Impl::Rejoin(base::TimePoint now) {
  for (size_t i = 0; i < gpus_.size(); ++i) {
    DeviceRunner* gpu = gpus_[i].get();
    if (!gpu->late || pool_->in_flight(i)) {
      continue;
    }
    gpu->late = false;
    const bool recovered = gpu->TakeReports(*this);
    gpu->RefreshIdentity();
    if (gpu->poller().state().degraded || recovered) {
      continue;  // lost meanwhile, or its poll already reported the recovery
    }
    const std::string& id = gpu->identity().entity.id;
    WARPSCOPE_LOG(INFO, "GPU {} ({}) answers NVML queries again", gpu->index(), id);
    AddEvent(nvml_internal::MakeEvent(
        now, id, "gpu_recovered", 0,
        fmt::format("GPU answers NVML queries again after {} late",
                    base::FormatDuration(
                        std::chrono::floor<std::chrono::seconds>(now - gpu->late_since)))));
  }
}

void NvmlSource::Impl::Finish(model::SampleSink& out) {
  if (!started_) {
    return;
  }
  emitter_.BeginPoll();
  for (DeviceRunner* gpu : answered_) {
    const nvml_internal::GpuPoller& poller = gpu->poller();
    for (const auto& group : poller.process_groups()) {
      emitter_.Emit(group, poller.process_rows(), poller.utilization(), *this, out);
    }
  }
  emitter_.EndPoll();
  answered_.clear();
}

// ------------------------------------------------------------------------------------------------
// NvmlSource

std::unique_ptr<NvmlSource> NvmlSource::Create(const NvmlSourceOptions& options,
                                               const base::Clock& clock,
                                               model::ProcessResolver& resolver,
                                               SourceErrorHook on_error) {
  return std::unique_ptr<NvmlSource>(
      new NvmlSource(std::make_unique<Impl>(options, clock, resolver, std::move(on_error))));
}

NvmlSource::NvmlSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

NvmlSource::~NvmlSource() = default;

base::Status NvmlSource::Start() { return impl_->Start(); }

void NvmlSource::Poll(base::TimePoint now, model::SampleSink& out) { impl_->Poll(now, out); }

void NvmlSource::Finish(base::TimePoint /*now*/, model::SampleSink& out) { impl_->Finish(out); }

void NvmlSource::Stop() { impl_->Stop(); }

void NvmlSource::SetPollDeadline(base::Duration deadline) { impl_->SetPollDeadline(deadline); }

base::Duration NvmlSource::device_deadline() const { return impl_->device_deadline(); }

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

bool NvmlSource::WaitForGpuIdleForTesting(size_t index, std::chrono::milliseconds timeout) {
  return impl_->WaitForGpuIdle(index, timeout);
}

}  // namespace warpscope::agent
