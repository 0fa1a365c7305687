// SPDX-License-Identifier: Apache-2.0
// The real perf_event: samples a busy child of this test through LinuxPerfEventApi and parses
// what the kernel wrote. Needs perf_event_open to be allowed (root or perf_event_paranoid <= 1).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include "agent/sources/cpu_profiler/cpu_sampler.h"
#include "agent/sources/cpu_profiler/perf_api.h"
#include "agent/sources/cpu_profiler/perf_records.h"
#include "agent/sources/cpu_profiler/process_table.h"
#include "agent/sources/cpu_profiler/unwinder.h"
#include "base/testing/peer.h"
#include "profiling/symbolizer.h"

namespace warpscope::agent::cpu_profiler {
namespace {

constexpr const char* kRemedy =
    "perf_event_open was refused: run as root, or `sysctl kernel.perf_event_paranoid=1` and "
    "grant CAP_PERFMON (or CAP_SYS_ADMIN) to the test";

// A child that burns CPU in user space (syscalls = false) or in getppid() (syscalls = true)
// until killed.
pid_t SpawnBusyChild(bool syscalls) {
  pid_t pid = fork();
  if (pid == 0) {
    volatile uint64_t x = 0;
    for (;;) {
      if (syscalls) {
        x = x + static_cast<uint64_t>(getppid());
      } else {
        x = x * 3 + 1;
      }
    }
  }
  return pid;
}

struct Collected {
  std::vector<SampleRecord> samples;
  size_t mmaps = 0;
};

// Drains `ring` until `want` samples of `pid` arrived or 20 s passed (poll() waits for the
// kernel's wakeup; no sleeps).
Collected Collect(PerfRing& ring, pid_t pid, size_t want) {
  Collected out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (out.samples.size() < want && std::chrono::steady_clock::now() < deadline) {
    pollfd p{ring.fd(), POLLIN, 0};
    poll(&p, 1, 200);
    ring.Drain([&](std::span<const uint8_t> bytes) {
      auto record = ParseRecord(bytes);
      ASSERT_TRUE(record.has_value()) << record.error().message();
      if (auto* s = std::get_if<SampleRecord>(&*record); s != nullptr && s->pid == uint32_t(pid)) {
        out.samples.push_back(std::move(*s));
      } else if (std::holds_alternative<MmapRecord>(*record)) {
        ++out.mmaps;
      }
    });
  }
  return out;
}

class PerfSamplingTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (child_ > 0) {
      kill(child_, SIGKILL);
      waitpid(child_, nullptr, 0);
    }
  }
  // Opens a 99 Hz sampler on `child_`; null (test skipped or failed) when refused.
  std::unique_ptr<PerfRing> OpenOnChild() {
    auto api = LinuxPerfEventApi();
    SamplingConfig config{.frequency_hz = 99, .stack_bytes = 8192};
    auto ring = api->Open(BuildSamplingAttr(config), child_, -1, 64);
    if (!ring && ring.error().code() == base::StatusCode::kPermissionDenied) {
      [&] { WARPSCOPE_REQUIRE_PEER(false, "perf_event_open", kRemedy); }();
      return nullptr;
    }
    EXPECT_TRUE(ring.has_value()) << ring.error().message();
    return ring ? std::move(*ring) : nullptr;
  }
  pid_t child_ = -1;
};

TEST_F(PerfSamplingTest, SamplesABusyChildWithUserRegistersAndStack) {
  child_ = SpawnBusyChild(false);
  ASSERT_GT(child_, 0);
  auto ring = OpenOnChild();
  if (ring == nullptr) return;
  Collected got = Collect(*ring, child_, 10);
  ASSERT_GE(got.samples.size(), 10u);
  size_t with_user = 0;
  for (const SampleRecord& s : got.samples) {
    EXPECT_EQ(s.tid, uint32_t(child_));
    if (s.has_user_regs && !s.stack.empty()) {
      ++with_user;
      EXPECT_NE(s.regs[16], 0u) << "rip";
      EXPECT_NE(s.regs[7], 0u) << "rsp";
      EXPECT_LE(s.stack.size(), 8192u);
    }
  }
  EXPECT_GE(with_user, got.samples.size() / 2) << "a user-space loop is mostly sampled in user";
}

TEST_F(PerfSamplingTest, SyscallHeavyChildHasKernelCallchains) {
  child_ = SpawnBusyChild(true);
  ASSERT_GT(child_, 0);
  auto ring = OpenOnChild();
  if (ring == nullptr) return;
  Collected got = Collect(*ring, child_, 20);
  ASSERT_GE(got.samples.size(), 20u);
  size_t with_kernel = 0;
  for (const SampleRecord& s : got.samples) {
    with_kernel += s.kernel_ips.empty() ? 0 : 1;
    for (uint64_t ip : s.kernel_ips) {
      EXPECT_GE(ip, 0xffff800000000000ull) << "kernel addresses only";
    }
  }
  EXPECT_GE(with_kernel, 1u);
}

// Starts cpu_hot_child MODE and waits for its "ready" line.
pid_t SpawnHotChild(const char* mode) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    execl(CPU_HOT_CHILD, CPU_HOT_CHILD, mode, "30", nullptr);
    _exit(127);
  }
  close(fds[1]);
  char buf[8] = {};
  const ssize_t n = read(fds[0], buf, sizeof(buf));
  close(fds[0]);
  return n > 0 ? pid : -1;
}

TEST_F(PerfSamplingTest, UnwindsTheRealSamplesOfAChildWithoutFramePointers) {
  child_ = SpawnHotChild("burn");
  ASSERT_GT(child_, 0);
  auto ring = OpenOnChild();
  if (ring == nullptr) return;
  Collected got = Collect(*ring, child_, 60);
  ASSERT_GE(got.samples.size(), 60u);
  ProcessTable table;
  Unwinder unwinder({});
  profiling::Symbolizer symbolizer({});
  size_t user = 0;
  size_t through_main = 0;
  size_t in_burn = 0;
  for (const SampleRecord& s : got.samples) {
    if (!s.has_user_regs) continue;
    ++user;
    const ProcessInfo& p = table.Get(s.pid);
    UnwindResult r = unwinder.Unwind(p, s.tid, s.regs, s.stack);
    std::vector<std::string> names;
    for (const auto& f : symbolizer.Symbolize(static_cast<pid_t>(s.pid), r.pcs)) {
      names.push_back(f.function);
    }
    auto has = [&](const char* name) {
      return std::find(names.begin(), names.end(), name) != names.end();
    };
    through_main += has("main") && has("work_unit") ? 1 : 0;
    in_burn += has("burn_a") || has("burn_b") || has("burn_c") ? 1 : 0;
  }
  ASSERT_GE(user, 30u);
  EXPECT_GE(through_main * 10, user * 9) << through_main << " of " << user;
  EXPECT_GE(in_burn * 10, user * 9) << in_burn << " of " << user;
}

int Paranoid() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  int level = 99;
  in >> level;
  return level;
}

// The fallback for real: a child that gave up root (and with it every capability) starts the
// sampler. perf_event_paranoid >= 1 refuses it per-CPU events, so it must fall back to its own
// processes; >= 2 also refuses kernel frames. The child reports through its exit status.
TEST(PerfFallbackTest, UnprivilegedSamplerFallsBackToItsOwnProcesses) {
  const int paranoid = Paranoid();
  WARPSCOPE_REQUIRE_PEER(geteuid() == 0 && paranoid >= 1 && paranoid <= 2,
                         "root (to drop it) and kernel.perf_event_paranoid 1 or 2 (it is " +
                             std::to_string(paranoid) + ")",
                         "run the tests as root with Debian's default "
                         "`sysctl kernel.perf_event_paranoid=2`");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(10);
    // setuid clears "dumpable", which would leave /proc/<pid> root's and refuse perf on it;
    // a program started by that user is dumpable.
    prctl(PR_SET_DUMPABLE, 1);
    auto api = LinuxPerfEventApi();
    NoPythonStacks python;
    CpuSampler::Options options;
    options.ring_pages = 8;
    auto sampler = CpuSampler::Start(options, *api, python);
    if (!sampler) {
      fprintf(stderr, "%s\n", sampler.error().message().c_str());
      _exit(11);
    }
    const CpuSampler::Stats stats = (*sampler)->stats();
    if (stats.system_wide) _exit(12);
    if (stats.events < 1) _exit(13);
    if (stats.kernel_frames != (paranoid < 2)) _exit(14);
    (*sampler)->Stop();
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setuid, 11: Start failed, 12: system-wide, "
                                       "13: no event, 14: kernel frames wrong";
}

}  // namespace
}  // namespace warpscope::agent::cpu_profiler
