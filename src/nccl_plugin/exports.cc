// SPDX-License-Identifier: Apache-2.0
// The tables NCCL looks up: ncclProfiler_v6, ncclProfiler_v5, ncclProfiler_v4 (abi.h). Each entry
// point turns its version's descriptor into a Descr and calls the Recorder; only init can fail.
// A last-resort catch keeps anything unexpected from reaching NCCL.
#include "nccl_plugin/abi.h"
#include "nccl_plugin/plugin.h"
#include "nccl_plugin/recorder.h"

namespace warpscope::nccl_plugin {
namespace {

template <typename D>
Descr Common(const D* in) {
  Descr d;
  d.type = in->type;
  d.parent = in->parent;
  if (d.type == abi::kEventColl) {
    d.func = in->coll.func;
    d.datatype = in->coll.datatype;
    d.algo = in->coll.algo;
    d.proto = in->coll.proto;
    d.seq_number = in->coll.seq_number;
    d.count = in->coll.count;
    d.root = in->coll.root;
    d.n_channels = in->coll.n_channels;
    d.n_warps = in->coll.n_warps;
  } else if (d.type == abi::kEventP2p) {
    d.func = in->p2p.func;
    d.datatype = in->p2p.datatype;
    d.count = in->p2p.count;
    d.root = in->p2p.peer;
    d.n_channels = in->p2p.n_channels;
  } else if (d.type == abi::kEventProxyOp) {
    d.proxy_pid = in->proxy_op.pid;
  } else if (d.type == abi::kEventKernelCh) {
    d.gpu_timer = in->kernel_ch.gpu_timer;
  }
  return d;
}

abi::Result InitV56(void** context, uint64_t comm_id, int* mask, const char* name, int nnodes,
                    int nranks, int rank, abi::Logger log, uint32_t version) noexcept {
  try {
    *context = PluginInit(comm_id, name, nnodes, nranks, rank, version, mask, log);
    return *context != nullptr ? abi::kSuccess : abi::kInternalError;
  } catch (...) {
    return abi::kInternalError;
  }
}

template <typename D>
abi::Result StartEvent(void* context, void** handle, D* descr) noexcept {
  try {
    *handle = nullptr;
    if (context != nullptr && descr != nullptr) {
      PluginRecorder().StartEvent(static_cast<Comm*>(context), handle, Common(descr));
    }
  } catch (...) {
    CountCallbackError();
  }
  return abi::kSuccess;
}

abi::Result StopEvent(void* handle) noexcept {
  try {
    if (handle != nullptr) {
      PluginRecorder().StopEvent(handle);
    }
  } catch (...) {
    CountCallbackError();
  }
  return abi::kSuccess;
}

abi::Result RecordState(void* handle, abi::EventState state, abi::StateArgs* args) noexcept {
  try {
    if (handle != nullptr) {
      PluginRecorder().RecordState(handle, state, args);
    }
  } catch (...) {
    CountCallbackError();
  }
  return abi::kSuccess;
}

abi::Result Finalize(void* context) noexcept {
  try {
    if (context != nullptr) {
      PluginFinalize(static_cast<Comm*>(context));
    }
  } catch (...) {
    CountCallbackError();
  }
  return abi::kSuccess;
}

}  // namespace
}  // namespace warpscope::nccl_plugin

namespace np = ::warpscope::nccl_plugin;
namespace abi = ::warpscope::nccl_plugin::abi;

extern "C" {

__attribute__((visibility("default"))) abi::ProfilerV6 ncclProfiler_v6 = {
    "warpscope",
    [](void** context, uint64_t comm_id, int* mask, const char* name, int nnodes, int nranks,
       int rank, abi::Logger log) {
      return np::InitV56(context, comm_id, mask, name, nnodes, nranks, rank, log, 6);
    },
    &np::StartEvent<abi::EventDescrV6>,
    &np::StopEvent,
    &np::RecordState,
    &np::Finalize,
};

__attribute__((visibility("default"))) abi::ProfilerV5 ncclProfiler_v5 = {
    "warpscope",
    [](void** context, uint64_t comm_id, int* mask, const char* name, int nnodes, int nranks,
       int rank, abi::Logger log) {
      return np::InitV56(context, comm_id, mask, name, nnodes, nranks, rank, log, 5);
    },
    &np::StartEvent<abi::EventDescrV5>,
    &np::StopEvent,
    &np::RecordState,
    &np::Finalize,
};

// v4 (NCCL 2.27): the communicator's hash stands for its id, and comes after the name.
__attribute__((visibility("default"))) abi::ProfilerV4 ncclProfiler_v4 = {
    "warpscope",
    [](void** context, int* mask, const char* name, uint64_t comm_hash, int nnodes, int nranks,
       int rank, abi::Logger log) {
      return np::InitV56(context, comm_hash, mask, name, nnodes, nranks, rank, log, 4);
    },
    &np::StartEvent<abi::EventDescrV4>,
    &np::StopEvent,
    &np::RecordState,
    &np::Finalize,
};

}  // extern "C"
