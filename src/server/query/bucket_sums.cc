// SPDX-License-Identifier: Apache-2.0
#include "server/query/bucket_sums.h"

namespace warpscope::server::query {

void BucketSums::Add(const Point& p, double share) {
  auto& b = buckets_[base::ToUnixNanos(p.time)];
  b.first += p.value * share;
  ++b.second;
}

void BucketSums::AddSeries(const std::vector<RangeSeries>& series) {
  for (const RangeSeries& s : series) {
    for (const Point& p : s.points) {
      Add(p);
    }
  }
}

std::vector<Point> BucketSums::Points(bool mean) const {
  std::vector<Point> out;
  out.reserve(buckets_.size());
  for (const auto& [t, b] : buckets_) {
    double v = mean ? b.first / static_cast<double>(b.second) : b.first;
    out.push_back(Point{base::FromUnixNanos(t), v});
  }
  return out;
}

}  // namespace warpscope::server::query
