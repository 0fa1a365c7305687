// SPDX-License-Identifier: Apache-2.0
// The conformance suite (storage_conformance.h): several batches in one call (WriteBatches),
// from one caller and from many at once.
#include <gmock/gmock.h>

#include <string>
#include <thread>
#include <vector>

#include "server/storage/testing/storage_conformance.h"

namespace warpscope::server {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;
using std::chrono::hours;
using std::chrono::seconds;

using conformance::Utilization;

// One 10 s window of `host` with one GPU series; `describe` says whether it carries the
// metric's description.
IngestBatch Window(const std::string& host, uint64_t sequence, base::TimePoint start, double v,
                   bool describe = true) {
  IngestBatch b;
  b.agent_id = "agent-" + host;
  b.host = host;
  b.sequence = sequence;
  b.start = start;
  b.end = start + seconds(10);
  if (describe) {
    b.metrics.push_back(Utilization());
  }
  b.series.push_back(IngestSeries{"gpu.utilization", "GPU-" + host, {}, v, v, v, v, 1});
  return b;
}

std::vector<double> ValuesOf(Storage& s, const std::string& host, base::TimePoint start) {
  RangeQuery q;
  q.metric = "gpu.utilization";
  q.start = start;
  q.end = start + hours(1);
  q.step = seconds(10);
  q.match.host = host;
  auto r = s.QueryRange(q);
  EXPECT_TRUE(r.has_value()) << r.error().ToString();
  std::vector<double> out;
  if (r.has_value() && !r->series.empty()) {
    for (const Point& p : r->series[0].points) {
      out.push_back(p.value);
    }
  }
  return out;
}

TEST_P(StorageConformanceTest, WriteBatchesStopsAtTheFirstFailingBatch) {
  IngestBatch bad = Window("h1", 2, kT0 + seconds(10), 0.5);
  bad.host.clear();
  std::vector<IngestBatch> batches = {Window("h1", 1, kT0, 0.25), bad,
                                      Window("h1", 3, kT0 + seconds(20), 0.75)};

  BatchesWritten written = storage().WriteBatches(batches);

  ASSERT_THAT(written.results, SizeIs(1));
  EXPECT_EQ(written.results[0].stored, 1u);
  EXPECT_EQ(written.status.code(), base::StatusCode::kInvalidArgument);
  EXPECT_THAT(written.status.message(), ::testing::HasSubstr("host is empty"));
  EXPECT_THAT(ValuesOf(storage(), "h1", kT0), ElementsAre(0.25));
}

TEST_P(StorageConformanceTest, ABatchMayUseTheMetricsOfTheOneBeforeIt) {
  std::vector<IngestBatch> batches = {Window("h1", 1, kT0, 0.25),
                                      Window("h1", 2, kT0 + seconds(10), 0.5, false)};

  BatchesWritten written = storage().WriteBatches(batches);

  ASSERT_TRUE(written.status.ok()) << written.status.ToString();
  ASSERT_THAT(written.results, SizeIs(2));
  EXPECT_THAT(ValuesOf(storage(), "h1", kT0), ElementsAre(0.25, 0.5));
}

TEST_P(StorageConformanceTest, ConcurrentCallersAreEachStoredOnce) {
  // Callers at once: a backend may commit their batches together, but each caller gets its own
  // results, and a retry of everything is all duplicates.
  constexpr int kCallers = 4;
  constexpr int kRounds = 20;
  constexpr int kPerCall = 3;
  auto run = [&](bool expect_duplicate) {
    std::vector<std::thread> callers;
    std::vector<int> wrong(kCallers, 0);
    for (int c = 0; c < kCallers; ++c) {
      callers.emplace_back([&, c] {
        const std::string host = "h" + std::to_string(c);
        for (int round = 0; round < kRounds; ++round) {
          std::vector<IngestBatch> batches;
          for (int i = 0; i < kPerCall; ++i) {
            const int n = round * kPerCall + i;
            batches.push_back(Window(host, static_cast<uint64_t>(n + 1), kT0 + seconds(10) * n,
                                     c + 0.001 * n));
          }
          BatchesWritten written = storage().WriteBatches(batches);
          bool right = written.status.ok() && written.results.size() == kPerCall;
          for (const WriteResult& r : written.results) {
            right = right && r.duplicate == expect_duplicate &&
                    r.stored == (expect_duplicate ? 0u : 1u);
          }
          wrong[c] += right ? 0 : 1;
        }
      });
    }
    for (std::thread& t : callers) {
      t.join();
    }
    return wrong;
  };

  EXPECT_THAT(run(false), ElementsAre(0, 0, 0, 0));
  EXPECT_THAT(run(true), ElementsAre(0, 0, 0, 0));

  for (int c = 0; c < kCallers; ++c) {
    std::vector<double> values = ValuesOf(storage(), "h" + std::to_string(c), kT0);
    ASSERT_THAT(values, SizeIs(kRounds * kPerCall)) << "host h" << c;
    EXPECT_DOUBLE_EQ(values.back(), c + 0.001 * (kRounds * kPerCall - 1));
  }
}

}  // namespace
}  // namespace warpscope::server
