// SPDX-License-Identifier: Apache-2.0
// PC sampling (opt-in; docs/design/cuda-profiler.md, "PC sampling"): enables CUPTI PC sampling on
// each CUDA context, duty-cycles it (a window of window_ms every interval_ms: Start ... Stop, then
// GetData until nothing remains) and turns what CUPTI collected into StallReasons and PcSamples
// messages.
//
// Threads: the flusher thread only; every CUPTI PC-sampling call is made from it, never from an
// application thread. The contexts come from the resource callbacks through TrackContexts, called
// by the flusher under the lock that guards them. CUPTI calls made here may take CUPTI's time but
// never wait for the application.
// Ownership: each context's state is held by pointer and never moves, because CUPTI keeps the
// address of its configured sampling buffer while sampling is enabled. functionName strings that
// CUPTI allocates in the records are freed here, each distinct pointer once, after every record
// of the window was read (CUPTI may share one string among records).
// Versions: the record layout is the one of the CUPTI API version given at construction
// (abi::PcSamplingLayoutFor); an unknown version refuses PC sampling with one notice.
// Context: each CUPTI PC-sampling call is made with its context current on the flusher thread
// when a ContextGuard is given (cuCtxPushCurrent/cuCtxPopCurrent of the process's libcuda).
#ifndef WARPSCOPE_CUPTI_INJECT_PC_SAMPLING_H_
#define WARPSCOPE_CUPTI_INJECT_PC_SAMPLING_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cupti/abi.h"
#include "cupti/wire.h"
#include "cupti_inject/agent_connection.h"
#include "cupti_inject/cupti_loader.h"

namespace warpscope::cupti_inject {

namespace abi = ::warpscope::cupti::abi;
namespace wire = ::warpscope::cupti::wire;

// A buffer CUPTI fills with parsed PC samples: the PC records (laid out as `layout` says) and
// their stall-reason arrays.
struct PcBuffer {
  abi::PcSamplingLayout layout;
  std::vector<uint64_t> records;  // num_pcs records of layout.pc_record_size bytes, 8-aligned
  std::vector<abi::CUpti_PCSamplingStallReason> reasons;
  abi::CUpti_PCSamplingData data{};
  size_t num_pcs = 0;
  size_t num_reasons = 0;

  void Allocate(const abi::PcSamplingLayout& layout, size_t num_pcs, size_t reasons_per_pc);
  // Points every record at its stall-reason slots again and clears the counts and names.
  void Reset();
  // The fields every layout shares (up to stallReason).
  abi::CUpti_PCSamplingPCData_v1* Record(size_t i) {
    return reinterpret_cast<abi::CUpti_PCSamplingPCData_v1*>(
        reinterpret_cast<uint8_t*>(records.data()) + i * layout.pc_record_size);
  }
  // The record's correlationId where the layout has one, else 0.
  uint32_t CorrelationId(size_t i) const;
};

// Makes a context current on the calling thread for the duration of one CUPTI call: push
// returns false when it could not (the call is then made without it).
struct PcContextGuard {
  bool (*push)(abi::CUcontext ctx) = nullptr;
  void (*pop)() = nullptr;
};

class PcSampler {
 public:
  struct Schedule {
    uint32_t window_ms = 200;      // WARPSCOPE_CUPTI_PC_WINDOW_MS (or the agent's control)
    uint32_t interval_ms = 10000;  // WARPSCOPE_CUPTI_PC_INTERVAL_MS: window start to start
    uint32_t period = 0;           // WARPSCOPE_CUPTI_PC_PERIOD: 2^n cycles, 0 = CUPTI's
  };
  // Reports a refusal for the agent (Notify); called at most once per context and cause.
  using Notifier = void (*)(wire::Severity severity, uint32_t code, std::string message);
  using Clock = uint64_t (*)();  // CLOCK_REALTIME ns, the windows' timestamps; a seam for tests

  // `cupti_version` (cuptiGetVersion) chooses the record layout.
  PcSampler(const CuptiApi* api, uint32_t cupti_version, Notifier notify, Clock realtime_ns,
            PcContextGuard guard = {});
  PcSampler(const PcSampler&) = delete;
  PcSampler& operator=(const PcSampler&) = delete;

  // Follows the live contexts: adds new ones (devices numbered in order of appearance), forgets
  // destroyed ones (a destroyed context took its sampling state with it).
  void TrackContexts(std::span<const abi::CUcontext> contexts);
  // One flusher pass at monotonic time `now_ns`. While `wanted`: enables sampling on new contexts
  // (sending their StallReasons), starts a window when one is due and stops and collects it after
  // window_ms (sending PcSamples). Not wanted: stops and collects a running window, disables.
  void Step(uint64_t now_ns, bool wanted, const Schedule& schedule, MessageSink& out);
  // A new agent connection needs the stall reason names of every enabled context.
  void OnConnected(MessageSink& out);

  uint64_t dropped_samples() const { return dropped_; }  // kPcSamplesDropped
  const abi::PcSamplingLayout& layout() const { return layout_; }

 private:
  // The sampling state of one CUDA context.
  struct Context {
    abi::CUcontext ctx = nullptr;
    uint32_t device = 0;
    bool enabled = false;
    bool failed = false;
    PcBuffer config_buffer;  // filled by CUPTI at Disable
    PcBuffer get_buffer;     // filled by cuptiPCSamplingGetData
    wire::StallReasons stall_reasons;
  };

  void Enable(Context& pc, const Schedule& schedule, MessageSink& out);
  void StopAndCollect(Context& pc, MessageSink& out);
  void Collect(Context& pc, MessageSink& out);
  void Disable(Context& pc, MessageSink& out);
  // Copies the samples out of `buffer` and collects its distinct functionName pointers in
  // `names` (freed by FreeNames once the window is read).
  void AppendSamples(PcBuffer& buffer, wire::PcSamples* msg, std::vector<char*>* names);
  static void FreeNames(std::vector<char*>* names);
  // Runs one CUPTI call with `ctx` current (guard_), returning its result.
  template <typename F>
  abi::CUptiResult InContext(abi::CUcontext ctx, F&& call);

  const CuptiApi* const api_;
  const uint32_t cupti_version_;
  const abi::PcSamplingLayout layout_;
  const PcContextGuard guard_;
  bool layout_refused_ = false;
  const Notifier notify_;
  const Clock realtime_ns_;
  std::vector<std::unique_ptr<Context>> contexts_;
  bool running_ = false;
  uint64_t window_start_realtime_ns_ = 0;
  uint64_t window_start_ns_ = 0;
  uint64_t next_window_ns_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_PC_SAMPLING_H_
