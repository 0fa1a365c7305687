// SPDX-License-Identifier: Apache-2.0
// What the library does when the process exits or forks (docs/design/cuda-profiler.md, "Exit"
// and "Fork").
//
// - Exit (atexit): in the process that set CUPTI up, cuptiActivityFlushAll(FORCED); then the
//   flusher's final pass, waited for at most 2 s. Runs on the exiting thread.
// - Fork (pthread_atfork): the prepare handler takes the library's mutexes (state.h gives the
//   order) so that the child finds them consistent; the parent releases them. In the child only
//   the forking thread exists: the flusher is forgotten (restarted at the child's first launch,
//   which connects with the child's own Hello), rings are emptied and slots freed, activity
//   buffers in flight go back to the pool unread, contexts are forgotten, and the generation is
//   bumped so that every thread handle claims a new slot. The handlers take no lock that an
//   application thread could hold across the fork except the library's own.
#ifndef WARPSCOPE_CUPTI_INJECT_PROCESS_HOOKS_H_
#define WARPSCOPE_CUPTI_INJECT_PROCESS_HOOKS_H_

namespace warpscope::cupti_inject {

// Registers the exit and fork handlers; once, from InitializeInjection, after the state exists.
void InstallProcessHooks();

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_PROCESS_HOOKS_H_
