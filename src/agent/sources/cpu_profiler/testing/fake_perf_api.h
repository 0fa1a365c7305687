// SPDX-License-Identifier: Apache-2.0
// FakePerfApi: a PerfEventApi whose rings serve records a test pushes (record_writer.h), and
// which can refuse opens (to test the privilege fallback). Thread-safe: a test pushes from its
// thread while the sampler drains on its own.
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_TESTING_FAKE_PERF_API_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_TESTING_FAKE_PERF_API_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "agent/sources/cpu_profiler/perf_api.h"

namespace warpscope::agent::cpu_profiler::testing {

class FakePerfApi final : public PerfEventApi {
 public:
  struct Opened {
    int pid = 0;
    int cpu = 0;
    perf_event_attr attr{};
  };

  explicit FakePerfApi(std::vector<int> cpus = {0, 1}) : cpus_(std::move(cpus)) {}

  // Opens with pid == -1 fail with PermissionDenied (perf_event_paranoid > 0 without caps).
  void DenySystemWide() {
    std::lock_guard lock(mu_);
    deny_system_wide_ = true;
  }
  // Queues a record on the ring of (pid, cpu) as opened (pid -1 for per-CPU rings).
  void Push(int pid, int cpu, std::vector<uint8_t> record) {
    std::lock_guard lock(mu_);
    auto& queue = queues_[{pid, cpu}];
    if (!queue) {
      queue = std::make_shared<Queue>();
    }
    queue->push_back(std::move(record));
  }
  std::vector<Opened> opened() const {
    std::lock_guard lock(mu_);
    return opened_;
  }

  base::Result<std::unique_ptr<PerfRing>> Open(const perf_event_attr& attr, int pid, int cpu,
                                               size_t ring_pages) override {
    std::lock_guard lock(mu_);
    if (pid == -1 && deny_system_wide_) {
      return base::Error(base::PermissionDenied("perf_event_open(pid=-1, cpu={}): denied", cpu));
    }
    opened_.push_back({pid, cpu, attr});
    auto& queue = queues_[{pid, cpu}];
    if (!queue) {
      queue = std::make_shared<Queue>();
    }
    return std::unique_ptr<PerfRing>(std::make_unique<Ring>(mu_, queue));
  }
  base::Result<std::vector<int>> OnlineCpus() override { return cpus_; }

 private:
  using Queue = std::deque<std::vector<uint8_t>>;
  class Ring final : public PerfRing {
   public:
    Ring(std::mutex& mu, std::shared_ptr<Queue> queue) : mu_(mu), queue_(std::move(queue)) {}
    int fd() const override { return -1; }
    size_t Drain(const std::function<void(std::span<const uint8_t>)>& on_record) override {
      Queue taken;
      {
        std::lock_guard lock(mu_);
        taken.swap(*queue_);
      }
      for (const auto& r : taken) {
        on_record(r);
      }
      return taken.size();
    }

   private:
    std::mutex& mu_;
    std::shared_ptr<Queue> queue_;
  };

  mutable std::mutex mu_;
  std::vector<int> cpus_;
  bool deny_system_wide_ = false;
  std::vector<Opened> opened_;
  std::map<std::pair<int, int>, std::shared_ptr<Queue>> queues_;
};

}  // namespace warpscope::agent::cpu_profiler::testing

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_TESTING_FAKE_PERF_API_H_
