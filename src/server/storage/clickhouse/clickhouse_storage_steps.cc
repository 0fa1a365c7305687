// SPDX-License-Identifier: Apache-2.0
// ClickHouseStorage's training-step reads: QuerySteps and ListJobs.
#include <algorithm>
#include <map>
#include <set>

#include "server/storage/clickhouse/clickhouse_internal.h"
#include "server/storage/clickhouse/clickhouse_storage.h"

namespace warpscope::server {
namespace {

using base::Result;
using clickhouse::Quote;
using namespace clickhouse_internal;  // NOLINT(google-build-using-namespace)

// The steps table holds times in ns, as sent.
int64_t Ns(base::TimePoint t) { return base::ToUnixNanos(t); }

}  // namespace

Result<std::vector<StoredStep>> ClickHouseStorage::QuerySteps(const StepQuery& query) {
  WARPSCOPE_ASSIGN_OR_RETURN(Marks marks, ReadMarks());
  const int64_t from = std::max(Ns(query.start), marks.step_cutoff * 1'000'000);
  // The newest `limit` by end, then in step order.
  WARPSCOPE_ASSIGN_OR_RETURN(
      auto rows,
      client_.Select(fmt::format(
          "SELECT host, entity, job, comm, rank, world_size, step, start_ns, end_ns, compute_ns, "
          "comm_ns, overlap_ns, last_collective_offset_ns, nccl_ns, collectives, bus_bytes, "
          "source FROM (SELECT * FROM training_steps FINAL WHERE job = {} AND end_ns >= {} AND "
          "end_ns < {} ORDER BY end_ns DESC LIMIT {}) ORDER BY step, rank, host, end_ns "
          "FORMAT TSV",
          Quote(query.job), from, Ns(query.end), std::min<size_t>(query.limit, INT64_MAX))));
  std::vector<StoredStep> out;
  out.reserve(rows.size());
  for (const auto& row : rows) {
    if (row.size() < 17) continue;
    StoredStep r;
    r.host = row[0];
    model::TrainingStep& s = r.step;
    s.entity = row[1];
    s.job = row[2];
    s.comm = row[3];
    s.rank = static_cast<uint32_t>(ParseUint(row[4]));
    s.world_size = static_cast<uint32_t>(ParseUint(row[5]));
    s.step = ParseInt(row[6]);
    s.start = base::FromUnixNanos(ParseInt(row[7]));
    s.end = base::FromUnixNanos(ParseInt(row[8]));
    s.compute_ns = ParseInt(row[9]);
    s.comm_ns = ParseInt(row[10]);
    s.overlap_ns = ParseInt(row[11]);
    s.last_collective_offset_ns = ParseInt(row[12]);
    s.nccl_ns = ParseInt(row[13]);
    s.collectives = static_cast<uint32_t>(ParseUint(row[14]));
    s.bus_bytes = ParseUint(row[15]);
    s.source = row[16];
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<JobRecord>> ClickHouseStorage::ListJobs(const JobQuery& query) {
  WARPSCOPE_ASSIGN_OR_RETURN(Marks marks, ReadMarks());
  const int64_t from = std::max(Ns(query.start), marks.step_cutoff * 1'000'000);
  // One row per (job, host, rank): distinct ranks and hosts are counted here.
  WARPSCOPE_ASSIGN_OR_RETURN(
      auto rows, client_.Select(fmt::format(
                     "SELECT job, host, rank, max(world_size), count(), min(step), max(step), "
                     "min(start_ns), max(end_ns) FROM training_steps FINAL WHERE end_ns >= {} AND "
                     "end_ns < {} GROUP BY job, host, rank FORMAT TSV",
                     from, Ns(query.end))));
  struct Acc {
    JobRecord record;
    std::set<uint32_t> ranks;
    std::set<std::string> hosts;
  };
  std::map<std::string, Acc> jobs;
  for (const auto& row : rows) {
    if (row.size() < 9) continue;
    Acc& a = jobs[row[0]];
    const int64_t first_step = ParseInt(row[5]);
    const int64_t last_step = ParseInt(row[6]);
    const base::TimePoint first = base::FromUnixNanos(ParseInt(row[7]));
    const base::TimePoint last = base::FromUnixNanos(ParseInt(row[8]));
    JobRecord& r = a.record;
    if (a.ranks.empty()) {
      r.job = row[0];
      r.first_step = first_step;
      r.last_step = last_step;
      r.first = first;
      r.last = last;
    }
    r.world_size = std::max(r.world_size, static_cast<uint32_t>(ParseUint(row[3])));
    r.steps += static_cast<size_t>(ParseUint(row[4]));
    r.first_step = std::min(r.first_step, first_step);
    r.last_step = std::max(r.last_step, last_step);
    r.first = std::min(r.first, first);
    r.last = std::max(r.last, last);
    a.ranks.insert(static_cast<uint32_t>(ParseUint(row[2])));
    a.hosts.insert(row[1]);
  }
  std::vector<JobRecord> out;
  out.reserve(jobs.size());
  for (auto& [job, a] : jobs) {
    a.record.ranks = a.ranks.size();
    a.record.hosts.assign(a.hosts.begin(), a.hosts.end());
    out.push_back(std::move(a.record));
  }
  // Newest last step first; ties by job name.
  std::sort(out.begin(), out.end(), [](const JobRecord& a, const JobRecord& b) {
    return a.last != b.last ? a.last > b.last : a.job < b.job;
  });
  if (out.size() > query.limit) out.resize(query.limit);
  return out;
}

}  // namespace warpscope::server
