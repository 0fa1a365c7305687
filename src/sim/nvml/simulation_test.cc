// SPDX-License-Identifier: Apache-2.0
#include "sim/nvml/simulation.h"

#include <gtest/gtest.h>

#include <string>

namespace warpscope::sim {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

Simulation Make(const std::string& yaml) {
  auto s = ParseScenario(yaml, "test.yaml");
  EXPECT_TRUE(s) << s.error().ToString();
  return Simulation(s ? std::move(*s) : Scenario{});
}

TEST(SimulationTest, ConfiguredSignalsAreEvaluatedAndClamped) {
  Simulation sim = Make(R"yaml(
name: t
devices:
  - signals:
      gpu_util: {ramp: {from: 50, to: 150, duration: 100s}}
      temperature: {step: {before: 40, after: 70, at: 1m}}
)yaml");
  EXPECT_EQ(sim.Value(0, SignalId::kGpuUtil, 0), 50);
  EXPECT_EQ(sim.Value(0, SignalId::kGpuUtil, 25), 75);
  EXPECT_EQ(sim.Value(0, SignalId::kGpuUtil, 90), 100);  // clamped
  EXPECT_EQ(sim.Value(0, SignalId::kTemperature, 59), 40);
  EXPECT_EQ(sim.Value(0, SignalId::kTemperature, 60), 70);
}

TEST(SimulationTest, DefaultPowerAndTemperatureFollowUtilisation) {
  Simulation sim = Make(
      "name: t\ndevices: [{power_limit: 700, signals: {gpu_util: 100}}, "
      "{power_limit: 700}]\n");
  EXPECT_DOUBLE_EQ(sim.Value(0, SignalId::kPower, 5), 700 * 0.9);
  EXPECT_DOUBLE_EQ(sim.Value(1, SignalId::kPower, 5), 70);
  EXPECT_GT(sim.Value(0, SignalId::kTemperature, 5), sim.Value(1, SignalId::kTemperature, 5));
  EXPECT_DOUBLE_EQ(sim.Value(0, SignalId::kMemoryTemperature, 5),
                   sim.Value(0, SignalId::kTemperature, 5) + 6);
  EXPECT_EQ(sim.Value(1, SignalId::kClockEventReasons, 5), 1);  // GPU idle
  EXPECT_EQ(sim.Value(0, SignalId::kClockEventReasons, 5), 0);
  EXPECT_EQ(sim.Value(0, SignalId::kGrEngineActive, 5), 100);
  EXPECT_EQ(sim.Value(0, SignalId::kSmClock, 5), 1980);
}

TEST(SimulationTest, DefaultMemoryUsedIsTheSumOfRunningProcesses) {
  Simulation sim = Make(R"yaml(
name: t
devices:
  - processes:
      - {pid: 100, memory: 10GiB}
      - {pid: 101, memory: 5GiB, start: 1m, stop: 2m}
)yaml");
  EXPECT_EQ(sim.Value(0, SignalId::kMemoryUsed, 30), 10 * kGiB);
  EXPECT_EQ(sim.Value(0, SignalId::kMemoryUsed, 60), 15 * kGiB);
  EXPECT_EQ(sim.Value(0, SignalId::kMemoryUsed, 120), 10 * kGiB);
  EXPECT_FALSE(sim.ProcessActive(0, 1, 59.9));
  EXPECT_TRUE(sim.ProcessActive(0, 1, 60));
  EXPECT_FALSE(sim.ProcessActive(0, 1, 120));
}

TEST(SimulationTest, MemoryUsedNeverExceedsTheUsableMemory) {
  Simulation sim = Make(
      "name: t\ndevices: [{memory_total: 80GiB, memory_reserved: 1GiB, signals: "
      "{memory_used: 100GiB}}]\n");
  EXPECT_EQ(sim.Value(0, SignalId::kMemoryUsed, 0), 79 * kGiB);
}

TEST(SimulationTest, EnergyIsTheIntegralOfPower) {
  Simulation sim = Make("name: t\ndevices: [{signals: {power: 500}}]\n");
  EXPECT_NEAR(sim.Integral(0, SignalId::kPower, 60), 30000, 1e-6);
  EXPECT_NEAR(sim.Integral(0, SignalId::kPower, 3600), 1.8e6, 1e-3);
}

TEST(SimulationTest, CountersAreMonotonicUnderNoise) {
  Simulation sim = Make(R"yaml(
name: t
seed: 3
devices:
  - nvlink_links: 18
    signals:
      power: {sine: {mean: 400, amplitude: 300, period: 13s}, noise: 80}
      nvlink_tx: {constant: 1e9, noise: 5e8}
)yaml");
  double prev_energy = 0, prev_link = 0;
  for (int ms = 0; ms < 30000; ms += 37) {
    double t = ms / 1000.0;
    double energy = sim.Integral(0, SignalId::kPower, t);
    double link = sim.Integral(0, SignalId::kNvlinkTx, t);
    ASSERT_GE(energy, prev_energy) << t;
    ASSERT_GE(link, prev_link) << t;
    prev_energy = energy;
    prev_link = link;
  }
}

TEST(SimulationTest, RunsRepeatExactly) {
  const std::string yaml =
      "name: t\nseed: 9\ndevices: [{repeat: 2, signals: {power: {constant: 300, noise: 20}}}]\n";
  Simulation a = Make(yaml);
  Simulation b = Make(yaml);
  for (double t : {0.0, 1.5, 77.0, 3600.2}) {
    EXPECT_EQ(a.Value(1, SignalId::kPower, t), b.Value(1, SignalId::kPower, t));
    EXPECT_EQ(a.Integral(1, SignalId::kPower, t), b.Integral(1, SignalId::kPower, t));
  }
  EXPECT_NE(a.Value(0, SignalId::kPower, 77), a.Value(1, SignalId::kPower, 77));
}

TEST(SimulationTest, AverageOfASineOverWholePeriodsIsItsMean) {
  Simulation sim = Make(
      "name: t\ndevices: [{signals: {sm_active: {sine: {mean: 60, amplitude: 30, period: "
      "10s}}}}]\n");
  EXPECT_NEAR(sim.Average(0, std::nullopt, SignalId::kSmActive, 20, 40), 60, 0.01);
  // Over the first quarter period the sine is above its mean.
  EXPECT_GT(sim.Average(0, std::nullopt, SignalId::kSmActive, 0, 2.5), 70);
}

TEST(SimulationTest, MigInstanceSignalsAndDefaults) {
  Simulation sim = Make(R"yaml(
name: t
devices:
  - mig:
      enabled: true
      instances:
        - {gpu_instance_id: 1, profile: 3g.40gb, signals: {sm_active: 70}}
        - {gpu_instance_id: 2, profile: 3g.40gb}
    processes:
      - {pid: 1, gpu_instance_id: 2, memory: 12GiB}
      - {pid: 2, gpu_instance_id: 2, memory: 50GiB}
)yaml");
  EXPECT_EQ(sim.InstanceValue(0, 0, SignalId::kSmActive, 1), 70);
  EXPECT_EQ(sim.InstanceValue(0, 1, SignalId::kSmActive, 1), 0);
  EXPECT_EQ(sim.InstanceValue(0, 0, SignalId::kMemoryUsed, 1), 0);
  // 62 GiB of processes in a 40 GiB instance: bounded by the instance.
  EXPECT_EQ(sim.InstanceValue(0, 1, SignalId::kMemoryUsed, 1), 40 * kGiB);
}

TEST(SimulationTest, FaultWindows) {
  Simulation sim = Make(R"yaml(
name: t
devices:
  - faults:
      - {kind: gpu_lost, at: 60s, until: 90s}
      - {kind: not_supported, what: memory_temperature, at: 10s}
      - {kind: no_permission, until: 5s}
      - {kind: xid, at: 30s, code: 79}
)yaml");
  EXPECT_FALSE(sim.Lost(0, 59.999));
  EXPECT_TRUE(sim.Lost(0, 60));
  EXPECT_TRUE(sim.Lost(0, 89.9));
  EXPECT_FALSE(sim.Lost(0, 90));
  EXPECT_FALSE(sim.Unsupported(0, "memory_temperature", 9));
  EXPECT_TRUE(sim.Unsupported(0, "memory_temperature", 10));
  EXPECT_FALSE(sim.Unsupported(0, "temperature", 10));
  EXPECT_TRUE(sim.NoPermission(0, 4));
  EXPECT_FALSE(sim.NoPermission(0, 5));
  EXPECT_EQ(sim.NextEventTime(0), 30);
  EXPECT_EQ(sim.NextEventTime(30), 60);
  EXPECT_FALSE(sim.NextEventTime(60).has_value());
}

}  // namespace
}  // namespace warpscope::sim
