// SPDX-License-Identifier: Apache-2.0
// A real interpreter read from outside: starts $WARPSCOPE_TEST_PYTHON on
// testing/remote_child.py and reads its two threads' frames with RemotePythonReader, as the
// CPU profiler does after a sample. ctest: pyframes_remote_real_<version>, one per interpreter
// of this machine (CMakeLists.txt).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/testing/peer.h"
#include "pyframes/remote_reader.h"
#include "pyframes/splice.h"

extern char** environ;

namespace warpscope::pyframes {
namespace {

const std::string kScript =
    std::string(WARPSCOPE_SOURCE_DIR) + "/src/pyframes/testing/remote_child.py";

// Lines of the script by their "# LINE:<name>" marks.
std::map<std::string, uint32_t> Marks() {
  std::map<std::string, uint32_t> marks;
  std::ifstream in(kScript);
  std::string line;
  for (uint32_t n = 1; std::getline(in, line); ++n) {
    const size_t at = line.find("# LINE:");
    if (at != std::string::npos) {
      marks[line.substr(at + 7)] = n;
    }
  }
  return marks;
}

// The child, its stdin (closing it ends the child) and its "ready" line.
class Child {
 public:
  bool Start(const std::string& python) {
    int in[2];
    int out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
      return false;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    std::vector<std::string> args = {python, "-X", "utf8", kScript};
    std::vector<char*> argv;
    for (std::string& a : args) {
      argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, python.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    stdout_ = out[0];
    return rc == 0;
  }
  // Waits (up to 30 s) for "ready <main tid> <worker tid>".
  bool Ready(pid_t* main_tid, pid_t* worker_tid) {
    std::string text;
    char buf[256];
    while (text.find('\n') == std::string::npos) {
      pollfd p{stdout_, POLLIN, 0};
      if (poll(&p, 1, 30000) != 1) {
        return false;
      }
      const ssize_t n = read(stdout_, buf, sizeof(buf));
      if (n <= 0) {
        return false;
      }
      text.append(buf, static_cast<size_t>(n));
    }
    std::istringstream s(text);
    std::string word;
    s >> word >> *main_tid >> *worker_tid;
    return word == "ready";
  }
  pid_t pid() const { return pid_; }
  bool Send(const std::string& line) {
    return write(stdin_, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  }
  ~Child() {
    if (stdin_ >= 0) {
      close(stdin_);
    }
    if (stdout_ >= 0) {
      close(stdout_);
    }
    if (pid_ > 0) {
      int status = 0;
      // The child ends when its stdin closes; a stuck one is stopped by its pid.
      for (int i = 0; i < 500 && waitpid(pid_, &status, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (i == 499) {
          kill(pid_, SIGKILL);
          waitpid(pid_, &status, 0);
        }
      }
    }
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int stdout_ = -1;
};

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

std::string Describe(const std::vector<PythonFrame>& frames) {
  std::string s;
  for (const PythonFrame& f : frames) {
    s += f.function + "@" + std::to_string(f.line) + (f.eval_entry ? "|" : "") + " ";
  }
  return s;
}

// Reads `tid` until `done` holds for its frames (the child may still be on its way into the
// blocking call when it printed "ready"); false after 20 s.
template <typename Done>
bool ReadUntil(RemotePythonReader& reader, pid_t pid, pid_t tid, std::vector<PythonFrame>* frames,
               ThreadReadResult* r, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    *r = reader.ReadThread(pid, tid, NowNs(), 128, frames);
    if (r->status == ThreadRead::kOk && done(*frames)) {
      return true;
    }
    std::this_thread::yield();
  }
  return false;
}

class RemoteRealTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* python = std::getenv("WARPSCOPE_TEST_PYTHON");
    if (python == nullptr || *python == '\0') {
      GTEST_SKIP() << "WARPSCOPE_TEST_PYTHON is not set (ctest sets it per interpreter)";
    }
    python_ = python;
    ASSERT_TRUE(child_.Start(python_));
    ASSERT_TRUE(child_.Ready(&main_tid_, &worker_tid_));
  }

  std::string python_;
  Child child_;
  pid_t main_tid_ = 0;
  pid_t worker_tid_ = 0;
};

TEST_F(RemoteRealTest, ReadsBothThreadsOfAnotherProcess) {
  const auto marks = Marks();
  RemotePythonReader reader;
  std::vector<PythonFrame> frames;
  ThreadReadResult r;
  ASSERT_TRUE(ReadUntil(reader, child_.pid(), main_tid_, &frames, &r,
                        [&](const auto& f) {
                          return !f.empty() && f[0].function == "inner" &&
                                 f[0].line == marks.at("inner");
                        }))
      << ThreadReadName(r.status) << ": " << Describe(frames);
  const RemotePython* py = reader.InterpreterOf(child_.pid());
  ASSERT_NE(py, nullptr);
  std::cout << "CPython 3." << py->minor << " in " << py->path << " (build id " << py->build_id
            << "), main thread: " << Describe(frames) << "\n";
  const std::vector<std::pair<std::string, std::string>> want = {
      {"inner", "inner"}, {"middle", "middle"}, {"outer", "outer"}, {"<module>", "module"}};
  ASSERT_EQ(frames.size(), want.size()) << Describe(frames);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(frames[i].function, want[i].first);
    EXPECT_EQ(frames[i].file, kScript);
    EXPECT_EQ(frames[i].line, marks.at(want[i].second)) << want[i].first;
    EXPECT_FALSE(frames[i].unreadable);
  }
  // The eval-loop calls: one per frame before 3.11; from 3.11 Python-to-Python calls run in
  // the caller's, so map() calling middle starts the only other one.
  const bool per_frame = py->minor <= 10;
  EXPECT_EQ(frames[0].eval_entry, per_frame);
  EXPECT_TRUE(frames[1].eval_entry);
  EXPECT_EQ(frames[2].eval_entry, per_frame);
  EXPECT_TRUE(frames[3].eval_entry);

  // Spliced into the native stack CPython has there: read() <- eval <- map_next ... <- eval.
  std::vector<NativeKind> native = {NativeKind::kOther, NativeKind::kOther};  // read, readall
  native.insert(native.end(), per_frame ? 2 : 1, NativeKind::kEvalLoop);      // inner, middle
  native.push_back(NativeKind::kOther);                                       // map_next
  native.insert(native.end(), per_frame ? 2 : 1, NativeKind::kEvalLoop);      // outer, module
  native.push_back(NativeKind::kOther);                                       // main
  std::vector<SplicedFrame> spliced;
  const SpliceStats st = SpliceStacks(native, frames, &spliced);
  EXPECT_FALSE(st.mismatch);
  ASSERT_EQ(spliced.size(), 8u);
  EXPECT_TRUE(spliced[2].python && spliced[3].python && !spliced[4].python);
  EXPECT_EQ(spliced[4].index, per_frame ? 4u : 3u);  // map_next between middle and outer

  // The worker thread: threading's own frames, then w_inner and worker.
  ASSERT_TRUE(ReadUntil(reader, child_.pid(), worker_tid_, &frames, &r,
                        [&](const auto& f) {
                          for (size_t i = 0; i + 1 < f.size(); ++i) {
                            if (f[i].function == "w_inner" && f[i].line == marks.at("w_inner")) {
                              return f[i + 1].function == "worker" &&
                                     f[i + 1].line == marks.at("worker");
                            }
                          }
                          return false;
                        }))
      << ThreadReadName(r.status) << ": " << Describe(frames);
  std::cout << "worker thread: " << Describe(frames) << "\n";
  EXPECT_EQ(frames.front().file.find("threading.py") != std::string::npos, true);
  EXPECT_TRUE(frames.back().eval_entry);  // Thread._bootstrap, called from C
  if (!per_frame) {
    // Python-to-Python calls (worker -> w_inner -> Event.wait -> Condition.wait) run in the
    // caller's eval-loop call; Thread.run's self._target(*args) goes through C in 3.11.
    for (size_t i = 0; frames[i].function != "worker"; ++i) {
      EXPECT_FALSE(frames[i].eval_entry) << Describe(frames);
    }
  }

  // Warm: the thread state comes from the cache, revalidated with one read; no list walk.
  const auto walks = reader.stats().thread_list_walks;
  r = reader.ReadThread(child_.pid(), main_tid_, NowNs(), 128, &frames);
  ASSERT_EQ(r.status, ThreadRead::kOk);
  EXPECT_EQ(frames.size(), 4u);
  EXPECT_FALSE(r.listed_threads);
  EXPECT_FALSE(r.probed);
  EXPECT_EQ(reader.stats().thread_list_walks, walks);
  EXPECT_GE(reader.stats().tstate_cache_hits, 1u);
  // Per frame read, Python or entry frame: the frame and its code object; plus the thread
  // state's native id, its frame pointer and 3.11/3.12's _PyCFrame. Names and lines come from
  // the code cache, except where two code objects share a slot of the direct-mapped cache
  // (then each miss reads two strings and the line table: at most 6 reads more).
  r = reader.ReadThread(child_.pid(), main_tid_, NowNs(), 128, &frames);
  std::cout << "warm read of 4 frames: " << r.memory_reads << " process_vm_readv calls, "
            << r.code_cache_misses << " code cache misses\n";
  EXPECT_LE(r.memory_reads, 2 * (r.walk.frames + r.walk.not_python) + 3 + 6 * r.code_cache_misses);

  // A thread of the process that runs no Python; a tid of no thread.
  r = reader.ReadThread(child_.pid(), 0x3ffffffe, NowNs(), 128, &frames);
  EXPECT_EQ(r.status, ThreadRead::kNoThreadState);
  EXPECT_TRUE(frames.empty());
  // Forgotten: probed again.
  reader.Forget(child_.pid());
  r = reader.ReadThread(child_.pid(), main_tid_, NowNs(), 128, &frames);
  EXPECT_TRUE(r.probed);
  EXPECT_EQ(r.status, ThreadRead::kOk);
}

// The native stacks gdb unwinds for the child's two threads, function names innermost first,
// by LWP; empty when gdb is not installed.
std::map<pid_t, std::vector<std::string>> GdbStacks(pid_t pid) {
  std::map<pid_t, std::vector<std::string>> stacks;
  if (access("/usr/bin/gdb", X_OK) != 0) {
    return stacks;
  }
  const std::string cmd = "/usr/bin/gdb -nx -p " + std::to_string(pid) +
                          " -batch -ex 'thread apply all bt' 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) {
    return stacks;
  }
  char buf[4096];
  pid_t lwp = 0;
  while (std::fgets(buf, sizeof(buf), f) != nullptr) {
    const std::string line(buf);
    if (line.starts_with("Thread ")) {
      const size_t at = line.find("(LWP ");
      lwp = at == std::string::npos ? 0 : std::atoi(line.c_str() + at + 5);
    } else if (line.starts_with("#") && lwp != 0) {
      // "#3  0x00007f... in FUNC (args) at file:line" or "#0  FUNC (args) at ...".
      size_t at = line.find(" in ");
      at = at == std::string::npos ? line.find_first_not_of(' ', line.find(' ')) : at + 4;
      stacks[lwp].push_back(line.substr(at, line.find(' ', at) - at));
    }
  }
  pclose(f);
  return stacks;
}

// Where gdb can unwind the interpreter, its eval-loop frames are exactly as many as the groups
// of Python frames the reader reports: the splice needs no correction on this interpreter.
TEST_F(RemoteRealTest, EvalLoopFramesOfTheRealNativeStackMatchTheGroups) {
  RemotePythonReader reader;
  std::vector<PythonFrame> main_frames;
  std::vector<PythonFrame> worker_frames;
  ThreadReadResult r;
  const auto marks = Marks();
  ASSERT_TRUE(ReadUntil(reader, child_.pid(), main_tid_, &main_frames, &r, [&](const auto& f) {
    return !f.empty() && f[0].function == "inner" && f[0].line == marks.at("inner");
  }));
  ASSERT_TRUE(ReadUntil(reader, child_.pid(), worker_tid_, &worker_frames, &r,
                        [&](const auto& f) { return f.size() > 2 && f[2].function == "w_inner"; }));
  const auto stacks = GdbStacks(child_.pid());
  WARPSCOPE_REQUIRE_PEER(!stacks.empty(), "gdb (the native stacks to compare with)",
                         "scripts/setup.sh --test (apt-get install gdb)");
  for (const auto& [tid, python] :
       {std::pair{main_tid_, &main_frames}, std::pair{worker_tid_, &worker_frames}}) {
    ASSERT_TRUE(stacks.contains(tid)) << tid;
    std::vector<NativeKind> kinds;
    std::string text;
    for (const std::string& fn : stacks.at(tid)) {
      kinds.push_back(ClassifyNativeSymbol(fn));
      text += fn + " ";
    }
    std::vector<SplicedFrame> spliced;
    const SpliceStats st = SpliceStacks(kinds, *python, &spliced);
    EXPECT_FALSE(st.mismatch) << "native: " << text << "\npython: " << Describe(*python);
    EXPECT_EQ(st.eval_frames, st.python_groups);
    EXPECT_GT(st.eval_frames, 0u) << text;
    std::string merged;
    for (const SplicedFrame& f : spliced) {
      merged += (f.python ? "py:" + (*python)[f.index].function : stacks.at(tid)[f.index]) + " ";
    }
    std::cout << "thread " << tid << " spliced: " << merged << "\n";
  }
}

// An exec keeps the pid and the start time but loads a new image: the interpreter's mapping
// moves (a shared libpython or a PIE executable under ASLR) and the reader probes again; a
// non-PIE executable (Debian's) maps at the same addresses, where the old layout stays right.
TEST_F(RemoteRealTest, AnExecIsNoticed) {
  const auto marks = Marks();
  RemotePythonReader reader;
  std::vector<PythonFrame> frames;
  ThreadReadResult r;
  auto at_inner = [&](const auto& f) {
    return f.size() == 4 && f[0].function == "inner" && f[0].line == marks.at("inner");
  };
  ASSERT_TRUE(ReadUntil(reader, child_.pid(), main_tid_, &frames, &r, at_inner));
  const RemotePython before = *reader.InterpreterOf(child_.pid());
  ASSERT_TRUE(child_.Send("exec\n"));
  pid_t main_tid = 0;
  pid_t worker_tid = 0;
  ASSERT_TRUE(child_.Ready(&main_tid, &worker_tid));
  EXPECT_EQ(main_tid, child_.pid());
  // Past the revalidation interval: the new image's frames, from a probe where it moved.
  uint64_t now = NowNs() + RemoteReaderOptions{}.revalidate_ns;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    r = reader.ReadThread(child_.pid(), main_tid, now, 128, &frames);
    now += RemoteReaderOptions{}.revalidate_ns;  // each read may revalidate
  } while (!(r.status == ThreadRead::kOk && at_inner(frames)) &&
           std::chrono::steady_clock::now() < deadline);
  ASSERT_TRUE(r.status == ThreadRead::kOk && at_inner(frames)) << Describe(frames);
  const RemotePython* after = reader.InterpreterOf(child_.pid());
  ASSERT_NE(after, nullptr);
  std::cout << "exec: interpreter mapped at " << std::hex << before.map_start << " then "
            << after->map_start << std::dec << ", " << reader.stats().process_changes
            << " change(s) seen\n";
  if (after->map_start != before.map_start) {
    EXPECT_GE(reader.stats().process_changes, 1u);
  }
  // The worker thread of the new image, by its new tid.
  ASSERT_TRUE(ReadUntil(reader, child_.pid(), worker_tid, &frames, &r, [](const auto& f) {
    return f.size() > 2 && f[2].function == "w_inner";
  })) << Describe(frames);
}

TEST_F(RemoteRealTest, AnExitedProcessIsNoProcess) {
  RemotePythonReader reader;
  std::vector<PythonFrame> frames;
  ThreadReadResult r;
  ASSERT_TRUE(ReadUntil(reader, child_.pid(), main_tid_, &frames, &r,
                        [](const auto& f) { return !f.empty(); }));
  kill(child_.pid(), SIGKILL);
  int status = 0;
  waitpid(child_.pid(), &status, 0);
  // Past the revalidation interval the process's start time is read again: gone.
  r = reader.ReadThread(child_.pid(), main_tid_, NowNs() + RemoteReaderOptions{}.revalidate_ns, 128,
                        &frames);
  EXPECT_EQ(r.status, ThreadRead::kNoProcess);
  EXPECT_TRUE(frames.empty());
}

}  // namespace
}  // namespace warpscope::pyframes
