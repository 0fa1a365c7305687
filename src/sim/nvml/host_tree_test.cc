// SPDX-License-Identifier: Apache-2.0
// The synthetic /proc tree of a scenario's host side: its files over simulated time, processes
// that start and stop, and NvmlSim keeping it in the directory named by WARPSCOPE_SIM_HOST_ROOT.
#include "sim/nvml/host_tree.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sim/nvml/nvml_sim.h"

namespace warpscope::sim {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr double kGiB = 1024.0 * 1024 * 1024;

constexpr char kScenario[] = R"yaml(
name: tree
host: {cpus: 8, memory_total: 64GiB, memory_base: 2GiB}
devices:
  - processes:
      - pid: 4100
        name: a-very-long-process-name
        host:
          exe: /opt/venv/bin/python3
          cmdline: [python3, train.py, --epochs=3]
          user: alice
          container_id: 4f3c0d6c8e5b2a1f9d7e6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f
          pod_uid: 1b4e28ba-2fa1-11d2-883f-0016d3cca427
          threads: 12
          rss: 4GiB
          cpu: 2
      - {pid: 4200, name: gpuonly}
  - processes:
      - pid: 4300
        name: late
        start: 60s
        stop: 120s
        host:
          container_id: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
          rss: 1GiB
          cpu: 4
)yaml";

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Fields of a /proc/<pid>/stat line after "(comm)", numbered as in proc(5) (state is 3).
std::vector<std::string> StatFields(const std::string& line) {
  std::vector<std::string> fields = {
      "", line.substr(0, line.find(' ')),
      line.substr(line.find('(') + 1, line.rfind(')') - line.find('(') - 1)};
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

class HostTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::TempDir() + "/host_tree_test_" + std::to_string(getpid()) + "_" +
            testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(root_);
    auto scenario = ParseScenario(kScenario, "tree.yaml");
    ASSERT_TRUE(scenario) << scenario.error().ToString();
    sim_ = std::make_unique<Simulation>(std::move(*scenario));
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string root_;
  std::unique_ptr<Simulation> sim_;
};

TEST_F(HostTreeTest, ProcessFilesCarryTheScenarioValues) {
  HostTree tree(root_);
  ASSERT_TRUE(tree.Update(*sim_, 30).ok());
  const std::string dir = root_ + "/proc/4100";
  std::vector<std::string> stat = StatFields(Read(dir + "/stat"));
  ASSERT_GE(stat.size(), 45u) << Read(dir + "/stat");
  EXPECT_EQ(stat[1], "4100");
  EXPECT_EQ(stat[2], "a-very-long-pro") << "comm is cut to 15 bytes";
  EXPECT_EQ(stat[3], "R");
  // 2 cores for 30 s = 6000 ticks: 95% user, 5% system.
  EXPECT_EQ(stat[14], "5700");
  EXPECT_EQ(stat[15], "300");
  EXPECT_EQ(stat[20], "12");
  EXPECT_EQ(stat[22], "60000") << "started at boot + 600 s";
  EXPECT_EQ(std::stoull(stat[24]) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)),
            static_cast<uint64_t>(4 * kGiB));
  EXPECT_EQ(Read(dir + "/comm"), "a-very-long-pro\n");
  EXPECT_EQ(Read(dir + "/cmdline"), std::string("python3\0train.py\0--epochs=3\0", 28));
  EXPECT_EQ(fs::read_symlink(dir + "/exe"), "/opt/venv/bin/python3");
  const std::string status = Read(dir + "/status");
  EXPECT_THAT(status, HasSubstr("\nUid:\t1000\t1000\t1000\t1000\n"));
  EXPECT_THAT(status, HasSubstr("\nThreads:\t12\n"));
  EXPECT_THAT(status, HasSubstr("\nVmRSS:\t4194304 kB\n"));
  EXPECT_EQ(Read(dir + "/cgroup"),
            "0::/kubepods.slice/kubepods-pod1b4e28ba_2fa1_11d2_883f_0016d3cca427.slice/"
            "cri-containerd-4f3c0d6c8e5b2a1f9d7e6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f."
            "scope\n");
  EXPECT_THAT(Read(root_ + "/etc/passwd"), HasSubstr("\nalice:x:1000:1000::/home/alice:"));
  EXPECT_FALSE(fs::exists(root_ + "/proc/4200")) << "no host side, no directory";
  EXPECT_FALSE(fs::exists(root_ + "/proc/4300")) << "not started yet";
}

TEST_F(HostTreeTest, HostTotalsFollowTheProcesses) {
  HostTree tree(root_);
  ASSERT_TRUE(tree.Update(*sim_, 30).ok());
  // 8 CPUs for 630 s since boot = 504000 ticks; 6000 of them busy.
  std::string stat = Read(root_ + "/proc/stat");
  EXPECT_THAT(stat, HasSubstr("cpu  6000 0 0 498000 0 0 0 0 0 0\n"));
  EXPECT_THAT(stat, HasSubstr("\ncpu0 750 0 0 62250 "));
  EXPECT_THAT(stat, HasSubstr("\ncpu7 750 0 0 62250 "));
  EXPECT_EQ(stat.find("cpu8"), std::string::npos);
  EXPECT_THAT(stat, HasSubstr("\nbtime 1699999400\n"));
  const std::string meminfo = Read(root_ + "/proc/meminfo");
  EXPECT_THAT(meminfo, HasSubstr("MemTotal:       67108864 kB\n"));
  EXPECT_THAT(meminfo, HasSubstr("MemAvailable:   60817408 kB\n"));  // 64 - 2 - 4 GiB
  EXPECT_EQ(Read(root_ + "/proc/loadavg"), "2.00 2.00 2.00 1/1 4100\n");
  EXPECT_EQ(Read(root_ + "/proc/diskstats"), "");
  EXPECT_THAT(Read(root_ + "/proc/net/dev"), HasSubstr("Receive"));

  // t = 90: the late process runs (4 cores since 60 s); t = 150: it is gone but its CPU time
  // stays in the host's, so the counters never go back.
  ASSERT_TRUE(tree.Update(*sim_, 90).ok());
  EXPECT_TRUE(fs::exists(root_ + "/proc/4300/stat"));
  EXPECT_EQ(StatFields(Read(root_ + "/proc/4300/stat"))[22], "66000");
  EXPECT_EQ(Read(root_ + "/proc/4300/cgroup"),
            "0::/system.slice/docker-"
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.scope\n");
  EXPECT_THAT(Read(root_ + "/proc/stat"), HasSubstr("cpu  30000 0 0 "));  // 2x90 + 4x30 s
  EXPECT_EQ(Read(root_ + "/proc/loadavg"), "6.00 6.00 6.00 2/2 4300\n");
  ASSERT_TRUE(tree.Update(*sim_, 150).ok());
  EXPECT_FALSE(fs::exists(root_ + "/proc/4300"));
  EXPECT_THAT(Read(root_ + "/proc/stat"), HasSubstr("cpu  54000 0 0 "));  // 2x150 + 4x60 s
  EXPECT_EQ(StatFields(Read(root_ + "/proc/4100/stat"))[14], "28500");
  for (const auto& entry : fs::directory_iterator(root_ + "/proc")) {
    EXPECT_EQ(entry.path().filename().string().find(".new-"), std::string::npos)
        << "no staging directory is left behind";
  }
}

TEST_F(HostTreeTest, UnwritableRootFailsNamingThePath) {
  HostTree tree("/proc/warpscope-no-such-dir");
  base::Status st = tree.Update(*sim_, 0);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("/proc/warpscope-no-such-dir"));
}

TEST_F(HostTreeTest, NvmlSimKeepsTheTreeAtTheSimulatedTime) {
  const std::string scenario = root_ + ".yaml";
  std::ofstream(scenario) << kScenario;
  setenv(kScenarioEnvVar, scenario.c_str(), 1);
  setenv(kHostRootEnvVar, root_.c_str(), 1);
  {
    NvmlSim nvml;
    nvml.SetTimeNs(0);
    ASSERT_EQ(nvml.Init("nvmlInit_v2"), abi::kSuccess) << nvml.LastError();
    EXPECT_EQ(StatFields(Read(root_ + "/proc/4100/stat"))[14], "0") << "written at init";
    nvml.SetTimeNs(10'000'000'000);
    EXPECT_EQ(StatFields(Read(root_ + "/proc/4100/stat"))[14], "1900");
    EXPECT_EQ(nvml.Shutdown(), abi::kSuccess);
  }
  setenv(kHostRootEnvVar, "/proc/warpscope-no-such-dir", 1);
  {
    NvmlSim nvml;
    EXPECT_EQ(nvml.Init("nvmlInit_v2"), abi::kErrorUnknown);
    EXPECT_THAT(nvml.LastError(), HasSubstr(kHostRootEnvVar));
    EXPECT_THAT(nvml.LastError(), HasSubstr("/proc/warpscope-no-such-dir"));
  }
  unsetenv(kHostRootEnvVar);
  fs::remove(scenario);
}

// On the real clock the writer thread moves the tree on by itself.
TEST_F(HostTreeTest, NvmlSimFollowsTheRealClock) {
  const std::string scenario = root_ + ".yaml";
  std::ofstream(scenario) << kScenario;
  setenv(kScenarioEnvVar, scenario.c_str(), 1);
  setenv(kHostRootEnvVar, root_.c_str(), 1);
  NvmlSim nvml;
  ASSERT_EQ(nvml.Init("nvmlInit_v2"), abi::kSuccess) << nvml.LastError();
  const std::string path = root_ + "/proc/4100/stat";
  const std::string first = Read(path);
  // Bounded: the thread rewrites every 50 ms and 2 cores add a tick every 5 ms.
  bool moved = false;
  for (int i = 0; i < 400 && !moved; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    moved = Read(path) != first;
  }
  EXPECT_TRUE(moved);
  EXPECT_EQ(nvml.Shutdown(), abi::kSuccess);
  unsetenv(kHostRootEnvVar);
  fs::remove(scenario);
}

// A host-only process is in the tree and in the host's totals, and NVML does not know it.
TEST(HostTreeOnlyTest, HostOnlyProcessesAreInTheTreeOnly) {
  const std::string root = testing::TempDir() + "/host_tree_only_" + std::to_string(getpid());
  fs::remove_all(root);
  auto scenario = ParseScenario(R"yaml(
name: daemons
host: {cpus: 4, processes: [{pid: 1200, name: sshd, cpu: 0.5, rss: 12MiB}]}
devices: [{processes: [{pid: 4000, name: trainer}]}]
)yaml",
                                "daemons.yaml");
  ASSERT_TRUE(scenario) << scenario.error().ToString();
  Simulation sim(std::move(*scenario));
  HostTree tree(root);
  ASSERT_TRUE(tree.Update(sim, 10).ok());
  EXPECT_EQ(StatFields(Read(root + "/proc/1200/stat"))[2], "sshd");
  EXPECT_EQ(fs::read_symlink(root + "/proc/1200/exe"), "/usr/bin/sshd");
  EXPECT_THAT(Read(root + "/proc/stat"), HasSubstr("cpu  500 0 0 "));  // 0.5 core for 10 s
  EXPECT_FALSE(fs::exists(root + "/proc/4000"));
  const std::string path = root + ".yaml";
  std::ofstream(path) << "name: daemons\nhost: {processes: [{pid: 1200, name: sshd}]}\n"
                         "devices: [{}]\n";
  setenv(kScenarioEnvVar, path.c_str(), 1);
  NvmlSim nvml;
  ASSERT_EQ(nvml.Init("nvmlInit_v2"), abi::kSuccess);
  char name[64] = {};
  EXPECT_EQ(nvml.SystemGetProcessName(1200, name, sizeof(name)), abi::kErrorNotFound);
  EXPECT_EQ(nvml.Shutdown(), abi::kSuccess);
  fs::remove(path);
  fs::remove_all(root);
}

}  // namespace
}  // namespace warpscope::sim
