// SPDX-License-Identifier: Apache-2.0
// Writes Perfetto's native trace format: a perfetto.protos.Trace, the stream of TracePackets
// that Perfetto's UI and trace processor read (protos/perfetto/trace/trace.proto in Perfetto's
// repository; the field numbers used here are listed in docs/design/profiling.md). What it
// writes: track descriptors (process, thread, custom and counter tracks), TrackEvent slices as
// TYPE_SLICE_BEGIN/END pairs, instants and counters, flows (flow_ids / terminating_flow_ids) and
// debug annotations. Event names, categories, annotation names and interned string values go
// into the packet's interned_data once and are referred to by iid afterwards; the first packet
// clears the sequence's incremental state (SEQ_INCREMENTAL_STATE_CLEARED) and every event sets
// SEQ_NEEDS_INCREMENTAL_STATE.
//
// The wire encoding is written by hand into one buffer, without message objects.
//
// Concatenation: a Trace is `repeated TracePacket packet = 1`, so the outputs of several writers
// concatenated are one valid trace, provided each writer has its own sequence id (or writers
// sharing one are concatenated whole, each clearing the state it starts) and track uuids mean
// the same track everywhere (the *TrackUuid functions below).
//
// Ordering: trace processor sorts packets by timestamp and keeps file order among equal
// timestamps, and a slice end closes the innermost open slice of its track. Write the slices of
// one track by start time, the longer first when two start together: each slice's end is
// written right after its begin, and the timestamps put them in place.
//
// Timestamps are written in the trace's default clock; warpscope writes CLOCK_REALTIME
// nanoseconds. Not thread-safe.
#ifndef WARPSCOPE_PROFILING_PERFETTO_TRACE_H_
#define WARPSCOPE_PROFILING_PERFETTO_TRACE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace warpscope::profiling {

// Track uuids warpscope uses, unique across every trace it writes and merges: a 3-bit kind in the
// low bits above which the ids are packed (pid and tid: 22 bits, the Linux PID_MAX_LIMIT;
// device: 7 bits; stream: 32 bits).
uint64_t ProcessTrackUuid(int32_t pid);
uint64_t ThreadTrackUuid(int32_t pid, int32_t tid);
uint64_t GpuTrackUuid(uint32_t device);
uint64_t GpuStreamTrackUuid(int32_t pid, uint32_t device, uint32_t stream);
// A track of process `pid` that is neither a thread nor a GPU stream (`index` says which).
uint64_t ProcessChildTrackUuid(int32_t pid, uint32_t index);

class PerfettoTraceWriter;

// One TrackEvent being written: its debug annotations and flows. Closes the event on destruction
// and, for a slice, writes its end. One event must be gone before the next one starts.
class PerfettoEvent {
 public:
  ~PerfettoEvent();
  PerfettoEvent(const PerfettoEvent&) = delete;
  PerfettoEvent& operator=(const PerfettoEvent&) = delete;

  PerfettoEvent& Uint(std::string_view key, uint64_t value);
  PerfettoEvent& Int(std::string_view key, int64_t value);
  PerfettoEvent& Double(std::string_view key, double value);
  PerfettoEvent& Str(std::string_view key, std::string_view value);
  // A value that repeats across events ("[128, 1, 1]"): written once, then referred to by iid.
  PerfettoEvent& InternedStr(std::string_view key, std::string_view value);
  // This slice starts flow `id` (or continues it); TerminatingFlow ends it here.
  PerfettoEvent& Flow(uint64_t id);
  PerfettoEvent& TerminatingFlow(uint64_t id);

 private:
  friend class PerfettoTraceWriter;
  PerfettoEvent(PerfettoTraceWriter& w, size_t packet, size_t event, uint64_t track, int64_t end_ns,
                bool slice)
      : w_(w), packet_(packet), event_(event), track_(track), end_ns_(end_ns), slice_(slice) {}
  void Annotation(std::string_view key, uint32_t field, uint64_t value);

  PerfettoTraceWriter& w_;
  size_t packet_;  // where the open TracePacket and TrackEvent start (length placeholders)
  size_t event_;
  uint64_t track_;
  int64_t end_ns_;
  bool slice_;
};

class PerfettoTraceWriter {
 public:
  // `sequence_id` (> 0): this writer's trusted_packet_sequence_id. `reserve_bytes`: the
  // expected size, to allocate once.
  explicit PerfettoTraceWriter(uint32_t sequence_id, size_t reserve_bytes = 4096);
  PerfettoTraceWriter(const PerfettoTraceWriter&) = delete;
  PerfettoTraceWriter& operator=(const PerfettoTraceWriter&) = delete;

  // Track descriptors. `parent_uuid` 0: a top-level track. `rank` orders siblings (lower first).
  void ProcessTrack(uint64_t uuid, int32_t pid, std::string_view name);
  void ThreadTrack(uint64_t uuid, int32_t pid, int32_t tid, std::string_view name);
  void Track(uint64_t uuid, uint64_t parent_uuid, std::string_view name, int32_t rank = 0);
  void CounterTrack(uint64_t uuid, uint64_t parent_uuid, std::string_view name);

  // A slice [start_ns, end_ns) on `track` (an end before the start is read as the start).
  PerfettoEvent Slice(uint64_t track, std::string_view category, std::string_view name,
                      int64_t start_ns, int64_t end_ns);
  PerfettoEvent Instant(uint64_t track, std::string_view category, std::string_view name,
                        int64_t ts_ns);
  void Counter(uint64_t track, int64_t ts_ns, double value);

  size_t size() const { return out_.size(); }
  // The trace written so far; the writer is empty afterwards.
  std::string Finish();

 private:
  friend class PerfettoEvent;
  enum class Interned : uint32_t {  // InternedData fields
    kCategory = 1,
    kName = 2,
    kAnnotationName = 3,
    kStringValue = 29,
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using InternTable = std::unordered_map<std::string, uint64_t, Hash, std::equal_to<>>;

  void Varint(uint64_t v);
  void Tag(uint32_t field, uint32_t wire_type);
  void VarintField(uint32_t field, uint64_t v);
  void BytesField(uint32_t field, std::string_view bytes);
  void Fixed64Field(uint32_t field, uint64_t v);
  // A length-delimited field whose length is written by EndNested(the returned position).
  size_t BeginNested(uint32_t field);
  void EndNested(size_t position);
  // Opens a TracePacket (Trace.packet) with the sequence id and flags.
  size_t BeginPacket(bool uses_interning);
  uint64_t Intern(Interned table, std::string_view s);
  PerfettoEvent Event(uint64_t track, uint32_t type, std::string_view category,
                      std::string_view name, int64_t start_ns, int64_t end_ns);
  void CloseEvent(const PerfettoEvent& e);

  std::string out_;
  uint32_t sequence_id_;
  bool cleared_ = false;  // SEQ_INCREMENTAL_STATE_CLEARED written
  InternTable tables_[4];
  uint64_t next_iid_[4] = {1, 1, 1, 1};
  struct Pending {
    Interned table;
    uint64_t iid;
    std::string_view value;  // the table's key: stable while the table lives
  };
  std::vector<Pending> pending_;  // interned by the open event, written with its packet
};

}  // namespace warpscope::profiling

#endif  // WARPSCOPE_PROFILING_PERFETTO_TRACE_H_
