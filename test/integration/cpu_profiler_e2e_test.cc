// SPDX-License-Identifier: Apache-2.0
// The real agent (`warpscope agent --enable-cpu-profiler --cpu-profile-dir`) sampling two C
// children built without frame pointers (cpu_hot_child): one burning CPU in burn_a/b/c in the
// proportions 6:3:1, one in getppid() system calls. The pprof files must show the hot functions
// with about those shares (DWARF unwinding) and kernel frames for the system calls.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "base/file_util.h"
#include "base/testing/peer.h"
#include "child_process.h"
#include "cpu_profiles.h"
#include "profiling/pprof.h"

namespace warpscope {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;


// CPU nanoseconds of the samples whose stack holds a frame named `function`, and the total.
struct Shares {
  std::map<std::string, int64_t> ns;
  int64_t total = 0;
  int64_t samples = 0;
  int64_t with_kernel = 0;
  int64_t with_getppid = 0;
};
Shares Measure(const std::vector<profiling::Profile>& profiles) {
  Shares s;
  for (const profiling::Profile& p : profiles) {
    for (const profiling::Sample& sample : p.samples) {
      const std::vector<profiling::Frame> frames = profiling::StackFrames(p, sample);
      s.total += sample.values[1];
      s.samples += sample.values[0];
      bool kernel = false;
      bool getppid = false;
      std::set<std::string> names;
      for (const profiling::Frame& f : frames) {
        names.insert(f.function);
        kernel |= f.module == "[kernel.kallsyms]";
        getppid |=
            f.module == "[kernel.kallsyms]" && f.function.find("getppid") != std::string::npos;
      }
      for (const std::string& n : names) s.ns[n] += sample.values[1];
      s.with_kernel += kernel ? sample.values[0] : 0;
      s.with_getppid += getppid ? sample.values[0] : 0;
    }
  }
  return s;
}

TEST(CpuProfilerE2eTest, HotFunctionsWithTheirSharesAndKernelFrames) {
  WARPSCOPE_REQUIRE_PEER(
      geteuid() == 0 ||
          [] {
            auto p = base::ReadFile("/proc/sys/kernel/perf_event_paranoid");
            return p && std::atoi(p->c_str()) <= 0;
          }(),
      "system-wide perf_event sampling",
      "run the test as root or `sysctl kernel.perf_event_paranoid=0`");
  test::TempDir dir;
  const std::string out = dir.path() + "/profiles";
  auto burn = test::ChildProcess::Start({CPU_HOT_CHILD, "burn", "60"}, dir.path());
  ASSERT_TRUE(burn.has_value()) << burn.error().message();
  auto sys = test::ChildProcess::Start({CPU_HOT_CHILD, "syscalls", "60"}, dir.path());
  ASSERT_TRUE(sys.has_value()) << sys.error().message();
  const int burn_pid = (*burn)->pid();
  const int sys_pid = (*sys)->pid();
  auto agent = test::ChildProcess::Start(
      {test::WarpscopeBinary(), "agent", "--enable-cpu-profiler", "--cpu-profile-dir", out,
       "--cpu-profile-pids", fmt::format("{},{}", burn_pid, sys_pid), "--cpu-profile-frequency",
       "199", "--cpu-profile-interval", "2s", "--collect-metrics-interval", "1s",
       "--listen-address", "off", "--enable-host-metrics=false"},
      dir.path());
  ASSERT_TRUE(agent.has_value()) << agent.error().message();

  // Wait (bounded) for three windows of the burning child: about 6 s of CPU at 199 Hz.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (ProfilesOf(out, burn_pid).size() < 3 && std::chrono::steady_clock::now() < deadline) {
    ASSERT_EQ((*agent)->Wait(200ms), -1) << "the agent exited: " << (*agent)->Stderr();
  }
  const int status = (*agent)->Signal(SIGINT, 20s);
  ASSERT_TRUE(WIFEXITED(status)) << (*agent)->Stderr();
  EXPECT_EQ(WEXITSTATUS(status), 0) << (*agent)->Stderr();

  Shares b = Measure(ProfilesOf(out, burn_pid));
  ASSERT_GE(b.samples, 300) << (*agent)->Stderr();
  const double work = static_cast<double>(b.ns["work_unit"]);
  EXPECT_GE(work / static_cast<double>(b.total), 0.9)
      << "DWARF unwinding reaches work_unit through frames without frame pointers";
  EXPECT_GE(static_cast<double>(b.ns["main"]) / static_cast<double>(b.total), 0.9);
  const double a = static_cast<double>(b.ns["burn_a"]) / work;
  const double bb = static_cast<double>(b.ns["burn_b"]) / work;
  const double c = static_cast<double>(b.ns["burn_c"]) / work;
  EXPECT_NEAR(a, 0.6, 0.08);
  EXPECT_NEAR(bb, 0.3, 0.08);
  EXPECT_NEAR(c, 0.1, 0.06);

  Shares s = Measure(ProfilesOf(out, sys_pid));
  ASSERT_GE(s.samples, 100);
  EXPECT_GE(s.with_kernel * 2, s.samples) << "most of a getppid() loop runs in the kernel";
  EXPECT_GE(s.with_getppid, 1) << "kernel frames named from /proc/kallsyms";
  EXPECT_GE(static_cast<double>(s.ns["syscall_unit"]) / static_cast<double>(s.total), 0.9)
      << "user frames below the kernel ones";
}

}  // namespace
}  // namespace warpscope
