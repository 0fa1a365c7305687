// SPDX-License-Identifier: Apache-2.0
// Reading the Python frames of a thread of another process, for a CPU profiler's sample: finds
// the process's interpreter (remote_process.h), the thread's state by its native tid
// (remote_threads.h) and walks its frames with FrameWalker over process_vm_readv. The target
// keeps running: its frame chain can change during the read, which the walk survives (type
// checks, bounds, cycle detection) at the price of an occasional wrong or short stack
// (docs/design/python-frames.md "Other processes"). Caches per process (identity: pid, start
// time and the interpreter's mapping), per thread (tid -> thread state, revalidated with one
// read) and per process a CodeCache. Agent side only (allocates); not thread-safe: one reader
// per sampling thread.
#ifndef WARPSCOPE_PYFRAMES_REMOTE_READER_H_
#define WARPSCOPE_PYFRAMES_REMOTE_READER_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "pyframes/frame_reader.h"
#include "pyframes/remote_process.h"
#include "pyframes/splice.h"

namespace warpscope::pyframes {

struct RemoteReaderOptions {
  std::string proc_root = "/proc";
  size_t max_processes = 256;  // processes cached; the least recently read is dropped
  // A known process's identity (start time, interpreter mapping) is rechecked this often.
  uint64_t revalidate_ns = 1'000'000'000;
  // A process without an interpreter is probed again after this long (it may load one).
  uint64_t not_python_recheck_ns = 10'000'000'000;
  // A tid without a thread state makes the thread lists be walked again at most this often.
  uint64_t thread_rescan_ns = 200'000'000;
};

// Reads through `next` a whole 4 KiB page at a time and serves later reads of the same pages
// from its copy until Reset(): within one walk, 3.11+ frames (contiguous in the thread's data
// stack), the thread state and the code objects of a recursion cost one process_vm_readv per
// page instead of one per structure, and the frames are copied closer to one instant. Ranges
// over two pages are read directly; a page that cannot be read whole (the range's neighbour is
// unmapped) falls back to a direct read. Fixed size (16 pages).
class PageCacheReader final : public MemoryReader {
 public:
  static constexpr size_t kPage = 4096;
  static constexpr size_t kPages = 16;
  explicit PageCacheReader(MemoryReader& next) : next_(next) {}
  [[nodiscard]] bool Read(uint64_t addr, void* dst, size_t len) override;
  void Reset() { used_ = 0; }

 private:
  const uint8_t* Page(uint64_t page);

  MemoryReader& next_;
  size_t used_ = 0;
  size_t next_victim_ = 0;
  uint64_t addr_[kPages] = {};
  uint8_t data_[kPages][kPage];
};

// Collects frames into a reused vector and turns eval-loop boundaries into eval_entry marks;
// an eval-loop call none of whose frames could be read becomes an "<unreadable>" placeholder
// when Python frames follow it (a trailing one is dropped: 3.14's base frame of the thread, or
// the outermost entry frame, runs no Python of its own).
class PythonFrameCollector final : public FrameSink {
 public:
  PythonFrameCollector(std::vector<PythonFrame>* frames, size_t max) : frames_(frames), max_(max) {}
  bool OnFrame(std::string_view function, std::string_view file, uint32_t line) override {
    for (; pending_empty_ > 0 && n_ < max_; --pending_empty_) {
      PythonFrame& f = Next();
      f.function = "<unreadable>";
      f.file.clear();
      f.line = 0;
      f.eval_entry = true;
      f.unreadable = true;
    }
    pending_empty_ = 0;
    if (n_ >= max_) {
      return false;
    }
    PythonFrame& f = Next();
    f.function.assign(function);
    f.file.assign(file);
    f.line = line;
    f.eval_entry = false;
    f.unreadable = false;
    ++in_group_;
    return n_ < max_;
  }
  void OnEvalBoundary() override {
    if (in_group_ > 0) {
      (*frames_)[n_ - 1].eval_entry = true;
    } else {
      ++pending_empty_;
    }
    in_group_ = 0;
  }
  // Trims `frames` to the frames collected.
  void Finish() { frames_->resize(n_); }

 private:
  PythonFrame& Next() {
    if (frames_->size() <= n_) {
      frames_->emplace_back();
    }
    return (*frames_)[n_++];
  }

  std::vector<PythonFrame>* frames_;
  size_t max_;
  size_t n_ = 0;
  size_t in_group_ = 0;
  size_t pending_empty_ = 0;
};

enum class ThreadRead {
  kOk,             // frames read (possibly none: the thread is between Python calls)
  kNoProcess,      // the process is gone or its memory may not be read
  kNotPython,      // no CPython interpreter in the process
  kUnsupported,    // a CPython whose layout is unknown (3.8, 3.15+, free-threaded)
  kNoThreadState,  // a Python process, but this thread has no thread state (never ran Python)
};
const char* ThreadReadName(ThreadRead r);

struct ThreadReadResult {
  ThreadRead status = ThreadRead::kNoProcess;
  WalkStats walk;
  uint32_t memory_reads = 0;       // process_vm_readv calls made for this read, probing included
  bool probed = false;             // this read probed the process (first read, exec, recheck)
  bool listed_threads = false;     // this read walked the thread lists
  uint32_t code_cache_misses = 0;  // code objects decoded anew (names and line table read)
};

class RemotePythonReader {
 public:
  struct Stats {
    uint64_t reads = 0;
    uint64_t probes = 0;
    uint64_t thread_list_walks = 0;
    uint64_t tstate_cache_hits = 0;
    uint64_t tstate_stale = 0;     // a cached thread state that no longer belonged to its tid
    uint64_t torn_walks = 0;       // walks that broke off or failed the first code check
    uint64_t process_changes = 0;  // a pid found with another start time or interpreter
    uint64_t elf_files_read = 0;   // by probes; files known to hold no interpreter are skipped
  };

  explicit RemotePythonReader(RemoteReaderOptions options = {});
  ~RemotePythonReader();
  RemotePythonReader(const RemotePythonReader&) = delete;
  RemotePythonReader& operator=(const RemotePythonReader&) = delete;

  // Reads the Python frames (innermost first, at most `max_frames`) of thread `tid` of process
  // `pid` into `frames` (reused: its strings keep their capacity). `now_ns`: the caller's
  // monotonic clock, for the caches' timeouts.
  ThreadReadResult ReadThread(pid_t pid, pid_t tid, uint64_t now_ns, size_t max_frames,
                              std::vector<PythonFrame>* frames);

  // Drops what is known of `pid` (the caller saw it exit or exec).
  void Forget(pid_t pid);

  // The interpreter found in `pid`, nullptr when none (yet).
  const RemotePython* InterpreterOf(pid_t pid) const;

  const Stats& stats() const { return stats_; }
  size_t cached_processes() const { return processes_.size(); }

 private:
  struct Process;
  Process& Lookup(pid_t pid, uint64_t now_ns, ThreadReadResult* r);
  bool StillTheSame(const Process& p);

  RemoteReaderOptions options_;
  std::unordered_map<pid_t, std::unique_ptr<Process>> processes_;
  ProbeFileCache files_;  // executables and libraries known to hold no interpreter
  Stats stats_;
};

}  // namespace warpscope::pyframes

#endif  // WARPSCOPE_PYFRAMES_REMOTE_READER_H_
