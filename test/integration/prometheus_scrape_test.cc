// SPDX-License-Identifier: Apache-2.0
// A real Prometheus scrapes MetricsHttpServer and answers the queries of Grafana dashboard 12239
// (NVIDIA DCGM Exporter Dashboard) with the values served. Two exporters play two hosts: one
// answers in OpenMetrics (Prometheus asks for it first), the other only in text 0.0.4, so both
// parsers are exercised.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "exporters/prometheus/metrics_http_server.h"
#include "exporters/prometheus/prometheus_exporter.h"
#include "exporters/testing/sample_frame.h"
#include "integration/prometheus_peer.h"
#include "base/testing/peer.h"

namespace warpscope::exporters {
namespace {

using nlohmann::json;
using test::PrometheusPeer;

constexpr int kGpus = 8;

struct FakeAgent {
  std::shared_ptr<MetricsSnapshotStore> store = std::make_shared<MetricsSnapshotStore>();
  std::unique_ptr<PrometheusExporter> exporter;
  std::unique_ptr<MetricsHttpServer> server;
  int port = 0;
};

void StartAgent(const std::string& host, bool openmetrics, FakeAgent* agent) {
  agent->exporter =
      std::make_unique<PrometheusExporter>(PrometheusExporter::Options{}, agent->store);
  ASSERT_EQ(agent->exporter->Export(sample::MakeSampleFrame(
                {.gpus = kGpus, .processes = 16, .mig_per_gpu = 0, .host = host})),
            ExportResult::kSuccess);
  MetricsHttpServer::Options o;
  o.listen_address = "127.0.0.1:0";
  o.openmetrics = openmetrics;
  agent->server = std::make_unique<MetricsHttpServer>(o, agent->store);
  auto port = agent->server->Start();
  ASSERT_TRUE(port.has_value()) << port.error().ToString();
  agent->port = *port;
}

double Value(const json& sample) {
  return std::strtod(sample["value"][1].get<std::string>().c_str(), nullptr);
}

// {Hostname/gpu -> value} for a vector result.
std::map<std::string, double> ByHostGpu(const json& result) {
  std::map<std::string, double> out;
  for (const auto& s : result) {
    const json& m = s["metric"];
    out[m.value("Hostname", "") + "/" + m.value("gpu", "")] = Value(s);
  }
  return out;
}

class PrometheusScrapeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WARPSCOPE_REQUIRE_PEER(PrometheusPeer::Available(), "/usr/bin/prometheus",
                           "run scripts/setup.sh --test (apt-get install prometheus)");
    StartAgent("node-om", /*openmetrics=*/true, &om_);
    StartAgent("node-text", /*openmetrics=*/false, &text_);
    PrometheusPeer::Options o;
    o.targets = {{"gpu-om", "127.0.0.1:" + std::to_string(om_.port)},
                 {"gpu-text", "127.0.0.1:" + std::to_string(text_.port)}};
    auto peer = PrometheusPeer::Start(o);
    ASSERT_TRUE(peer.has_value()) << peer.error().ToString();
    peer_ = std::move(*peer);
    // Both targets scraped and every GPU of both hosts present.
    auto ready = peer_->WaitForQuery(
        "DCGM_FI_DEV_GPU_TEMP", [](const json& r) { return r.size() == 2 * kGpus; },
        std::chrono::seconds(60));
    ASSERT_TRUE(ready.has_value()) << ready.error().ToString() << "\n" << peer_->LogTail();
  }

  // Runs `promql` and expects one sample per host and GPU with value f(gpu).
  void ExpectPerGpu(const std::string& promql, double (*f)(int)) {
    SCOPED_TRACE(promql);
    auto r = peer_->Query(promql);
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    auto values = ByHostGpu(*r);
    ASSERT_EQ(values.size(), 2u * kGpus) << r->dump();
    for (const char* host : {"node-om", "node-text"}) {
      for (int g = 0; g < kGpus; ++g) {
        std::string key = std::string(host) + "/" + std::to_string(g);
        ASSERT_TRUE(values.count(key)) << key;
        EXPECT_DOUBLE_EQ(values[key], f(g)) << key;
      }
    }
  }

  FakeAgent om_;
  FakeAgent text_;
  std::unique_ptr<PrometheusPeer> peer_;
};

TEST_F(PrometheusScrapeTest, GpuSeriesCarryDcgmExporterLabels) {
  auto r = peer_->Query("DCGM_FI_DEV_GPU_TEMP{Hostname=\"node-om\",gpu=\"3\"}");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->size(), 1u) << r->dump();
  const json& m = (*r)[0]["metric"];
  EXPECT_EQ(m["UUID"], sample::SampleGpuUuid(3));
  EXPECT_EQ(m["pci_bus_id"], sample::SamplePciBusId(3));
  EXPECT_EQ(m["device"], "nvidia3");
  EXPECT_EQ(m["modelName"], sample::kSampleGpuModel);
  EXPECT_EQ(m["DCGM_FI_DRIVER_VERSION"], "550.127.08");
  EXPECT_EQ(m["job"], "gpu-om");
  EXPECT_DOUBLE_EQ(Value((*r)[0]), sample::SampleGpuTemperatureCelsius(3));
}

TEST_F(PrometheusScrapeTest, BothExpositionFormatsWereScraped) {
  auto up = peer_->Query("up");
  ASSERT_TRUE(up.has_value());
  ASSERT_EQ(up->size(), 2u);
  for (const auto& s : *up) {
    EXPECT_EQ(Value(s), 1.0) << s.dump();
  }
  EXPECT_GT(om_.server->stats().metrics_openmetrics, 0u);
  EXPECT_EQ(om_.server->stats().metrics_text, 0u);
  EXPECT_GT(text_.server->stats().metrics_text, 0u);
  EXPECT_GT(om_.server->stats().metrics_gzip, 0u);  // Prometheus asks for gzip
}

TEST_F(PrometheusScrapeTest, Dashboard12239QueriesReturnTheServedValues) {
  ExpectPerGpu("max(DCGM_FI_DEV_GPU_TEMP) by (Hostname, gpu)", sample::SampleGpuTemperatureCelsius);
  ExpectPerGpu("avg(DCGM_FI_DEV_GPU_UTIL) by (Hostname, gpu)",
               [](int g) { return sample::SampleGpuUtilizationRatio(g) * 100; });
  ExpectPerGpu("DCGM_FI_DEV_FB_USED", [](int g) { return sample::SampleFbUsedBytes(g) / 1048576; });
  ExpectPerGpu("DCGM_FI_DEV_POWER_USAGE", sample::SamplePowerWatts);
  ExpectPerGpu("DCGM_FI_DEV_SM_CLOCK", [](int g) { return sample::SampleSmClockHz(g) / 1e6; });
  ExpectPerGpu("DCGM_FI_DEV_MEM_CLOCK", [](int g) { return sample::SampleMemClockHz(g) / 1e6; });
  ExpectPerGpu("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
               [](int g) { return sample::SampleEnergyJoules(g) * 1000; });

  auto sum = peer_->Query("sum(DCGM_FI_DEV_POWER_USAGE) by (Hostname)");
  ASSERT_TRUE(sum.has_value());
  ASSERT_EQ(sum->size(), 2u) << sum->dump();
  double expected = 0;
  for (int g = 0; g < kGpus; ++g) {
    expected += sample::SamplePowerWatts(g);
  }
  for (const auto& s : *sum) {
    EXPECT_DOUBLE_EQ(Value(s), expected) << s.dump();
  }
}

TEST_F(PrometheusScrapeTest, ProcessAndHostSeriesAreQueryable) {
  auto procs = peer_->Query("warpscope_process_gpu_memory_used_bytes{Hostname=\"node-om\"}");
  ASSERT_TRUE(procs.has_value());
  ASSERT_EQ(procs->size(), 16u);
  bool seen = false;
  for (const auto& s : *procs) {
    if (s["metric"]["pid"] == "4001") {
      seen = true;
      EXPECT_EQ(s["metric"]["executable"], "vllm-worker");
      EXPECT_EQ(s["metric"]["gpu"], "1");
      EXPECT_EQ(s["metric"]["UUID"], sample::SampleGpuUuid(1));
      EXPECT_FALSE(s["metric"].value("container_id", "").empty());
    }
  }
  EXPECT_TRUE(seen);
  auto cpu = peer_->Query("sum by (Hostname) (rate(warpscope_host_cpu_time_seconds_total[1m]))");
  EXPECT_TRUE(cpu.has_value()) << cpu.error().ToString();
  auto info = peer_->Query("target_info{Hostname=\"node-text\"}");
  ASSERT_TRUE(info.has_value());
  ASSERT_EQ(info->size(), 1u);
  EXPECT_EQ((*info)[0]["metric"]["service_name"], "warpscope-agent");
}

}  // namespace
}  // namespace warpscope::exporters
