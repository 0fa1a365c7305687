// SPDX-License-Identifier: Apache-2.0
// The process-wide side of libwarpscope_nccl.so: its settings, the Recorder, the flusher thread
// that sends records to the agent, and the exit and fork handlers (docs/design/nccl.md).
//
// Created at the first communicator's init (no global constructor does work) and never freed:
// NCCL's threads may still call in while the process exits.
//
// The flusher (thread "warpscope-nccl"): every flush_ms it connects when it can (Hello with
// component kNccl, then every communicator), drains the rings into NcclCollective frames, sends
// the counters about once a second, writes what the socket takes without waiting, and applies
// the agent's Control messages (kSetNcclProxyDetail, kEnable/kDisableCollection). Without an
// agent every frame is dropped and counted, and nothing is logged.
//
// Exit (atexit): one final pass (records, then the last counters, each written out for at most
// 0.7 s), waited for at most 2 s. Fork (pthread_atfork): the child forgets
// the flusher and the rings' contents and starts a flusher again at its next communicator init.
#ifndef WARPSCOPE_NCCL_PLUGIN_PLUGIN_H_
#define WARPSCOPE_NCCL_PLUGIN_PLUGIN_H_

#include <cstdint>

#include "nccl_plugin/abi.h"
#include "nccl_plugin/recorder.h"

namespace warpscope::nccl_plugin {

// NCCL's init, for every ABI version: the Recorder's context, or null (init fails: the plugin
// is disabled by WARPSCOPE_NCCL_ENABLED=0, or kMaxComms communicators exist).
Comm* PluginInit(uint64_t comm_id, const char* name, int nnodes, int nranks, int rank,
                 uint32_t abi_version, int* mask, abi::Logger log);
void PluginFinalize(Comm* comm);
// The recorder; valid once PluginInit has returned a context.
Recorder& PluginRecorder();

// An exception or unexpected state caught at an entry point (kCallbackErrors); any thread.
void CountCallbackError();

// Logs through NCCL's logger (shown with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=PROFILE) and to stderr
// when WARPSCOPE_NCCL_LOG=stderr; silent otherwise.
void Log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace warpscope::nccl_plugin

#endif  // WARPSCOPE_NCCL_PLUGIN_PLUGIN_H_
