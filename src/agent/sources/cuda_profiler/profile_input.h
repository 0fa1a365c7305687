// SPDX-License-Identifier: Apache-2.0
// Plain data the CUDA kernel profiler's agent side consumes: what one injected process reports
// during an export window, already decoded from the wire. The wire decoder fills these structs;
// ProfileBuilder (profile_builder.h) turns them into profiles. No I/O, no invariants beyond the
// field comments.
//
// Times are nanoseconds on the host's CLOCK_REALTIME (CUPTI timestamps converted by the injected
// library). Kernel names and PC-sample function names are as CUPTI reports them (Itanium-mangled
// for C++ kernels, raw for Triton/cuBLAS/NCCL); the agent demangles.
#ifndef WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_PROFILE_INPUT_H_
#define WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_PROFILE_INPUT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace warpscope::agent::cuda_profiler {

// One injected process (sent once when it connects).
struct ProcessDesc {
  int32_t pid = 0;            // host pid
  std::string executable;     // absolute path of the main executable, "/usr/bin/python3.11"
  int64_t start_time_ns = 0;  // process start, realtime ns (0 when unknown)
  uint64_t start_ticks = 0;   // /proc/<pid>/stat field 22 (0 when unknown); names the entity
};

// One Python frame. `line` is the line being executed (0 when unknown).
struct PythonFrame {
  std::string function;  // co_qualname (3.11+) or co_name: "Trainer.step"
  std::string file;      // co_filename: "/home/u/train.py"
  int32_t line = 0;
  bool operator==(const PythonFrame&) const = default;
};

// A CPU stack captured at a kernel launch, interned by the injected library and sent once per
// process under its hash. Both lists are innermost (leaf) first. Every native entry is a return
// address (frame-pointer walk or backtrace()), so the symbolizer looks up `pc - 1`. The Python
// frames belong to the thread's interpreter state at the launch and sit above (are callers of)
// the native frames' outermost Python-evaluating frame; the builder puts all Python frames
// above all native frames.
struct InternedStack {
  uint64_t hash = 0;
  std::vector<uint64_t> native_pcs;
  std::vector<PythonFrame> python_frames;
};

struct Dim3 {
  uint32_t x = 0;
  uint32_t y = 0;
  uint32_t z = 0;
  bool operator==(const Dim3&) const = default;
};

// One kernel execution reported individually (a CUPTI kernel activity record), with the launch
// it came from. A graph launch yields one record per kernel node, all with the graph launch's
// correlation id and stack.
struct KernelActivity {
  uint64_t correlation_id = 0;
  std::optional<uint64_t> stack_hash;  // absent: the launch was not admitted for stack capture
  std::string name;                    // as CUPTI reports it (mangled)
  uint32_t device = 0;
  uint32_t stream = 0;
  uint32_t context = 0;
  int64_t start_ns = 0;  // GPU execution
  int64_t end_ns = 0;
  Dim3 grid;
  Dim3 block;
  uint32_t graph_id = 0;  // 0: not part of a graph
  uint32_t registers_per_thread = 0;
  uint32_t shared_memory_bytes = 0;  // static + dynamic
  // The CPU side of the launch, when known: the API ("cudaLaunchKernel", "cuLaunchKernelEx",
  // "cudaGraphLaunch"), the launching thread (kernel tid) and the API call's interval. The
  // builder draws the launch slice and a flow arrow only when api_end_ns > api_start_ns.
  std::string launch_api;
  int32_t thread_id = 0;
  int64_t api_start_ns = 0;
  int64_t api_end_ns = 0;
};

// GPU time of kernels per (name, device, stream) over a flush period, aggregated in the injected
// library. Whether these also count the kernels reported as KernelActivity is the builder's
// ProfileBuilder::Options::aggregate_mode (the library's aggregates cover every kernel).
struct KernelAggregate {
  std::string name;  // mangled, as CUPTI reports it
  uint32_t device = 0;
  uint32_t stream = 0;
  uint64_t count = 0;
  uint64_t total_gpu_ns = 0;
};

// One memory copy or memset on the GPU (a CUPTI MEMCPY or MEMSET activity record). Copies and
// memsets have no sampled launch stack: the injected library captures stacks for kernel launches
// only.
struct MemoryActivity {
  enum class Op : uint8_t { kMemcpy, kMemset };
  Op op = Op::kMemcpy;
  // kMemcpy: the direction, "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "HtoA", "AtoH", "AtoA",
  // "AtoD", "DtoA" or "unknown". kMemset: the memory kind, "device", "pinned", "pageable",
  // "managed", "array", "device static", "managed static" or "unknown".
  std::string kind;
  uint64_t correlation_id = 0;
  uint64_t bytes = 0;
  int64_t start_ns = 0;  // GPU execution
  int64_t end_ns = 0;
  uint32_t device = 0;
  uint32_t stream = 0;
  uint32_t context = 0;
  uint32_t graph_id = 0;  // 0: not part of a graph
};

// An NVTX range (push/pop or start/end) of one CPU thread; an instantaneous marker has
// start_ns == end_ns. `thread_id` is the same kernel tid as KernelActivity::thread_id, so ranges
// and launches of one thread line up.
struct NvtxRange {
  std::string name;    // the message: "train_step 12", "forward"
  std::string domain;  // "" for NVTX's default domain
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t thread_id = 0;
};

// PC-sampling counts for one (cubin, function, PC offset, stall reason).
struct PcSample {
  uint64_t cubin_hash = 0;   // cuptiGetCubinCrc of the module
  std::string function;      // mangled function name, as in the kernel records
  uint64_t pc_offset = 0;    // relative to the function's start
  std::string stall_reason;  // run-time name, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"
  uint64_t count = 0;
};

// Allocations and releases through the CUDA allocator on one (device, memory kind), as the
// injected library totals them (wire DeviceMemory): counts and bytes cumulative since the library
// started, allocated_bytes what is allocated now.
struct DeviceMemoryTotals {
  uint32_t device = 0;
  std::string kind;  // "device", "pinned", "managed", ... (MemoryKindName in wire_convert.h)
  uint64_t allocations = 0;
  uint64_t allocated_total_bytes = 0;
  uint64_t releases = 0;
  uint64_t released_total_bytes = 0;
  uint64_t allocated_bytes = 0;
  bool operator==(const DeviceMemoryTotals&) const = default;
};

// Cumulative counters the injected library reports for itself (monotonic over the process's
// life; the builder keeps the latest and derives rates).
struct ProcessCounters {
  uint64_t launches_seen = 0;          // launch callbacks entered
  uint64_t launches_admitted = 0;      // admitted by the rate limiter for stack capture
  uint64_t launches_dropped = 0;       // admitted, but the record was dropped (ring full, no agent)
  uint64_t records_lost = 0;           // activity/PC records lost (CUPTI drops, ring overflow)
  uint64_t overhead_ns = 0;            // CPU time the library spent in callbacks and its flusher
  uint64_t python_frames_skipped = 0;  // Python frames left out because they could not be read
};

}  // namespace warpscope::agent::cuda_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_PROFILE_INPUT_H_
