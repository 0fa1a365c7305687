// SPDX-License-Identifier: Apache-2.0
// `warpscope export` against the real peers: the exported alerting rules pass `promtool check
// rules`, and a real Prometheus that loads them while scraping the simulated agent fires the
// cooling-failure alert on the GPU whose cooling fails, not on its neighbour; every query of the
// exported Grafana dashboards is valid PromQL to that Prometheus, and the key panels have data.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "base/file_util.h"
#include "base/testing/peer.h"
#include "child_process.h"
#include "integration/prometheus_peer.h"
#include "scrape.h"

namespace warpscope::test {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr const char* kPromtool = "/usr/bin/promtool";
constexpr char kHost[] = "export-node";

// GPU 1 heats at 25 °C/min from the start; GPU 0 stays at 60 °C.
constexpr char kScenario[] = R"(
name: cooling-now
devices:
  - repeat: 2
    name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    memory_total: 80GiB
    power_limit: 700
    signals:
      gpu_util: 95
      memory_used: 60GiB
      power: 650
      temperature: 60
    overrides:
      "1":
        signals:
          temperature: {piecewise: [[0s, 60], [2m, 110]]}
)";

// Short windows, so that the test's two minutes hold them: the same keys the server reads.
constexpr char kConfig[] = R"(
[server.insights]
cooling-window = "30s"
cooling-min-rise-c = 4
)";

// The alerts of /api/v1/alerts named `name`.
std::vector<json> Alerts(const std::string& body, std::string_view name) {
  std::vector<json> out;
  json doc = json::parse(body, nullptr, false);
  if (!doc.is_object() || !doc["data"]["alerts"].is_array()) return out;
  for (const json& a : doc["data"]["alerts"]) {
    if (a["labels"].value("alertname", "") == name) out.push_back(a);
  }
  return out;
}

bool FiringOnGpu(const std::string& body, std::string_view gpu) {
  for (const json& a : Alerts(body, "GpuCoolingFailure")) {
    if (a["state"] == "firing" && a["labels"].value("gpu", "") == gpu) return true;
  }
  return false;
}

// `expr` as Grafana sends it for host kHost and GPU 1 ($__rate_interval: 1m, $__range: 5m).
std::string Substitute(std::string expr) {
  const std::pair<const char*, const char*> vars[] = {{"${Hostname}", kHost},
                                                      {"$Hostname", kHost},
                                                      {"$__rate_interval", "1m"},
                                                      {"$__range", "5m"},
                                                      {"$gpu", "1"}};
  for (const auto& [from, to] : vars) {
    for (size_t at = expr.find(from); at != std::string::npos; at = expr.find(from, at)) {
      expr.replace(at, std::string_view(from).size(), to);
    }
  }
  return expr;
}

class ExportE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    WARPSCOPE_REQUIRE_PEER(access(kPromtool, X_OK) == 0, kPromtool,
                           "run scripts/setup.sh --test (apt-get install prometheus)");
    WARPSCOPE_REQUIRE_PEER(PrometheusPeer::Available(), "/usr/bin/prometheus",
                           "run scripts/setup.sh --test (apt-get install prometheus)");
    bin_ = WarpscopeBinary();
    ASSERT_TRUE(base::WriteFile(tmp_.path() + "/warpscope.toml", kConfig).ok());
  }

  // Runs `warpscope ARGS...` to its end; its stdout, or a failure with its stderr.
  std::string RunWarpscope(std::vector<std::string> args) {
    args.insert(args.begin(), bin_);
    auto child = ChildProcess::Start(args, tmp_.path());
    EXPECT_TRUE(child) << child.error().message();
    if (!child) return "";
    int status = (*child)->Wait(seconds(30));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "status " << status << ": " << (*child)->Stderr();
    return (*child)->Stdout();
  }

  TempDir tmp_;
  std::string bin_;
};

TEST_F(ExportE2ETest, RulesPassPromtoolAndFireOnTheHeatingGpuOnly) {
  const std::string rules = tmp_.path() + "/warpscope-rules.yml";
  RunWarpscope({"export", "prometheus-rules", "--config", tmp_.path() + "/warpscope.toml",
                "--output", rules});
  ASSERT_FALSE(HasFailure());
  auto text = base::ReadFile(rules);
  ASSERT_TRUE(text.has_value());
  ASSERT_THAT(*text, ::testing::HasSubstr("deriv(DCGM_FI_DEV_GPU_TEMP[30s]) * 60 > 10"));

  const std::string check = std::string(kPromtool) + " check rules " + rules + " 2>&1";
  FILE* p = popen(check.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string report;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) report.append(buf, n);
  const int status = pclose(p);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << report;

  const std::string scenario = tmp_.path() + "/scenario.yaml";
  ASSERT_TRUE(base::WriteFile(scenario, kScenario).ok());
  const int agent_port = PickFreePort();
  auto agent = ChildProcess::Start(
      {bin_, "agent", "--simulate", scenario, "--collect-metrics-interval=500ms",
       "--export-metrics-interval=1s", "--listen-address=127.0.0.1:" + std::to_string(agent_port),
       std::string("--hostname=") + kHost, "--tags=cluster:ci"},
      tmp_.path());
  ASSERT_TRUE(agent) << agent.error().message();
  PrometheusPeer::Options o;
  o.targets = {{"warpscope", "127.0.0.1:" + std::to_string(agent_port)}};
  o.rule_files = {rules};
  o.evaluation_interval = seconds(1);
  auto peer = PrometheusPeer::Start(o);
  ASSERT_TRUE(peer) << peer.error().ToString();

  // 4 °C of rise at 25 °C/min takes 10 s; bounded at 90 s.
  const std::string body =
      WaitForHttp((*peer)->port(), "/api/v1/alerts",
                  [](const std::string& b) { return FiringOnGpu(b, "1"); }, 900);
  ASSERT_TRUE(FiringOnGpu(body, "1"))
      << body << "\n"
      << (*peer)->LogTail() << "\nagent: " << (*agent)->Stderr().substr(0, 2000);
  for (const json& a : Alerts(body, "GpuCoolingFailure")) {
    EXPECT_EQ(a["labels"]["gpu"], "1") << a.dump();
    EXPECT_EQ(a["labels"]["Hostname"], kHost);
    EXPECT_EQ(a["labels"]["severity"], "page");
    EXPECT_EQ(a["labels"]["rule"], "cooling_failure");
    EXPECT_THAT(a["annotations"]["summary"].get<std::string>(),
                ::testing::HasSubstr("GPU 1 of export-node"));
    EXPECT_THAT(a["annotations"]["description"].get<std::string>(), ::testing::HasSubstr("°C/min"));
  }
  // Every rule was evaluated without an error.
  const std::string rule_state =
      WaitForHttp((*peer)->port(), "/api/v1/rules", [](const std::string&) { return true; });
  json doc = json::parse(rule_state, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << rule_state;
  for (const json& group : doc["data"]["groups"]) {
    for (const json& r : group["rules"]) {
      EXPECT_EQ(r.value("health", ""), "ok") << r.dump();
    }
  }
  (*agent)->Signal(SIGTERM, seconds(15));
}

TEST_F(ExportE2ETest, EveryDashboardQueryIsValidAndTheKeyPanelsHaveData) {
  const std::string dir = tmp_.path() + "/dashboards";
  RunWarpscope({"export", "grafana", "--output-dir", dir});
  ASSERT_FALSE(HasFailure());

  const std::string scenario = tmp_.path() + "/scenario.yaml";
  ASSERT_TRUE(base::WriteFile(scenario, kScenario).ok());
  const int agent_port = PickFreePort();
  auto agent = ChildProcess::Start(
      {bin_, "agent", "--simulate", scenario, "--collect-metrics-interval=500ms",
       "--export-metrics-interval=1s", "--listen-address=127.0.0.1:" + std::to_string(agent_port),
       std::string("--hostname=") + kHost},
      tmp_.path());
  ASSERT_TRUE(agent) << agent.error().message();
  PrometheusPeer::Options o;
  o.targets = {{"warpscope", "127.0.0.1:" + std::to_string(agent_port)}};
  auto peer = PrometheusPeer::Start(o);
  ASSERT_TRUE(peer) << peer.error().ToString();
  // Two scrapes of both GPUs, so that rates and increases have their samples.
  auto ready = (*peer)->WaitForQuery(
      "count_over_time(DCGM_FI_DEV_GPU_UTIL[1m])",
      [](const json& r) { return r.size() == 2 && r[0]["value"][1].get<std::string>() != "1"; },
      seconds(60));
  ASSERT_TRUE(ready) << ready.error().ToString();

  // The key metrics of each level: their panels must show data.
  const std::regex kKey(R"(DCGM_FI_DEV_(GPU_UTIL|POWER_USAGE|GPU_TEMP|FB_USED)\b)");
  const std::regex kLabelValues(R"(^label_values\((.*), *(\w+)\)$)");
  int queries = 0;
  for (const char* name : {"warpscope-fleet.json", "warpscope-host.json", "warpscope-gpu.json"}) {
    SCOPED_TRACE(name);
    auto text = base::ReadFile(dir + "/" + name);
    ASSERT_TRUE(text.has_value());
    json d = json::parse(*text, nullptr, false);
    ASSERT_TRUE(d.is_object());
    for (const json& v : d["templating"]["list"]) {
      if (v["type"] != "query") continue;
      std::smatch m;
      const std::string q = v["query"];
      ASSERT_TRUE(std::regex_match(q, m, kLabelValues)) << q;
      auto r = (*peer)->Query(Substitute("count by (" + m[2].str() + ") (" + m[1].str() + ")"));
      ASSERT_TRUE(r) << r.error().ToString();
      EXPECT_FALSE(r->empty()) << "variable " << v["name"] << " has no values: " << q;
    }
    for (const json& panel : d["panels"]) {
      for (const json& t : panel["targets"]) {
        const std::string expr = Substitute(t["expr"]);
        SCOPED_TRACE(panel["title"].get<std::string>() + ": " + expr);
        auto r = (*peer)->Query(expr);
        ++queries;
        ASSERT_TRUE(r) << r.error().ToString();
        if (std::regex_search(expr, kKey) && expr.find("xid") == std::string::npos) {
          EXPECT_FALSE(r->empty()) << "a key panel without data";
        }
      }
    }
  }
  EXPECT_GT(queries, 30);
  (*agent)->Signal(SIGTERM, seconds(15));
}

}  // namespace
}  // namespace warpscope::test
