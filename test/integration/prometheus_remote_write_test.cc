// SPDX-License-Identifier: Apache-2.0
// Other senders into the real `warpscope server` binary:
//   - a real Prometheus scrapes a small target and forwards with remote write 1.0
//     (POST /api/v1/write); the forwarded series are read back through the query API;
//   - the agent's OTLP exporter (exporters/otlp) sends a frame over OTLP/HTTP JSON and protobuf
//     to POST /v1/metrics and over OTLP/gRPC to --otlp-grpc-listen-address; its GPU entities and
//     values are read back the same way; the `warpscope agent` binary exports over gRPC too;
//   - the OpenTelemetry JS SDK (test/peers/otel_sdk/send.mjs, an application that shares no code
//     with warpscope) sends a counter, an up-down counter, a histogram and an observable gauge
//     over OTLP/HTTP JSON and protobuf and over OTLP/gRPC (its gRPC exporter, gzip); their values
//     are read back the same way;
//   - the same SDK's trace exporters (test/peers/otel_sdk/send_traces.mjs) send inference request
//     spans shaped as vLLM's, and per-phase child spans, to POST /v1/traces; the stored phases
//     and the latency breakdown are read back through the trace API.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/file_util.h"
#include "child_process.h"
#include "exporters/otlp/otlp_exporter.h"
#include "exporters/testing/sample_frame.h"
#include "integration/prometheus_peer.h"
#include "base/testing/peer.h"

namespace warpscope::test {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kToken[] = "ingest-e2e-token";

// A fixed Prometheus text exposition on 127.0.0.1:0 for Prometheus to scrape.
class ScrapeTarget {
 public:
  ScrapeTarget() {
    server_.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(
          "# HELP demo_gpu_temperature_celsius A fixed temperature.\n"
          "# TYPE demo_gpu_temperature_celsius gauge\n"
          "demo_gpu_temperature_celsius{gpu=\"0\"} 61.5\n"
          "demo_gpu_temperature_celsius{gpu=\"1\"} 58\n"
          "# HELP demo_requests_total A fixed counter.\n"
          "# TYPE demo_requests_total counter\n"
          "demo_requests_total 42\n",
          "text/plain; version=0.0.4");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~ScrapeTarget() {
    server_.stop();
    thread_.join();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

// `warpscope server` on a free port with a bearer token, in a temp dir; with `grpc`, its OTLP/gRPC
// listener on another free port.
class ServerProcess {
 public:
  void Start(const TempDir& tmp, bool grpc = false) {
    const std::string bin = std::string(WARPSCOPE_BINARY_DIR) + "/bin/warpscope";
    const std::string token = tmp.path() + "/token";
    ASSERT_TRUE(base::WriteFile(token, std::string(kToken) + "\n").ok());
    chmod(token.c_str(), 0600);
    port_ = PickFreePort();
    std::vector<std::string> argv = {bin, "server", "--data-dir=" + tmp.path() + "/data",
                                     "--listen-address=127.0.0.1:" + std::to_string(port_),
                                     "--auth-token-file=" + token};
    if (grpc) {
      grpc_port_ = PickFreePort();
      argv.push_back("--otlp-grpc-listen-address=127.0.0.1:" + std::to_string(grpc_port_));
    }
    auto child = ChildProcess::Start(argv, tmp.path());
    ASSERT_TRUE(child) << child.error().message();
    child_ = std::move(*child);
    bool up = WaitForJson("/healthz", [](const json&) { return true; }).has_value();
    ASSERT_TRUE(up) << "server did not come up: " << child_->Stderr();
  }

  int port() const { return port_; }
  int grpc_port() const { return grpc_port_; }
  std::string Stderr() const { return child_ ? child_->Stderr() : ""; }

  // Polls GET `path` until the JSON body satisfies `done` (bounded: ~30 s).
  std::optional<json> WaitForJson(const std::string& path,
                                  const std::function<bool(const json&)>& done) {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(1);
    for (int i = 0; i < 300; ++i) {
      auto res = c.Get(path.c_str());
      if (res && res->status == 200) {
        json body = json::parse(res->body, nullptr, false);
        if (!body.is_discarded() && done(body)) return body;
        last_ = res->body;
      }
      std::this_thread::sleep_for(milliseconds(100));  // bounded polling of other processes
    }
    return std::nullopt;
  }
  const std::string& last_body() const { return last_; }

 private:
  std::unique_ptr<ChildProcess> child_;
  int port_ = 0;
  int grpc_port_ = 0;
  std::string last_;
};

int64_t NowSeconds() {
  return std::chrono::duration_cast<seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string RangeParams() {
  int64_t now = NowSeconds();
  return "&start=" + std::to_string(now - 600) + "&end=" + std::to_string(now + 60) + "&step=60s";
}

// The latest point of the series whose labels include `label`=`value`, or NaN.
double LatestValue(const json& range, const std::string& label, const std::string& value) {
  for (const auto& s : range["series"]) {
    if (s["labels"].value(label, "") == value && !s["points"].empty()) {
      const json& p = s["points"].back()[1];
      return p.is_number() ? p.get<double>() : std::nan("");
    }
  }
  return std::nan("");
}

TEST(PrometheusRemoteWriteTest, ForwardedSeriesArriveWithTheirValues) {
  WARPSCOPE_REQUIRE_PEER(PrometheusPeer::Available(), "/usr/bin/prometheus",
                         "run scripts/setup.sh --test (apt-get install prometheus)");
  TempDir tmp;
  ServerProcess server;
  ASSERT_NO_FATAL_FAILURE(server.Start(tmp));
  ScrapeTarget target;

  PrometheusPeer::Options options;
  options.targets.push_back({"demo", target.address()});
  options.remote_write_url = "http://127.0.0.1:" + std::to_string(server.port()) + "/api/v1/write";
  options.remote_write_bearer_token = kToken;
  auto prometheus = PrometheusPeer::Start(options);
  ASSERT_TRUE(prometheus) << prometheus.error().message();

  const std::string host = target.address();  // the `instance` label
  auto temps = server.WaitForJson(
      "/api/v1/query_range?metric=demo_gpu_temperature_celsius&agg=last&host=" + host +
          RangeParams(),
      [](const json& r) { return r["series"].size() == 2; });
  ASSERT_TRUE(temps) << "last answer: " << server.last_body() << "\nserver: " << server.Stderr()
                     << "\nprometheus: " << (*prometheus)->LogTail();
  EXPECT_DOUBLE_EQ(LatestValue(*temps, "gpu", "0"), 61.5);
  EXPECT_DOUBLE_EQ(LatestValue(*temps, "gpu", "1"), 58);
  for (const auto& s : (*temps)["series"]) {
    EXPECT_EQ(s["host"], host);
    EXPECT_EQ(s["kind"], "host");
    EXPECT_EQ(s["labels"]["job"], "demo");
    EXPECT_FALSE(s["labels"].contains("instance"));
  }

  auto requests = server.WaitForJson(
      "/api/v1/query_range?metric=demo_requests_total&agg=last&host=" + host + RangeParams(),
      [](const json& r) { return r["series"].size() == 1; });
  ASSERT_TRUE(requests) << server.last_body();
  EXPECT_DOUBLE_EQ(LatestValue(*requests, "job", "demo"), 42);
  EXPECT_EQ((*requests)["metric"]["kind"], "counter");

  // Prometheus' own per-target series come along too.
  auto up =
      server.WaitForJson("/api/v1/query_range?metric=up&agg=last&host=" + host + RangeParams(),
                         [](const json& r) { return r["series"].size() == 1; });
  ASSERT_TRUE(up) << server.last_body();
  EXPECT_DOUBLE_EQ(LatestValue(*up, "job", "demo"), 1);

  auto hosts = server.WaitForJson("/api/v1/entities?kind=host", [&](const json& r) {
    for (const auto& e : r["entities"]) {
      if (e["id"] == host) return true;
    }
    return false;
  });
  EXPECT_TRUE(hosts) << server.last_body();
}

class OtlpIngestTest : public ::testing::TestWithParam<const char*> {};

TEST_P(OtlpIngestTest, AgentOtlpExporterReachesTheServer) {
  const std::string protocol = GetParam();
  const bool grpc = protocol == "grpc";
  TempDir tmp;
  ServerProcess server;
  ASSERT_NO_FATAL_FAILURE(server.Start(tmp, grpc));

  exporters::OtlpExporter::Options options;
  auto parsed = exporters::ParseOtlpProtocol(protocol);
  ASSERT_TRUE(parsed);
  options.protocol = *parsed;
  options.endpoint =
      "http://127.0.0.1:" + std::to_string(grpc ? server.grpc_port() : server.port());
  options.headers.emplace_back("Authorization", std::string("Bearer ") + kToken);
  options.max_attempts = 3;
  options.initial_backoff = milliseconds(100);
  options.gzip = true;
  options.encoder.host_name = "otlp-node";
  auto exporter = exporters::OtlpExporter::Create(options);
  ASSERT_TRUE(exporter) << exporter.error().message();

  exporters::sample::SampleFrameOptions frame_options;
  frame_options.gpus = 2;
  frame_options.processes = 2;
  frame_options.host = "otlp-node";
  frame_options.start = base::FromUnixNanos((NowSeconds() - 120) * 1'000'000'000);
  EXPECT_EQ((*exporter)->Export(exporters::sample::MakeSampleFrame(frame_options)),
            exporters::ExportResult::kSuccess);
  (*exporter)->Shutdown(seconds(20));
  ASSERT_EQ((*exporter)->stats().sent, 1u) << "server: " << server.Stderr();
  EXPECT_EQ((*exporter)->stats().failed, 0u);

  auto gpus = server.WaitForJson("/api/v1/entities?kind=gpu&host=otlp-node",
                                 [](const json& r) { return r["entities"].size() == 2; });
  ASSERT_TRUE(gpus) << server.last_body();
  for (const auto& e : (*gpus)["entities"]) {
    EXPECT_EQ(e["attributes"]["gpu.model"], exporters::sample::kSampleGpuModel);
    EXPECT_EQ(e["attributes"]["gpu.uuid"], e["id"]);
  }
  EXPECT_EQ((*gpus)["entities"][0]["id"], exporters::sample::SampleGpuUuid(0));

  auto temps = server.WaitForJson(
      "/api/v1/query_range?metric=hw.gpu.temperature&kind=gpu&host=otlp-node" + RangeParams(),
      [](const json& r) { return r["series"].size() == 2; });
  ASSERT_TRUE(temps) << server.last_body();
  for (int gpu = 0; gpu < 2; ++gpu) {
    bool found = false;
    for (const auto& s : (*temps)["series"]) {
      if (s["entity"] != exporters::sample::SampleGpuUuid(gpu)) continue;
      found = true;
      EXPECT_DOUBLE_EQ(s["points"].back()[1].get<double>(),
                       exporters::sample::SampleGpuTemperatureCelsius(gpu));
    }
    EXPECT_TRUE(found) << "no hw.gpu.temperature series for GPU " << gpu;
  }
  auto metrics = server.WaitForJson("/api/v1/metrics", [](const json&) { return true; });
  ASSERT_TRUE(metrics);
  bool described = false;
  for (const auto& m : (*metrics)["metrics"]) {
    if (m["key"] == "hw.gpu.temperature") {
      described = true;
      EXPECT_EQ(m["unit"], "Cel");
      EXPECT_EQ(m["entity_kind"], "gpu");
    }
  }
  EXPECT_TRUE(described);
}

INSTANTIATE_TEST_SUITE_P(Protocols, OtlpIngestTest,
                         ::testing::Values("http/json", "http/protobuf", "grpc"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '/', '_');
                           return name;
                         });

// The `warpscope agent` binary (on the NVML simulator) exporting over OTLP/gRPC only, with the
// token as metadata: its GPUs arrive with their temperatures.
TEST(OtlpGrpcAgentTest, AgentBinaryExportsOverGrpc) {
  TempDir tmp;
  ServerProcess server;
  ASSERT_NO_FATAL_FAILURE(server.Start(tmp, /*grpc=*/true));
  AgentServerFiles files = PrepareAgentAndServer(tmp, TwoGpuCoolingScenario("grpc-agent", "70"));
  ASSERT_TRUE(files.ok);
  auto agent = ChildProcess::Start(
      {WarpscopeBinary(), "agent", "--simulate", files.scenario, "--enable-host-metrics=false",
       "--collect-metrics-interval=200ms", "--export-metrics-interval=500ms",
       "--listen-address=off", "--hostname=grpc-agent",
       "--otlp-endpoint=http://127.0.0.1:" + std::to_string(server.grpc_port()),
       "--otlp-protocol=grpc", "--otlp-header=Authorization=Bearer " + std::string(kToken)},
      tmp.path());
  ASSERT_TRUE(agent) << agent.error().message();
  auto temps = server.WaitForJson(
      "/api/v1/query_range?metric=hw.temperature&kind=gpu&host=grpc-agent" + RangeParams(),
      [](const json& r) { return r["series"].size() >= 2; });
  ASSERT_TRUE(temps) << server.last_body() << "\nagent: " << (*agent)->Stderr()
                     << "\nserver: " << server.Stderr();
  // The die temperatures of the scenario: 60 and 70 degrees.
  std::vector<double> die;
  for (const auto& s : (*temps)["series"]) {
    if (s["labels"].value("hw.sensor_location", "") == "gpu" && !s["points"].empty()) {
      die.push_back(s["points"].back()[1].get<double>());
    }
  }
  std::sort(die.begin(), die.end());
  EXPECT_EQ(die, (std::vector<double>{60.0, 70.0})) << temps->dump();
  kill((*agent)->pid(), SIGTERM);
  int status = (*agent)->Wait(seconds(20));
  EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << (*agent)->Stderr();
}

// The absolute path of `program` found on $PATH, or "" when it is not there.
std::string FindOnPath(const std::string& program) {
  const char* path = getenv("PATH");
  for (std::string_view dir : base::SplitString(path == nullptr ? "" : path, ":")) {
    std::string candidate = std::string(dir) + "/" + program;
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

class OtelSdkIngestTest : public ::testing::TestWithParam<const char*> {};

TEST_P(OtelSdkIngestTest, SdkMetricsArriveWithTheirValues) {
  const std::string protocol = GetParam();
  const std::string node = FindOnPath("node");
  const std::string peer = std::string(WARPSCOPE_SOURCE_DIR) + "/test/peers/otel_sdk";
  WARPSCOPE_REQUIRE_PEER(!node.empty(), "node", "run scripts/setup.sh --test");
  const bool grpc = protocol == "grpc";
  WARPSCOPE_REQUIRE_PEER(
      std::filesystem::exists(peer + (grpc ? "/node_modules/@opentelemetry/exporter-metrics-otlp-grpc"
                                           : "/node_modules/@opentelemetry/sdk-metrics")),
      "the OpenTelemetry SDK (test/peers/otel_sdk)",
      "npm ci --prefix " + peer + " (scripts/test.sh runs it)");
  TempDir tmp;
  ServerProcess server;
  ASSERT_NO_FATAL_FAILURE(server.Start(tmp, grpc));
  const std::string host = "otel-sdk-" + protocol;
  const int port = grpc ? server.grpc_port() : server.port();
  auto sender = ChildProcess::Start(
      {node, peer + "/send.mjs", "--url=http://127.0.0.1:" + std::to_string(port),
       "--token=" + std::string(kToken), "--protocol=" + protocol, "--host=" + host},
      tmp.path());
  ASSERT_TRUE(sender) << sender.error().message();
  int status = (*sender)->Wait(seconds(60));
  ASSERT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "send.mjs failed: " << (*sender)->Stderr() << "\nserver: " << server.Stderr();

  auto latest = [&](const std::string& metric, const std::string& label = "",
                    const std::string& value = "") {
    auto range = server.WaitForJson(
        "/api/v1/query_range?metric=" + metric + "&host=" + host + "&agg=last" + RangeParams(),
        [](const json& r) { return !r["series"].empty(); });
    if (!range) {
      ADD_FAILURE() << metric << ": no series; last answer: " << server.last_body();
      return std::nan("");
    }
    if (label.empty()) return (*range)["series"][0]["points"].back()[1].get<double>();
    return LatestValue(*range, label, value);
  };
  EXPECT_DOUBLE_EQ(latest("jobs.completed", "queue", "train"), 7.0);
  EXPECT_DOUBLE_EQ(latest("queue.depth"), 3.0);
  EXPECT_DOUBLE_EQ(latest("request.duration.count"), 2.0);
  EXPECT_NEAR(latest("request.duration.sum"), 0.4, 1e-12);
  EXPECT_DOUBLE_EQ(latest("gpu.fake.temperature", "gpu", "0"), 61.5);
  EXPECT_DOUBLE_EQ(latest("gpu.fake.temperature", "gpu", "1"), 48.0);

  auto metrics = server.WaitForJson("/api/v1/metrics", [](const json&) { return true; });
  ASSERT_TRUE(metrics);
  std::map<std::string, json> by_key;
  for (const auto& m : (*metrics)["metrics"]) by_key[m["key"]] = m;
  EXPECT_EQ(by_key["jobs.completed"]["kind"], "counter");
  EXPECT_EQ(by_key["jobs.completed"]["unit"], "{job}");
  EXPECT_EQ(by_key["queue.depth"]["kind"], "gauge");
  EXPECT_EQ(by_key["gpu.fake.temperature"]["unit"], "Cel");
  EXPECT_EQ(by_key["request.duration.sum"]["unit"], "s");

  auto hosts = server.WaitForJson("/api/v1/entities?kind=host&host=" + host,
                                  [](const json& r) { return r["entities"].size() == 1; });
  ASSERT_TRUE(hosts) << server.last_body();
  EXPECT_EQ((*hosts)["entities"][0]["attributes"]["service.name"], "otel-sdk-peer");
}

INSTANTIATE_TEST_SUITE_P(Protocols, OtelSdkIngestTest, ::testing::Values("json", "proto", "grpc"),
                         [](const auto& info) { return std::string(info.param); });

class OtelSdkTraceTest : public ::testing::TestWithParam<const char*> {};

// The phase named `phase` of a breakdown or a request, or null.
const json* PhaseNamed(const json& phases, const std::string& phase) {
  for (const json& p : phases) {
    if (p["phase"] == phase) return &p;
  }
  return nullptr;
}

TEST_P(OtelSdkTraceTest, SdkSpansAreStoredAndShownPerPhase) {
  const std::string protocol = GetParam();
  const std::string node = FindOnPath("node");
  const std::string peer = std::string(WARPSCOPE_SOURCE_DIR) + "/test/peers/otel_sdk";
  WARPSCOPE_REQUIRE_PEER(!node.empty(), "node", "run scripts/setup.sh --test");
  WARPSCOPE_REQUIRE_PEER(
      std::filesystem::exists(peer + "/node_modules/@opentelemetry/exporter-trace-otlp-proto"),
      "the OpenTelemetry SDK's trace exporters (test/peers/otel_sdk)",
      "npm ci --prefix " + peer + " (scripts/test.sh runs it)");
  TempDir tmp;
  ServerProcess server;
  ASSERT_NO_FATAL_FAILURE(server.Start(tmp));
  const std::string host = "otel-traces-" + protocol;
  auto sender = ChildProcess::Start(
      {node, peer + "/send_traces.mjs", "--url=http://127.0.0.1:" + std::to_string(server.port()),
       "--token=" + std::string(kToken), "--protocol=" + protocol, "--host=" + host,
       "--pid=4242"},
      tmp.path());
  ASSERT_TRUE(sender) << sender.error().message();
  int status = (*sender)->Wait(seconds(60));
  ASSERT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "send_traces.mjs failed: " << (*sender)->Stderr() << "\nserver: " << server.Stderr();

  // vLLM-shaped requests: phases derived from gen_ai.latency.*, TTFT split by cached tokens.
  auto llama = server.WaitForJson("/api/v1/traces/breakdown?model=llama&start=now-1h",
                                  [](const json& b) { return b["requests"] == 3; });
  ASSERT_TRUE(llama) << server.last_body();
  const json& phases = (*llama)["phases"];
  ASSERT_NE(PhaseNamed(phases, "decode"), nullptr) << phases;
  EXPECT_NEAR((*PhaseNamed(phases, "decode"))["p50"].get<double>(), 0.4, 1e-6);
  EXPECT_NEAR((*PhaseNamed(phases, "prefill"))["mean"].get<double>(), 0.1, 1e-6);
  EXPECT_NEAR((*PhaseNamed(phases, "queue"))["mean"].get<double>(), 0.02, 1e-6);
  EXPECT_NEAR((*PhaseNamed(phases, "preprocess"))["max"].get<double>(), 0.005, 1e-6);
  EXPECT_EQ(phases[0]["phase"], "preprocess");
  EXPECT_EQ((*llama)["ttft"]["cache_hit"]["count"], 1);
  EXPECT_NEAR((*llama)["ttft"]["cache_hit"]["p50"].get<double>(), 0.115, 1e-6);
  EXPECT_EQ((*llama)["ttft"]["cache_miss"]["count"], 2);
  EXPECT_NEAR((*llama)["e2e"]["max"].get<double>(), 0.735, 1e-6);
  ASSERT_EQ((*llama)["processes"].size(), 1u);
  EXPECT_EQ((*llama)["processes"][0]["entity"]["host"], host);
  EXPECT_EQ((*llama)["processes"][0]["entity"]["pid"], 4242);

  // The engine that traces each phase as a child span: its waterfall, in order.
  auto phased = server.WaitForJson("/api/v1/traces/requests?model=phased&start=now-1h",
                                   [](const json& r) { return r["requests"].size() == 1; });
  ASSERT_TRUE(phased) << server.last_body();
  const std::string trace_id = (*phased)["requests"][0]["trace_id"];
  auto waterfall = server.WaitForJson("/api/v1/traces/" + trace_id,
                                      [](const json& t) { return !t["requests"].empty(); });
  ASSERT_TRUE(waterfall) << server.last_body();
  const json& request = (*waterfall)["requests"][0];
  EXPECT_EQ(request["request_id"], "phased-0");
  std::vector<std::string> order;
  for (const json& p : request["phases"]) order.push_back(p["phase"]);
  EXPECT_EQ(order, (std::vector<std::string>{"tokenize", "queue", "prefill", "decode",
                                             "detokenize"}));
  EXPECT_NEAR(request["phases"][3]["offset"].get<double>(), 0.080, 1e-6);
  EXPECT_NEAR(request["phases"][3]["duration"].get<double>(), 0.200, 1e-6);
  EXPECT_NEAR(request["ttft"].get<double>(), 0.080, 1e-6);  // the end of the prefill
  EXPECT_NE(request["profile"].get<std::string>().find("kind=gpu&pid=4242"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Protocols, OtelSdkTraceTest, ::testing::Values("json", "proto"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace warpscope::test
