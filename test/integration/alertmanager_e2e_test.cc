// SPDX-License-Identifier: Apache-2.0
// Findings reach a real Alertmanager (Debian's prometheus-alertmanager, on loopback) and resolve
// there: a simulated GPU whose cooling fails for half a minute becomes a GpuCoolingFailure alert
// with the finding's labels and a link into the UI, delivered even though Alertmanager starts
// only after the finding fired (the server retries), and the alert leaves Alertmanager's active
// list once the finding resolves.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "base/file_util.h"
#include "base/testing/peer.h"
#include "child_process.h"
#include "scrape.h"

namespace warpscope::test {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr char kAlertmanager[] = "/usr/bin/prometheus-alertmanager";

// A 30 s slope window (three 10 s buckets, the fewest the rule reads): the finding's condition
// ends soon after the climb does.
constexpr char kServerConfig[] = R"([server.insights]
cooling-window = "30s"
cooling-clear-after = "20s"
)";

// Every route goes to a receiver that notifies nobody: the test reads the alerts API.
constexpr char kAlertmanagerConfig[] = R"(route:
  receiver: nobody
  group_wait: 1s
receivers:
  - name: nobody
)";

// The GpuCoolingFailure alerts of a GET /api/v2/alerts answer.
std::vector<json> CoolingAlerts(const std::string& body) {
  std::vector<json> out;
  json doc = json::parse(body, nullptr, false);
  if (!doc.is_array()) return out;
  for (const json& a : doc) {
    if (a.is_object() && a["labels"].is_object() &&
        a["labels"]["alertname"] == "GpuCoolingFailure") {
      out.push_back(a);
    }
  }
  return out;
}

bool FindingIs(const std::string& body, std::string_view state) {
  json doc = json::parse(body, nullptr, false);
  if (!doc.is_object() || !doc["insights"].is_array()) return false;
  for (const json& f : doc["insights"]) {
    if (f["rule"] == "cooling_failure" && f["state"] == state) return true;
  }
  return false;
}

TEST(AlertmanagerE2ETest, ACoolingFailureFiresInAlertmanagerAndResolvesThere) {
  WARPSCOPE_REQUIRE_PEER(access(kAlertmanager, X_OK) == 0, "prometheus-alertmanager",
                         "run scripts/setup.sh --test (apt-get install prometheus-alertmanager)");
  if (IsSkipped() || HasFatalFailure()) return;
  TempDir tmp;
  const std::string bin = WarpscopeBinary();
  // GPU 1 heats at 30 °C/min for a minute, then holds; GPU 0 stays at 60 °C.
  const AgentServerFiles files = PrepareAgentAndServer(
      tmp,
      TwoGpuCoolingScenario("cooling-then-steady", "{piecewise: [[0s, 60], [60s, 90], [1h, 90]]}"));
  ASSERT_TRUE(files.ok);
  const std::string config = tmp.path() + "/server.toml";
  const std::string am_config = tmp.path() + "/alertmanager.yml";
  ASSERT_TRUE(base::WriteFile(config, kServerConfig).ok());
  ASSERT_TRUE(base::WriteFile(am_config, kAlertmanagerConfig).ok());
  const int am_port = PickFreePort();
  const std::string am_url = "http://127.0.0.1:" + std::to_string(am_port);

  // The server first: Alertmanager is down when the finding fires.
  auto server =
      ChildProcess::Start({bin, "--config", config, "server", "--data-dir=" + tmp.path() + "/data",
                           "--listen-address=127.0.0.1:" + std::to_string(files.server_port),
                           "--auth-token-file=" + files.token, "--insights-interval=1s",
                           "--alertmanager-url=" + am_url},
                          tmp.path());
  ASSERT_TRUE(server);
  WaitForHttp(files.server_port, "/healthz", [](const std::string&) { return true; });
  auto agent = ChildProcess::Start(PushingAgentArgv(files, "hot-node"), tmp.path());
  ASSERT_TRUE(agent);
  std::string insights = WaitForHttp(
      files.server_port, "/api/v1/insights",
      [](const std::string& b) { return FindingIs(b, "firing"); }, 900);
  ASSERT_TRUE(FindingIs(insights, "firing")) << insights << "\n" << (*server)->Stderr();
  // The POSTs to the absent Alertmanager failed and were counted; the engine went on.
  std::string metrics = WaitForHttp(files.server_port, "/metrics", [&](const std::string& b) {
    return b.find("warpscope_server_alert_posts_failed_total{alertmanager=\"" + am_url + "\"} 0") ==
               std::string::npos &&
           b.find("warpscope_server_alert_posts_failed_total{alertmanager=") != std::string::npos;
  });
  EXPECT_NE(metrics.find("warpscope_server_alert_posts_failed_total{alertmanager=\"" + am_url),
            std::string::npos)
      << metrics;

  auto am = ChildProcess::Start(
      {kAlertmanager, "--config.file=" + am_config, "--storage.path=" + tmp.path() + "/am",
       "--web.listen-address=127.0.0.1:" + std::to_string(am_port), "--cluster.listen-address="},
      tmp.path());
  ASSERT_TRUE(am);
  // Within the retry backoff (at most 30 s), the alert is there with the finding's labels.
  std::string body = WaitForHttp(
      am_port, "/api/v2/alerts", [](const std::string& b) { return !CoolingAlerts(b).empty(); },
      600);
  std::vector<json> alerts = CoolingAlerts(body);
  ASSERT_EQ(alerts.size(), 1u) << body << "\nserver: " << (*server)->Stderr()
                               << "\nalertmanager: " << (*am)->Stderr();
  const json& labels = alerts[0]["labels"];
  EXPECT_EQ(labels["severity"], "page");
  EXPECT_EQ(labels["rule"], "cooling_failure");
  EXPECT_EQ(labels["host"], "hot-node");
  EXPECT_EQ(labels["gpu"], "1");
  EXPECT_TRUE(labels["UUID"].is_string() && labels["UUID"].get<std::string>().starts_with("GPU-"))
      << labels;
  EXPECT_NE(alerts[0]["annotations"]["summary"].get<std::string>().find("°C/min"),
            std::string::npos)
      << alerts[0];
  EXPECT_TRUE(alerts[0]["generatorURL"].get<std::string>().starts_with(
      "http://127.0.0.1:" + std::to_string(files.server_port) + "/insights/f"))
      << alerts[0]["generatorURL"];
  EXPECT_EQ(alerts[0]["status"]["state"], "active");

  // The climb ended long ago; once the finding resolves (its 20-second clear), the resolution
  // reaches Alertmanager and the alert is no longer active there. The firing copies carry a
  // 4-minute lease, so only the resolution can end it this soon.
  body = WaitForHttp(
      am_port, "/api/v2/alerts", [](const std::string& b) { return CoolingAlerts(b).empty(); },
      2400);
  EXPECT_TRUE(CoolingAlerts(body).empty()) << body << "\nserver: " << (*server)->Stderr();
  insights = WaitForHttp(files.server_port, "/api/v1/insights",
                         [](const std::string& b) { return FindingIs(b, "resolved"); });
  EXPECT_TRUE(FindingIs(insights, "resolved")) << insights;
  metrics = WaitForHttp(files.server_port, "/metrics", [](const std::string&) { return true; });
  EXPECT_EQ(metrics.find("warpscope_server_alerts_sent_total{alertmanager=\"" + am_url + "\"} 0"),
            std::string::npos)
      << metrics;

  (*agent)->Signal(SIGTERM, seconds(15));
  (*server)->Signal(SIGTERM, seconds(15));
  (*am)->Signal(SIGTERM, seconds(15));
}

}  // namespace
}  // namespace warpscope::test
