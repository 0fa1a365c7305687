// SPDX-License-Identifier: Apache-2.0
// The thread states of another process's interpreter: _PyRuntime -> interpreters -> each
// interpreter's thread list, with each thread state's native thread id (3.11+: the
// thread state's native_thread_id; 3.9/3.10: the kernel tid glibc keeps in the thread's
// struct pthread, which the thread state's thread_id = pthread_self() points at, at an offset
// found once per process from the main thread, whose tid is the pid). Bounded and cycle-safe:
// the target runs while it is read. Agent side only (allocates).
#ifndef WARPSCOPE_PYFRAMES_REMOTE_THREADS_H_
#define WARPSCOPE_PYFRAMES_REMOTE_THREADS_H_

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "pyframes/memory_reader.h"
#include "pyframes/remote_process.h"

namespace warpscope::pyframes {

inline constexpr size_t kMaxInterpreters = 64;
inline constexpr size_t kMaxThreadStates = 4096;  // per process, all interpreters together

struct RemoteThreadState {
  uint64_t tstate = 0;
  int64_t native_tid = 0;  // 0 when unknown
};

struct ThreadListStats {
  uint32_t interpreters = 0;
  uint32_t thread_states = 0;
  uint32_t memory_reads = 0;
  bool truncated = false;   // a limit or a cycle stopped the walk
  bool unreadable = false;  // a list pointer could not be read (torn or exited)
};

// 3.9/3.10: the offset of the kernel tid inside glibc's struct pthread, found by looking for
// the pid in the main thread's struct (the thread state whose pthread struct holds the pid at
// an offset that gives every other thread a plausible, distinct tid). 0 when not found.
uint32_t CalibratePthreadTidOffset(MemoryReader& mem, pid_t pid,
                                   const std::vector<uint64_t>& pthread_ids);

// Lists the thread states of every interpreter of `py`. For 3.9/3.10, `pthread_tid_offset` is
// the calibrated offset (0: calibrate now and store it there; native tids stay 0 when that
// fails).
void ListThreadStates(const RemotePython& py, MemoryReader& mem, uint32_t* pthread_tid_offset,
                      std::vector<RemoteThreadState>* out, ThreadListStats* stats);

// The native tid of the thread state at `tstate` (one or two reads), 0 when unreadable. Used to
// revalidate a cached tid -> thread state entry.
int64_t NativeTidOf(const RemotePython& py, MemoryReader& mem, uint64_t tstate,
                    uint32_t pthread_tid_offset);

}  // namespace warpscope::pyframes

#endif  // WARPSCOPE_PYFRAMES_REMOTE_THREADS_H_
