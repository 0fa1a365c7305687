// SPDX-License-Identifier: Apache-2.0
// The newest raw windows of every series, in memory, so that the reads that come every few
// seconds (the insights engine's newest minute, a dashboard's last five minutes) fold a few
// rows per series from memory instead of seeking one B-tree page per series.
//
// The contract is a horizon: every stored raw window whose start is >= horizon() is here, with
// the values SQLite holds for it (a window written twice keeps the later write, as INSERT OR
// REPLACE does). Windows that start before the horizon are not kept and their writes are
// ignored. The horizon only moves forward: to keep at most `keep_ms` behind the newest start
// seen, and further when more than `max_rows` windows are held. Thread-safe: one writer, many
// readers.
#ifndef WARPSCOPE_SERVER_STORAGE_RECENT_SAMPLES_H_
#define WARPSCOPE_SERVER_STORAGE_RECENT_SAMPLES_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "server/storage/query_plan.h"

namespace warpscope::server {

class RecentSamples {
 public:
  struct Options {
    int64_t keep_ms = 5 * kMinuteMs;
    size_t max_rows = 1'000'000;  // about 48 MB of rows
  };

  explicit RecentSamples(Options options) : options_(options) {}

  // Drops everything; from now on windows starting at or after `horizon_ms` are kept. The
  // caller promises that nothing stored before this call starts at or after `horizon_ms`.
  void Reset(int64_t horizon_ms);

  // Records a committed window of `series_id` (row.start is the window start).
  void Add(int64_t series_id, const Row& row);
  // Add() for `n` windows under one lock: row(i) returns the i-th (series_id, row) pair.
  template <typename RowAt>
  void AddAll(size_t n, const RowAt& row) {
    std::unique_lock lock(mu_);
    for (size_t i = 0; i < n; ++i) {
      const auto [series_id, r] = row(i);
      AddLocked(series_id, r);
    }
  }

  // Calls fold(row) for the series' windows starting in [from, to), in start order, and returns
  // true; returns false (calling nothing) when `from` is below the horizon, so that the caller
  // reads storage instead.
  template <typename Fn>
  bool Fold(int64_t series_id, int64_t from, int64_t to, Fn&& fold) const {
    std::shared_lock lock(mu_);
    if (from < horizon_) {
      return false;
    }
    auto it = series_.find(series_id);
    if (it == series_.end()) {
      return true;
    }
    const std::vector<Row>& rows = it->second;
    for (auto r = LowerBound(rows, from); r != rows.end() && r->start < to; ++r) {
      fold(*r);
    }
    return true;
  }

  int64_t horizon() const;
  size_t rows() const;

 private:
  static std::vector<Row>::const_iterator LowerBound(const std::vector<Row>& rows, int64_t start);
  // Moves the horizon to `horizon_ms` (if later) and drops the rows before it; mu_ held.
  void AdvanceLocked(int64_t horizon_ms);
  void AddLocked(int64_t series_id, const Row& row);

  const Options options_;
  mutable std::shared_mutex mu_;
  int64_t horizon_ = std::numeric_limits<int64_t>::max();  // covers nothing until Reset
  int64_t newest_ = std::numeric_limits<int64_t>::min();
  size_t rows_ = 0;
  std::unordered_map<int64_t, std::vector<Row>> series_;
};

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_STORAGE_RECENT_SAMPLES_H_
