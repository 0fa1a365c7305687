// SPDX-License-Identifier: Apache-2.0
// The backend-independent half of range queries: which resolution serves which part of the
// range (PlanSegments), and how windows fold into step buckets (SeriesFolder). Times are Unix
// milliseconds, the storage precision.
#ifndef WARPSCOPE_SERVER_STORAGE_QUERY_PLAN_H_
#define WARPSCOPE_SERVER_STORAGE_QUERY_PLAN_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/storage/storage.h"

namespace warpscope::server {

inline constexpr int64_t kMinuteMs = 60'000;
inline constexpr int64_t kHourMs = 3'600'000;

inline int64_t FloorTo(int64_t t, int64_t unit) {
  int64_t q = t / unit;
  if (t % unit != 0 && t < 0) {
    --q;
  }
  return q * unit;
}
inline int64_t CeilTo(int64_t t, int64_t unit) {
  int64_t f = FloorTo(t, unit);
  return f == t ? t : f + unit;
}

// Where each resolution has data, as half-open ranges of window/bucket start times. Raw data is
// kept from `raw_from` on; rollups exist up to their watermark (`*_to`, exclusive) and from
// their retention cutoff (`*_from`) on.
struct Availability {
  int64_t raw_from = std::numeric_limits<int64_t>::min();
  int64_t minute_from = 0;
  int64_t minute_to = 0;
  int64_t hour_from = 0;
  int64_t hour_to = 0;
};

struct Segment {
  Resolution resolution = Resolution::kRaw;
  int64_t from = 0;  // window/bucket starts in [from, to)
  int64_t to = 0;

  bool operator==(const Segment&) const = default;
};

// The coarsest resolution whose bucket is <= step (raw windows count as bucket 0).
Resolution PreferredResolution(int64_t step_ms);

// Splits [from, to) into segments, in time order, each served by one resolution: the preferred
// one where it has data, otherwise finer ones, otherwise coarser ones. Rollup segments cover
// whole rollup buckets only; parts no resolution has are left out.
std::vector<Segment> PlanSegments(int64_t from, int64_t to, int64_t step_ms,
                                  const Availability& availability);

// One stored row: a raw window or a rollup bucket.
struct Row {
  int64_t start = 0;  // window or bucket start
  double avg = 0;
  double min = 0;
  double max = 0;
  double last = 0;
  int64_t count = 1;
};

// The rows that fell into one step bucket, combined.
struct Bucket {
  int64_t count = 0;  // samples; 0 = no rows
  double weighted_sum = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double last = 0;
  int64_t last_start = 0;
  // Counter increase from the row before this bucket's first row to its last row, with
  // decreases read as resets to 0, and the start time of that earlier row.
  double increase = 0;
  int64_t increase_from = 0;
  bool has_increase = false;

  bool empty() const { return count == 0; }
  // The bucket's value; nullopt when undefined (empty, or kRate without two rows).
  std::optional<double> Value(Aggregation aggregation) const;
  // Adds `other`'s rows: counts, sums and extremes, and its last value if it is later. The
  // increase is not merged (a rate over several buckets is their rates' sum, see PerEntity).
  void Merge(const Bucket& other);
};

// Folds the rows of one series, in ascending start order, into `buckets` step buckets of
// `step` ms starting at `origin`. Rows before `origin` only seed the counter for kRate; rows at
// or after the last bucket are ignored.
class SeriesFolder {
 public:
  SeriesFolder(int64_t origin, int64_t step, size_t buckets);
  void Add(const Row& row);
  // Merges rows already combined elsewhere (a database's GROUP BY) into the bucket holding
  // `partial.last_start`; its increase is ignored, so a kRate query folds rows with Add.
  void AddBucket(const Bucket& partial);
  const std::vector<Bucket>& buckets() const { return buckets_; }

 private:
  int64_t origin_;
  int64_t step_;
  std::vector<Bucket> buckets_;
  bool has_prev_ = false;
  double prev_last_ = 0;
  int64_t prev_start_ = 0;
};

// The helpers every backend's range and top queries share.

// Every pair of `want` is in `have`.
bool MatchesAll(const model::Labels& have, const model::Labels& want);

// The buckets a range query has for `query`, or InvalidArgument naming the limit and the step
// that would fit.
[[nodiscard]] base::Result<int64_t> RangeBuckets(const RangeQuery& query, int64_t origin,
                                                 int64_t step_ms, int64_t end_ms);

// How far before its range a rate query reads, for the window before its first bucket.
inline constexpr int64_t kRateSeedMs = 10 * kMinuteMs;

// A range query's frame, checked (a metric, a step of at least 1 ms, an end after the start, a
// bucket count within the limit): its step, start and end in ms, the first bucket's start, the
// number of buckets and where reading starts (earlier for a rate).
struct RangeFrame {
  int64_t step_ms = 0;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  int64_t origin = 0;
  int64_t buckets = 0;
  int64_t fetch_from = 0;
};
[[nodiscard]] base::Result<RangeFrame> FrameRange(const RangeQuery& query);

// The value of a range's buckets that have one, as points.
std::vector<Point> BucketPoints(const SeriesFolder& folder, Aggregation aggregation,
                                int64_t origin, int64_t step_ms);

// The resolutions flagged in used[raw, 1m, 1h], finest first.
std::vector<Resolution> UsedResolutions(const bool used[3]);

// One entity's figures in TopEntities: its series' buckets combined.
struct PerEntity {
  TopEntry entry;
  Bucket combined;
  double rate_sum = 0;
  bool has_rate = false;

  void Add(const SeriesIdentity& identity, const Bucket& b) {
    if (combined.empty()) {
      entry.host = identity.host;
      entry.entity = identity.entity;
      entry.entity_kind = identity.entity_kind;
      entry.entity_attributes = identity.entity_attributes;
    }
    combined.Merge(b);
    if (std::optional<double> r = b.Value(Aggregation::kRate); r.has_value()) {
      rate_sum += *r;
      has_rate = true;
    }
  }
};

// The entries of `entities` that have a value for `query`, ranked and cut to its limit.
std::vector<TopEntry> RankTop(const TopQuery& query,
                              std::map<std::pair<std::string, std::string>, PerEntity>& entities);

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_STORAGE_QUERY_PLAN_H_
