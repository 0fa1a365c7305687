// SPDX-License-Identifier: Apache-2.0
// `warpscope export` against the real peers: the exported alerting rules pass `promtool check
// rules`, and a real Prometheus that loads them while scraping the simulated agent fires the
// cooling-failure alert on the GPU whose cooling fails, not on its neighbours, and the idle,
// XID, power-drop, ECC and row-remapping alerts each on its own GPU; every query of the
// exported Grafana dashboards is valid PromQL to that Prometheus, and the key panels have data.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

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
constexpr size_t kGpus = 6;  // of kScenario

// One GPU per exported alert that can fire within a minute, and GPU 0 healthy: GPU 1 heats at
// 25 °C/min; GPU 2 is held idle by a notebook and its process hits XID 31 (an application's page
// fault); GPU 3 reports XID 48 (a double-bit ECC error); GPU 4 is throttled at 45 s (power and
// SM clock fall while busy); GPU 5's uncorrectable ECC counter climbs and a row remapping fails.
constexpr char kScenario[] = R"(
name: export-alerts
devices:
  - repeat: 6
    name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    memory_total: 80GiB
    power_limit: 700
    max_sm_clock: 1980
    signals:
      gpu_util: 95
      memory_used: 60GiB
      power: 650
      temperature: 60
      sm_clock: 1950
    processes:
      - {pid: "4100{i}", name: python3, memory: 8GiB, sm_util: 90, mem_util: 40}
    overrides:
      "1":
        signals:
          temperature: {piecewise: [[0s, 60], [2m, 110]]}
      "2":
        signals:
          gpu_util: 0
          memory_used: 10GiB
          power: 80
        faults:
          - {kind: xid, at: 5s, code: 31}
      "3":
        faults:
          - {kind: xid, at: 5s, code: 48}
      "4":
        signals:
          power: {piecewise: [[0s, 650], [45s, 650], [46s, 250]]}
          sm_clock: {piecewise: [[0s, 1950], [45s, 1950], [46s, 1200]]}
      "5":
        signals:
          ecc_dbe_rate: {step: {before: 0, after: 0.5, at: 10s}}
          remap_failure: {step: {before: 0, after: 1, at: 10s}}
)";

// Short windows, so that a test of a minute or two holds them: the keys the server reads.
constexpr char kConfig[] = R"(
[server.insights]
cooling-window = "30s"
cooling-min-rise-c = 4
idle-window = "20s"
)";

// The alerts of an /api/v1/alerts answer as "alertname gpu=N state", sorted.
std::set<std::string> ActiveAlerts(const std::string& body) {
  std::set<std::string> out;
  json doc = json::parse(body, nullptr, false);
  if (!doc.is_object() || !doc["data"]["alerts"].is_array()) return out;
  for (const json& a : doc["data"]["alerts"]) {
    out.insert(a["labels"].value("alertname", "") + " gpu=" + a["labels"].value("gpu", "") + " " +
               a.value("state", ""));
  }
  return out;
}

// The alerts `GpuCoolingFailure` and the others each fire on their GPU, and nothing else fires.
const std::set<std::string> kFiring = {
    "GpuCoolingFailure gpu=1 firing", "GpuIdleAllocated gpu=2 firing",
    "GpuApplicationXid gpu=2 firing", "GpuXidError gpu=3 firing",
    "GpuPowerDrop gpu=4 firing",      "GpuUncorrectableEccErrors gpu=5 firing",
    "GpuRowRemapFailure gpu=5 firing"};

bool AllFiring(const std::string& body) {
  const std::set<std::string> active = ActiveAlerts(body);
  return std::includes(active.begin(), active.end(), kFiring.begin(), kFiring.end());
}

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

// `expr` as Grafana sends it for host kHost and GPU 2, the one with a process, an XID and idle
// memory ($__rate_interval: 1m, $__range: 5m).
std::string Substitute(std::string expr) {
  const std::pair<const char*, const char*> vars[] = {{"${Hostname}", kHost},
                                                      {"$Hostname", kHost},
                                                      {"$__rate_interval", "1m"},
                                                      {"$__range", "5m"},
                                                      {"$gpu", "2"}};
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

  // `warpscope agent` on kScenario with `extra` flags, serving /metrics on a free port, which
  // `agent_port` receives.
  base::Result<std::unique_ptr<ChildProcess>> StartAgent(std::vector<std::string> extra,
                                                         int& agent_port) {
    const std::string scenario = tmp_.path() + "/scenario.yaml";
    WARPSCOPE_RETURN_IF_ERROR(base::WriteFile(scenario, kScenario));
    agent_port = PickFreePort();
    std::vector<std::string> argv = {bin_,
                                     "agent",
                                     "--simulate",
                                     scenario,
                                     "--collect-metrics-interval=500ms",
                                     "--export-metrics-interval=1s",
                                     "--listen-address=127.0.0.1:" + std::to_string(agent_port),
                                     std::string("--hostname=") + kHost};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return ChildProcess::Start(argv, tmp_.path());
  }

  TempDir tmp_;
  std::string bin_;
};

TEST_F(ExportE2ETest, RulesPassPromtoolAndFireOnTheirGpusOnly) {
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

  int agent_port = 0;
  auto agent = StartAgent({"--tags=cluster:ci"}, agent_port);
  ASSERT_TRUE(agent) << agent.error().message();
  PrometheusPeer::Options o;
  o.targets = {{"warpscope", "127.0.0.1:" + std::to_string(agent_port)}};
  o.rule_files = {rules};
  o.evaluation_interval = seconds(1);
  auto peer = PrometheusPeer::Start(o);
  ASSERT_TRUE(peer) << peer.error().ToString();

  // 4 °C of rise at 25 °C/min takes 10 s, the power drop comes at 45 s; bounded at 150 s.
  const std::string body = WaitForHttp((*peer)->port(), "/api/v1/alerts", AllFiring, 1500);
  const std::set<std::string> active = ActiveAlerts(body);
  EXPECT_TRUE(AllFiring(body)) << ::testing::PrintToString(active) << "\n"
                               << (*peer)->LogTail()
                               << "\nagent: " << (*agent)->Stderr().substr(0, 2000);
  // Nothing else fires, and none of these alerts is even pending on another GPU.
  for (const std::string& a : active) {
    const std::string name = a.substr(0, a.find(' '));
    const bool expected_name = std::any_of(
        kFiring.begin(), kFiring.end(), [&](const auto& f) { return f.starts_with(name + " "); });
    if (a.ends_with(" firing") || expected_name) {
      EXPECT_TRUE(kFiring.contains(a)) << "unexpected alert: " << a;
    }
  }
  for (const json& a : Alerts(body, "GpuCoolingFailure")) {
    EXPECT_EQ(a["labels"]["gpu"], "1") << a.dump();
    EXPECT_EQ(a["labels"]["Hostname"], kHost);
    EXPECT_EQ(a["labels"]["severity"], "page");
    EXPECT_EQ(a["labels"]["rule"], "cooling_failure");
    EXPECT_THAT(a["annotations"]["summary"].get<std::string>(),
                ::testing::HasSubstr("GPU 1 of export-node"));
    EXPECT_THAT(a["annotations"]["description"].get<std::string>(), ::testing::HasSubstr("°C/min"));
  }
  for (const json& a : Alerts(body, "GpuApplicationXid")) {
    EXPECT_EQ(a["labels"]["xid"], "31") << a.dump();
    EXPECT_EQ(a["labels"]["severity"], "ticket");
  }
  for (const json& a : Alerts(body, "GpuIdleAllocated")) {
    EXPECT_EQ(a["labels"]["severity"], "ticket");
    EXPECT_EQ(a["labels"]["rule"], "idle_allocated");
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

  int agent_port = 0;
  auto agent = StartAgent({}, agent_port);
  ASSERT_TRUE(agent) << agent.error().message();
  PrometheusPeer::Options o;
  o.targets = {{"warpscope", "127.0.0.1:" + std::to_string(agent_port)}};
  auto peer = PrometheusPeer::Start(o);
  ASSERT_TRUE(peer) << peer.error().ToString();
  // Two scrapes of every GPU, so that rates and increases have their samples.
  auto ready = (*peer)->WaitForQuery(
      "count_over_time(DCGM_FI_DEV_GPU_UTIL[1m])",
      [](const json& r) { return r.size() == kGpus && r[0]["value"][1].get<std::string>() != "1"; },
      seconds(60));
  ASSERT_TRUE(ready) << ready.error().ToString();
  auto xids = (*peer)->WaitForQuery(
      "warpscope_gpu_xid_errors_total", [](const json& r) { return r.size() == 2; }, seconds(60));
  ASSERT_TRUE(xids) << xids.error().ToString();

  // The key metrics of each level: their panels must show data.
  const std::regex kKey(
      R"(DCGM_FI_DEV_(GPU_UTIL|POWER_USAGE|GPU_TEMP|FB_USED)\b|warpscope_gpu_process_memory|)"
      R"(warpscope_gpu_xid|warpscope_host_(cpu|memory))");
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
        if (std::regex_search(expr, kKey)) {
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
