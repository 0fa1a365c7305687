// SPDX-License-Identifier: Apache-2.0
// Hand-made training steps for tests: a job of hosts x ranks with a steady step, one rank that
// starts its last collective late, one with slow collectives, steps that run long; and
// StepStorage, a Storage that answers QuerySteps and ListJobs from those steps and forwards
// everything else to another storage.
#ifndef WARPSCOPE_SERVER_TRAINING_TESTING_JOB_BUILDER_H_
#define WARPSCOPE_SERVER_TRAINING_TESTING_JOB_BUILDER_H_

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "server/storage/storage.h"

namespace warpscope::server::training::testing {

struct JobSpec {
  std::string job = "job-1";
  std::vector<std::string> hosts = {"node-a", "node-b"};
  uint32_t ranks_per_host = 4;
  int steps = 50;
  int64_t first_step = 100;
  base::TimePoint start = base::FromUnixNanos(1'700'000'000'000'000'000);
  double step_ms = 1000;
  double compute_ms = 700;
  double comm_ms = 100;  // not overlapped
  double overlap_ms = 50;
  double offset_ms = 800;
  double nccl_ms = 150;
  int late_rank = -1;  // starts its last collective `lag_ms` late; its peers wait that long
  double lag_ms = 0;
  int slow_nccl_rank = -1;  // spends `slow_nccl_factor` x nccl_ms in NCCL
  double slow_nccl_factor = 1;
  std::map<int, double> long_steps;  // step index -> its duration, ms
};

// The rank's process entity: "pid/<1000 + rank>/1" on its host.
inline std::string RankEntity(uint32_t rank) { return "pid/" + std::to_string(1000 + rank) + "/1"; }

inline int64_t Ns(double ms) { return static_cast<int64_t>(std::llround(ms * 1e6)); }

inline std::vector<StoredStep> MakeJob(const JobSpec& spec) {
  std::vector<StoredStep> out;
  const uint32_t world = static_cast<uint32_t>(spec.hosts.size()) * spec.ranks_per_host;
  base::TimePoint start = spec.start;
  for (int i = 0; i < spec.steps; ++i) {
    auto it = spec.long_steps.find(i);
    const double step_ms = it != spec.long_steps.end() ? it->second : spec.step_ms;
    for (uint32_t r = 0; r < world; ++r) {
      StoredStep s;
      s.host = spec.hosts[r / spec.ranks_per_host];
      s.step.entity = RankEntity(r);
      s.step.job = spec.job;
      s.step.comm = "00000000000000aa";
      s.step.rank = r;
      s.step.world_size = world;
      s.step.step = spec.first_step + i;
      s.step.start = start;
      s.step.end = start + base::Duration(Ns(step_ms));
      const bool late = static_cast<int>(r) == spec.late_rank;
      const double wait = late ? 0 : spec.lag_ms;
      // A small deterministic jitter so that ties do not decide.
      const double jitter = static_cast<double>((r * 7 + static_cast<uint32_t>(i) * 13) % 5);
      s.step.compute_ns = Ns(spec.compute_ms + (late ? spec.lag_ms : 0));
      s.step.comm_ns = Ns(spec.comm_ms + wait);
      s.step.overlap_ns = Ns(spec.overlap_ms);
      s.step.last_collective_offset_ns = Ns(spec.offset_ms + jitter + (late ? spec.lag_ms : 0));
      const double nccl =
          spec.nccl_ms * (static_cast<int>(r) == spec.slow_nccl_rank ? spec.slow_nccl_factor : 1);
      s.step.nccl_ns = Ns(nccl + wait);
      s.step.collectives = 3;
      s.step.bus_bytes = 1 << 30;
      s.step.source = "nvtx";
      out.push_back(std::move(s));
    }
    start += base::Duration(Ns(step_ms));
  }
  return out;
}

// QuerySteps and ListJobs from memory; the rest from `inner`.
class StepStorage : public Storage {
 public:
  explicit StepStorage(Storage& inner) : inner_(inner) {}
  void Add(std::vector<StoredStep> steps) {
    for (StoredStep& s : steps) steps_.push_back(std::move(s));
  }

  base::Result<WriteResult> WriteBatch(const IngestBatch& b) override {
    return inner_.WriteBatch(b);
  }
  base::Result<std::vector<EntityRecord>> ListEntities(const EntityQuery& q) override {
    return inner_.ListEntities(q);
  }
  base::Result<std::vector<MetricInfo>> ListMetrics() override { return inner_.ListMetrics(); }
  base::Result<RangeResult> QueryRange(const RangeQuery& q) override {
    return inner_.QueryRange(q);
  }
  base::Result<std::vector<TopEntry>> TopEntities(const TopQuery& q) override {
    return inner_.TopEntities(q);
  }
  base::Result<std::vector<EventRecord>> QueryEvents(const EventQuery& q) override {
    return inner_.QueryEvents(q);
  }
  base::Result<int64_t> WriteProfile(const ProfileMeta& m, std::string_view d) override {
    return inner_.WriteProfile(m, d);
  }
  base::Result<std::vector<ProfileMeta>> ListProfiles(const ProfileQuery& q) override {
    return inner_.ListProfiles(q);
  }
  base::Result<Profile> ReadProfile(int64_t id) override { return inner_.ReadProfile(id); }
  base::Result<CompactResult> Compact(base::TimePoint now) override { return inner_.Compact(now); }
  base::Result<StorageStats> Stats() override { return inner_.Stats(); }

  base::Result<std::vector<StoredStep>> QuerySteps(const StepQuery& q) override {
    std::vector<StoredStep> out;
    for (const StoredStep& s : steps_) {
      if (s.step.job == q.job && s.step.end >= q.start && s.step.end < q.end) out.push_back(s);
    }
    std::sort(out.begin(), out.end(), [](const StoredStep& a, const StoredStep& b) {
      return std::tie(a.step.step, a.step.rank, a.host) <
             std::tie(b.step.step, b.step.rank, b.host);
    });
    if (out.size() > q.limit) out.erase(out.begin(), out.end() - static_cast<ptrdiff_t>(q.limit));
    return out;
  }
  base::Result<std::vector<JobRecord>> ListJobs(const JobQuery& q) override {
    std::map<std::string, JobRecord> jobs;
    std::map<std::string, std::set<uint32_t>> ranks;
    for (const StoredStep& s : steps_) {
      if (s.step.end < q.start || s.step.end >= q.end) continue;
      JobRecord& j = jobs[s.step.job];
      if (j.steps == 0) {
        j.job = s.step.job;
        j.first_step = j.last_step = s.step.step;
        j.first = s.step.start;
        j.last = s.step.end;
      }
      ++j.steps;
      j.world_size = std::max(j.world_size, s.step.world_size);
      j.first_step = std::min(j.first_step, s.step.step);
      j.last_step = std::max(j.last_step, s.step.step);
      j.first = std::min(j.first, s.step.start);
      j.last = std::max(j.last, s.step.end);
      if (std::find(j.hosts.begin(), j.hosts.end(), s.host) == j.hosts.end()) {
        j.hosts.push_back(s.host);
        std::sort(j.hosts.begin(), j.hosts.end());
      }
      ranks[s.step.job].insert(s.step.rank);
    }
    std::vector<JobRecord> out;
    for (auto& [id, j] : jobs) {
      j.ranks = ranks[id].size();
      out.push_back(std::move(j));
    }
    std::sort(out.begin(), out.end(),
              [](const JobRecord& a, const JobRecord& b) { return a.last > b.last; });
    if (out.size() > q.limit) out.resize(q.limit);
    return out;
  }

 private:
  Storage& inner_;
  std::vector<StoredStep> steps_;
};

}  // namespace warpscope::server::training::testing

#endif  // WARPSCOPE_SERVER_TRAINING_TESTING_JOB_BUILDER_H_
