// SPDX-License-Identifier: Apache-2.0
// The cost of reading another process's Python frames, as the CPU profiler does after a
// sample: a child CPython (argv[1]'s --python=, default /usr/bin/python3) recurses to the
// depth and blocks reading stdin; the benchmark reads its main thread. docs/benchmarks.md,
// "Python frames of other processes".
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pyframes/remote_reader.h"
#include "pyframes/remote_threads.h"
#include "pyframes/splice.h"

extern char** environ;

namespace warpscope::pyframes {
namespace {

std::string g_python = "/usr/bin/python3";

// A child at `depth` Python frames (the module and depth - 1 calls of r), blocked in read().
class Child {
 public:
  explicit Child(int depth) {
    const std::string code =
        "import sys\n"
        "def r(n):\n"
        "    if n == 0:\n"
        "        print('ready', flush=True)\n"
        "        sys.stdin.read()\n"
        "        return\n"
        "    r(n - 1)\n"
        "r(" +
        std::to_string(depth - 2) + ")\n";
    int in[2];
    int out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
      return;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    // Quiet: a child the benchmark library starts and ends before it printed complains of the
    // closed pipe; one that fails shows as the benchmark's error.
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    std::vector<std::string> args = {g_python, "-c", code};
    std::vector<char*> argv;
    for (std::string& a : args) {
      argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, g_python.c_str(), &fa, nullptr, argv.data(), environ) != 0) {
      pid_ = -1;
    }
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    char buf[16];
    pollfd p{out[0], POLLIN, 0};
    ready_ = pid_ > 0 && poll(&p, 1, 30000) == 1 && read(out[0], buf, sizeof(buf)) > 0;
    stdout_ = out[0];
  }
  ~Child() {
    close(stdin_);  // the child returns from read() and exits
    close(stdout_);
    if (pid_ > 0) {
      int status = 0;
      waitpid(pid_, &status, 0);
    }
  }
  bool ready() const { return ready_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int stdout_ = -1;
  bool ready_ = false;
};

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Reads until the child's innermost frame is the one in read() (the walk sees `depth` frames).
bool WaitForDepth(RemotePythonReader& reader, pid_t pid, size_t depth,
                  std::vector<PythonFrame>* frames) {
  for (int i = 0; i < 100000; ++i) {
    if (reader.ReadThread(pid, pid, NowNs(), 128, frames).status == ThreadRead::kOk &&
        frames->size() == depth) {
      return true;
    }
  }
  return false;
}

// Warm: the process, the thread state and every code object are cached.
void BM_RemoteReadWarm(benchmark::State& state) {
  const auto depth = static_cast<size_t>(state.range(0));
  Child child(static_cast<int>(depth));
  RemotePythonReader reader;
  std::vector<PythonFrame> frames;
  if (!child.ready() || !WaitForDepth(reader, child.pid(), depth, &frames)) {
    state.SkipWithError("child Python not ready");
    return;
  }
  uint64_t reads = 0;
  uint64_t misses = 0;
  uint64_t n = 0;
  const uint64_t now = NowNs();
  for (auto _ : state) {
    const ThreadReadResult r = reader.ReadThread(child.pid(), child.pid(), now, 128, &frames);
    reads += r.memory_reads;
    misses += r.code_cache_misses;
    ++n;
    benchmark::DoNotOptimize(frames.data());
  }
  state.counters["frames"] = static_cast<double>(frames.size());
  state.counters["vm_reads"] = static_cast<double>(reads) / static_cast<double>(n);
  state.counters["code_misses"] = static_cast<double>(misses) / static_cast<double>(n);
  state.counters["probes"] = static_cast<double>(reader.stats().probes);
  state.counters["torn"] = static_cast<double>(reader.stats().torn_walks);
}
BENCHMARK(BM_RemoteReadWarm)->Arg(10)->Arg(50)->Unit(benchmark::kMicrosecond);

// Cold: a new reader for every read: the probe (/proc/<pid>/maps, the interpreter's ELF
// symbols), the thread-list walk and every code object decoded.
void BM_RemoteReadCold(benchmark::State& state) {
  const auto depth = static_cast<size_t>(state.range(0));
  Child child(static_cast<int>(depth));
  std::vector<PythonFrame> frames;
  {
    RemotePythonReader reader;
    if (!child.ready() || !WaitForDepth(reader, child.pid(), depth, &frames)) {
      state.SkipWithError("child Python not ready");
      return;
    }
  }
  uint64_t reads = 0;
  uint64_t n = 0;
  for (auto _ : state) {
    RemotePythonReader reader;
    const ThreadReadResult r = reader.ReadThread(child.pid(), child.pid(), NowNs(), 128, &frames);
    reads += r.memory_reads;
    ++n;
  }
  state.counters["frames"] = static_cast<double>(frames.size());
  state.counters["vm_reads"] = static_cast<double>(reads) / static_cast<double>(n);
}
BENCHMARK(BM_RemoteReadCold)->Arg(10)->Arg(50)->Unit(benchmark::kMicrosecond);

// The process and thread state are cached but the code objects are not (a new code cache
// per read): the cost of a sample in code not seen before.
void BM_RemoteReadNewCode(benchmark::State& state) {
  const auto depth = static_cast<size_t>(state.range(0));
  Child child(static_cast<int>(depth));
  RemotePythonReader reader;
  std::vector<PythonFrame> frames;
  if (!child.ready() || !WaitForDepth(reader, child.pid(), depth, &frames)) {
    state.SkipWithError("child Python not ready");
    return;
  }
  const RemotePython* py = reader.InterpreterOf(child.pid());
  ProcessMemoryReader mem(child.pid());
  uint64_t tstate = 0;
  {
    ThreadListStats ls;
    uint32_t offset = 0;
    std::vector<RemoteThreadState> list;
    ListThreadStates(*py, mem, &offset, &list, &ls);
    for (const RemoteThreadState& t : list) {
      if (t.native_tid == child.pid()) {
        tstate = t.tstate;
      }
    }
  }
  auto cache = std::make_unique<CodeCache>();
  auto paged = std::make_unique<PageCacheReader>(mem);  // as ReadThread reads
  for (auto _ : state) {
    cache->Clear();
    paged->Reset();
    PythonFrameCollector sink(&frames, 128);
    FrameWalker::Walk(py->interp, *paged, tstate, *cache, 128, sink);
    sink.Finish();
  }
  state.counters["frames"] = static_cast<double>(frames.size());
}
BENCHMARK(BM_RemoteReadNewCode)->Arg(10)->Arg(50)->Unit(benchmark::kMicrosecond);

// The splice of a 50-frame Python stack into a 120-frame native one (10 eval-loop calls).
void BM_Splice(benchmark::State& state) {
  std::vector<NativeKind> native(120, NativeKind::kOther);
  std::vector<PythonFrame> python(50);
  for (int i = 0; i < 10; ++i) {
    native[10 + i * 10] = NativeKind::kEvalLoop;
    python[i * 5 + 4].eval_entry = true;
  }
  std::vector<SplicedFrame> out;
  for (auto _ : state) {
    benchmark::DoNotOptimize(SpliceStacks(native, python, &out));
  }
}
BENCHMARK(BM_Splice);

}  // namespace
}  // namespace warpscope::pyframes

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--python=", 9) == 0) {
      warpscope::pyframes::g_python = argv[i] + 9;
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
