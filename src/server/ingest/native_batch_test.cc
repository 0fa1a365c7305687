// SPDX-License-Identifier: Apache-2.0
#include "server/ingest/native_batch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "warpscope/v1/batch.pb.h"

namespace warpscope::server {
namespace {

using ::testing::HasSubstr;
namespace pb = ::warpscope::v1;

// A valid batch: host h1 with one GPU, utilization (gauge) and energy (counter), one event.
pb::Batch ValidBatch() {
  pb::Batch b;
  b.set_version(1);
  b.set_agent_id("agent-1");
  b.set_sequence(42);
  b.set_start_unix_nano(1'700'000'000'000'000'000);
  b.set_end_unix_nano(1'700'000'010'000'000'000);
  b.set_host("h1");
  auto* tag = b.add_tags();
  tag->set_key("cluster");
  tag->set_value("west");
  pb::Entity* gpu = b.add_entities();
  gpu->set_kind(pb::ENTITY_KIND_GPU);
  gpu->set_id("GPU-a");
  auto* attr = gpu->add_attributes();
  attr->set_key("gpu.index");
  attr->set_value("0");
  pb::Metric* util = b.add_metrics();
  util->set_key("gpu.utilization");
  util->set_kind(pb::METRIC_KIND_GAUGE);
  util->set_unit("1");
  util->set_help("GPU busy ratio.");
  util->set_prom_name("DCGM_FI_DEV_GPU_UTIL");
  util->set_prom_scale(100);
  util->set_otel_name("hw.gpu.utilization");
  util->set_entity_kind(pb::ENTITY_KIND_GPU);
  pb::Metric* load = b.add_metrics();
  load->set_key("host.load1");
  load->set_kind(pb::METRIC_KIND_GAUGE);
  load->set_entity_kind(pb::ENTITY_KIND_HOST);
  pb::Series* s = b.add_series();
  s->set_metric(0);
  s->set_entity("GPU-a");
  s->set_avg(0.5);
  s->set_min(0.1);
  s->set_max(0.9);
  s->set_last(0.4);
  s->set_count(10);
  auto* label = s->add_labels();
  label->set_key("mode");
  label->set_value("x");
  pb::Series* host_series = b.add_series();
  host_series->set_metric(1);
  host_series->set_entity("h1");
  host_series->set_avg(2);
  host_series->set_min(2);
  host_series->set_max(2);
  host_series->set_last(2);
  pb::Event* e = b.add_events();
  e->set_time_unix_nano(1'700'000'005'000'000'000);
  e->set_entity("GPU-a");
  e->set_kind("xid");
  e->set_code(79);
  e->set_message("GPU has fallen off the bus");
  return b;
}

// ValidBatch() with a rank process of job "job-1" and two of its steps, one on the host entity.
pb::Batch BatchWithSteps() {
  pb::Batch b = ValidBatch();
  pb::Entity* proc = b.add_entities();
  proc->set_kind(pb::ENTITY_KIND_PROCESS);
  proc->set_id("pid/42/100");
  pb::TrainingStep* s = b.add_steps();
  s->set_entity("pid/42/100");
  s->set_job("job-1");
  s->set_comm("0123456789abcdef");
  s->set_rank(3);
  s->set_world_size(16);
  s->set_step(1000);
  s->set_start_unix_nano(1'700'000'001'000'000'000);
  s->set_end_unix_nano(1'700'000'001'500'000'000);
  s->set_compute_ns(300'000'000);
  s->set_comm_ns(50'000'000);
  s->set_overlap_ns(20'000'000);
  s->set_last_collective_offset_ns(440'000'000);
  s->set_nccl_ns(70'000'000);
  s->set_collectives(12);
  s->set_bus_bytes(5'000'000'000ULL);
  s->set_source("nvtx");
  pb::TrainingStep* host_step = b.add_steps();
  *host_step = *s;
  host_step->set_entity("h1");
  host_step->set_step(1001);
  host_step->set_compute_ns(-1);
  host_step->set_last_collective_offset_ns(-1);
  host_step->set_source("collectives");
  return b;
}

base::Result<DecodedBatch> Decode(const pb::Batch& b) {
  return DecodeNativeBatchProto(b.SerializeAsString());
}

std::string ErrorOf(const pb::Batch& b) {
  auto r = Decode(b);
  EXPECT_FALSE(r.has_value());
  if (r.has_value()) {
    return "";
  }
  EXPECT_EQ(r.error().code(), base::StatusCode::kInvalidArgument);
  return r.error().message();
}

TEST(NativeBatchTest, DecodesEveryFieldOfAProtobufBatch) {
  auto r = Decode(ValidBatch());

  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  const IngestBatch& b = r->batch;
  EXPECT_EQ(b.agent_id, "agent-1");
  EXPECT_EQ(b.sequence, 42u);
  EXPECT_EQ(base::ToUnixNanos(b.start), 1'700'000'000'000'000'000);
  EXPECT_EQ(base::ToUnixNanos(b.end), 1'700'000'010'000'000'000);
  EXPECT_EQ(b.host, "h1");
  EXPECT_EQ(b.tags.Get("cluster"), "west");
  ASSERT_EQ(b.entities.size(), 1u);
  EXPECT_EQ(b.entities[0].kind, model::EntityKind::kGpu);
  EXPECT_EQ(b.entities[0].attributes.Get("gpu.index"), "0");
  ASSERT_EQ(b.metrics.size(), 2u);
  EXPECT_EQ(b.metrics[0], (MetricInfo{"gpu.utilization", model::MetricKind::kGauge, "1",
                                      "GPU busy ratio.", "DCGM_FI_DEV_GPU_UTIL", 100,
                                      "hw.gpu.utilization", model::EntityKind::kGpu}));
  EXPECT_EQ(b.metrics[1].prom_scale, 1.0);  // unset means 1
  ASSERT_EQ(b.series.size(), 2u);
  EXPECT_EQ(b.series[0].metric, "gpu.utilization");
  EXPECT_EQ(b.series[0].entity, "GPU-a");
  EXPECT_EQ(b.series[0].labels.Get("mode"), "x");
  EXPECT_EQ(b.series[0].avg, 0.5);
  EXPECT_EQ(b.series[0].min, 0.1);
  EXPECT_EQ(b.series[0].max, 0.9);
  EXPECT_EQ(b.series[0].last, 0.4);
  EXPECT_EQ(b.series[0].count, 10u);
  EXPECT_EQ(b.series[1].count, 1u);  // unset means one sample
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_EQ(b.events[0].kind, "xid");
  EXPECT_EQ(b.events[0].code, 79);
  EXPECT_EQ(r->rejected_series, 0u);
}

TEST(NativeBatchTest, DecodesTheJsonMapping) {
  const char* json = R"({
    "version": 1, "agentId": "a", "sequence": "7",
    "startUnixNano": "1700000000000000000", "endUnixNano": 1700000010000000000,
    "host": "h1", "someFutureField": {"x": 1},
    "entities": [{"kind": "ENTITY_KIND_GPU", "id": "GPU-a"}],
    "metrics": [{"key": "gpu.utilization", "kind": 1, "entityKind": "ENTITY_KIND_GPU"}],
    "series": [{"metric": 0, "entity": "GPU-a", "avg": 0.5, "min": 0.5, "max": 0.5,
                "last": 0.5, "count": 3}]
  })";

  auto r = DecodeNativeBatchJson(json);

  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->batch.sequence, 7u);
  EXPECT_EQ(base::ToUnixNanos(r->batch.end), 1'700'000'010'000'000'000);
  ASSERT_EQ(r->batch.series.size(), 1u);
  EXPECT_EQ(r->batch.series[0].count, 3u);
  EXPECT_EQ(r->batch.entities[0].kind, model::EntityKind::kGpu);
}

TEST(NativeBatchTest, JsonWithOriginalFieldNamesIsAccepted) {
  auto r = DecodeNativeBatchJson(
      R"({"version": 1, "agent_id": "a", "host": "h1", "start_unix_nano": "5",
          "end_unix_nano": "6"})");

  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->batch.agent_id, "a");
}

TEST(NativeBatchTest, BytesThatAreNotABatchAreRefused) {
  auto r = DecodeNativeBatchProto(std::string("\xff\xff\xff\xff\x0f", 5));

  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("not a valid warpscope.v1.Batch"));
}

TEST(NativeBatchTest, InvalidUtf8IsRefused) {
  pb::Batch b = ValidBatch();
  b.set_host("h\xff");

  EXPECT_THAT(ErrorOf(b), HasSubstr("not a valid warpscope.v1.Batch"));
}

TEST(NativeBatchTest, InvalidJsonIsRefused) {
  auto r = DecodeNativeBatchJson("{\"version\": ");

  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), base::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.error().message(), HasSubstr("not valid JSON"));
}

TEST(NativeBatchTest, JsonWithAWrongTypeIsRefused) {
  auto r = DecodeNativeBatchJson(R"({"version": "one", "agentId": "a", "host": "h"})");

  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("not valid JSON"));
}

TEST(NativeBatchTest, UnknownVersionNamesTheSupportedOne) {
  pb::Batch b = ValidBatch();
  b.set_version(2);

  std::string error = ErrorOf(b);

  EXPECT_THAT(error, HasSubstr("batch version 2 is not supported"));
  EXPECT_THAT(error, HasSubstr("reads version 1"));
}

TEST(NativeBatchTest, MissingVersionIsRefused) {
  pb::Batch b = ValidBatch();
  b.clear_version();

  EXPECT_THAT(ErrorOf(b), HasSubstr("set Batch.version"));
}

TEST(NativeBatchTest, EmptyAgentIdIsRefused) {
  pb::Batch b = ValidBatch();
  b.clear_agent_id();

  EXPECT_THAT(ErrorOf(b), HasSubstr("agent_id is empty"));
}

TEST(NativeBatchTest, EmptyHostIsRefused) {
  pb::Batch b = ValidBatch();
  b.clear_host();

  EXPECT_THAT(ErrorOf(b), HasSubstr("host is empty"));
}

TEST(NativeBatchTest, WindowEndingBeforeItStartsIsRefused) {
  pb::Batch b = ValidBatch();
  b.set_end_unix_nano(b.start_unix_nano() - 1);

  EXPECT_THAT(ErrorOf(b), HasSubstr("window ends"));
}

TEST(NativeBatchTest, MetricIndexOutOfRangeIsRefused) {
  pb::Batch b = ValidBatch();
  b.mutable_series(0)->set_metric(2);

  std::string error = ErrorOf(b);

  EXPECT_THAT(error, HasSubstr("series 0 refers to metric index 2"));
  EXPECT_THAT(error, HasSubstr("describes 2 metrics"));
}

TEST(NativeBatchTest, SeriesOfAnUndeclaredEntityIsRefused) {
  pb::Batch b = ValidBatch();
  b.mutable_series(0)->set_entity("GPU-missing");

  EXPECT_THAT(ErrorOf(b), HasSubstr("entity \"GPU-missing\", which is neither the host"));
}

TEST(NativeBatchTest, SeriesOfTheHostNeedNoEntityDeclaration) {
  pb::Batch b = ValidBatch();
  ASSERT_EQ(b.series(1).entity(), "h1");

  EXPECT_TRUE(Decode(b).has_value());
}

TEST(NativeBatchTest, NonFiniteValuesDropTheSeriesAndAreCounted) {
  pb::Batch b = ValidBatch();
  b.mutable_series(0)->set_max(std::nan(""));
  pb::Series* inf = b.add_series();
  *inf = b.series(1);
  inf->set_last(INFINITY);

  auto r = Decode(b);

  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->rejected_series, 2u);
  ASSERT_EQ(r->batch.series.size(), 1u);
  EXPECT_EQ(r->batch.series[0].metric, "host.load1");
  EXPECT_THAT(r->first_rejection, HasSubstr("series 0 of \"gpu.utilization\" on \"GPU-a\": max"));
}

TEST(NativeBatchTest, EntityWithoutKindIsRefused) {
  pb::Batch b = ValidBatch();
  b.mutable_entities(0)->set_kind(pb::ENTITY_KIND_UNSPECIFIED);

  std::string error = ErrorOf(b);

  EXPECT_THAT(error, HasSubstr("entity \"GPU-a\""));
  EXPECT_THAT(error, HasSubstr("entity kind 0"));
}

TEST(NativeBatchTest, EntityWithoutIdIsRefused) {
  pb::Batch b = ValidBatch();
  b.mutable_entities(0)->clear_id();

  EXPECT_THAT(ErrorOf(b), HasSubstr("entity 0 has an empty id"));
}

TEST(NativeBatchTest, MetricWithoutKindIsRefused) {
  pb::Batch b = ValidBatch();
  b.mutable_metrics(1)->set_kind(pb::METRIC_KIND_UNSPECIFIED);

  EXPECT_THAT(ErrorOf(b), HasSubstr("metric \"host.load1\" has kind 0"));
}

TEST(NativeBatchTest, MetricWithoutKeyIsRefused) {
  pb::Batch b = ValidBatch();
  b.mutable_metrics(0)->clear_key();

  EXPECT_THAT(ErrorOf(b), HasSubstr("metric 0 has an empty key"));
}

TEST(NativeBatchTest, MetricWithAnUnknownEntityKindIsRefused) {
  pb::Batch b = ValidBatch();
  b.mutable_metrics(0)->set_entity_kind(static_cast<pb::EntityKind>(42));

  EXPECT_THAT(ErrorOf(b), HasSubstr("entity kind 42"));
}

TEST(NativeBatchTest, EmptyLabelKeyIsRefused) {
  pb::Batch b = ValidBatch();
  b.mutable_series(0)->mutable_labels(0)->clear_key();

  EXPECT_THAT(ErrorOf(b), HasSubstr("a label has an empty key"));
}

TEST(NativeBatchTest, EventWithoutEntityBelongsToTheHost) {
  pb::Batch b = ValidBatch();
  b.mutable_events(0)->clear_entity();

  auto r = Decode(b);

  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->batch.events[0].entity, "h1");
}

TEST(NativeBatchTest, DecodesEveryFieldOfATrainingStep) {
  auto r = Decode(BatchWithSteps());

  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->batch.steps.size(), 2u);
  const model::TrainingStep& s = r->batch.steps[0];
  EXPECT_EQ(s.entity, "pid/42/100");
  EXPECT_EQ(s.job, "job-1");
  EXPECT_EQ(s.comm, "0123456789abcdef");
  EXPECT_EQ(s.rank, 3u);
  EXPECT_EQ(s.world_size, 16u);
  EXPECT_EQ(s.step, 1000);
  EXPECT_EQ(base::ToUnixNanos(s.start), 1'700'000'001'000'000'000);
  EXPECT_EQ(base::ToUnixNanos(s.end), 1'700'000'001'500'000'000);
  EXPECT_EQ(s.compute_ns, 300'000'000);
  EXPECT_EQ(s.comm_ns, 50'000'000);
  EXPECT_EQ(s.overlap_ns, 20'000'000);
  EXPECT_EQ(s.last_collective_offset_ns, 440'000'000);
  EXPECT_EQ(s.nccl_ns, 70'000'000);
  EXPECT_EQ(s.collectives, 12u);
  EXPECT_EQ(s.bus_bytes, 5'000'000'000ULL);
  EXPECT_EQ(s.source, "nvtx");
  const model::TrainingStep& on_host = r->batch.steps[1];
  EXPECT_EQ(on_host.entity, "h1");  // the host needs no entity declaration
  EXPECT_EQ(on_host.step, 1001);
  EXPECT_EQ(on_host.compute_ns, -1);
  EXPECT_EQ(on_host.last_collective_offset_ns, -1);
  EXPECT_EQ(on_host.source, "collectives");
}

TEST(NativeBatchTest, DecodesTrainingStepsFromJsonWithEitherFieldNames) {
  const char* json = R"({
    "version": 1, "agentId": "a", "host": "h1",
    "entities": [{"kind": "ENTITY_KIND_PROCESS", "id": "pid/42/100"}],
    "steps": [
      {"entity": "pid/42/100", "job": "job-1", "comm": "0123456789abcdef", "rank": 3,
       "worldSize": 16, "step": "1000", "startUnixNano": "1700000001000000000",
       "endUnixNano": 1700000001500000000, "computeNs": "-1", "commNs": 50000000,
       "overlapNs": "20000000", "lastCollectiveOffsetNs": -1, "ncclNs": "70000000",
       "collectives": 12, "busBytes": "5000000000", "source": "nvtx", "futureField": 1},
      {"entity": "h1", "job": "job-1", "rank": 4, "world_size": 16, "step": 1001,
       "start_unix_nano": 5, "end_unix_nano": "6", "compute_ns": 7, "comm_ns": "8",
       "overlap_ns": 9, "last_collective_offset_ns": "10", "nccl_ns": 11,
       "bus_bytes": 12, "source": "collectives"}
    ]
  })";

  auto r = DecodeNativeBatchJson(json);

  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->batch.steps.size(), 2u);
  const model::TrainingStep& a = r->batch.steps[0];
  EXPECT_EQ(a.world_size, 16u);
  EXPECT_EQ(a.step, 1000);
  EXPECT_EQ(base::ToUnixNanos(a.start), 1'700'000'001'000'000'000);
  EXPECT_EQ(base::ToUnixNanos(a.end), 1'700'000'001'500'000'000);
  EXPECT_EQ(a.compute_ns, -1);
  EXPECT_EQ(a.comm_ns, 50'000'000);
  EXPECT_EQ(a.overlap_ns, 20'000'000);
  EXPECT_EQ(a.last_collective_offset_ns, -1);
  EXPECT_EQ(a.nccl_ns, 70'000'000);
  EXPECT_EQ(a.bus_bytes, 5'000'000'000ULL);
  const model::TrainingStep& b = r->batch.steps[1];
  EXPECT_EQ(b.rank, 4u);
  EXPECT_EQ(b.world_size, 16u);
  EXPECT_EQ(b.step, 1001);
  EXPECT_EQ(base::ToUnixNanos(b.start), 5);
  EXPECT_EQ(base::ToUnixNanos(b.end), 6);
  EXPECT_EQ(b.compute_ns, 7);
  EXPECT_EQ(b.comm_ns, 8);
  EXPECT_EQ(b.overlap_ns, 9);
  EXPECT_EQ(b.last_collective_offset_ns, 10);
  EXPECT_EQ(b.nccl_ns, 11);
  EXPECT_EQ(b.bus_bytes, 12u);
  EXPECT_EQ(b.source, "collectives");
}

TEST(NativeBatchTest, StepWithAnEmptyJobIsRefused) {
  pb::Batch b = BatchWithSteps();
  b.mutable_steps(1)->clear_job();

  EXPECT_THAT(ErrorOf(b), HasSubstr("step 1 has an empty job"));
}

TEST(NativeBatchTest, StepOfAnUndeclaredEntityIsRefused) {
  pb::Batch b = BatchWithSteps();
  b.mutable_steps(0)->set_entity("pid/7/1");

  EXPECT_THAT(ErrorOf(b), HasSubstr("step 0 of job \"job-1\" refers to entity \"pid/7/1\", which "
                                    "is neither the host"));
}

TEST(NativeBatchTest, StepWithoutEntityIsRefused) {
  pb::Batch b = BatchWithSteps();
  b.mutable_steps(1)->clear_entity();

  EXPECT_THAT(ErrorOf(b), HasSubstr("step 1 of job \"job-1\" refers to entity \"\""));
}

TEST(NativeBatchTest, StepEndingBeforeItStartsIsRefused) {
  pb::Batch b = BatchWithSteps();
  b.mutable_steps(0)->set_end_unix_nano(b.steps(0).start_unix_nano() - 1);

  EXPECT_THAT(ErrorOf(b), HasSubstr("step 0 of job \"job-1\" ends"));
}

TEST(NativeBatchTest, NegativeStepNumberIsRefused) {
  pb::Batch b = BatchWithSteps();
  b.mutable_steps(1)->set_step(-5);

  EXPECT_THAT(ErrorOf(b), HasSubstr("step 1 of job \"job-1\" has a negative step number -5"));
}

TEST(NativeBatchTest, StepWithAnUnknownSourceIsRefused) {
  pb::Batch b = BatchWithSteps();
  b.mutable_steps(0)->set_source("guess");

  std::string error = ErrorOf(b);

  EXPECT_THAT(error, HasSubstr("step 0 of job \"job-1\" has source \"guess\""));
  EXPECT_THAT(error, HasSubstr("use \"nvtx\" or \"collectives\""));
}

TEST(NativeBatchTest, StepWithoutSourceIsRefused) {
  pb::Batch b = BatchWithSteps();
  b.mutable_steps(0)->clear_source();

  EXPECT_THAT(ErrorOf(b), HasSubstr("has source \"\""));
}

// ValidBatch() with `n` steps of the fewest fields (kept small: the cap is 100,000).
pb::Batch BatchWithMinimalSteps(size_t n) {
  pb::Batch b = ValidBatch();
  pb::TrainingStep one;
  one.set_entity("h1");
  one.set_job("j");
  one.set_source("nvtx");
  b.mutable_steps()->Reserve(static_cast<int>(n));
  for (size_t i = 0; i < n; ++i) {
    *b.add_steps() = one;
  }
  return b;
}

TEST(NativeBatchTest, MoreStepsThanTheCapAreRefused) {
  pb::Batch b = BatchWithMinimalSteps(kMaxStepsPerBatch + 1);

  std::string error = ErrorOf(b);

  EXPECT_THAT(error, HasSubstr(fmt::format("{} training steps", kMaxStepsPerBatch + 1)));
  EXPECT_THAT(error, HasSubstr(fmt::format("at most {}", kMaxStepsPerBatch)));
}

TEST(NativeBatchTest, StepsUpToTheCapAreAccepted) {
  pb::Batch b = BatchWithMinimalSteps(kMaxStepsPerBatch);

  auto r = Decode(b);

  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->batch.steps.size(), kMaxStepsPerBatch);
}

}  // namespace
}  // namespace warpscope::server
