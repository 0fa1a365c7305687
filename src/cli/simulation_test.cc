// SPDX-License-Identifier: Apache-2.0
#include "cli/simulation.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

namespace warpscope::cli {
namespace {

const std::string kBin = std::string(WARPSCOPE_BINARY_DIR) + "/bin";

TEST(SimulationTest, ResolvesAShippedScenarioByName) {
  auto sim = PrepareSimulation("healthy-8xh100", kBin);
  ASSERT_TRUE(sim) << sim.error().message();
  EXPECT_NE(sim->scenario_path.find("healthy-8xh100.yaml"), std::string::npos);
  EXPECT_NE(sim->library_path.find("libnvidia-ml.so.1"), std::string::npos);
  EXPECT_EQ(std::string(getenv("WARPSCOPE_SIM_SCENARIO")), sim->scenario_path);
}

TEST(SimulationTest, CreatesTheSimulatedHostsDirectoryAndRemovesItWithTheLastCopy) {
  std::string root;
  {
    auto sim = PrepareSimulation("dataloader-bound", kBin);
    ASSERT_TRUE(sim) << sim.error().message();
    root = sim->host_root;
    EXPECT_NE(root.find("warpscope-sim-host-"), std::string::npos);
    EXPECT_TRUE(std::filesystem::is_directory(root));
    EXPECT_EQ(std::string(getenv("WARPSCOPE_SIM_HOST_ROOT")), root);
    Simulation copy = *sim;
    sim = base::Error(base::NotFound("dropped"));
    EXPECT_TRUE(std::filesystem::is_directory(root)) << "a copy still holds it";
    // Whatever the simulator wrote there goes with it.
    std::filesystem::create_directories(root + "/proc/42");
  }
  EXPECT_FALSE(std::filesystem::exists(root));
  // Each preparation gets its own directory: agents in one process never share a host.
  auto a = PrepareSimulation("healthy-8xh100", kBin);
  auto b = PrepareSimulation("healthy-8xh100", kBin);
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->host_root, b->host_root);
}

TEST(SimulationTest, UnknownScenarioListsTheShippedOnes) {
  auto sim = PrepareSimulation("no-such-scenario", kBin);
  ASSERT_FALSE(sim);
  EXPECT_NE(sim.error().message().find("healthy-8xh100"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::cli
