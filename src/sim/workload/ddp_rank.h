// SPDX-License-Identifier: Apache-2.0
// One rank of the `ddp` demo workload (docs/simulator.md, "Demo workloads"): a data-parallel job
// whose ranks are separate warpscope-demo-workload processes stepping in lockstep, without
// talking to each other. Every rank runs the same step (forward, then backward with one gradient
// all-reduce per bucket as the bucket fills, then the optimizer), so every rank can compute where
// each of the job's all-reduces ends: when the slowest rank (the job's largest slowdown) has
// launched it, plus its transfer time. Steps begin at one shared epoch and follow each other at
// the job's step period, the slowest rank's step time; a rank's faster compute shows as time
// waiting in its all-reduces, as a synchronous job's does.
//
// DdpClock is that model (pure, single-threaded); NcclPluginDriver calls an NCCL profiler plugin
// (NCCL_PROFILER_PLUGIN) as NCCL 2.29+ does for those all-reduces, with kernel-channel GPU timers
// equal to the modelled kernels (test/fakes/nccl/fake_nccl_driver.cc shows the full sequence).
#ifndef WARPSCOPE_SIM_WORKLOAD_DDP_RANK_H_
#define WARPSCOPE_SIM_WORKLOAD_DDP_RANK_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"

namespace warpscope::sim::workload {

struct Interval {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

// The simulated GPU of one rank within one step: a compute stream and NCCL's stream, on
// CLOCK_REALTIME ns. `slowdown` and `job_slowdown` are percentages (20: 20 % longer); the job's
// is the largest of its ranks', at least this rank's.
class DdpClock {
 public:
  DdpClock(double slowdown_percent, double job_slowdown_percent);

  // Both streams idle at `start_ns`; the all-reduces of the step before are forgotten.
  void BeginStep(uint64_t start_ns);
  // A compute kernel that takes `nominal_ns` on a rank without slowdown, queued on the compute
  // stream: its interval on this rank.
  Interval Compute(uint64_t nominal_ns);
  // An all-reduce launched after the compute queued so far, moving data for `transfer_ns` once
  // every rank has launched it: its kernel's interval on this rank (it starts when this rank
  // launched it and NCCL's stream is free, and ends with the job's slowest launch + transfer).
  Interval AllReduce(uint64_t transfer_ns);
  // The compute stream waits for the all-reduces launched so far (DDP's wait before the
  // optimizer step).
  void WaitAllReduces();
  // When the job's step ends: the slowest rank's last kernel.
  uint64_t JobEnd() const;

 private:
  double scale_;      // this rank's compute time / nominal
  double job_scale_;  // the slowest rank's
  uint64_t compute_free_ = 0;      // this rank's compute stream
  uint64_t slow_compute_free_ = 0;  // the slowest rank's compute stream
  uint64_t comm_free_ = 0;          // NCCL's stream: every rank's last all-reduce ends here
};

// The step schedule of the job: step k begins at epoch + k × period on every rank.
struct DdpSchedule {
  uint64_t epoch_ns = 0;
  uint64_t period_ns = 1;
  uint64_t StartOf(uint64_t step) const { return epoch_ns + step * period_ns; }
  // The first step that begins at or after `now_ns` (0 before the epoch).
  uint64_t NextStepAt(uint64_t now_ns) const;
};

// A communicator of one rank in an NCCL profiler plugin (ncclProfiler_v6), driven as NCCL does:
// init, per all-reduce a group with one collective enqueued on the caller's thread, then its
// kernel channels reported by a proxy thread once the GPU has reached their start and stop
// (the GPU timer: CLOCK_MONOTONIC, an epoch of its own as %globaltimer's may be), finalize.
class NcclPluginDriver {
 public:
  // Loads `path` and inits one communicator `comm_id` of `nranks` (one node) as `rank`.
  [[nodiscard]] static base::Result<std::unique_ptr<NcclPluginDriver>> Create(
      const std::string& path, uint64_t comm_id, int nranks, int rank);
  ~NcclPluginDriver();  // finalizes after the queued channels are reported
  NcclPluginDriver(const NcclPluginDriver&) = delete;
  NcclPluginDriver& operator=(const NcclPluginDriver&) = delete;

  // An all-reduce of `count` bf16 elements, the `seq`th of the communicator, whose kernel runs
  // `gpu` (CLOCK_REALTIME ns) on `channels` channels. Call from one thread.
  void AllReduce(uint64_t seq, uint64_t count, Interval gpu, int channels);

 private:
  NcclPluginDriver() = default;
  void ProxyLoop();
  void Post(uint64_t due_realtime_ns, std::function<void()> fn);

  void* table_ = nullptr;  // abi::ProfilerV6
  void* context_ = nullptr;
  int mask_ = 0;  // NCCL's activation mask; the plugin may rewrite it
  int rank_ = 0;
  int64_t gpu_epoch_ns_ = 0;  // CLOCK_REALTIME - CLOCK_MONOTONIC at creation

  struct Task {
    uint64_t due_ns;
    std::function<void()> fn;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> tasks_;  // in due order: all-reduces end in launch order
  bool stop_ = false;
  std::thread proxy_;
};

// FNV-1a of the job's run id: the communicator id every rank of the job agrees on.
uint64_t CommIdOf(const std::string& run_id);

}  // namespace warpscope::sim::workload

#endif  // WARPSCOPE_SIM_WORKLOAD_DDP_RANK_H_
