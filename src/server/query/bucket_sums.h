// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_SERVER_QUERY_BUCKET_SUMS_H_
#define WARPSCOPE_SERVER_QUERY_BUCKET_SUMS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "server/storage/storage.h"

namespace warpscope::server::query {

// The points of several series combined per bucket (by their time): summed, or averaged over
// the series that have a point there. Not thread-safe.
class BucketSums {
 public:
  // Adds p.value * share to p's bucket (share: BucketShares::Share, 1 for a whole bucket).
  void Add(const Point& p, double share = 1);
  void AddSeries(const std::vector<RangeSeries>& series);  // every point of every series
  // One point per bucket that had any, in time order: the sum, or with `mean` the mean.
  std::vector<Point> Points(bool mean) const;

 private:
  std::map<int64_t, std::pair<double, size_t>> buckets_;  // ns -> sum, count
};

}  // namespace warpscope::server::query

#endif  // WARPSCOPE_SERVER_QUERY_BUCKET_SUMS_H_
