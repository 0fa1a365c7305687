// SPDX-License-Identifier: Apache-2.0
// Our own declarations of NCCL's profiler plugin ABI, versions 4, 5 and 6 (NCCL's plugin README
// asks plugins to carry their own copy; nothing here includes an NCCL header). Facts: NVIDIA/nccl
// plugins/profiler/example/nccl/{profiler.h,profiler_v4.h,profiler_v5.h,profiler_v6.h} at
// v2.30.7-1, checked equal to src/include/plugin/profiler/ at the tag that introduced each
// version: v4 at v2.27.3-1, v5 at v2.28.3-1, v6 at v2.29.2-1. Layouts are pinned by
// abi_test.cc (offsets and sizes on LP64 Linux, the only target).
//
// NCCL dlopens the plugin, then looks up the table symbols newest first ("ncclProfiler_v6", v5,
// v4, ...; NCCL 2.27 starts at v4, 2.28 at v5, 2.29-2.30 at v6) and calls `init` once per
// communicator; only `init` may fail (NCCL then disables the plugin for that communicator).
#ifndef WARPSCOPE_NCCL_PLUGIN_ABI_H_
#define WARPSCOPE_NCCL_PLUGIN_ABI_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace warpscope::nccl_plugin::abi {

// ncclResult_t: 0 success, 3 internal error (the only two a plugin returns).
using Result = int;
inline constexpr Result kSuccess = 0;
inline constexpr Result kInternalError = 3;

// ncclDebugLogger_t: (level, subsystem flags, file, line, printf format, ...). Levels: 2 warn,
// 3 info; subsystem NCCL_PROFILE is 1 << 14.
using Logger = void (*)(int level, unsigned long flags, const char* file, int line,
                        const char* fmt, ...);
inline constexpr int kLogWarn = 2;
inline constexpr int kLogInfo = 3;
inline constexpr unsigned long kLogSubsysProfile = 1ul << 14;

// Event types: the descriptor's `type` and the bits of the activation mask.
enum : uint64_t {
  kEventGroup = 1u << 0,
  kEventColl = 1u << 1,
  kEventP2p = 1u << 2,
  kEventProxyOp = 1u << 3,
  kEventProxyStep = 1u << 4,
  kEventProxyCtrl = 1u << 5,
  kEventKernelCh = 1u << 6,
  kEventNetPlugin = 1u << 7,
  kEventGroupApi = 1u << 8,       // v5
  kEventCollApi = 1u << 9,        // v5
  kEventP2pApi = 1u << 10,        // v5
  kEventKernelLaunch = 1u << 11,  // v5
  kEventCeColl = 1u << 12,        // v6
  kEventCeSync = 1u << 13,        // v6
  kEventCeBatch = 1u << 14,       // v6
};

// ncclProfilerEventState_t (one enum for every version).
enum EventState : int {
  kProxyStepSendGpuWait = 8,
  kProxyStepSendWait = 9,
  kProxyStepRecvWait = 10,
  kProxyStepRecvFlushWait = 11,
  kProxyStepRecvGpuWait = 12,
  kProxyCtrlIdle = 13,
  kProxyCtrlActive = 14,
  kProxyCtrlSleep = 15,
  kProxyCtrlWakeup = 16,
  kProxyCtrlAppend = 17,
  kProxyCtrlAppendEnd = 18,
  kProxyOpInProgress = 19,
  kProxyStepSendPeerWait = 20,
  kNetPluginUpdate = 21,
  kKernelChStop = 22,
  kGroupStartApiStop = 23,   // v5
  kGroupEndApiStart = 24,    // v5
  kCeCollStart = 25,         // v6
  kCeCollComplete = 26,
  kCeSyncStart = 27,
  kCeSyncComplete = 28,
  kCeBatchStart = 29,
  kCeBatchComplete = 30,
};

// The union members every version shares, in their order.
struct ProxyOpDescr {
  pid_t pid;           // the process that started the parent: another one's under PXN
  uint8_t channel_id;
  int peer;
  int n_steps;
  int chunk_size;
  int is_send;
};
struct ProxyStepDescr {
  int step;
};
struct KernelChDescr {
  uint8_t channel_id;
  uint64_t gpu_timer;  // %globaltimer ns at the channel's start
};
struct NetPluginDescr {
  int64_t id;
  void* data;
};

// --- v4 (NCCL 2.27) ----------------------------------------------------------------------------
struct CollDescrV4 {
  uint64_t seq_number;
  const char* func;
  const void* send_buff;
  void* recv_buff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t n_channels;
  uint8_t n_warps;
  const char* algo;
  const char* proto;
};
struct P2pDescrV4 {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t n_channels;
};
struct EventDescrV4 {
  uint8_t type;
  void* parent;  // the plugin's handle of the parent event, or null
  int rank;
  union {
    CollDescrV4 coll;
    P2pDescrV4 p2p;
    ProxyOpDescr proxy_op;
    ProxyStepDescr proxy_step;
    KernelChDescr kernel_ch;
    NetPluginDescr net_plugin;
  };
};

// Arguments of recordEventState (the same union in v4, v5 and v6).
union StateArgs {
  struct {
    size_t trans_size;
  } proxy_step;
  struct {
    int appended_proxy_ops;
  } proxy_ctrl;
  struct {
    void* data;
  } net_plugin;
  struct {
    uint64_t gpu_timer;  // %globaltimer ns at the channel's stop (kKernelChStop)
  } kernel_ch;
};

struct ProfilerV4 {
  const char* name;
  Result (*init)(void** context, int* activation_mask, const char* comm_name, uint64_t comm_hash,
                 int n_nodes, int nranks, int rank, Logger log);
  Result (*start_event)(void* context, void** handle, EventDescrV4* descr);
  Result (*stop_event)(void* handle);
  Result (*record_event_state)(void* handle, EventState state, StateArgs* args);
  Result (*finalize)(void* context);
};

// --- v5 (NCCL 2.28) ----------------------------------------------------------------------------
struct GroupApiDescr {
  bool graph_captured;
  int group_depth;
};
struct CollApiDescr {
  const char* func;
  size_t count;
  const char* datatype;
  int root;
  void* stream;
  bool graph_captured;
};
struct P2pApiDescr {
  const char* func;
  size_t count;
  const char* datatype;
  void* stream;
  bool graph_captured;
};
struct KernelLaunchDescr {
  void* stream;
};
struct CollDescrV5 {
  uint64_t seq_number;
  const char* func;
  const void* send_buff;
  void* recv_buff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t n_channels;
  uint8_t n_warps;
  const char* algo;
  const char* proto;
  void* parent_group;
};
struct P2pDescrV5 {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t n_channels;
  void* parent_group;
};
struct EventDescrV5 {
  uint64_t type;
  void* parent;
  int rank;
  union {
    GroupApiDescr group_api;
    CollApiDescr coll_api;
    P2pApiDescr p2p_api;
    KernelLaunchDescr kernel_launch;
    CollDescrV5 coll;
    P2pDescrV5 p2p;
    ProxyOpDescr proxy_op;
    ProxyStepDescr proxy_step;
    KernelChDescr kernel_ch;
    NetPluginDescr net_plugin;
  };
};

struct ProfilerV5 {
  const char* name;
  Result (*init)(void** context, uint64_t comm_id, int* activation_mask, const char* comm_name,
                 int n_nodes, int nranks, int rank, Logger log);
  Result (*start_event)(void* context, void** handle, EventDescrV5* descr);
  Result (*stop_event)(void* handle);
  Result (*record_event_state)(void* handle, EventState state, StateArgs* args);
  Result (*finalize)(void* context);
};

// --- v6 (NCCL 2.29, 2.30): v5 plus copy-engine collectives -------------------------------------
struct CeCollDescr {
  uint64_t seq_number;
  const char* func;
  const void* send_buff;
  void* recv_buff;
  size_t count;
  int root;
  const char* datatype;
  const char* sync_strategy;
  bool intra_batch_sync;
  uint32_t batch_size;
  uint32_t num_batches;
  uint32_t ce_seq_num;
  void* stream;
};
struct CeSyncDescr {
  bool is_complete;
  int nranks;
};
struct CeBatchDescr {
  int num_ops;
  size_t total_bytes;
  bool use_intra_sync;
};
struct EventDescrV6 {
  uint64_t type;
  void* parent;
  int rank;
  union {
    GroupApiDescr group_api;
    CollApiDescr coll_api;
    P2pApiDescr p2p_api;
    KernelLaunchDescr kernel_launch;
    CollDescrV5 coll;
    P2pDescrV5 p2p;
    ProxyOpDescr proxy_op;
    ProxyStepDescr proxy_step;
    KernelChDescr kernel_ch;
    NetPluginDescr net_plugin;
    CeCollDescr ce_coll;
    CeSyncDescr ce_sync;
    CeBatchDescr ce_batch;
  };
};

struct ProfilerV6 {
  const char* name;
  Result (*init)(void** context, uint64_t comm_id, int* activation_mask, const char* comm_name,
                 int n_nodes, int nranks, int rank, Logger log);
  Result (*start_event)(void* context, void** handle, EventDescrV6* descr);
  Result (*stop_event)(void* handle);
  Result (*record_event_state)(void* handle, EventState state, StateArgs* args);
  Result (*finalize)(void* context);
};

// The exported symbol names, newest first as NCCL looks them up.
inline constexpr const char* kSymbolV6 = "ncclProfiler_v6";
inline constexpr const char* kSymbolV5 = "ncclProfiler_v5";
inline constexpr const char* kSymbolV4 = "ncclProfiler_v4";

}  // namespace warpscope::nccl_plugin::abi

#endif  // WARPSCOPE_NCCL_PLUGIN_ABI_H_
