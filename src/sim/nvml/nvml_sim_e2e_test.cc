// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of the built libnvidia-ml.so.1 simulator: the library is loaded with dlopen,
// exactly as the agent loads a real NVML, and called through the abi.h function pointer types.
// dlopen of the same path returns the same instance, so every test shuts NVML down completely;
// the next nvmlInit_v2 (init count 0 -> 1) reads the test's own scenario.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "nvml/abi.h"
#include "sim/nvml/hooks.h"

namespace warpscope::sim {
namespace {

namespace abi = ::warpscope::nvml::abi;
using ::testing::HasSubstr;

constexpr unsigned long long kGiB = 1ULL << 30;
constexpr unsigned long long kMiB = 1ULL << 20;

// Function pointers of one loaded library; missing symbols stay null.
struct NvmlLib {
  explicit NvmlLib(const char* path) {
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      return;
    }
#define WARPSCOPE_SIM_RESOLVE(ret, name, params) \
  name = reinterpret_cast<abi::name##_fn>(dlsym(handle, #name));
    WARPSCOPE_NVML_FUNCTIONS(WARPSCOPE_SIM_RESOLVE)
    WARPSCOPE_NVML_LEGACY_FUNCTIONS(WARPSCOPE_SIM_RESOLVE)
#undef WARPSCOPE_SIM_RESOLVE
    set_time_ns = reinterpret_cast<SetTimeNsFn>(dlsym(handle, kSetTimeNsSymbol));
    last_error = reinterpret_cast<LastErrorFn>(dlsym(handle, kLastErrorSymbol));
  }
  bool Has(const char* name) const { return dlsym(handle, name) != nullptr; }

  void* handle = nullptr;
#define WARPSCOPE_SIM_MEMBER(ret, name, params) abi::name##_fn name = nullptr;
  WARPSCOPE_NVML_FUNCTIONS(WARPSCOPE_SIM_MEMBER)
  WARPSCOPE_NVML_LEGACY_FUNCTIONS(WARPSCOPE_SIM_MEMBER)
#undef WARPSCOPE_SIM_MEMBER
  SetTimeNsFn set_time_ns = nullptr;
  LastErrorFn last_error = nullptr;
};

// Loaded once and never closed: the library's state must outlive every test.
NvmlLib& Main() {
  static NvmlLib* lib = new NvmlLib(WARPSCOPE_NVML_SIM_PATH);
  return *lib;
}
NvmlLib& Legacy() {
  static NvmlLib* lib = new NvmlLib(WARPSCOPE_NVML_SIM_LEGACY_PATH);
  return *lib;
}

std::string WriteScenario(const std::string& yaml) {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  std::string path = testing::TempDir() + "/nvml_sim_e2e_" + info->test_suite_name() + "_" +
                     info->name() + ".yaml";
  std::ofstream(path) << yaml;
  return path;
}

class NvmlSimE2eTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(Main().handle, nullptr) << dlerror();
    ASSERT_NE(Main().set_time_ns, nullptr);
  }
  void TearDown() override { ShutdownAll(Main()); }

  static void ShutdownAll(NvmlLib& lib) {
    if (lib.nvmlShutdown != nullptr) {
      while (lib.nvmlShutdown() == abi::kSuccess) {
      }
    }
  }

  // Writes the scenario, points the env var at it and initialises at simulated time 0.
  void Start(const std::string& yaml, NvmlLib& lib = Main()) {
    setenv(kScenarioEnvVar, WriteScenario(yaml).c_str(), 1);
    lib.set_time_ns(0);
    abi::nvmlReturn_t r = lib.nvmlInit_v2 != nullptr ? lib.nvmlInit_v2() : lib.nvmlInit();
    ASSERT_EQ(r, abi::kSuccess) << lib.last_error();
  }
  void At(double seconds, NvmlLib& lib = Main()) {
    lib.set_time_ns(static_cast<long long>(std::llround(seconds * 1e9)));
  }
  abi::nvmlDevice_t Device(unsigned index) {
    abi::nvmlDevice_t d = nullptr;
    EXPECT_EQ(Main().nvmlDeviceGetHandleByIndex_v2(index, &d), abi::kSuccess);
    return d;
  }
  NvmlLib& lib = Main();
};

constexpr char kTwoH100[] = R"yaml(
name: e2e
seed: 7
driver: {version: "550.127.08", nvml_version: "12.550.127.08", cuda_version: 12040}
devices:
  - repeat: 2
    name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-00000000000{i}"
    pci_bus_id: "00000000:{i}8:00.0"
    serial: "165092300{i}"
    memory_total: 80GiB
    memory_reserved: 512MiB
    power_limit: 700
    nvlink_links: 18
    signals:
      gpu_util: 97
      mem_copy_util: 60
      memory_used: 40GiB
      power: 600
      temperature: 62
      nvlink_tx: 1e9
      nvlink_rx: 2e9
      sm_active: 80
      tensor_active: {sine: {mean: 50, amplitude: 20, period: 10s}}
      dram_active: 40
    processes:
      - {pid: "4100{i}", name: python3, memory: 30GiB, sm_util: 90, mem_util: 40}
      - {pid: "4200{i}", name: idle-helper, memory: 1GiB, sm_util: 0, mem_util: 0}
      - {pid: "4300{i}", name: Xorg, type: graphics, memory: 100MiB}
    faults:
      - {kind: not_supported, what: memory_temperature}
)yaml";

TEST_F(NvmlSimE2eTest, InitWithoutScenarioFailsWithReason) {
  unsetenv(kScenarioEnvVar);
  EXPECT_EQ(lib.nvmlInit_v2(), abi::kErrorUnknown);
  EXPECT_THAT(lib.last_error(), HasSubstr(kScenarioEnvVar));
}

TEST_F(NvmlSimE2eTest, InitWithInvalidScenarioNamesFileAndKey) {
  std::string path = WriteScenario("name: bad\ndevices: [{signals: {gpu_utl: 3}}]\n");
  setenv(kScenarioEnvVar, path.c_str(), 1);
  EXPECT_EQ(lib.nvmlInit_v2(), abi::kErrorUnknown);
  EXPECT_THAT(lib.last_error(), HasSubstr(path));
  EXPECT_THAT(lib.last_error(), HasSubstr("devices[0].signals.gpu_utl"));
}

TEST_F(NvmlSimE2eTest, CallsBeforeInitAreUninitialized) {
  unsigned count = 0;
  EXPECT_EQ(lib.nvmlDeviceGetCount_v2(&count), abi::kErrorUninitialized);
  EXPECT_EQ(lib.nvmlShutdown(), abi::kErrorUninitialized);
}

TEST_F(NvmlSimE2eTest, ErrorStringCoversEveryCode) {
  EXPECT_STREQ(lib.nvmlErrorString(abi::kSuccess), "Success");
  EXPECT_STREQ(lib.nvmlErrorString(abi::kErrorGpuIsLost), "GPU is lost");
  for (int code : {-1, 0, 1, 13, 25, 30, 31, 998, 999, 123456}) {
    const char* s = lib.nvmlErrorString(code);
    ASSERT_NE(s, nullptr);
    EXPECT_GT(std::strlen(s), 0u);
  }
}

TEST_F(NvmlSimE2eTest, InitIsReferenceCountedAndReloadsTheScenario) {
  Start(kTwoH100);
  EXPECT_EQ(lib.nvmlInit_v2(), abi::kSuccess);
  EXPECT_EQ(lib.nvmlShutdown(), abi::kSuccess);
  unsigned count = 0;
  EXPECT_EQ(lib.nvmlDeviceGetCount_v2(&count), abi::kSuccess);  // still one init left
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(lib.nvmlShutdown(), abi::kSuccess);
  EXPECT_EQ(lib.nvmlDeviceGetCount_v2(&count), abi::kErrorUninitialized);
  Start("name: one\ndevices: [{}]\n");
  EXPECT_EQ(lib.nvmlDeviceGetCount_v2(&count), abi::kSuccess);
  EXPECT_EQ(count, 1u);
}

TEST_F(NvmlSimE2eTest, SystemAndIdentity) {
  Start(kTwoH100);
  char buf[96];
  ASSERT_EQ(lib.nvmlSystemGetDriverVersion(buf, sizeof(buf)), abi::kSuccess);
  EXPECT_STREQ(buf, "550.127.08");
  ASSERT_EQ(lib.nvmlSystemGetNVMLVersion(buf, sizeof(buf)), abi::kSuccess);
  EXPECT_STREQ(buf, "12.550.127.08");
  EXPECT_EQ(lib.nvmlSystemGetDriverVersion(buf, 4), abi::kErrorInsufficientSize);
  int cuda = 0;
  ASSERT_EQ(lib.nvmlSystemGetCudaDriverVersion_v2(&cuda), abi::kSuccess);
  EXPECT_EQ(cuda, 12040);

  abi::nvmlDevice_t d1 = Device(1);
  unsigned index = 9;
  ASSERT_EQ(lib.nvmlDeviceGetIndex(d1, &index), abi::kSuccess);
  EXPECT_EQ(index, 1u);
  ASSERT_EQ(lib.nvmlDeviceGetName(d1, buf, sizeof(buf)), abi::kSuccess);
  EXPECT_STREQ(buf, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(lib.nvmlDeviceGetUUID(d1, buf, sizeof(buf)), abi::kSuccess);
  EXPECT_STREQ(buf, "GPU-00000000-0000-4000-8000-000000000001");
  ASSERT_EQ(lib.nvmlDeviceGetSerial(d1, buf, abi::kDeviceSerialBufferSize), abi::kSuccess);
  EXPECT_STREQ(buf, "1650923001");
  abi::nvmlPciInfo_t pci{};
  ASSERT_EQ(lib.nvmlDeviceGetPciInfo_v3(d1, &pci), abi::kSuccess);
  EXPECT_STREQ(pci.busId, "00000000:18:00.0");
  EXPECT_STREQ(pci.busIdLegacy, "0000:18:00.0");
  EXPECT_EQ(pci.bus, 0x18u);
  EXPECT_EQ(pci.pciDeviceId, 0x233010DEu);
  unsigned minor = 0, arch = 0;
  ASSERT_EQ(lib.nvmlDeviceGetMinorNumber(d1, &minor), abi::kSuccess);
  EXPECT_EQ(minor, 1u);
  ASSERT_EQ(lib.nvmlDeviceGetArchitecture(d1, &arch), abi::kSuccess);
  EXPECT_EQ(arch, abi::kArchHopper);
  int major = 0, cc_minor = 0;
  ASSERT_EQ(lib.nvmlDeviceGetCudaComputeCapability(d1, &major, &cc_minor), abi::kSuccess);
  EXPECT_EQ(major, 9);
  EXPECT_EQ(cc_minor, 0);
  abi::nvmlDevice_t bad = nullptr;
  EXPECT_EQ(lib.nvmlDeviceGetHandleByIndex_v2(2, &bad), abi::kErrorInvalidArgument);
  EXPECT_EQ(lib.nvmlDeviceGetName(reinterpret_cast<abi::nvmlDevice_t>(buf), buf, sizeof(buf)),
            abi::kErrorInvalidArgument);
}

TEST_F(NvmlSimE2eTest, MemoryV2ChecksVersionAndSeparatesReserved) {
  Start(kTwoH100);
  abi::nvmlDevice_t d = Device(0);
  abi::nvmlMemory_v2_t mem{};
  mem.version = 2;  // the bare number, as the header comment wrongly suggests
  EXPECT_EQ(lib.nvmlDeviceGetMemoryInfo_v2(d, &mem), abi::kErrorArgumentVersionMismatch);
  mem.version = abi::kMemoryV2Version;
  ASSERT_EQ(lib.nvmlDeviceGetMemoryInfo_v2(d, &mem), abi::kSuccess);
  EXPECT_EQ(mem.total, 80 * kGiB);
  EXPECT_EQ(mem.reserved, 512 * kMiB);
  EXPECT_EQ(mem.used, 40 * kGiB);
  EXPECT_EQ(mem.free, mem.total - mem.reserved - mem.used);
  abi::nvmlMemory_t v1{};
  ASSERT_EQ(lib.nvmlDeviceGetMemoryInfo(d, &v1), abi::kSuccess);
  EXPECT_EQ(v1.used, 40 * kGiB + 512 * kMiB);  // v1 counts the reservation as used
  EXPECT_EQ(v1.free, v1.total - v1.used);
}

TEST_F(NvmlSimE2eTest, GaugesMatchTheScenario) {
  Start(kTwoH100);
  At(5);
  abi::nvmlDevice_t d = Device(0);
  abi::nvmlUtilization_t util{};
  ASSERT_EQ(lib.nvmlDeviceGetUtilizationRates(d, &util), abi::kSuccess);
  EXPECT_EQ(util.gpu, 97u);
  EXPECT_EQ(util.memory, 60u);
  unsigned mw = 0, temp = 0, limit = 0;
  ASSERT_EQ(lib.nvmlDeviceGetPowerUsage(d, &mw), abi::kSuccess);
  EXPECT_EQ(mw, 600000u);
  ASSERT_EQ(lib.nvmlDeviceGetPowerManagementLimit(d, &limit), abi::kSuccess);
  EXPECT_EQ(limit, 700000u);
  ASSERT_EQ(lib.nvmlDeviceGetEnforcedPowerLimit(d, &limit), abi::kSuccess);
  EXPECT_EQ(limit, 700000u);
  ASSERT_EQ(lib.nvmlDeviceGetTemperature(d, abi::kTemperatureGpu, &temp), abi::kSuccess);
  EXPECT_EQ(temp, 62u);
  EXPECT_EQ(lib.nvmlDeviceGetTemperature(d, 7, &temp), abi::kErrorInvalidArgument);
  unsigned mhz = 0;
  ASSERT_EQ(lib.nvmlDeviceGetClockInfo(d, abi::kClockSm, &mhz), abi::kSuccess);
  EXPECT_EQ(mhz, 1980u);
  ASSERT_EQ(lib.nvmlDeviceGetMaxClockInfo(d, abi::kClockMem, &mhz), abi::kSuccess);
  EXPECT_EQ(mhz, 2619u);
  unsigned long long reasons = 99;
  ASSERT_EQ(lib.nvmlDeviceGetCurrentClocksEventReasons(d, &reasons), abi::kSuccess);
  EXPECT_EQ(reasons, 0u);
  unsigned long long energy = 0;
  ASSERT_EQ(lib.nvmlDeviceGetTotalEnergyConsumption(d, &energy), abi::kSuccess);
  EXPECT_EQ(energy, 3000000u);  // 600 W for 5 s
}

TEST_F(NvmlSimE2eTest, TemperatureThresholdsFromTheScenario) {
  Start(R"yaml(
name: thresholds
devices:
  - {architecture: hopper}
  - {architecture: ada, slowdown_temperature: 90}
  - faults: [{kind: not_supported, what: nvmlDeviceGetTemperatureThreshold, at: 10s}]
)yaml");
  unsigned c = 0;
  abi::nvmlDevice_t h100 = Device(0);
  const std::pair<unsigned, unsigned> hopper_defaults[] = {
      {abi::kTemperatureThresholdShutdown, 92},
      {abi::kTemperatureThresholdSlowdown, 89},
      {abi::kTemperatureThresholdMemMax, 95},
      {abi::kTemperatureThresholdGpuMax, 87},
  };
  for (const auto& [threshold, celsius] : hopper_defaults) {
    SCOPED_TRACE(threshold);
    ASSERT_EQ(lib.nvmlDeviceGetTemperatureThreshold(h100, threshold, &c), abi::kSuccess);
    EXPECT_EQ(c, celsius);
  }
  // The acoustic and GPS thresholds (4..7) are not simulated; nothing comes after them.
  EXPECT_EQ(lib.nvmlDeviceGetTemperatureThreshold(h100, 4, &c), abi::kErrorNotSupported);
  EXPECT_EQ(lib.nvmlDeviceGetTemperatureThreshold(h100, 8, &c), abi::kErrorInvalidArgument);
  EXPECT_EQ(lib.nvmlDeviceGetTemperatureThreshold(h100, 1, nullptr), abi::kErrorInvalidArgument);

  abi::nvmlDevice_t l40s = Device(1);
  ASSERT_EQ(lib.nvmlDeviceGetTemperatureThreshold(l40s, abi::kTemperatureThresholdSlowdown, &c),
            abi::kSuccess);
  EXPECT_EQ(c, 90u);
  EXPECT_EQ(lib.nvmlDeviceGetTemperatureThreshold(l40s, abi::kTemperatureThresholdMemMax, &c),
            abi::kErrorNotSupported);  // GDDR: no memory threshold

  abi::nvmlDevice_t later = Device(2);
  EXPECT_EQ(lib.nvmlDeviceGetTemperatureThreshold(later, abi::kTemperatureThresholdSlowdown, &c),
            abi::kSuccess);
  At(10);
  EXPECT_EQ(lib.nvmlDeviceGetTemperatureThreshold(later, abi::kTemperatureThresholdSlowdown, &c),
            abi::kErrorNotSupported);
}

TEST_F(NvmlSimE2eTest, RunningProcessesTwoCallProtocol) {
  Start(kTwoH100);
  abi::nvmlDevice_t d = Device(1);
  unsigned count = 0;
  EXPECT_EQ(lib.nvmlDeviceGetComputeRunningProcesses_v3(d, &count, nullptr),
            abi::kErrorInsufficientSize);
  ASSERT_EQ(count, 2u);
  std::vector<abi::nvmlProcessInfo_t> infos(count * 2 + 5);
  count = static_cast<unsigned>(infos.size());
  ASSERT_EQ(lib.nvmlDeviceGetComputeRunningProcesses_v3(d, &count, infos.data()), abi::kSuccess);
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(infos[0].pid, 41001u);
  EXPECT_EQ(infos[0].usedGpuMemory, 30 * kGiB);
  EXPECT_EQ(infos[0].gpuInstanceId, abi::kInvalidInstanceId);
  EXPECT_EQ(infos[0].computeInstanceId, abi::kInvalidInstanceId);
  EXPECT_EQ(infos[1].pid, 42001u);
  unsigned small = 1;
  EXPECT_EQ(lib.nvmlDeviceGetComputeRunningProcesses_v3(d, &small, infos.data()),
            abi::kErrorInsufficientSize);
  EXPECT_EQ(small, 2u);
  count = 4;
  ASSERT_EQ(lib.nvmlDeviceGetGraphicsRunningProcesses_v3(d, &count, infos.data()), abi::kSuccess);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(infos[0].pid, 43001u);
  char name[64];
  ASSERT_EQ(lib.nvmlSystemGetProcessName(41001, name, sizeof(name)), abi::kSuccess);
  EXPECT_STREQ(name, "python3");
  EXPECT_EQ(lib.nvmlSystemGetProcessName(1, name, sizeof(name)), abi::kErrorNotFound);
}

TEST_F(NvmlSimE2eTest, NoProcessesAnswersSuccessToTheSizingCall) {
  Start("name: empty\ndevices: [{}]\n");
  unsigned count = 0;
  EXPECT_EQ(lib.nvmlDeviceGetComputeRunningProcesses_v3(Device(0), &count, nullptr), abi::kSuccess);
  EXPECT_EQ(count, 0u);
}

TEST_F(NvmlSimE2eTest, ThirtyTwoByteStrideFromV3Only) {
  Start(R"yaml(
name: r535
driver: {process_stride: 32}
devices:
  - processes:
      - {pid: 11, memory: 1GiB}
      - {pid: 22, memory: 2GiB}
)yaml");
  abi::nvmlDevice_t d = Device(0);
  std::vector<abi::nvmlProcessInfoWide_t> wide(4);
  std::memset(wide.data(), 0xAB, wide.size() * sizeof(wide[0]));
  unsigned count = 4;
  ASSERT_EQ(lib.nvmlDeviceGetComputeRunningProcesses_v3(
                d, &count, reinterpret_cast<abi::nvmlProcessInfo_t*>(wide.data())),
            abi::kSuccess);
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(wide[1].pid, 22u);
  EXPECT_EQ(wide[1].usedGpuMemory, 2 * kGiB);
  EXPECT_EQ(wide[1].usedGpuCcProtectedMemory, 0u);
  EXPECT_EQ(wide[2].pid, 0xABABABABu);  // nothing written past count entries
  std::vector<abi::nvmlProcessInfo_t> narrow(4);
  count = 4;
  ASSERT_EQ(lib.nvmlDeviceGetComputeRunningProcesses_v2(d, &count, narrow.data()), abi::kSuccess);
  EXPECT_EQ(narrow[1].pid, 22u);
  std::vector<abi::nvmlProcessInfo_v1_t> v1(4);
  count = 4;
  ASSERT_EQ(lib.nvmlDeviceGetComputeRunningProcesses(d, &count, v1.data()), abi::kSuccess);
  EXPECT_EQ(v1[1].pid, 22u);
  EXPECT_EQ(v1[1].usedGpuMemory, 2 * kGiB);
}

TEST_F(NvmlSimE2eTest, ProcessUtilizationSamplesAndLastSeen) {
  Start(kTwoH100);
  At(3.5);
  abi::nvmlDevice_t d = Device(0);
  unsigned count = 0;
  ASSERT_EQ(lib.nvmlDeviceGetProcessUtilization(d, nullptr, &count, 0),
            abi::kErrorInsufficientSize);
  ASSERT_EQ(count, 4u);  // seconds 0..3 of the busy process; the idle one never appears
  std::vector<abi::nvmlProcessUtilizationSample_t> samples(count + 8);
  count = static_cast<unsigned>(samples.size());
  ASSERT_EQ(lib.nvmlDeviceGetProcessUtilization(d, samples.data(), &count, 0), abi::kSuccess);
  ASSERT_EQ(count, 4u);
  unsigned long long last_seen = 0;
  for (unsigned i = 0; i < count; ++i) {
    EXPECT_EQ(samples[i].pid, 41000u);
    EXPECT_EQ(samples[i].smUtil, 90u);
    EXPECT_EQ(samples[i].memUtil, 40u);
    last_seen = std::max(last_seen, samples[i].timeStamp);
  }
  EXPECT_EQ(last_seen, 1'700'000'003'000'000ULL);  // fixed epoch base + 3 s, in µs
  count = static_cast<unsigned>(samples.size());
  EXPECT_EQ(lib.nvmlDeviceGetProcessUtilization(d, samples.data(), &count, last_seen),
            abi::kErrorNotFound);
  EXPECT_EQ(lib.nvmlDeviceGetProcessUtilization(d, nullptr, &count, last_seen),
            abi::kErrorNotFound);
  At(5.2);
  count = static_cast<unsigned>(samples.size());
  ASSERT_EQ(lib.nvmlDeviceGetProcessUtilization(d, samples.data(), &count, last_seen),
            abi::kSuccess);
  ASSERT_EQ(count, 2u);  // seconds 4 and 5 only
  EXPECT_GT(samples[0].timeStamp, last_seen);
}

TEST_F(NvmlSimE2eTest, FieldValuesCountersAdvance) {
  Start(kTwoH100);
  abi::nvmlDevice_t d = Device(0);
  auto read = [&](double t) {
    At(t);
    std::vector<abi::nvmlFieldValue_t> f(7);
    f[0].fieldId = abi::kFiTotalEnergyConsumption;
    f[1].fieldId = abi::kFiNvlinkThroughputDataTx;
    f[1].scopeId = abi::kScopeAllLinks;
    f[2].fieldId = abi::kFiNvlinkThroughputDataRx;
    f[2].scopeId = 0;
    f[3].fieldId = abi::kFiNvlinkThroughputDataTx;
    f[3].scopeId = 18;                  // past the last link
    f[4].fieldId = abi::kFiMemoryTemp;  // not_supported fault
    f[5].fieldId = 9999;
    f[6].fieldId = abi::kFiNvlinkLinkCount;
    EXPECT_EQ(lib.nvmlDeviceGetFieldValues(d, static_cast<int>(f.size()), f.data()), abi::kSuccess);
    return f;
  };
  auto a = read(10);
  auto b = read(20);
  EXPECT_EQ(a[0].nvmlReturn, abi::kSuccess);
  EXPECT_EQ(a[0].valueType, abi::kValueTypeUnsignedLongLong);
  EXPECT_EQ(a[0].value.ullVal, 6'000'000u);  // 600 W * 10 s in mJ
  EXPECT_EQ(b[0].value.ullVal, 12'000'000u);
  EXPECT_EQ(a[0].timestamp, 1'700'000'010'000'000LL);
  EXPECT_EQ(b[0].timestamp - a[0].timestamp, 10'000'000);
  // 18 links * 1e9 B/s * 10 s, in KiB.
  EXPECT_EQ(a[1].value.ullVal, static_cast<unsigned long long>(18 * 1e10 / 1024));
  EXPECT_GT(b[1].value.ullVal, a[1].value.ullVal);
  EXPECT_EQ(a[2].value.ullVal, static_cast<unsigned long long>(2e10 / 1024));
  EXPECT_EQ(a[3].nvmlReturn, abi::kErrorInvalidArgument);
  EXPECT_EQ(a[4].nvmlReturn, abi::kErrorNotSupported);
  EXPECT_EQ(a[5].nvmlReturn, abi::kErrorNotSupported);
  EXPECT_EQ(a[6].valueType, abi::kValueTypeUnsignedInt);
  EXPECT_EQ(a[6].value.uiVal, 18u);
}

TEST_F(NvmlSimE2eTest, NvLinkStatePerLink) {
  Start(R"yaml(
name: links
devices:
  - {nvlink_links: 4}
  - {nvlink_links: 0, architecture: ada, name: "NVIDIA L40S"}
)yaml");
  unsigned active = 0;
  ASSERT_EQ(lib.nvmlDeviceGetNvLinkState(Device(0), 3, &active), abi::kSuccess);
  EXPECT_EQ(active, abi::kFeatureEnabled);
  EXPECT_EQ(lib.nvmlDeviceGetNvLinkState(Device(0), 4, &active), abi::kErrorInvalidArgument);
  EXPECT_EQ(lib.nvmlDeviceGetNvLinkState(Device(1), 0, &active), abi::kErrorNotSupported);
}

TEST_F(NvmlSimE2eTest, XidDeliveredOnceThroughEventSetWait) {
  Start(R"yaml(
name: xid
devices:
  - repeat: 2
    faults:
      - {kind: xid, at: 30s, code: 79}
)yaml");
  abi::nvmlDevice_t d1 = Device(1);
  abi::nvmlEventSet_t set = nullptr;
  ASSERT_EQ(lib.nvmlEventSetCreate(&set), abi::kSuccess);
  unsigned long long supported = 0;
  ASSERT_EQ(lib.nvmlDeviceGetSupportedEventTypes(d1, &supported), abi::kSuccess);
  EXPECT_NE(supported & abi::kEventTypeXidCriticalError, 0u);
  ASSERT_EQ(lib.nvmlDeviceRegisterEvents(d1, abi::kEventTypeXidCriticalError, set), abi::kSuccess);
  abi::nvmlEventData_t data{};
  At(29);
  EXPECT_EQ(lib.nvmlEventSetWait_v2(set, &data, 0), abi::kErrorTimeout);
  At(31);
  ASSERT_EQ(lib.nvmlEventSetWait_v2(set, &data, 0), abi::kSuccess);
  EXPECT_EQ(data.device, d1);
  EXPECT_EQ(data.eventType, abi::kEventTypeXidCriticalError);
  EXPECT_EQ(data.eventData, 79u);
  EXPECT_EQ(data.gpuInstanceId, abi::kInvalidInstanceId);
  EXPECT_EQ(data.computeInstanceId, abi::kInvalidInstanceId);
  // Device 0 was not registered, and device 1's event was delivered already.
  EXPECT_EQ(lib.nvmlEventSetWait_v2(set, &data, 0), abi::kErrorTimeout);
  EXPECT_EQ(lib.nvmlEventSetFree(set), abi::kSuccess);
}

TEST_F(NvmlSimE2eTest, BlockedWaitWakesWhenTimeReachesTheEvent) {
  Start("name: xid\ndevices: [{faults: [{kind: xid, at: 30s, code: 48}]}]\n");
  abi::nvmlEventSet_t set = nullptr;
  ASSERT_EQ(lib.nvmlEventSetCreate(&set), abi::kSuccess);
  ASSERT_EQ(lib.nvmlDeviceRegisterEvents(Device(0), abi::kEventTypeXidCriticalError, set),
            abi::kSuccess);
  abi::nvmlEventData_t data{};
  abi::nvmlReturn_t result = -1;
  std::thread waiter([&] { result = lib.nvmlEventSetWait_v2(set, &data, 60'000); });
  At(30);  // wakes the waiter whether or not it is already blocked
  waiter.join();
  EXPECT_EQ(result, abi::kSuccess);
  EXPECT_EQ(data.eventData, 48u);
  lib.nvmlEventSetFree(set);
}

TEST_F(NvmlSimE2eTest, GpmMetricsAverageTheSignalsBetweenSamples) {
  Start(kTwoH100);
  abi::nvmlDevice_t d = Device(0);
  abi::nvmlGpmSupport_t support{};
  support.version = 2;
  EXPECT_EQ(lib.nvmlGpmQueryDeviceSupport(d, &support), abi::kErrorArgumentVersionMismatch);
  support.version = abi::kGpmSupportVersion;
  ASSERT_EQ(lib.nvmlGpmQueryDeviceSupport(d, &support), abi::kSuccess);
  EXPECT_EQ(support.isSupportedDevice, 1u);
  abi::nvmlGpmSample_t s1 = nullptr, s2 = nullptr;
  ASSERT_EQ(lib.nvmlGpmSampleAlloc(&s1), abi::kSuccess);
  ASSERT_EQ(lib.nvmlGpmSampleAlloc(&s2), abi::kSuccess);
  At(10);
  ASSERT_EQ(lib.nvmlGpmSampleGet(d, s1), abi::kSuccess);
  At(30);
  ASSERT_EQ(lib.nvmlGpmSampleGet(d, s2), abi::kSuccess);
  auto m = std::make_unique<abi::nvmlGpmMetricsGet_t>();
  m->version = abi::kGpmMetricsGetVersion;
  m->sample1 = s1;
  m->sample2 = s2;
  const unsigned ids[] = {abi::kGpmSmUtil,       abi::kGpmAnyTensorUtil,       abi::kGpmDramBwUtil,
                          abi::kGpmGraphicsUtil, abi::kGpmNvlinkTotalTxPerSec, 999};
  m->numMetrics = std::size(ids);
  for (unsigned i = 0; i < m->numMetrics; ++i) {
    m->metrics[i].metricId = ids[i];
  }
  ASSERT_EQ(lib.nvmlGpmMetricsGet(m.get()), abi::kSuccess);
  EXPECT_EQ(m->metrics[0].nvmlReturn, abi::kSuccess);
  EXPECT_NEAR(m->metrics[0].value, 80, 1e-9);
  EXPECT_NEAR(m->metrics[1].value, 50, 0.01);  // sine over two whole periods
  EXPECT_NEAR(m->metrics[2].value, 40, 1e-9);
  EXPECT_NEAR(m->metrics[3].value, 97, 1e-9);  // gr_engine_active defaults to gpu_util
  EXPECT_NEAR(m->metrics[4].value, 18 * 1e9 / (1 << 20), 1e-3);
  EXPECT_STREQ(m->metrics[0].metricInfo.unit, "%");
  EXPECT_EQ(m->metrics[5].nvmlReturn, abi::kErrorNotSupported);

  m->sample1 = s2;  // wrong order
  m->sample2 = s1;
  EXPECT_NE(lib.nvmlGpmMetricsGet(m.get()), abi::kSuccess);
  At(30.05);
  ASSERT_EQ(lib.nvmlGpmSampleGet(d, s1), abi::kSuccess);  // 50 ms after s2
  m->sample1 = s2;
  m->sample2 = s1;
  EXPECT_NE(lib.nvmlGpmMetricsGet(m.get()), abi::kSuccess);
  m->version = 2;
  EXPECT_EQ(lib.nvmlGpmMetricsGet(m.get()), abi::kErrorArgumentVersionMismatch);
  EXPECT_EQ(lib.nvmlGpmSampleFree(s1), abi::kSuccess);
  EXPECT_EQ(lib.nvmlGpmSampleFree(s2), abi::kSuccess);
}

TEST_F(NvmlSimE2eTest, GpmIsNotSupportedBeforeHopper) {
  Start("name: ampere\ndevices: [{architecture: ampere, name: NVIDIA A100-SXM4-80GB}]\n");
  abi::nvmlDevice_t d = Device(0);
  abi::nvmlGpmSupport_t support{abi::kGpmSupportVersion, 1};
  ASSERT_EQ(lib.nvmlGpmQueryDeviceSupport(d, &support), abi::kSuccess);
  EXPECT_EQ(support.isSupportedDevice, 0u);
  abi::nvmlGpmSample_t s = nullptr;
  ASSERT_EQ(lib.nvmlGpmSampleAlloc(&s), abi::kSuccess);
  EXPECT_EQ(lib.nvmlGpmSampleGet(d, s), abi::kErrorNotSupported);
  lib.nvmlGpmSampleFree(s);
}

constexpr char kMigNode[] = R"yaml(
name: mig
devices:
  - name: "NVIDIA H100 80GB HBM3"
    mig:
      enabled: true
      instances:
        - {index: 0, gpu_instance_id: 1, compute_instance_id: 0, profile: 3g.40gb,
           signals: {sm_active: 70, memory_used: 20GiB}}
        - {index: 2, gpu_instance_id: 9, compute_instance_id: 0, profile: 1g.10gb,
           signals: {sm_active: 10}}
    processes:
      - {pid: 500, name: trainer, gpu_instance_id: 1, memory: 18GiB}
      - {pid: 501, name: notebook, gpu_instance_id: 9, memory: 3GiB}
    faults:
      - {kind: xid, at: 10s, code: 43, gpu_instance_id: 9, compute_instance_id: 0}
)yaml";

TEST_F(NvmlSimE2eTest, MigEnumerationWithEmptySlots) {
  Start(kMigNode);
  abi::nvmlDevice_t d = Device(0);
  unsigned current = 0, pending = 0, max = 0;
  ASSERT_EQ(lib.nvmlDeviceGetMigMode(d, &current, &pending), abi::kSuccess);
  EXPECT_EQ(current, abi::kMigEnable);
  ASSERT_EQ(lib.nvmlDeviceGetMaxMigDeviceCount(d, &max), abi::kSuccess);
  EXPECT_EQ(max, 7u);
  abi::nvmlDevice_t mig0 = nullptr, mig = nullptr;
  ASSERT_EQ(lib.nvmlDeviceGetMigDeviceHandleByIndex(d, 0, &mig0), abi::kSuccess);
  EXPECT_EQ(lib.nvmlDeviceGetMigDeviceHandleByIndex(d, 1, &mig), abi::kErrorNotFound);
  ASSERT_EQ(lib.nvmlDeviceGetMigDeviceHandleByIndex(d, 2, &mig), abi::kSuccess);
  EXPECT_EQ(lib.nvmlDeviceGetMigDeviceHandleByIndex(d, 7, &mig), abi::kErrorInvalidArgument);
  char buf[96];
  ASSERT_EQ(lib.nvmlDeviceGetName(mig, buf, sizeof(buf)), abi::kSuccess);
  EXPECT_STREQ(buf, "NVIDIA H100 80GB HBM3 MIG 1g.10gb");
  ASSERT_EQ(lib.nvmlDeviceGetUUID(mig, buf, sizeof(buf)), abi::kSuccess);
  EXPECT_EQ(std::string(buf).rfind("MIG-", 0), 0u);
  unsigned gi = 0, ci = 5;
  ASSERT_EQ(lib.nvmlDeviceGetGpuInstanceId(mig, &gi), abi::kSuccess);
  ASSERT_EQ(lib.nvmlDeviceGetComputeInstanceId(mig, &ci), abi::kSuccess);
  EXPECT_EQ(gi, 9u);
  EXPECT_EQ(ci, 0u);
  EXPECT_EQ(lib.nvmlDeviceGetGpuInstanceId(d, &gi), abi::kErrorNotSupported);
  abi::nvmlDevice_t parent = nullptr;
  ASSERT_EQ(lib.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig, &parent), abi::kSuccess);
  EXPECT_EQ(parent, d);

  abi::nvmlMemory_v2_t mem{};
  mem.version = abi::kMemoryV2Version;
  ASSERT_EQ(lib.nvmlDeviceGetMemoryInfo_v2(mig0, &mem), abi::kSuccess);
  EXPECT_EQ(mem.total, 40 * kGiB);
  EXPECT_EQ(mem.used, 20 * kGiB);
  ASSERT_EQ(lib.nvmlDeviceGetMemoryInfo_v2(mig, &mem), abi::kSuccess);
  EXPECT_EQ(mem.used, 3 * kGiB);  // default: its processes

  std::vector<abi::nvmlProcessInfo_t> procs(8);
  unsigned count = 8;
  ASSERT_EQ(lib.nvmlDeviceGetComputeRunningProcesses_v3(mig, &count, procs.data()), abi::kSuccess);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(procs[0].pid, 501u);
  EXPECT_EQ(procs[0].gpuInstanceId, 9u);
  EXPECT_EQ(procs[0].computeInstanceId, 0u);
  count = 8;
  ASSERT_EQ(lib.nvmlDeviceGetComputeRunningProcesses_v3(d, &count, procs.data()), abi::kSuccess);
  EXPECT_EQ(count, 2u);

  // As on real MIG-enabled GPUs, device-wide utilisation is not available.
  abi::nvmlUtilization_t util{};
  EXPECT_EQ(lib.nvmlDeviceGetUtilizationRates(d, &util), abi::kErrorNotSupported);
  unsigned samples = 0;
  EXPECT_EQ(lib.nvmlDeviceGetProcessUtilization(d, nullptr, &samples, 0), abi::kErrorNotSupported);
}

TEST_F(NvmlSimE2eTest, MigGpmSamplesAndXidAttribution) {
  Start(kMigNode);
  abi::nvmlDevice_t d = Device(0);
  abi::nvmlGpmSample_t s1 = nullptr, s2 = nullptr;
  ASSERT_EQ(lib.nvmlGpmSampleAlloc(&s1), abi::kSuccess);
  ASSERT_EQ(lib.nvmlGpmSampleAlloc(&s2), abi::kSuccess);
  At(1);
  ASSERT_EQ(lib.nvmlGpmMigSampleGet(d, 1, s1), abi::kSuccess);
  EXPECT_EQ(lib.nvmlGpmMigSampleGet(d, 5, s2), abi::kErrorNotFound);
  At(2);
  ASSERT_EQ(lib.nvmlGpmMigSampleGet(d, 1, s2), abi::kSuccess);
  auto m = std::make_unique<abi::nvmlGpmMetricsGet_t>();
  m->version = abi::kGpmMetricsGetVersion;
  m->numMetrics = 1;
  m->sample1 = s1;
  m->sample2 = s2;
  m->metrics[0].metricId = abi::kGpmSmUtil;
  ASSERT_EQ(lib.nvmlGpmMetricsGet(m.get()), abi::kSuccess);
  EXPECT_NEAR(m->metrics[0].value, 70, 1e-9);
  lib.nvmlGpmSampleFree(s1);
  lib.nvmlGpmSampleFree(s2);

  abi::nvmlEventSet_t set = nullptr;
  ASSERT_EQ(lib.nvmlEventSetCreate(&set), abi::kSuccess);
  ASSERT_EQ(lib.nvmlDeviceRegisterEvents(d, abi::kEventTypeXidCriticalError, set), abi::kSuccess);
  At(10);
  abi::nvmlEventData_t data{};
  ASSERT_EQ(lib.nvmlEventSetWait_v2(set, &data, 0), abi::kSuccess);
  EXPECT_EQ(data.eventData, 43u);
  EXPECT_EQ(data.gpuInstanceId, 9u);
  EXPECT_EQ(data.computeInstanceId, 0u);
  lib.nvmlEventSetFree(set);
}

TEST_F(NvmlSimE2eTest, GpuLostWindowFailsEveryDeviceCall) {
  Start(R"yaml(
name: lost
devices:
  - {faults: [{kind: gpu_lost, at: 60s, until: 90s}]}
  - {}
)yaml");
  abi::nvmlDevice_t d = Device(0);
  unsigned mw = 0;
  char buf[96];
  At(59);
  EXPECT_EQ(lib.nvmlDeviceGetPowerUsage(d, &mw), abi::kSuccess);
  At(60);
  EXPECT_EQ(lib.nvmlDeviceGetPowerUsage(d, &mw), abi::kErrorGpuIsLost);
  EXPECT_EQ(lib.nvmlDeviceGetName(d, buf, sizeof(buf)), abi::kErrorGpuIsLost);
  abi::nvmlDevice_t again = nullptr;
  EXPECT_EQ(lib.nvmlDeviceGetHandleByIndex_v2(0, &again), abi::kErrorGpuIsLost);
  EXPECT_EQ(lib.nvmlDeviceGetPowerUsage(Device(1), &mw), abi::kSuccess);  // the other GPU
  abi::nvmlEventSet_t set = nullptr;
  ASSERT_EQ(lib.nvmlEventSetCreate(&set), abi::kSuccess);
  At(10);
  ASSERT_EQ(lib.nvmlDeviceRegisterEvents(d, abi::kEventTypeXidCriticalError, set), abi::kSuccess);
  At(70);
  abi::nvmlEventData_t data{};
  EXPECT_EQ(lib.nvmlEventSetWait_v2(set, &data, 0), abi::kErrorGpuIsLost);
  lib.nvmlEventSetFree(set);
  At(90);
  EXPECT_EQ(lib.nvmlDeviceGetPowerUsage(d, &mw), abi::kSuccess);
}

// Waits for an asynchronous NVML call, at most `limit`.
bool Answers(std::future<abi::nvmlReturn_t>& call, std::chrono::milliseconds limit) {
  return call.wait_for(limit) == std::future_status::ready;
}

TEST_F(NvmlSimE2eTest, SlowLatencyDelaysOnlyItsCallInItsWindow) {
  Start(R"yaml(
name: slow
devices:
  - faults: [{kind: slow, what: nvmlDeviceGetPowerUsage, latency: 300ms, at: 10s, until: 20s}]
)yaml");
  abi::nvmlDevice_t d = Device(0);
  unsigned value = 0;
  auto timed = [&](auto&& call) {
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(call(), abi::kSuccess);
    return std::chrono::steady_clock::now() - start;
  };
  const auto latency = std::chrono::milliseconds(300);
  EXPECT_LT(timed([&] { return lib.nvmlDeviceGetPowerUsage(d, &value); }), latency);
  At(10);
  EXPECT_GE(timed([&] { return lib.nvmlDeviceGetPowerUsage(d, &value); }), latency);
  EXPECT_LT(timed([&] { return lib.nvmlDeviceGetTemperature(d, 0, &value); }), latency);
  At(20);
  EXPECT_LT(timed([&] { return lib.nvmlDeviceGetPowerUsage(d, &value); }), latency);
}

TEST_F(NvmlSimE2eTest, SlowHangBlocksOneDeviceUntilTheWindowEnds) {
  Start(R"yaml(
name: hang
devices:
  - {}
  - {faults: [{kind: slow, hang: true, at: 10s, until: 20s}], signals: {power: 321}}
)yaml");
  abi::nvmlDevice_t d0 = Device(0);
  abi::nvmlDevice_t d1 = Device(1);
  At(10);
  unsigned mw = 0;
  auto power = std::async(std::launch::async, [&] { return lib.nvmlDeviceGetPowerUsage(d1, &mw); });
  abi::nvmlDevice_t again = nullptr;
  auto open =
      std::async(std::launch::async, [&] { return lib.nvmlDeviceGetHandleByIndex_v2(1, &again); });
  EXPECT_FALSE(Answers(power, std::chrono::milliseconds(200)));
  EXPECT_FALSE(Answers(open, std::chrono::milliseconds(0)));
  // The other GPU answers meanwhile: the hung calls do not hold the simulator's lock.
  unsigned mw0 = 0;
  auto other =
      std::async(std::launch::async, [&] { return lib.nvmlDeviceGetPowerUsage(d0, &mw0); });
  ASSERT_TRUE(Answers(other, std::chrono::seconds(10)));
  EXPECT_EQ(other.get(), abi::kSuccess);
  At(15);
  EXPECT_FALSE(Answers(power, std::chrono::milliseconds(50)));
  At(20);  // the window ends: the calls answer normally
  ASSERT_TRUE(Answers(power, std::chrono::seconds(10)));
  EXPECT_EQ(power.get(), abi::kSuccess);
  EXPECT_EQ(mw, 321000u);
  ASSERT_TRUE(Answers(open, std::chrono::seconds(10)));
  EXPECT_EQ(open.get(), abi::kSuccess);
  EXPECT_EQ(again, d1);
}

TEST_F(NvmlSimE2eTest, SlowHangEndsWhenTheSimulatorShutsDown) {
  Start("name: hang\ndevices: [{faults: [{kind: slow, hang: true, at: 10s}]}]\n");
  abi::nvmlDevice_t d = Device(0);
  At(10);  // from now on the device hangs for good
  unsigned mw = 0;
  auto power = std::async(std::launch::async, [&] { return lib.nvmlDeviceGetPowerUsage(d, &mw); });
  EXPECT_FALSE(Answers(power, std::chrono::milliseconds(100)));
  ASSERT_EQ(lib.nvmlShutdown(), abi::kSuccess);
  ASSERT_TRUE(Answers(power, std::chrono::seconds(10)));
  EXPECT_EQ(power.get(), abi::kErrorUninitialized);
}

TEST_F(NvmlSimE2eTest, PermissionAndNotSupportedFaults) {
  Start(R"yaml(
name: faults
devices:
  - {faults: [{kind: no_permission}]}
  - {faults: [{kind: not_supported, what: nvmlDeviceGetSerial},
              {kind: not_supported, what: power, at: 1m}]}
)yaml");
  unsigned count = 0;
  ASSERT_EQ(lib.nvmlDeviceGetCount_v2(&count), abi::kSuccess);
  EXPECT_EQ(count, 2u);  // the hidden GPU is still counted
  abi::nvmlDevice_t d = nullptr;
  EXPECT_EQ(lib.nvmlDeviceGetHandleByIndex_v2(0, &d), abi::kErrorNoPermission);
  abi::nvmlDevice_t d1 = Device(1);
  char serial[32];
  EXPECT_EQ(lib.nvmlDeviceGetSerial(d1, serial, sizeof(serial)), abi::kErrorNotSupported);
  unsigned mw = 0;
  EXPECT_EQ(lib.nvmlDeviceGetPowerUsage(d1, &mw), abi::kSuccess);
  At(60);
  EXPECT_EQ(lib.nvmlDeviceGetPowerUsage(d1, &mw), abi::kErrorNotSupported);
}

TEST_F(NvmlSimE2eTest, MissingSymbolsReturnFunctionNotFound) {
  Start(R"yaml(
name: old
driver:
  missing_symbols: [nvmlDeviceGetMemoryInfo_v2, nvmlGpmQueryDeviceSupport]
devices: [{}]
)yaml");
  abi::nvmlDevice_t d = Device(0);
  abi::nvmlMemory_v2_t mem{};
  mem.version = abi::kMemoryV2Version;
  EXPECT_EQ(lib.nvmlDeviceGetMemoryInfo_v2(d, &mem), abi::kErrorFunctionNotFound);
  abi::nvmlGpmSupport_t support{abi::kGpmSupportVersion, 0};
  EXPECT_EQ(lib.nvmlGpmQueryDeviceSupport(d, &support), abi::kErrorFunctionNotFound);
  abi::nvmlMemory_t v1{};
  EXPECT_EQ(lib.nvmlDeviceGetMemoryInfo(d, &v1), abi::kSuccess);
}

TEST_F(NvmlSimE2eTest, MissingInitV2LeavesTheLegacyInit) {
  setenv(
      kScenarioEnvVar,
      WriteScenario("name: x\ndriver: {missing_symbols: [nvmlInit_v2]}\ndevices: [{}]\n").c_str(),
      1);
  EXPECT_EQ(lib.nvmlInit_v2(), abi::kErrorFunctionNotFound);
  EXPECT_EQ(lib.nvmlInit(), abi::kSuccess);
}

TEST_F(NvmlSimE2eTest, ExportsEveryDeclaredFunctionAndNothingInternal) {
#define WARPSCOPE_SIM_EXPECT_SYMBOL(ret, name, params) EXPECT_TRUE(lib.Has(#name)) << #name;
  WARPSCOPE_NVML_FUNCTIONS(WARPSCOPE_SIM_EXPECT_SYMBOL)
  WARPSCOPE_NVML_LEGACY_FUNCTIONS(WARPSCOPE_SIM_EXPECT_SYMBOL)
#undef WARPSCOPE_SIM_EXPECT_SYMBOL
  EXPECT_TRUE(lib.Has(kSetTimeNsSymbol));
  EXPECT_TRUE(lib.Has(kLastErrorSymbol));
  // Simulator internals stay hidden (mangled names of two core functions).
  EXPECT_FALSE(lib.Has("_ZN9warpscope3sim7NvmlSim6GlobalEv"));
  EXPECT_FALSE(lib.Has("_ZN9warpscope3sim6Mix64Em"));
}

TEST_F(NvmlSimE2eTest, LegacyVariantLacksNewerSymbols) {
  NvmlLib& old = Legacy();
  ASSERT_NE(old.handle, nullptr) << dlerror();
  for (const char* name :
       {"nvmlInit", "nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetPciInfo_v2",
        "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetComputeRunningProcesses_v2",
        "nvmlDeviceGetGraphicsRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses",
        "nvmlDeviceGetCurrentClocksThrottleReasons", "nvmlSystemGetCudaDriverVersion",
        "nvmlDeviceGetFieldValues", "nvmlEventSetWait_v2", "nvmlDeviceGetMigMode",
        "nvmlDeviceGetTemperatureThreshold", kSetTimeNsSymbol}) {
    EXPECT_TRUE(old.Has(name)) << name;
  }
  for (const char* name :
       {"nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetComputeRunningProcesses_v3",
        "nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlGpmQueryDeviceSupport", "nvmlGpmSampleAlloc", "nvmlGpmSampleFree", "nvmlGpmSampleGet",
        "nvmlGpmMigSampleGet", "nvmlGpmMetricsGet"}) {
    EXPECT_FALSE(old.Has(name)) << name;
  }
}

TEST_F(NvmlSimE2eTest, LegacyVariantServesTheOldCalls) {
  NvmlLib& old = Legacy();
  ASSERT_NE(old.handle, nullptr) << dlerror();
  setenv(kScenarioEnvVar,
         WriteScenario(R"yaml(
name: r470
devices:
  - architecture: ampere
    name: "NVIDIA A100-SXM4-80GB"
    memory_reserved: 1GiB
    signals: {memory_used: 10GiB, gpu_util: 0}
    processes: [{pid: 7, memory: 10GiB}]
)yaml")
             .c_str(),
         1);
  old.set_time_ns(0);
  ASSERT_EQ(old.nvmlInit(), abi::kSuccess) << old.last_error();
  unsigned count = 0;
  ASSERT_EQ(old.nvmlDeviceGetCount(&count), abi::kSuccess);
  EXPECT_EQ(count, 1u);
  abi::nvmlDevice_t d = nullptr;
  ASSERT_EQ(old.nvmlDeviceGetHandleByIndex(0, &d), abi::kSuccess);
  abi::nvmlMemory_t mem{};
  ASSERT_EQ(old.nvmlDeviceGetMemoryInfo(d, &mem), abi::kSuccess);
  EXPECT_EQ(mem.used, 11 * kGiB);
  abi::nvmlPciInfo_t pci{};
  ASSERT_EQ(old.nvmlDeviceGetPciInfo_v2(d, &pci), abi::kSuccess);
  EXPECT_EQ(pci.pciDeviceId, 0x20B210DEu);
  std::vector<abi::nvmlProcessInfo_t> procs(2);
  count = 2;
  ASSERT_EQ(old.nvmlDeviceGetComputeRunningProcesses_v2(d, &count, procs.data()), abi::kSuccess);
  EXPECT_EQ(procs[0].pid, 7u);
  unsigned long long reasons = 0;
  ASSERT_EQ(old.nvmlDeviceGetCurrentClocksThrottleReasons(d, &reasons), abi::kSuccess);
  EXPECT_EQ(reasons, 1u);  // GPU idle
  ShutdownAll(old);
}

// What SimEnvironment (nvml/testing) does: open the library a second time and close it again.
// The shared instance must survive while another handle is open.
TEST_F(NvmlSimE2eTest, ReopenAndCloseKeepsTheInstance) {
  Start("name: reopen\ndevices: [{repeat: 3}]\n");
  void* second = dlopen(WARPSCOPE_NVML_SIM_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(second, nullptr);
  auto count_fn =
      reinterpret_cast<abi::nvmlDeviceGetCount_v2_fn>(dlsym(second, "nvmlDeviceGetCount_v2"));
  unsigned count = 0;
  ASSERT_EQ(count_fn(&count), abi::kSuccess);
  EXPECT_EQ(count, 3u);
  dlclose(second);
  EXPECT_EQ(lib.nvmlDeviceGetCount_v2(&count), abi::kSuccess);
}

}  // namespace
}  // namespace warpscope::sim
