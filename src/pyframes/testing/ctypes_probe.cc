// SPDX-License-Identifier: Apache-2.0
// libpyframes_ctypes_probe.so: loaded by real_interpreter_test.py with ctypes, which releases
// the GIL around every foreign call. Reads the calling thread's Python frames with the frame
// reader, without the GIL and without calling the interpreter, and returns them as text lines
// "function\tfile\tline" (innermost first) for the script to compare with sys._getframe().
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "pyframes/frame_reader.h"
#include "pyframes/in_process.h"
#include "pyframes/memory_reader.h"

namespace {

using warpscope::pyframes::CodeCache;
using warpscope::pyframes::FrameSink;
using warpscope::pyframes::FrameWalker;
using warpscope::pyframes::InProcessPython;
using warpscope::pyframes::LocalMemoryReader;
using warpscope::pyframes::MemoryReader;
using warpscope::pyframes::ProbeInProcess;
using warpscope::pyframes::ProbeResult;
using warpscope::pyframes::ProcessMemoryReader;

class TextSink final : public FrameSink {
 public:
  TextSink(char* buf, int len) : buf_(buf), len_(len) {}
  bool OnFrame(std::string_view function, std::string_view file, uint32_t line) override {
    const std::string s =
        std::string(function) + "\t" + std::string(file) + "\t" + std::to_string(line) + "\n";
    if (used_ + static_cast<int>(s.size()) + 1 > len_) {
      return false;
    }
    std::memcpy(buf_ + used_, s.data(), s.size());
    used_ += static_cast<int>(s.size());
    buf_[used_] = '\0';
    return true;
  }

 private:
  char* buf_;
  int len_;
  int used_ = 0;
};

CodeCache g_cache;  // the script calls from one thread at a time

int Read(int mode, int max_frames, char* buf, int len, int* stats) {
  buf[0] = '\0';
  InProcessPython py;
  const ProbeResult r = ProbeInProcess(&py);
  if (r != ProbeResult::kReady) {
    return r == ProbeResult::kNoPython ? -1 : -2;
  }
  void* tstate = py.this_thread_state();
  if (tstate == nullptr) {
    return 0;
  }
  LocalMemoryReader local;
  ProcessMemoryReader self(getpid());
  MemoryReader& mem = mode == 1 ? static_cast<MemoryReader&>(self) : local;
  TextSink sink(buf, len);
  const auto st = FrameWalker::Walk(py.interp, mem, reinterpret_cast<uint64_t>(tstate), g_cache,
                                    static_cast<size_t>(max_frames), sink);
  if (stats != nullptr) {
    stats[0] = static_cast<int>(st.skipped);
    stats[1] = static_cast<int>(st.not_python);
    stats[2] = st.truncated ? 1 : 0;
    stats[3] = static_cast<int>(g_cache.hits());
    stats[4] = static_cast<int>(g_cache.misses());
  }
  return static_cast<int>(st.frames);
}

}  // namespace

extern "C" {

// Frames of the calling thread: mode 0 reads with memcpy, 1 with process_vm_readv on itself.
// Returns the frame count, -1 without an interpreter, -2 for an unsupported one. stats (5 ints,
// may be NULL): skipped, not_python, truncated, cache hits, cache misses.
__attribute__((visibility("default"))) int ws_read_frames(int mode, int max_frames, char* buf,
                                                          int len, int* stats) {
  return Read(mode, max_frames, buf, len, stats);
}

// PyGILState_Check() as seen by the calling thread (0 inside a ctypes call: the GIL is free).
__attribute__((visibility("default"))) int ws_gil_held() {
  auto* check = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "PyGILState_Check"));
  return check != nullptr ? check() : -1;
}

// The frame count read on a new thread that never ran Python (expected 0).
__attribute__((visibility("default"))) int ws_frames_on_new_thread() {
  int n = -100;
  std::thread([&n] {
    char buf[256];
    n = Read(0, 64, buf, sizeof(buf), nullptr);
  }).join();
  return n;
}

// "3.11" etc. of the interpreter the reader detected, and its layout status.
__attribute__((visibility("default"))) int ws_detected_version(int* major, int* minor) {
  InProcessPython py;
  const ProbeResult r = ProbeInProcess(&py);
  *major = py.major;
  *minor = py.minor;
  return static_cast<int>(r);
}

}  // extern "C"
