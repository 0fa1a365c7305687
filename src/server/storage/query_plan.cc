// SPDX-License-Identifier: Apache-2.0
#include "server/storage/query_plan.h"

#include <algorithm>
#include <chrono>

namespace warpscope::server {
namespace {

struct Span {
  int64_t from;
  int64_t to;
  int64_t bucket;  // 0 for raw windows: no alignment
};

Span SpanOf(Resolution r, const Availability& a) {
  switch (r) {
    case Resolution::kRaw:
      return {a.raw_from, std::numeric_limits<int64_t>::max(), 0};
    case Resolution::kMinute:
      return {a.minute_from, a.minute_to, kMinuteMs};
    case Resolution::kHour:
      return {a.hour_from, a.hour_to, kHourMs};
  }
  return {0, 0, 0};
}

void Plan(int64_t from, int64_t to, const std::vector<Resolution>& order, const Availability& a,
          std::vector<Segment>& out) {
  if (from >= to) {
    return;
  }
  for (Resolution r : order) {
    Span span = SpanOf(r, a);
    int64_t lo = std::max(from, span.from);
    int64_t hi = std::min(to, span.to);
    if (span.bucket > 0) {
      lo = CeilTo(lo, span.bucket);
      hi = FloorTo(hi, span.bucket);
    }
    if (lo < hi) {
      Plan(from, lo, order, a, out);
      out.push_back(Segment{r, lo, hi});
      Plan(hi, to, order, a, out);
      return;
    }
  }
}

}  // namespace

Resolution PreferredResolution(int64_t step_ms) {
  if (step_ms >= kHourMs) {
    return Resolution::kHour;
  }
  if (step_ms >= kMinuteMs) {
    return Resolution::kMinute;
  }
  return Resolution::kRaw;
}

std::vector<Segment> PlanSegments(int64_t from, int64_t to, int64_t step_ms,
                                  const Availability& availability) {
  // Preferred first, then finer (more detail), then coarser (only where nothing finer is left).
  std::vector<Resolution> order;
  switch (PreferredResolution(step_ms)) {
    case Resolution::kHour:
      order = {Resolution::kHour, Resolution::kMinute, Resolution::kRaw};
      break;
    case Resolution::kMinute:
      order = {Resolution::kMinute, Resolution::kRaw, Resolution::kHour};
      break;
    case Resolution::kRaw:
      order = {Resolution::kRaw, Resolution::kMinute, Resolution::kHour};
      break;
  }
  std::vector<Segment> out;
  Plan(from, to, order, availability, out);
  return out;
}

std::optional<double> Bucket::Value(Aggregation aggregation) const {
  if (empty()) {
    return std::nullopt;
  }
  switch (aggregation) {
    case Aggregation::kAvg:
      return weighted_sum / static_cast<double>(count);
    case Aggregation::kMin:
      return min;
    case Aggregation::kMax:
      return max;
    case Aggregation::kLast:
      return last;
    case Aggregation::kRate: {
      if (!has_increase || last_start <= increase_from) {
        return std::nullopt;
      }
      return increase / (static_cast<double>(last_start - increase_from) / 1000.0);
    }
  }
  return std::nullopt;
}

void Bucket::Merge(const Bucket& other) {
  if (other.empty()) {
    return;
  }
  if (empty() || other.last_start >= last_start) {
    last = other.last;
    last_start = other.last_start;
  }
  count += other.count;
  weighted_sum += other.weighted_sum;
  min = std::min(min, other.min);
  max = std::max(max, other.max);
}

SeriesFolder::SeriesFolder(int64_t origin, int64_t step, size_t buckets)
    : origin_(origin), step_(step), buckets_(buckets) {}

void SeriesFolder::Add(const Row& row) {
  double prev_last = prev_last_;
  int64_t prev_start = prev_start_;
  bool had_prev = has_prev_;
  has_prev_ = true;
  prev_last_ = row.last;
  prev_start_ = row.start;
  if (row.start < origin_) {
    return;
  }
  size_t index = static_cast<size_t>((row.start - origin_) / step_);
  if (index >= buckets_.size()) {
    return;
  }
  Bucket& b = buckets_[index];
  int64_t count = std::max<int64_t>(row.count, 1);
  b.count += count;
  b.weighted_sum += row.avg * static_cast<double>(count);
  b.min = std::min(b.min, row.min);
  b.max = std::max(b.max, row.max);
  if (row.start >= b.last_start || b.count == count) {
    b.last = row.last;
    b.last_start = row.start;
  }
  if (had_prev) {
    if (!b.has_increase) {
      b.has_increase = true;
      b.increase_from = prev_start;
    }
    b.increase += row.last >= prev_last ? row.last - prev_last : row.last;
  }
}

void SeriesFolder::AddBucket(const Bucket& partial) {
  if (partial.empty() || partial.last_start < origin_) {
    return;
  }
  size_t index = static_cast<size_t>((partial.last_start - origin_) / step_);
  if (index >= buckets_.size()) {
    return;
  }
  buckets_[index].Merge(partial);
}

namespace {
base::TimePoint PlanFromMs(int64_t ms) { return base::FromUnixNanos(ms * 1'000'000); }
}  // namespace

bool MatchesAll(const model::Labels& have, const model::Labels& want) {
  for (const auto& [key, value] : want) {
    if (!have.Has(key) || have.Get(key) != value) {
      return false;
    }
  }
  return true;
}

// The buckets a range query has for `query`, or InvalidArgument naming the limit and the step
// that would fit.
base::Result<int64_t> RangeBuckets(const RangeQuery& query, int64_t origin, int64_t step_ms,
                             int64_t end_ms) {
  const int64_t buckets = (end_ms - origin + step_ms - 1) / step_ms;
  if (static_cast<uint64_t>(buckets) > query.max_points) {
    return base::Error(base::InvalidArgument(
        "query: {} points per series exceeds the limit of {}; use a step of at least {}", buckets,
        query.max_points,
        base::FormatDuration(std::chrono::milliseconds(
            (end_ms - origin + static_cast<int64_t>(query.max_points) - 1) /
            static_cast<int64_t>(query.max_points)))));
  }
  return buckets;
}

// The value of a range's buckets that have one, as points.
std::vector<Point> BucketPoints(const SeriesFolder& folder, Aggregation aggregation, int64_t origin,
                                int64_t step_ms) {
  std::vector<Point> points;
  const auto& folded = folder.buckets();
  for (size_t i = 0; i < folded.size(); ++i) {
    std::optional<double> value = folded[i].Value(aggregation);
    if (value.has_value()) {
      const uint64_t samples =
          aggregation == Aggregation::kAvg ? static_cast<uint64_t>(folded[i].count) : 0;
      points.push_back(Point{PlanFromMs(origin + static_cast<int64_t>(i) * step_ms), *value, samples});
    }
  }
  return points;
}

std::vector<Resolution> UsedResolutions(const bool used[3]) {
  std::vector<Resolution> out;
  for (Resolution r : {Resolution::kRaw, Resolution::kMinute, Resolution::kHour}) {
    if (used[static_cast<int>(r)]) {
      out.push_back(r);
    }
  }
  return out;
}

// The entries of `entities` that have a value for `query`, ranked and cut to its limit.
std::vector<TopEntry> RankTop(const TopQuery& query,
                              std::map<std::pair<std::string, std::string>, PerEntity>& entities) {
  const bool rate = query.aggregation == Aggregation::kRate;
  std::vector<TopEntry> out;
  for (auto& [key, pe] : entities) {
    std::optional<double> value =
        rate ? (pe.has_rate ? std::optional<double>(pe.rate_sum) : std::nullopt)
             : pe.combined.Value(query.aggregation);
    if (!value.has_value()) {
      continue;
    }
    pe.entry.value = *value;
    pe.entry.latest = pe.combined.last;
    pe.entry.latest_time = PlanFromMs(pe.combined.last_start);
    out.push_back(std::move(pe.entry));
  }
  std::stable_sort(out.begin(), out.end(), [&](const TopEntry& a, const TopEntry& b) {
    return query.ascending ? a.value < b.value : a.value > b.value;
  });
  if (out.size() > query.limit) {
    out.resize(query.limit);
  }
  return out;
}


base::Result<RangeFrame> FrameRange(const RangeQuery& query) {
  if (query.metric.empty()) {
    return base::Error(base::InvalidArgument("query: metric is required"));
  }
  RangeFrame f;
  f.step_ms = std::chrono::duration_cast<std::chrono::milliseconds>(query.step).count();
  if (f.step_ms <= 0) {
    return base::Error(base::InvalidArgument("query: step must be at least 1ms"));
  }
  f.start_ms = base::ToUnixMillis(query.start);
  f.end_ms = base::ToUnixMillis(query.end);
  if (f.end_ms <= f.start_ms) {
    return base::Error(base::InvalidArgument("query: end must be after start"));
  }
  f.origin = FloorTo(f.start_ms, f.step_ms);
  WARPSCOPE_ASSIGN_OR_RETURN(f.buckets, RangeBuckets(query, f.origin, f.step_ms, f.end_ms));
  f.fetch_from = query.aggregation == Aggregation::kRate
                     ? f.origin - std::max(f.step_ms, kRateSeedMs)
                     : f.origin;
  return f;
}

}  // namespace warpscope::server
