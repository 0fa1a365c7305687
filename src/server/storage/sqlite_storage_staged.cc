// SPDX-License-Identifier: Apache-2.0
// SqliteStorage's staged samples: moving them from staged_samples into the head's compressed
// chunks (head_chunks), in bulk before reads and in parts from the write path (see "Staged
// samples" and "The head" in docs/design/storage.md).
#include <algorithm>
#include <chrono>
#include <span>

#include "base/logging.h"
#include "server/storage/sample_chunk.h"
#include "server/storage/sqlite_db.h"
#include "server/storage/sqlite_storage.h"
#include "server/storage/sqlite_storage_internal.h"

namespace warpscope::server {

using base::Status;

void SqliteStorage::SortForInsert(std::vector<StagedSample>& rows) {
  // Sorted by (series, start), arrival order kept among equal keys so that the latest write
  // wins: each series' windows of a move become one chunk.
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
      // next move (rows already in the head are written again with the same values).
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
    // Encoded without the lock; only the inserts hold it. A part ends inside a series' run
    // only where it splits the rows, which the head's reads merge like any two moves.
    const std::vector<HeadChunk> chunks = EncodeHeadChunks(
        std::span<const StagedSample>(rows).subspan(at, std::min(chunk_rows, rows.size() - at)));
    lock.lock();
    Status chunk = sqlite::InWriteTransaction(*writer_, [&] { return InsertHeadChunks(chunks); });
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

void SqliteStorage::MoveLoop() {
  const size_t stage_max = StageMax();
  std::unique_lock lock(write_mu_);
  while (true) {
    move_wanted_.wait(lock, [&] { return stopping_ || (!moving_ && staged_.size() >= stage_max); });
    if (stopping_) {
      return;
    }
    // The batches are committed; a failure leaves the samples staged for the next try, a
    // second later (or at the next read, which moves them itself).
    if (Status moved = MoveStaged(lock); !moved.ok()) {
      WARPSCOPE_LOG_EVERY_N(ERROR, 100, "{}: moving staged samples: {}", path_, moved.ToString());
      move_wanted_.wait_for(lock, std::chrono::seconds(1), [&] { return stopping_; });
    }
  }
}

bool SqliteStorage::WaitForMoves(std::chrono::milliseconds timeout) {
  const size_t stage_max = StageMax();
  std::unique_lock lock(write_mu_);
  return move_done_.wait_for(lock, timeout, [&] { return !moving_ && staged_.size() < stage_max; });
}

std::vector<SqliteStorage::HeadChunk> SqliteStorage::EncodeHeadChunks(
    std::span<const StagedSample> rows) {
  ChunkCutter cutter(storage_internal::kChunkSpanMs, storage_internal::kChunkTargetBytes);
  // Rows come sorted by (series, start) in arrival order: of equal keys the last, the latest
  // write, is kept.
  for (size_t i = 0; i < rows.size(); ++i) {
    const StagedSample& r = rows[i];
    if (i + 1 < rows.size() && rows[i + 1].series_id == r.series_id &&
        rows[i + 1].start_ms == r.start_ms) {
      continue;
    }
    cutter.Add(r.series_id,
               ChunkWindow{r.start_ms, r.duration_ms, r.avg, r.min, r.max, r.last, r.count});
  }
  return cutter.Finish();
}

Status SqliteStorage::InsertHeadChunks(const std::vector<HeadChunk>& chunks) {
  return storage_internal::InsertChunks(*writer_, "head_chunks", chunks);
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
    WARPSCOPE_RETURN_IF_ERROR(InsertHeadChunks(EncodeHeadChunks(staged_)));
    return writer_->Exec("DELETE FROM staged_samples");
  }));
  staged_count_ -= staged_.size();
  staged_.clear();
  return base::OkStatus();
}

}  // namespace warpscope::server
