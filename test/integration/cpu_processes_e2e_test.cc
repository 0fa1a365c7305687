// SPDX-License-Identifier: Apache-2.0
// The real agent's CPU profiler (`warpscope agent --enable-cpu-profiler --cpu-profile-dir`) on
// the processes that are hard to profile:
//   - JIT code without unwind info: cpu_jit_child burns CPU through a trampoline it writes into
//     memory mapped at run time (a frame pointer, no CFI) and names in /tmp/perf-<pid>.map; the
//     stack must read main → jit_caller → jit_trampoline → jit_hot, not stop at the trampoline.
//   - An exited process: cpu_hot_child, from a copy deleted once it exited, burns CPU for part of
//     a window; the window built after its exit still names its functions.
//   - A process in pid and mount namespaces of its own (created here with unshare as root),
//     run from a path that only its mount namespace has (a bind mount): profiled by its host
//     pid, its binary opened through /proc/<pid>/root, its namespace pid (1) and, when this
//     machine lets the test make a cgroup named like a container's, its container id in the
//     profile.
// All need perf_event (root, as in CI, or perf_event_paranoid <= 0); the namespaces need root.
// Without them the tests are skipped, and fail in CI (CI=true).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/testing/peer.h"
#include "child_process.h"
#include "cpu_profiles.h"
#include "profiling/pprof.h"

namespace warpscope {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;


#define REQUIRE_PERF()                                                              \
  WARPSCOPE_REQUIRE_PEER(MayProfileSystemWide(), "system-wide perf_event sampling", \
                         "run the test as root or `sysctl kernel.perf_event_paranoid=0`")


// The end (realtime ms) of the last window of `pid` written to `dir`; 0 when none.
int64_t LastWindowEndMs(const std::string& dir, int pid) {
  int64_t last = 0;
  const std::string needle = fmt::format("-{}-", pid);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t at = name.find(needle);
    if (name.rfind("cpu-", 0) != 0 || at == std::string::npos || !name.ends_with(".pb.gz")) {
      continue;
    }
    // cpu-<host>-<pid>-<start ms>-<end ms>.pb.gz
    const std::string times = name.substr(at + needle.size());
    const size_t dash = times.find('-');
    if (dash != std::string::npos) {
      last = std::max<int64_t>(last, std::atoll(times.c_str() + dash + 1));
    }
  }
  return last;
}

// The agent sampling `pids` (every process when empty) at 199 Hz, windows of `interval`.
base::Result<std::unique_ptr<test::ChildProcess>> StartAgent(const test::TempDir& dir,
                                                             const std::string& out,
                                                             const std::vector<int>& pids,
                                                             std::string interval = "2s") {
  std::vector<std::string> argv = {test::WarpscopeBinary(),
                                   "agent",
                                   "--enable-cpu-profiler",
                                   "--cpu-profile-dir",
                                   out,
                                   "--cpu-profile-frequency",
                                   "199",
                                   "--cpu-profile-interval",
                                   std::move(interval),
                                   "--collect-metrics-interval",
                                   "1s",
                                   "--listen-address",
                                   "off",
                                   "--enable-host-metrics=false"};
  if (!pids.empty()) {
    std::string list;
    for (int pid : pids) list += (list.empty() ? "" : ",") + std::to_string(pid);
    argv.push_back("--cpu-profile-pids");
    argv.push_back(list);
  }
  return test::ChildProcess::Start(argv, dir.path());
}

// Waits (bounded) until `agent` wrote `windows` profiles of `pid`, then stops it.
void ProfileUntil(test::ChildProcess& agent, const std::string& out, int pid, size_t windows) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (ProfilesOf(out, pid).size() < windows && std::chrono::steady_clock::now() < deadline) {
    ASSERT_EQ(agent.Wait(200ms), -1) << "the agent exited: " << agent.Stderr();
  }
  const int status = agent.Signal(SIGINT, 20s);
  ASSERT_TRUE(WIFEXITED(status)) << agent.Stderr();
  EXPECT_EQ(WEXITSTATUS(status), 0) << agent.Stderr();
}

// Samples (counts) whose stack holds `names` in this order (root first, gaps allowed), and all.
struct Count {
  int64_t samples = 0;
  int64_t matching = 0;
  std::string example;  // one stack that does not match, root first
};
Count CountStacks(const std::vector<profiling::Profile>& profiles,
                  const std::vector<std::string>& names) {
  Count c;
  for (const profiling::Profile& p : profiles) {
    for (const profiling::Sample& sample : p.samples) {
      const std::vector<profiling::Frame> frames = profiling::StackFrames(p, sample);
      c.samples += sample.values[0];
      size_t next = 0;
      for (const profiling::Frame& f : frames) {
        if (next < names.size() && f.function == names[next]) ++next;
      }
      if (next == names.size()) {
        c.matching += sample.values[0];
      } else if (c.example.empty()) {
        for (const profiling::Frame& f : frames) c.example += f.function + " → ";
      }
    }
  }
  return c;
}

TEST(CpuProcessesE2eTest, JitTrampolineWithAFramePointerIsWalkedThrough) {
  REQUIRE_PERF();
  test::TempDir dir;
  const std::string out = dir.path() + "/profiles";
  auto jit = test::ChildProcess::Start({CPU_JIT_CHILD, "60"}, dir.path());
  ASSERT_TRUE(jit.has_value()) << jit.error().message();
  const int pid = (*jit)->pid();
  auto agent = StartAgent(dir, out, {pid});
  ASSERT_TRUE(agent.has_value()) << agent.error().message();
  ProfileUntil(**agent, out, pid, 2);
  if (HasFatalFailure()) return;
  (*jit)->Signal(SIGKILL, 10s);
  std::error_code ec;
  fs::remove(fmt::format("/tmp/perf-{}.map", pid), ec);

  Count c = CountStacks(ProfilesOf(out, pid), {"main", "jit_caller", "jit_trampoline", "jit_hot"});
  ASSERT_GE(c.samples, 100) << (*agent)->Stderr();
  EXPECT_GE(static_cast<double>(c.matching), 0.9 * static_cast<double>(c.samples))
      << "main → jit_caller → jit_trampoline (perf map) → jit_hot; e.g. " << c.example;
}

TEST(CpuProcessesE2eTest, AProcessThatExitedBeforeItsWindowClosedIsSymbolized) {
  REQUIRE_PERF();
  test::TempDir dir;
  const std::string out = dir.path() + "/profiles";
  // Its own copy of the program, deleted as soon as it exited: the window built afterwards can
  // name its functions only from what the agent read while it ran.
  const std::string copy = dir.path() + "/short_lived";
  fs::copy_file(CPU_HOT_CHILD, copy);
  // Stopped until the agent samples its pid, then the copy (exec keeps the pid) burns 1.5 s.
  auto child = test::ChildProcess::Start(
      {"/bin/sh", "-c", "kill -STOP $$; exec \"$0\" burn 1.5", copy}, dir.path());
  ASSERT_TRUE(child.has_value()) << child.error().message();
  const int pid = (*child)->pid();
  auto agent = StartAgent(dir, out, {pid}, "4s");
  ASSERT_TRUE(agent.has_value()) << agent.error().message();
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while ((*agent)->Stderr().find("source cpu_profiler started") == std::string::npos) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << (*agent)->Stderr();
    ASSERT_EQ((*agent)->Wait(100ms), -1) << "the agent exited: " << (*agent)->Stderr();
  }
  ASSERT_EQ(kill(pid, SIGCONT), 0);
  const int status = (*child)->Wait(30s);
  ASSERT_TRUE(WIFEXITED(status)) << (*child)->Stderr();
  fs::remove(copy);
  const int64_t exited_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
  // Every sample it had is in the windows up to the one that closed after it exited (that one
  // was built with the process and its binary gone).
  const auto closed_deadline = std::chrono::steady_clock::now() + 60s;
  while (LastWindowEndMs(out, pid) < exited_ms &&
         std::chrono::steady_clock::now() < closed_deadline) {
    ASSERT_EQ((*agent)->Wait(200ms), -1) << "the agent exited: " << (*agent)->Stderr();
  }
  ASSERT_GE(LastWindowEndMs(out, pid), exited_ms) << (*agent)->Stderr();
  ProfileUntil(**agent, out, pid, 1);
  if (HasFatalFailure()) return;

  Count c = CountStacks(ProfilesOf(out, pid), {"main", "work_unit"});
  ASSERT_GE(c.samples, 50) << (*agent)->Stderr();
  EXPECT_GE(static_cast<double>(c.matching), 0.8 * static_cast<double>(c.samples))
      << "named after the process and its binary were gone; e.g. " << c.example;
}

#ifdef CPU_PYTHON_PERF
// Registered only where a pyenv CPython 3.12+ (which has `-X perf`) was found at configure time.
TEST(CpuProcessesE2eTest, CpythonPerfTrampolinesAreSteppedOverToTheInterpretersMain) {
  REQUIRE_PERF();
  test::TempDir dir;
  const std::string out = dir.path() + "/profiles";
  auto child = test::ChildProcess::Start({CPU_PYTHON_PERF, "-X", "perf", CPU_PYTHON_CHILD, "60"},
                                         dir.path());
  ASSERT_TRUE(child.has_value()) << child.error().message();
  const int pid = (*child)->pid();
  auto agent = StartAgent(dir, out, {pid});
  ASSERT_TRUE(agent.has_value()) << agent.error().message();
  ProfileUntil(**agent, out, pid, 2);
  if (HasFatalFailure()) return;
  (*child)->Signal(SIGKILL, 10s);
  std::error_code ec;
  fs::remove(fmt::format("/tmp/perf-{}.map", pid), ec);

  std::vector<profiling::Profile> profiles = ProfilesOf(out, pid);
  Count whole = CountStacks(profiles, {"Py_BytesMain", "heavy"});
  int64_t stopped = 0;
  for (const profiling::Profile& p : profiles) {
    for (const profiling::Sample& s : p.samples) {
      for (const profiling::Frame& f : profiling::StackFrames(p, s)) {
        if (f.function.starts_with("[unwinding stopped")) {
          stopped += s.values[0];
          break;
        }
      }
    }
  }
  ASSERT_GE(whole.samples, 100) << (*agent)->Stderr();
  fmt::print("{} -X perf: {} samples, {} reach Py_BytesMain → … → heavy, {} stopped\n",
             CPU_PYTHON_PERF, whole.samples, whole.matching, stopped);
  EXPECT_LE(static_cast<double>(stopped), 0.05 * static_cast<double>(whole.samples))
      << "unwinding goes on past the trampolines";
  EXPECT_GE(static_cast<double>(whole.matching), 0.4 * static_cast<double>(whole.samples))
      << "the interpreter's main above the Python frames; e.g. " << whole.example;
}
#endif  // CPU_PYTHON_PERF

// A cgroup (v2, or v1's pids hierarchy) named like a Docker container's, for the namespaced
// child; "" when this machine does not let the test make one.
constexpr char kContainer[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
std::string MakeContainerCgroup() {
  for (const char* root : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/pids"}) {
    std::error_code ec;
    if (!fs::exists(fmt::format("{}/cgroup.procs", root), ec)) continue;
    const std::string dir = fmt::format("{}/docker-{}.scope", root, kContainer);
    if (fs::create_directory(dir, ec) || fs::exists(dir, ec)) return dir;
  }
  return "";
}

// Runs `program args…` as pid 1 of a new pid namespace, in a new mount namespace where `stage`
// is bind-mounted on the empty directory `visible` (so `visible`/… exists there only). Returns
// the intermediate process (waits for the program) and writes the program's host pid to
// `host_pid`; -1 on failure (errno-free: the reason is in the exit status).
pid_t StartInNamespaces(const std::string& stage, const std::string& visible,
                        const std::vector<std::string>& argv, pid_t& host_pid) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t middle = fork();
  if (middle == 0) {
    // Only system calls from here on: the test process has threads.
    close(fds[0]);
    if (unshare(CLONE_NEWPID | CLONE_NEWNS) != 0) _exit(10);
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(11);
    if (mount(stage.c_str(), visible.c_str(), nullptr, MS_BIND, nullptr) != 0) _exit(12);
    const pid_t inner = fork();  // pid 1 of the new namespace
    if (inner == 0) {
      execv(args[0], args.data());
      _exit(13);
    }
    if (inner < 0 || write(fds[1], &inner, sizeof(inner)) != sizeof(inner)) _exit(14);
    int status = 0;
    waitpid(inner, &status, 0);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 15);
  }
  close(fds[1]);
  host_pid = -1;
  if (middle > 0 && read(fds[0], &host_pid, sizeof(host_pid)) != sizeof(host_pid)) {
    host_pid = -1;
  }
  close(fds[0]);
  return middle;
}

TEST(CpuProcessesE2eTest, AProcessInItsOwnPidAndMountNamespaceIsProfiled) {
  WARPSCOPE_REQUIRE_PEER(geteuid() == 0, "root (pid and mount namespaces, perf_event)",
                         "run the test as root, as CI does");
  test::TempDir dir;
  const std::string out = dir.path() + "/profiles";
  const std::string stage = dir.path() + "/stage";
  const std::string visible = dir.path() + "/in_namespace";
  fs::create_directories(stage);
  fs::create_directories(visible);
  fs::copy_file(CPU_HOT_CHILD, stage + "/ns_child");
  const std::string program = visible + "/ns_child";  // exists in the child's namespace only
  pid_t host_pid = -1;
  const pid_t middle = StartInNamespaces(stage, visible, {program, "burn", "60"}, host_pid);
  ASSERT_GT(middle, 0);
  if (host_pid <= 0) {
    int status = 0;
    waitpid(middle, &status, 0);
    FAIL() << "namespace setup failed, exit status " << WEXITSTATUS(status)
           << " (10 unshare, 11 mount private, 12 bind mount, 13 exec)";
  }
  const std::string cgroup = MakeContainerCgroup();
  bool in_cgroup =
      !cgroup.empty() && base::WriteFile(cgroup + "/cgroup.procs", std::to_string(host_pid)).ok();
  auto cleanup = [&] {
    kill(host_pid, SIGKILL);
    int status = 0;
    waitpid(middle, &status, 0);
    std::error_code ec;
    if (!cgroup.empty()) fs::remove(cgroup, ec);
  };
  EXPECT_FALSE(fs::exists(program)) << "the test's own view has no " << program;

  auto agent = StartAgent(dir, out, {host_pid});
  if (!agent) {
    cleanup();
    FAIL() << agent.error().message();
  }
  ProfileUntil(**agent, out, host_pid, 2);
  cleanup();
  if (HasFatalFailure()) return;

  std::vector<profiling::Profile> profiles = ProfilesOf(out, host_pid);
  Count c = CountStacks(profiles, {"main", "work_unit"});
  ASSERT_GE(c.samples, 100) << (*agent)->Stderr();
  EXPECT_GE(static_cast<double>(c.matching), 0.8 * static_cast<double>(c.samples))
      << "symbols through /proc/<pid>/root; e.g. " << c.example;
  int64_t ns_pid_1 = 0;
  int64_t with_container = 0;
  bool module_seen = false;
  for (const profiling::Profile& p : profiles) {
    for (const profiling::Sample& s : p.samples) {
      for (const profiling::Label& l : s.labels) {
        ns_pid_1 += l.key == "ns_pid" && l.num == 1 ? s.values[0] : 0;
        with_container += l.key == "container_id" && l.str == kContainer ? s.values[0] : 0;
      }
      for (const profiling::Frame& f : profiling::StackFrames(p, s)) {
        module_seen |= f.function == "work_unit" && f.module == program;
      }
    }
  }
  EXPECT_EQ(ns_pid_1, c.samples) << "every sample carries the namespace pid";
  EXPECT_TRUE(module_seen) << "frames name the binary by the path the process sees";
  if (in_cgroup) {
    EXPECT_EQ(with_container, c.samples) << "the container id from " << cgroup;
  } else {
    fmt::print("no cgroup could be made here: the container id is not checked\n");
  }
}

}  // namespace
}  // namespace warpscope
