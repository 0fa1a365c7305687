// SPDX-License-Identifier: Apache-2.0
// How much of its bucket each point of a range answer stands for, so that per-group sums of
// series whose entities come and go (processes, and the executables and containers made of
// them) add up what ran at each moment, not the averages of processes that ran one after the
// other (docs/design/query.md).
#ifndef WARPSCOPE_SERVER_QUERY_BUCKET_SHARES_H_
#define WARPSCOPE_SERVER_QUERY_BUCKET_SHARES_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "base/status.h"
#include "model/entity.h"
#include "server/storage/storage.h"

namespace warpscope::server::query {

// Every warpscope agent writes this once per collection cycle: its samples in a bucket count the
// cycles the host's agent ran there.
inline constexpr std::string_view kCycleMetric = "agent.build_info";

// Whether series of `kind` describe something that exists only while processes run (process,
// executable, container): absent from a cycle means that nothing of it ran then.
bool ComesAndGoes(model::EntityKind kind);

// The share of its bucket a point covers: its samples over the cycles of its host in the bucket.
// The cycles are the larger of the host's kCycleMetric samples (absent for data that came from
// other senders) and the samples of any one process slot of the answer, where a slot is the
// series of one pid and labels: the processes that held one pid in turn never ran together, so
// their samples add up. Not thread-safe; built per query.
class BucketShares {
 public:
  // The shares for `result`, the answer of `q`. With an aggregation other than kAvg (an extreme,
  // a last value or a rate has no share of time) every share is 1. Errors are the storage's.
  [[nodiscard]] static base::Result<BucketShares> Read(Storage& storage, const RangeQuery& q,
                                                       const RangeResult& result);

  // In (0, 1]: the share of its bucket `p`, a point of `series`, covers; 1 for series of
  // entities that do not come and go (GPUs, hosts) and for points without samples.
  double Share(const RangeSeries& series, const Point& p) const;

 private:
  BucketShares() = default;

  bool weighted_ = false;
  std::map<std::string, std::map<int64_t, uint64_t>, std::less<>> cycles_;  // host, bucket ns
};

}  // namespace warpscope::server::query

#endif  // WARPSCOPE_SERVER_QUERY_BUCKET_SHARES_H_
