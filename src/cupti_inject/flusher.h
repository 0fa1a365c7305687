// SPDX-License-Identifier: Apache-2.0
// The flusher thread ("warpscope-cupti", every signal blocked): the one thread of the library
// that talks to the agent (docs/design/cuda-profiler.md, "Rings and the flusher"). Every 20 ms,
// or when CUPTI completes a buffer, it connects (with backoff), reads the agent's controls,
// drains the per-thread rings, decodes the completed activity buffers, joins kernels to their
// launches, runs PC sampling, and writes what the socket takes without blocking; every flush
// period it also flushes CUPTI and sends the GPU-time aggregates and the counters.
//
// Threads: the functions below may be called from any thread and never wait for the flusher,
// except StopFlusher (the exit handler), which waits for its final pass up to a timeout. The
// flusher's own state is its thread's alone; what it shares is in state.h.
// Ownership: one flusher per process generation; a fork child abandons the parent's (it may have
// been mid-update) and builds a new one at its first launch. Neither is ever freed.
#ifndef WARPSCOPE_CUPTI_INJECT_FLUSHER_H_
#define WARPSCOPE_CUPTI_INJECT_FLUSHER_H_

#include <chrono>

namespace warpscope::cupti_inject {

// Starts the flusher thread unless it runs already (in a fork child: at its first launch).
// Takes start_mu, which the fork handlers hold across fork(). A failure to start is counted
// (kCallbackErrors) and not retried.
void StartFlusher();

// Wakes the flusher before its next 20 ms tick (a completed activity buffer is waiting). Takes
// flusher_mu for an instant.
void WakeFlusher();

// Asks the flusher for its final pass (connect once more if needed, send everything, up to
// 500 ms of writing, close our side) and waits for it at most `timeout`.
void StopFlusher(std::chrono::milliseconds timeout);

// Turns a "Python frames are off" notice raised on a launch thread (TakePythonNotice) into a
// notice for the agent (Notify). The flusher calls it on every pass.
void PostPythonNotice();

// In a fork child, where the flusher thread does not exist: its mutex and condition variable may
// have been in use when the parent forked, so both are rebuilt, and it counts as not started.
void ForgetFlusherInForkChild();

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_FLUSHER_H_
