// SPDX-License-Identifier: Apache-2.0
#include "server/ingest/otlp_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"

namespace warpscope::server {
namespace {

namespace collector = ::opentelemetry::proto::collector::metrics::v1;
namespace common = ::opentelemetry::proto::common::v1;
namespace metrics = ::opentelemetry::proto::metrics::v1;

constexpr uint64_t kT0 = 1'700'000'000'000'000'000;  // ns
constexpr uint64_t kSecond = 1'000'000'000;

void AddString(google::protobuf::RepeatedPtrField<common::KeyValue>* kvs, const std::string& key,
               const std::string& value) {
  auto* kv = kvs->Add();
  kv->set_key(key);
  kv->mutable_value()->set_string_value(value);
}

metrics::ResourceMetrics* AddResource(collector::ExportMetricsServiceRequest& req,
                                      const std::string& host) {
  auto* rm = req.add_resource_metrics();
  if (!host.empty()) {
    AddString(rm->mutable_resource()->mutable_attributes(), "host.name", host);
  }
  AddString(rm->mutable_resource()->mutable_attributes(), "service.name", "trainer");
  AddString(rm->mutable_resource()->mutable_attributes(), "service.instance.id", "inst-1");
  rm->add_scope_metrics()->mutable_scope()->set_name("test");
  return rm;
}

metrics::Metric* AddMetric(metrics::ResourceMetrics* rm, const std::string& name) {
  auto* m = rm->mutable_scope_metrics(0)->add_metrics();
  m->set_name(name);
  m->set_unit("1");
  m->set_description(name + " help");
  return m;
}

metrics::NumberDataPoint* AddGpuPoint(
    google::protobuf::RepeatedPtrField<metrics::NumberDataPoint>* points, const std::string& uuid,
    double value, uint64_t time) {
  auto* p = points->Add();
  p->set_time_unix_nano(time);
  p->set_as_double(value);
  AddString(p->mutable_attributes(), "hw.id", uuid);
  AddString(p->mutable_attributes(), "hw.type", "gpu");
  AddString(p->mutable_attributes(), "hw.name", "NVIDIA H100");
  AddString(p->mutable_attributes(), "hw.vendor", "NVIDIA");
  AddString(p->mutable_attributes(), "gpu.index", "0");
  AddString(p->mutable_attributes(), "hw.gpu.task", "general");
  return p;
}

const IngestSeries* FindSeries(const IngestBatch& b, const std::string& metric) {
  for (const auto& s : b.series) {
    if (s.metric == metric) return &s;
  }
  return nullptr;
}

const MetricInfo* FindMetric(const IngestBatch& b, const std::string& key) {
  for (const auto& m : b.metrics) {
    if (m.key == key) return &m;
  }
  return nullptr;
}

const model::Entity* FindEntity(const IngestBatch& b, const std::string& id) {
  for (const auto& e : b.entities) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

TEST(OtlpMetricsTest, GaugeOnAGpuBecomesAGpuEntitySeries) {
  collector::ExportMetricsServiceRequest req;
  auto* rm = AddResource(req, "node1");
  auto* m = AddMetric(rm, "hw.gpu.utilization");
  AddGpuPoint(m->mutable_gauge()->mutable_data_points(), "GPU-a", 0.75, kT0);

  auto decoded = DecodeOtlpMetricsProto(req.SerializeAsString());
  ASSERT_TRUE(decoded) << decoded.error().message();
  ASSERT_EQ(decoded->batches.size(), 1u);
  EXPECT_EQ(decoded->rejected_points, 0u);
  const IngestBatch& b = decoded->batches[0];
  EXPECT_EQ(b.host, "node1");
  EXPECT_EQ(b.agent_id, "otlp/inst-1");
  EXPECT_EQ(base::ToUnixNanos(b.end), static_cast<int64_t>(kT0));
  EXPECT_EQ(b.start, b.end);

  const model::Entity* host = FindEntity(b, "node1");
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->kind, model::EntityKind::kHost);
  EXPECT_EQ(host->attributes.Get("service.name"), "trainer");
  const model::Entity* gpu = FindEntity(b, "GPU-a");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->kind, model::EntityKind::kGpu);
  EXPECT_EQ(gpu->attributes.Get("gpu.uuid"), "GPU-a");
  EXPECT_EQ(gpu->attributes.Get("gpu.model"), "NVIDIA H100");
  EXPECT_EQ(gpu->attributes.Get("gpu.index"), "0");
  EXPECT_FALSE(gpu->attributes.Has("hw.vendor"));

  const IngestSeries* s = FindSeries(b, "hw.gpu.utilization");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->entity, "GPU-a");
  EXPECT_EQ(s->labels, (model::Labels{{"hw.gpu.task", "general"}}));
  EXPECT_DOUBLE_EQ(s->avg, 0.75);
  EXPECT_DOUBLE_EQ(s->min, 0.75);
  EXPECT_DOUBLE_EQ(s->max, 0.75);
  EXPECT_DOUBLE_EQ(s->last, 0.75);
  EXPECT_EQ(s->count, 1u);
  const MetricInfo* info = FindMetric(b, "hw.gpu.utilization");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->kind, model::MetricKind::kGauge);
  EXPECT_EQ(info->unit, "1");
  EXPECT_EQ(info->help, "hw.gpu.utilization help");
  EXPECT_EQ(info->entity_kind, model::EntityKind::kGpu);
}

TEST(OtlpMetricsTest, ResourceWithoutHostNameIsAnErrorNamingTheResource) {
  collector::ExportMetricsServiceRequest req;
  AddResource(req, "node1");
  AddResource(req, "");
  auto decoded = DecodeOtlpMetricsProto(req.SerializeAsString());
  ASSERT_FALSE(decoded);
  EXPECT_EQ(decoded.error().code(), base::StatusCode::kInvalidArgument);
  EXPECT_NE(decoded.error().message().find("resource_metrics[1]"), std::string::npos);
  EXPECT_NE(decoded.error().message().find("host.name"), std::string::npos);
}

TEST(OtlpMetricsTest, AgentIdFallsBackToHostAndServiceName) {
  collector::ExportMetricsServiceRequest req;
  auto* rm = req.add_resource_metrics();
  AddString(rm->mutable_resource()->mutable_attributes(), "host.name", "node7");
  AddString(rm->mutable_resource()->mutable_attributes(), "service.name", "svc");
  auto* m = rm->add_scope_metrics()->add_metrics();
  m->set_name("x");
  auto* p = m->mutable_gauge()->add_data_points();
  p->set_time_unix_nano(kT0);
  p->set_as_int(3);
  auto decoded = DecodeOtlpMetricsProto(req.SerializeAsString());
  ASSERT_TRUE(decoded) << decoded.error().message();
  ASSERT_EQ(decoded->batches.size(), 1u);
  EXPECT_EQ(decoded->batches[0].agent_id, "otlp/node7/svc");
  EXPECT_DOUBLE_EQ(decoded->batches[0].series[0].last, 3.0);
  EXPECT_EQ(decoded->batches[0].series[0].entity, "node7");
}

TEST(OtlpMetricsTest, SumsMapToCountersOrGauges) {
  collector::ExportMetricsServiceRequest req;
  auto* rm = AddResource(req, "node1");
  auto* energy = AddMetric(rm, "hw.energy");
  energy->mutable_sum()->set_is_monotonic(true);
  energy->mutable_sum()->set_aggregation_temporality(metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
  auto* p = AddGpuPoint(energy->mutable_sum()->mutable_data_points(), "GPU-a", 1000, kT0);
  p->set_start_time_unix_nano(kT0 - 86400 * kSecond);  // the counter's start, not a window
  auto* updown = AddMetric(rm, "queue.size");
  updown->mutable_sum()->set_is_monotonic(false);
  updown->mutable_sum()->set_aggregation_temporality(metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
  updown->mutable_sum()->add_data_points()->set_time_unix_nano(kT0);
  updown->mutable_sum()->mutable_data_points(0)->set_as_int(-4);
  auto* delta = AddMetric(rm, "requests");
  delta->mutable_sum()->set_is_monotonic(true);
  delta->mutable_sum()->set_aggregation_temporality(metrics::AGGREGATION_TEMPORALITY_DELTA);
  auto* dp = delta->mutable_sum()->add_data_points();
  dp->set_start_time_unix_nano(kT0 - 10 * kSecond);
  dp->set_time_unix_nano(kT0);
  dp->set_as_int(7);

  auto decoded = DecodeOtlpMetricsProto(req.SerializeAsString());
  ASSERT_TRUE(decoded) << decoded.error().message();
  ASSERT_EQ(decoded->batches.size(), 1u);
  const IngestBatch& b = decoded->batches[0];
  EXPECT_EQ(FindMetric(b, "hw.energy")->kind, model::MetricKind::kCounter);
  EXPECT_EQ(FindMetric(b, "queue.size")->kind, model::MetricKind::kGauge);
  EXPECT_EQ(FindMetric(b, "requests")->kind, model::MetricKind::kGauge);
  EXPECT_NE(FindMetric(b, "requests")->help.find("delta"), std::string::npos);
  EXPECT_DOUBLE_EQ(FindSeries(b, "queue.size")->last, -4);
  EXPECT_DOUBLE_EQ(FindSeries(b, "requests")->last, 7);
  // The delta point's interval is the window; the cumulative start is ignored.
  EXPECT_EQ(base::ToUnixNanos(b.start), static_cast<int64_t>(kT0 - 10 * kSecond));
  EXPECT_EQ(base::ToUnixNanos(b.end), static_cast<int64_t>(kT0));
}

TEST(OtlpMetricsTest, HistogramsAndSummariesBecomeCountSumAndQuantiles) {
  collector::ExportMetricsServiceRequest req;
  auto* rm = AddResource(req, "node1");
  auto* h = AddMetric(rm, "latency");
  h->set_unit("s");
  h->mutable_histogram()->set_aggregation_temporality(metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
  auto* hp = h->mutable_histogram()->add_data_points();
  hp->set_time_unix_nano(kT0);
  hp->set_count(10);
  hp->set_sum(2.5);
  hp->add_explicit_bounds(1);
  hp->add_bucket_counts(9);
  hp->add_bucket_counts(1);
  auto* s = AddMetric(rm, "rpc");
  auto* sp = s->mutable_summary()->add_data_points();
  sp->set_time_unix_nano(kT0);
  sp->set_count(4);
  sp->set_sum(8);
  auto* q = sp->add_quantile_values();
  q->set_quantile(0.99);
  q->set_value(3);

  auto decoded = DecodeOtlpMetricsProto(req.SerializeAsString());
  ASSERT_TRUE(decoded) << decoded.error().message();
  const IngestBatch& b = decoded->batches.at(0);
  EXPECT_EQ(FindMetric(b, "latency.count")->kind, model::MetricKind::kCounter);
  EXPECT_EQ(FindMetric(b, "latency.sum")->unit, "s");
  EXPECT_DOUBLE_EQ(FindSeries(b, "latency.count")->last, 10);
  EXPECT_DOUBLE_EQ(FindSeries(b, "latency.sum")->last, 2.5);
  EXPECT_DOUBLE_EQ(FindSeries(b, "rpc.count")->last, 4);
  EXPECT_DOUBLE_EQ(FindSeries(b, "rpc.sum")->last, 8);
  const IngestSeries* quantile = FindSeries(b, "rpc");
  ASSERT_NE(quantile, nullptr);
  EXPECT_EQ(quantile->labels.Get("quantile"), "0.99");
  EXPECT_DOUBLE_EQ(quantile->last, 3);
}

TEST(OtlpMetricsTest, PointsWithoutAUsableValueAreRejectedAndCounted) {
  collector::ExportMetricsServiceRequest req;
  auto* rm = AddResource(req, "node1");
  auto* m = AddMetric(rm, "g");
  auto* points = m->mutable_gauge()->mutable_data_points();
  AddGpuPoint(points, "GPU-a", 1, kT0);
  AddGpuPoint(points, "GPU-b", std::numeric_limits<double>::quiet_NaN(), kT0);
  auto* none = points->Add();  // no value
  none->set_time_unix_nano(kT0);
  AddGpuPoint(points, "GPU-c", 1, kT0)->set_flags(1);  // no recorded value
  AddGpuPoint(points, "GPU-d", 1, 0);                  // no time
  AddGpuPoint(points, "GPU-a", 2, kT0);                // repeated series

  auto decoded = DecodeOtlpMetricsProto(req.SerializeAsString());
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(decoded->rejected_points, 5u);
  EXPECT_NE(decoded->first_rejection.find("\"g\""), std::string::npos);
  ASSERT_EQ(decoded->batches.size(), 1u);
  ASSERT_EQ(decoded->batches[0].series.size(), 1u);
  EXPECT_DOUBLE_EQ(decoded->batches[0].series[0].last, 1);

  collector::ExportMetricsServiceResponse resp;
  ASSERT_TRUE(resp.ParseFromString(EncodeOtlpMetricsResponse(*decoded, false)));
  EXPECT_EQ(resp.partial_success().rejected_data_points(), 5);
  EXPECT_EQ(resp.partial_success().error_message(), decoded->first_rejection);
  EXPECT_NE(EncodeOtlpMetricsResponse(*decoded, true).find("\"rejectedDataPoints\":\"5\""),
            std::string::npos);
  EXPECT_EQ(EncodeOtlpMetricsResponse(DecodedOtlpMetrics{}, true), "{}");
  EXPECT_EQ(EncodeOtlpMetricsResponse(DecodedOtlpMetrics{}, false), "");
}

TEST(OtlpMetricsTest, PointsAtDifferentTimesBecomeSeparateBatches) {
  collector::ExportMetricsServiceRequest req;
  auto* rm = AddResource(req, "node1");
  auto* m = AddMetric(rm, "g");
  AddGpuPoint(m->mutable_gauge()->mutable_data_points(), "GPU-a", 1, kT0);
  AddGpuPoint(m->mutable_gauge()->mutable_data_points(), "GPU-a", 2, kT0 + 10 * kSecond);
  auto decoded = DecodeOtlpMetricsProto(req.SerializeAsString());
  ASSERT_TRUE(decoded) << decoded.error().message();
  ASSERT_EQ(decoded->batches.size(), 2u);
  EXPECT_EQ(base::ToUnixNanos(decoded->batches[0].end), static_cast<int64_t>(kT0));
  EXPECT_DOUBLE_EQ(decoded->batches[1].series[0].last, 2);
  EXPECT_NE(decoded->batches[0].sequence, decoded->batches[1].sequence);
}

TEST(OtlpMetricsTest, SequenceIsStableForARetryAndChangesWithTheContent) {
  collector::ExportMetricsServiceRequest req;
  auto* rm = AddResource(req, "node1");
  auto* m = AddMetric(rm, "g");
  AddGpuPoint(m->mutable_gauge()->mutable_data_points(), "GPU-a", 1, kT0);
  auto first = DecodeOtlpMetricsProto(req.SerializeAsString());
  auto retry = DecodeOtlpMetricsProto(req.SerializeAsString());
  m->mutable_gauge()->mutable_data_points(0)->set_as_double(2);
  auto changed = DecodeOtlpMetricsProto(req.SerializeAsString());
  ASSERT_TRUE(first && retry && changed);
  EXPECT_EQ(first->batches[0].sequence, retry->batches[0].sequence);
  EXPECT_NE(first->batches[0].sequence, changed->batches[0].sequence);
  EXPECT_LE(first->batches[0].sequence, static_cast<uint64_t>(INT64_MAX));
}

TEST(OtlpMetricsTest, ProcessAttributesMakeAProcessEntity) {
  collector::ExportMetricsServiceRequest req;
  auto* rm = AddResource(req, "node1");
  auto* m = AddMetric(rm, "process.gpu.memory");
  auto* p = m->mutable_gauge()->add_data_points();
  p->set_time_unix_nano(kT0);
  p->set_as_int(1 << 20);
  auto* pid = p->add_attributes();
  pid->set_key("process.pid");
  pid->mutable_value()->set_int_value(4242);
  AddString(p->mutable_attributes(), "process.executable.name", "python3");
  AddString(p->mutable_attributes(), "gpu.index", "1");
  auto decoded = DecodeOtlpMetricsProto(req.SerializeAsString());
  ASSERT_TRUE(decoded) << decoded.error().message();
  const IngestBatch& b = decoded->batches.at(0);
  const model::Entity* proc = FindEntity(b, "pid/4242");
  ASSERT_NE(proc, nullptr);
  EXPECT_EQ(proc->kind, model::EntityKind::kProcess);
  EXPECT_EQ(proc->attributes.Get("process.pid"), "4242");
  EXPECT_EQ(proc->attributes.Get("process.executable.name"), "python3");
  EXPECT_EQ(FindSeries(b, "process.gpu.memory")->labels, (model::Labels{{"gpu.index", "1"}}));
  EXPECT_EQ(FindMetric(b, "process.gpu.memory")->entity_kind, model::EntityKind::kProcess);
}

TEST(OtlpMetricsTest, JsonEncodingWithStringIntsAndIntegerEnums) {
  const std::string json = R"({"resourceMetrics":[{"resource":{"attributes":[
      {"key":"host.name","value":{"stringValue":"h1"}}]},
    "scopeMetrics":[{"scope":{"name":"gpuagent","version":"0.1.0"},"metrics":[
      {"name":"hw.gpu.utilization","unit":"1","gauge":{"dataPoints":[
        {"timeUnixNano":"1700000000000000000","asDouble":0.93,"attributes":[
          {"key":"hw.id","value":{"stringValue":"GPU-1"}},
          {"key":"hw.type","value":{"stringValue":"gpu"}}],
         "exemplars":[{"traceId":"5b8efff798038103d269b633813fc60c","asDouble":1}]}]}},
      {"name":"hw.energy","unit":"J","sum":{"aggregationTemporality":2,"isMonotonic":true,
        "dataPoints":[{"timeUnixNano":1700000000000000000,"asInt":"12"}]}}]}],
    "somethingNew":true}]})";
  auto decoded = DecodeOtlpMetricsJson(json);
  ASSERT_TRUE(decoded) << decoded.error().message();
  ASSERT_EQ(decoded->batches.size(), 1u);
  const IngestBatch& b = decoded->batches[0];
  EXPECT_EQ(b.host, "h1");
  EXPECT_DOUBLE_EQ(FindSeries(b, "hw.gpu.utilization")->last, 0.93);
  EXPECT_EQ(FindSeries(b, "hw.gpu.utilization")->entity, "GPU-1");
  EXPECT_EQ(FindMetric(b, "hw.energy")->kind, model::MetricKind::kCounter);
  EXPECT_DOUBLE_EQ(FindSeries(b, "hw.energy")->last, 12);
}

TEST(OtlpMetricsTest, MalformedBodiesAreInvalidArgument) {
  auto bad_proto = DecodeOtlpMetricsProto("\xff\xff\xff not a protobuf");
  ASSERT_FALSE(bad_proto);
  EXPECT_EQ(bad_proto.error().code(), base::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_proto.error().message().find("ExportMetricsServiceRequest"), std::string::npos);
  auto bad_json = DecodeOtlpMetricsJson(R"({"resourceMetrics": [)");
  ASSERT_FALSE(bad_json);
  EXPECT_EQ(bad_json.error().code(), base::StatusCode::kInvalidArgument);
  auto empty = DecodeOtlpMetricsProto("");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->batches.empty());
}

TEST(OtlpMetricsTest, MigInstanceHasItsGpuAsParent) {
  collector::ExportMetricsServiceRequest req;
  auto* rm = AddResource(req, "node1");
  auto* m = AddMetric(rm, "hw.gpu.memory.usage");
  auto* p = AddGpuPoint(m->mutable_gauge()->mutable_data_points(), "MIG-x", 5, kT0);
  AddString(p->mutable_attributes(), "hw.parent", "GPU-a");
  auto decoded = DecodeOtlpMetricsProto(req.SerializeAsString());
  ASSERT_TRUE(decoded) << decoded.error().message();
  const model::Entity* mig = FindEntity(decoded->batches.at(0), "MIG-x");
  ASSERT_NE(mig, nullptr);
  EXPECT_EQ(mig->kind, model::EntityKind::kMigInstance);
  EXPECT_EQ(mig->parent, "GPU-a");
}

}  // namespace
}  // namespace warpscope::server
