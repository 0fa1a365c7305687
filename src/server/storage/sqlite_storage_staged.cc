// SPDX-License-Identifier: Apache-2.0
// SqliteStorage's staged samples: moving them from staged_samples into the series-clustered
// samples table, in bulk before reads and in chunks from the write path (see "Staged samples"
// in docs/design/storage.md).
#include <algorithm>
#include <span>

#include "server/storage/sqlite_db.h"
#include "server/storage/sqlite_storage.h"
#include "server/storage/sqlite_storage_internal.h"

namespace warpscope::server {

using base::Status;

void SqliteStorage::SortForInsert(std::vector<StagedSample>& rows) {
  // Sorted by (series, start), arrival order kept among equal keys so the latest write wins
  // (INSERT OR REPLACE), as it would have written directly: consecutive rows land on the same
  // B-tree page, so each page is written once per move instead of once per batch.
  std::stable_sort(rows.begin(), rows.end(), [](const StagedSample& x, const StagedSample& y) {
    return x.series_id != y.series_id ? x.series_id < y.series_id : x.start_ms < y.start_ms;
  });
}

Status SqliteStorage::MoveStaged(std::unique_lock<std::mutex>& lock) {
  moving_ = true;
  std::vector<StagedSample> rows;
  rows.swap(staged_);
  const int64_t last_id = staged_last_id_;
  lock.unlock();
  SortForInsert(rows);
  auto finish = [&](Status status) {
    if (!status.ok()) {
      // Nothing was deleted from staged_samples: keep every row, ahead of newer ones, for the
      // next move (rows already in samples are rewritten with the same values).
      staged_.insert(staged_.begin(), rows.begin(), rows.end());
    } else {
      staged_count_ -= rows.size();
    }
    moving_ = false;
    move_done_.notify_all();
    return status;
  };
  const size_t chunk_rows = std::max<size_t>(options_.staged_move_chunk, 1);
  for (size_t at = 0; at < rows.size(); at += chunk_rows) {
    lock.lock();
    Status chunk = sqlite::InWriteTransaction(*writer_, [&] {
      return InsertSamples(
          std::span<const StagedSample>(rows).subspan(at, std::min(chunk_rows, rows.size() - at)));
    });
    if (!chunk.ok()) {
      return finish(chunk);
    }
    lock.unlock();
  }
  lock.lock();
  return finish(sqlite::InWriteTransaction(*writer_, [&] {
    return writer_->Run("DELETE FROM staged_samples WHERE id <= ?1", last_id);
  }));
}

Status SqliteStorage::InsertSamples(std::span<const StagedSample> rows) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      sqlite::Statement stmt,
      writer_->Prepare("INSERT OR REPLACE INTO samples(series_id, start_ms, duration_ms, avg, "
                       "min, max, last, count) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
  for (const StagedSample& r : rows) {
    stmt.Reset();
    stmt.Bind(r.series_id, r.start_ms, r.duration_ms, r.avg, r.min, r.max, r.last, r.count);
    WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
  }
  return base::OkStatus();
}

Status SqliteStorage::ApplyStaged() {
  if (staged_count_.load() == 0) {
    return base::OkStatus();
  }
  std::unique_lock lock(write_mu_);
  return ApplyStagedLocked(lock);
}

Status SqliteStorage::ApplyStagedLocked(std::unique_lock<std::mutex>& lock) {
  move_done_.wait(lock, [&] { return !moving_; });
  if (staged_.empty()) {
    return base::OkStatus();
  }
  SortForInsert(staged_);
  WARPSCOPE_RETURN_IF_ERROR(sqlite::InWriteTransaction(*writer_, [&]() -> Status {
    WARPSCOPE_RETURN_IF_ERROR(InsertSamples(staged_));
    return writer_->Exec("DELETE FROM staged_samples");
  }));
  staged_count_ -= staged_.size();
  staged_.clear();
  return base::OkStatus();
}

}  // namespace warpscope::server
