// SPDX-License-Identifier: Apache-2.0
#include "exporters/otlp/otlp_json_encoder.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "exporters/testing/sample_frame.h"

namespace warpscope::exporters {
namespace {

using nlohmann::json;

OtlpJsonEncoder::Options TestOptions() {
  OtlpJsonEncoder::Options o;
  o.service_version = "1.2.3";
  o.service_instance_id = "instance-1";
  o.resource_attributes = {{"cluster", "c1"}, {"team", "ml"}};
  return o;
}

json Parse(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << body.substr(0, 200);
  return j;
}

const json& Metrics(const json& body) {
  return body["resourceMetrics"][0]["scopeMetrics"][0]["metrics"];
}

const json* FindMetric(const json& body, std::string_view name) {
  for (const auto& m : Metrics(body)) {
    if (m["name"] == name) {
      return &m;
    }
  }
  return nullptr;
}

// The string form of an attribute value: stringValue, intValue (a string in OTLP JSON) or "".
std::string Attr(const json& attributes, std::string_view key) {
  for (const auto& kv : attributes) {
    if (kv["key"] == key) {
      const json& v = kv["value"];
      if (v.contains("stringValue")) {
        return v["stringValue"].get<std::string>();
      }
      if (v.contains("intValue")) {
        return "int:" + v["intValue"].get<std::string>();
      }
    }
  }
  return "";
}

// The data point of `metric` whose attributes have key=value.
const json* FindPoint(const json& metric, std::string_view key, std::string_view value) {
  const json& points =
      metric.contains("gauge") ? metric["gauge"]["dataPoints"] : metric["sum"]["dataPoints"];
  for (const auto& p : points) {
    if (Attr(p["attributes"], key) == value) {
      return &p;
    }
  }
  return nullptr;
}

TEST(OtlpJsonEncoderTest, ResourceDescribesTheAgentAndHost) {
  OtlpJsonEncoder::Options o = TestOptions();
  o.host_id = "machine-123";
  OtlpJsonEncoder enc(o);
  json body = Parse(enc.Encode(sample::MakeSampleFrame({.gpus = 1, .processes = 0})));
  const json& attrs = body["resourceMetrics"][0]["resource"]["attributes"];
  EXPECT_EQ(Attr(attrs, "host.name"), "node1");
  EXPECT_EQ(Attr(attrs, "host.id"), "machine-123");
  EXPECT_EQ(Attr(attrs, "service.name"), "warpscope-agent");
  EXPECT_EQ(Attr(attrs, "service.version"), "1.2.3");
  EXPECT_EQ(Attr(attrs, "service.instance.id"), "instance-1");
  EXPECT_EQ(Attr(attrs, "cluster"), "c1");
  EXPECT_EQ(Attr(attrs, "team"), "ml");
  EXPECT_EQ(body["resourceMetrics"][0]["scopeMetrics"][0]["scope"]["name"], "warpscope");
}

TEST(OtlpJsonEncoderTest, GeneratesAServiceInstanceIdWhenNoneIsGiven) {
  OtlpJsonEncoder a({});
  OtlpJsonEncoder b({});
  EXPECT_EQ(a.service_instance_id().size(), 36u);
  EXPECT_NE(a.service_instance_id(), b.service_instance_id());
}

TEST(OtlpJsonEncoderTest, HostNameOptionOverridesTheFrame) {
  OtlpJsonEncoder::Options o = TestOptions();
  o.host_name = "override";
  OtlpJsonEncoder enc(o);
  json body = Parse(enc.Encode(sample::MakeSampleFrame({.gpus = 1, .processes = 0})));
  EXPECT_EQ(Attr(body["resourceMetrics"][0]["resource"]["attributes"], "host.name"), "override");
}

TEST(OtlpJsonEncoderTest, GaugeIsTheWindowAverageWithWindowTimes) {
  OtlpJsonEncoder enc(TestOptions());
  model::Frame f = sample::MakeSampleFrame({.gpus = 2, .processes = 0});
  json body = Parse(enc.Encode(f));
  const json* m = FindMetric(body, "hw.gpu.temperature");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ((*m)["unit"], "Cel");
  EXPECT_EQ((*m)["description"], "GPU temperature (in C).");
  ASSERT_TRUE(m->contains("gauge"));
  const json* p = FindPoint(*m, "hw.id", sample::SampleGpuUuid(1));
  ASSERT_NE(p, nullptr);
  EXPECT_DOUBLE_EQ((*p)["asDouble"].get<double>(), sample::SampleGpuTemperatureCelsius(1));
  EXPECT_EQ((*p)["startTimeUnixNano"], std::to_string(base::ToUnixNanos(f.start)));
  EXPECT_EQ((*p)["timeUnixNano"], std::to_string(base::ToUnixNanos(f.end)));
}

TEST(OtlpJsonEncoderTest, GpuPointsCarryHardwareAttributes) {
  OtlpJsonEncoder enc(TestOptions());
  json body = Parse(enc.Encode(sample::MakeSampleFrame({.gpus = 1, .processes = 0})));
  const json* p =
      FindPoint(*FindMetric(body, "hw.gpu.temperature"), "hw.id", sample::SampleGpuUuid(0));
  ASSERT_NE(p, nullptr);
  const json& a = (*p)["attributes"];
  EXPECT_EQ(Attr(a, "hw.name"), sample::kSampleGpuModel);
  EXPECT_EQ(Attr(a, "hw.vendor"), "NVIDIA");
  EXPECT_EQ(Attr(a, "hw.type"), "gpu");
  EXPECT_EQ(Attr(a, "gpu.index"), "0");
  EXPECT_EQ(Attr(a, "gpu.pci_bus_id"), sample::SamplePciBusId(0));
  EXPECT_EQ(Attr(a, "hw.driver_version"), "550.127.08");
  EXPECT_EQ(Attr(a, "gpu.uuid"), "");  // carried as hw.id
}

TEST(OtlpJsonEncoderTest, MetricFixedAttributesAndSeriesLabelsAreAdded) {
  OtlpJsonEncoder enc(TestOptions());
  json body = Parse(enc.Encode(sample::MakeSampleFrame({.gpus = 1, .processes = 0})));
  const json* util = FindMetric(body, "hw.gpu.utilization");
  ASSERT_NE(util, nullptr);
  // GPU, encoder and decoder utilization share the OTel name and differ by hw.gpu.task.
  EXPECT_EQ((*util)["gauge"]["dataPoints"].size(), 3u);
  const json* general = FindPoint(*util, "hw.gpu.task", "general");
  ASSERT_NE(general, nullptr);
  EXPECT_DOUBLE_EQ((*general)["asDouble"].get<double>(), sample::SampleGpuUtilizationRatio(0));
  EXPECT_EQ((*util)["unit"], "1");

  const json* io = FindMetric(body, "hw.gpu.io");
  ASSERT_NE(io, nullptr);
  const json* link3 = FindPoint(*io, "link", "3");
  ASSERT_NE(link3, nullptr);
  EXPECT_NE(Attr((*link3)["attributes"], "network.io.direction"), "");
}

TEST(OtlpJsonEncoderTest, MinAndMaxGaugesOnlyForMultiSampleWindows) {
  OtlpJsonEncoder enc(TestOptions());
  json body = Parse(enc.Encode(sample::MakeSampleFrame({.gpus = 1, .processes = 0})));
  const json* mn = FindMetric(body, "hw.gpu.temperature.min");
  const json* mx = FindMetric(body, "hw.gpu.temperature.max");
  ASSERT_NE(mn, nullptr);
  ASSERT_NE(mx, nullptr);
  const double t = sample::SampleGpuTemperatureCelsius(0);
  EXPECT_DOUBLE_EQ((*mn)["gauge"]["dataPoints"][0]["asDouble"].get<double>(), t - 1);
  EXPECT_DOUBLE_EQ((*mx)["gauge"]["dataPoints"][0]["asDouble"].get<double>(), t + 1);
  EXPECT_EQ((*mx)["unit"], "Cel");

  OtlpJsonEncoder single(TestOptions());
  json one = Parse(
      single.Encode(sample::MakeSampleFrame({.gpus = 1, .processes = 0, .samples_per_series = 1})));
  EXPECT_EQ(FindMetric(one, "hw.gpu.temperature.min"), nullptr);
  EXPECT_EQ(FindMetric(one, "hw.gpu.temperature.max"), nullptr);
  EXPECT_EQ(FindMetric(one, "hw.energy.min"), nullptr);
}

TEST(OtlpJsonEncoderTest, MinMaxCanBeTurnedOff) {
  OtlpJsonEncoder::Options o = TestOptions();
  o.min_max = false;
  OtlpJsonEncoder enc(o);
  json body = Parse(enc.Encode(sample::MakeSampleFrame({.gpus = 1, .processes = 0})));
  EXPECT_EQ(FindMetric(body, "hw.gpu.temperature.min"), nullptr);
}

TEST(OtlpJsonEncoderTest, CountersAreCumulativeMonotonicSums) {
  OtlpJsonEncoder enc(TestOptions());
  model::Frame f = sample::MakeSampleFrame({.gpus = 1, .processes = 0});
  json body = Parse(enc.Encode(f));
  const json* m = FindMetric(body, "hw.energy");
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(m->contains("sum"));
  EXPECT_EQ((*m)["sum"]["aggregationTemporality"], 2);
  EXPECT_EQ((*m)["sum"]["isMonotonic"], true);
  EXPECT_EQ((*m)["unit"], "J");
  const json& p = (*m)["sum"]["dataPoints"][0];
  EXPECT_DOUBLE_EQ(p["asDouble"].get<double>(), sample::SampleEnergyJoules(0));
  EXPECT_EQ(p["startTimeUnixNano"], std::to_string(base::ToUnixNanos(f.start)));
  EXPECT_TRUE(p["timeUnixNano"].is_string());
}

TEST(OtlpJsonEncoderTest, CounterStartTimeStaysFixedWhileTheSeriesIsPresent) {
  OtlpJsonEncoder enc(TestOptions());
  model::Frame first = sample::MakeSampleFrame({.gpus = 1, .processes = 0});
  model::Frame second = sample::MakeSampleFrame({.gpus = 1, .processes = 0, .start = first.end});
  model::Frame without = second;
  without.series.clear();
  model::Frame third = sample::MakeSampleFrame(
      {.gpus = 1, .processes = 0, .start = second.end + std::chrono::seconds(60)});
  const std::string first_start = std::to_string(base::ToUnixNanos(first.start));

  (void)enc.Encode(first);
  json b2 = Parse(enc.Encode(second));
  EXPECT_EQ((*FindMetric(b2, "hw.energy"))["sum"]["dataPoints"][0]["startTimeUnixNano"],
            first_start);
  EXPECT_GT(enc.tracked_counter_series(), 0u);

  (void)enc.Encode(without);
  EXPECT_EQ(enc.tracked_counter_series(), 0u);
  json b3 = Parse(enc.Encode(third));
  EXPECT_EQ((*FindMetric(b3, "hw.energy"))["sum"]["dataPoints"][0]["startTimeUnixNano"],
            std::to_string(base::ToUnixNanos(third.start)));
}

TEST(OtlpJsonEncoderTest, ProcessPointsCarryProcessAttributesWithIntPid) {
  OtlpJsonEncoder enc(TestOptions());
  json body = Parse(enc.Encode(sample::MakeSampleFrame({.gpus = 1, .processes = 2})));
  const json* m = FindMetric(body, "warpscope.process.gpu.memory.usage");
  ASSERT_NE(m, nullptr);
  const json* p = FindPoint(*m, "process.pid", "int:4001");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(Attr((*p)["attributes"], "process.executable.name"), "vllm-worker");
  EXPECT_EQ(Attr((*p)["attributes"], "gpu.index"), "0");
  EXPECT_NE(Attr((*p)["attributes"], "container.id"), "");
  EXPECT_EQ((*m)["unit"], "By");
}

TEST(OtlpJsonEncoderTest, MigPointsNameTheirParentGpu) {
  OtlpJsonEncoder enc(TestOptions());
  json body =
      Parse(enc.Encode(sample::MakeSampleFrame({.gpus = 1, .processes = 0, .mig_per_gpu = 2})));
  const json* m = FindMetric(body, "hw.gpu.memory.usage");
  ASSERT_NE(m, nullptr);
  const std::string mig_id = sample::SampleGpuUuid(0) + "/gi2";
  const json* p = FindPoint(*m, "hw.id", mig_id);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(Attr((*p)["attributes"], "hw.parent"), sample::SampleGpuUuid(0));
  EXPECT_EQ(Attr((*p)["attributes"], "mig.gpu_instance_id"), "2");
  EXPECT_EQ(Attr((*p)["attributes"], "mig.profile"), "1g.10gb");
}

TEST(OtlpJsonEncoderTest, NonFiniteValuesAreStrings) {
  model::Frame f = sample::MakeSampleFrame({.gpus = 1, .processes = 0});
  for (auto& s : f.series) {
    if (s.metric == &sample::kGpuTemp) {
      s.avg = std::numeric_limits<double>::quiet_NaN();
    }
    if (s.metric == &sample::kPower) {
      s.avg = std::numeric_limits<double>::infinity();
    }
  }
  OtlpJsonEncoder enc(TestOptions());
  json body = Parse(enc.Encode(f));
  EXPECT_EQ((*FindMetric(body, "hw.gpu.temperature"))["gauge"]["dataPoints"][0]["asDouble"], "NaN");
  EXPECT_EQ((*FindMetric(body, "hw.power"))["gauge"]["dataPoints"][0]["asDouble"], "Infinity");
}

TEST(OtlpJsonEncoderTest, EventsAreNotEncoded) {
  model::Frame f = sample::MakeSampleFrame({.gpus = 1, .processes = 0});
  model::Event ev;
  ev.entity = sample::SampleGpuUuid(0);
  ev.kind = "xid";
  ev.code = 79;
  f.events.push_back(ev);
  OtlpJsonEncoder enc(TestOptions());
  std::string with = enc.Encode(f);
  f.events.clear();
  OtlpJsonEncoder enc2(TestOptions());
  EXPECT_EQ(with, enc2.Encode(f));
}

TEST(OtlpJsonEncoderTest, EmptyFrameIsAValidRequest) {
  OtlpJsonEncoder enc(TestOptions());
  json body = Parse(enc.Encode(model::Frame{}));
  EXPECT_TRUE(Metrics(body).is_array());
  EXPECT_TRUE(Metrics(body).empty());
}

}  // namespace
}  // namespace warpscope::exporters
