// SPDX-License-Identifier: Apache-2.0
#include "sim/workload/ddp_rank.h"

#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "nccl_plugin/abi.h"

namespace warpscope::sim::workload {

namespace abi = ::warpscope::nccl_plugin::abi;

namespace {

uint64_t NowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t Scaled(uint64_t ns, double scale) {
  return static_cast<uint64_t>(static_cast<double>(ns) * scale + 0.5);
}

// NCCL's logger: the plugin is silent by default; nothing of it reaches the workload's log.
void Logger(int, unsigned long, const char*, int, const char*, ...) {}

}  // namespace

DdpClock::DdpClock(double slowdown_percent, double job_slowdown_percent)
    : scale_(1 + slowdown_percent / 100),
      job_scale_(1 + std::max(slowdown_percent, job_slowdown_percent) / 100) {}

void DdpClock::BeginStep(uint64_t start_ns) {
  compute_free_ = slow_compute_free_ = comm_free_ = start_ns;
}

Interval DdpClock::Compute(uint64_t nominal_ns) {
  const Interval out{compute_free_, compute_free_ + Scaled(nominal_ns, scale_)};
  compute_free_ = out.end_ns;
  slow_compute_free_ += Scaled(nominal_ns, job_scale_);
  return out;
}

Interval DdpClock::AllReduce(uint64_t transfer_ns) {
  // Every rank's launch of this all-reduce comes after the same compute; the slowest rank's
  // comes last, and the collective moves its data once that rank has joined.
  const uint64_t end = std::max(slow_compute_free_, comm_free_) + transfer_ns;
  const Interval out{std::max(compute_free_, comm_free_), end};
  comm_free_ = end;
  return out;
}

void DdpClock::WaitAllReduces() {
  compute_free_ = std::max(compute_free_, comm_free_);
  slow_compute_free_ = std::max(slow_compute_free_, comm_free_);
}

uint64_t DdpClock::JobEnd() const { return std::max(slow_compute_free_, comm_free_); }

uint64_t DdpSchedule::NextStepAt(uint64_t now_ns) const {
  if (now_ns <= epoch_ns) return 0;
  return (now_ns - epoch_ns + period_ns - 1) / period_ns;
}

uint64_t CommIdOf(const std::string& run_id) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : run_id) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

base::Result<std::unique_ptr<NcclPluginDriver>> NcclPluginDriver::Create(const std::string& path,
                                                                          uint64_t comm_id,
                                                                          int nranks, int rank) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    return base::Error(base::Unavailable("NCCL_PROFILER_PLUGIN={}: {}", path, dlerror()));
  }
  void* table = dlsym(lib, "ncclProfiler_v6");
  if (table == nullptr) {
    return base::Error(
        base::Unavailable("NCCL_PROFILER_PLUGIN={} has no ncclProfiler_v6", path));
  }
  std::unique_ptr<NcclPluginDriver> self(new NcclPluginDriver());
  self->table_ = table;
  self->rank_ = rank;
  self->gpu_epoch_ns_ =
      static_cast<int64_t>(NowNs(CLOCK_REALTIME)) - static_cast<int64_t>(NowNs(CLOCK_MONOTONIC));
  auto* t = static_cast<abi::ProfilerV6*>(table);
  if (t->init(&self->context_, comm_id, &self->mask_, "default_pg", 1, nranks, rank, &Logger) !=
      abi::kSuccess) {
    // NCCL runs on without the plugin; so would a job.
    return base::Error(base::Unavailable("NCCL_PROFILER_PLUGIN={}: init failed", path));
  }
  self->proxy_ = std::thread([p = self.get()] { p->ProxyLoop(); });
  return self;
}

NcclPluginDriver::~NcclPluginDriver() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (proxy_.joinable()) proxy_.join();
  static_cast<abi::ProfilerV6*>(table_)->finalize(context_);
}

void NcclPluginDriver::Post(uint64_t due_realtime_ns, std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    auto at = std::upper_bound(tasks_.begin(), tasks_.end(), due_realtime_ns,
                               [](uint64_t due, const Task& t) { return due < t.due_ns; });
    tasks_.insert(at, Task{due_realtime_ns, std::move(fn)});
  }
  cv_.notify_one();
}

void NcclPluginDriver::ProxyLoop() {
  std::unique_lock lock(mu_);
  while (true) {
    if (tasks_.empty()) {
      if (stop_) return;
      cv_.wait(lock);
      continue;
    }
    const uint64_t now = NowNs(CLOCK_REALTIME);
    // At stop, what is left is reported at once: the plugin must see every channel end.
    if (tasks_.front().due_ns > now && !stop_) {
      cv_.wait_for(lock, std::chrono::nanoseconds(tasks_.front().due_ns - now));
      continue;
    }
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task.fn();
    lock.lock();
  }
}

void NcclPluginDriver::AllReduce(uint64_t seq, uint64_t count, Interval gpu, int channels) {
  auto* t = static_cast<abi::ProfilerV6*>(table_);
  const int mask = __atomic_load_n(&mask_, __ATOMIC_RELAXED);
  if ((mask & abi::kEventColl) == 0) return;
  void* group = nullptr;
  if ((mask & abi::kEventGroup) != 0) {
    abi::EventDescrV6 g{};
    g.type = abi::kEventGroup;
    g.rank = rank_;
    t->start_event(context_, &group, &g);
  }
  abi::EventDescrV6 d{};
  d.type = abi::kEventColl;
  d.rank = rank_;
  d.coll.seq_number = seq;
  d.coll.func = "AllReduce";
  d.coll.count = count;
  d.coll.root = 0;
  d.coll.datatype = "ncclBfloat16";
  d.coll.n_channels = static_cast<uint8_t>(channels);
  d.coll.n_warps = 16;
  d.coll.algo = "RING";
  d.coll.proto = "LL";
  d.coll.parent_group = group;
  void* coll = nullptr;
  t->start_event(context_, &coll, &d);
  if (coll != nullptr) t->stop_event(coll);  // enqueued
  if (group != nullptr) t->stop_event(group);
  if (coll == nullptr || (mask & abi::kEventKernelCh) == 0) return;
  // The GPU timer of a CLOCK_REALTIME instant.
  const uint64_t gpu_start = gpu.start_ns - static_cast<uint64_t>(gpu_epoch_ns_);
  const uint64_t gpu_stop = gpu.end_ns - static_cast<uint64_t>(gpu_epoch_ns_);
  auto handles = std::make_shared<std::vector<void*>>(static_cast<size_t>(channels), nullptr);
  Post(gpu.start_ns, [this, t, coll, handles, gpu_start] {
    for (size_t ch = 0; ch < handles->size(); ++ch) {
      abi::EventDescrV6 k{};
      k.type = abi::kEventKernelCh;
      k.parent = coll;
      k.rank = rank_;
      k.kernel_ch.channel_id = static_cast<uint8_t>(ch);
      k.kernel_ch.gpu_timer = gpu_start;
      t->start_event(context_, &(*handles)[ch], &k);
    }
  });
  Post(gpu.end_ns, [t, handles, gpu_stop] {
    for (void* h : *handles) {
      if (h == nullptr) continue;
      abi::StateArgs a{};
      a.kernel_ch.gpu_timer = gpu_stop;
      t->record_event_state(h, abi::kKernelChStop, &a);
      t->stop_event(h);
    }
  });
}

}  // namespace warpscope::sim::workload
