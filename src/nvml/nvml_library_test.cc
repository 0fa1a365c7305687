// SPDX-License-Identifier: Apache-2.0
#include "nvml/nvml_library.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "nvml/testing/sim_environment.h"
#include "base/testing/peer.h"

namespace warpscope::nvml {
namespace {

using ::testing::HasSubstr;
using testing::kLegacySimPath;
using testing::kSimPath;
using testing::SimEnvironment;

constexpr double kGiB = 1024.0 * 1024 * 1024;

#define SKIP_WITHOUT_SIMULATOR(path)                                       \
  WARPSCOPE_REQUIRE_PEER(!(path).empty(), "the NVML simulator (src/sim/nvml)", \
                         "build it with the tests (it needs yaml-cpp: scripts/setup.sh --test)")

constexpr char kOneGpu[] = R"yaml(
name: one-gpu
driver: {version: "550.127.08", cuda_version: 12040}
devices:
  - name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    memory_total: 80GiB
    memory_reserved: 512MiB
    signals: {memory_used: 20GiB}
)yaml";

// N compute processes with pids 5000.. and 1 GiB * (k + 1) each.
std::string ProcessScenario(int processes, int stride, std::string_view missing = "[]") {
  std::string yaml = "name: procs\ndriver: {process_stride: " + std::to_string(stride) +
                     ", missing_symbols: " + std::string(missing) +
                     "}\ndevices:\n  - name: \"NVIDIA H100\"\n    architecture: hopper\n"
                     "    memory_total: 80GiB\n    processes:\n";
  for (int k = 0; k < processes; ++k) {
    yaml += "      - {pid: " + std::to_string(5000 + k) + ", name: p" + std::to_string(k) +
            ", type: compute, memory: " + std::to_string(k + 1) + "GiB}\n";
  }
  return yaml;
}

Device FirstDevice(const NvmlLibrary& lib) {
  Device d = nullptr;
  EXPECT_EQ(lib.DeviceGetHandleByIndex(0, &d), abi::kSuccess);
  return d;
}

TEST(NvmlLibraryTest, MissingPathIsAClearNotFound) {
  auto lib = NvmlLibrary::Load("/nonexistent/dir/libnvidia-ml.so.1");
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().code(), base::StatusCode::kNotFound);
  EXPECT_THAT(lib.error().message(), HasSubstr("NVML library not found at /nonexistent"));
  EXPECT_THAT(lib.error().message(), HasSubstr("--nvml-path"));
}

TEST(NvmlLibraryTest, DefaultSearchExplainsWhatToInstall) {
  if (void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL); h != nullptr) {
    dlclose(h);
    GTEST_SKIP() << "a real NVML is installed on this host";
  }
  auto lib = NvmlLibrary::Load("");
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().code(), base::StatusCode::kNotFound);
  EXPECT_THAT(lib.error().message(),
              HasSubstr("NVML library not found (libnvidia-ml.so.1): is the NVIDIA driver "
                        "installed? use --nvml-path"));
}

TEST(NvmlLibraryTest, RejectsALibraryThatIsNotNvml) {
  auto lib = NvmlLibrary::Load("libm.so.6");
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().code(), base::StatusCode::kUnsupported);
  EXPECT_THAT(lib.error().message(), HasSubstr("is not an NVML library"));
}

TEST(NvmlLibraryTest, InitFailureCarriesCodeAndSimulatorReason) {
  SKIP_WITHOUT_SIMULATOR(kSimPath);
  SimEnvironment sim("name: broken\ndevices: 12\n");
  ASSERT_TRUE(sim.ok()) << sim.error();
  auto lib = NvmlLibrary::Load(sim.library_path());
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().code(), base::StatusCode::kInternal);
  EXPECT_THAT(lib.error().message(), HasSubstr("nvmlInit_v2"));
  EXPECT_THAT(lib.error().message(), HasSubstr("NVML_ERROR_UNKNOWN, 999"));
  EXPECT_THAT(lib.error().message(), HasSubstr("devices"));  // the scenario's problem
}

TEST(NvmlLibraryTest, ResolvesEverySymbolOfACurrentDriver) {
  SKIP_WITHOUT_SIMULATOR(kSimPath);
  SimEnvironment sim(kOneGpu);
  ASSERT_TRUE(sim.ok()) << sim.error();
  auto lib = NvmlLibrary::Load(sim.library_path());
  ASSERT_TRUE(lib) << lib.error().ToString();
#define WARPSCOPE_EXPECT_RESOLVED(ret, name, params) \
  EXPECT_NE((*lib)->api().name, nullptr) << #name;
  WARPSCOPE_NVML_FUNCTIONS(WARPSCOPE_EXPECT_RESOLVED)
#undef WARPSCOPE_EXPECT_RESOLVED
  EXPECT_EQ((*lib)->path(), sim.library_path());
  unsigned count = 0;
  EXPECT_EQ((*lib)->DeviceGetCount(&count), abi::kSuccess);
  EXPECT_EQ(count, 1u);
}

TEST(NvmlLibraryTest, FallsBackToLegacyInitWhenTheNewOneIsMissing) {
  SKIP_WITHOUT_SIMULATOR(kSimPath);
  SimEnvironment sim(R"yaml(
name: old-init
driver: {missing_symbols: [nvmlInit_v2, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2]}
devices: [{name: "Tesla V100", architecture: volta}]
)yaml");
  ASSERT_TRUE(sim.ok()) << sim.error();
  auto lib = NvmlLibrary::Load(sim.library_path());
  ASSERT_TRUE(lib) << lib.error().ToString();
  unsigned count = 0;
  EXPECT_EQ((*lib)->DeviceGetCount(&count), abi::kSuccess);
  EXPECT_EQ(count, 1u);
  EXPECT_NE(FirstDevice(**lib), nullptr);
}

TEST(NvmlLibraryTest, MemoryInfoV2ReportsReservedSeparately) {
  SKIP_WITHOUT_SIMULATOR(kSimPath);
  SimEnvironment sim(kOneGpu);
  ASSERT_TRUE(sim.ok()) << sim.error();
  auto lib = NvmlLibrary::Load(sim.library_path());
  ASSERT_TRUE(lib) << lib.error().ToString();
  MemoryInfo mem;
  ASSERT_EQ((*lib)->DeviceGetMemoryInfo(FirstDevice(**lib), &mem), abi::kSuccess);
  EXPECT_TRUE(mem.has_reserved);
  EXPECT_EQ(mem.total, 80 * kGiB);
  EXPECT_EQ(mem.reserved, 512.0 * 1024 * 1024);
  EXPECT_EQ(mem.used, 20 * kGiB);
  EXPECT_EQ(mem.free, mem.total - mem.reserved - mem.used);
}

TEST(NvmlLibraryTest, LegacyDriverUsesV1MemoryAndThrottleReasons) {
  SKIP_WITHOUT_SIMULATOR(kLegacySimPath);
  SimEnvironment sim(kOneGpu, kLegacySimPath);
  ASSERT_TRUE(sim.ok()) << sim.error();
  auto lib = NvmlLibrary::Load(sim.library_path());
  ASSERT_TRUE(lib) << lib.error().ToString();
  EXPECT_EQ((*lib)->api().nvmlDeviceGetMemoryInfo_v2, nullptr);
  EXPECT_EQ((*lib)->api().nvmlGpmSampleGet, nullptr);
  Device dev = FirstDevice(**lib);
  MemoryInfo mem;
  ASSERT_EQ((*lib)->DeviceGetMemoryInfo(dev, &mem), abi::kSuccess);
  EXPECT_FALSE(mem.has_reserved);
  EXPECT_EQ(mem.used, 20 * kGiB + 512.0 * 1024 * 1024);  // v1 counts the reservation as used
  unsigned long long reasons = 1;
  EXPECT_EQ((*lib)->DeviceGetClocksEventReasons(dev, &reasons), abi::kSuccess);
  EXPECT_EQ((*lib)->ProcessStride(), 24u);  // _v2 is the newest process call
}

TEST(NvmlLibraryTest, ProcessListWith24ByteStride) {
  SKIP_WITHOUT_SIMULATOR(kSimPath);
  SimEnvironment sim(ProcessScenario(3, 24));
  ASSERT_TRUE(sim.ok()) << sim.error();
  auto lib = NvmlLibrary::Load(sim.library_path());
  ASSERT_TRUE(lib) << lib.error().ToString();
  ProcessListBuffer buffer;
  std::vector<ProcessEntry> out;
  ASSERT_EQ(
      (*lib)->DeviceGetRunningProcesses(FirstDevice(**lib), ProcessListKind::kCompute, buffer, out),
      abi::kSuccess);
  ASSERT_EQ(out.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(out[k].pid, 5000u + k);
    EXPECT_EQ(out[k].used_memory, (k + 1) * kGiB);
    EXPECT_TRUE(out[k].has_used_memory);
    EXPECT_EQ(out[k].gpu_instance_id, abi::kInvalidInstanceId);
  }
  EXPECT_EQ((*lib)->last_process_stride(), 24u);
  EXPECT_EQ((*lib)->stride_mismatches(), 0u);
  // The buffer always has room for 32-byte entries, whatever the stride.
  EXPECT_GE(buffer.size_bytes(), buffer.capacity() * 32u);
}

TEST(NvmlLibraryTest, ProcessListDetects32ByteStrideBySentinel) {
  SKIP_WITHOUT_SIMULATOR(kSimPath);
  SimEnvironment sim(ProcessScenario(4, 32));
  ASSERT_TRUE(sim.ok()) << sim.error();
  auto lib = NvmlLibrary::Load(sim.library_path());
  ASSERT_TRUE(lib) << lib.error().ToString();
  ProcessListBuffer buffer;
  std::vector<ProcessEntry> out;
  ASSERT_EQ(
      (*lib)->DeviceGetRunningProcesses(FirstDevice(**lib), ProcessListKind::kCompute, buffer, out),
      abi::kSuccess);
  ASSERT_EQ(out.size(), 4u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(out[k].pid, 5000u + k);
    EXPECT_EQ(out[k].used_memory, (k + 1) * kGiB);
  }
  EXPECT_EQ((*lib)->last_process_stride(), 32u);
  EXPECT_EQ((*lib)->stride_mismatches(), 1u);  // the symbols said 24
  // Learned: the next call expects 32 bytes and reports nothing new.
  ASSERT_EQ(
      (*lib)->DeviceGetRunningProcesses(FirstDevice(**lib), ProcessListKind::kCompute, buffer, out),
      abi::kSuccess);
  EXPECT_EQ(out.size(), 4u);
  EXPECT_EQ(out[3].used_memory, 4 * kGiB);
  EXPECT_EQ((*lib)->stride_mismatches(), 1u);
}

TEST(NvmlLibraryTest, ProcessListGrowsTheBufferForManyProcesses) {
  SKIP_WITHOUT_SIMULATOR(kSimPath);
  SimEnvironment sim(ProcessScenario(70, 24));
  ASSERT_TRUE(sim.ok()) << sim.error();
  auto lib = NvmlLibrary::Load(sim.library_path());
  ASSERT_TRUE(lib) << lib.error().ToString();
  ProcessListBuffer buffer;
  buffer.Reserve(4);
  std::vector<ProcessEntry> out;
  ASSERT_EQ(
      (*lib)->DeviceGetRunningProcesses(FirstDevice(**lib), ProcessListKind::kCompute, buffer, out),
      abi::kSuccess);
  ASSERT_EQ(out.size(), 70u);
  EXPECT_EQ(out[69].pid, 5069u);
  EXPECT_GE(buffer.capacity(), 70u);
}

TEST(NvmlLibraryTest, ProcessListWithNoProcessesIsEmpty) {
  SKIP_WITHOUT_SIMULATOR(kSimPath);
  SimEnvironment sim(ProcessScenario(2, 24));
  ASSERT_TRUE(sim.ok()) << sim.error();
  auto lib = NvmlLibrary::Load(sim.library_path());
  ASSERT_TRUE(lib) << lib.error().ToString();
  ProcessListBuffer buffer;
  std::vector<ProcessEntry> out = {ProcessEntry{}};
  ASSERT_EQ((*lib)->DeviceGetRunningProcesses(FirstDevice(**lib), ProcessListKind::kGraphics,
                                              buffer, out),
            abi::kSuccess);
  EXPECT_TRUE(out.empty());
}

TEST(NvmlLibraryTest, ProcessListFallsBackToV1WhenNewerCallsAreNotFound) {
  SKIP_WITHOUT_SIMULATOR(kSimPath);
  SimEnvironment sim(ProcessScenario(
      2, 24, "[nvmlDeviceGetComputeRunningProcesses_v3, nvmlDeviceGetComputeRunningProcesses_v2]"));
  ASSERT_TRUE(sim.ok()) << sim.error();
  auto lib = NvmlLibrary::Load(sim.library_path());
  ASSERT_TRUE(lib) << lib.error().ToString();
  ProcessListBuffer buffer;
  std::vector<ProcessEntry> out;
  ASSERT_EQ(
      (*lib)->DeviceGetRunningProcesses(FirstDevice(**lib), ProcessListKind::kCompute, buffer, out),
      abi::kSuccess);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].pid, 5001u);
  EXPECT_EQ(out[1].used_memory, 2 * kGiB);
  EXPECT_EQ(out[1].gpu_instance_id, abi::kInvalidInstanceId);  // v1 has no MIG ids
  EXPECT_EQ((*lib)->last_process_stride(), 16u);
}

TEST(NvmlLibraryTest, MissingSymbolBehavesAsFunctionNotFound) {
  SKIP_WITHOUT_SIMULATOR(kLegacySimPath);
  SimEnvironment sim(kOneGpu, kLegacySimPath);
  ASSERT_TRUE(sim.ok()) << sim.error();
  auto lib = NvmlLibrary::Load(sim.library_path());
  ASSERT_TRUE(lib) << lib.error().ToString();
  abi::nvmlGpmSupport_t support{};
  nvmlReturn_t rc =
      WARPSCOPE_NVML_CALL(**lib, nvmlGpmQueryDeviceSupport, FirstDevice(**lib), &support);
  EXPECT_EQ(rc, abi::kErrorFunctionNotFound);
  EXPECT_TRUE(IsUnsupported(rc));
  base::Status s = (*lib)->ToStatus(rc, "nvmlGpmQueryDeviceSupport");
  EXPECT_EQ(s.code(), base::StatusCode::kUnsupported);
}

base::Status CountGpus(const NvmlLibrary& lib, unsigned* count) {
  WARPSCOPE_NVML_RETURN_IF_ERROR(lib, lib.DeviceGetCount(count));
  WARPSCOPE_NVML_RETURN_IF_ERROR(
      lib, WARPSCOPE_NVML_CALL(lib, nvmlGpmQueryDeviceSupport, nullptr, nullptr));
  return base::OkStatus();
}

TEST(NvmlLibraryTest, ReturnIfErrorConvertsTheCodeWithTheLibraryText) {
  SKIP_WITHOUT_SIMULATOR(kLegacySimPath);
  SimEnvironment sim(kOneGpu, kLegacySimPath);
  ASSERT_TRUE(sim.ok()) << sim.error();
  auto lib = NvmlLibrary::Load(sim.library_path());
  ASSERT_TRUE(lib) << lib.error().ToString();
  unsigned count = 0;
  base::Status s = CountGpus(**lib, &count);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(s.code(), base::StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("nvmlGpmQueryDeviceSupport"));
  EXPECT_THAT(s.message(), HasSubstr("NVML_ERROR_FUNCTION_NOT_FOUND, 13"));
}

}  // namespace
}  // namespace warpscope::nvml
