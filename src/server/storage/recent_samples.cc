// SPDX-License-Identifier: Apache-2.0
#include "server/storage/recent_samples.h"

#include <algorithm>
#include <mutex>

namespace warpscope::server {

void RecentSamples::Reset(int64_t horizon_ms) {
  std::unique_lock lock(mu_);
  series_.clear();
  rows_ = 0;
  horizon_ = horizon_ms;
  newest_ = std::numeric_limits<int64_t>::min();
}

std::vector<Row>::const_iterator RecentSamples::LowerBound(const std::vector<Row>& rows,
                                                           int64_t start) {
  return std::lower_bound(rows.begin(), rows.end(), start,
                          [](const Row& r, int64_t t) { return r.start < t; });
}

void RecentSamples::Add(int64_t series_id, const Row& row) {
  std::unique_lock lock(mu_);
  AddLocked(series_id, row);
}

void RecentSamples::AddLocked(int64_t series_id, const Row& row) {
  if (row.start < horizon_) {
    return;
  }
  std::vector<Row>& rows = series_[series_id];
  if (rows.empty() || rows.back().start < row.start) {
    rows.push_back(row);  // the usual case: the series' next window
    ++rows_;
  } else {
    auto at = rows.begin() + (LowerBound(rows, row.start) - rows.cbegin());
    if (at->start == row.start) {
      *at = row;  // rewritten: the later write wins
    } else {
      rows.insert(at, row);
      ++rows_;
    }
  }
  newest_ = std::max(newest_, row.start);
  // The horizon steps a quarter of `keep_ms` at a time, so that each sweep over the series
  // drops a quarter's windows rather than one.
  const int64_t keep = options_.keep_ms;
  if (newest_ - keep - keep / 4 > horizon_) {
    AdvanceLocked(newest_ - keep);
  }
  // Over the row budget: halve the time span held until it fits.
  while (rows_ > options_.max_rows) {
    int64_t oldest = newest_;
    for (const auto& [id, held] : series_) {
      if (!held.empty()) oldest = std::min(oldest, held.front().start);
    }
    AdvanceLocked(oldest + (newest_ - oldest) / 2 + 1);
  }
}

void RecentSamples::AdvanceLocked(int64_t horizon_ms) {
  if (horizon_ms <= horizon_) {
    return;
  }
  horizon_ = horizon_ms;
  for (auto it = series_.begin(); it != series_.end();) {
    std::vector<Row>& rows = it->second;
    auto keep_from = LowerBound(rows, horizon_);
    rows_ -= static_cast<size_t>(keep_from - rows.cbegin());
    rows.erase(rows.cbegin(), keep_from);
    if (rows.empty()) {
      it = series_.erase(it);
    } else {
      if (rows.capacity() > 2 * rows.size() + 8) rows.shrink_to_fit();
      ++it;
    }
  }
}

int64_t RecentSamples::horizon() const {
  std::shared_lock lock(mu_);
  return horizon_;
}

size_t RecentSamples::rows() const {
  std::shared_lock lock(mu_);
  return rows_;
}

}  // namespace warpscope::server
