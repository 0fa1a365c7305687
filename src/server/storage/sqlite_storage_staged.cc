// SPDX-License-Identifier: Apache-2.0
// SqliteStorage's staged samples: moving them from staged_samples into the head's compressed
// chunks (head_chunks), in bulk before reads and in parts from the write path (see "Staged
// samples" and "The head" in docs/design/storage.md).
#include <algorithm>
#include <span>

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
      return InsertHeadChunks(
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

Status SqliteStorage::InsertHeadChunks(std::span<const StagedSample> rows) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      sqlite::Statement insert,
      writer_->Prepare("INSERT INTO head_chunks(series_id, start_ms, end_ms, count, data) "
                       "VALUES(?1, ?2, ?3, ?4, ?5)"));
  ChunkEncoder encoder;
  int64_t series_id = 0, span = 0, first = 0, last = 0;
  auto flush = [&]() -> Status {
    if (encoder.windows() == 0) {
      return base::OkStatus();
    }
    const auto count = static_cast<int64_t>(encoder.windows());
    std::string data = encoder.Finish();
    insert.Bind(series_id, first, last + 1, count, sqlite::Blob{data});
    WARPSCOPE_RETURN_IF_ERROR(insert.Run());
    insert.Reset();
    return base::OkStatus();
  };
  // One chunk per run of a series' windows inside one span (cut at kChunkTargetBytes). Rows come
  // sorted by (series, start) in arrival order: of equal keys the last, the latest write, is kept.
  for (size_t i = 0; i < rows.size(); ++i) {
    const StagedSample& r = rows[i];
    if (i + 1 < rows.size() && rows[i + 1].series_id == r.series_id &&
        rows[i + 1].start_ms == r.start_ms) {
      continue;
    }
    const int64_t row_span = FloorTo(r.start_ms, storage_internal::kChunkSpanMs);
    if (encoder.windows() > 0 && (r.series_id != series_id || row_span != span ||
                                  encoder.bytes() >= storage_internal::kChunkTargetBytes)) {
      WARPSCOPE_RETURN_IF_ERROR(flush());
    }
    if (encoder.windows() == 0) {
      series_id = r.series_id;
      span = row_span;
      first = r.start_ms;
    }
    encoder.Append(ChunkWindow{r.start_ms, r.duration_ms, r.avg, r.min, r.max, r.last, r.count});
    last = r.start_ms;
  }
  return flush();
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
    WARPSCOPE_RETURN_IF_ERROR(InsertHeadChunks(staged_));
    return writer_->Exec("DELETE FROM staged_samples");
  }));
  staged_count_ -= staged_.size();
  staged_.clear();
  return base::OkStatus();
}

}  // namespace warpscope::server
