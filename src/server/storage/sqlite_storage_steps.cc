// SPDX-License-Identifier: Apache-2.0
// SqliteStorage's reads of training steps: QuerySteps (one job's step rows) and ListJobs (the
// jobs with steps in a range, aggregated), each in one read transaction on a pooled connection.
// The rows are written by WriteBatch (sqlite_storage_write.cc) and trimmed by retention.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "server/storage/sqlite_db.h"
#include "server/storage/sqlite_storage.h"

namespace warpscope::server {
namespace {

using base::Result;
using sqlite::Connection;
using sqlite::Statement;

int64_t Limit(size_t limit) { return static_cast<int64_t>(std::min<size_t>(limit, INT64_MAX)); }

// The steps table holds times in ns, as sent (see kStepsSchema).
int64_t Ns(base::TimePoint t) { return base::ToUnixNanos(t); }

// One (job, host, rank) group of ListJobs' query.
struct JobGroupRow {
  std::string job;
  std::string host;
  uint32_t rank = 0;
  uint32_t world_size = 0;
  size_t steps = 0;
  int64_t first_step = 0;
  int64_t last_step = 0;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
};

// Folds the groups of one job into its record; ranks and hosts are collected in sets.
struct JobAccumulator {
  JobRecord record;
  std::set<uint32_t> ranks;
  std::set<std::string> hosts;

  void Add(const JobGroupRow& g) {
    if (ranks.empty() && hosts.empty()) {
      record.job = g.job;
      record.first_step = g.first_step;
      record.last_step = g.last_step;
      record.first = base::FromUnixNanos(g.first_ns);
      record.last = base::FromUnixNanos(g.last_ns);
    }
    record.world_size = std::max(record.world_size, g.world_size);
    record.steps += g.steps;
    record.first_step = std::min(record.first_step, g.first_step);
    record.last_step = std::max(record.last_step, g.last_step);
    record.first = std::min(record.first, base::FromUnixNanos(g.first_ns));
    record.last = std::max(record.last, base::FromUnixNanos(g.last_ns));
    ranks.insert(g.rank);
    hosts.insert(g.host);
  }

  JobRecord Finish() && {
    record.ranks = ranks.size();
    record.hosts.assign(hosts.begin(), hosts.end());  // a std::set iterates sorted
    return std::move(record);
  }
};

}  // namespace

Result<std::vector<StoredStep>> SqliteStorage::QuerySteps(const StepQuery& query) {
  return sqlite::InReadTransaction(
      *readers_, [&](Connection& db) -> Result<std::vector<StoredStep>> {
        // The newest `limit` by end (training_steps_by_job, read backwards), then in step order.
        WARPSCOPE_ASSIGN_OR_RETURN(
            Statement stmt,
            db.Prepare("SELECT h.name, s.entity, s.job, s.comm, s.rank, s.world_size, s.step, "
                       "s.start_ns, s.end_ns, s.compute_ns, s.comm_ns, s.overlap_ns, "
                       "s.last_collective_offset_ns, s.nccl_ns, s.collectives, s.bus_bytes, "
                       "s.source FROM (SELECT * FROM training_steps WHERE job = ?1 AND "
                       "end_ns >= ?2 AND end_ns < ?3 ORDER BY end_ns DESC, id DESC LIMIT ?4) s "
                       "JOIN hosts h ON h.id = s.host_id "
                       "ORDER BY s.step, s.rank, h.name, s.end_ns, s.id"));
        stmt.Bind(query.job, Ns(query.start), Ns(query.end), Limit(query.limit));
        std::vector<StoredStep> out;
        WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const Statement& row) {
          StoredStep r;
          r.host = std::string(row.ColumnText(0));
          model::TrainingStep& s = r.step;
          s.entity = std::string(row.ColumnText(1));
          s.job = std::string(row.ColumnText(2));
          s.comm = std::string(row.ColumnText(3));
          s.rank = static_cast<uint32_t>(row.ColumnInt(4));
          s.world_size = static_cast<uint32_t>(row.ColumnInt(5));
          s.step = row.ColumnInt(6);
          s.start = base::FromUnixNanos(row.ColumnInt(7));
          s.end = base::FromUnixNanos(row.ColumnInt(8));
          s.compute_ns = row.ColumnInt(9);
          s.comm_ns = row.ColumnInt(10);
          s.overlap_ns = row.ColumnInt(11);
          s.last_collective_offset_ns = row.ColumnInt(12);
          s.nccl_ns = row.ColumnInt(13);
          s.collectives = static_cast<uint32_t>(row.ColumnInt(14));
          s.bus_bytes = static_cast<uint64_t>(row.ColumnInt(15));  // stored as its bit pattern
          s.source = std::string(row.ColumnText(16));
          out.push_back(std::move(r));
        }));
        return out;
      });
}

Result<std::vector<JobRecord>> SqliteStorage::ListJobs(const JobQuery& query) {
  return sqlite::InReadTransaction(
      *readers_, [&](Connection& db) -> Result<std::vector<JobRecord>> {
        // One row per (job, host, rank) from one pass over training_steps_by_end: distinct ranks
        // and hosts need them, and a job has at most a row per rank (and per host it moved to).
        WARPSCOPE_ASSIGN_OR_RETURN(
            Statement stmt,
            db.Prepare("SELECT g.job, h.name, g.rank, g.world_size, g.steps, g.first_step, "
                       "g.last_step, g.first_ns, g.last_ns FROM (SELECT job, host_id, rank, "
                       "MAX(world_size) AS world_size, COUNT(*) AS steps, MIN(step) AS "
                       "first_step, MAX(step) AS last_step, MIN(start_ns) AS first_ns, "
                       "MAX(end_ns) AS last_ns FROM training_steps WHERE end_ns >= ?1 AND "
                       "end_ns < ?2 GROUP BY job, host_id, rank) g "
                       "JOIN hosts h ON h.id = g.host_id"));
        stmt.Bind(Ns(query.start), Ns(query.end));
        std::map<std::string, JobAccumulator> jobs;
        WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const Statement& row) {
          JobGroupRow g;
          g.job = std::string(row.ColumnText(0));
          g.host = std::string(row.ColumnText(1));
          g.rank = static_cast<uint32_t>(row.ColumnInt(2));
          g.world_size = static_cast<uint32_t>(row.ColumnInt(3));
          g.steps = static_cast<size_t>(row.ColumnInt(4));
          g.first_step = row.ColumnInt(5);
          g.last_step = row.ColumnInt(6);
          g.first_ns = row.ColumnInt(7);
          g.last_ns = row.ColumnInt(8);
          jobs[g.job].Add(g);
        }));
        std::vector<JobRecord> out;
        out.reserve(jobs.size());
        for (auto& [job, acc] : jobs) {
          out.push_back(std::move(acc).Finish());
        }
        // Newest last step first; ties by job name (stable order for equal ends).
        std::sort(out.begin(), out.end(), [](const JobRecord& a, const JobRecord& b) {
          return a.last != b.last ? a.last > b.last : a.job < b.job;
        });
        if (out.size() > query.limit) {
          out.resize(query.limit);
        }
        return out;
      });
}

}  // namespace warpscope::server
