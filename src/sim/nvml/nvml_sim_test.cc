// SPDX-License-Identifier: Apache-2.0
// In-process tests of NvmlSim (the library's core, without dlopen): lifecycle and threading.
#include "sim/nvml/nvml_sim.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <thread>

namespace warpscope::sim {
namespace {

using ::testing::HasSubstr;

std::string WriteScenario(const std::string& name, const std::string& yaml) {
  std::string path = testing::TempDir() + "/nvml_sim_test_" + name + ".yaml";
  std::ofstream(path) << yaml;
  return path;
}

TEST(NvmlSimTest, InitReportsWhyTheScenarioIsUnusable) {
  NvmlSim sim;
  setenv(kScenarioEnvVar, "/nonexistent/x.yaml", 1);
  EXPECT_EQ(sim.Init("nvmlInit_v2"), abi::kErrorUnknown);
  EXPECT_THAT(sim.LastError(), HasSubstr("/nonexistent/x.yaml"));
  setenv(kScenarioEnvVar, WriteScenario("ok", "name: ok\ndevices: [{}]\n").c_str(), 1);
  EXPECT_EQ(sim.Init("nvmlInit_v2"), abi::kSuccess);
  EXPECT_STREQ(sim.LastError(), "");
  EXPECT_EQ(sim.Shutdown(), abi::kSuccess);
}

TEST(NvmlSimTest, ShutdownWakesABlockedWaiter) {
  NvmlSim sim;
  setenv(kScenarioEnvVar, WriteScenario("wait", "name: w\ndevices: [{}]\n").c_str(), 1);
  sim.SetTimeNs(0);
  ASSERT_EQ(sim.Init("nvmlInit_v2"), abi::kSuccess);
  abi::nvmlEventSet_t set = nullptr;
  ASSERT_EQ(sim.EventSetCreate(&set), abi::kSuccess);
  abi::nvmlEventData_t data{};
  abi::nvmlReturn_t result = -1;
  std::thread waiter([&] { result = sim.EventSetWait(set, &data, 600'000); });
  // Whether the waiter is already blocked or not, it must not see a live set afterwards.
  EXPECT_EQ(sim.Shutdown(), abi::kSuccess);
  waiter.join();
  EXPECT_TRUE(result == abi::kErrorUninitialized || result == abi::kErrorTimeout ||
              result == abi::kErrorInvalidArgument)
      << result;
}

TEST(NvmlSimTest, FreeingTheSetWakesABlockedWaiter) {
  NvmlSim sim;
  setenv(kScenarioEnvVar, WriteScenario("free", "name: f\ndevices: [{}]\n").c_str(), 1);
  sim.SetTimeNs(0);
  ASSERT_EQ(sim.Init("nvmlInit_v2"), abi::kSuccess);
  abi::nvmlEventSet_t set = nullptr;
  ASSERT_EQ(sim.EventSetCreate(&set), abi::kSuccess);
  abi::nvmlEventData_t data{};
  abi::nvmlReturn_t result = -1;
  std::thread waiter([&] { result = sim.EventSetWait(set, &data, 600'000); });
  EXPECT_EQ(sim.EventSetFree(set), abi::kSuccess);
  waiter.join();
  EXPECT_EQ(result, abi::kErrorInvalidArgument);
  EXPECT_EQ(sim.Shutdown(), abi::kSuccess);
}

TEST(NvmlSimTest, RealClockAdvancesFromInit) {
  NvmlSim sim;
  setenv(kScenarioEnvVar,
         WriteScenario("clock", "name: c\ndevices: [{signals: {power: 1000}}]\n").c_str(), 1);
  ASSERT_EQ(sim.Init("nvmlInit_v2"), abi::kSuccess);
  abi::nvmlDevice_t d = nullptr;
  ASSERT_EQ(sim.DeviceGetHandleByIndex("nvmlDeviceGetHandleByIndex_v2", 0, &d), abi::kSuccess);
  unsigned long long first = 0, second = 0;
  ASSERT_EQ(sim.DeviceGetTotalEnergyConsumption(d, &first), abi::kSuccess);
  // 1000 W is 1 mJ per µs: spin until the monotonic clock has moved enough to show.
  do {
    ASSERT_EQ(sim.DeviceGetTotalEnergyConsumption(d, &second), abi::kSuccess);
  } while (second <= first + 1000);
  EXPECT_GT(second, first);
  EXPECT_EQ(sim.Shutdown(), abi::kSuccess);
}

// Regression found by scenario_fuzzer.cc: values at kMaxQuantity overflow the NVML integer
// types; they must saturate instead of converting out of range.
TEST(NvmlSimTest, CountersSaturateInsteadOfOverflowing) {
  NvmlSim sim;
  setenv(kScenarioEnvVar,
         WriteScenario("huge", "name: h\ndevices: [{signals: {power: 1e18}}]\n").c_str(), 1);
  sim.SetTimeNs(0);
  ASSERT_EQ(sim.Init("nvmlInit_v2"), abi::kSuccess);
  sim.SetTimeNs(2'000'000'000);
  abi::nvmlDevice_t d = nullptr;
  ASSERT_EQ(sim.DeviceGetHandleByIndex("nvmlDeviceGetHandleByIndex_v2", 0, &d), abi::kSuccess);
  unsigned milliwatts = 0;
  ASSERT_EQ(sim.DeviceGetPowerUsage(d, &milliwatts), abi::kSuccess);
  EXPECT_EQ(milliwatts, 0xFFFFFFFFu);
  unsigned long long millijoules = 0;
  ASSERT_EQ(sim.DeviceGetTotalEnergyConsumption(d, &millijoules), abi::kSuccess);
  EXPECT_EQ(millijoules, ~0ULL);  // 2e21 mJ
  EXPECT_EQ(sim.Shutdown(), abi::kSuccess);
}

}  // namespace
}  // namespace warpscope::sim
