// SPDX-License-Identifier: Apache-2.0
// The fleet_regression rule over the shipped scenarios' device model: the three
// fleet-regression nodes together raise one finding for their cluster, and every other
// scenario, alone on its host, stays silent, over two hours of simulated time. The long view is
// sampled from the simulator as the server's 1-minute buckets would hold it.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "server/insights/rules.h"
#include "server/insights/testing/inputs_builder.h"
#include "sim/nvml/scenario.h"
#include "sim/nvml/simulation.h"

namespace warpscope::server::insights {
namespace {

constexpr size_t kMinutes = 120;  // simulated time judged
constexpr size_t kLong = 90;      // the long view's minutes

// One host's GPUs, per simulated minute: utilization (0..1), power (W), memory (bytes).
struct Host {
  std::string name;
  std::vector<std::vector<double>> utilization, power, memory;  // [gpu][minute]
};

Host Sample(const std::string& scenario, const std::string& host) {
  Host h;
  h.name = host;
  auto s = sim::LoadScenarioFile(std::string(WARPSCOPE_SOURCE_DIR) + "/scenarios/" + scenario +
                                 ".yaml");
  EXPECT_TRUE(s) << s.error().ToString();
  if (!s) return h;
  sim::Simulation simulation(std::move(*s));
  const size_t gpus = simulation.device_count();
  h.utilization.assign(gpus, {});
  h.power.assign(gpus, {});
  h.memory.assign(gpus, {});
  for (size_t m = 0; m < kMinutes; ++m) {
    const double t1 = 60.0 * static_cast<double>(m), t2 = t1 + 60;
    for (size_t d = 0; d < gpus; ++d) {
      h.utilization[d].push_back(
          simulation.Average(d, std::nullopt, sim::SignalId::kGpuUtil, t1, t2) / 100);
      h.power[d].push_back(simulation.Average(d, std::nullopt, sim::SignalId::kPower, t1, t2));
      h.memory[d].push_back(
          simulation.Average(d, std::nullopt, sim::SignalId::kMemoryUsed, t1, t2));
    }
  }
  return h;
}

// What fleet_regression sees at minute `now` of the hosts' simulated time, its findings open or
// not as `open` says.
std::vector<Observation> EvaluateAt(const std::vector<Host>& hosts, size_t now, bool open) {
  testing::InputsBuilder b(90);
  auto view = std::make_shared<LongView>();
  view->buckets = kLong;
  view->start = b.inputs().end() - std::chrono::minutes(kLong);
  for (const Host& h : hosts) {
    for (size_t d = 0; d < h.utilization.size(); ++d) {
      const std::string uuid = h.name + "-GPU-" + std::to_string(d);
      b.Gpu(h.name, uuid, std::to_string(d));
      LongGpuInput& g = view->gpus.emplace_back();
      g.host = h.name;
      g.uuid = uuid;
      for (size_t i = 0; i < kLong; ++i) {
        // Bucket i holds minute now - kLong + i; before the agents started: no data.
        const bool data = now + i >= kLong;
        const size_t m = now + i - kLong;
        g.utilization.push_back(data ? h.utilization[d][m] : std::nan(""));
        g.power.push_back(data ? h.power[d][m] : std::nan(""));
        g.memory_used.push_back(data ? h.memory[d][m] : std::nan(""));
      }
    }
  }
  b.inputs().long_view = view;
  return testing::Observe(*MakeFleetRegressionRule(), b.inputs(),
                          open ? std::set<std::pair<std::string, std::string>>{{"", "fleet"}}
                               : std::set<std::pair<std::string, std::string>>{});
}

TEST(FleetRegressionScenariosTest, TheThreeNodesRaiseOneFindingForTheirCluster) {
  std::vector<Host> hosts;
  for (int n = 1; n <= 3; ++n) {
    hosts.push_back(Sample("fleet-regression-node" + std::to_string(n), "node" + std::to_string(n)));
  }
  std::optional<size_t> first;
  for (size_t now = 5; now <= kMinutes; ++now) {
    std::vector<Observation> seen = EvaluateAt(hosts, now, first.has_value());
    if (!first && !seen.empty()) first = now;
    if (first && now <= 55) {
      ASSERT_EQ(seen.size(), 1u) << "minute " << now;
      EXPECT_EQ(seen[0].entity, "fleet");
      EXPECT_EQ(seen[0].attributes.Get("host.count"), "3");
      EXPECT_EQ(seen[0].attributes.Get("gpu.count"), "24");
    }
  }
  ASSERT_TRUE(first) << "never raised";
  // The ramp runs from minute 10 to 50; 30 minutes of data are needed and a 10-point fall.
  EXPECT_GE(*first, 30u);
  EXPECT_LE(*first, 50u);
  // Any one of them alone is a fleet of 8 GPUs, and declines too.
  EXPECT_FALSE(EvaluateAt({hosts[0]}, 50, false).empty());
}

TEST(FleetRegressionScenariosTest, NoOtherScenarioRaisesIt) {
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(WARPSCOPE_SOURCE_DIR) + "/scenarios")) {
    const std::string name = entry.path().stem().string();
    if (entry.path().extension() != ".yaml" || name.starts_with("fleet-regression")) continue;
    std::vector<Host> hosts = {Sample(name, "host")};
    for (size_t now = 5; now <= kMinutes; now += 5) {
      EXPECT_TRUE(EvaluateAt(hosts, now, false).empty()) << name << " at minute " << now;
    }
  }
}

}  // namespace
}  // namespace warpscope::server::insights
