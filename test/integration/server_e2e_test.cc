// SPDX-License-Identifier: Apache-2.0
// Agent -> server delivery with the real binaries: windows pushed through a server outage
// (kill -9 and restart on the same data dir) all arrive, once, and the query API serves them.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "base/file_util.h"
#include "child_process.h"
#include "scrape.h"

namespace warpscope::test {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kScenario[] = R"(
name: push
devices:
  - name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    memory_total: 80GiB
    signals:
      gpu_util: 97
      temperature: 62
      memory_used: 20GiB
      # Rises ~0.4 W per 400 ms window, so every window's last power reading is its own: a
      # window stored twice shows as a repeated value, wherever its copy landed.
      power: {ramp: {from: 100, to: 700, duration: 10m}}
)";

TEST(ServerE2ETest, WindowsSurviveAServerKillAndArriveOnce) {
  TempDir tmp;
  const std::string bin = WarpscopeBinary();
  const AgentServerFiles files = PrepareAgentAndServer(tmp, kScenario);
  ASSERT_TRUE(files.ok);
  const std::string& scenario = files.scenario;
  const std::string& token = files.token;
  const int server_port = files.server_port;
  const int agent_port = files.agent_port;
  const std::vector<std::string> server_argv = {
      bin, "server", "--data-dir=" + tmp.path() + "/data",
      "--listen-address=127.0.0.1:" + std::to_string(server_port), "--auth-token-file=" + token};

  auto server = ChildProcess::Start(server_argv, tmp.path());
  ASSERT_TRUE(server);
  WaitForHttp(server_port, "/healthz", [](const std::string&) { return true; });
  auto agent = ChildProcess::Start(
      {bin, "agent", "--simulate", scenario, "--enable-host-metrics=false",
       "--collect-metrics-interval=200ms", "--export-metrics-interval=400ms",
       "--listen-address=127.0.0.1:" + std::to_string(agent_port), "--hostname=push-node",
       "--server=http://127.0.0.1:" + std::to_string(server_port), "--auth-token-file=" + token,
       "--buffer-dir=" + tmp.path() + "/spool"},
      tmp.path());
  ASSERT_TRUE(agent);

  // Some windows arrive.
  WaitForHttp(server_port, "/metrics", [](const std::string& b) {
    return PromSample(b, "warpscope_server_batches_total").value_or(0) >= 3;
  });
  // The server dies hard; the agent keeps producing windows meanwhile.
  ASSERT_NE((*server)->Signal(SIGKILL, seconds(5)), -1);
  auto exported = [&](const std::string& b) {
    return PromSample(b, "warpscope_agent_exports_total", {"exporter=\"server\""}).value_or(0);
  };
  double before =
      exported(WaitForHttp(agent_port, "/metrics", [](const std::string&) { return true; }));
  WaitForHttp(agent_port, "/metrics",
              [&](const std::string& b) { return exported(b) >= before + 4; });

  // Back on the same port and data: the queued windows are delivered (after the exporter's
  // current backoff), so the stored points catch up with what the agent exported.
  auto restarted = ChildProcess::Start(server_argv, tmp.path());
  ASSERT_TRUE(restarted);
  WaitForHttp(server_port, "/healthz", [](const std::string&) { return true; });
  httplib::Client api("127.0.0.1", server_port);
  auto stored_points = [&]() -> size_t {
    auto res = api.Get(
        "/api/v1/query_range?metric=gpu.utilization&host=push-node&kind=gpu&start=now-10m&"
        "end=now%2B1m&step=100ms&agg=last");
    if (!res || res->status != 200) return 0;
    json r = json::parse(res->body);
    return r["series"].size() == 1 ? r["series"][0]["points"].size() : 0;
  };
  double windows = 0;
  size_t points = 0;
  for (int i = 0; i < 300; ++i) {  // bounded: 30 s
    windows =
        exported(WaitForHttp(agent_port, "/metrics", [](const std::string&) { return true; }));
    points = stored_points();
    if (points >= static_cast<size_t>(windows)) break;
    std::this_thread::sleep_for(milliseconds(100));  // bounded polling of other processes
  }
  ASSERT_GE(points, static_cast<size_t>(windows)) << "windows lost across the outage";
  windows = exported(WaitForHttp(agent_port, "/metrics", [](const std::string&) { return true; }));
  int status = (*agent)->Signal(SIGTERM, seconds(15));
  ASSERT_TRUE(WIFEXITED(status)) << (*agent)->Stderr();

  // Every window the agent produced is stored once: one point per window at a fine step (the
  // agent may export one more window between the read above and its exit).
  auto res = api.Get(
      "/api/v1/query_range?metric=gpu.utilization&host=push-node&kind=gpu&start=now-10m&"
      "end=now%2B1m&step=100ms&agg=last");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  json r = json::parse(res->body);
  ASSERT_EQ(r["series"].size(), 1u) << res->body.substr(0, 500);
  points = r["series"][0]["points"].size();
  EXPECT_GE(points, static_cast<size_t>(windows));
  EXPECT_LE(points, static_cast<size_t>(windows) + 2);
  for (const auto& p : r["series"][0]["points"]) EXPECT_DOUBLE_EQ(p[1].get<double>(), 0.97);

  // No window is stored twice: on the power ramp each window's last reading is distinct and
  // later windows read higher, so the points in time order must strictly increase.
  auto power = api.Get(
      "/api/v1/query_range?metric=gpu.power.usage&host=push-node&kind=gpu&start=now-10m&"
      "end=now%2B1m&step=100ms&agg=last");
  ASSERT_TRUE(power);
  ASSERT_EQ(power->status, 200) << power->body;
  json pr = json::parse(power->body);
  ASSERT_EQ(pr["series"].size(), 1u) << power->body.substr(0, 500);
  const json& watts = pr["series"][0]["points"];
  EXPECT_EQ(watts.size(), points) << "one power point per stored window";
  for (size_t i = 1; i < watts.size(); ++i) {
    EXPECT_GT(watts[i][1].get<double>(), watts[i - 1][1].get<double>())
        << "window at " << watts[i][0] << " repeats or precedes the one before: stored twice?";
  }
}

TEST(ServerE2ETest, UpRunsServerAndAgentWithAGeneratedToken) {
  TempDir tmp;
  const std::string bin = std::string(WARPSCOPE_BINARY_DIR) + "/bin/warpscope";
  const std::string scenario = tmp.path() + "/push.yaml";
  ASSERT_TRUE(base::WriteFile(scenario, kScenario).ok());
  const int server_port = PickFreePort();
  const int agent_port = PickFreePort();
  auto up = ChildProcess::Start(
      {bin, "up", "--simulate", scenario, "--data-dir=" + tmp.path() + "/up",
       "--port=" + std::to_string(server_port), "--agent-port=" + std::to_string(agent_port)},
      tmp.path());
  ASSERT_TRUE(up);
  // The first window reaches the server after one export interval (10 s in `up`).
  std::string body = WaitForHttp(
      server_port, "/api/v1/entities?kind=gpu",
      [](const std::string& b) { return b.find("\"id\":\"GPU-") != std::string::npos; });
  ASSERT_NE(body.find("\"id\":\"GPU-"), std::string::npos) << (*up)->Stderr();
  EXPECT_NE(WaitForHttp(agent_port, "/metrics", [](const std::string&) { return true; })
                .find("DCGM_FI_DEV_GPU_UTIL"),
            std::string::npos);
  // The CPU profiler is on in `up`: its events are open (the test runs as root in CI; without
  // the privilege it would fall back to this user's processes).
  const std::string events = "\nwarpscope_cpu_profiler_events{";
  const std::string metrics = WaitForHttp(agent_port, "/metrics", [&](const std::string& b) {
    return b.find(events) != std::string::npos;
  });
  const size_t at = metrics.find(events);
  ASSERT_NE(at, std::string::npos) << (*up)->Stderr();
  const size_t value = metrics.find("} ", at);
  ASSERT_NE(value, std::string::npos);
  EXPECT_GT(std::atof(metrics.c_str() + value + 2), 0.0) << (*up)->Stderr();
  // The generated token protects ingest and is private to its owner.
  struct stat st {};
  ASSERT_EQ(stat((tmp.path() + "/up/token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  httplib::Client c("127.0.0.1", server_port);
  EXPECT_EQ(c.Post("/api/v1/ingest/batch", "x", "application/x-protobuf")->status, 401);
  EXPECT_NE((*up)->Stdout().find("warpscope is up"), std::string::npos);
  int status = (*up)->Signal(SIGTERM, seconds(15));
  ASSERT_TRUE(WIFEXITED(status)) << (*up)->Stderr();
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ServerE2ETest, BadServerFlagsExitWithAMessage) {
  TempDir tmp;
  const std::string bin = std::string(WARPSCOPE_BINARY_DIR) + "/bin/warpscope";
  auto s = ChildProcess::Start(
      {bin, "server", "--data-dir=" + tmp.path(), "--retention-raw=30d", "--retention-1m=1d"},
      tmp.path());
  ASSERT_TRUE(s);
  int status = (*s)->Wait(seconds(10));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE((*s)->Stderr().find("retention"), std::string::npos);
  auto t = ChildProcess::Start(
      {bin, "server", "--data-dir=" + tmp.path(), "--auth-token-file=" + tmp.path() + "/missing"},
      tmp.path());
  ASSERT_TRUE(t);
  status = (*t)->Wait(seconds(10));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  EXPECT_NE((*t)->Stderr().find("--auth-token-file"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::test
