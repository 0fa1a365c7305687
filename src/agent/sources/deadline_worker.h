// SPDX-License-Identifier: Apache-2.0
// DeadlineWorker: one persistent thread that runs a fixed job each time it is asked to, for an
// owner that waits for it only until a deadline. The agent has one per source (Source::Poll);
// the NVML source's poll workers are ones too (nvml/poll_pool.h).
//
// A run that misses the owner's deadline keeps the worker busy until the job returns; meanwhile
// Run() refuses to start another one. So a job that hangs costs one parked thread, never a new
// thread per cycle, and never a queue of runs behind it.
//
// Threads: Run, WaitUntil, busy, last_run_time and Stop are called by the owner (one thread at a
// time); the job runs on the worker thread. Everything the job wrote is visible to the owner once
// WaitUntil returned true or busy() returned false (the handoff goes through one mutex), and the
// job sees everything the owner wrote before Run().
#ifndef WARPSCOPE_AGENT_SOURCES_DEADLINE_WORKER_H_
#define WARPSCOPE_AGENT_SOURCES_DEADLINE_WORKER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace warpscope::agent {

class DeadlineWorker {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts the thread, named `name` (at most 15 characters are kept). `job` runs on it once per
  // Run(); an exception leaving it is caught and logged.
  DeadlineWorker(std::string name, std::function<void()> job);
  // Stop(0): joins an idle thread; detaches one still inside the job (see Stop).
  ~DeadlineWorker();
  DeadlineWorker(const DeadlineWorker&) = delete;
  DeadlineWorker& operator=(const DeadlineWorker&) = delete;

  // Starts one run. False, and nothing started, while the previous run has not returned.
  bool Run();
  // Waits until no run is in progress or `deadline` passes. True when no run is in progress.
  bool WaitUntil(Clock::time_point deadline);
  bool busy() const;
  // Wall time of the last run that returned.
  Clock::duration last_run_time() const;

  // Lets the thread exit after the current run and waits up to `timeout` for it. True: the
  // thread has exited and was joined. False: the job is still running; the thread is detached
  // and exits when the job returns, so everything the job uses must outlive it. Idempotent.
  bool Stop(std::chrono::milliseconds timeout);

 private:
  struct Shared;  // lives as long as the thread, which may outlive the worker after Stop
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace warpscope::agent

#endif  // WARPSCOPE_AGENT_SOURCES_DEADLINE_WORKER_H_
