// SPDX-License-Identifier: Apache-2.0
// The wire format between the injected libraries (the CUDA profiler libwarpscope_cupti.so and the
// NCCL profiler plugin libwarpscope_nccl.so) and the agent: a stream of length-prefixed binary
// frames over a unix stream socket. The process connects,
// sends Hello first, then any messages below; the agent may send Control frames back.
//
// Frame layout (all integers little-endian):
//   u32 payload_size   bytes after this 8-byte header, at most kMaxPayload
//   u8  type           MessageType
//   u8  version        kWireVersion of the writer
//   u16 reserved       0
//   payload            the message fields, in the order of the structs below
// Field encodings: uN fixed width; `str` is u32 length + bytes (at most kMaxString); a `list<T>`
// is u32 count + count elements (count bounded by the bytes left). Payloads may carry trailing
// bytes after the known fields: a newer writer appends fields, older readers skip them. Frames of
// an unknown type are skipped and counted. A frame whose version is newer than kWireVersion, or
// whose payload is too short or too large, is an error that ends the stream (the agent closes
// the connection; the process reconnects).
//
// Message ids (stack hash, kernel name id) are scoped to one connection: after a reconnect the
// process sends every Stack and KernelName again before using it. Stacks travel through
// per-thread rings, so a Stack may arrive after a Launch or KernelActivity that names it (resolve
// names at aggregation time, not on arrival); a hash never seen on a connection is "unknown".
// Counters are cumulative since the process started (the agent takes differences), except
// kMemoryBytes, a gauge; so are the DeviceMemory totals (except allocated_bytes, a level). New counter ids may be added at any time: readers keep or ignore ids
// they do not know (the decoder accepts any id), so an older agent reads a newer library.
//
// Thread contract: Encode* functions are pure; a StreamDecoder is used by one thread at a time.
#ifndef WARPSCOPE_CUPTI_WIRE_H_
#define WARPSCOPE_CUPTI_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace warpscope::cupti::wire {

inline constexpr uint32_t kHelloMagic = 0x50435357;  // "WSCP"
inline constexpr uint8_t kWireVersion = 1;
inline constexpr size_t kHeaderSize = 8;
inline constexpr size_t kMaxPayload = 1u << 20;
inline constexpr size_t kMaxString = 64u << 10;
// Cubins are sent in chunks of at most this many bytes.
inline constexpr size_t kMaxCubinChunk = 512u << 10;

enum class MessageType : uint8_t {
  // process -> agent
  kHello = 1,
  kStack = 2,
  kLaunch = 3,
  kKernelName = 4,
  kKernelActivity = 5,
  kKernelAggregate = 6,
  kMemcpy = 7,
  kMemset = 8,
  kNvtxRange = 9,
  kStallReasons = 10,
  kPcSamples = 11,
  kCubinChunk = 12,
  kCounters = 13,
  kNotice = 14,
  kDeviceMemory = 15,
  kNcclComm = 16,        // libwarpscope_nccl.so
  kNcclCollective = 17,  // libwarpscope_nccl.so
  // agent -> process
  kControl = 64,
};

// Which library wrote a connection's frames.
enum class Component : uint8_t { kCuda = 0, kNccl = 1 };

// First message of a connection.
struct Hello {
  uint32_t magic = kHelloMagic;
  uint32_t pid = 0;
  std::string exe;              // /proc/self/exe target
  uint32_t cupti_version = 0;   // cuptiGetVersion(); 0 when unknown
  uint32_t library_version = 0; // warpscope version as major*10000 + minor*100 + patch
  uint64_t start_time_ns = 0;   // CLOCK_REALTIME when the library initialized
  uint64_t monotonic_ns = 0;    // CLOCK_MONOTONIC at the same instant as realtime_ns
  uint64_t realtime_ns = 0;     // CLOCK_REALTIME (the clock of every *_ns timestamp below)
  // Appended field: absent (a library before the NCCL plugin) reads as kCuda.
  Component component = Component::kCuda;
};

struct PythonFrame {
  std::string function;
  std::string file;
  uint32_t line = 0;
  friend bool operator==(const PythonFrame&, const PythonFrame&) = default;
};

// An interned stack, sent once per connection before any message that names its hash.
// native: return addresses, innermost first (unsymbolized; the agent maps them through
// /proc/pid/maps). python: innermost first.
struct Stack {
  uint64_t hash = 0;
  std::vector<uint64_t> native;
  std::vector<PythonFrame> python;
};

// A launch admitted by the rate limiter, with its stack.
struct Launch {
  uint32_t correlation_id = 0;
  uint32_t tid = 0;
  uint64_t timestamp_ns = 0;
  uint32_t domain = 0;  // CUPTI callback domain (1 driver, 2 runtime)
  uint32_t cbid = 0;
  uint64_t stack_hash = 0;
  std::string symbol;  // kernel symbol from the callback, empty for graph launches
};

// Kernel name interned per connection.
struct KernelName {
  uint32_t id = 0;
  std::string name;  // mangled, as CUPTI reports it
};

// One kernel execution whose launch was sampled (stack_hash != 0), or any kernel when the
// process runs in "all kernels" mode (stack_hash 0 when the launch was not sampled).
struct KernelActivity {
  uint32_t correlation_id = 0;
  uint32_t name_id = 0;
  uint32_t device = 0;
  uint32_t context = 0;
  uint32_t stream = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  uint32_t registers = 0;
  uint32_t static_smem = 0;
  uint32_t dynamic_smem = 0;
  uint32_t graph_id = 0;
  uint64_t graph_node_id = 0;
  uint64_t stack_hash = 0;
  // From the joined launch (0 when not sampled): thread, API (domain, cbid) and CPU time.
  uint32_t launch_tid = 0;
  uint32_t launch_domain = 0;
  uint32_t launch_cbid = 0;
  uint64_t launch_ns = 0;
};

// GPU time of every kernel in a window, sampled or not.
struct KernelAggregateEntry {
  uint32_t name_id = 0;
  uint32_t device = 0;
  uint32_t stream = 0;
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t min_ns = 0;
  uint64_t max_ns = 0;
};
struct KernelAggregate {
  uint64_t window_start_ns = 0;
  uint64_t window_end_ns = 0;
  std::vector<KernelAggregateEntry> entries;
};

struct Memcpy {
  uint32_t correlation_id = 0;
  uint8_t copy_kind = 0;
  uint8_t src_kind = 0;
  uint8_t dst_kind = 0;
  uint64_t bytes = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t device = 0;
  uint32_t context = 0;
  uint32_t stream = 0;
  uint32_t graph_id = 0;
};

struct Memset {
  uint32_t correlation_id = 0;
  uint32_t value = 0;
  uint64_t bytes = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t device = 0;
  uint32_t context = 0;
  uint32_t stream = 0;
  uint16_t memory_kind = 0;
  uint32_t graph_id = 0;
};

// An NVTX push/pop or start/end range (instantaneous markers have start == end).
struct NvtxRange {
  std::string name;
  std::string domain;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t tid = 0;
};

// Stall reason names of a device's PC sampling, by the index used in PcSamples.
struct StallReason {
  uint32_t index = 0;
  std::string name;
};
struct StallReasons {
  uint32_t device = 0;
  std::vector<StallReason> reasons;
};

struct PcSample {
  uint64_t cubin_crc = 0;
  std::string function;
  uint64_t pc_offset = 0;
  uint32_t stall_reason = 0;  // StallReason::index
  uint32_t count = 0;
};
// PC samples of one sampling window.
struct PcSamples {
  uint32_t device = 0;
  uint64_t window_start_ns = 0;
  uint64_t window_end_ns = 0;
  uint64_t total_samples = 0;
  uint64_t dropped_samples = 0;
  std::vector<PcSample> samples;
};

// A piece of a cubin; the agent reassembles by crc (offset + bytes.size() <= total_size).
struct CubinChunk {
  uint64_t crc = 0;
  uint64_t total_size = 0;
  uint64_t offset = 0;
  std::string bytes;
};

enum class CounterId : uint16_t {
  kLaunchesSeen = 1,      // launch callbacks (after de-duplicating the nested driver call)
  kLaunchesAdmitted = 2,  // admitted by the rate limiter (stack captured)
  kLaunchesThrottled = 3, // refused by the rate limiter
  kRingDrops = 4,         // records dropped because a thread ring was full
  kThreadsOverCap = 5,    // launches from threads that got no ring (ring pool exhausted)
  kCuptiDroppedRecords = 6,   // cuptiActivityGetNumDroppedRecords
  kBufferPoolExhausted = 7,   // activity buffer requests refused (records lost in CUPTI)
  kKernelsSeen = 8,           // kernel activity records
  kKernelsJoined = 9,         // kernels matched to a sampled launch
  kPendingEvicted = 10,       // pending launches/kernels evicted from the join maps
  kBytesDropped = 11,         // encoded bytes dropped (agent absent or slow)
  kReconnects = 12,
  kStacksInterned = 13,
  kCubinsCaptured = 14,
  kPcSamplesDropped = 15,
  kCallbackErrors = 16,       // exceptions or unexpected states caught at the C boundary
  kMemoryBytes = 17,          // a gauge, not cumulative: bytes the library holds now
  kUnknownRecords = 18,       // activity records of kinds it does not decode
  kControlsApplied = 19,      // Control messages received and applied
  kOverheadNs = 20,           // estimated CPU ns the launch callbacks took on application threads
  kPythonFramesSkipped = 21,  // Python frames left out of captures because they could not be read
  kBufferReserveUsed = 22,    // activity buffer requests served from the reserve (pool out)
  // libwarpscope_nccl.so (it also sends kRingDrops, kThreadsOverCap, kBytesDropped, kReconnects,
  // kCallbackErrors, kMemoryBytes and kControlsApplied).
  kNcclEventsDropped = 23,    // NCCL events not recorded: the event pool was exhausted
  kNcclCollectives = 24,      // NcclCollective records of kind kCollective produced
  kNcclP2p = 25,              // NcclCollective records of kind kP2p produced
  kNcclOrphanEvents = 26,     // child events with no usable parent (another process's, PXN)
};
struct Counter {
  CounterId id{};
  uint64_t value = 0;
};
struct Counters {
  std::vector<Counter> counters;
};

// Allocations and releases through the CUDA allocator (CUPTI MEMORY2 records), aggregated in
// the library per (device, memory kind): counts and bytes cumulative since the library started,
// allocated_bytes what is allocated now (allocations minus releases seen; a release of memory
// allocated before the library started counts in releases but leaves allocated_bytes at 0 at
// least). Sent with the counters on every flush tick, for every pair seen so far. Readers older
// than this message (agents that know types up to kNotice) skip it as an unknown frame.
struct DeviceMemoryEntry {
  uint32_t device = 0;
  uint32_t memory_kind = 0;  // CUpti_ActivityMemoryKind: 2 pinned host, 3 device, 5 managed...
  uint64_t allocations = 0;
  uint64_t allocated_total_bytes = 0;
  uint64_t releases = 0;
  uint64_t released_total_bytes = 0;
  uint64_t allocated_bytes = 0;
  friend bool operator==(const DeviceMemoryEntry&, const DeviceMemoryEntry&) = default;
};
struct DeviceMemory {
  std::vector<DeviceMemoryEntry> entries;
};

// An NCCL communicator as one rank sees it (the profiler plugin's init), sent once per connection
// before any NcclCollective that names it. Ranks of one communicator share comm_id.
struct NcclComm {
  uint64_t comm_id = 0;     // commId (plugin ABI v5, v6) or commHash (v4)
  std::string name;         // commName; may be empty
  uint32_t nranks = 0;
  uint32_t rank = 0;
  uint32_t nnodes = 0;
  uint32_t plugin_abi = 0;  // the ncclProfiler_vN NCCL picked: 4, 5 or 6
  uint64_t init_ns = 0;
  friend bool operator==(const NcclComm&, const NcclComm&) = default;
};

enum class NcclOpKind : uint8_t { kCollective = 1, kP2p = 2 };
enum : uint32_t {
  kNcclProxyDetail = 1u << 0,  // proxy steps were recorded (proxy_steps, step_bytes are valid)
};

// One collective or point-to-point operation of one rank, sent when it completed: its own stop
// (NCCL enqueued it) and every child event's stop (proxy ops, kernel channels) have been seen.
// Times are CLOCK_REALTIME ns; GPU times come from NCCL's kernel-channel timers (%globaltimer)
// moved onto the CPU clock by the plugin (docs/design/nccl.md, "Clocks").
// Bus bandwidth = bus_bytes / execution time (NcclExecNs): docs/design/nccl.md, "Bandwidth".
struct NcclCollective {
  uint64_t comm_id = 0;
  uint32_t rank = 0;  // in the communicator (one process may hold several ranks of it)
  NcclOpKind kind = NcclOpKind::kCollective;
  std::string func;          // "AllReduce", "AllGather", "ReduceScatter", "Send", "Recv"...
  uint64_t seq_number = 0;   // per communicator and func (collectives); 0 for P2P
  uint64_t count = 0;        // elements
  std::string datatype;      // "ncclFloat32"...
  uint64_t bytes = 0;        // message bytes: count x datatype size (0 when the type is unknown)
  uint64_t bus_bytes = 0;    // bytes x NCCL Inspector's bus factor (docs/design/nccl.md)
  int32_t root = -1;         // root of a rooted collective; peer of a P2P operation
  std::string algo;          // "RING", "TREE", "NVLS", "PAT"... (empty for P2P)
  std::string proto;         // "LL", "LL128", "SIMPLE" (empty for P2P)
  uint32_t nchannels = 0;
  uint32_t nwarps = 0;
  uint32_t tid = 0;              // the thread that enqueued it
  uint64_t enqueue_ns = 0;       // its start (NCCL hands the plan to the plugin)
  uint64_t enqueued_ns = 0;      // its stop ("enqueued", not finished)
  uint64_t complete_ns = 0;      // the last child's stop on the CPU (0: no child event seen)
  uint64_t gpu_start_ns = 0;     // the first kernel channel's start (0: no kernel-channel events)
  uint64_t gpu_end_ns = 0;       // the last kernel channel's stop
  uint64_t gpu_exec_ns = 0;      // gpu_end - gpu_start on the GPU timer itself (no conversion)
  uint32_t kernel_channels = 0;  // kernel-channel events seen
  uint32_t proxy_ops = 0;        // proxy-op events seen
  uint32_t proxy_steps = 0;      // proxy-step events seen (kNcclProxyDetail)
  uint64_t step_bytes = 0;       // bytes the proxy steps reported moving (kNcclProxyDetail)
  uint32_t flags = 0;            // kNcclProxyDetail
  friend bool operator==(const NcclCollective&, const NcclCollective&) = default;
};

// The execution time a bandwidth is computed from: the GPU time of its kernel channels when
// NCCL reported them, else from its enqueue to its last child's stop, else 0.
inline uint64_t NcclExecNs(const NcclCollective& c) {
  if (c.gpu_exec_ns != 0) {
    return c.gpu_exec_ns;
  }
  return c.complete_ns > c.enqueue_ns ? c.complete_ns - c.enqueue_ns : 0;
}

// A one-off report (e.g. "CUPTI is held by another subscriber; profiling is off").
enum class Severity : uint8_t { kInfo = 0, kWarning = 1, kError = 2 };
struct Notice {
  Severity severity = Severity::kInfo;
  uint32_t code = 0;  // CUPTI result, or 0
  std::string message;
};

// Readers decode a Control of any non-zero op and ignore the ops they do not know (not counted
// in kControlsApplied). Libraries older than library_version 101 (0.1.1) refuse ops above
// kDisablePcSampling as malformed and drop the connection: send newer ops only to a process
// whose Hello.library_version is at least the one given next to the op.
enum class ControlOp : uint8_t {
  kEnableCollection = 1,
  kDisableCollection = 2,
  kSetRate = 3,            // value: admitted launches per thread per second
  kEnablePcSampling = 4,   // value: window length in ms (0 = library default)
  kDisablePcSampling = 5,
  // Since library_version 101. Which kernels whose launch was not sampled are sent as
  // KernelActivity: value = window_ms << 32 | interval_ms. window 0: none (sampled only);
  // window >= interval: every kernel (WARPSCOPE_CUPTI_KERNELS=all); otherwise every kernel whose
  // GPU start time t satisfies t mod interval < window (CUPTI's clock, so windows are aligned to
  // wall-clock multiples of the interval). Applies to kernel records processed after it arrives.
  kSetAllKernelsDutyCycle = 6,
  // libwarpscope_nccl.so only. value 1: record proxy steps (NcclCollective.proxy_steps,
  // step_bytes) besides the default events; 0: the default events only.
  kSetNcclProxyDetail = 7,
};
struct Control {
  ControlOp op{};
  uint64_t value = 0;
};

using Message = std::variant<Hello, Stack, Launch, KernelName, KernelActivity, KernelAggregate,
                             Memcpy, Memset, NvtxRange, StallReasons, PcSamples, CubinChunk,
                             Counters, Notice, Control, DeviceMemory, NcclComm, NcclCollective>;

MessageType TypeOf(const Message& message);

// Appends one frame holding `message` to `out`. Strings longer than kMaxString are truncated;
// a payload that would exceed kMaxPayload is cut at whole list elements (lists are truncated).
void Encode(const Message& message, std::string* out);

// A non-owning Python frame for EncodeStackInto.
struct PythonFrameView {
  std::string_view function;
  std::string_view file;
  uint32_t line = 0;
};

// Writes a Stack frame into `out` without allocating (used on the application's threads).
// Returns the frame size, or 0 if it does not fit.
size_t EncodeStackInto(uint64_t hash, std::span<const uint64_t> native,
                       std::span<const PythonFrameView> python, std::span<uint8_t> out);

enum class DecodeStatus {
  kOk,        // *out holds a message
  kNeedMore,  // no complete frame yet
  kError,     // the stream is corrupt; error() says why; every later call returns kError
};

// Splits a byte stream into messages.
class StreamDecoder {
 public:
  StreamDecoder() = default;

  void Append(std::span<const uint8_t> bytes);
  void Append(std::string_view bytes);

  [[nodiscard]] DecodeStatus Next(Message* out);

  const std::string& error() const { return error_; }
  uint64_t unknown_frames() const { return unknown_frames_; }
  size_t buffered() const { return buffer_.size() - pos_; }

 private:
  std::string buffer_;
  size_t pos_ = 0;
  std::string error_;
  uint64_t unknown_frames_ = 0;
};

// Decodes the payload of one frame of a known type. On failure returns false and sets *error.
[[nodiscard]] bool DecodePayload(MessageType type, std::span<const uint8_t> payload, Message* out,
                                 std::string* error);

// 64-bit FNV-1a over bytes, the hash used for interning stacks (never 0).
uint64_t HashBytes(uint64_t seed, const void* data, size_t size);
inline constexpr uint64_t kHashSeed = 0xcbf29ce484222325ull;

}  // namespace warpscope::cupti::wire

#endif  // WARPSCOPE_CUPTI_WIRE_H_
