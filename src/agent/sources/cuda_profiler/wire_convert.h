// SPDX-License-Identifier: Apache-2.0
// Turns the wire messages of one injected process's connection (cupti/wire.h) into the profile
// builder's inputs (profile_input.h).
//
// Per connection, because the wire's ids are scoped to one connection: kernel name ids and
// stall reason indices are resolved here; stack hashes are content hashes and pass through
// (wire hash 0, "not sampled", becomes an empty stack_hash). A KernelActivity or aggregate entry
// whose name id has not arrived yet waits (bounded) until its KernelName does; at the second
// window boundary after its arrival, or when the connection closes, it is emitted under
// "[kernel name not received]" and counted. DeviceMemory totals pass through with their memory
// kind named (MemoryKindName). Counters are cumulative: the latest value of each id
// is kept and the merged ProcessCounters replace the builder's. Cubin chunks are reassembled by
// crc within a byte cap; a completed cubin is handed to the caller.
//
// Thread contract: not thread-safe; one connection's converter belongs to the sequence that
// reads that connection (the listener thread).
#ifndef WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_WIRE_CONVERT_H_
#define WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_WIRE_CONVERT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agent/sources/cuda_profiler/profile_builder.h"
#include "agent/sources/cuda_profiler/profile_input.h"
#include "cupti/wire.h"

namespace warpscope::agent::cuda_profiler {

// The wire format's namespace (::warpscope::cupti::wire), which `cupti` would name otherwise.
namespace wire = ::warpscope::cupti::wire;

// What the converter feeds: the ProfileBuilder's input methods, as an interface so the
// conversion can be tested on its own.
class ProfileInputSink {
 public:
  virtual ~ProfileInputSink() = default;
  virtual void AddProcess(const ProcessDesc& process) = 0;
  virtual void AddStack(int32_t pid, InternedStack stack) = 0;
  virtual void AddKernel(int32_t pid, KernelActivity kernel) = 0;
  virtual void AddKernelAggregate(int32_t pid, const KernelAggregate& aggregate) = 0;
  virtual void AddPcSample(int32_t pid, const PcSample& sample) = 0;
  virtual void AddMemoryActivity(int32_t pid, MemoryActivity activity) = 0;
  virtual void AddNvtxRange(int32_t pid, NvtxRange range) = 0;
  virtual void UpdateCounters(int32_t pid, const ProcessCounters& counters) = 0;
  virtual void UpdateDeviceMemory(int32_t pid, std::vector<DeviceMemoryTotals> totals) = 0;
};

// Forwards to a ProfileBuilder.
class BuilderInputSink final : public ProfileInputSink {
 public:
  explicit BuilderInputSink(ProfileBuilder* builder) : builder_(builder) {}
  void AddProcess(const ProcessDesc& process) override { builder_->AddProcess(process); }
  void AddStack(int32_t pid, InternedStack stack) override {
    builder_->AddStack(pid, std::move(stack));
  }
  void AddKernel(int32_t pid, KernelActivity kernel) override {
    builder_->AddKernel(pid, std::move(kernel));
  }
  void AddKernelAggregate(int32_t pid, const KernelAggregate& aggregate) override {
    builder_->AddKernelAggregate(pid, aggregate);
  }
  void AddPcSample(int32_t pid, const PcSample& sample) override {
    builder_->AddPcSample(pid, sample);
  }
  void AddMemoryActivity(int32_t pid, MemoryActivity activity) override {
    builder_->AddMemoryActivity(pid, std::move(activity));
  }
  void AddNvtxRange(int32_t pid, NvtxRange range) override {
    builder_->AddNvtxRange(pid, std::move(range));
  }
  void UpdateCounters(int32_t pid, const ProcessCounters& counters) override {
    builder_->UpdateCounters(pid, counters);
  }
  void UpdateDeviceMemory(int32_t pid, std::vector<DeviceMemoryTotals> totals) override {
    builder_->UpdateDeviceMemory(pid, std::move(totals));
  }

 private:
  ProfileBuilder* builder_;
};

// The launch API's name for a CUPTI callback (domain 1 driver, 2 runtime):
// "cudaLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch"; "cbid <n>" when unknown.
std::string LaunchApiName(uint32_t domain, uint32_t cbid);

// A CUPTI memcpy kind (CUpti_ActivityMemcpyKind) as MemoryActivity::kind: 1 "HtoD", 2 "DtoH",
// 3 "HtoA", 4 "AtoH", 5 "AtoA", 6 "AtoD", 7 "DtoA", 8 "DtoD", 9 "HtoH", 10 "PtoP"; else
// "unknown".
std::string_view MemcpyKindName(uint8_t copy_kind);
// A CUPTI memory kind (CUpti_ActivityMemoryKind) as MemoryActivity::kind of a memset:
// 1 "pageable", 2 "pinned", 3 "device", 4 "array", 5 "managed", 6 "device static",
// 7 "managed static"; else "unknown".
std::string_view MemoryKindName(uint16_t memory_kind);

// Name used for kernels whose KernelName never arrived.
inline constexpr std::string_view kUnknownKernelName = "[kernel name not received]";
// Width of the launch API slice drawn in traces: the wire carries the API entry time only.
inline constexpr int64_t kLaunchSliceNs = 1000;

class ConnectionConverter {
 public:
  struct Options {
    // Activities and aggregate entries waiting for their KernelName; beyond, the oldest is
    // emitted under kUnknownKernelName.
    size_t max_pending = 65536;
    // Bytes of cubins being reassembled on this connection; a cubin that does not fit is
    // dropped and counted.
    size_t max_cubin_bytes = 64u << 20;
    // Reads the process's start time in clock ticks (/proc/<pid>/stat field 22) for its entity
    // id; null or 0: unknown.
    std::function<uint64_t(int32_t pid)> start_ticks_of;
  };

  struct Stats {
    uint64_t messages = 0;
    uint64_t before_hello = 0;     // messages before Hello with no peer pid: dropped
    uint64_t unnamed_kernels = 0;  // emitted under kUnknownKernelName
    uint64_t cubins_completed = 0;
    uint64_t cubins_dropped = 0;  // over max_cubin_bytes or inconsistent chunks
    uint64_t notices = 0;
    uint64_t memory_activities = 0;  // Memcpy and Memset messages converted
    uint64_t nvtx_ranges = 0;        // NvtxRange messages converted
    uint64_t device_memory = 0;      // DeviceMemory messages converted
    uint64_t ignored = 0;  // Launch (joined into KernelActivity already), Control: not profiled
  };

  // What a message produced besides builder input, for the caller to act on.
  struct Events {
    bool hello = false;  // the process announced itself: send controls
    std::vector<wire::Notice> notices;
    std::vector<std::pair<uint64_t, std::string>> cubins;  // (crc, complete bytes)
  };

  // `peer_pid`: the connecting process's pid in the agent's pid namespace (SO_PEERCRED), used
  // instead of Hello's (which is the process's own namespace pid); 0 when unknown.
  ConnectionConverter(int32_t peer_pid, Options options);

  // Converts one message; input goes to `sink`, the rest to `events`.
  void Handle(wire::Message message, ProfileInputSink& sink, Events& events);

  // A window is about to be finished: entries that already waited through one boundary are
  // emitted under kUnknownKernelName.
  void OnWindowBoundary(ProfileInputSink& sink);
  // The connection closed: everything still waiting is emitted.
  void OnClose(ProfileInputSink& sink);

  // The process's pid (peer pid, else Hello's); 0 before either is known.
  int32_t pid() const { return pid_; }
  bool has_hello() const { return has_hello_; }
  const std::string& executable() const { return executable_; }
  size_t pending() const { return pending_.size(); }
  const Stats& stats() const { return stats_; }

 private:
  struct Pending {
    uint32_t name_id = 0;
    uint64_t boundaries = 0;  // window boundaries seen while waiting
    std::optional<KernelActivity> kernel;
    std::optional<KernelAggregate> aggregate;
  };
  struct Cubin {
    uint64_t total_size = 0;
    uint64_t received = 0;
    std::string bytes;
  };

  // One per message kind, from Handle.
  void OnHello(const wire::Hello& hello, ProfileInputSink& sink, Events& events);
  void OnStack(wire::Stack m, ProfileInputSink& sink);
  void OnKernel(const wire::KernelActivity& m, ProfileInputSink& sink);
  void OnAggregate(const wire::KernelAggregate& m, ProfileInputSink& sink);
  void OnPcSamples(wire::PcSamples m, ProfileInputSink& sink);
  void OnCounters(const wire::Counters& m, ProfileInputSink& sink);
  template <typename Message>  // wire::Memcpy or wire::Memset
  void OnMemory(const Message& m, ProfileInputSink& sink);

  void Emit(Pending pending, const std::string& name, ProfileInputSink& sink);
  void ResolvePending(uint32_t name_id, ProfileInputSink& sink);
  void AddCubinChunk(wire::CubinChunk chunk, Events& events);
  void TrimPending(ProfileInputSink& sink);

  Options options_;
  Stats stats_;
  int32_t peer_pid_ = 0;
  int32_t pid_ = 0;
  bool has_hello_ = false;
  std::string executable_;
  std::unordered_map<uint32_t, std::string> names_;
  std::vector<Pending> pending_;                                       // arrival order
  std::map<uint32_t, std::map<uint32_t, std::string>> stall_reasons_;  // device -> index -> name
  std::map<wire::CounterId, uint64_t> counters_;
  std::map<uint64_t, Cubin> cubins_;
  size_t cubin_bytes_ = 0;
};

}  // namespace warpscope::agent::cuda_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_WIRE_CONVERT_H_
