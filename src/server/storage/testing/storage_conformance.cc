// SPDX-License-Identifier: Apache-2.0
#include "server/storage/testing/storage_conformance.h"

#include <gmock/gmock.h>
#include <stdlib.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <limits>
#include <thread>

namespace warpscope::server {

MetricInfo conformance::Utilization() {
  return MetricInfo{"gpu.utilization",  model::MetricKind::kGauge, "1",
                    "GPU busy ratio.",  "DCGM_FI_DEV_GPU_UTIL",   100.0,
                    "hw.gpu.utilization", model::EntityKind::kGpu};
}

void PrintTo(const StorageBackend& backend, std::ostream* os) { *os << backend.name; }

std::string StorageBackendName(const ::testing::TestParamInfo<StorageBackend>& info) {
  return info.param.name;
}

void StorageConformanceTest::SetUp() {
  if (GetParam().skip_reason) {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info->name();  // "Test/param"
    name = name.substr(0, name.find('/'));
    if (std::string reason = GetParam().skip_reason(name); !reason.empty()) {
      GTEST_SKIP() << reason;
    }
  }
  ASSERT_FALSE(tmp_.path().empty());
  dir_ = tmp_.path();
  auto opened = GetParam().open(dir_, options_);
  ASSERT_TRUE(opened.has_value()) << opened.error().ToString();
  storage_ = std::move(*opened);
}

void StorageConformanceTest::TearDown() {
  storage_.reset();
}

void StorageConformanceTest::Reopen() {
  storage_.reset();
  auto opened = GetParam().open(dir_, options_);
  ASSERT_TRUE(opened.has_value()) << opened.error().ToString();
  storage_ = std::move(*opened);
}

namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;


using conformance::Utilization;
MetricInfo Energy() {
  return MetricInfo{"gpu.energy", model::MetricKind::kCounter, "J", "Energy since boot.",
                    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 1000.0, "hw.energy",
                    model::EntityKind::kGpu};
}
MetricInfo NvlinkTx() {
  return MetricInfo{"gpu.nvlink.tx", model::MetricKind::kGauge, "By/s", "NVLink transmit.",
                    "warpscope_gpu_nvlink_tx_bytes_per_second", 1.0, "hw.gpu.io",
                    model::EntityKind::kGpu};
}

// Builds one window of one agent.
class Batch {
 public:
  Batch(std::string host, uint64_t sequence, base::TimePoint start,
        base::Duration length = seconds(10)) {
    b_.agent_id = "agent-" + host;
    b_.host = std::move(host);
    b_.sequence = sequence;
    b_.start = start;
    b_.end = start + length;
  }
  Batch& Agent(std::string id) {
    b_.agent_id = std::move(id);
    return *this;
  }
  Batch& Gpu(const std::string& id, const std::string& index,
             const std::string& model = "NVIDIA H100 80GB HBM3") {
    b_.entities.push_back(model::Entity{model::EntityKind::kGpu, id, "",
                                        {{"gpu.index", index}, {"gpu.model", model}}});
    return *this;
  }
  Batch& Entity(model::Entity e) {
    b_.entities.push_back(std::move(e));
    return *this;
  }
  Batch& Value(const MetricInfo& metric, const std::string& entity, double v,
               model::Labels labels = {}) {
    return Window(metric, entity, v, v, v, v, 1, std::move(labels));
  }
  Batch& Window(const MetricInfo& metric, const std::string& entity, double avg, double min,
                double max, double last, uint32_t count, model::Labels labels = {}) {
    Describe(metric);
    b_.series.push_back(IngestSeries{metric.key, entity, std::move(labels), avg, min, max, last,
                                     count});
    return *this;
  }
  Batch& Describe(const MetricInfo& metric) {
    for (const auto& m : b_.metrics) {
      if (m.key == metric.key) {
        return *this;
      }
    }
    b_.metrics.push_back(metric);
    return *this;
  }
  Batch& Tag(const std::string& k, const std::string& v) {
    b_.tags.Set(k, v);
    return *this;
  }
  Batch& Event(base::TimePoint t, const std::string& entity, const std::string& kind,
               int64_t code, const std::string& message) {
    b_.events.push_back(model::Event{t, entity, kind, code, message, {}});
    return *this;
  }
  operator const IngestBatch&() const { return b_; }
  IngestBatch& get() { return b_; }

 private:
  IngestBatch b_;
};

WriteResult Write(Storage& s, const IngestBatch& batch) {
  auto r = s.WriteBatch(batch);
  EXPECT_TRUE(r.has_value()) << r.error().ToString();
  return r.value_or(WriteResult{});
}

RangeResult Query(Storage& s, const RangeQuery& q) {
  auto r = s.QueryRange(q);
  EXPECT_TRUE(r.has_value()) << r.error().ToString();
  return r.value_or(RangeResult{});
}

RangeQuery Range(const std::string& metric, base::TimePoint start, base::TimePoint end,
                 base::Duration step, Aggregation a = Aggregation::kAvg) {
  RangeQuery q;
  q.metric = metric;
  q.start = start;
  q.end = end;
  q.step = step;
  q.aggregation = a;
  return q;
}

std::vector<double> Values(const RangeSeries& s) {
  std::vector<double> out;
  for (const Point& p : s.points) {
    out.push_back(p.value);
  }
  return out;
}

// Writes `windows` consecutive windows of `length` from `start` for one GPU; value(i) gives
// the i-th window's (avg, min, max, last, count) via `fill`.
template <typename Fill>
void WriteWindows(Storage& s, const std::string& host, const std::string& gpu,
                  const MetricInfo& metric, base::TimePoint start, base::Duration length,
                  int windows, uint64_t first_sequence, Fill fill) {
  for (int i = 0; i < windows; ++i) {
    Batch b(host, first_sequence + static_cast<uint64_t>(i), start + length * i, length);
    b.Gpu(gpu, "0");
    fill(b, metric, gpu, i);
    Write(s, b);
  }
}

void Constant(Batch& b, const MetricInfo& m, const std::string& gpu, int) {
  b.Value(m, gpu, 0.5);
}

// --- Writes and idempotency -------------------------------------------------------------------

TEST_P(StorageConformanceTest, WrittenWindowsAreReadBackRaw) {
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, seconds(10), 3, 1,
               [](Batch& b, const MetricInfo& m, const std::string& gpu, int i) {
                 b.Value(m, gpu, 0.1 * (i + 1));
               });

  RangeResult r = Query(storage(), Range("gpu.utilization", kT0, kT0 + seconds(30), seconds(10)));

  ASSERT_THAT(r.series, SizeIs(1));
  EXPECT_EQ(r.metric, Utilization());
  EXPECT_EQ(r.series[0].series.host, "h1");
  EXPECT_EQ(r.series[0].series.entity, "GPU-a");
  EXPECT_EQ(r.series[0].series.entity_kind, model::EntityKind::kGpu);
  EXPECT_EQ(r.series[0].series.entity_attributes.Get("gpu.index"), "0");
  ASSERT_THAT(r.series[0].points, SizeIs(3));
  EXPECT_EQ(r.series[0].points[1].time, kT0 + seconds(10));
  EXPECT_DOUBLE_EQ(r.series[0].points[2].value, 0.3);
  EXPECT_THAT(r.resolutions, ElementsAre(Resolution::kRaw));
}

TEST_P(StorageConformanceTest, RetriedBatchIsStoredOnce) {
  Batch first("h1", 7, kT0);
  first.Gpu("GPU-a", "0").Value(Utilization(), "GPU-a", 0.25);
  Batch retry("h1", 7, kT0);
  retry.Gpu("GPU-a", "0").Value(Utilization(), "GPU-a", 0.99);

  WriteResult a = Write(storage(), first);
  WriteResult b = Write(storage(), retry);

  EXPECT_EQ(a.stored, 1u);
  EXPECT_FALSE(a.duplicate);
  EXPECT_TRUE(b.duplicate);
  EXPECT_EQ(b.stored, 0u);
  RangeResult r = Query(storage(), Range("gpu.utilization", kT0, kT0 + minutes(1), seconds(10)));
  ASSERT_THAT(r.series, SizeIs(1));
  EXPECT_THAT(Values(r.series[0]), ElementsAre(0.25));
}

TEST_P(StorageConformanceTest, SameSequenceWithANewWindowIsARestartedAgent) {
  Batch before("h1", 1, kT0);
  before.Value(Utilization(), "GPU-a", 0.25);
  Batch after_restart("h1", 1, kT0 + seconds(30));
  after_restart.Value(Utilization(), "GPU-a", 0.75);

  Write(storage(), before);
  WriteResult r = Write(storage(), after_restart);

  EXPECT_FALSE(r.duplicate);
  RangeResult q = Query(storage(), Range("gpu.utilization", kT0, kT0 + minutes(1), seconds(10)));
  ASSERT_THAT(q.series, SizeIs(1));
  EXPECT_THAT(Values(q.series[0]), ElementsAre(0.25, 0.75));
}

TEST_P(StorageConformanceTest, DuplicateDetectionSurvivesReopen) {
  Batch b("h1", 3, kT0);
  b.Value(Utilization(), "GPU-a", 0.5);
  Write(storage(), b);

  Reopen();

  EXPECT_TRUE(Write(storage(), b).duplicate);
}

TEST_P(StorageConformanceTest, BatchWithoutAgentIdIsRefused) {
  Batch b("h1", 1, kT0);
  b.Agent("").Value(Utilization(), "GPU-a", 0.5);

  auto r = storage().WriteBatch(b);

  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), base::StatusCode::kInvalidArgument);
}

TEST_P(StorageConformanceTest, SeriesOfAnUndescribedMetricFailsTheWholeBatch) {
  Batch b("h1", 1, kT0);
  b.Value(Utilization(), "GPU-a", 0.5);
  b.get().series.push_back(IngestSeries{"gpu.unknown", "GPU-a", {}, 1, 1, 1, 1, 1});

  auto r = storage().WriteBatch(b);

  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), base::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.error().message(), ::testing::HasSubstr("gpu.unknown"));
  auto entities = storage().ListEntities({});
  ASSERT_TRUE(entities.has_value());
  EXPECT_THAT(*entities, IsEmpty());
}

TEST_P(StorageConformanceTest, NonFiniteValuesAreSkippedAndCounted) {
  Batch b("h1", 1, kT0);
  b.Value(Utilization(), "GPU-a", 0.5);
  b.Value(Utilization(), "GPU-b", std::nan(""));
  b.Window(Utilization(), "GPU-c", 1, 1, std::numeric_limits<double>::infinity(), 1, 1);

  WriteResult r = Write(storage(), b);

  EXPECT_EQ(r.stored, 1u);
  EXPECT_EQ(r.invalid_series, 2u);
}

// --- Cardinality cap --------------------------------------------------------------------------

TEST_P(StorageConformanceTest, CardinalityCapDropsNewSeriesAndKeepsExistingOnes) {
  options_.max_series_per_host = 2;
  Reopen();
  auto batch = [](uint64_t seq) {
    Batch b("h1", seq, kT0 + seconds(10) * static_cast<int>(seq));
    for (const char* link : {"0", "1", "2"}) {
      b.Value(NvlinkTx(), "GPU-a", 1.0, {{"link", link}});
    }
    return b;
  };

  WriteResult first = Write(storage(), batch(1));
  WriteResult second = Write(storage(), batch(2));
  Batch other_host("h2", 1, kT0);
  other_host.Value(NvlinkTx(), "GPU-z", 1.0, {{"link", "0"}});
  WriteResult other = Write(storage(), other_host);

  EXPECT_EQ(first.stored, 2u);
  EXPECT_EQ(first.dropped_series, 1u);
  EXPECT_EQ(second.stored, 2u);
  EXPECT_EQ(second.dropped_series, 1u);
  EXPECT_EQ(other.dropped_series, 0u);  // the cap is per host
  RangeQuery q = Range("gpu.nvlink.tx", kT0, kT0 + minutes(1), seconds(10));
  q.match.host = "h1";
  EXPECT_THAT(Query(storage(), q).series, SizeIs(2));
}

TEST_P(StorageConformanceTest, IdleSeriesStopCountingTowardsTheCapAfterCompact) {
  options_.max_series_per_host = 1;
  options_.series_active_window = hours(1);
  Reopen();
  Batch old("h1", 1, kT0);
  old.Value(Utilization(), "GPU-a", 0.5);
  Write(storage(), old);
  Batch refused("h1", 2, kT0 + seconds(10));
  refused.Value(Utilization(), "GPU-b", 0.5);
  ASSERT_EQ(Write(storage(), refused).dropped_series, 1u);

  ASSERT_TRUE(storage().Compact(kT0 + hours(2)).has_value());
  Batch later("h1", 3, kT0 + hours(2));
  later.Value(Utilization(), "GPU-b", 0.5);
  WriteResult r = Write(storage(), later);

  EXPECT_EQ(r.stored, 1u);
  EXPECT_EQ(r.dropped_series, 0u);
}

// --- Entities and metrics ---------------------------------------------------------------------

TEST_P(StorageConformanceTest, EntitiesHaveFirstAndLastSeen) {
  Batch w1("h1", 1, kT0);
  w1.Gpu("GPU-a", "0").Value(Utilization(), "GPU-a", 0.5);
  Batch w2("h1", 2, kT0 + seconds(10));
  w2.Value(Utilization(), "GPU-b", 0.5);
  Batch w3("h1", 3, kT0 + seconds(20));
  w3.Gpu("GPU-a", "0").Value(Utilization(), "GPU-a", 0.5);
  Write(storage(), w1);
  Write(storage(), w2);
  Write(storage(), w3);

  EntityQuery q;
  q.id_prefix = "GPU-a";
  auto r = storage().ListEntities(q);

  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_THAT(*r, SizeIs(1));
  EXPECT_EQ((*r)[0].first_seen, kT0);
  EXPECT_EQ((*r)[0].last_seen, kT0 + seconds(30));
  EXPECT_EQ((*r)[0].entity.kind, model::EntityKind::kGpu);
}

TEST_P(StorageConformanceTest, EntitiesOnlySeriesReferToTakeTheMetricsKind) {
  Batch b("h1", 1, kT0);
  b.Value(Utilization(), "GPU-x", 0.5);
  Write(storage(), b);

  EntityQuery q;
  q.kind = model::EntityKind::kGpu;
  auto r = storage().ListEntities(q);

  ASSERT_TRUE(r.has_value());
  ASSERT_THAT(*r, SizeIs(1));
  EXPECT_EQ((*r)[0].entity.id, "GPU-x");
}

TEST_P(StorageConformanceTest, HostEntityCarriesTheAgentTags) {
  Batch b("h1", 1, kT0);
  b.Tag("cluster", "west").Tag("host.name", "from-tag");
  b.Entity(model::Entity{model::EntityKind::kHost, "h1", "", {{"host.name", "h1"}}});
  Write(storage(), b);

  EntityQuery q;
  q.kind = model::EntityKind::kHost;
  auto r = storage().ListEntities(q);

  ASSERT_TRUE(r.has_value());
  ASSERT_THAT(*r, SizeIs(1));
  EXPECT_EQ((*r)[0].host, "h1");
  EXPECT_EQ((*r)[0].entity.attributes.Get("cluster"), "west");
  EXPECT_EQ((*r)[0].entity.attributes.Get("host.name"), "h1");  // the entity's own value wins
}

TEST_P(StorageConformanceTest, ListEntitiesFilters) {
  Batch h1("h1", 1, kT0);
  h1.Gpu("GPU-a1", "0", "H100").Gpu("GPU-a2", "1", "A100");
  h1.Entity(model::Entity{model::EntityKind::kProcess, "pid/42/100", "", {}});
  Batch h2("h2", 1, kT0 + hours(1));
  h2.Gpu("GPU-b1", "0", "H100");
  Write(storage(), h1);
  Write(storage(), h2);
  auto ids = [&](EntityQuery q) {
    std::vector<std::string> out;
    auto r = storage().ListEntities(q);
    EXPECT_TRUE(r.has_value());
    for (const auto& e : r.value_or(std::vector<EntityRecord>{})) {
      out.push_back(e.host + "/" + e.entity.id);
    }
    return out;
  };

  EntityQuery gpus;
  gpus.kind = model::EntityKind::kGpu;
  EXPECT_THAT(ids(gpus), ElementsAre("h1/GPU-a1", "h1/GPU-a2", "h2/GPU-b1"));
  EntityQuery on_h2;
  on_h2.host = "h2";
  EXPECT_THAT(ids(on_h2), ElementsAre("h2/GPU-b1", "h2/h2"));
  EntityQuery prefix;
  prefix.id_prefix = "GPU-a";
  EXPECT_THAT(ids(prefix), ElementsAre("h1/GPU-a1", "h1/GPU-a2"));
  EntityQuery contains;
  contains.id_contains = "/42/";
  EXPECT_THAT(ids(contains), ElementsAre("h1/pid/42/100"));
  EntityQuery h100;
  h100.attributes.Set("gpu.model", "H100");
  EXPECT_THAT(ids(h100), ElementsAre("h1/GPU-a1", "h2/GPU-b1"));
  EntityQuery recent;
  recent.seen_since = kT0 + minutes(30);
  recent.kind = model::EntityKind::kGpu;
  EXPECT_THAT(ids(recent), ElementsAre("h2/GPU-b1"));
  EntityQuery limited;
  limited.kind = model::EntityKind::kGpu;
  limited.limit = 1;
  EXPECT_THAT(ids(limited), ElementsAre("h1/GPU-a1"));
}

TEST_P(StorageConformanceTest, ListMetricsReturnsTheLatestDescriptions) {
  Batch a("h1", 1, kT0);
  a.Value(Utilization(), "GPU-a", 0.5).Value(Energy(), "GPU-a", 100);
  Write(storage(), a);
  MetricInfo changed = Utilization();
  changed.help = "Better help.";
  Batch b("h1", 2, kT0 + seconds(10));
  b.Value(changed, "GPU-a", 0.5);
  Write(storage(), b);

  auto r = storage().ListMetrics();

  ASSERT_TRUE(r.has_value());
  EXPECT_THAT(*r, ElementsAre(Energy(), changed));
}

// --- Range queries ----------------------------------------------------------------------------

TEST_P(StorageConformanceTest, AggregationsCombineTheWindowsOfAStep) {
  Batch w1("h1", 1, kT0);
  w1.Window(Utilization(), "GPU-a", 0.2, 0.1, 0.4, 0.3, 1);
  Batch w2("h1", 2, kT0 + seconds(30));
  w2.Window(Utilization(), "GPU-a", 0.6, 0.0, 0.9, 0.5, 3);
  Write(storage(), w1);
  Write(storage(), w2);
  auto one = [&](Aggregation a) {
    RangeResult r = Query(storage(), Range("gpu.utilization", kT0, kT0 + minutes(1), minutes(1), a));
    EXPECT_THAT(r.series, SizeIs(1));
    return r.series.empty() ? std::vector<double>{} : Values(r.series[0]);
  };

  EXPECT_THAT(one(Aggregation::kAvg), ElementsAre(::testing::DoubleEq((0.2 + 3 * 0.6) / 4)));
  // The samples behind an average: the windows' counts (1 + 3).
  RangeResult avg = Query(storage(), Range("gpu.utilization", kT0, kT0 + minutes(1), minutes(1)));
  ASSERT_THAT(avg.series, SizeIs(1));
  ASSERT_THAT(avg.series[0].points, SizeIs(1));
  EXPECT_EQ(avg.series[0].points[0].samples, 4u);
  EXPECT_THAT(one(Aggregation::kMin), ElementsAre(0.0));
  EXPECT_THAT(one(Aggregation::kMax), ElementsAre(0.9));
  EXPECT_THAT(one(Aggregation::kLast), ElementsAre(0.5));
}

TEST_P(StorageConformanceTest, StepBucketsAlignToMultiplesOfTheStep) {
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, seconds(10), 12, 1, Constant);

  RangeResult r = Query(storage(), Range("gpu.utilization", kT0 + seconds(25), kT0 + seconds(120),
                                        seconds(30)));

  ASSERT_THAT(r.series, SizeIs(1));
  std::vector<base::TimePoint> times;
  for (const Point& p : r.series[0].points) {
    times.push_back(p.time);
  }
  // The first bucket starts at the multiple of 30 s at or before the start.
  EXPECT_THAT(times, ElementsAre(kT0, kT0 + seconds(30), kT0 + seconds(60), kT0 + seconds(90)));
}

TEST_P(StorageConformanceTest, MissingWindowsAreAbsentNotZero) {
  Batch w1("h1", 1, kT0);
  w1.Value(Utilization(), "GPU-a", 0.5);
  Batch w3("h1", 3, kT0 + seconds(20));
  w3.Value(Utilization(), "GPU-a", 0.7);
  Write(storage(), w1);
  Write(storage(), w3);

  RangeResult r = Query(storage(), Range("gpu.utilization", kT0, kT0 + seconds(30), seconds(10)));

  ASSERT_THAT(r.series, SizeIs(1));
  ASSERT_THAT(r.series[0].points, SizeIs(2));
  EXPECT_EQ(r.series[0].points[1].time, kT0 + seconds(20));
}

TEST_P(StorageConformanceTest, CounterLastIsTheCumulativeValueAndRateIsPerSecond) {
  // 10 W: +100 J per 10 s window.
  WriteWindows(storage(), "h1", "GPU-a", Energy(), kT0, seconds(10), 30, 1,
               [](Batch& b, const MetricInfo& m, const std::string& gpu, int i) {
                 b.Value(m, gpu, 1000.0 + 100.0 * i);
               });

  RangeResult last = Query(storage(), Range("gpu.energy", kT0, kT0 + minutes(5), minutes(1),
                                           Aggregation::kLast));
  RangeResult rate = Query(storage(), Range("gpu.energy", kT0 + minutes(1), kT0 + minutes(5),
                                           minutes(1), Aggregation::kRate));

  ASSERT_THAT(last.series, SizeIs(1));
  EXPECT_THAT(Values(last.series[0]), ElementsAre(1500, 2100, 2700, 3300, 3900));
  ASSERT_THAT(rate.series, SizeIs(1));
  EXPECT_THAT(Values(rate.series[0]), ElementsAre(::testing::DoubleEq(10), ::testing::DoubleEq(10),
                                                  ::testing::DoubleEq(10), ::testing::DoubleEq(10)));
}

TEST_P(StorageConformanceTest, MatchersSelectSeries) {
  for (const char* host : {"h1", "h2"}) {
    Batch b(host, 1, kT0);
    b.Gpu(std::string("GPU-") + host + "-0", "0", "H100");
    b.Gpu(std::string("GPU-") + host + "-1", "1", "A100");
    for (const char* gpu : {"-0", "-1"}) {
      for (const char* link : {"0", "1"}) {
        b.Value(NvlinkTx(), std::string("GPU-") + host + gpu, 1.0, {{"link", link}});
      }
    }
    Write(storage(), b);
  }
  auto count = [&](SeriesMatcher m) {
    RangeQuery q = Range("gpu.nvlink.tx", kT0, kT0 + minutes(1), seconds(10));
    q.match = std::move(m);
    return Query(storage(), q).series.size();
  };

  EXPECT_EQ(count({}), 8u);
  EXPECT_EQ(count({.host = "h2"}), 4u);
  EXPECT_EQ(count({.entity = "GPU-h1-1"}), 2u);
  EXPECT_EQ(count({.entity_kind = model::EntityKind::kGpu}), 8u);
  EXPECT_EQ(count({.entity_kind = model::EntityKind::kProcess}), 0u);
  EXPECT_EQ(count({.labels = {{"link", "1"}}}), 4u);
  EXPECT_EQ(count({.entity_attributes = {{"gpu.model", "A100"}}}), 4u);
  EXPECT_EQ(count({.host = "h1", .labels = {{"link", "0"}}, .entity_attributes = {{"gpu.index", "0"}}}),
            1u);
}

TEST_P(StorageConformanceTest, SeriesAreOrderedByHostEntityAndLabels) {
  Batch b("h2", 1, kT0);
  b.Value(NvlinkTx(), "GPU-b", 1, {{"link", "1"}});
  b.Value(NvlinkTx(), "GPU-b", 1, {{"link", "0"}});
  b.Value(NvlinkTx(), "GPU-a", 1, {{"link", "0"}});
  Batch c("h1", 1, kT0);
  c.Value(NvlinkTx(), "GPU-z", 1, {{"link", "0"}});
  Write(storage(), b);
  Write(storage(), c);

  RangeResult r = Query(storage(), Range("gpu.nvlink.tx", kT0, kT0 + minutes(1), seconds(10)));

  std::vector<std::string> order;
  for (const auto& s : r.series) {
    order.push_back(s.series.host + "/" + s.series.entity + "/" +
                    std::string(s.series.labels.Get("link")));
  }
  EXPECT_THAT(order, ElementsAre("h1/GPU-z/0", "h2/GPU-a/0", "h2/GPU-b/0", "h2/GPU-b/1"));
}

TEST_P(StorageConformanceTest, UnknownMetricIsNotFound) {
  auto r = storage().QueryRange(Range("gpu.nope", kT0, kT0 + minutes(1), seconds(10)));

  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), base::StatusCode::kNotFound);
}

TEST_P(StorageConformanceTest, TooManyPointsIsAnErrorNamingTheStep) {
  Batch b("h1", 1, kT0);
  b.Value(Utilization(), "GPU-a", 0.5);
  Write(storage(), b);
  RangeQuery q = Range("gpu.utilization", kT0, kT0 + hours(24), seconds(1));
  q.max_points = 1000;

  auto r = storage().QueryRange(q);

  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), base::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.error().message(), ::testing::HasSubstr("step"));
}

// --- Rollups, compaction, retention -----------------------------------------------------------

TEST_P(StorageConformanceTest, MinuteRollupsGiveTheSameAnswersAsRawWindows) {
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, seconds(10), 120, 1,
               [](Batch& b, const MetricInfo& m, const std::string& gpu, int i) {
                 double v = 0.01 * (i % 17);
                 b.Window(m, gpu, v, v - 0.5, v + 0.5 * (i % 5), v + 0.25,
                          static_cast<uint32_t>(1 + i % 4));
               });
  std::vector<std::vector<double>> before;
  for (Aggregation a : {Aggregation::kAvg, Aggregation::kMin, Aggregation::kMax,
                        Aggregation::kLast}) {
    RangeResult r = Query(storage(), Range("gpu.utilization", kT0, kT0 + minutes(20), minutes(2), a));
    ASSERT_THAT(r.series, SizeIs(1));
    EXPECT_THAT(r.resolutions, ElementsAre(Resolution::kRaw));
    before.push_back(Values(r.series[0]));
  }
  auto samples = [&] {
    RangeResult r = Query(storage(), Range("gpu.utilization", kT0, kT0 + minutes(20), minutes(2)));
    std::vector<uint64_t> out;
    for (const Point& p : r.series.empty() ? std::vector<Point>{} : r.series[0].points) {
      out.push_back(p.samples);
    }
    return out;
  };
  const std::vector<uint64_t> samples_before = samples();
  // 12 windows per 2-minute bucket, counts 1 + i % 4: 30 samples in each.
  EXPECT_THAT(samples_before, ::testing::Each(30u));

  ASSERT_TRUE(storage().Compact(kT0 + minutes(30)).has_value());

  size_t i = 0;
  for (Aggregation a : {Aggregation::kAvg, Aggregation::kMin, Aggregation::kMax,
                        Aggregation::kLast}) {
    RangeResult r = Query(storage(), Range("gpu.utilization", kT0, kT0 + minutes(20), minutes(2), a));
    ASSERT_THAT(r.series, SizeIs(1));
    EXPECT_THAT(r.resolutions, ElementsAre(Resolution::kMinute)) << AggregationName(a);
    std::vector<double> after = Values(r.series[0]);
    ASSERT_EQ(after.size(), before[i].size());
    for (size_t k = 0; k < after.size(); ++k) {
      EXPECT_NEAR(after[k], before[i][k], 1e-9) << AggregationName(a) << " bucket " << k;
    }
    ++i;
  }
  EXPECT_EQ(samples(), samples_before);
}

TEST_P(StorageConformanceTest, SpikeShorterThanAWindowSurvivesInTheMaxOfEveryResolution) {
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, minutes(1), 180, 1,
               [](Batch& b, const MetricInfo& m, const std::string& gpu, int i) {
                 b.Window(m, gpu, 0.5, 0.4, i == 95 ? 1.0 : 0.6, 0.5, 60);
               });
  ASSERT_TRUE(storage().Compact(kT0 + hours(4)).has_value());

  RangeResult minute = Query(storage(), Range("gpu.utilization", kT0 + minutes(90),
                                             kT0 + minutes(100), minutes(5), Aggregation::kMax));
  RangeResult hour = Query(storage(), Range("gpu.utilization", kT0, kT0 + hours(3), hours(1),
                                           Aggregation::kMax));

  ASSERT_THAT(minute.series, SizeIs(1));
  EXPECT_THAT(minute.resolutions, ElementsAre(Resolution::kMinute));
  EXPECT_THAT(Values(minute.series[0]), ElementsAre(0.6, 1.0));
  ASSERT_THAT(hour.series, SizeIs(1));
  EXPECT_THAT(hour.resolutions, ElementsAre(Resolution::kHour));
  EXPECT_THAT(Values(hour.series[0]), ElementsAre(0.6, 1.0, 0.6));
}

TEST_P(StorageConformanceTest, HourRollupsAverageByCount) {
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, minutes(1), 120, 1,
               [](Batch& b, const MetricInfo& m, const std::string& gpu, int i) {
                 // First half-hour: value 1 from 3 samples per window; the rest: 0 from 1.
                 if (i < 30) {
                   b.Window(m, gpu, 1, 1, 1, 1, 3);
                 } else {
                   b.Window(m, gpu, 0, 0, 0, 0, 1);
                 }
               });
  ASSERT_TRUE(storage().Compact(kT0 + hours(3)).has_value());

  RangeResult r = Query(storage(), Range("gpu.utilization", kT0, kT0 + hours(1), hours(1)));

  ASSERT_THAT(r.series, SizeIs(1));
  EXPECT_THAT(r.resolutions, ElementsAre(Resolution::kHour));
  EXPECT_THAT(Values(r.series[0]), ElementsAre(::testing::DoubleEq(90.0 / 120.0)));
}

TEST_P(StorageConformanceTest, RecentDataComesFromRawWhereRollupsDoNotExistYet) {
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, seconds(10), 60, 1, Constant);
  ASSERT_TRUE(storage().Compact(kT0 + minutes(7)).has_value());  // rolls up minutes 0..4

  RangeResult r = Query(storage(), Range("gpu.utilization", kT0, kT0 + minutes(10), minutes(1)));

  ASSERT_THAT(r.series, SizeIs(1));
  EXPECT_THAT(r.resolutions, ElementsAre(Resolution::kRaw, Resolution::kMinute));
  EXPECT_THAT(r.series[0].points, SizeIs(10));
}

TEST_P(StorageConformanceTest, CounterRateWorksFromRollups) {
  WriteWindows(storage(), "h1", "GPU-a", Energy(), kT0, seconds(10), 360, 1,
               [](Batch& b, const MetricInfo& m, const std::string& gpu, int i) {
                 b.Value(m, gpu, 100.0 * i);
               });
  ASSERT_TRUE(storage().Compact(kT0 + hours(2)).has_value());

  RangeResult r = Query(storage(), Range("gpu.energy", kT0 + minutes(10), kT0 + minutes(50),
                                        minutes(10), Aggregation::kRate));

  ASSERT_THAT(r.series, SizeIs(1));
  EXPECT_THAT(r.resolutions, ElementsAre(Resolution::kMinute));
  for (double v : Values(r.series[0])) {
    EXPECT_NEAR(v, 10.0, 1e-9);
  }
  EXPECT_THAT(r.series[0].points, SizeIs(4));
}

TEST_P(StorageConformanceTest, LateWindowIsRolledUpAtTheNextCompact) {
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, minutes(1), 10, 1, Constant);
  ASSERT_TRUE(storage().Compact(kT0 + minutes(15)).has_value());
  Batch late("h1", 100, kT0 + minutes(3) + seconds(30), seconds(30));
  late.Window(Utilization(), "GPU-a", 0.5, 0.5, 0.95, 0.5, 30);
  Write(storage(), late);

  ASSERT_TRUE(storage().Compact(kT0 + minutes(16)).has_value());
  RangeResult r = Query(storage(), Range("gpu.utilization", kT0, kT0 + minutes(10), minutes(1),
                                        Aggregation::kMax));

  ASSERT_THAT(r.series, SizeIs(1));
  EXPECT_THAT(r.resolutions, ElementsAre(Resolution::kMinute));
  EXPECT_THAT(Values(r.series[0]),
              ElementsAre(0.5, 0.5, 0.5, 0.95, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5));
}

TEST_P(StorageConformanceTest, LateWindowReachesHourRollupsThatWereAlreadyBuilt) {
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, minutes(1), 120, 1, Constant);
  ASSERT_TRUE(storage().Compact(kT0 + hours(3)).has_value());
  Batch late("h1", 1000, kT0 + minutes(30) + seconds(10), seconds(10));
  late.Window(Utilization(), "GPU-a", 0.5, 0.5, 0.99, 0.5, 10);
  Write(storage(), late);

  ASSERT_TRUE(storage().Compact(kT0 + hours(3) + minutes(1)).has_value());
  RangeResult r = Query(storage(), Range("gpu.utilization", kT0, kT0 + hours(2), hours(1),
                                        Aggregation::kMax));

  ASSERT_THAT(r.series, SizeIs(1));
  EXPECT_THAT(r.resolutions, ElementsAre(Resolution::kHour));
  EXPECT_THAT(Values(r.series[0]), ElementsAre(0.99, 0.5));
}

// An agent's backlog after an outage lands behind the rollups: reads see it before the next
// Compact rebuilds them (from finer data), and the same after.
TEST_P(StorageConformanceTest, LateWindowIsReadBeforeTheNextCompact) {
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, minutes(1), 10, 1, Constant);
  ASSERT_TRUE(storage().Compact(kT0 + minutes(15)).has_value());
  Batch late("h1", 100, kT0 + minutes(3) + seconds(30), seconds(30));
  late.Window(Utilization(), "GPU-a", 0.5, 0.5, 0.95, 0.5, 30);
  Write(storage(), late);
  const RangeQuery minutes_query =
      Range("gpu.utilization", kT0, kT0 + minutes(10), minutes(1), Aggregation::kMax);
  const std::vector<double> want = {0.5, 0.5, 0.5, 0.95, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5};

  RangeResult before = Query(storage(), minutes_query);

  ASSERT_THAT(before.series, SizeIs(1));
  EXPECT_THAT(Values(before.series[0]), ElementsAreArray(want));
  EXPECT_THAT(before.resolutions, Contains(Resolution::kRaw));
  ASSERT_TRUE(storage().Compact(kT0 + minutes(16)).has_value());
  RangeResult after = Query(storage(), minutes_query);
  EXPECT_THAT(Values(after.series[0]), ElementsAreArray(want));
  EXPECT_THAT(after.resolutions, ElementsAre(Resolution::kMinute));
}

TEST_P(StorageConformanceTest, LateWindowInABuiltHourIsReadBeforeTheNextCompact) {
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, minutes(1), 120, 1, Constant);
  ASSERT_TRUE(storage().Compact(kT0 + hours(3)).has_value());
  Batch late("h1", 1000, kT0 + minutes(30) + seconds(10), seconds(10));
  late.Window(Utilization(), "GPU-a", 0.5, 0.5, 0.99, 0.5, 10);
  Write(storage(), late);

  RangeResult r = Query(storage(), Range("gpu.utilization", kT0, kT0 + hours(2), hours(1),
                                        Aggregation::kMax));

  ASSERT_THAT(r.series, SizeIs(1));
  EXPECT_THAT(Values(r.series[0]), ElementsAre(0.99, 0.5));
}

TEST_P(StorageConformanceTest, CompactTwiceAtTheSameTimeDoesNothingMore) {
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, seconds(10), 30, 1, Constant);
  auto first = storage().Compact(kT0 + minutes(10));
  auto second = storage().Compact(kT0 + minutes(10));

  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(first->minute_rows, 5u);
  EXPECT_EQ(second->minute_rows, 0u);
  EXPECT_EQ(second->hour_rows, 0u);
}

TEST_P(StorageConformanceTest, ExpiredRawDataIsServedFromMinuteRollups) {
  options_.raw_retention = hours(24);
  options_.minute_retention = hours(48);
  options_.hour_retention = hours(72);
  Reopen();
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, seconds(10), 60, 1, Constant);
  ASSERT_TRUE(storage().Compact(kT0 + hours(1)).has_value());

  ASSERT_TRUE(storage().Compact(kT0 + hours(26)).has_value());
  RangeResult r = Query(storage(), Range("gpu.utilization", kT0, kT0 + minutes(10), seconds(10)));

  ASSERT_THAT(r.series, SizeIs(1));
  EXPECT_THAT(r.resolutions, ElementsAre(Resolution::kMinute));
  EXPECT_THAT(r.series[0].points, SizeIs(10));  // one per minute
}

TEST_P(StorageConformanceTest, WindowOlderThanRawRetentionIsRefused) {
  options_.raw_retention = hours(24);
  options_.minute_retention = hours(48);
  options_.hour_retention = hours(72);
  Reopen();
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, seconds(10), 6, 1, Constant);
  ASSERT_TRUE(storage().Compact(kT0 + hours(26)).has_value());
  Batch ancient("h1", 500, kT0 + minutes(5));
  ancient.Value(Utilization(), "GPU-a", 0.5);

  auto r = storage().WriteBatch(ancient);

  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), base::StatusCode::kInvalidArgument);
}

TEST_P(StorageConformanceTest, RetentionRemovesEverythingPastTheLongestResolution) {
  options_.raw_retention = hours(24);
  options_.minute_retention = hours(48);
  options_.hour_retention = hours(72);
  options_.event_retention = hours(72);
  options_.profile_retention = hours(72);
  Reopen();
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, minutes(1), 120, 1, Constant);
  Batch ev("h1", 1000, kT0 + hours(2));
  ev.Event(kT0 + hours(2), "GPU-a", "xid", 79, "fallen off the bus");
  Write(storage(), ev);
  ASSERT_TRUE(storage()
                  .WriteProfile(ProfileMeta{.host = "h1", .kind = "cpu", .start = kT0,
                                            .end = kT0 + minutes(1)},
                                "pprof")
                  .has_value());
  ASSERT_TRUE(storage().Compact(kT0 + hours(3)).has_value());

  auto compact = storage().Compact(kT0 + hours(24 * 4));

  ASSERT_TRUE(compact.has_value()) << compact.error().ToString();
  EXPECT_GT(compact->deleted_rows, 0u);
  RangeResult r = Query(storage(), Range("gpu.utilization", kT0, kT0 + hours(3), hours(1)));
  EXPECT_THAT(r.series, IsEmpty());
  auto stats = storage().Stats();
  ASSERT_TRUE(stats.has_value());
  for (const TableStats& t : stats->tables) {
    if (t.name == "samples" || t.name == "sample_chunks" || t.name == "head_chunks" ||
        t.name == "rollup_1m" || t.name == "rollup_1m_chunks" || t.name == "rollup_1h" ||
        t.name == "series" || t.name == "events" || t.name == "profiles") {
      EXPECT_EQ(t.rows, 0u) << t.name;
    }
  }
  EntityQuery gpus;
  gpus.kind = model::EntityKind::kGpu;
  auto entities = storage().ListEntities(gpus);
  ASSERT_TRUE(entities.has_value());
  EXPECT_THAT(*entities, IsEmpty());
}

// --- Top entities -----------------------------------------------------------------------------

TEST_P(StorageConformanceTest, TopEntitiesRankByTheAggregateWithTheLatestValue) {
  const double avgs[] = {0.2, 0.9, 0.5};
  for (int w = 0; w < 5; ++w) {
    Batch b("h1", static_cast<uint64_t>(w + 1), kT0 + seconds(10) * w);
    for (int g = 0; g < 3; ++g) {
      std::string id = "GPU-" + std::to_string(g);
      b.Gpu(id, std::to_string(g));
      double last = w == 4 ? 0.01 * (g + 1) : avgs[g];
      b.Window(Utilization(), id, avgs[g], avgs[g], avgs[g], last, 1);
    }
    Write(storage(), b);
  }
  TopQuery q;
  q.metric = "gpu.utilization";
  q.match.entity_kind = model::EntityKind::kGpu;
  q.start = kT0;
  q.end = kT0 + minutes(1);
  q.limit = 2;

  auto top = storage().TopEntities(q);
  q.ascending = true;
  auto bottom = storage().TopEntities(q);

  ASSERT_TRUE(top.has_value()) << top.error().ToString();
  ASSERT_THAT(*top, SizeIs(2));
  EXPECT_EQ((*top)[0].entity, "GPU-1");
  EXPECT_DOUBLE_EQ((*top)[0].value, 0.9);
  EXPECT_DOUBLE_EQ((*top)[0].latest, 0.02);
  EXPECT_EQ((*top)[0].latest_time, kT0 + seconds(40));
  EXPECT_EQ((*top)[0].entity_attributes.Get("gpu.index"), "1");
  EXPECT_EQ((*top)[1].entity, "GPU-2");
  ASSERT_TRUE(bottom.has_value());
  EXPECT_EQ((*bottom)[0].entity, "GPU-0");
}

TEST_P(StorageConformanceTest, TopEntitiesUseRollupsForLongRanges) {
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, minutes(1), 180, 1,
               [](Batch& b, const MetricInfo& m, const std::string& gpu, int i) {
                 b.Window(m, gpu, 0.5, 0.5, i == 100 ? 0.97 : 0.5, 0.5, 1);
               });
  ASSERT_TRUE(storage().Compact(kT0 + hours(4)).has_value());
  TopQuery q;
  q.metric = "gpu.utilization";
  q.start = kT0;
  q.end = kT0 + hours(3);
  q.aggregation = Aggregation::kMax;

  auto top = storage().TopEntities(q);

  ASSERT_TRUE(top.has_value());
  ASSERT_THAT(*top, SizeIs(1));
  EXPECT_DOUBLE_EQ((*top)[0].value, 0.97);
}

// --- Events -----------------------------------------------------------------------------------

TEST_P(StorageConformanceTest, EventsAreFilteredAndNewestFirst) {
  Batch b("h1", 1, kT0, minutes(1));
  b.Event(kT0 + seconds(5), "GPU-a", "xid", 79, "GPU has fallen off the bus");
  b.Event(kT0 + seconds(15), "GPU-a", "gpu_lost", 0, "lost");
  b.Event(kT0 + seconds(25), "GPU-b", "xid", 48, "DBE");
  Write(storage(), b);
  auto kinds = [&](EventQuery q) {
    std::vector<std::string> out;
    auto r = storage().QueryEvents(q);
    EXPECT_TRUE(r.has_value());
    for (const auto& e : r.value_or(std::vector<EventRecord>{})) {
      out.push_back(e.event.entity + ":" + e.event.kind + ":" + std::to_string(e.event.code));
    }
    return out;
  };
  EventQuery all{.start = kT0, .end = kT0 + minutes(1)};

  EXPECT_THAT(kinds(all), ElementsAre("GPU-b:xid:48", "GPU-a:gpu_lost:0", "GPU-a:xid:79"));
  EventQuery xids = all;
  xids.kind = "xid";
  EXPECT_THAT(kinds(xids), ElementsAre("GPU-b:xid:48", "GPU-a:xid:79"));
  EventQuery gpu_a = all;
  gpu_a.entity = "GPU-a";
  gpu_a.limit = 1;
  EXPECT_THAT(kinds(gpu_a), ElementsAre("GPU-a:gpu_lost:0"));
  EventQuery window{.start = kT0 + seconds(10), .end = kT0 + seconds(20)};
  EXPECT_THAT(kinds(window), ElementsAre("GPU-a:gpu_lost:0"));
  EventQuery other_host = all;
  other_host.host = "h2";
  EXPECT_THAT(kinds(other_host), IsEmpty());
  auto full = storage().QueryEvents(xids);
  ASSERT_TRUE(full.has_value());
  EXPECT_EQ((*full)[1].host, "h1");
  EXPECT_EQ((*full)[1].event.message, "GPU has fallen off the bus");
  EXPECT_EQ((*full)[1].event.time, kT0 + seconds(5));
}

// --- Durability, stats, concurrency -----------------------------------------------------------

TEST_P(StorageConformanceTest, ReopenKeepsEverythingAndContinuesTheSameSeries) {
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, seconds(10), 3, 1, Constant);
  Batch ev("h1", 10, kT0 + seconds(30));
  ev.Event(kT0 + seconds(31), "GPU-a", "xid", 13, "SM exception");
  Write(storage(), ev);
  ASSERT_TRUE(storage()
                  .WriteProfile(ProfileMeta{.host = "h1", .kind = "cpu", .start = kT0,
                                            .end = kT0 + minutes(1)},
                                "pprof")
                  .has_value());

  Reopen();
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0 + seconds(40), seconds(10), 1, 11,
               Constant);

  RangeResult r = Query(storage(), Range("gpu.utilization", kT0, kT0 + minutes(1), seconds(10)));
  ASSERT_THAT(r.series, SizeIs(1));
  EXPECT_THAT(r.series[0].points, SizeIs(4));
  auto metrics = storage().ListMetrics();
  ASSERT_TRUE(metrics.has_value());
  EXPECT_THAT(*metrics, ElementsAre(Utilization()));
  auto events = storage().QueryEvents({.start = kT0, .end = kT0 + minutes(1)});
  ASSERT_TRUE(events.has_value());
  EXPECT_THAT(*events, SizeIs(1));
  auto profiles = storage().ListProfiles({.start = kT0, .end = kT0 + minutes(1)});
  ASSERT_TRUE(profiles.has_value());
  EXPECT_THAT(*profiles, SizeIs(1));
  EntityQuery gpus;
  gpus.kind = model::EntityKind::kGpu;
  auto entities = storage().ListEntities(gpus);
  ASSERT_TRUE(entities.has_value());
  ASSERT_THAT(*entities, SizeIs(1));
  EXPECT_EQ((*entities)[0].last_seen, kT0 + seconds(50));
}

TEST_P(StorageConformanceTest, CompactionStateSurvivesReopen) {
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, seconds(10), 60, 1, Constant);
  ASSERT_TRUE(storage().Compact(kT0 + minutes(20)).has_value());

  Reopen();
  auto again = storage().Compact(kT0 + minutes(20));

  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->minute_rows, 0u);
  RangeResult r = Query(storage(), Range("gpu.utilization", kT0, kT0 + minutes(10), minutes(1)));
  EXPECT_THAT(r.resolutions, ElementsAre(Resolution::kMinute));
}

TEST_P(StorageConformanceTest, StatsCountRowsAndBytes) {
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, seconds(10), 5, 1, Constant);

  auto stats = storage().Stats();

  ASSERT_TRUE(stats.has_value()) << stats.error().ToString();
  EXPECT_GT(stats->total_bytes, 0u);
  EXPECT_EQ(stats->raw_windows, 5u);
  // The raw windows' tables: a row per window (samples), or compressed runs of them
  // (head_chunks, SQLite's head).
  uint64_t raw_rows = 0;
  uint64_t raw_bytes = 0;
  for (const TableStats& t : stats->tables) {
    if (t.name == "samples" || t.name == "head_chunks") {
      raw_rows += t.rows;
      raw_bytes += t.bytes;
    }
  }
  EXPECT_GE(raw_rows, 1u);
  EXPECT_LE(raw_rows, 5u);
  EXPECT_GT(raw_bytes, 0u);
}

TEST_P(StorageConformanceTest, ReadsRunWhileAnotherThreadWrites) {
  Batch seed("h1", 1, kT0);
  seed.Value(Utilization(), "GPU-a", 0.5);
  Write(storage(), seed);
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::atomic<int> failures{0};
  std::thread reader([&] {
    while (!done.load() || reads.load() == 0) {
      auto r = storage().QueryRange(Range("gpu.utilization", kT0, kT0 + hours(1), seconds(10)));
      if (!r.has_value() || r->series.size() != 1) {
        ++failures;
      }
      ++reads;
    }
  });

  for (int i = 1; i <= 200; ++i) {
    Batch b("h1", static_cast<uint64_t>(i + 1), kT0 + seconds(10) * i);
    b.Value(Utilization(), "GPU-a", 0.5);
    Write(storage(), b);
  }
  done = true;
  reader.join();

  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(reads.load(), 0);
  RangeResult r = Query(storage(), Range("gpu.utilization", kT0, kT0 + hours(1), seconds(10)));
  ASSERT_THAT(r.series, SizeIs(1));
  EXPECT_THAT(r.series[0].points, SizeIs(201));
}

TEST_P(StorageConformanceTest, CompactRunsWhileAnotherThreadWrites) {
  WriteWindows(storage(), "h1", "GPU-a", Utilization(), kT0, seconds(10), 120, 1, Constant);
  std::thread writer([&] {
    for (int i = 0; i < 60; ++i) {
      Batch b("h2", static_cast<uint64_t>(i + 1), kT0 + seconds(10) * i);
      b.Value(Utilization(), "GPU-b", 0.25);
      Write(storage(), b);
    }
  });
  auto compact = storage().Compact(kT0 + minutes(30));
  writer.join();
  ASSERT_TRUE(compact.has_value());
  ASSERT_TRUE(storage().Compact(kT0 + minutes(31)).has_value());

  RangeQuery q = Range("gpu.utilization", kT0, kT0 + minutes(10), minutes(1));
  q.match.host = "h2";
  RangeResult r = Query(storage(), q);

  // Whatever the interleaving, h2's windows end up in its minute rollups.
  ASSERT_THAT(r.series, SizeIs(1));
  EXPECT_THAT(r.resolutions, ElementsAre(Resolution::kMinute));
  EXPECT_THAT(Values(r.series[0]), ElementsAre(0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25,
                                               0.25, 0.25));
}

}  // namespace
}  // namespace warpscope::server
