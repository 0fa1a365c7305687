// SPDX-License-Identifier: Apache-2.0
// A GPU whose NVML calls hang, with the real binaries: the agent on 8 simulated GPUs with GPU 3
// hung for a while (the simulator's slow fault) keeps the other seven GPUs and the host metrics
// on their cadence on /metrics and at the server, reports GPU 3 late and degraded with its
// counter, and takes it back when the hang ends.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/file_util.h"
#include "child_process.h"
#include "scrape.h"

namespace warpscope::test {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kGpus = 8;
constexpr int kHungGpu = 3;
// In --simulate mode simulated time is the time since the agent loaded NVML.
constexpr int kHangFromSeconds = 5;
constexpr int kHangUntilSeconds = 20;
constexpr int kIntervalSeconds = 2;  // collect and export

constexpr char kScenario[] = R"(
name: gpu-hang
devices:
  - repeat: 8
    name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-00000000000{i}"
    memory_total: 80GiB
    signals: {gpu_util: 90, power: 650, temperature: 62, memory_used: 20GiB}
    overrides:
      "3": {faults: [{kind: slow, hang: true, at: 5s, until: 20s}]}
)";

// Polls GET `path` until `done(body)` (bounded: ~40 s, longer than the hang).
std::string WaitFor(int port, const std::string& path,
                    const std::function<bool(const std::string&)>& done) {
  return WaitForHttp(port, path, done, /*attempts=*/400);
}

std::string GpuLabel(int gpu) { return "gpu=\"" + std::to_string(gpu) + "\""; }

std::optional<double> Energy(const std::string& body, int gpu) {
  return PromSample(body, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", {GpuLabel(gpu)});
}
// Host CPU time over all modes: grows with wall time, busy or idle.
std::optional<double> HostCpuSeconds(const std::string& body) {
  std::optional<double> sum;
  const std::string name = "warpscope_host_cpu_seconds_total{";
  for (std::string_view line : base::SplitString(body, "\n")) {
    if (line.rfind(name, 0) != 0) continue;
    sum = sum.value_or(0) + std::stod(std::string(line.substr(line.rfind(' ') + 1)));
  }
  return sum;
}
std::optional<double> SourceCounter(const std::string& body, const std::string& name,
                                    const std::string& source, const std::string& reason = "") {
  std::vector<std::string> needles = {"source=\"" + source + "\""};
  if (!reason.empty()) needles.push_back("reason=\"" + reason + "\"");
  return PromSample(body, name, needles);
}

// GPU 3 is hung and reported so; the others and the host are fresh in this scrape.
void ExpectHungScrape(const std::string& body) {
  for (int gpu = 0; gpu < kGpus; ++gpu) {
    SCOPED_TRACE("gpu " + std::to_string(gpu));
    if (gpu == kHungGpu) {
      EXPECT_EQ(PromSample(body, "warpscope_gpu_degraded", {GpuLabel(gpu)}), 1);
      EXPECT_FALSE(PromSample(body, "DCGM_FI_DEV_GPU_TEMP", {GpuLabel(gpu)}));
      EXPECT_FALSE(Energy(body, gpu));
    } else {
      EXPECT_EQ(PromSample(body, "warpscope_gpu_degraded", {GpuLabel(gpu)}), 0);
      EXPECT_EQ(PromSample(body, "DCGM_FI_DEV_GPU_TEMP", {GpuLabel(gpu)}), 62);
    }
  }
  // Only the GPU is late; the NVML source as a whole and the host source answer in time.
  EXPECT_EQ(SourceCounter(body, "warpscope_agent_source_errors_total", "nvml", "gpu_late"), 1);
  EXPECT_EQ(SourceCounter(body, "warpscope_agent_source_late_total", "nvml"), 0);
  EXPECT_EQ(SourceCounter(body, "warpscope_agent_source_late_total", "procfs"), 0);
}

// Points per GPU entity of one metric at the server, over the whole run, one per 1 s step.
std::map<std::string, size_t> PointsPerEntity(httplib::Client& api, const std::string& metric,
                                              const std::string& kind) {
  std::map<std::string, size_t> out;
  auto res = api.Get("/api/v1/query_range?metric=" + metric + "&host=hang-node&kind=" + kind +
                     "&start=now-10m&end=now%2B1m&step=1s&agg=last");
  if (!res || res->status != 200) return out;
  json r = json::parse(res->body);
  for (const auto& s : r["series"]) out[s["entity"].get<std::string>()] = s["points"].size();
  return out;
}

TEST(GpuHangE2ETest, HungGpuHoldsUpNeitherTheOtherGpusNorTheHost) {
  TempDir tmp;
  const std::string bin = WarpscopeBinary();
  const AgentServerFiles files = PrepareAgentAndServer(tmp, kScenario);
  ASSERT_TRUE(files.ok);
  const std::string& scenario = files.scenario;
  const std::string& token = files.token;
  const int server_port = files.server_port;
  const int agent_port = files.agent_port;
  auto server = ChildProcess::Start(
      {bin, "server", "--data-dir=" + tmp.path() + "/data",
       "--listen-address=127.0.0.1:" + std::to_string(server_port), "--auth-token-file=" + token},
      tmp.path());
  ASSERT_TRUE(server) << server.error().message();
  WaitFor(server_port, "/healthz", [](const std::string&) { return true; });
  // 2 s cycles: the agent waits up to 1 s for the NVML source, which waits up to 500 ms for
  // each GPU (room for a loaded 2-core machine: a healthy GPU answers in microseconds).
  auto agent = ChildProcess::Start(
      {bin, "agent", "--simulate", scenario, "--collect-metrics-interval=2s",
       "--export-metrics-interval=2s", "--listen-address=127.0.0.1:" + std::to_string(agent_port),
       "--hostname=hang-node", "--server=http://127.0.0.1:" + std::to_string(server_port),
       "--auth-token-file=" + token},
      tmp.path());
  ASSERT_TRUE(agent) << agent.error().message();

  // Before the hang: every GPU answers.
  std::string body = WaitFor(agent_port, "/metrics", [](const std::string& b) {
    for (int gpu = 0; gpu < kGpus; ++gpu) {
      if (!PromSample(b, "DCGM_FI_DEV_GPU_TEMP", {GpuLabel(gpu)})) return false;
    }
    return true;
  });
  ASSERT_TRUE(PromSample(body, "DCGM_FI_DEV_GPU_TEMP", {GpuLabel(kHungGpu)})) << "agent stderr:\n"
                                                                              << (*agent)->Stderr();

  // GPU 3 hangs: it is counted late once, and the next scrape shows it degraded.
  auto late = [](const std::string& b) {
    return SourceCounter(b, "warpscope_agent_source_errors_total", "nvml", "gpu_late")
               .value_or(0) >= 1;
  };
  std::string first = WaitFor(agent_port, "/metrics", late);
  ASSERT_TRUE(late(first)) << "agent stderr:\n" << (*agent)->Stderr();
  ExpectHungScrape(first);

  // Two cycles later the seven other GPUs and the host have moved on; GPU 3 is still out.
  const double energy0 = Energy(first, 0).value_or(0);
  std::string second = WaitFor(agent_port, "/metrics", [&](const std::string& b) {
    // mJ: two cycles at 650 W
    return Energy(b, 0).value_or(0) >= energy0 + 2 * kIntervalSeconds * 650 * 1000 * 0.9;
  });
  ExpectHungScrape(second);
  for (int gpu = 0; gpu < kGpus; ++gpu) {
    if (gpu == kHungGpu) continue;
    SCOPED_TRACE("gpu " + std::to_string(gpu));
    ASSERT_TRUE(Energy(first, gpu) && Energy(second, gpu));
    EXPECT_GT(*Energy(second, gpu), *Energy(first, gpu));
  }
  ASSERT_TRUE(HostCpuSeconds(first) && HostCpuSeconds(second));
  EXPECT_GT(*HostCpuSeconds(second), *HostCpuSeconds(first));

  // The hang ends: GPU 3 rejoins, without a second late count.
  std::string back = WaitFor(agent_port, "/metrics", [](const std::string& b) {
    return PromSample(b, "DCGM_FI_DEV_GPU_TEMP", {GpuLabel(kHungGpu)}).has_value();
  });
  ASSERT_EQ(PromSample(back, "DCGM_FI_DEV_GPU_TEMP", {GpuLabel(kHungGpu)}), 62)
      << "agent stderr:\n"
      << (*agent)->Stderr();
  EXPECT_EQ(PromSample(back, "warpscope_gpu_degraded", {GpuLabel(kHungGpu)}), 0);
  EXPECT_EQ(SourceCounter(back, "warpscope_agent_source_errors_total", "nvml", "gpu_late"), 1);

  // At the server: the late and recovered events of GPU 3, and the same cadence.
  const std::string hung_id = "GPU-00000000-0000-4000-8000-00000000000" + std::to_string(kHungGpu);
  std::string events =
      WaitFor(server_port, "/api/v1/events?host=hang-node&start=now-10m&end=now%2B1m",
              [](const std::string& b) { return b.find("gpu_recovered") != std::string::npos; });
  std::map<double, std::string> kinds;  // by time
  const json parsed = json::parse(events);
  for (const auto& e : parsed["events"]) {
    if (e["entity"] == hung_id) kinds[e["time"].get<double>()] = e["kind"].get<std::string>();
  }
  std::vector<std::string> in_order;
  for (const auto& [time, kind] : kinds) in_order.push_back(kind);
  EXPECT_EQ(in_order, (std::vector<std::string>{"gpu_late", "gpu_recovered"}))
      << events.substr(0, 2000);

  const int status = (*agent)->Signal(SIGTERM, seconds(15));
  ASSERT_TRUE(WIFEXITED(status)) << (*agent)->Stderr();
  EXPECT_EQ(WEXITSTATUS(status), 0);
  httplib::Client api("127.0.0.1", server_port);
  const auto gpus = PointsPerEntity(api, "gpu.temperature", "gpu");
  const auto host = PointsPerEntity(api, "host.memory.used", "host");
  ASSERT_EQ(gpus.size(), static_cast<size_t>(kGpus));
  ASSERT_EQ(host.size(), 1u);
  const size_t healthy = gpus.at("GPU-00000000-0000-4000-8000-000000000000");
  EXPECT_GE(healthy, static_cast<size_t>(kHangUntilSeconds / kIntervalSeconds));  // one a cycle
  for (const auto& [entity, points] : gpus) {
    SCOPED_TRACE(entity);
    if (entity == hung_id) {
      // Out for the hang (15 s): its windows carry no temperature meanwhile.
      EXPECT_LE(points + (kHangUntilSeconds - kHangFromSeconds) / kIntervalSeconds - 2, healthy);
    } else {
      EXPECT_NEAR(static_cast<double>(points), static_cast<double>(healthy), 1);
    }
  }
  EXPECT_NEAR(static_cast<double>(host.begin()->second), static_cast<double>(healthy), 1);
}

}  // namespace
}  // namespace warpscope::test
