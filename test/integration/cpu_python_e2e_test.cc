// SPDX-License-Identifier: Apache-2.0
// The real agent (`warpscope agent --enable-cpu-profiler --cpu-profile-dir`) sampling a real
// Python interpreter running cpu_python_child.py: common() calls heavy() and light(), which
// burn CPU 2:1. The profiles must show those functions as Python frames (file and line, the
// Python frame kind in the folded stacks) spliced above the interpreter's native frames, with
// shares near the design. Debian's /usr/bin/python3 always; a pyenv interpreter when present.
// With pyenv's CPython 3.12 run with `-X perf`, the perf trampoline's frames in anonymous memory
// are named from the interpreter's /tmp/perf-<pid>.map ("py::<qualname>:<file>").
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
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


// Files of `pid` in `dir` ending in `suffix`.
std::vector<std::string> FilesOf(const std::string& dir, int pid, std::string_view suffix) {
  std::vector<std::string> out;
  const std::string needle = fmt::format("-{}-", pid);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("cpu-", 0) == 0 && name.find(needle) != std::string::npos &&
        name.ends_with(suffix)) {
      out.push_back(entry.path().string());
    }
  }
  return out;
}

struct PythonShares {
  int64_t samples = 0;
  int64_t common = 0;  // cpu ns of samples under common()
  int64_t heavy = 0;
  int64_t light = 0;
  int64_t ordered = 0;  // samples under common() whose stack reads native → <module> → … → leaf
  std::string example;  // one stack under heavy(), root first
  bool lines = true;    // every heavy/light frame has the child's file and a line
};

PythonShares Measure(const std::string& dir, int pid) {
  PythonShares s;
  for (const std::string& path : FilesOf(dir, pid, ".pb.gz")) {
    auto bytes = base::ReadFile(path);
    if (!bytes) continue;
    auto p = profiling::DecodePprof(*bytes);
    EXPECT_TRUE(p.has_value()) << path;
    if (!p) continue;
    for (const profiling::Sample& sample : p->samples) {
      const std::vector<profiling::Frame> frames = profiling::StackFrames(*p, sample);
      s.samples += sample.values[0];
      auto at = [&](std::string_view name) -> long {
        auto it = std::find_if(frames.begin(), frames.end(),
                               [&](const profiling::Frame& f) { return f.function == name; });
        return it == frames.end() ? -1 : it - frames.begin();
      };
      const long common = at("common");
      if (common < 0) continue;
      s.common += sample.values[1];
      const long heavy = at("heavy");
      const long light = at("light");
      const long leaf = std::max(heavy, light);
      if (heavy >= 0) s.heavy += sample.values[1];
      if (light >= 0) s.light += sample.values[1];
      if (leaf >= 0) {
        const profiling::Frame& f = frames[static_cast<size_t>(leaf)];
        s.lines &= f.file.ends_with("cpu_python_child.py") && f.line > 0;
      }
      const long module = at("<module>");
      const long main = at("main");
      const long run_main = at("Py_RunMain");
      if (run_main >= 0 && module > run_main && main > module && common > main && leaf > common) {
        s.ordered += sample.values[0];
      }
      if (heavy >= 0 && s.example.empty()) {
        for (const profiling::Frame& f : frames) {
          s.example += f.function + (f.module.empty() ? "" : "[" + f.module + "]") + " → ";
        }
      }
    }
  }
  return s;
}

// Runs the agent's CPU profiler on `pid` at 199 Hz in 2 s windows until `files` profiles of it
// are written to `out` (at most 60 s), then stops the agent with SIGINT.
void ProfileUntil(const test::TempDir& dir, const std::string& out, int pid, size_t files) {
  auto agent = test::ChildProcess::Start(
      {test::WarpscopeBinary(), "agent", "--enable-cpu-profiler", "--cpu-profile-dir", out,
       "--cpu-profile-pids", std::to_string(pid), "--cpu-profile-frequency", "199",
       "--cpu-profile-interval", "2s", "--collect-metrics-interval", "1s", "--listen-address",
       "off", "--enable-host-metrics=false"},
      dir.path());
  ASSERT_TRUE(agent.has_value()) << agent.error().message();
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (FilesOf(out, pid, ".pb.gz").size() < files &&
         std::chrono::steady_clock::now() < deadline) {
    ASSERT_EQ((*agent)->Wait(200ms), -1) << "the agent exited: " << (*agent)->Stderr();
  }
  const int status = (*agent)->Signal(SIGINT, 20s);
  ASSERT_TRUE(WIFEXITED(status)) << (*agent)->Stderr();
  EXPECT_EQ(WEXITSTATUS(status), 0) << (*agent)->Stderr();
}

void ProfileInterpreter(const std::string& python) {
  test::TempDir dir;
  const std::string out = dir.path() + "/profiles";
  auto child = test::ChildProcess::Start({python, CPU_PYTHON_CHILD, "60"}, dir.path());
  ASSERT_TRUE(child.has_value()) << child.error().message();
  const int pid = (*child)->pid();
  ProfileUntil(dir, out, pid, 3);
  if (::testing::Test::HasFatalFailure()) {
    return;
  }

  const PythonShares s = Measure(out, pid);
  ASSERT_GE(s.samples, 300);
  ASSERT_GT(s.common, 0) << "no sample has the Python frame common()";
  const double heavy = static_cast<double>(s.heavy) / static_cast<double>(s.heavy + s.light);
  fmt::print("{}: {} samples, heavy {:.3f} of heavy+light, e.g. {}\n", python, s.samples, heavy,
             s.example);
  EXPECT_NEAR(heavy, 2.0 / 3.0, 0.1) << "heavy:light is designed 2:1";
  EXPECT_GE(static_cast<double>(s.heavy + s.light) / static_cast<double>(s.common), 0.9);
  EXPECT_TRUE(s.lines) << "Python frames carry the script's file and a line";
  EXPECT_GE(static_cast<double>(s.ordered), 0.8 * static_cast<double>(s.samples))
      << "Py_RunMain → <module> → main → common → heavy|light, e.g. " << s.example;

  // The folded stacks name Python frames by kind: "function (file:line)".
  bool folded_python = false;
  for (const std::string& path : FilesOf(out, pid, ".folded")) {
    auto text = base::ReadFile(path);
    folded_python |= text && text->find("heavy (cpu_python_child.py:") != std::string::npos;
  }
  EXPECT_TRUE(folded_python) << "Python frames have the Python frame kind";
}

TEST(CpuPythonE2eTest, DebianPythonFramesWithTheirShares) {
  WARPSCOPE_REQUIRE_PEER(MayProfileSystemWide(), "system-wide perf_event sampling",
                         "run the test as root or `sysctl kernel.perf_event_paranoid=0`");
  WARPSCOPE_REQUIRE_PEER(fs::exists("/usr/bin/python3"), "Debian's /usr/bin/python3",
                         "apt-get install python3");
  ProfileInterpreter("/usr/bin/python3");
}

// The newest pyenv CPython 3.9-3.13 under $PYENV_ROOT (default ~/.pyenv); skipped without one.
TEST(CpuPythonE2eTest, PyenvPythonFramesWithTheirShares) {
  WARPSCOPE_REQUIRE_PEER(MayProfileSystemWide(), "system-wide perf_event sampling",
                         "run the test as root or `sysctl kernel.perf_event_paranoid=0`");
  const char* root = std::getenv("PYENV_ROOT");
  const char* home = std::getenv("HOME");
  const std::string versions =
      (root != nullptr ? std::string(root) : std::string(home != nullptr ? home : "") + "/.pyenv") +
      "/versions";
  std::string best;
  for (const char* minor : {"3.9.", "3.10.", "3.11.", "3.12.", "3.13."}) {  // the later wins
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(versions, ec)) {
      if (entry.path().filename().string().rfind(minor, 0) == 0 &&
          fs::exists(entry.path() / "bin/python3")) {
        best = (entry.path() / "bin/python3").string();
      }
    }
  }
  if (best.empty()) {
    GTEST_SKIP() << "no pyenv CPython 3.9-3.13 under " << versions;
  }
  ProfileInterpreter(best);
}

// CPython 3.12's perf trampoline (`-X perf`): every Python call runs through a small
// trampoline in anonymous executable memory that the interpreter lists in /tmp/perf-<pid>.map
// as "py::<qualname>:<filename>". The agent names those frames from the map; named, the splice
// drops them in favour of the Python frames read from memory (which carry lines). Unnamed, each
// would stay an "[unknown] 0x…" frame: every sample's unwinding reaches one (libdwfl stops at
// the first trampoline, which has no CFI).
TEST(CpuPythonE2eTest, PerfTrampolineFramesAreNamedFromThePerfMap) {
  const std::string python = "/root/.pyenv/versions/3.12.1/bin/python3.12";
  std::error_code ec;
  if (!fs::exists(python, ec)) {
    GTEST_SKIP() << "no pyenv CPython 3.12.1 at " << python << " (the perf trampoline is 3.12+)";
  }
  WARPSCOPE_REQUIRE_PEER(MayProfileSystemWide(), "system-wide perf_event sampling",
                         "run the test as root or `sysctl kernel.perf_event_paranoid=0`");
  test::TempDir dir;
  const std::string out = dir.path() + "/profiles";
  auto child =
      test::ChildProcess::Start({python, "-X", "perf", CPU_PYTHON_CHILD, "60"}, dir.path());
  ASSERT_TRUE(child.has_value()) << child.error().message();
  const int pid = (*child)->pid();
  const std::string map = fmt::format("/tmp/perf-{}.map", pid);
  ProfileUntil(dir, out, pid, 2);
  if (::testing::Test::HasFatalFailure()) {
    return;
  }
  (*child)->Signal(SIGKILL, 10s);

  int64_t samples = 0;
  int64_t with_heavy = 0;  // the Python frame heavy() spliced in
  int64_t unnamed = 0;     // samples with an anonymous address left unnamed
  std::string example;
  for (const std::string& path : FilesOf(out, pid, ".pb.gz")) {
    auto bytes = base::ReadFile(path);
    if (!bytes) continue;
    auto p = profiling::DecodePprof(*bytes);
    if (!p) continue;
    for (const profiling::Sample& sample : p->samples) {
      const std::vector<profiling::Frame> frames = profiling::StackFrames(*p, sample);
      samples += sample.values[0];
      bool heavy = false;
      bool anonymous = false;
      for (const profiling::Frame& f : frames) {
        heavy |= f.function == "heavy";
        anonymous |=
            f.function.starts_with("[unknown] 0x") || f.function.starts_with("[unknown] [anon]");
      }
      with_heavy += heavy ? sample.values[0] : 0;
      unnamed += anonymous ? sample.values[0] : 0;
      if (anonymous && example.empty()) {
        for (const profiling::Frame& f : frames) {
          example += f.function + (f.module.empty() ? "" : "[" + f.module + "]") + " → ";
        }
      }
    }
  }
  fs::remove(map, ec);
  ASSERT_GE(samples, 100);
  fmt::print("{} -X perf: {} samples, {} under heavy(), {} with an unnamed anonymous frame\n",
             python, samples, with_heavy, unnamed);
  EXPECT_GE(static_cast<double>(with_heavy), 0.4 * static_cast<double>(samples));
  EXPECT_LE(static_cast<double>(unnamed), 0.05 * static_cast<double>(samples))
      << "trampoline frames are named from the perf map, e.g. " << example;
}

}  // namespace
}  // namespace warpscope
