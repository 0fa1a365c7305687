// SPDX-License-Identifier: Apache-2.0
#include "sim/nvml/scenario.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace warpscope::sim {
namespace {

using ::testing::HasSubstr;

constexpr double kGiB = 1024.0 * 1024 * 1024;

// The example of the format reference (docs/simulator.md), MIG uuid left to its default.
constexpr char kFullExample[] = R"yaml(
name: healthy-8xh100
description: "8x H100 SXM training node, all GPUs busy"
seed: 42
driver:
  version: "550.127.08"
  nvml_version: "12.550.127.08"
  cuda_version: 12040
  missing_symbols: []
  process_stride: 24
devices:
  - repeat: 8
    name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-5e1d0c3a-0000-4000-8000-00000000000{i}"
    pci_bus_id: "00000000:{i}8:00.0"
    serial: "165092300{i}"
    minor_number: "{i}"
    compute_capability: "9.0"
    memory_total: 80GiB
    memory_reserved: 500MiB
    power_limit: 700
    max_sm_clock: 1980
    max_mem_clock: 2619
    nvlink_links: 18
    ecc: true
    signals:
      gpu_util: 97
      mem_copy_util: 60
      memory_used: {ramp: {from: 20GiB, to: 72GiB, duration: 10m}}
      power: {sine: {mean: 650, amplitude: 25, period: 60s}, noise: 5}
      temperature: 62
      memory_temperature: 70
      nvlink_tx: 20e9
      gpm_nvlink_tx: 40000
    processes:
      - pid: 41000
        name: python3
        type: compute
        start: 0s
        stop: 30m
        memory: 60GiB
        sm_util: 90
        mem_util: 40
        gpu_instance_id: 1
    mig:
      enabled: true
      instances:
        - gpu_instance_id: 1
          compute_instance_id: 0
          profile: "1g.10gb"
          memory_total: 10GiB
          signals: {memory_used: 4GiB, sm_active: 70, sm_occupancy: 40, tensor_active: 30, dram_active: 20}
    faults:
      - {kind: xid, at: 30s, code: 79}
      - {kind: gpu_lost, at: 60s, until: 90s}
      - {kind: not_supported, what: memory_temperature}
      - {kind: no_permission}
    overrides:
      "3": {signals: {temperature: 81}}
)yaml";

TEST(ScenarioTest, ParsesTheFormatReferenceExample) {
  auto s = ParseScenario(kFullExample, "example.yaml");
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->name, "healthy-8xh100");
  EXPECT_EQ(s->seed, 42u);
  EXPECT_EQ(s->driver.cuda_version, 12040);
  ASSERT_EQ(s->devices.size(), 8u);
  const DeviceSpec& d5 = s->devices[5];
  EXPECT_EQ(d5.index, 5u);
  EXPECT_EQ(d5.uuid, "GPU-5e1d0c3a-0000-4000-8000-000000000005");
  EXPECT_EQ(d5.pci_bus, 0x58u);
  EXPECT_EQ(d5.serial, "1650923005");
  EXPECT_EQ(d5.minor_number, 5u);
  EXPECT_EQ(d5.memory_total, 80 * kGiB);
  EXPECT_EQ(d5.memory_reserved, 500.0 * 1024 * 1024);
  EXPECT_EQ(d5.nvlink_links, 18u);
  EXPECT_EQ(d5.pci_device_id, 0x2330u);
  ASSERT_TRUE(d5.signals[static_cast<size_t>(SignalId::kPower)].has_value());
  EXPECT_EQ(d5.signals[static_cast<size_t>(SignalId::kPower)]->kind, SignalKind::kSine);
  EXPECT_EQ(d5.signals[static_cast<size_t>(SignalId::kPower)]->noise, 5);
  EXPECT_EQ(d5.signals[static_cast<size_t>(SignalId::kNvlinkTx)]->value, 20e9);
  ASSERT_EQ(d5.processes.size(), 1u);
  EXPECT_EQ(d5.processes[0].stop_s, 1800);
  ASSERT_EQ(d5.mig.instances.size(), 1u);
  EXPECT_EQ(d5.mig.instances[0].profile, "1g.10gb");
  EXPECT_EQ(d5.faults.size(), 4u);
  EXPECT_EQ(s->devices[3].signals[static_cast<size_t>(SignalId::kTemperature)]->value, 81);
  EXPECT_EQ(s->devices[2].signals[static_cast<size_t>(SignalId::kTemperature)]->value, 62);
  // The override merges: device 3 keeps the template's other signals.
  EXPECT_EQ(s->devices[3].signals[static_cast<size_t>(SignalId::kGpuUtil)]->value, 97);
}

TEST(ScenarioTest, MinimalScenarioGetsDocumentedDefaults) {
  auto s = ParseScenario("name: tiny\ndevices: [{}]\n", "tiny.yaml");
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->seed, 1u);
  EXPECT_EQ(s->driver.version, "550.127.08");
  EXPECT_EQ(s->driver.process_stride, 24u);
  ASSERT_EQ(s->devices.size(), 1u);
  const DeviceSpec& d = s->devices[0];
  EXPECT_EQ(d.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.architecture, Architecture::kHopper);
  EXPECT_EQ(d.cc_major, 9);
  EXPECT_EQ(d.memory_total, 80 * kGiB);
  EXPECT_EQ(d.memory_reserved, 80 * kGiB / 128);
  EXPECT_EQ(d.power_limit_w, 700);
  EXPECT_EQ(d.enforced_power_limit_w, 700);
  EXPECT_EQ(d.pci_bus, 0x18u);
  EXPECT_THAT(d.uuid,
              testing::MatchesRegex("GPU-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}"
                                    "-[0-9a-f]{12}"));
  EXPECT_EQ(d.serial.size(), 13u);
}

TEST(ScenarioTest, DefaultIdentityIsUniquePerIndexAndStablePerSeed) {
  auto a = ParseScenario("name: a\nseed: 5\ndevices: [{repeat: 10}]\n", "a.yaml");
  auto b = ParseScenario("name: b\nseed: 5\ndevices: [{repeat: 10}]\n", "b.yaml");
  auto c = ParseScenario("name: c\nseed: 6\ndevices: [{repeat: 10}]\n", "c.yaml");
  ASSERT_TRUE(a && b && c);
  EXPECT_NE(a->devices[0].uuid, a->devices[1].uuid);
  EXPECT_EQ(a->devices[7].uuid, b->devices[7].uuid);
  EXPECT_NE(a->devices[7].uuid, c->devices[7].uuid);
  EXPECT_EQ(a->devices[9].pci_domain, 1u);  // the ninth GPU starts a second HGX board
}

TEST(ScenarioTest, OverrideReplacesAWholeSignalSpec) {
  auto s = ParseScenario(R"yaml(
name: o
devices:
  - repeat: 2
    signals:
      power: {sine: {mean: 600, amplitude: 20, period: 30s}, noise: 5}
      gpu_util: 90
    overrides:
      "1": {signals: {power: {piecewise: [[0s, 600], [1m, 300]]}}}
)yaml",
                         "o.yaml");
  ASSERT_TRUE(s) << s.error().ToString();
  const auto& power = s->devices[1].signals[static_cast<size_t>(SignalId::kPower)];
  EXPECT_EQ(power->kind, SignalKind::kPiecewise);
  EXPECT_EQ(power->noise, 0);
  EXPECT_EQ(s->devices[1].signals[static_cast<size_t>(SignalId::kGpuUtil)]->value, 90);
  EXPECT_EQ(s->devices[0].signals[static_cast<size_t>(SignalId::kPower)]->kind, SignalKind::kSine);
}

TEST(ScenarioTest, TemperatureThresholdsDefaultPerArchitectureAndCanBeAbsent) {
  auto s = ParseScenario(R"yaml(
name: t
devices:
  - {}
  - {architecture: ada, name: "NVIDIA L40S"}
  - {architecture: pascal}
  - repeat: 2
    architecture: ampere
    slowdown_temperature: 87
    memory_max_temperature: none
    overrides:
      "4": {max_operating_temperature: none, shutdown_temperature: 90}
)yaml",
                         "t.yaml");
  ASSERT_TRUE(s) << s.error().ToString();
  // In nvmlTemperatureThresholds_t order: shutdown, slowdown, memory max, GPU max.
  using T = TemperatureThresholds;
  EXPECT_EQ(s->devices[0].temperature_thresholds, (T{92, 89, 95, 87}));  // hopper
  EXPECT_EQ(s->devices[1].temperature_thresholds, (T{98, 95, std::nullopt, 89}));
  EXPECT_EQ(s->devices[2].temperature_thresholds, (T{85, 82, std::nullopt, std::nullopt}));
  EXPECT_EQ(s->devices[3].temperature_thresholds, (T{92, 87, std::nullopt, 85}));
  EXPECT_EQ(s->devices[4].temperature_thresholds, (T{90, 87, std::nullopt, std::nullopt}));
  EXPECT_EQ(DeviceSpec{}.temperature_thresholds,
            DefaultTemperatureThresholds(Architecture::kHopper));
}

TEST(ScenarioTest, SignalKindsParse) {
  auto s = ParseScenario(R"yaml(
name: kinds
devices:
  - signals:
      gpu_util: {constant: 40, noise: 2}
      mem_copy_util: {step: {before: 10, after: 60, at: 5m}}
      sm_clock: {piecewise: [[0s, 1000], [1m, 1980]]}
      power: "650W"
      memory_used: {ramp: {from: 1GiB, to: 2GiB, start: 30s, duration: 1m}}
)yaml",
                         "kinds.yaml");
  ASSERT_TRUE(s) << s.error().ToString();
  const auto& sig = s->devices[0].signals;
  EXPECT_EQ(sig[static_cast<size_t>(SignalId::kGpuUtil)]->noise, 2);
  EXPECT_EQ(sig[static_cast<size_t>(SignalId::kMemCopyUtil)]->kind, SignalKind::kStep);
  EXPECT_EQ(sig[static_cast<size_t>(SignalId::kMemCopyUtil)]->at_s, 300);
  EXPECT_EQ(sig[static_cast<size_t>(SignalId::kSmClock)]->points.size(), 2u);
  EXPECT_EQ(sig[static_cast<size_t>(SignalId::kPower)]->value, 650);
  EXPECT_EQ(sig[static_cast<size_t>(SignalId::kMemoryUsed)]->from, kGiB);
  EXPECT_EQ(sig[static_cast<size_t>(SignalId::kMemoryUsed)]->start_s, 30);
}

TEST(ScenarioTest, MigInstanceMemoryDefaultsFromTheProfile) {
  auto s = ParseScenario(R"yaml(
name: mig
devices:
  - mig:
      enabled: true
      instances:
        - {gpu_instance_id: 2, profile: 3g.40gb}
        - {gpu_instance_id: 9, profile: 1g.10gb, index: 5}
)yaml",
                         "mig.yaml");
  ASSERT_TRUE(s) << s.error().ToString();
  const auto& mig = s->devices[0].mig;
  EXPECT_EQ(mig.max_devices, 7u);
  EXPECT_EQ(mig.instances[0].memory_total, 40 * kGiB);
  EXPECT_EQ(mig.instances[0].slot, 0u);
  EXPECT_EQ(mig.instances[1].slot, 5u);
  EXPECT_EQ(mig.instances[1].uuid.rfind("MIG-", 0), 0u);
}

TEST(ScenarioTest, SlowFaultsParse) {
  auto s = ParseScenario(R"yaml(
name: slow
devices:
  - faults:
      - {kind: slow, at: 30s, until: 90s, hang: true}
      - {kind: slow, latency: 250ms, what: nvmlDeviceGetPowerUsage}
)yaml",
                         "slow.yaml");
  ASSERT_TRUE(s) << s.error().ToString();
  const auto& faults = s->devices[0].faults;
  ASSERT_EQ(faults.size(), 2u);
  EXPECT_EQ(faults[0].kind, FaultKind::kSlow);
  EXPECT_TRUE(faults[0].hang);
  EXPECT_EQ(faults[0].latency_s, 0);
  EXPECT_EQ(faults[0].at_s, 30);
  EXPECT_EQ(faults[0].until_s, 90);
  EXPECT_EQ(faults[0].what, "");
  EXPECT_FALSE(faults[1].hang);
  EXPECT_DOUBLE_EQ(faults[1].latency_s, 0.25);
  EXPECT_EQ(faults[1].at_s, 0);
  EXPECT_EQ(faults[1].until_s, kForever);
  EXPECT_EQ(faults[1].what, "nvmlDeviceGetPowerUsage");

  // The example of docs/simulator.md.
  auto doc = ParseScenario(R"yaml(
name: doc
devices:
  - repeat: 8
    name: "NVIDIA H100 80GB HBM3"
    overrides:
      "3": {faults: [{kind: slow, hang: true, at: 2m, until: 3m}]}
      "5": {faults: [{kind: slow, latency: 2s, what: nvmlDeviceGetPowerUsage}]}
)yaml",
                           "doc.yaml");
  ASSERT_TRUE(doc) << doc.error().ToString();
  ASSERT_EQ(doc->devices[3].faults.size(), 1u);
  EXPECT_EQ(doc->devices[3].faults[0].until_s, 180);
  EXPECT_EQ(doc->devices[5].faults[0].latency_s, 2);
  EXPECT_TRUE(doc->devices[4].faults.empty());
}

struct BadCase {
  const char* label;
  const char* yaml;
  const char* path;     // key path the message must name
  const char* problem;  // and a piece of the explanation or remedy
};

class ScenarioErrorTest : public testing::TestWithParam<BadCase> {};

TEST_P(ScenarioErrorTest, NamesFileKeyPathAndRemedy) {
  const BadCase& c = GetParam();
  auto s = ParseScenario(c.yaml, "scenarios/bad.yaml");
  ASSERT_FALSE(s) << c.label;
  const std::string& msg = s.error().message();
  EXPECT_THAT(msg, HasSubstr("scenarios/bad.yaml")) << c.label;
  EXPECT_THAT(msg, HasSubstr(c.path)) << c.label;
  EXPECT_THAT(msg, HasSubstr(c.problem)) << c.label;
}

INSTANTIATE_TEST_SUITE_P(
    AllErrors, ScenarioErrorTest,
    testing::Values(
        BadCase{"missing name", "devices: [{}]\n", "name", "every scenario needs a name"},
        BadCase{"missing devices", "name: x\n", "devices", "missing"},
        BadCase{"devices not a list", "name: x\ndevices: {a: 1}\n", "devices", "list"},
        BadCase{"unknown top key", "name: x\ndevice: []\n", "device", "Did you mean 'devices'?"},
        BadCase{"unknown device key", "name: x\ndevices: [{memroy_total: 80GiB}]\n",
                "devices[0].memroy_total", "Did you mean 'memory_total'?"},
        BadCase{"unknown signal", "name: x\ndevices: [{signals: {gpu_utl: 5}}]\n",
                "devices[0].signals.gpu_utl", "Did you mean 'gpu_util'?"},
        BadCase{"bad signal kind", "name: x\ndevices: [{signals: {power: {sin: {mean: 1}}}}]\n",
                "devices[0].signals.power.sin", "Did you mean 'sine'?"},
        BadCase{"two shapes",
                "name: x\ndevices: [{signals: {power: {constant: 1, step: {before: 1, after: 2, "
                "at: 1s}}}}]\n",
                "devices[0].signals.power", "a signal has one shape"},
        BadCase{"noise only", "name: x\ndevices: [{signals: {power: {noise: 5}}}]\n",
                "devices[0].signals.power", "no shape given"},
        BadCase{"ramp without duration",
                "name: x\ndevices: [{signals: {gpu_util: {ramp: {from: 0, to: 1}}}}]\n",
                "devices[0].signals.gpu_util.ramp.duration", "duration: 10m"},
        BadCase{"sine period zero",
                "name: x\ndevices: [{signals: {gpu_util: {sine: {mean: 1, period: 0s}}}}]\n",
                "devices[0].signals.gpu_util.sine.period", "greater than 0s"},
        BadCase{"piecewise unsorted",
                "name: x\ndevices: [{signals: {gpu_util: {piecewise: [[1m, 1], [0s, 2]]}}}]\n",
                "devices[0].signals.gpu_util.piecewise[1]", "increase strictly"},
        BadCase{"threshold not a temperature",
                "name: x\ndevices: [{slowdown_temperature: hot}]\n",
                "devices[0].slowdown_temperature", "or none when the board does not report it"},
        BadCase{"threshold out of range", "name: x\ndevices: [{shutdown_temperature: 250}]\n",
                "devices[0].shutdown_temperature", "1..200"},
        BadCase{"bad size unit", "name: x\ndevices: [{memory_total: 80Gb}]\n",
                "devices[0].memory_total", "GiB"},
        BadCase{"duration without unit",
                "name: x\ndevices: [{faults: [{kind: xid, at: 30, code: 79}]}]\n",
                "devices[0].faults[0].at", "30s"},
        BadCase{"bad power", "name: x\ndevices: [{power_limit: 700V}]\n", "devices[0].power_limit",
                "use W or kW"},
        BadCase{"bad architecture", "name: x\ndevices: [{architecture: hoper}]\n",
                "devices[0].architecture", "Did you mean 'hopper'?"},
        BadCase{"reserved too big",
                "name: x\ndevices: [{memory_total: 1GiB, memory_reserved: 2GiB}]\n",
                "devices[0].memory_reserved", "smaller than memory_total"},
        BadCase{"bad pci bus id", "name: x\ndevices: [{pci_bus_id: \"0:18:0\"}]\n",
                "devices[0].pci_bus_id", "00000000:18:00.0"},
        BadCase{"duplicate uuid", "name: x\ndevices: [{repeat: 2, uuid: GPU-1}]\n", "devices",
                "{i}"},
        BadCase{"override out of range",
                "name: x\ndevices: [{repeat: 2, overrides: {\"5\": {ecc: false}}}]\n",
                "devices[0].overrides.5", "use 0..1"},
        BadCase{"error inside repeated device",
                "name: x\ndevices: [{repeat: 2, overrides: {\"1\": {signals: {power: x}}}}]\n",
                "devices[0].signals.power (device 1)", "not a power"},
        BadCase{"process bad type", "name: x\ndevices: [{processes: [{pid: 1, type: batch}]}]\n",
                "devices[0].processes[0].type", "use compute or graphics"},
        BadCase{"process without pid", "name: x\ndevices: [{processes: [{name: a}]}]\n",
                "devices[0].processes[0].pid", "pid: 41000"},
        BadCase{"slowdown without ddp",
                "name: x\ndevices: [{processes: [{pid: 1, workload: training, slowdown: 20}]}]\n",
                "devices[0].processes[0].slowdown", "only for workload: ddp"},
        BadCase{"slowdown out of range",
                "name: x\ndevices: [{processes: [{pid: 1, workload: ddp, slowdown: 500}]}]\n",
                "devices[0].processes[0].slowdown", "0..400"},
        BadCase{"process stop before start",
                "name: x\ndevices: [{processes: [{pid: 1, start: 5m, stop: 1m}]}]\n",
                "devices[0].processes[0].stop", "later than start"},
        BadCase{"gpu instance without mig",
                "name: x\ndevices: [{processes: [{pid: 1, gpu_instance_id: 1}]}]\n",
                "devices[0].processes[0].gpu_instance_id", "mig.enabled"},
        BadCase{"mig process without instance",
                "name: x\ndevices: [{mig: {enabled: true, instances: [{gpu_instance_id: 1, "
                "profile: 1g.10gb}]}, processes: [{pid: 1}]}]\n",
                "devices[0].processes[0].gpu_instance_id", "runs in a MIG instance"},
        BadCase{"mig on volta", "name: x\ndevices: [{architecture: volta, mig: {enabled: true}}]\n",
                "devices[0].mig.enabled", "ampere or newer"},
        BadCase{"mig signal not allowed",
                "name: x\ndevices: [{mig: {enabled: true, instances: [{gpu_instance_id: 1, "
                "profile: 1g.10gb, signals: {power: 5}}]}}]\n",
                "devices[0].mig.instances[0].signals.power", "unknown MIG instance signal"},
        BadCase{"mig profile without size",
                "name: x\ndevices: [{mig: {enabled: true, instances: [{gpu_instance_id: 1, "
                "profile: custom}]}}]\n",
                "devices[0].mig.instances[0].memory_total", "memory_total: 10GiB"},
        BadCase{"unknown fault kind", "name: x\ndevices: [{faults: [{kind: gpu_lots, at: 1s}]}]\n",
                "devices[0].faults[0].kind", "Did you mean 'gpu_lost'?"},
        BadCase{"xid without code", "name: x\ndevices: [{faults: [{kind: xid, at: 1s}]}]\n",
                "devices[0].faults[0].code", "code: 79"},
        BadCase{"until before at",
                "name: x\ndevices: [{faults: [{kind: gpu_lost, at: 60s, until: 30s}]}]\n",
                "devices[0].faults[0].until", "later than at"},
        BadCase{"not_supported unknown what",
                "name: x\ndevices: [{faults: [{kind: not_supported, what: memory_temp}]}]\n",
                "devices[0].faults[0].what", "Did you mean 'memory_temperature'?"},
        BadCase{"slow without latency or hang",
                "name: x\ndevices: [{faults: [{kind: slow, at: 1s}]}]\n", "devices[0].faults[0]",
                "missing latency or hang; e.g. latency: 2s"},
        BadCase{"slow with latency and hang",
                "name: x\ndevices: [{faults: [{kind: slow, latency: 1s, hang: true}]}]\n",
                "devices[0].faults[0]", "either latency or hang, not both"},
        BadCase{"slow latency zero", "name: x\ndevices: [{faults: [{kind: slow, latency: 0s}]}]\n",
                "devices[0].faults[0].latency", "more than 0s"},
        BadCase{"slow latency without unit",
                "name: x\ndevices: [{faults: [{kind: slow, latency: 2}]}]\n",
                "devices[0].faults[0].latency", "2s"},
        BadCase{"slow hang false", "name: x\ndevices: [{faults: [{kind: slow, hang: false}]}]\n",
                "devices[0].faults[0].hang", "use hang: true"},
        BadCase{"slow unknown function",
                "name: x\ndevices: [{faults: [{kind: slow, hang: true, "
                "what: nvmlDeviceGetPowerUsag}]}]\n",
                "devices[0].faults[0].what", "Did you mean 'nvmlDeviceGetPowerUsage'?"},
        BadCase{"slow what is a signal",
                "name: x\ndevices: [{faults: [{kind: slow, hang: true, what: power}]}]\n",
                "devices[0].faults[0].what", "leave what out to slow every call"},
        BadCase{"slow unknown key",
                "name: x\ndevices: [{faults: [{kind: slow, hang: true, code: 1}]}]\n",
                "devices[0].faults[0].code", "Allowed here: kind, at, until, what, latency, hang"},
        BadCase{"key not valid for fault kind",
                "name: x\ndevices: [{faults: [{kind: gpu_lost, at: 1s, code: 3}]}]\n",
                "devices[0].faults[0].code", "Allowed here: kind, at, until"},
        BadCase{"unknown missing symbol",
                "name: x\ndriver: {missing_symbols: [nvmlDeviceGetMemoryInfo_v3]}\ndevices: []\n",
                "driver.missing_symbols[0]", "Did you mean 'nvmlDeviceGetMemoryInfo_v2'?"},
        BadCase{"shutdown cannot be missing",
                "name: x\ndriver: {missing_symbols: [nvmlShutdown]}\ndevices: []\n",
                "driver.missing_symbols[0]", "cannot be marked missing"},
        BadCase{"bad stride", "name: x\ndriver: {process_stride: 16}\ndevices: []\n",
                "driver.process_stride", "24"},
        BadCase{"too many devices", "name: x\ndevices: [{repeat: 60}, {repeat: 5}]\n", "devices[1]",
                "at most 64"},
        BadCase{"bad bool", "name: x\ndevices: [{ecc: maybe}]\n", "devices[0].ecc",
                "use true or false"},
        BadCase{"line number", "name: x\ndevices:\n  - name: a\n    ecc: maybe\n",
                "scenarios/bad.yaml:4", "devices[0].ecc"},
        // The host side.
        BadCase{"unknown host key", "name: x\nhost: {cpu: 4}\ndevices: []\n", "host.cpu",
                "Did you mean 'cpus'?"},
        BadCase{"no cpus", "name: x\nhost: {cpus: 0}\ndevices: []\n", "host.cpus", "out of range"},
        BadCase{"base over total",
                "name: x\nhost: {memory_total: 8GiB, memory_base: 9GiB}\ndevices: []\n",
                "host.memory_base", "must not exceed memory_total"},
        BadCase{"unknown process host key",
                "name: x\ndevices: [{processes: [{pid: 1, host: {cmdlne: a}}]}]\n",
                "devices[0].processes[0].host.cmdlne", "Did you mean 'cmdline'?"},
        BadCase{"host not a map", "name: x\ndevices: [{processes: [{pid: 1, host: yes}]}]\n",
                "devices[0].processes[0].host", "expected a map"},
        BadCase{"relative exe",
                "name: x\ndevices: [{processes: [{pid: 1, host: {exe: bin/python}}]}]\n",
                "devices[0].processes[0].host.exe", "absolute path"},
        BadCase{"empty cmdline",
                "name: x\ndevices: [{processes: [{pid: 1, host: {cmdline: []}}]}]\n",
                "devices[0].processes[0].host.cmdline", "at least the program"},
        BadCase{"cmdline map",
                "name: x\ndevices: [{processes: [{pid: 1, host: {cmdline: [{a: 1}]}}]}]\n",
                "devices[0].processes[0].host.cmdline[0]", "a single value"},
        BadCase{"bad user", "name: x\ndevices: [{processes: [{pid: 1, host: {user: Alice}}]}]\n",
                "devices[0].processes[0].host.user", "not a user name"},
        BadCase{"uid 0 not root",
                "name: x\ndevices: [{processes: [{pid: 1, host: {user: bob, uid: 0}}]}]\n",
                "devices[0].processes[0].host.uid", "uid 0 is root"},
        BadCase{"two uids for one user",
                "name: x\ndevices: [{processes: [{pid: 1, host: {user: bob, uid: 1001}}, "
                "{pid: 2, host: {user: bob, uid: 1002}}]}]\n",
                "devices", "one user name has one uid"},
        BadCase{"short container id",
                "name: x\ndevices: [{processes: [{pid: 1, host: {container_id: abc}}]}]\n",
                "devices[0].processes[0].host.container_id", "64 lowercase hex"},
        BadCase{"pod without container",
                "name: x\ndevices: [{processes: [{pid: 1, host: {pod_uid: "
                "1b4e28ba-2fa1-11d2-883f-0016d3cca427}}]}]\n",
                "devices[0].processes[0].host.pod_uid", "needs container_id"},
        BadCase{"bad pod uid",
                "name: x\ndevices: [{processes: [{pid: 1, host: {pod_uid: pod-1}}]}]\n",
                "devices[0].processes[0].host.pod_uid", "UUID"},
        BadCase{"no threads", "name: x\ndevices: [{processes: [{pid: 1, host: {threads: 0}}]}]\n",
                "devices[0].processes[0].host.threads", "out of range"},
        BadCase{"bad cpu signal",
                "name: x\ndevices: [{processes: [{pid: 1, host: {cpu: {sin: {mean: 1}}}}]}]\n",
                "devices[0].processes[0].host.cpu.sin", "Did you mean 'sine'?"},
        BadCase{"bad rss unit", "name: x\ndevices: [{processes: [{pid: 1, host: {rss: 3Gb}}]}]\n",
                "devices[0].processes[0].host.rss", "GiB"},
        BadCase{"host process without name",
                "name: x\nhost: {processes: [{pid: 7}]}\ndevices: []\n", "host.processes[0].name",
                "missing"},
        BadCase{"host process with GPU key",
                "name: x\nhost: {processes: [{pid: 7, name: a, memory: 1GiB}]}\ndevices: []\n",
                "host.processes[0].memory", "Allowed here"},
        BadCase{"host process pid of a GPU process",
                "name: x\nhost: {processes: [{pid: 7, name: a}]}\n"
                "devices: [{processes: [{pid: 7}]}]\n",
                "host.processes[0].pid", "is a GPU process of device 0"},
        BadCase{"host process pid twice",
                "name: x\nhost:\n  processes:\n    - {pid: 7, name: a}\n    - {pid: 7, name: b}\n"
                "devices: []\n",
                "scenarios/bad.yaml:5", "pid 7 is also host.processes[0]"},
        BadCase{"host line number",
                "name: x\ndevices:\n  - processes:\n      - pid: 1\n        host:\n"
                "          exe: python3\n",
                "scenarios/bad.yaml:6", "devices[0].processes[0].host.exe"}),
    [](const testing::TestParamInfo<BadCase>& info) {
      std::string name = info.param.label;
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) {
          ch = '_';
        }
      }
      return name;
    });

TEST(ScenarioTest, YamlSyntaxErrorNamesFileAndLine) {
  auto s = ParseScenario("name: x\ndevices: [\n  {a: 1\n", "broken.yaml");
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), HasSubstr("broken.yaml:"));
  EXPECT_THAT(s.error().message(), HasSubstr("YAML syntax error"));
}

TEST(ScenarioTest, MissingFileNamesThePath) {
  auto s = LoadScenarioFile("/nonexistent/scenario.yaml");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code(), base::StatusCode::kNotFound);
  EXPECT_THAT(s.error().message(), HasSubstr("/nonexistent/scenario.yaml"));
}

TEST(ScenarioTest, KnowsEveryExportedFunctionName) {
  EXPECT_TRUE(IsKnownNvmlFunction("nvmlInit_v2"));
  EXPECT_TRUE(IsKnownNvmlFunction("nvmlDeviceGetMemoryInfo"));
  EXPECT_TRUE(IsKnownNvmlFunction("nvmlGpmMetricsGet"));
  EXPECT_FALSE(IsKnownNvmlFunction("nvmlDeviceGetTemperatureV"));
}

// Regression found by scenario_fuzzer.cc: a ramp from -1e308 to 1e308 parsed, and then
// evaluated to infinity (and undefined integer conversions in the NVML layer).
TEST(ScenarioTest, RejectsQuantitiesBeyondKMaxQuantity) {
  auto s = ParseScenario(
      "name: h\ndevices: [{signals: {ecc_dbe_rate: {ramp: {from: -1e308, to: 1e308, "
      "duration: 1s}}}}]\n",
      "huge.yaml");
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), HasSubstr("huge.yaml:2"));
  EXPECT_THAT(s.error().message(), HasSubstr("ramp.from"));
  EXPECT_THAT(s.error().message(), HasSubstr("too large"));
  EXPECT_FALSE(ParseScenario("name: h\ndevices: [{memory_total: 1e30}]\n", "huge.yaml"));
  EXPECT_TRUE(ParseScenario("name: h\ndevices: [{memory_total: 1e18}]\n", "huge.yaml"));
}

TEST(ScenarioTest, HostSideParsesWithDefaults) {
  auto s = ParseScenario(R"yaml(
name: host
host: {cpus: 32, memory_total: 512GiB, memory_base: 4GiB}
devices:
  - repeat: 2
    processes:
      - pid: "700{i}"
        name: trainer
        host:
          exe: /opt/venv/bin/python3
          cmdline: "python3  train.py --rank={i}"
          user: alice
          container_id: 4f3c0d6c8e5b2a1f9d7e6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f
          pod_uid: 1b4e28ba-2fa1-11d2-883f-0016d3cca427
          threads: 12
          rss: 3GiB
          cpu: {ramp: {from: 1, to: 4, start: 0s, duration: 1m}}
      - {pid: "710{i}", name: tool, host: {user: bob}}
      - {pid: "720{i}", name: gpuonly}
      - {pid: "730{i}", name: daemon, host: {user: carol, uid: 1000}}
)yaml",
                         "host.yaml");
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->host.cpus, 32u);
  EXPECT_EQ(s->host.memory_total, 512 * kGiB);
  EXPECT_EQ(s->host.memory_base, 4 * kGiB);
  ASSERT_EQ(s->devices.size(), 2u);
  const auto& procs = s->devices[1].processes;
  ASSERT_EQ(procs.size(), 4u);
  ASSERT_TRUE(procs[0].host);
  const HostProcessSpec& h = *procs[0].host;
  EXPECT_EQ(h.exe, "/opt/venv/bin/python3");
  EXPECT_EQ(h.cmdline, (std::vector<std::string>{"python3", "train.py", "--rank=1"}));
  EXPECT_EQ(h.user, "alice");
  EXPECT_EQ(h.threads, 12u);
  EXPECT_EQ(h.rss.value, 3 * kGiB);
  EXPECT_EQ(h.cpu.kind, SignalKind::kRamp);
  EXPECT_EQ(h.pod_uid, "1b4e28ba-2fa1-11d2-883f-0016d3cca427");
  // Defaults: /usr/bin/<name>, argv = {exe}, one thread, no container.
  ASSERT_TRUE(procs[1].host);
  EXPECT_EQ(procs[1].host->exe, "/usr/bin/tool");
  EXPECT_EQ(procs[1].host->cmdline, (std::vector<std::string>{"/usr/bin/tool"}));
  EXPECT_EQ(procs[1].host->threads, 1u);
  EXPECT_TRUE(procs[1].host->container_id.empty());
  EXPECT_FALSE(procs[2].host) << "no host map: the process exists only in NVML";
  // uids: given ones kept (carol 1000), the others from 1000 up in order, skipping given ones.
  EXPECT_EQ(procs[3].host->uid, 1000u);
  EXPECT_EQ(procs[0].host->uid, 1001u);
  EXPECT_EQ(procs[1].host->uid, 1002u);
  EXPECT_EQ(s->devices[0].processes[0].host->uid, 1001u) << "one user, one uid";

  auto defaults = ParseScenario("name: d\ndevices: [{}]\n", "d.yaml");
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->host.cpus, 64u);
  EXPECT_EQ(defaults->host.memory_total, 1024 * kGiB);
}

TEST(ScenarioTest, HostOnlyProcessesParse) {
  auto s = ParseScenario(R"yaml(
name: daemons
host:
  processes:
    - {pid: 1200, name: sshd, cpu: 0.05, rss: 12MiB}
    - {pid: 1300, name: kubelet, exe: /usr/bin/kubelet, user: kube, threads: 40, start: 1m}
devices: [{processes: [{pid: 4000, host: {user: kube}}]}]
)yaml",
                         "daemons.yaml");
  ASSERT_TRUE(s) << s.error().ToString();
  ASSERT_EQ(s->host.processes.size(), 2u);
  const ProcessSpec& sshd = s->host.processes[0];
  ASSERT_TRUE(sshd.host);
  EXPECT_EQ(sshd.host->exe, "/usr/bin/sshd");
  EXPECT_EQ(sshd.host->rss.value, 12 * 1024 * 1024);
  const ProcessSpec& kubelet = s->host.processes[1];
  EXPECT_EQ(kubelet.start_s, 60);
  EXPECT_EQ(kubelet.host->threads, 40u);
  EXPECT_EQ(kubelet.host->uid, 1000u);
  EXPECT_EQ(s->devices[0].processes[0].host->uid, 1000u) << "the same user on the GPU side";
}

}  // namespace
}  // namespace warpscope::sim
