// SPDX-License-Identifier: Apache-2.0
#include "profiling/perfetto_trace.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace warpscope::profiling {
namespace {

// Protobuf wire types.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;

// Field numbers, as Perfetto's protos/perfetto/trace/*.proto define them.
namespace trace {
constexpr uint32_t kPacket = 1;  // Trace.packet
}  // namespace trace
namespace packet {
constexpr uint32_t kTimestamp = 8;
constexpr uint32_t kSequenceId = 10;  // trusted_packet_sequence_id
constexpr uint32_t kTrackEvent = 11;
constexpr uint32_t kInternedData = 12;
constexpr uint32_t kSequenceFlags = 13;
constexpr uint32_t kTrackDescriptor = 60;
constexpr uint64_t kIncrementalStateCleared = 1;  // SequenceFlags
constexpr uint64_t kNeedsIncrementalState = 2;
}  // namespace packet
namespace event {
constexpr uint32_t kCategoryIids = 3;
constexpr uint32_t kDebugAnnotations = 4;
constexpr uint32_t kType = 9;
constexpr uint32_t kNameIid = 10;
constexpr uint32_t kTrackUuid = 11;
constexpr uint32_t kDoubleCounterValue = 44;
constexpr uint32_t kFlowIds = 47;
constexpr uint32_t kTerminatingFlowIds = 48;
constexpr uint32_t kSliceBegin = 1;  // TrackEvent.Type
constexpr uint32_t kSliceEnd = 2;
constexpr uint32_t kInstant = 3;
constexpr uint32_t kCounter = 4;
}  // namespace event
namespace annotation {
constexpr uint32_t kNameIid = 1;
constexpr uint32_t kUint = 3;
constexpr uint32_t kInt = 4;
constexpr uint32_t kDouble = 5;
constexpr uint32_t kString = 6;
constexpr uint32_t kStringIid = 17;
}  // namespace annotation
namespace descriptor {
constexpr uint32_t kUuid = 1;
constexpr uint32_t kName = 2;
constexpr uint32_t kProcess = 3;
constexpr uint32_t kThread = 4;
constexpr uint32_t kParentUuid = 5;
constexpr uint32_t kCounter = 8;
constexpr uint32_t kChildOrdering = 11;
constexpr uint32_t kSiblingOrderRank = 12;
constexpr uint64_t kExplicitOrdering = 3;  // ChildTracksOrdering.EXPLICIT
constexpr uint32_t kProcessPid = 1;        // ProcessDescriptor
constexpr uint32_t kProcessName = 6;
constexpr uint32_t kThreadPid = 1;  // ThreadDescriptor
constexpr uint32_t kThreadTid = 2;
constexpr uint32_t kThreadName = 5;
}  // namespace descriptor
// InternedData entries (EventCategory, EventName, DebugAnnotationName, InternedString) are all
// {iid = 1, name or str = 2}.
constexpr uint32_t kInternedIid = 1;
constexpr uint32_t kInternedValue = 2;

// Track uuid kinds (the low 3 bits).
constexpr uint64_t kProcessKind = 1;
constexpr uint64_t kThreadKind = 2;
constexpr uint64_t kGpuKind = 3;
constexpr uint64_t kStreamKind = 4;
constexpr uint64_t kProcessChildKind = 5;
constexpr uint64_t kIdMask = (uint64_t{1} << 22) - 1;

uint64_t Id22(int32_t id) { return static_cast<uint64_t>(static_cast<uint32_t>(id)) & kIdMask; }

size_t VarintSize(uint64_t v) { return v < 0x80 ? 1 : (std::bit_width(v) + 6) / 7; }

}  // namespace

uint64_t ProcessTrackUuid(int32_t pid) { return Id22(pid) << 3 | kProcessKind; }

uint64_t ThreadTrackUuid(int32_t pid, int32_t tid) {
  return (Id22(tid) << 22 | Id22(pid)) << 3 | kThreadKind;
}

uint64_t GpuTrackUuid(uint32_t device) { return uint64_t{device} << 3 | kGpuKind; }

uint64_t GpuStreamTrackUuid(int32_t pid, uint32_t device, uint32_t stream) {
  return ((uint64_t{stream} << 7 | (device & 0x7f)) << 22 | Id22(pid)) << 3 | kStreamKind;
}

uint64_t ProcessChildTrackUuid(int32_t pid, uint32_t index) {
  return (uint64_t{index} << 22 | Id22(pid)) << 3 | kProcessChildKind;
}

// PerfettoEvent -------------------------------------------------------------------------------

PerfettoEvent::~PerfettoEvent() { w_.CloseEvent(*this); }

void PerfettoEvent::Annotation(std::string_view key, uint32_t field, uint64_t value) {
  const uint64_t name = w_.Intern(PerfettoTraceWriter::Interned::kAnnotationName, key);
  const size_t a = w_.BeginNested(event::kDebugAnnotations);
  w_.VarintField(annotation::kNameIid, name);
  w_.VarintField(field, value);
  w_.EndNested(a);
}

PerfettoEvent& PerfettoEvent::Uint(std::string_view key, uint64_t value) {
  Annotation(key, annotation::kUint, value);
  return *this;
}

PerfettoEvent& PerfettoEvent::Int(std::string_view key, int64_t value) {
  Annotation(key, annotation::kInt, static_cast<uint64_t>(value));
  return *this;
}

PerfettoEvent& PerfettoEvent::Double(std::string_view key, double value) {
  const uint64_t name = w_.Intern(PerfettoTraceWriter::Interned::kAnnotationName, key);
  const size_t a = w_.BeginNested(event::kDebugAnnotations);
  w_.VarintField(annotation::kNameIid, name);
  w_.Fixed64Field(annotation::kDouble, std::bit_cast<uint64_t>(value));
  w_.EndNested(a);
  return *this;
}

PerfettoEvent& PerfettoEvent::Str(std::string_view key, std::string_view value) {
  const uint64_t name = w_.Intern(PerfettoTraceWriter::Interned::kAnnotationName, key);
  const size_t a = w_.BeginNested(event::kDebugAnnotations);
  w_.VarintField(annotation::kNameIid, name);
  w_.BytesField(annotation::kString, value);
  w_.EndNested(a);
  return *this;
}

PerfettoEvent& PerfettoEvent::InternedStr(std::string_view key, std::string_view value) {
  const uint64_t iid = w_.Intern(PerfettoTraceWriter::Interned::kStringValue, value);
  Annotation(key, annotation::kStringIid, iid);
  return *this;
}

PerfettoEvent& PerfettoEvent::Flow(uint64_t id) {
  w_.Fixed64Field(event::kFlowIds, id);
  return *this;
}

PerfettoEvent& PerfettoEvent::TerminatingFlow(uint64_t id) {
  w_.Fixed64Field(event::kTerminatingFlowIds, id);
  return *this;
}

// PerfettoTraceWriter -------------------------------------------------------------------------

PerfettoTraceWriter::PerfettoTraceWriter(uint32_t sequence_id, size_t reserve_bytes)
    : sequence_id_(std::max<uint32_t>(1, sequence_id)) {
  out_.reserve(reserve_bytes);
}

void PerfettoTraceWriter::Varint(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void PerfettoTraceWriter::Tag(uint32_t field, uint32_t wire_type) {
  Varint(uint64_t{field} << 3 | wire_type);
}

void PerfettoTraceWriter::VarintField(uint32_t field, uint64_t v) {
  Tag(field, kVarint);
  Varint(v);
}

void PerfettoTraceWriter::BytesField(uint32_t field, std::string_view bytes) {
  Tag(field, kLengthDelimited);
  Varint(bytes.size());
  out_.append(bytes);
}

void PerfettoTraceWriter::Fixed64Field(uint32_t field, uint64_t v) {
  Tag(field, kFixed64);
  char le[8];
  for (int i = 0; i < 8; ++i) {
    le[i] = static_cast<char>(v >> (8 * i));
  }
  out_.append(le, sizeof(le));
}

size_t PerfettoTraceWriter::BeginNested(uint32_t field) {
  Tag(field, kLengthDelimited);
  out_.push_back('\0');  // one byte for the length: most messages here are shorter than 128
  return out_.size() - 1;
}

void PerfettoTraceWriter::EndNested(size_t position) {
  const uint64_t length = out_.size() - position - 1;
  const size_t bytes = VarintSize(length);
  if (bytes > 1) {
    out_.insert(position + 1, bytes - 1, '\0');
  }
  uint64_t v = length;
  for (size_t i = 0; i < bytes; ++i) {
    out_[position + i] = static_cast<char>((v & 0x7f) | (i + 1 < bytes ? 0x80 : 0));
    v >>= 7;
  }
}

size_t PerfettoTraceWriter::BeginPacket(bool uses_interning) {
  const size_t p = BeginNested(trace::kPacket);
  VarintField(packet::kSequenceId, sequence_id_);
  uint64_t flags = uses_interning ? packet::kNeedsIncrementalState : 0;
  if (!cleared_) {
    flags |= packet::kIncrementalStateCleared;
    cleared_ = true;
  }
  if (flags != 0) {
    VarintField(packet::kSequenceFlags, flags);
  }
  return p;
}

uint64_t PerfettoTraceWriter::Intern(Interned table, std::string_view s) {
  const size_t t = table == Interned::kCategory         ? 0
                   : table == Interned::kName           ? 1
                   : table == Interned::kAnnotationName ? 2
                                                        : 3;
  InternTable& entries = tables_[t];
  auto it = entries.find(s);
  if (it != entries.end()) {
    return it->second;
  }
  const uint64_t iid = next_iid_[t]++;
  it = entries.emplace(std::string(s), iid).first;
  pending_.push_back({table, iid, it->first});
  return iid;
}

void PerfettoTraceWriter::ProcessTrack(uint64_t uuid, int32_t pid, std::string_view name) {
  const size_t p = BeginPacket(false);
  const size_t d = BeginNested(packet::kTrackDescriptor);
  VarintField(descriptor::kUuid, uuid);
  const size_t process = BeginNested(descriptor::kProcess);
  VarintField(descriptor::kProcessPid, static_cast<uint64_t>(int64_t{pid}));
  BytesField(descriptor::kProcessName, name);
  EndNested(process);
  EndNested(d);
  EndNested(p);
}

void PerfettoTraceWriter::ThreadTrack(uint64_t uuid, int32_t pid, int32_t tid,
                                      std::string_view name) {
  const size_t p = BeginPacket(false);
  const size_t d = BeginNested(packet::kTrackDescriptor);
  VarintField(descriptor::kUuid, uuid);
  const size_t thread = BeginNested(descriptor::kThread);
  VarintField(descriptor::kThreadPid, static_cast<uint64_t>(int64_t{pid}));
  VarintField(descriptor::kThreadTid, static_cast<uint64_t>(int64_t{tid}));
  BytesField(descriptor::kThreadName, name);
  EndNested(thread);
  EndNested(d);
  EndNested(p);
}

void PerfettoTraceWriter::Track(uint64_t uuid, uint64_t parent_uuid, std::string_view name,
                                int32_t rank) {
  const size_t p = BeginPacket(false);
  const size_t d = BeginNested(packet::kTrackDescriptor);
  VarintField(descriptor::kUuid, uuid);
  if (parent_uuid != 0) {
    VarintField(descriptor::kParentUuid, parent_uuid);
  }
  BytesField(descriptor::kName, name);
  VarintField(descriptor::kChildOrdering, descriptor::kExplicitOrdering);
  VarintField(descriptor::kSiblingOrderRank, static_cast<uint64_t>(int64_t{rank}));
  EndNested(d);
  EndNested(p);
}

void PerfettoTraceWriter::CounterTrack(uint64_t uuid, uint64_t parent_uuid, std::string_view name) {
  const size_t p = BeginPacket(false);
  const size_t d = BeginNested(packet::kTrackDescriptor);
  VarintField(descriptor::kUuid, uuid);
  if (parent_uuid != 0) {
    VarintField(descriptor::kParentUuid, parent_uuid);
  }
  BytesField(descriptor::kName, name);
  BytesField(descriptor::kCounter, {});  // an empty CounterDescriptor: a counter track
  EndNested(d);
  EndNested(p);
}

PerfettoEvent PerfettoTraceWriter::Event(uint64_t track, uint32_t type, std::string_view category,
                                         std::string_view name, int64_t start_ns, int64_t end_ns) {
  const size_t p = BeginPacket(true);
  VarintField(packet::kTimestamp, static_cast<uint64_t>(start_ns));
  const size_t e = BeginNested(packet::kTrackEvent);
  VarintField(event::kType, type);
  VarintField(event::kTrackUuid, track);
  VarintField(event::kCategoryIids, Intern(Interned::kCategory, category));
  VarintField(event::kNameIid, Intern(Interned::kName, name));
  return PerfettoEvent(*this, p, e, track, std::max(start_ns, end_ns), type == event::kSliceBegin);
}

PerfettoEvent PerfettoTraceWriter::Slice(uint64_t track, std::string_view category,
                                         std::string_view name, int64_t start_ns, int64_t end_ns) {
  return Event(track, event::kSliceBegin, category, name, start_ns, end_ns);
}

PerfettoEvent PerfettoTraceWriter::Instant(uint64_t track, std::string_view category,
                                           std::string_view name, int64_t ts_ns) {
  return Event(track, event::kInstant, category, name, ts_ns, ts_ns);
}

void PerfettoTraceWriter::CloseEvent(const PerfettoEvent& e) {
  EndNested(e.event_);
  if (!pending_.empty()) {
    const size_t interned = BeginNested(packet::kInternedData);
    for (const Pending& entry : pending_) {
      const size_t m = BeginNested(static_cast<uint32_t>(entry.table));
      VarintField(kInternedIid, entry.iid);
      BytesField(kInternedValue, entry.value);
      EndNested(m);
    }
    EndNested(interned);
    pending_.clear();
  }
  EndNested(e.packet_);
  if (!e.slice_) {
    return;
  }
  const size_t p = BeginPacket(false);
  VarintField(packet::kTimestamp, static_cast<uint64_t>(e.end_ns_));
  const size_t end = BeginNested(packet::kTrackEvent);
  VarintField(event::kType, event::kSliceEnd);
  VarintField(event::kTrackUuid, e.track_);
  EndNested(end);
  EndNested(p);
}

void PerfettoTraceWriter::Counter(uint64_t track, int64_t ts_ns, double value) {
  const size_t p = BeginPacket(false);
  VarintField(packet::kTimestamp, static_cast<uint64_t>(ts_ns));
  const size_t e = BeginNested(packet::kTrackEvent);
  VarintField(event::kType, event::kCounter);
  VarintField(event::kTrackUuid, track);
  Fixed64Field(event::kDoubleCounterValue, std::bit_cast<uint64_t>(value));
  EndNested(e);
  EndNested(p);
}

std::string PerfettoTraceWriter::Finish() {
  std::string out = std::move(out_);
  out_.clear();
  return out;
}

}  // namespace warpscope::profiling
