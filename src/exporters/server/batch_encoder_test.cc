// SPDX-License-Identifier: Apache-2.0
// Encodes frames and decodes the bytes back with the generated classes, field by field.
#include "exporters/server/batch_encoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "exporters/testing/sample_frame.h"

namespace warpscope::exporters {
namespace {

const model::MetricDesc kTemp{.key = "gpu.temperature",
                              .entity = model::EntityKind::kGpu,
                              .kind = model::MetricKind::kGauge,
                              .unit = "Cel",
                              .help = "GPU temperature.",
                              .prom_name = "DCGM_FI_DEV_GPU_TEMP",
                              .prom_scale = 1.0,
                              .otel_name = "hw.gpu.temperature"};
const model::MetricDesc kEnergy{.key = "gpu.energy",
                                .entity = model::EntityKind::kGpu,
                                .kind = model::MetricKind::kCounter,
                                .unit = "J",
                                .help = "Energy since driver load.",
                                .prom_name = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                                .prom_scale = 1000.0,
                                .otel_name = "hw.energy"};

constexpr int64_t kStart = 1'700'000'000'000'000'000;
constexpr int64_t kEnd = kStart + 60'000'000'000;

model::Frame MakeFrame() {
  model::Frame f;
  f.start = base::FromUnixNanos(kStart);
  f.end = base::FromUnixNanos(kEnd);
  f.sequence = 7;  // the aggregator's count; not what goes on the wire
  f.entities = {
      {model::EntityKind::kHost, "node1", "", {{"host.name", "node1"}}},
      {model::EntityKind::kGpu, "GPU-a", "", {{"gpu.index", "0"}, {"gpu.model", "H100"}}},
      {model::EntityKind::kMigInstance, "MIG-b", "GPU-a", {{"mig.profile", "1g.10gb"}}},
      {model::EntityKind::kContainer, "ctr/abc", "", {{"container.id", "abc"}}},
      {model::EntityKind::kProcess, "pid/42/1000", "ctr/abc", {{"process.pid", "42"}}},
      {model::EntityKind::kExecutable, "exe/usr/bin/python3", "", {}},
  };
  model::SeriesPoint temp;
  temp.metric = &kTemp;
  temp.entity = "GPU-a";
  temp.avg = 55.5;
  temp.min = 50;
  temp.max = 61.25;
  temp.last = 60;
  temp.count = 12;
  temp.last_time = base::FromUnixNanos(kEnd - 1'000'000'000);
  model::SeriesPoint energy;
  energy.metric = &kEnergy;
  energy.entity = "GPU-a";
  energy.avg = energy.min = energy.max = energy.last = 1.5e6;
  energy.count = 12;
  energy.last_time = base::FromUnixNanos(kEnd - 2);
  model::SeriesPoint temp_mig = temp;
  temp_mig.entity = "MIG-b";
  temp_mig.labels = {{"sensor", "hbm"}, {"a", "first"}};
  temp_mig.avg = std::numeric_limits<double>::quiet_NaN();
  model::SeriesPoint orphan;  // no metric: skipped
  orphan.entity = "GPU-a";
  f.series = {temp, energy, orphan, temp_mig};
  model::Event xid;
  xid.time = base::FromUnixNanos(kStart + 5);
  xid.entity = "GPU-a";
  xid.kind = "xid";
  xid.code = 79;
  xid.message = "GPU has fallen off the bus";
  xid.attributes = {{"pid", "42"}};
  f.events = {xid};
  return f;
}

v1::Batch Decode(const std::string& bytes) {
  v1::Batch b;
  EXPECT_TRUE(b.ParseFromString(bytes));
  return b;
}

TEST(BatchEncoderTest, HeaderCarriesVersionAgentSequenceWindowHostAndTags) {
  BatchEncoder encoder({.agent_id = "agent-7", .tags = {{"team", "ml"}, {"zone", "a"}}});
  v1::Batch b = Decode(encoder.Encode(MakeFrame(), 123456789012345ULL));

  EXPECT_EQ(b.version(), 1u);
  EXPECT_EQ(b.agent_id(), "agent-7");
  EXPECT_EQ(b.sequence(), 123456789012345ULL);
  EXPECT_EQ(b.start_unix_nano(), kStart);
  EXPECT_EQ(b.end_unix_nano(), kEnd);
  EXPECT_EQ(b.host(), "node1");  // from the host entity
  ASSERT_EQ(b.tags_size(), 2);
  EXPECT_EQ(b.tags(0).key(), "team");
  EXPECT_EQ(b.tags(0).value(), "ml");
  EXPECT_EQ(b.tags(1).key(), "zone");
  EXPECT_EQ(b.tags(1).value(), "a");
}

TEST(BatchEncoderTest, HostOptionOverridesTheHostEntity) {
  BatchEncoder encoder({.agent_id = "a", .host = "override"});
  EXPECT_EQ(Decode(encoder.Encode(MakeFrame(), 1)).host(), "override");
  model::Frame no_host = MakeFrame();
  no_host.entities.erase(no_host.entities.begin());
  EXPECT_EQ(Decode(BatchEncoder({.agent_id = "a"}).Encode(no_host, 1)).host(), "");
}

TEST(BatchEncoderTest, EntitiesKeepKindIdParentAndAttributes) {
  v1::Batch b = Decode(BatchEncoder({.agent_id = "a"}).Encode(MakeFrame(), 1));
  ASSERT_EQ(b.entities_size(), 6);
  const v1::EntityKind kinds[] = {v1::ENTITY_KIND_HOST,    v1::ENTITY_KIND_GPU,
                                  v1::ENTITY_KIND_MIG,     v1::ENTITY_KIND_CONTAINER,
                                  v1::ENTITY_KIND_PROCESS, v1::ENTITY_KIND_EXECUTABLE};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(b.entities(i).kind(), kinds[i]) << i;
  }
  EXPECT_EQ(b.entities(2).id(), "MIG-b");
  EXPECT_EQ(b.entities(2).parent(), "GPU-a");
  EXPECT_EQ(b.entities(4).parent(), "ctr/abc");
  EXPECT_EQ(b.entities(0).parent(), "");
  ASSERT_EQ(b.entities(1).attributes_size(), 2);
  EXPECT_EQ(b.entities(1).attributes(0).key(), "gpu.index");
  EXPECT_EQ(b.entities(1).attributes(0).value(), "0");
  EXPECT_EQ(b.entities(1).attributes(1).key(), "gpu.model");
  EXPECT_EQ(b.entities(1).attributes(1).value(), "H100");
  EXPECT_EQ(b.entities(5).attributes_size(), 0);
}

TEST(BatchEncoderTest, MetricDictionaryHasOneEntryPerDistinctMetric) {
  v1::Batch b = Decode(BatchEncoder({.agent_id = "a"}).Encode(MakeFrame(), 1));
  ASSERT_EQ(b.metrics_size(), 2);
  const v1::Metric& temp = b.metrics(0);
  EXPECT_EQ(temp.key(), "gpu.temperature");
  EXPECT_EQ(temp.kind(), v1::METRIC_KIND_GAUGE);
  EXPECT_EQ(temp.unit(), "Cel");
  EXPECT_EQ(temp.help(), "GPU temperature.");
  EXPECT_EQ(temp.prom_name(), "DCGM_FI_DEV_GPU_TEMP");
  EXPECT_EQ(temp.prom_scale(), 1.0);
  EXPECT_EQ(temp.otel_name(), "hw.gpu.temperature");
  EXPECT_EQ(temp.entity_kind(), v1::ENTITY_KIND_GPU);
  const v1::Metric& energy = b.metrics(1);
  EXPECT_EQ(energy.key(), "gpu.energy");
  EXPECT_EQ(energy.kind(), v1::METRIC_KIND_COUNTER);
  EXPECT_EQ(energy.prom_scale(), 1000.0);
  EXPECT_EQ(energy.otel_name(), "hw.energy");
}

TEST(BatchEncoderTest, SeriesReferenceTheDictionaryAndKeepEveryStatistic) {
  v1::Batch b = Decode(BatchEncoder({.agent_id = "a"}).Encode(MakeFrame(), 1));
  ASSERT_EQ(b.series_size(), 3);  // the series without a metric is skipped
  const v1::Series& temp = b.series(0);
  EXPECT_EQ(temp.metric(), 0u);
  EXPECT_EQ(temp.entity(), "GPU-a");
  EXPECT_EQ(temp.labels_size(), 0);
  EXPECT_EQ(temp.avg(), 55.5);
  EXPECT_EQ(temp.min(), 50);
  EXPECT_EQ(temp.max(), 61.25);
  EXPECT_EQ(temp.last(), 60);
  EXPECT_EQ(temp.count(), 12u);
  EXPECT_EQ(temp.last_time_unix_nano(), kEnd - 1'000'000'000);
  const v1::Series& energy = b.series(1);
  EXPECT_EQ(energy.metric(), 1u);
  EXPECT_EQ(energy.last(), 1.5e6);
  EXPECT_EQ(energy.last_time_unix_nano(), kEnd - 2);
  const v1::Series& mig = b.series(2);
  EXPECT_EQ(mig.metric(), 0u);
  EXPECT_EQ(mig.entity(), "MIG-b");
  EXPECT_TRUE(std::isnan(mig.avg()));
  ASSERT_EQ(mig.labels_size(), 2);
  EXPECT_EQ(mig.labels(0).key(), "a");  // Labels are sorted by key
  EXPECT_EQ(mig.labels(0).value(), "first");
  EXPECT_EQ(mig.labels(1).key(), "sensor");
  EXPECT_EQ(mig.labels(1).value(), "hbm");
}

TEST(BatchEncoderTest, EventsKeepEveryField) {
  v1::Batch b = Decode(BatchEncoder({.agent_id = "a"}).Encode(MakeFrame(), 1));
  ASSERT_EQ(b.events_size(), 1);
  const v1::Event& e = b.events(0);
  EXPECT_EQ(e.time_unix_nano(), kStart + 5);
  EXPECT_EQ(e.entity(), "GPU-a");
  EXPECT_EQ(e.kind(), "xid");
  EXPECT_EQ(e.code(), 79);
  EXPECT_EQ(e.message(), "GPU has fallen off the bus");
  ASSERT_EQ(e.attributes_size(), 1);
  EXPECT_EQ(e.attributes(0).key(), "pid");
  EXPECT_EQ(e.attributes(0).value(), "42");
}

TEST(BatchEncoderTest, TrainingStepsKeepEveryField) {
  model::Frame f = MakeFrame();
  model::TrainingStep s;
  s.entity = "pid/42/1000";
  s.job = "job-17";
  s.comm = "0123456789abcdef";
  s.rank = 3;
  s.world_size = 8;
  s.step = 1234567890123;
  s.start = base::FromUnixNanos(kStart + 10);
  s.end = base::FromUnixNanos(kStart + 500'000'010);
  s.compute_ns = 300'000'000;
  s.comm_ns = 50'000'000;
  s.overlap_ns = 20'000'000;
  s.last_collective_offset_ns = 450'000'000;
  s.nccl_ns = 70'000'000;
  s.collectives = 12;
  s.bus_bytes = 5'000'000'000ULL;
  s.source = "nvtx";
  model::TrainingStep unknown;  // the defaults: -1 for unknown compute and no large collective
  unknown.entity = "pid/42/1000";
  unknown.job = "comm-0123456789abcdef";
  unknown.source = "collectives";
  f.steps = {s, unknown};

  v1::Batch b = Decode(BatchEncoder({.agent_id = "a"}).Encode(f, 1));
  ASSERT_EQ(b.steps_size(), 2);
  const v1::TrainingStep& got = b.steps(0);
  EXPECT_EQ(got.entity(), "pid/42/1000");
  EXPECT_EQ(got.job(), "job-17");
  EXPECT_EQ(got.comm(), "0123456789abcdef");
  EXPECT_EQ(got.rank(), 3u);
  EXPECT_EQ(got.world_size(), 8u);
  EXPECT_EQ(got.step(), 1234567890123);
  EXPECT_EQ(got.start_unix_nano(), kStart + 10);
  EXPECT_EQ(got.end_unix_nano(), kStart + 500'000'010);
  EXPECT_EQ(got.compute_ns(), 300'000'000);
  EXPECT_EQ(got.comm_ns(), 50'000'000);
  EXPECT_EQ(got.overlap_ns(), 20'000'000);
  EXPECT_EQ(got.last_collective_offset_ns(), 450'000'000);
  EXPECT_EQ(got.nccl_ns(), 70'000'000);
  EXPECT_EQ(got.collectives(), 12u);
  EXPECT_EQ(got.bus_bytes(), 5'000'000'000ULL);
  EXPECT_EQ(got.source(), "nvtx");
  EXPECT_EQ(b.steps(1).job(), "comm-0123456789abcdef");
  EXPECT_EQ(b.steps(1).compute_ns(), -1);
  EXPECT_EQ(b.steps(1).last_collective_offset_ns(), -1);
  EXPECT_EQ(b.steps(1).source(), "collectives");
}

TEST(BatchEncoderTest, SampleFrameRoundTripsWithADictionaryOfItsDistinctMetrics) {
  model::Frame frame = sample::MakeSampleFrame({.gpus = 8, .processes = 16, .mig_per_gpu = 1});
  v1::Batch b = Decode(BatchEncoder({.agent_id = "a"}).Encode(frame, 9));

  std::set<std::string_view> distinct;
  for (const auto& s : frame.series) {
    distinct.insert(s.metric->key);
  }
  ASSERT_EQ(static_cast<size_t>(b.metrics_size()), distinct.size());
  ASSERT_EQ(static_cast<size_t>(b.series_size()), frame.series.size());
  ASSERT_EQ(static_cast<size_t>(b.entities_size()), frame.entities.size());
  for (int i = 0; i < b.series_size(); ++i) {
    const auto& want = frame.series[static_cast<size_t>(i)];
    const auto& got = b.series(i);
    ASSERT_LT(got.metric(), static_cast<uint32_t>(b.metrics_size()));
    EXPECT_EQ(b.metrics(static_cast<int>(got.metric())).key(), want.metric->key);
    EXPECT_EQ(got.entity(), want.entity);
    EXPECT_EQ(got.last(), want.last);
    EXPECT_EQ(got.count(), want.count);
    EXPECT_EQ(static_cast<size_t>(got.labels_size()), want.labels.size());
  }
}

TEST(BatchEncoderTest, EmptyFrameIsAValidBatch) {
  model::Frame empty;
  v1::Batch b = Decode(BatchEncoder({.agent_id = "a"}).Encode(empty, 0));
  EXPECT_EQ(b.version(), 1u);
  EXPECT_EQ(b.agent_id(), "a");
  EXPECT_EQ(b.series_size(), 0);
  EXPECT_EQ(b.steps_size(), 0);
  EXPECT_EQ(b.start_unix_nano(), 0);
}

}  // namespace
}  // namespace warpscope::exporters
