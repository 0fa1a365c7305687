// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/nvml/nvml_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/sources/nvml/nvml_metrics.h"
#include "base/testing/peer.h"
#include "model/testing/collecting_sink.h"
#include "model/testing/fake_process_resolver.h"
#include "nvml/testing/sim_environment.h"

namespace warpscope::agent {
namespace {

namespace m = nvml_metrics;
using nvml::testing::kLegacySimPath;
using nvml::testing::kSimPath;
using nvml::testing::SimEnvironment;
using ::testing::HasSubstr;

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kMiB = 1024.0 * 1024;
constexpr char kUuid0[] = "GPU-00000000-0000-4000-8000-000000000000";
constexpr char kUuid1[] = "GPU-00000000-0000-4000-8000-000000000001";
constexpr char kUuid2[] = "GPU-00000000-0000-4000-8000-000000000002";
constexpr char kUuid3[] = "GPU-00000000-0000-4000-8000-000000000003";

// One busy H100 with constant signals (values checked after unit conversion), two NVLink links,
// ECC, one compute process.
constexpr char kHealthy[] = R"yaml(
name: healthy
seed: 7
driver: {version: "550.127.08", cuda_version: 12040}
devices:
  - repeat: 2
    name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-00000000000{i}"
    pci_bus_id: "00000000:{i}8:00.0"
    serial: "165092300{i}"
    compute_capability: "9.0"
    memory_total: 80GiB
    memory_reserved: 512MiB
    power_limit: 700
    enforced_power_limit: 650
    max_sm_clock: 1980
    max_mem_clock: 2619
    nvlink_links: 2
    ecc: true
    signals:
      gpu_util: 97
      mem_copy_util: 60
      encoder_util: 3
      decoder_util: 4
      memory_used: 20GiB
      power: 600
      temperature: 62
      memory_temperature: 70
      sm_clock: 1980
      mem_clock: 2619
      clock_event_reasons: 5
      pcie_tx: 12000
      pcie_rx: 30000
      pcie_replay_rate: 2
      nvlink_tx: 1e9
      nvlink_rx: 2e9
      ecc_sbe_rate: 1
      remapped_rows_correctable: 3
      remap_pending: 1
      gr_engine_active: 95
      sm_active: 88
      sm_occupancy: 45
      tensor_active: 55
      dram_active: 40
      fp32_active: 20
      hmma_active: 50
      gpm_pcie_tx: 100
      gpm_nvlink_rx: 4000
    processes:
      - {pid: "4100{i}", name: python3, type: compute, memory: 6GiB, sm_util: 90, mem_util: 40}
)yaml";

class NvmlSourceTest : public ::testing::Test {
 protected:
  // Starts a source on `yaml`; returns false (and records why) when it cannot.
  void StartWith(std::string_view yaml, std::string_view library = kSimPath,
                 NvmlSourceOptions options = {}) {
    WARPSCOPE_REQUIRE_PEER(!library.empty(), "the NVML simulator (src/sim/nvml)",
                           "build it with the tests (it needs yaml-cpp: scripts/setup.sh --test)");
    sim_ = std::make_unique<SimEnvironment>(yaml, library);
    ASSERT_TRUE(sim_->ok()) << sim_->error();
    options.library_path = sim_->library_path();
    if (options.event_wait_timeout == NvmlSourceOptions().event_wait_timeout) {
      options.event_wait_timeout = std::chrono::milliseconds(20);  // quick Stop() in tests
    }
    source_ = NvmlSource::Create(options, clock_, resolver_,
                                 [this](std::string_view r) { hook_calls_.emplace_back(r); });
    base::Status status = source_->Start();
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  // Moves the simulated time and the agent's clock to `seconds` and polls into a fresh sink: Poll
  // then Finish, as the agent does when the source answers in time.
  void PollAt(double seconds) {
    sim_->SetTime(seconds);
    base::Duration target =
        std::chrono::duration_cast<base::Duration>(std::chrono::duration<double>(seconds));
    if (target > elapsed_) {
      clock_.Advance(target - elapsed_);
      elapsed_ = target;
    }
    sink_.Clear();
    source_->Poll(clock_.Now(), sink_);
    source_->Finish(clock_.Now(), sink_);
  }

  std::optional<double> Value(const model::MetricDesc& d, std::string_view entity,
                              const model::Labels& labels = {}) const {
    return sink_.Find(d.key, entity, labels);
  }
  size_t CountEvents(std::string_view kind) const {
    return std::count_if(sink_.events.begin(), sink_.events.end(),
                         [&](const model::Event& e) { return e.kind == kind; });
  }
  const model::Event* FindEvent(std::string_view kind) const {
    for (const auto& e : sink_.events) {
      if (e.kind == kind) {
        return &e;
      }
    }
    return nullptr;
  }

  void TearDown() override {
    if (source_) {
      source_->Stop();
    }
  }

  base::FakeClock clock_;
  base::Duration elapsed_{};
  model::FakeProcessResolver resolver_;
  model::CollectingSink sink_;
  std::vector<std::string> hook_calls_;
  std::unique_ptr<SimEnvironment> sim_;
  std::unique_ptr<NvmlSource> source_;
};

model::Labels GpuLabels(std::string_view uuid, std::string_view index, std::string_view type = {}) {
  model::Labels l{{"gpu.index", std::string(index)}, {"gpu.uuid", std::string(uuid)}};
  if (!type.empty()) {
    l.Set("type", type);
  }
  return l;
}

TEST(NvmlSourceStartTest, MissingLibraryIsAClearStatusAndCounted) {
  base::FakeClock clock;
  model::FakeProcessResolver resolver;
  std::vector<std::string> reasons;
  NvmlSourceOptions options;
  options.library_path = "/nonexistent/libnvidia-ml.so.1";
  auto source = NvmlSource::Create(options, clock, resolver,
                                   [&](std::string_view r) { reasons.emplace_back(r); });
  base::Status status = source->Start();
  EXPECT_EQ(status.code(), base::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("NVML library not found"));
  EXPECT_THAT(reasons, ::testing::ElementsAre("library_load"));
  EXPECT_EQ(source->library(), nullptr);
  model::CollectingSink sink;
  source->Poll(clock.Now(), sink);  // harmless after a failed start
  EXPECT_TRUE(sink.values.empty());
}

TEST_F(NvmlSourceTest, InvalidScenarioFailsInitAndIsCounted) {
  WARPSCOPE_REQUIRE_PEER(!kSimPath.empty(), "the NVML simulator (src/sim/nvml)",
                         "build it with the tests (it needs yaml-cpp: scripts/setup.sh --test)");
  sim_ = std::make_unique<SimEnvironment>("name: x\ndevices: nope\n");
  ASSERT_TRUE(sim_->ok());
  NvmlSourceOptions options;
  options.library_path = sim_->library_path();
  source_ = NvmlSource::Create(options, clock_, resolver_);
  base::Status status = source_->Start();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("nvmlInit_v2"));
  EXPECT_EQ(source_->error_count("init"), 1u);
}

TEST_F(NvmlSourceTest, GpuEntitiesCarryIdentity) {
  StartWith(kHealthy);
  EXPECT_EQ(source_->gpu_count(), 2u);
  PollAt(1);
  const model::Entity* gpu = sink_.FindEntity(kUuid1);
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->kind, model::EntityKind::kGpu);
  EXPECT_EQ(gpu->attributes.Get(model::attr::kGpuIndex), "1");
  EXPECT_EQ(gpu->attributes.Get(model::attr::kGpuUuid), kUuid1);
  EXPECT_EQ(gpu->attributes.Get(model::attr::kGpuModel), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu->attributes.Get(model::attr::kGpuPciBusId), "00000000:18:00.0");
  EXPECT_EQ(gpu->attributes.Get(model::attr::kGpuSerial), "1650923001");
  EXPECT_EQ(gpu->attributes.Get(model::attr::kGpuMinor), "1");
  EXPECT_EQ(gpu->attributes.Get(model::attr::kGpuArchitecture), "hopper");
  EXPECT_EQ(gpu->attributes.Get(model::attr::kGpuComputeCapability), "9.0");
  EXPECT_EQ(gpu->attributes.Get(model::attr::kDriverVersion), "550.127.08");
  EXPECT_EQ(gpu->attributes.Get(model::attr::kCudaVersion), "12.4");
  EXPECT_EQ(Value(m::kInfo, kUuid1), 1);
  EXPECT_EQ(Value(m::kDegraded, kUuid1), 0);
}

TEST_F(NvmlSourceTest, ReportsScenarioValuesInBaseUnits) {
  StartWith(kHealthy);
  PollAt(10);
  EXPECT_DOUBLE_EQ(*Value(m::kGpuUtilization, kUuid0), 0.97);
  EXPECT_DOUBLE_EQ(*Value(m::kMemoryCopyUtilization, kUuid0), 0.60);
  EXPECT_DOUBLE_EQ(*Value(m::kEncoderUtilization, kUuid0), 0.03);
  EXPECT_DOUBLE_EQ(*Value(m::kDecoderUtilization, kUuid0), 0.04);
  EXPECT_EQ(Value(m::kMemoryTotal, kUuid0), 80 * kGiB);
  EXPECT_EQ(Value(m::kMemoryReserved, kUuid0), 512 * kMiB);
  EXPECT_EQ(Value(m::kMemoryUsed, kUuid0), 20 * kGiB);
  EXPECT_EQ(Value(m::kMemoryFree, kUuid0), 80 * kGiB - 512 * kMiB - 20 * kGiB);
  EXPECT_DOUBLE_EQ(*Value(m::kMemoryUtilization, kUuid0), 20 * kGiB / (80 * kGiB - 512 * kMiB));
  EXPECT_DOUBLE_EQ(*Value(m::kPowerUsage, kUuid0), 600);
  EXPECT_DOUBLE_EQ(*Value(m::kPowerLimit, kUuid0), 700);
  EXPECT_DOUBLE_EQ(*Value(m::kEnforcedPowerLimit, kUuid0), 650);
  EXPECT_NEAR(*Value(m::kEnergyConsumed, kUuid0), 600 * 10, 0.01);  // J after 10 s at 600 W
  EXPECT_EQ(Value(m::kTemperature, kUuid0), 62);
  EXPECT_EQ(Value(m::kMemoryTemperature, kUuid0), 70);
  EXPECT_EQ(Value(m::kTemperatureSlowdown, kUuid0), 89);  // the simulator's hopper defaults
  EXPECT_EQ(Value(m::kMemoryTemperatureMax, kUuid0), 95);
  EXPECT_EQ(Value(m::kSmClock, kUuid0), 1980e6);
  EXPECT_EQ(Value(m::kMemoryClock, kUuid0), 2619e6);
  EXPECT_EQ(Value(m::kMaxSmClock, kUuid0), 1980e6);
  EXPECT_EQ(Value(m::kMaxMemoryClock, kUuid0), 2619e6);
  EXPECT_EQ(Value(m::kClockEventReasons, kUuid0), 5);
  EXPECT_EQ(Value(m::kClockEventReasonActive, kUuid0, {{"reason", "gpu_idle"}}), 1);
  EXPECT_EQ(Value(m::kClockEventReasonActive, kUuid0, {{"reason", "power_cap"}}), 1);
  EXPECT_EQ(Value(m::kClockEventReasonActive, kUuid0, {{"reason", "hw_thermal"}}), 0);
  EXPECT_EQ(Value(m::kPcieTransmitRate, kUuid0), 12000 * 1024.0);
  EXPECT_EQ(Value(m::kPcieReceiveRate, kUuid0), 30000 * 1024.0);
  EXPECT_EQ(Value(m::kPcieReplays, kUuid0), 20);
  EXPECT_EQ(Value(m::kEccCorrectedVolatile, kUuid0), 10);
  EXPECT_EQ(Value(m::kEccCorrectedAggregate, kUuid0), 10);
  EXPECT_EQ(Value(m::kEccUncorrectedVolatile, kUuid0), 0);
  EXPECT_EQ(Value(m::kRemappedRowsCorrectable, kUuid0), 3);
  EXPECT_EQ(Value(m::kRemappedRowsUncorrectable, kUuid0), 0);
  EXPECT_EQ(Value(m::kRemappedRowsPending, kUuid0), 1);
  EXPECT_EQ(Value(m::kRemappedRowsFailure, kUuid0), 0);
  EXPECT_EQ(Value(m::kXidLast, kUuid0), 0);  // events registered, no XID yet
  EXPECT_EQ(Value(m::kMigMode, kUuid0), 0);
  EXPECT_TRUE(source_->error_counts().empty()) << source_->error_counts().begin()->first;
}

TEST_F(NvmlSourceTest, NvlinkCountersAndRatesPerLinkAndTotal) {
  StartWith(kHealthy);
  PollAt(10);
  const model::Labels link1{{"link", "1"}};
  EXPECT_NEAR(*Value(m::kNvlinkTransmitBytes, kUuid0, link1), 10e9, 1024);
  EXPECT_NEAR(*Value(m::kNvlinkReceiveBytes, kUuid0, link1), 20e9, 1024);
  EXPECT_FALSE(Value(m::kNvlinkTransmitRate, kUuid0, link1));  // first reading: no rate yet
  EXPECT_FALSE(Value(m::kNvlinkBandwidthTotal, kUuid0));
  PollAt(20);
  EXPECT_NEAR(*Value(m::kNvlinkTransmitRate, kUuid0, link1), 1e9, 1e3);
  EXPECT_NEAR(*Value(m::kNvlinkReceiveRate, kUuid0, link1), 2e9, 1e3);
  EXPECT_NEAR(*Value(m::kNvlinkBandwidthTotal, kUuid0), 2 * (1e9 + 2e9), 1e4);
  EXPECT_FALSE(Value(m::kNvlinkTransmitRate, kUuid0, {{"link", "2"}}));  // only 2 links
}

TEST_F(NvmlSourceTest, NotSupportedMetricIsAbsentAndNotAskedAgain) {
  StartWith(R"yaml(
name: partial
devices:
  - name: "NVIDIA A100-SXM4-80GB"
    architecture: ampere
    uuid: "GPU-00000000-0000-4000-8000-000000000000"
    signals: {temperature: 50, memory_temperature: 60}
    faults:
      - {kind: not_supported, what: memory_temperature}
      - {kind: not_supported, what: nvmlDeviceGetPowerUsage}
)yaml");
  PollAt(1);
  EXPECT_FALSE(Value(m::kMemoryTemperature, kUuid0));
  EXPECT_FALSE(Value(m::kPowerUsage, kUuid0));
  EXPECT_EQ(Value(m::kTemperature, kUuid0), 50);
  EXPECT_TRUE(Value(m::kPowerLimit, kUuid0));
  const uint64_t after_first = source_->error_count("not_supported");
  EXPECT_GE(after_first, 2u);
  PollAt(2);
  PollAt(3);
  EXPECT_FALSE(Value(m::kMemoryTemperature, kUuid0));
  EXPECT_FALSE(Value(m::kPowerUsage, kUuid0));
  EXPECT_EQ(source_->error_count("not_supported"), after_first);  // remembered, not re-asked
}

TEST_F(NvmlSourceTest, TemperatureThresholdsAreReadAtTheFirstPollAndEveryFiveMinutes) {
  // The thresholds stop being supported at 2 minutes: the agent notices at its next read only.
  StartWith(R"yaml(
name: thresholds
devices:
  - name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-000000000000"
    slowdown_temperature: 88
    signals: {temperature: 62}
    faults:
      - {kind: not_supported, what: nvmlDeviceGetTemperatureThreshold, at: 2m}
)yaml");
  PollAt(1);
  EXPECT_EQ(Value(m::kTemperatureSlowdown, kUuid0), 88);
  EXPECT_EQ(Value(m::kTemperatureShutdown, kUuid0), 92);
  EXPECT_EQ(Value(m::kTemperatureMaxOperating, kUuid0), 87);
  EXPECT_EQ(Value(m::kMemoryTemperatureMax, kUuid0), 95);
  const uint64_t before = source_->error_count("not_supported");  // no NVLink on this GPU
  PollAt(200);  // not read again yet: the last answers, on every poll
  EXPECT_EQ(Value(m::kTemperatureSlowdown, kUuid0), 88);
  EXPECT_EQ(Value(m::kMemoryTemperatureMax, kUuid0), 95);
  EXPECT_EQ(source_->error_count("not_supported"), before);
  PollAt(302);  // five minutes after the first read
  EXPECT_FALSE(Value(m::kTemperatureSlowdown, kUuid0));
  EXPECT_FALSE(Value(m::kTemperatureShutdown, kUuid0));
  EXPECT_FALSE(Value(m::kTemperatureMaxOperating, kUuid0));
  EXPECT_FALSE(Value(m::kMemoryTemperatureMax, kUuid0));
  EXPECT_EQ(source_->error_count("not_supported"), before + 4);
  EXPECT_EQ(Value(m::kTemperature, kUuid0), 62);
  PollAt(700);
  EXPECT_FALSE(Value(m::kTemperatureSlowdown, kUuid0));
  EXPECT_EQ(source_->error_count("not_supported"), before + 4);  // remembered, not asked again
}

TEST_F(NvmlSourceTest, TemperatureThresholdsABoardDoesNotReportAreAbsent) {
  StartWith(R"yaml(
name: gddr
devices:
  - repeat: 2
    name: "NVIDIA L40S"
    architecture: ada
    uuid: "GPU-00000000-0000-4000-8000-00000000000{i}"
    overrides:
      "1": {slowdown_temperature: none}
)yaml");
  PollAt(1);
  EXPECT_EQ(Value(m::kTemperatureSlowdown, kUuid0), 95);
  EXPECT_EQ(Value(m::kTemperatureShutdown, kUuid0), 98);
  EXPECT_EQ(Value(m::kTemperatureMaxOperating, kUuid0), 89);
  EXPECT_FALSE(Value(m::kMemoryTemperatureMax, kUuid0));  // no HBM
  EXPECT_FALSE(Value(m::kTemperatureSlowdown, kUuid1));
  EXPECT_EQ(Value(m::kTemperatureShutdown, kUuid1), 98);
}

TEST_F(NvmlSourceTest, DriverWithoutTheThresholdCallHasNoThresholds) {
  StartWith(R"yaml(
name: old
driver: {missing_symbols: [nvmlDeviceGetTemperatureThreshold]}
devices:
  - uuid: "GPU-00000000-0000-4000-8000-000000000000"
    signals: {temperature: 55}
)yaml");
  PollAt(1);
  PollAt(400);
  EXPECT_EQ(Value(m::kTemperature, kUuid0), 55);
  for (const model::MetricDesc* d : {&m::kTemperatureSlowdown, &m::kTemperatureShutdown,
                                     &m::kTemperatureMaxOperating, &m::kMemoryTemperatureMax}) {
    EXPECT_FALSE(Value(*d, kUuid0)) << d->key;
  }
  EXPECT_EQ(Value(m::kDegraded, kUuid0), 0);
}

constexpr char kTwoGpusOneLost[] = R"yaml(
name: lost
devices:
  - repeat: 2
    name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-00000000000{i}"
    signals: {gpu_util: 50, temperature: 40}
    overrides:
      "1": {faults: [{kind: gpu_lost, at: 60s, until: 90s}]}
)yaml";

TEST_F(NvmlSourceTest, LostGpuIsDegradedWhileOthersContinueThenRecovers) {
  NvmlSourceOptions options;
  options.lost_retry_polls = 2;
  StartWith(kTwoGpusOneLost, kSimPath, options);
  PollAt(10);
  EXPECT_EQ(Value(m::kGpuUtilization, kUuid1), 0.5);

  PollAt(61);  // GPU 1 falls off the bus
  EXPECT_EQ(Value(m::kDegraded, kUuid1), 1);
  EXPECT_EQ(Value(m::kDegraded, kUuid0), 0);
  EXPECT_EQ(Value(m::kGpuUtilization, kUuid0), 0.5);
  EXPECT_FALSE(Value(m::kTemperature, kUuid1));
  ASSERT_EQ(CountEvents("gpu_lost"), 1u);
  EXPECT_EQ(FindEvent("gpu_lost")->entity, kUuid1);
  EXPECT_THAT(FindEvent("gpu_lost")->message, HasSubstr("NVML_ERROR_GPU_IS_LOST"));
  EXPECT_GE(source_->error_count("gpu_is_lost"), 1u);
  EXPECT_NE(sink_.FindEntity(kUuid1), nullptr);  // still declared

  PollAt(62);
  PollAt(63);  // a retry poll (every 2nd) while still lost: nothing but degraded
  EXPECT_EQ(Value(m::kDegraded, kUuid1), 1);
  EXPECT_FALSE(Value(m::kTemperature, kUuid1));
  EXPECT_EQ(CountEvents("gpu_lost"), 0u);
  EXPECT_EQ(Value(m::kTemperature, kUuid0), 40);

  PollAt(91);  // back, but not a retry poll
  EXPECT_EQ(Value(m::kDegraded, kUuid1), 1);
  PollAt(92);  // retry poll: recovered
  EXPECT_EQ(Value(m::kDegraded, kUuid1), 0);
  EXPECT_EQ(CountEvents("gpu_recovered"), 1u);
  EXPECT_EQ(Value(m::kGpuUtilization, kUuid1), 0.5);
  EXPECT_EQ(Value(m::kTemperature, kUuid1), 40);
}

TEST_F(NvmlSourceTest, GpuLostAtStartIsDegradedAndIdentifiedWhenItReturns) {
  NvmlSourceOptions options;
  options.lost_retry_polls = 1;
  StartWith(R"yaml(
name: lost-at-start
devices:
  - repeat: 2
    name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-00000000000{i}"
    signals: {temperature: 40}
    overrides:
      "1": {faults: [{kind: gpu_lost, at: 0s, until: 5s}]}
)yaml",
            kSimPath, options);
  EXPECT_EQ(source_->gpu_count(), 2u);
  PollAt(1);
  EXPECT_EQ(Value(m::kDegraded, "nvml-index-1"), 1);
  EXPECT_EQ(CountEvents("gpu_lost"), 1u);
  EXPECT_EQ(Value(m::kTemperature, kUuid0), 40);
  PollAt(6);
  EXPECT_EQ(CountEvents("gpu_recovered"), 1u);
  EXPECT_EQ(Value(m::kTemperature, kUuid1), 40);
  EXPECT_EQ(Value(m::kDegraded, kUuid1), 0);
  ASSERT_NE(sink_.FindEntity(kUuid1), nullptr);
  EXPECT_EQ(sink_.FindEntity(kUuid1)->attributes.Get(model::attr::kGpuIndex), "1");
}

TEST_F(NvmlSourceTest, RepeatedUnexpectedErrorsDegradeTheGpu) {
  // GPM samples taken at the same simulated time make nvmlGpmMetricsGet fail with
  // INVALID_ARGUMENT (the agent's clock moved, the simulator's did not).
  NvmlSourceOptions options;
  options.error_streak_to_degrade = 1;
  StartWith(R"yaml(
name: gpm-stuck
devices: [{name: "NVIDIA H100", architecture: hopper,
           uuid: "GPU-00000000-0000-4000-8000-000000000000"}]
)yaml",
            kSimPath, options);
  PollAt(1);
  clock_.Advance(std::chrono::seconds(1));
  sink_.Clear();
  source_->Poll(clock_.Now(), sink_);
  EXPECT_EQ(source_->error_count("invalid_argument"), 1u);
  EXPECT_EQ(source_->error_count("degraded_after_errors"), 1u);
  EXPECT_EQ(Value(m::kDegraded, kUuid0), 1);
  ASSERT_EQ(CountEvents("gpu_lost"), 1u);
  EXPECT_THAT(FindEvent("gpu_lost")->message, HasSubstr("NVML_ERROR_INVALID_ARGUMENT"));
}

TEST_F(NvmlSourceTest, XidIsAnEventACounterAndTheLastXid) {
  StartWith(R"yaml(
name: xid
devices:
  - name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-000000000000"
    faults: [{kind: xid, at: 30s, code: 79}, {kind: xid, at: 40s, code: 13},
             {kind: xid, at: 41s, code: 13}]
)yaml");
  PollAt(1);
  EXPECT_EQ(Value(m::kXidLast, kUuid0), 0);
  sim_->SetTime(31);
  ASSERT_TRUE(source_->WaitForEventsForTesting(1, std::chrono::seconds(10)));
  PollAt(31);
  ASSERT_EQ(CountEvents("xid"), 1u);
  const model::Event* xid = FindEvent("xid");
  EXPECT_EQ(xid->entity, kUuid0);
  EXPECT_EQ(xid->code, 79);
  EXPECT_THAT(xid->message, HasSubstr("GPU has fallen off the bus"));
  EXPECT_EQ(xid->attributes.Get("xid"), "79");
  EXPECT_EQ(Value(m::kXidLast, kUuid0), 79);
  EXPECT_EQ(Value(m::kXidErrors, kUuid0, {{"xid", "79"}}), 1);

  sim_->SetTime(42);
  ASSERT_TRUE(source_->WaitForEventsForTesting(3, std::chrono::seconds(10)));
  PollAt(42);
  EXPECT_EQ(CountEvents("xid"), 2u);
  EXPECT_EQ(Value(m::kXidLast, kUuid0), 13);
  EXPECT_EQ(Value(m::kXidErrors, kUuid0, {{"xid", "13"}}), 2);
  EXPECT_EQ(Value(m::kXidErrors, kUuid0, {{"xid", "79"}}), 1);
}

TEST_F(NvmlSourceTest, FullEventQueueDropsAndCounts) {
  NvmlSourceOptions options;
  options.event_queue_capacity = 1;
  StartWith(R"yaml(
name: xid-storm
devices:
  - name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-000000000000"
    faults: [{kind: xid, at: 1s, code: 13}, {kind: xid, at: 2s, code: 31},
             {kind: xid, at: 3s, code: 43}]
)yaml",
            kSimPath, options);
  sim_->SetTime(5);
  ASSERT_TRUE(source_->WaitForEventsForTesting(3, std::chrono::seconds(10)));
  PollAt(5);
  EXPECT_EQ(CountEvents("xid"), 1u);
  EXPECT_EQ(source_->error_count("event_queue_full"), 2u);
  EXPECT_EQ(Value(m::kXidErrors, kUuid0, {{"xid", "13"}}), 1);
}

TEST_F(NvmlSourceTest, GpmFirstPollIsTheBaselineThenRatesFollow) {
  StartWith(kHealthy);
  PollAt(1);
  EXPECT_FALSE(Value(m::kSmActive, kUuid0));
  EXPECT_FALSE(Value(m::kTensorActive, kUuid0));
  PollAt(2);
  EXPECT_NEAR(*Value(m::kGraphicsEngineActive, kUuid0), 0.95, 1e-9);
  EXPECT_NEAR(*Value(m::kSmActive, kUuid0), 0.88, 1e-9);
  EXPECT_NEAR(*Value(m::kSmOccupancy, kUuid0), 0.45, 1e-9);
  EXPECT_NEAR(*Value(m::kTensorActive, kUuid0), 0.55, 1e-9);
  EXPECT_NEAR(*Value(m::kTensorHmmaActive, kUuid0), 0.50, 1e-9);
  EXPECT_NEAR(*Value(m::kDramActive, kUuid0), 0.40, 1e-9);
  EXPECT_NEAR(*Value(m::kFp32Active, kUuid0), 0.20, 1e-9);
  EXPECT_NEAR(*Value(m::kFp64Active, kUuid0), 0.0, 1e-9);
  EXPECT_NEAR(*Value(m::kProfPcieTransmitRate, kUuid0), 100 * kMiB, 1);
  EXPECT_NEAR(*Value(m::kProfNvlinkReceiveRate, kUuid0), 4000 * kMiB, 1);
}

TEST_F(NvmlSourceTest, GpmSkipsAPollSoonerThanTheMinimumInterval) {
  StartWith(kHealthy);
  PollAt(1);
  PollAt(1.05);  // 50 ms later: keep the baseline, no values
  EXPECT_FALSE(Value(m::kSmActive, kUuid0));
  PollAt(2);
  EXPECT_NEAR(*Value(m::kSmActive, kUuid0), 0.88, 1e-9);
  EXPECT_EQ(source_->error_count("invalid_argument"), 0u);
}

TEST_F(NvmlSourceTest, ProcessesAreEntitiesWithSeriesAndExecutableRollups) {
  StartWith(R"yaml(
name: procs
devices:
  - name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-000000000000"
    processes:
      - {pid: 700, name: python3, type: compute, memory: 6GiB, sm_util: 90, mem_util: 40}
      - {pid: 701, name: python3, type: compute, memory: 2GiB, sm_util: 10, mem_util: 5}
      - {pid: 702, name: Xorg, type: graphics, memory: 100MiB}
)yaml");
  model::ProcessInfo py;
  py.pid = 700;
  py.start_ticks = 1234;
  py.executable = "python3";
  py.executable_path = "/usr/bin/python3.11";
  py.container_id = std::string(64, 'a');
  resolver_.Add(py);
  py.pid = 701;
  py.start_ticks = 1250;
  resolver_.Add(py);
  PollAt(5);

  const model::Entity* p700 = sink_.FindEntity("pid/700/1234");
  ASSERT_NE(p700, nullptr);
  EXPECT_EQ(p700->kind, model::EntityKind::kProcess);
  EXPECT_EQ(p700->attributes.Get(model::attr::kExecutable), "python3");
  EXPECT_NE(sink_.FindEntity("exe//usr/bin/python3.11"), nullptr);
  EXPECT_NE(sink_.FindEntity("ctr/" + std::string(64, 'a')), nullptr);
  // Entities are declared once per poll even when shared.
  EXPECT_EQ(std::count_if(sink_.entities.begin(), sink_.entities.end(),
                          [](const model::Entity& e) { return e.id == "exe//usr/bin/python3.11"; }),
            1);

  const model::Labels compute = GpuLabels(kUuid0, "0", "compute");
  EXPECT_EQ(Value(m::kProcessMemoryUsed, "pid/700/1234", compute), 6 * kGiB);
  EXPECT_DOUBLE_EQ(*Value(m::kProcessSmUtilization, "pid/700/1234", compute), 0.90);
  EXPECT_DOUBLE_EQ(*Value(m::kProcessMemoryUtilization, "pid/700/1234", compute), 0.40);
  EXPECT_DOUBLE_EQ(*Value(m::kProcessSmUtilization, "pid/701/1250", compute), 0.10);

  const model::Labels gpu = GpuLabels(kUuid0, "0");
  EXPECT_EQ(Value(m::kExecutableMemoryUsed, "exe//usr/bin/python3.11", gpu), 8 * kGiB);
  EXPECT_DOUBLE_EQ(*Value(m::kExecutableSmUtilization, "exe//usr/bin/python3.11", gpu), 1.0);
  EXPECT_EQ(Value(m::kExecutableProcesses, "exe//usr/bin/python3.11", gpu), 2);

  // Xorg is unknown to /proc (simulated pid): named through nvmlSystemGetProcessName.
  const model::Labels graphics = GpuLabels(kUuid0, "0", "graphics");
  EXPECT_EQ(Value(m::kProcessMemoryUsed, "pid/702/0", graphics), 100 * kMiB);
  EXPECT_EQ(Value(m::kProcessSmUtilization, "pid/702/0", graphics), 0);  // idle: no samples
  const model::Entity* xorg = sink_.FindEntity("pid/702/0");
  ASSERT_NE(xorg, nullptr);
  EXPECT_EQ(xorg->attributes.Get(model::attr::kExecutable), "Xorg");
  EXPECT_EQ(Value(m::kExecutableMemoryUsed, "exe/Xorg", gpu), 100 * kMiB);
}

TEST_F(NvmlSourceTest, AProcessLeavingProcWhileNvmlListsItKeepsItsIdentity) {
  StartWith(R"yaml(
name: exiting
devices:
  - name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-000000000000"
    processes:
      - {pid: 700, name: python3, type: compute, memory: 6GiB}
)yaml");
  model::ProcessInfo py;
  py.pid = 700;
  py.start_ticks = 1234;
  py.executable = "python3";
  resolver_.Add(py);
  PollAt(1);
  const model::Labels compute = GpuLabels(kUuid0, "0", "compute");
  EXPECT_EQ(Value(m::kProcessMemoryUsed, "pid/700/1234", compute), 6 * kGiB);

  resolver_.Remove(700);  // exiting: gone from /proc, still in NVML's list
  PollAt(2);
  EXPECT_EQ(Value(m::kProcessMemoryUsed, "pid/700/1234", compute), 6 * kGiB);
  EXPECT_EQ(sink_.FindEntity("pid/700/0"), nullptr) << "one process, one identity";
}

TEST_F(NvmlSourceTest, AProcessWhosePodIsNamedLaterGetsTheNames) {
  StartWith(R"yaml(
name: pod
devices:
  - name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-000000000000"
    processes:
      - {pid: 700, name: python3, type: compute, memory: 6GiB}
)yaml");
  model::ProcessInfo py;
  py.pid = 700;
  py.start_ticks = 1234;
  py.executable = "python3";
  py.container_id = std::string(64, 'a');
  py.pod_uid = "1b4e28ba-2fa1-11d2-883f-0016d3cca427";
  resolver_.Add(py);
  PollAt(1);
  const model::Entity* before = sink_.FindEntity("pid/700/1234");
  ASSERT_NE(before, nullptr);
  EXPECT_EQ(before->attributes.Get(model::attr::kPodName), "");

  // The pod directory has heard of the pod since (--kubernetes).
  py.pod_namespace = "ml";
  py.pod_name = "trainer-0";
  py.container_name = "trainer";
  resolver_.Add(py);
  PollAt(2);
  const model::Entity* after = sink_.FindEntity("pid/700/1234");
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(after->attributes.Get(model::attr::kPodNamespace), "ml");
  EXPECT_EQ(after->attributes.Get(model::attr::kPodName), "trainer-0");
  EXPECT_EQ(after->attributes.Get(model::attr::kContainerName), "trainer");
}

std::string StrideScenario(int stride) {
  return "name: stride\ndriver: {process_stride: " + std::to_string(stride) + R"yaml(}
devices:
  - name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-000000000000"
    processes:
      - {pid: 800, name: a, type: compute, memory: 1GiB}
      - {pid: 801, name: b, type: compute, memory: 2GiB}
      - {pid: 802, name: c, type: compute, memory: 3GiB}
)yaml";
}

TEST_F(NvmlSourceTest, ProcessListWith24ByteStride) {
  StartWith(StrideScenario(24));
  PollAt(1);
  const model::Labels compute = GpuLabels(kUuid0, "0", "compute");
  EXPECT_EQ(Value(m::kProcessMemoryUsed, "pid/800/0", compute), 1 * kGiB);
  EXPECT_EQ(Value(m::kProcessMemoryUsed, "pid/802/0", compute), 3 * kGiB);
  EXPECT_EQ(source_->error_count("process_stride_mismatch"), 0u);
}

TEST_F(NvmlSourceTest, ProcessListWith32ByteStride) {
  StartWith(StrideScenario(32));
  PollAt(1);
  PollAt(2);
  const model::Labels compute = GpuLabels(kUuid0, "0", "compute");
  EXPECT_EQ(Value(m::kProcessMemoryUsed, "pid/800/0", compute), 1 * kGiB);
  EXPECT_EQ(Value(m::kProcessMemoryUsed, "pid/801/0", compute), 2 * kGiB);
  EXPECT_EQ(Value(m::kProcessMemoryUsed, "pid/802/0", compute), 3 * kGiB);
  EXPECT_EQ(source_->error_count("process_stride_mismatch"), 1u);  // once, then learned
}

TEST_F(NvmlSourceTest, ProcessUtilizationNotFoundMeansIdleNotAnError) {
  StartWith(R"yaml(
name: idle
devices:
  - name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-000000000000"
    processes: [{pid: 900, name: idle, type: compute, memory: 1GiB, sm_util: 0, mem_util: 0}]
)yaml");
  PollAt(3);
  const model::Labels compute = GpuLabels(kUuid0, "0", "compute");
  EXPECT_EQ(Value(m::kProcessSmUtilization, "pid/900/0", compute), 0);
  EXPECT_EQ(Value(m::kProcessMemoryUtilization, "pid/900/0", compute), 0);
  EXPECT_EQ(source_->error_count("not_found"), 0u);
  for (const auto& [reason, count] : source_->error_counts()) {
    EXPECT_EQ(reason, "not_supported");  // no NVLink on this GPU; nothing else
  }
}

TEST_F(NvmlSourceTest, ProcessNameFailureIsCountedAndNamedUnknown) {
  StartWith(R"yaml(
name: noname
driver: {missing_symbols: [nvmlSystemGetProcessName]}
devices:
  - name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-000000000000"
    processes: [{pid: 901, name: x, type: compute, memory: 1GiB}]
)yaml");
  PollAt(1);
  const model::Entity* p = sink_.FindEntity("pid/901/0");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->attributes.Get(model::attr::kExecutable), "unknown");
  EXPECT_EQ(source_->error_count("process_name"), 1u);
  PollAt(2);  // cached: not asked again
  EXPECT_EQ(source_->error_count("process_name"), 1u);
}

constexpr char kMig[] = R"yaml(
name: mig
devices:
  - name: "NVIDIA A100-SXM4-80GB"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-000000000000"
    memory_total: 80GiB
    signals: {gpu_util: 50}
    processes:
      - {pid: 1001, name: trainer, type: compute, memory: 3GiB, gpu_instance_id: 1}
      - {pid: 1002, name: server, type: compute, memory: 5GiB, gpu_instance_id: 2}
    mig:
      enabled: true
      instances:
        - gpu_instance_id: 1
          compute_instance_id: 0
          profile: "1g.10gb"
          uuid: "MIG-00000000-0000-4000-8000-000000000001"
          memory_total: 10GiB
          signals: {memory_used: 4GiB, sm_active: 70}
        - gpu_instance_id: 2
          compute_instance_id: 0
          profile: "3g.40gb"
          uuid: "MIG-00000000-0000-4000-8000-000000000002"
          memory_total: 40GiB
          signals: {memory_used: 6GiB, sm_active: 20}
)yaml";

TEST_F(NvmlSourceTest, MigInstancesAreEntitiesWithTheirOwnSeries) {
  StartWith(kMig);
  PollAt(1);
  PollAt(2);
  constexpr char kMig1[] = "MIG-00000000-0000-4000-8000-000000000001";
  constexpr char kMig2[] = "MIG-00000000-0000-4000-8000-000000000002";
  const model::Entity* mig = sink_.FindEntity(kMig1);
  ASSERT_NE(mig, nullptr);
  EXPECT_EQ(mig->kind, model::EntityKind::kMigInstance);
  EXPECT_EQ(mig->parent, kUuid0);
  EXPECT_EQ(mig->attributes.Get(model::attr::kMigGpuInstanceId), "1");
  EXPECT_EQ(mig->attributes.Get(model::attr::kMigComputeInstanceId), "0");
  EXPECT_EQ(mig->attributes.Get(model::attr::kMigProfile), "1g.10gb");
  EXPECT_EQ(mig->attributes.Get(model::attr::kGpuUuid), kUuid0);
  EXPECT_EQ(mig->attributes.Get(model::attr::kGpuIndex), "0");
  EXPECT_EQ(sink_.FindEntity(kMig2)->attributes.Get(model::attr::kMigProfile), "3g.40gb");

  EXPECT_EQ(Value(m::kMigMode, kUuid0), 1);
  EXPECT_FALSE(Value(m::kGpuUtilization, kUuid0));  // not available in MIG mode
  EXPECT_EQ(Value(m::kMemoryTotal, kMig1), 10 * kGiB);
  EXPECT_EQ(Value(m::kMemoryUsed, kMig1), 4 * kGiB);
  EXPECT_EQ(Value(m::kMemoryUsed, kMig2), 6 * kGiB);
  EXPECT_NEAR(*Value(m::kSmActive, kMig1), 0.70, 1e-9);
  EXPECT_NEAR(*Value(m::kSmActive, kMig2), 0.20, 1e-9);

  // Processes are attributed to their instance.
  EXPECT_EQ(Value(m::kProcessMemoryUsed, "pid/1001/0", GpuLabels(kMig1, "0", "compute")), 3 * kGiB);
  EXPECT_EQ(Value(m::kProcessMemoryUsed, "pid/1002/0", GpuLabels(kMig2, "0", "compute")), 5 * kGiB);
  EXPECT_EQ(Value(m::kExecutableMemoryUsed, "exe/server", GpuLabels(kMig2, "0")), 5 * kGiB);
  EXPECT_FALSE(Value(m::kProcessSmUtilization, "pid/1001/0", GpuLabels(kMig1, "0", "compute")));
}

TEST_F(NvmlSourceTest, LegacyDriverFallsBackToOlderCalls) {
  StartWith(R"yaml(
name: legacy
devices:
  - name: "Tesla V100-SXM2-32GB"
    architecture: volta
    uuid: "GPU-00000000-0000-4000-8000-000000000000"
    memory_total: 32GiB
    memory_reserved: 256MiB
    signals: {memory_used: 2GiB, clock_event_reasons: 1, sm_active: 50}
    processes: [{pid: 1100, name: python3, type: compute, memory: 1GiB}]
)yaml",
            kLegacySimPath);
  PollAt(1);
  PollAt(2);
  EXPECT_EQ(Value(m::kMemoryUsed, kUuid0), 2 * kGiB + 256 * kMiB);  // v1 includes reserved
  EXPECT_FALSE(Value(m::kMemoryReserved, kUuid0));
  EXPECT_EQ(Value(m::kClockEventReasons, kUuid0), 1);  // via ...ThrottleReasons
  EXPECT_EQ(Value(m::kProcessMemoryUsed, "pid/1100/0", GpuLabels(kUuid0, "0", "compute")),
            1 * kGiB);
  EXPECT_FALSE(Value(m::kSmActive, kUuid0));  // no GPM before R520
}

TEST_F(NvmlSourceTest, NoPermissionGpuIsSkippedAndCounted) {
  StartWith(R"yaml(
name: hidden
devices:
  - repeat: 2
    name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-00000000000{i}"
    overrides:
      "1": {faults: [{kind: no_permission}]}
)yaml");
  EXPECT_EQ(source_->gpu_count(), 1u);
  EXPECT_EQ(source_->error_count("no_permission"), 1u);
  EXPECT_EQ(std::count(hook_calls_.begin(), hook_calls_.end(), "no_permission"), 1);
  PollAt(1);
  EXPECT_NE(sink_.FindEntity(kUuid0), nullptr);
  EXPECT_EQ(sink_.FindEntity(kUuid1), nullptr);
}

TEST_F(NvmlSourceTest, StopEndsTheEventThreadAndUnloads) {
  NvmlSourceOptions options;
  options.event_wait_timeout = std::chrono::milliseconds(200);
  StartWith(kHealthy, kSimPath, options);
  ASSERT_NE(source_->library(), nullptr);
  source_->Stop();
  EXPECT_EQ(source_->library(), nullptr);
  EXPECT_EQ(source_->gpu_count(), 0u);
  source_->Stop();  // idempotent
  sink_.Clear();
  source_->Poll(clock_.Now(), sink_);
  EXPECT_TRUE(sink_.values.empty());
}

// Threads of this process, from /proc/self/task.
size_t ThreadCount() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

// `gpus` GPUs, of which those in `hung` stop answering NVML from t = 10 s to t = 20 s.
std::string HungScenario(int gpus, std::initializer_list<int> hung) {
  std::string yaml = R"yaml(
name: hung
devices:
  - repeat: )yaml" + std::to_string(gpus) +
                     R"yaml(
    name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-00000000000{i}"
    signals: {gpu_util: 50, temperature: 40}
    processes:
      - {pid: "5100{i}", name: python3, type: compute, memory: 1GiB, sm_util: 30}
    overrides:
)yaml";
  for (int gpu : hung) {
    yaml += "      \"" + std::to_string(gpu) +
            "\": {faults: [{kind: slow, hang: true, at: 10s, until: 20s}]}\n";
  }
  return yaml;
}

NvmlSourceOptions HungOptions() {
  NvmlSourceOptions options;
  options.device_deadline = std::chrono::milliseconds(300);
  return options;
}

TEST_F(NvmlSourceTest, HungGpuIsLateAndDegradedWhileTheOtherAnswers) {
  StartWith(HungScenario(2, {1}), kSimPath, HungOptions());
  PollAt(5);
  EXPECT_EQ(Value(m::kTemperature, kUuid1), 40);

  PollAt(10);  // GPU 1 hangs in its first call; GPU 0 is not held up
  EXPECT_EQ(Value(m::kTemperature, kUuid0), 40);
  EXPECT_EQ(Value(m::kDegraded, kUuid0), 0);
  EXPECT_NE(sink_.FindEntity("pid/51000/0"), nullptr);
  EXPECT_EQ(Value(m::kDegraded, kUuid1), 1);
  EXPECT_FALSE(Value(m::kTemperature, kUuid1));
  EXPECT_EQ(sink_.FindEntity("pid/51001/0"), nullptr);
  EXPECT_NE(sink_.FindEntity(kUuid1), nullptr);  // still declared
  ASSERT_EQ(CountEvents("gpu_late"), 1u);
  EXPECT_EQ(FindEvent("gpu_late")->entity, kUuid1);
  EXPECT_THAT(FindEvent("gpu_late")->message, HasSubstr("did not answer within 300ms"));
  EXPECT_EQ(source_->error_count("gpu_late"), 1u);
  EXPECT_EQ(CountEvents("gpu_lost"), 0u);
}

TEST_F(NvmlSourceTest, HungGpuIsSkippedWithoutNewThreadsAndRejoinsWhenItAnswers) {
  StartWith(HungScenario(2, {1}), kSimPath, HungOptions());
  PollAt(10);
  ASSERT_EQ(source_->error_count("gpu_late"), 1u);
  const size_t threads = ThreadCount();
  for (int t = 11; t <= 15; ++t) {
    PollAt(t);  // still hung: skipped, never a second call queued behind the first
    EXPECT_EQ(Value(m::kDegraded, kUuid1), 1);
    EXPECT_EQ(Value(m::kTemperature, kUuid0), 40);
    EXPECT_EQ(CountEvents("gpu_late"), 0u);
  }
  EXPECT_EQ(ThreadCount(), threads);
  EXPECT_EQ(source_->error_count("gpu_late"), 1u);

  sim_->SetTime(20);  // the hang ends
  ASSERT_TRUE(source_->WaitForGpuIdleForTesting(1, std::chrono::seconds(10)));
  PollAt(21);
  EXPECT_EQ(CountEvents("gpu_recovered"), 1u);
  EXPECT_EQ(FindEvent("gpu_recovered")->entity, kUuid1);
  EXPECT_EQ(Value(m::kDegraded, kUuid1), 0);
  EXPECT_EQ(Value(m::kTemperature, kUuid1), 40);
  EXPECT_NE(sink_.FindEntity("pid/51001/0"), nullptr);
  PollAt(22);
  EXPECT_EQ(CountEvents("gpu_recovered"), 0u);
}

TEST_F(NvmlSourceTest, StopReturnsWhileAGpuHangs) {
  StartWith(R"yaml(
name: hung-for-good
devices:
  - repeat: 2
    name: "NVIDIA H100 80GB HBM3"
    uuid: "GPU-00000000-0000-4000-8000-00000000000{i}"
    overrides:
      "1": {faults: [{kind: slow, hang: true, at: 10s}]}
)yaml",
            kSimPath, HungOptions());
  PollAt(10);
  ASSERT_EQ(source_->error_count("gpu_late"), 1u);
  source_->Stop();  // shutting NVML down releases the hung call
  EXPECT_EQ(source_->library(), nullptr);
  EXPECT_EQ(source_->gpu_count(), 0u);
}

TEST_F(NvmlSourceTest, GpusAfterAHungOneStillAnswerInTheSamePoll) {
  StartWith(HungScenario(4, {1}), kSimPath, HungOptions());
  PollAt(10);  // GPU 1 hangs: GPUs 2 and 3, read after it, go on elsewhere
  for (const char* uuid : {kUuid0, kUuid2, kUuid3}) {
    EXPECT_EQ(Value(m::kTemperature, uuid), 40) << uuid;
    EXPECT_EQ(Value(m::kDegraded, uuid), 0) << uuid;
  }
  EXPECT_NE(sink_.FindEntity("pid/51002/0"), nullptr);
  EXPECT_NE(sink_.FindEntity("pid/51003/0"), nullptr);
  EXPECT_EQ(Value(m::kDegraded, kUuid1), 1);
  EXPECT_FALSE(Value(m::kTemperature, kUuid1));
  ASSERT_EQ(CountEvents("gpu_late"), 1u);
  EXPECT_EQ(FindEvent("gpu_late")->entity, kUuid1);
  EXPECT_EQ(source_->error_count("gpu_late"), 1u);

  const size_t threads = ThreadCount();
  for (int t = 11; t <= 15; ++t) {
    PollAt(t);
    EXPECT_EQ(Value(m::kTemperature, kUuid3), 40);
    EXPECT_EQ(Value(m::kDegraded, kUuid1), 1);
  }
  EXPECT_EQ(ThreadCount(), threads);
  EXPECT_EQ(source_->error_count("gpu_late"), 1u);
}

TEST_F(NvmlSourceTest, TwoHungGpusAreLateInOnePollWhileTheOthersAnswerThenBothRejoin) {
  StartWith(HungScenario(4, {1, 2}), kSimPath, HungOptions());
  PollAt(10);
  EXPECT_EQ(Value(m::kTemperature, kUuid0), 40);
  EXPECT_EQ(Value(m::kTemperature, kUuid3), 40);
  EXPECT_EQ(Value(m::kDegraded, kUuid3), 0);
  EXPECT_EQ(Value(m::kDegraded, kUuid1), 1);
  EXPECT_EQ(Value(m::kDegraded, kUuid2), 1);
  EXPECT_EQ(CountEvents("gpu_late"), 2u);
  EXPECT_EQ(source_->error_count("gpu_late"), 2u);

  const size_t threads = ThreadCount();
  for (int t = 11; t <= 15; ++t) {
    PollAt(t);
    EXPECT_EQ(Value(m::kTemperature, kUuid3), 40);
    EXPECT_EQ(CountEvents("gpu_late"), 0u);
  }
  EXPECT_EQ(ThreadCount(), threads);

  sim_->SetTime(20);
  ASSERT_TRUE(source_->WaitForGpuIdleForTesting(1, std::chrono::seconds(10)));
  ASSERT_TRUE(source_->WaitForGpuIdleForTesting(2, std::chrono::seconds(10)));
  PollAt(21);
  EXPECT_EQ(CountEvents("gpu_recovered"), 2u);
  for (const char* uuid : {kUuid0, kUuid1, kUuid2, kUuid3}) {
    EXPECT_EQ(Value(m::kTemperature, uuid), 40) << uuid;
    EXPECT_EQ(Value(m::kDegraded, uuid), 0) << uuid;
  }
  EXPECT_EQ(ThreadCount(), threads);
  EXPECT_EQ(source_->error_count("gpu_late"), 2u);
}

// GPU 0, 1 and 2 hang in turn; each episode ends before the next begins.
constexpr char kThreeGpusHungInTurn[] = R"yaml(
name: hung-in-turn
devices:
  - repeat: 3
    name: "NVIDIA H100 80GB HBM3"
    uuid: "GPU-00000000-0000-4000-8000-00000000000{i}"
    signals: {temperature: 40}
    overrides:
      "0": {faults: [{kind: slow, hang: true, at: 10s, until: 11s},
                     {kind: slow, hang: true, at: 16s, until: 17s}]}
      "1": {faults: [{kind: slow, hang: true, at: 12s, until: 13s}]}
      "2": {faults: [{kind: slow, hang: true, at: 14s, until: 15s}]}
)yaml";

TEST_F(NvmlSourceTest, AThreadThatComesBackFromAHungGpuIsReused) {
  StartWith(kThreeGpusHungInTurn, kSimPath, HungOptions());
  PollAt(5);
  const size_t healthy = ThreadCount();
  size_t after_first = 0;
  for (int at = 10; at <= 16; at += 2) {
    const size_t gpu = at == 16 ? 0 : static_cast<size_t>((at - 10) / 2);
    PollAt(at);
    EXPECT_EQ(CountEvents("gpu_late"), 1u) << "t=" << at;
    sim_->SetTime(at + 1);
    ASSERT_TRUE(source_->WaitForGpuIdleForTesting(gpu, std::chrono::seconds(10)));
    PollAt(at + 1);
    EXPECT_EQ(CountEvents("gpu_recovered"), 1u) << "t=" << at + 1;
    if (after_first == 0) {
      after_first = ThreadCount();
      EXPECT_EQ(after_first, healthy + 1);  // one spare, made at the first hang
    }
    EXPECT_EQ(ThreadCount(), after_first) << "t=" << at + 1;
  }
  EXPECT_EQ(source_->error_count("gpu_late"), 4u);
}

TEST_F(NvmlSourceTest, DeviceDeadlineIsHalfTheAgentsDeadlineUnlessSet) {
  StartWith(kHealthy);
  EXPECT_EQ(source_->device_deadline(), std::chrono::seconds(5));  // no agent deadline
  source_->SetPollDeadline(std::chrono::seconds(2));
  EXPECT_EQ(source_->device_deadline(), std::chrono::seconds(1));
  base::FakeClock clock;
  NvmlSourceOptions options;
  options.device_deadline = std::chrono::milliseconds(300);
  auto configured = NvmlSource::Create(options, clock, resolver_);
  configured->SetPollDeadline(std::chrono::seconds(2));
  EXPECT_EQ(configured->device_deadline(), std::chrono::milliseconds(300));
}

// Records the threads Resolve() is called on.
class ThreadRecordingResolver : public model::ProcessResolver {
 public:
  const model::ProcessInfo* Resolve(int) override {
    std::lock_guard lock(mu_);
    threads_.insert(std::this_thread::get_id());
    return nullptr;
  }
  std::set<std::thread::id> threads() {
    std::lock_guard lock(mu_);
    return threads_;
  }

 private:
  std::mutex mu_;
  std::set<std::thread::id> threads_;
};

TEST_F(NvmlSourceTest, ProcessesAreResolvedAndWrittenInFinishOnTheCallersThread) {
  SimEnvironment sim(kHealthy);
  ASSERT_TRUE(sim.ok()) << sim.error();
  ThreadRecordingResolver resolver;
  NvmlSourceOptions options;
  options.library_path = sim.library_path();
  options.event_wait_timeout = std::chrono::milliseconds(20);
  auto source = NvmlSource::Create(options, clock_, resolver);
  ASSERT_TRUE(source->Start().ok());
  sim.SetTime(1);
  source->Poll(clock_.Now(), sink_);
  EXPECT_EQ(sink_.FindEntity("pid/41000/0"), nullptr);  // not from Poll
  EXPECT_TRUE(resolver.threads().empty());
  source->Finish(clock_.Now(), sink_);
  EXPECT_NE(sink_.FindEntity("pid/41000/0"), nullptr);
  EXPECT_EQ(resolver.threads(), std::set<std::thread::id>{std::this_thread::get_id()});
  source->Stop();
}

// Every scenario shipped in scenarios/ starts and produces GPU values without unexpected errors.
TEST_F(NvmlSourceTest, ShippedScenariosStartAndPoll) {
  WARPSCOPE_REQUIRE_PEER(!kSimPath.empty(), "the NVML simulator (src/sim/nvml)",
                         "build it with the tests (it needs yaml-cpp: scripts/setup.sh --test)");
  const std::filesystem::path dir = std::filesystem::path(WARPSCOPE_SOURCE_DIR) / "scenarios";
  std::error_code ec;
  ASSERT_TRUE(std::filesystem::is_directory(dir, ec)) << dir << " is missing";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") {
      continue;
    }
    SCOPED_TRACE(entry.path().string());
    std::string yaml;
    {
      std::ifstream in(entry.path());
      yaml.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    SimEnvironment sim(yaml);
    ASSERT_TRUE(sim.ok()) << sim.error();
    base::FakeClock clock;
    model::FakeProcessResolver resolver;
    NvmlSourceOptions options;
    options.library_path = sim.library_path();
    options.event_wait_timeout = std::chrono::milliseconds(20);
    auto source = NvmlSource::Create(options, clock, resolver);
    base::Status status = source->Start();
    ASSERT_TRUE(status.ok()) << status.ToString();
    model::CollectingSink sink;
    for (int s = 1; s <= 3; ++s) {
      sim.SetTime(s);
      clock.Advance(std::chrono::seconds(1));
      sink.Clear();
      source->Poll(clock.Now(), sink);
    }
    EXPECT_TRUE(sink.Has("gpu.info"));
    for (const auto& [reason, count] : source->error_counts()) {
      EXPECT_TRUE(reason == "not_supported" || reason == "no_permission" ||
                  reason == "gpu_is_lost" || reason == "event_wait" ||
                  reason == "process_stride_mismatch")
          << reason << " x" << count;
    }
    source->Stop();
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace warpscope::agent
