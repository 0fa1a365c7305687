// SPDX-License-Identifier: Apache-2.0
// Rules 9-11, distributed training jobs, over their analysed steps (InsightInputs::jobs,
// server/training/job_analysis.h): the rank that holds its peers back (training_straggler), a
// rank whose collectives run slow (training_slow_interconnect), communication that is not
// overlapped by compute (training_comm_heavy), and a step far slower than the ones before it
// (training_step_regression).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "server/insights/rules.h"

namespace warpscope::server::insights {
namespace {

using training::JobAnalysis;
using training::RankSummary;

double Round(double v, double unit) { return std::round(v / unit) * unit; }

nlohmann::json Figure(double v, double unit = 0.0001) {
  return std::isfinite(v) ? nlohmann::json(Round(v, unit)) : nlohmann::json(nullptr);
}

std::string Ms(double seconds) { return fmt::format("{:.0f} ms", seconds * 1000); }
std::string Percent(double ratio) { return fmt::format("{:.0f} %", ratio * 100); }

std::span<const JobInput> Jobs(const InsightInputs& in) {
  if (!in.jobs) return {};
  return *in.jobs;
}

const RankSummary* RankOf(const JobAnalysis& job, uint32_t rank) {
  for (const RankSummary& r : job.ranks) {
    if (r.rank == rank) return &r;
  }
  return nullptr;
}

// An observation on a rank's process: the process entity's attributes where the snapshot has
// them, the job and the rank; the waste is charged to every GPU of the job.
Observation OnRank(const InsightInputs& in, const JobAnalysis& job, const RankSummary& rank) {
  Observation o;
  o.host = rank.host;
  o.entity = rank.entity;
  o.kind = model::EntityKind::kProcess;
  for (const ProcessGpuInput& p : in.processes) {
    if (p.host == rank.host && p.entity == rank.entity) {
      o.attributes = p.attributes;
      break;
    }
  }
  o.attributes.Set(model::attr::kJobId, job.job);
  o.attributes.Set(model::attr::kJobRank, std::to_string(rank.rank));
  o.gpus = std::max<double>(1, job.world_size);
  return o;
}

// The per-rank table every training finding shows.
nlohmann::json RankTable(const JobAnalysis& job) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankSummary& r : job.ranks) {
    ranks.push_back({{"rank", r.rank},
                     {"host", r.host},
                     {"entity", r.entity},
                     {"steps", r.steps},
                     {"step_time_p50_s", Figure(r.step_time_p50_s)},
                     {"compute_share", Figure(r.compute_share)},
                     {"comm_share", Figure(r.comm_share)},
                     {"idle_share", Figure(r.idle_share)},
                     {"nccl_time_mean_s", Figure(r.nccl_time_mean_s)},
                     {"last_collective_offset_mean_s", Figure(r.last_collective_offset_mean_s)},
                     {"late_fraction", Figure(r.late_fraction)},
                     {"compute_excess_s", Figure(r.compute_excess_s)},
                     {"straggler", r.straggler},
                     {"slow_interconnect", r.slow_interconnect}});
  }
  return ranks;
}

nlohmann::json JobEvidence(const JobAnalysis& job) {
  return {{"job", job.job},
          {"world_size", job.world_size},
          {"hosts", job.hosts},
          {"complete_steps", job.complete_steps},
          {"step_time_p50_s", Figure(job.step_time_p50_s)},
          {"compute_share", Figure(job.compute_share)},
          {"comm_share", Figure(job.comm_share)},
          {"overlap_share", Figure(job.overlap_share)},
          {"idle_share", Figure(job.idle_share)},
          {"ranks", RankTable(job)}};
}

// How a rank's collectives travel: NVLink or PCIe between the GPUs of its host (NVLink when its
// GPU stored active NVLink links), and the network when the job spans hosts.
struct Path {
  std::string local;  // "nvlink", "pcie", "unknown"
  bool network = false;
  std::string text;
};
Path PathOf(const JobInput& job, size_t rank_index) {
  Path p;
  const std::optional<bool> nvlink =
      rank_index < job.nvlink.size() ? job.nvlink[rank_index] : std::nullopt;
  p.local = !nvlink ? "unknown" : *nvlink ? "nvlink" : "pcie";
  p.network = job.analysis.hosts.size() > 1;
  const std::string& host = job.analysis.ranks[rank_index].host;
  p.text = !nvlink   ? fmt::format("its GPU on {} is not known", host)
           : *nvlink ? fmt::format("NVLink within {}", host)
                     : fmt::format("PCIe within {} (its GPU has no active NVLink link)", host);
  if (p.network) p.text += " and the network between the job's hosts";
  return p;
}

constexpr RuleInfo kStraggler{
    .name = "training_straggler",
    .title = "Training straggler",
    // The job runs, slower: a cost to act on.
    .severity = Severity::kTicket,
    .hold_for = std::chrono::minutes(2),
    .clear_after = std::chrono::minutes(5),
    .suggestion =
        "Look at this rank's GPU and host: its clocks, temperature and power (a throttled or "
        "power-capped GPU computes slower; compare it with its peers in the GPU view), its data "
        "loader and CPU profile (a rank that waits for input starts its collectives late), and "
        "its kernels (a GPU profile: different shapes or more work on this rank). Moving the "
        "rank to another GPU tells the hardware from the work.",
};

class TrainingStraggler final : public Rule {
 public:
  const RuleInfo& info() const override { return kStraggler; }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    std::vector<Observation> out;
    for (const JobInput& in : Jobs(ctx.inputs)) {
      const JobAnalysis& job = in.analysis;
      if (!job.straggler) continue;
      const training::Straggler& s = *job.straggler;
      const RankSummary* rank = RankOf(job, s.rank);
      if (!rank) continue;
      Observation o = OnRank(ctx.inputs, job, *rank);
      const bool late = s.reason == "late_collective";
      o.summary = fmt::format(
          "rank {} of job {} on host {} {} {} in {} of steps; the job's {} GPUs lose {} of every "
          "step ({:.3g} GPU-hours over its last {} steps)",
          s.rank, job.job, s.host, late ? "starts the last large collective" : "computes",
          late ? Ms(s.lag_s) + " after the median rank" : Ms(s.lag_s) + " longer than its peers",
          Percent(s.late_fraction), job.world_size, Percent(s.step_share), s.gpu_hours_lost,
          job.complete_steps);
      o.evidence = JobEvidence(job);
      o.evidence["straggler"] = {{"rank", s.rank},
                                 {"host", s.host},
                                 {"entity", s.entity},
                                 {"reason", s.reason},
                                 {"late_fraction", Figure(s.late_fraction)},
                                 {"lag_s", Figure(s.lag_s, 0.000001)},
                                 {"step_share", Figure(s.step_share)},
                                 {"gpu_hours_lost", Figure(s.gpu_hours_lost, 0.000001)}};
      o.lost_fraction = std::clamp(s.step_share, 0.0, 1.0);
      out.push_back(std::move(o));
    }
    return out;
  }
};

constexpr RuleInfo kSlowInterconnect{
    .name = "training_slow_interconnect",
    .title = "Training rank with a slow interconnect",
    .severity = Severity::kTicket,
    .hold_for = std::chrono::minutes(2),
    .clear_after = std::chrono::minutes(5),
    .suggestion =
        "Check this rank's links: NVLink errors and link state on its GPU (nvidia-smi nvlink -s "
        "and -e), a GPU that falls back to PCIe (NCCL_DEBUG=INFO names the transport each ring "
        "uses), its PCIe link width and speed, and across hosts its network adapter (errors, "
        "link speed, the GPUDirect RDMA path, NCCL_IB_HCA / NCCL_SOCKET_IFNAME).",
};

class TrainingSlowInterconnect final : public Rule {
 public:
  const RuleInfo& info() const override { return kSlowInterconnect; }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    std::vector<Observation> out;
    for (const JobInput& in : Jobs(ctx.inputs)) {
      const JobAnalysis& job = in.analysis;
      std::vector<double> nccl;
      for (const RankSummary& r : job.ranks) nccl.push_back(r.nccl_time_mean_s);
      std::sort(nccl.begin(), nccl.end());
      const double median = nccl.empty() ? 0
                            : nccl.size() % 2
                                ? nccl[nccl.size() / 2]
                                : (nccl[nccl.size() / 2 - 1] + nccl[nccl.size() / 2]) / 2;
      for (size_t i = 0; i < job.ranks.size(); ++i) {
        const RankSummary& rank = job.ranks[i];
        if (!rank.slow_interconnect) continue;
        const Path path = PathOf(in, i);
        Observation o = OnRank(ctx.inputs, job, rank);
        o.summary = fmt::format(
            "rank {} of job {} on host {} spends {} per step in NCCL, {:.1f}x the median rank's "
            "{}; its collectives travel over {}",
            rank.rank, job.job, rank.host, Ms(rank.nccl_time_mean_s),
            median > 0 ? rank.nccl_time_mean_s / median : 0.0, Ms(median), path.text);
        o.evidence = JobEvidence(job);
        o.evidence["rank"] = rank.rank;
        o.evidence["nccl_time_mean_s"] = Figure(rank.nccl_time_mean_s);
        o.evidence["peers_nccl_time_median_s"] = Figure(median);
        o.evidence["interconnect"] = {{"local", path.local}, {"network", path.network}};
        // Its extra time in collectives holds every rank back.
        if (job.step_time_p50_s > 0 && median >= 0) {
          o.lost_fraction =
              std::clamp((rank.nccl_time_mean_s - median) / job.step_time_p50_s, 0.0, 1.0);
        }
        out.push_back(std::move(o));
      }
    }
    return out;
  }
};

constexpr RuleInfo kCommHeavy{
    .name = "training_comm_heavy",
    .title = "Training job bound by communication",
    .severity = Severity::kTicket,
    .hold_for = std::chrono::minutes(5),
    .clear_after = std::chrono::minutes(5),
    .suggestion =
        "Communicate less often or hide it behind compute: accumulate gradients over more "
        "micro-batches before each all-reduce, use larger gradient buckets and let them overlap "
        "the backward pass (DDP bucket_cap_mb, FSDP prefetching), shard less across hosts "
        "(keep tensor parallelism within NVLink domains), or move the job to a faster "
        "interconnect.",
};

class TrainingCommHeavy final : public Rule {
 public:
  const RuleInfo& info() const override { return kCommHeavy; }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    std::vector<Observation> out;
    const double threshold = ctx.config.training_comm_share;
    for (const JobInput& in : Jobs(ctx.inputs)) {
      const JobAnalysis& job = in.analysis;
      if (job.ranks.empty() || job.complete_steps < ctx.config.training_min_steps ||
          !std::isfinite(job.comm_share) || job.comm_share <= threshold) {
        continue;
      }
      Observation o = OnRank(ctx.inputs, job, job.ranks.front());  // rank 0, else the lowest
      o.summary = fmt::format(
          "job {} ({} ranks on {} host{}) spends {} of its step time in communication not "
          "overlapped by compute (over {}); compute takes {}",
          job.job, job.world_size, job.hosts.size(), job.hosts.size() > 1 ? "s" : "",
          Percent(job.comm_share), Percent(threshold),
          std::isfinite(job.compute_share) ? Percent(job.compute_share) : "an unknown share");
      o.evidence = JobEvidence(job);
      o.evidence["threshold"] = threshold;
      o.lost_fraction = std::clamp(job.comm_share - threshold, 0.0, 1.0);
      out.push_back(std::move(o));
    }
    return out;
  }
};

constexpr RuleInfo kStepRegression{
    .name = "training_step_regression",
    .title = "Training step slowdown",
    // A slow step is a ticket; a stall (Observation::severity) pages.
    .severity = Severity::kTicket,
    .hold_for = {},
    .clear_after = std::chrono::minutes(5),
    .suggestion =
        "Look at what happened at the step's time: a checkpoint or evaluation, a data-loader "
        "stall, a GPU that throttled or raised an XID, a host under memory pressure, the "
        "network. A stall that lasts is a hang: take the ranks' stacks (py-spy dump) and look "
        "for the rank that has not entered the collective the others wait in.",
};

class TrainingStepRegression final : public Rule {
 public:
  const RuleInfo& info() const override { return kStepRegression; }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    std::vector<Observation> out;
    const base::TimePoint since = ctx.inputs.end() - ctx.config.training_step_window;
    for (const JobInput& in : Jobs(ctx.inputs)) {
      const JobAnalysis& job = in.analysis;
      if (job.slow_steps.empty() || job.ranks.empty()) continue;
      const training::SlowStep& slow = job.slow_steps.back();
      if (slow.start < since) continue;
      // The slowest rank in that step, else rank 0.
      size_t slowest = 0;
      for (const training::StepRow& row : job.steps) {
        if (row.step != slow.step) continue;
        double longest = -1;
        for (size_t i = 0; i < row.duration_s.size(); ++i) {
          if (std::isfinite(row.duration_s[i]) && row.duration_s[i] > longest) {
            longest = row.duration_s[i];
            slowest = i;
          }
        }
      }
      const RankSummary& rank = job.ranks[slowest];
      Observation o = OnRank(ctx.inputs, job, rank);
      o.summary = fmt::format(
          "step {} of job {} took {:.2f} s, {:.1f}x the median of the steps before it ({:.2f} "
          "s){}; its slowest rank was {} on host {}",
          slow.step, job.job, slow.duration_s, slow.duration_s / slow.trailing_median_s,
          slow.trailing_median_s, slow.stall ? ": the job stalled" : "", rank.rank, rank.host);
      o.evidence = JobEvidence(job);
      o.evidence["step"] = {{"step", slow.step},
                            {"start", base::ToUnixMillis(slow.start)},
                            {"duration_s", Figure(slow.duration_s)},
                            {"trailing_median_s", Figure(slow.trailing_median_s)},
                            {"stall", slow.stall},
                            {"slowest_rank", rank.rank},
                            {"slow_steps", job.slow_steps.size()}};
      if (slow.stall) o.severity = Severity::kPage;
      // A passing slowdown: its cost is in the step times, not charged as a standing waste.
      o.lost_fraction = 0;
      out.push_back(std::move(o));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Rule> MakeTrainingStragglerRule() { return std::make_unique<TrainingStraggler>(); }
std::unique_ptr<Rule> MakeTrainingSlowInterconnectRule() {
  return std::make_unique<TrainingSlowInterconnect>();
}
std::unique_ptr<Rule> MakeTrainingCommHeavyRule() { return std::make_unique<TrainingCommHeavy>(); }
std::unique_ptr<Rule> MakeTrainingStepRegressionRule() {
  return std::make_unique<TrainingStepRegression>();
}

}  // namespace warpscope::server::insights
