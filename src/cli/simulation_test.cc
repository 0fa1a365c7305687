// SPDX-License-Identifier: Apache-2.0
#include "cli/simulation.h"

#include <gtest/gtest.h>
#include <stdlib.h>

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

TEST(SimulationTest, UnknownScenarioListsTheShippedOnes) {
  auto sim = PrepareSimulation("no-such-scenario", kBin);
  ASSERT_FALSE(sim);
  EXPECT_NE(sim.error().message().find("healthy-8xh100"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::cli
