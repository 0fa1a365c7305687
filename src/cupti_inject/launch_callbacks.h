// SPDX-License-Identifier: Apache-2.0
// The CUPTI callback the library subscribes with: what runs on the application's threads
// (docs/design/cuda-profiler.md, "The hot path").
//
// Threads: Callback runs on whichever application thread enters a launch API (or creates or
// destroys a context, or loads a module). It never blocks and never throws:
// - A launch returns at once when the library is passive or collection is off. Otherwise it
//   de-duplicates the runtime launch and its nested driver launch, checks the thread's token
//   bucket, and for an admitted launch captures the stack and writes it (when not sent yet on
//   this connection) and a LaunchRecord into the thread's ring. A full ring drops the record and
//   counts it. Nothing on this path takes a lock, allocates or makes a system call other than
//   clock_gettime (vDSO) and the unwinder's, except on a thread's first launch (it claims a slot:
//   allocates the slot's ring once, reads its tid and stack bounds) and on the first launch of a
//   fork child (it starts the flusher).
// - Resource callbacks record contexts (ctx_mu) and, while PC sampling is possible (even before
//   it is switched on), copy loaded cubins (cubin_mu, capped); both mutexes are held only for
//   the copy.
// Ownership: a thread owns its slot from its first launch to its exit (a thread-local handle
// releases it); the flusher then drains and frees it.
#ifndef WARPSCOPE_CUPTI_INJECT_LAUNCH_CALLBACKS_H_
#define WARPSCOPE_CUPTI_INJECT_LAUNCH_CALLBACKS_H_

#include "cupti/abi.h"

namespace warpscope::cupti_inject {

namespace abi = ::warpscope::cupti::abi;

// abi::CUpti_CallbackFunc. Exceptions are caught and counted (kCallbackErrors).
void Callback(void* userdata, abi::CUpti_CallbackDomain domain, abi::CUpti_CallbackId cbid,
              const void* cbdata) noexcept;

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_LAUNCH_CALLBACKS_H_
