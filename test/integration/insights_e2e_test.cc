// SPDX-License-Identifier: Apache-2.0
// The insights engine end to end with the real binaries: a simulated GPU whose cooling fails
// is named by a firing cooling_failure finding at GET /api/v1/insights within a minute, and the
// finding survives a server restart with its id and start.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "child_process.h"
#include "scrape.h"

namespace warpscope::test {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// The first cooling_failure finding in `body` (a /api/v1/insights answer) that is firing.
std::optional<json> FiringCoolingFailure(const std::string& body) {
  json doc = json::parse(body, nullptr, false);
  if (!doc.is_object() || !doc["insights"].is_array()) return std::nullopt;
  for (const json& f : doc["insights"]) {
    if (f["rule"] == "cooling_failure" && f["state"] == "firing") return f;
  }
  return std::nullopt;
}

TEST(InsightsE2ETest, ACoolingFailureFiresOnItsGpuAndSurvivesAServerRestart) {
  TempDir tmp;
  const std::string bin = WarpscopeBinary();
  // GPU 1 heats at 25 °C/min from the start; GPU 0 stays at 60 °C.
  const AgentServerFiles files = PrepareAgentAndServer(
      tmp, TwoGpuCoolingScenario("cooling-now", "{piecewise: [[0s, 60], [2m, 110]]}"));
  ASSERT_TRUE(files.ok);
  const std::vector<std::string> server_argv = {
      bin,
      "server",
      "--data-dir=" + tmp.path() + "/data",
      "--listen-address=127.0.0.1:" + std::to_string(files.server_port),
      "--auth-token-file=" + files.token,
      "--insights-interval=1s",
      "--gpu-hour-price=2.5"};
  auto server = ChildProcess::Start(server_argv, tmp.path());
  ASSERT_TRUE(server);
  WaitForHttp(files.server_port, "/healthz", [](const std::string&) { return true; });
  auto agent = ChildProcess::Start(PushingAgentArgv(files, "hot-node"), tmp.path());
  ASSERT_TRUE(agent);

  // Three 10-second buckets of the climb are enough: bounded at 90 s.
  std::string body = WaitForHttp(
      files.server_port, "/api/v1/insights",
      [](const std::string& b) { return FiringCoolingFailure(b).has_value(); }, 900);
  std::optional<json> finding = FiringCoolingFailure(body);
  ASSERT_TRUE(finding) << body << "\nserver: " << (*server)->Stderr();
  EXPECT_EQ((*finding)["host"], "hot-node");
  EXPECT_EQ((*finding)["attributes"]["gpu.index"], "1");
  EXPECT_EQ((*finding)["severity"], "page");
  EXPECT_NE((*finding)["summary"].get<std::string>().find("°C/min"), std::string::npos);
  // The finding page's full evidence: the temperature series behind it.
  const std::string id = (*finding)["id"].get<std::string>();
  httplib::Client api("127.0.0.1", files.server_port);
  auto one = api.Get("/api/v1/insights/" + id);
  ASSERT_TRUE(one);
  ASSERT_EQ(one->status, 200) << one->body;
  json full = json::parse(one->body);
  ASSERT_TRUE(full["evidence"]["series"].is_array());
  EXPECT_EQ(full["evidence"]["series"][0]["metric"], "gpu.temperature");

  // A restart on the same data dir continues the same finding.
  int status = (*server)->Signal(SIGTERM, seconds(15));
  ASSERT_TRUE(WIFEXITED(status)) << (*server)->Stderr();
  auto restarted = ChildProcess::Start(server_argv, tmp.path());
  ASSERT_TRUE(restarted);
  WaitForHttp(files.server_port, "/healthz", [](const std::string&) { return true; });
  auto again = api.Get("/api/v1/insights/" + id);
  ASSERT_TRUE(again);
  ASSERT_EQ(again->status, 200) << again->body << "\n" << (*restarted)->Stderr();
  EXPECT_EQ(json::parse(again->body)["start"], full["start"]);
  (*agent)->Signal(SIGTERM, seconds(15));
}

}  // namespace
}  // namespace warpscope::test
