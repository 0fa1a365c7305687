// SPDX-License-Identifier: Apache-2.0
#include "cupti/wire.h"

#include <cstring>
#include <type_traits>

namespace warpscope::cupti::wire {
namespace {

template <typename T, bool = std::is_enum_v<T>>
struct Unsigned {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
struct Unsigned<T, true> {
  using type = std::make_unsigned_t<std::underlying_type_t<T>>;
};

// Appends little-endian fields to a std::string.
class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}
  template <typename T>
  void Put(T v) {
    static_assert(std::is_integral_v<T> || std::is_enum_v<T>);
    using U = typename Unsigned<T>::type;
    U u = static_cast<U>(v);
    for (size_t i = 0; i < sizeof(U); ++i) {
      out_->push_back(static_cast<char>((u >> (8 * i)) & 0xff));
    }
  }
  void Str(std::string_view s) {
    if (s.size() > kMaxString) {
      s = s.substr(0, kMaxString);
    }
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_->append(s.data(), s.size());
  }
  void Raw(std::string_view s) { out_->append(s.data(), s.size()); }
  size_t size() const { return out_->size(); }

 private:
  std::string* out_;
};

// Bounded little-endian reader: every read checks the remaining size and latches failure.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> data) : data_(data) {}
  template <typename T>
  T Get() {
    using U = typename Unsigned<T>::type;
    if (failed_ || data_.size() - pos_ < sizeof(U)) {
      failed_ = true;
      return T{};
    }
    U u = 0;
    for (size_t i = 0; i < sizeof(U); ++i) {
      u |= static_cast<U>(static_cast<U>(data_[pos_ + i]) << (8 * i));
    }
    pos_ += sizeof(U);
    return static_cast<T>(u);
  }
  std::string Str() {
    auto n = Get<uint32_t>();
    if (failed_ || n > kMaxString || data_.size() - pos_ < n) {
      failed_ = true;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(data_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  std::string Bytes(size_t max) {
    auto n = Get<uint32_t>();
    if (failed_ || n > max || data_.size() - pos_ < n) {
      failed_ = true;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(data_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  // A list count, rejected when even `min_element_size`-byte elements could not fit.
  uint32_t Count(size_t min_element_size) {
    auto n = Get<uint32_t>();
    if (failed_ || static_cast<uint64_t>(n) * min_element_size > data_.size() - pos_) {
      failed_ = true;
      return 0;
    }
    return n;
  }
  bool failed() const { return failed_; }
  bool AtEnd() const { return pos_ >= data_.size(); }

 private:
  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  bool failed_ = false;
};

// Room left for list elements in a payload that already holds `used` bytes.
bool Fits(const Writer& w, size_t start, size_t more) {
  return w.size() - start + more <= kMaxPayload;
}

void EncodeBody(const Hello& m, Writer& w) {
  w.Put(m.magic);
  w.Put(kWireVersion);
  w.Put(m.pid);
  w.Str(m.exe);
  w.Put(m.cupti_version);
  w.Put(m.library_version);
  w.Put(m.start_time_ns);
  w.Put(m.monotonic_ns);
  w.Put(m.realtime_ns);
  w.Put(m.component);
}
void EncodeBody(const Stack& m, Writer& w) {
  const size_t start = w.size();
  w.Put(m.hash);
  w.Put<uint32_t>(static_cast<uint32_t>(m.native.size()));
  for (uint64_t pc : m.native) {
    w.Put(pc);
  }
  // Python frames: truncated at the payload limit by counting what fits first.
  size_t n = 0;
  size_t bytes = 4;
  for (const auto& f : m.python) {
    const size_t fb = 12 + std::min(f.function.size(), kMaxString) + std::min(f.file.size(), kMaxString);
    if (!Fits(w, start, bytes + fb)) {
      break;
    }
    bytes += fb;
    ++n;
  }
  w.Put<uint32_t>(static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) {
    w.Str(m.python[i].function);
    w.Str(m.python[i].file);
    w.Put(m.python[i].line);
  }
}
void EncodeBody(const Launch& m, Writer& w) {
  w.Put(m.correlation_id);
  w.Put(m.tid);
  w.Put(m.timestamp_ns);
  w.Put(m.domain);
  w.Put(m.cbid);
  w.Put(m.stack_hash);
  w.Str(m.symbol);
}
void EncodeBody(const KernelName& m, Writer& w) {
  w.Put(m.id);
  w.Str(m.name);
}
void EncodeBody(const KernelActivity& m, Writer& w) {
  w.Put(m.correlation_id);
  w.Put(m.name_id);
  w.Put(m.device);
  w.Put(m.context);
  w.Put(m.stream);
  w.Put(m.start_ns);
  w.Put(m.end_ns);
  for (int32_t v : m.grid) {
    w.Put(v);
  }
  for (int32_t v : m.block) {
    w.Put(v);
  }
  w.Put(m.registers);
  w.Put(m.static_smem);
  w.Put(m.dynamic_smem);
  w.Put(m.graph_id);
  w.Put(m.graph_node_id);
  w.Put(m.stack_hash);
  w.Put(m.launch_tid);
  w.Put(m.launch_domain);
  w.Put(m.launch_cbid);
  w.Put(m.launch_ns);
}
constexpr size_t kAggregateEntrySize = 4 * 3 + 8 * 4;
void EncodeBody(const KernelAggregate& m, Writer& w) {
  const size_t start = w.size();
  w.Put(m.window_start_ns);
  w.Put(m.window_end_ns);
  size_t n = m.entries.size();
  while (n > 0 && !Fits(w, start, 4 + n * kAggregateEntrySize)) {
    --n;
  }
  w.Put<uint32_t>(static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) {
    const auto& e = m.entries[i];
    w.Put(e.name_id);
    w.Put(e.device);
    w.Put(e.stream);
    w.Put(e.count);
    w.Put(e.total_ns);
    w.Put(e.min_ns);
    w.Put(e.max_ns);
  }
}
void EncodeBody(const Memcpy& m, Writer& w) {
  w.Put(m.correlation_id);
  w.Put(m.copy_kind);
  w.Put(m.src_kind);
  w.Put(m.dst_kind);
  w.Put(m.bytes);
  w.Put(m.start_ns);
  w.Put(m.end_ns);
  w.Put(m.device);
  w.Put(m.context);
  w.Put(m.stream);
  w.Put(m.graph_id);
}
void EncodeBody(const Memset& m, Writer& w) {
  w.Put(m.correlation_id);
  w.Put(m.value);
  w.Put(m.bytes);
  w.Put(m.start_ns);
  w.Put(m.end_ns);
  w.Put(m.device);
  w.Put(m.context);
  w.Put(m.stream);
  w.Put(m.memory_kind);
  w.Put(m.graph_id);
}
void EncodeBody(const NvtxRange& m, Writer& w) {
  w.Str(m.name);
  w.Str(m.domain);
  w.Put(m.start_ns);
  w.Put(m.end_ns);
  w.Put(m.tid);
}
void EncodeBody(const StallReasons& m, Writer& w) {
  const size_t start = w.size();
  w.Put(m.device);
  size_t n = 0;
  size_t bytes = 4;
  for (const auto& r : m.reasons) {
    const size_t rb = 8 + std::min(r.name.size(), kMaxString);
    if (!Fits(w, start, bytes + rb)) {
      break;
    }
    bytes += rb;
    ++n;
  }
  w.Put<uint32_t>(static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) {
    w.Put(m.reasons[i].index);
    w.Str(m.reasons[i].name);
  }
}
void EncodeBody(const PcSamples& m, Writer& w) {
  const size_t start = w.size();
  w.Put(m.device);
  w.Put(m.window_start_ns);
  w.Put(m.window_end_ns);
  w.Put(m.total_samples);
  w.Put(m.dropped_samples);
  size_t n = 0;
  size_t bytes = 4;
  for (const auto& s : m.samples) {
    const size_t sb = 8 + 4 + std::min(s.function.size(), kMaxString) + 8 + 4 + 4;
    if (!Fits(w, start, bytes + sb)) {
      break;
    }
    bytes += sb;
    ++n;
  }
  w.Put<uint32_t>(static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) {
    const auto& s = m.samples[i];
    w.Put(s.cubin_crc);
    w.Str(s.function);
    w.Put(s.pc_offset);
    w.Put(s.stall_reason);
    w.Put(s.count);
  }
}
void EncodeBody(const CubinChunk& m, Writer& w) {
  w.Put(m.crc);
  w.Put(m.total_size);
  w.Put(m.offset);
  const size_t n = std::min(m.bytes.size(), kMaxCubinChunk);
  w.Put<uint32_t>(static_cast<uint32_t>(n));
  w.Raw(std::string_view(m.bytes.data(), n));
}
void EncodeBody(const Counters& m, Writer& w) {
  const size_t n = std::min<size_t>(m.counters.size(), (kMaxPayload - 4) / 10);
  w.Put<uint32_t>(static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) {
    w.Put(m.counters[i].id);
    w.Put(m.counters[i].value);
  }
}
constexpr size_t kDeviceMemoryEntrySize = 4 * 2 + 8 * 5;
void EncodeBody(const DeviceMemory& m, Writer& w) {
  const size_t n = std::min(m.entries.size(), (kMaxPayload - 4) / kDeviceMemoryEntrySize);
  w.Put<uint32_t>(static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) {
    const auto& e = m.entries[i];
    w.Put(e.device);
    w.Put(e.memory_kind);
    w.Put(e.allocations);
    w.Put(e.allocated_total_bytes);
    w.Put(e.releases);
    w.Put(e.released_total_bytes);
    w.Put(e.allocated_bytes);
  }
}
void EncodeBody(const Notice& m, Writer& w) {
  w.Put(m.severity);
  w.Put(m.code);
  w.Str(m.message);
}
void EncodeBody(const NcclComm& m, Writer& w) {
  w.Put(m.comm_id);
  w.Str(m.name);
  w.Put(m.nranks);
  w.Put(m.rank);
  w.Put(m.nnodes);
  w.Put(m.plugin_abi);
  w.Put(m.init_ns);
}
void EncodeBody(const NcclCollective& m, Writer& w) {
  w.Put(m.comm_id);
  w.Put(m.rank);
  w.Put(m.kind);
  w.Str(m.func);
  w.Put(m.seq_number);
  w.Put(m.count);
  w.Str(m.datatype);
  w.Put(m.bytes);
  w.Put(m.bus_bytes);
  w.Put(m.root);
  w.Str(m.algo);
  w.Str(m.proto);
  for (uint32_t v : {m.nchannels, m.nwarps, m.tid}) {
    w.Put(v);
  }
  for (uint64_t v : {m.enqueue_ns, m.enqueued_ns, m.complete_ns, m.gpu_start_ns, m.gpu_end_ns,
                     m.gpu_exec_ns}) {
    w.Put(v);
  }
  for (uint32_t v : {m.kernel_channels, m.proxy_ops, m.proxy_steps}) {
    w.Put(v);
  }
  w.Put(m.step_bytes);
  w.Put(m.flags);
}
void EncodeBody(const Control& m, Writer& w) {
  w.Put(m.op);
  w.Put(m.value);
}

// --- decoding ------------------------------------------------------------------------------------

bool Decode(Reader& r, Hello* m) {
  m->magic = r.Get<uint32_t>();
  const auto version = r.Get<uint8_t>();
  m->pid = r.Get<uint32_t>();
  m->exe = r.Str();
  m->cupti_version = r.Get<uint32_t>();
  m->library_version = r.Get<uint32_t>();
  m->start_time_ns = r.Get<uint64_t>();
  m->monotonic_ns = r.Get<uint64_t>();
  m->realtime_ns = r.Get<uint64_t>();
  m->component = r.AtEnd() ? Component::kCuda : r.Get<Component>();
  return !r.failed() && m->magic == kHelloMagic && version >= 1;
}
bool Decode(Reader& r, Stack* m) {
  m->hash = r.Get<uint64_t>();
  const uint32_t n = r.Count(8);
  m->native.resize(n);
  for (auto& pc : m->native) {
    pc = r.Get<uint64_t>();
  }
  const uint32_t p = r.Count(12);
  m->python.resize(p);
  for (auto& f : m->python) {
    f.function = r.Str();
    f.file = r.Str();
    f.line = r.Get<uint32_t>();
  }
  return !r.failed();
}
bool Decode(Reader& r, Launch* m) {
  m->correlation_id = r.Get<uint32_t>();
  m->tid = r.Get<uint32_t>();
  m->timestamp_ns = r.Get<uint64_t>();
  m->domain = r.Get<uint32_t>();
  m->cbid = r.Get<uint32_t>();
  m->stack_hash = r.Get<uint64_t>();
  m->symbol = r.Str();
  return !r.failed();
}
bool Decode(Reader& r, KernelName* m) {
  m->id = r.Get<uint32_t>();
  m->name = r.Str();
  return !r.failed();
}
bool Decode(Reader& r, KernelActivity* m) {
  m->correlation_id = r.Get<uint32_t>();
  m->name_id = r.Get<uint32_t>();
  m->device = r.Get<uint32_t>();
  m->context = r.Get<uint32_t>();
  m->stream = r.Get<uint32_t>();
  m->start_ns = r.Get<uint64_t>();
  m->end_ns = r.Get<uint64_t>();
  for (auto& v : m->grid) {
    v = r.Get<int32_t>();
  }
  for (auto& v : m->block) {
    v = r.Get<int32_t>();
  }
  m->registers = r.Get<uint32_t>();
  m->static_smem = r.Get<uint32_t>();
  m->dynamic_smem = r.Get<uint32_t>();
  m->graph_id = r.Get<uint32_t>();
  m->graph_node_id = r.Get<uint64_t>();
  m->stack_hash = r.Get<uint64_t>();
  m->launch_tid = r.Get<uint32_t>();
  m->launch_domain = r.Get<uint32_t>();
  m->launch_cbid = r.Get<uint32_t>();
  m->launch_ns = r.Get<uint64_t>();
  return !r.failed();
}
bool Decode(Reader& r, KernelAggregate* m) {
  m->window_start_ns = r.Get<uint64_t>();
  m->window_end_ns = r.Get<uint64_t>();
  const uint32_t n = r.Count(kAggregateEntrySize);
  m->entries.resize(n);
  for (auto& e : m->entries) {
    e.name_id = r.Get<uint32_t>();
    e.device = r.Get<uint32_t>();
    e.stream = r.Get<uint32_t>();
    e.count = r.Get<uint64_t>();
    e.total_ns = r.Get<uint64_t>();
    e.min_ns = r.Get<uint64_t>();
    e.max_ns = r.Get<uint64_t>();
  }
  return !r.failed();
}
bool Decode(Reader& r, Memcpy* m) {
  m->correlation_id = r.Get<uint32_t>();
  m->copy_kind = r.Get<uint8_t>();
  m->src_kind = r.Get<uint8_t>();
  m->dst_kind = r.Get<uint8_t>();
  m->bytes = r.Get<uint64_t>();
  m->start_ns = r.Get<uint64_t>();
  m->end_ns = r.Get<uint64_t>();
  m->device = r.Get<uint32_t>();
  m->context = r.Get<uint32_t>();
  m->stream = r.Get<uint32_t>();
  m->graph_id = r.Get<uint32_t>();
  return !r.failed();
}
bool Decode(Reader& r, Memset* m) {
  m->correlation_id = r.Get<uint32_t>();
  m->value = r.Get<uint32_t>();
  m->bytes = r.Get<uint64_t>();
  m->start_ns = r.Get<uint64_t>();
  m->end_ns = r.Get<uint64_t>();
  m->device = r.Get<uint32_t>();
  m->context = r.Get<uint32_t>();
  m->stream = r.Get<uint32_t>();
  m->memory_kind = r.Get<uint16_t>();
  m->graph_id = r.Get<uint32_t>();
  return !r.failed();
}
bool Decode(Reader& r, NvtxRange* m) {
  m->name = r.Str();
  m->domain = r.Str();
  m->start_ns = r.Get<uint64_t>();
  m->end_ns = r.Get<uint64_t>();
  m->tid = r.Get<uint32_t>();
  return !r.failed();
}
bool Decode(Reader& r, StallReasons* m) {
  m->device = r.Get<uint32_t>();
  const uint32_t n = r.Count(8);
  m->reasons.resize(n);
  for (auto& s : m->reasons) {
    s.index = r.Get<uint32_t>();
    s.name = r.Str();
  }
  return !r.failed();
}
bool Decode(Reader& r, PcSamples* m) {
  m->device = r.Get<uint32_t>();
  m->window_start_ns = r.Get<uint64_t>();
  m->window_end_ns = r.Get<uint64_t>();
  m->total_samples = r.Get<uint64_t>();
  m->dropped_samples = r.Get<uint64_t>();
  const uint32_t n = r.Count(28);
  m->samples.resize(n);
  for (auto& s : m->samples) {
    s.cubin_crc = r.Get<uint64_t>();
    s.function = r.Str();
    s.pc_offset = r.Get<uint64_t>();
    s.stall_reason = r.Get<uint32_t>();
    s.count = r.Get<uint32_t>();
  }
  return !r.failed();
}
bool Decode(Reader& r, CubinChunk* m) {
  m->crc = r.Get<uint64_t>();
  m->total_size = r.Get<uint64_t>();
  m->offset = r.Get<uint64_t>();
  m->bytes = r.Bytes(kMaxCubinChunk);
  return !r.failed() && m->offset <= m->total_size &&
         m->bytes.size() <= m->total_size - m->offset;
}
bool Decode(Reader& r, Counters* m) {
  const uint32_t n = r.Count(10);
  m->counters.resize(n);
  for (auto& c : m->counters) {
    c.id = r.Get<CounterId>();
    c.value = r.Get<uint64_t>();
  }
  return !r.failed();
}
bool Decode(Reader& r, DeviceMemory* m) {
  const uint32_t n = r.Count(kDeviceMemoryEntrySize);
  m->entries.resize(n);
  for (auto& e : m->entries) {
    e.device = r.Get<uint32_t>();
    e.memory_kind = r.Get<uint32_t>();
    e.allocations = r.Get<uint64_t>();
    e.allocated_total_bytes = r.Get<uint64_t>();
    e.releases = r.Get<uint64_t>();
    e.released_total_bytes = r.Get<uint64_t>();
    e.allocated_bytes = r.Get<uint64_t>();
  }
  return !r.failed();
}
bool Decode(Reader& r, Notice* m) {
  m->severity = r.Get<Severity>();
  m->code = r.Get<uint32_t>();
  m->message = r.Str();
  return !r.failed() && static_cast<uint8_t>(m->severity) <= 2;
}
bool Decode(Reader& r, NcclComm* m) {
  m->comm_id = r.Get<uint64_t>();
  m->name = r.Str();
  m->nranks = r.Get<uint32_t>();
  m->rank = r.Get<uint32_t>();
  m->nnodes = r.Get<uint32_t>();
  m->plugin_abi = r.Get<uint32_t>();
  m->init_ns = r.Get<uint64_t>();
  return !r.failed();
}
bool Decode(Reader& r, NcclCollective* m) {
  m->comm_id = r.Get<uint64_t>();
  m->rank = r.Get<uint32_t>();
  m->kind = r.Get<NcclOpKind>();
  m->func = r.Str();
  m->seq_number = r.Get<uint64_t>();
  m->count = r.Get<uint64_t>();
  m->datatype = r.Str();
  m->bytes = r.Get<uint64_t>();
  m->bus_bytes = r.Get<uint64_t>();
  m->root = r.Get<int32_t>();
  m->algo = r.Str();
  m->proto = r.Str();
  for (uint32_t* v : {&m->nchannels, &m->nwarps, &m->tid}) {
    *v = r.Get<uint32_t>();
  }
  for (uint64_t* v : {&m->enqueue_ns, &m->enqueued_ns, &m->complete_ns, &m->gpu_start_ns,
                      &m->gpu_end_ns, &m->gpu_exec_ns}) {
    *v = r.Get<uint64_t>();
  }
  for (uint32_t* v : {&m->kernel_channels, &m->proxy_ops, &m->proxy_steps}) {
    *v = r.Get<uint32_t>();
  }
  m->step_bytes = r.Get<uint64_t>();
  m->flags = r.Get<uint32_t>();
  const auto kind = static_cast<uint8_t>(m->kind);
  return !r.failed() && kind >= 1 && kind <= 2;
}
bool Decode(Reader& r, Control* m) {
  m->op = r.Get<ControlOp>();
  m->value = r.Get<uint64_t>();
  // Ops this reader does not know decode too; the receiver ignores them (forward compatible).
  return !r.failed() && static_cast<uint8_t>(m->op) != 0;
}

template <typename T>
bool DecodeAs(std::span<const uint8_t> payload, Message* out) {
  Reader r(payload);
  T m;
  if (!Decode(r, &m)) {
    return false;
  }
  *out = std::move(m);
  return true;
}

void PutHeader(uint8_t* p, uint32_t size, MessageType type) {
  for (int i = 0; i < 4; ++i) {
    p[i] = static_cast<uint8_t>(size >> (8 * i));
  }
  p[4] = static_cast<uint8_t>(type);
  p[5] = kWireVersion;
  p[6] = 0;
  p[7] = 0;
}

}  // namespace

MessageType TypeOf(const Message& message) {
  struct {
    MessageType operator()(const Hello&) { return MessageType::kHello; }
    MessageType operator()(const Stack&) { return MessageType::kStack; }
    MessageType operator()(const Launch&) { return MessageType::kLaunch; }
    MessageType operator()(const KernelName&) { return MessageType::kKernelName; }
    MessageType operator()(const KernelActivity&) { return MessageType::kKernelActivity; }
    MessageType operator()(const KernelAggregate&) { return MessageType::kKernelAggregate; }
    MessageType operator()(const Memcpy&) { return MessageType::kMemcpy; }
    MessageType operator()(const Memset&) { return MessageType::kMemset; }
    MessageType operator()(const NvtxRange&) { return MessageType::kNvtxRange; }
    MessageType operator()(const StallReasons&) { return MessageType::kStallReasons; }
    MessageType operator()(const PcSamples&) { return MessageType::kPcSamples; }
    MessageType operator()(const CubinChunk&) { return MessageType::kCubinChunk; }
    MessageType operator()(const Counters&) { return MessageType::kCounters; }
    MessageType operator()(const Notice&) { return MessageType::kNotice; }
    MessageType operator()(const Control&) { return MessageType::kControl; }
    MessageType operator()(const DeviceMemory&) { return MessageType::kDeviceMemory; }
    MessageType operator()(const NcclComm&) { return MessageType::kNcclComm; }
    MessageType operator()(const NcclCollective&) { return MessageType::kNcclCollective; }
  } visitor;
  return std::visit(visitor, message);
}

void Encode(const Message& message, std::string* out) {
  const size_t header_at = out->size();
  out->append(kHeaderSize, '\0');
  Writer w(out);
  std::visit([&](const auto& m) { EncodeBody(m, w); }, message);
  size_t payload = out->size() - header_at - kHeaderSize;
  if (payload > kMaxPayload) {
    // Only a Stack with a huge native list can get here; cut it (the reader rejects it anyway).
    out->resize(header_at);
    return;
  }
  PutHeader(reinterpret_cast<uint8_t*>(out->data() + header_at), static_cast<uint32_t>(payload),
            TypeOf(message));
}

size_t EncodeStackInto(uint64_t hash, std::span<const uint64_t> native,
                       std::span<const PythonFrameView> python, std::span<uint8_t> out) {
  size_t need = kHeaderSize + 8 + 4 + native.size() * 8 + 4;
  for (const auto& f : python) {
    need += 12 + std::min(f.function.size(), kMaxString) + std::min(f.file.size(), kMaxString);
  }
  if (need > out.size() || need - kHeaderSize > kMaxPayload) {
    return 0;
  }
  uint8_t* p = out.data();
  PutHeader(p, static_cast<uint32_t>(need - kHeaderSize), MessageType::kStack);
  p += kHeaderSize;
  auto put = [&p](uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      *p++ = static_cast<uint8_t>(v >> (8 * i));
    }
  };
  auto put_str = [&](std::string_view s) {
    s = s.substr(0, std::min(s.size(), kMaxString));
    put(s.size(), 4);
    std::memcpy(p, s.data(), s.size());
    p += s.size();
  };
  put(hash, 8);
  put(native.size(), 4);
  for (uint64_t pc : native) {
    put(pc, 8);
  }
  put(python.size(), 4);
  for (const auto& f : python) {
    put_str(f.function);
    put_str(f.file);
    put(f.line, 4);
  }
  return need;
}

bool DecodePayload(MessageType type, std::span<const uint8_t> payload, Message* out,
                   std::string* error) {
  bool ok = false;
  switch (type) {
    case MessageType::kHello: ok = DecodeAs<Hello>(payload, out); break;
    case MessageType::kStack: ok = DecodeAs<Stack>(payload, out); break;
    case MessageType::kLaunch: ok = DecodeAs<Launch>(payload, out); break;
    case MessageType::kKernelName: ok = DecodeAs<KernelName>(payload, out); break;
    case MessageType::kKernelActivity: ok = DecodeAs<KernelActivity>(payload, out); break;
    case MessageType::kKernelAggregate: ok = DecodeAs<KernelAggregate>(payload, out); break;
    case MessageType::kMemcpy: ok = DecodeAs<Memcpy>(payload, out); break;
    case MessageType::kMemset: ok = DecodeAs<Memset>(payload, out); break;
    case MessageType::kNvtxRange: ok = DecodeAs<NvtxRange>(payload, out); break;
    case MessageType::kStallReasons: ok = DecodeAs<StallReasons>(payload, out); break;
    case MessageType::kPcSamples: ok = DecodeAs<PcSamples>(payload, out); break;
    case MessageType::kCubinChunk: ok = DecodeAs<CubinChunk>(payload, out); break;
    case MessageType::kCounters: ok = DecodeAs<Counters>(payload, out); break;
    case MessageType::kNotice: ok = DecodeAs<Notice>(payload, out); break;
    case MessageType::kControl: ok = DecodeAs<Control>(payload, out); break;
    case MessageType::kDeviceMemory: ok = DecodeAs<DeviceMemory>(payload, out); break;
    case MessageType::kNcclComm: ok = DecodeAs<NcclComm>(payload, out); break;
    case MessageType::kNcclCollective: ok = DecodeAs<NcclCollective>(payload, out); break;
    default:
      *error = "unknown cupti wire message type " + std::to_string(static_cast<int>(type));
      return false;
  }
  if (!ok) {
    *error = "malformed cupti wire message of type " + std::to_string(static_cast<int>(type)) +
             " (" + std::to_string(payload.size()) +
             " payload bytes); the sender's library and the agent disagree on the format";
  }
  return ok;
}

void StreamDecoder::Append(std::span<const uint8_t> bytes) {
  Append(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

void StreamDecoder::Append(std::string_view bytes) {
  if (pos_ > 0 && pos_ >= buffer_.size() / 2) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  buffer_.append(bytes);
}

DecodeStatus StreamDecoder::Next(Message* out) {
  while (true) {
    if (!error_.empty()) {
      return DecodeStatus::kError;
    }
    const size_t avail = buffer_.size() - pos_;
    if (avail < kHeaderSize) {
      return DecodeStatus::kNeedMore;
    }
    const auto* p = reinterpret_cast<const uint8_t*>(buffer_.data() + pos_);
    const uint32_t size = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                          (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
    const uint8_t type = p[4];
    const uint8_t version = p[5];
    if (size > kMaxPayload) {
      error_ = "cupti wire frame of " + std::to_string(size) + " bytes exceeds the " +
               std::to_string(kMaxPayload) + "-byte limit; the stream is corrupt";
      return DecodeStatus::kError;
    }
    if (version == 0 || version > kWireVersion) {
      error_ = "cupti wire version " + std::to_string(version) + " is not supported (this agent reads up to " +
               std::to_string(kWireVersion) + "); upgrade the agent or use a matching libwarpscope_cupti.so";
      return DecodeStatus::kError;
    }
    if (avail - kHeaderSize < size) {
      return DecodeStatus::kNeedMore;
    }
    std::span<const uint8_t> payload(p + kHeaderSize, size);
    pos_ += kHeaderSize + size;
    const bool known = (type >= 1 && type <= static_cast<uint8_t>(MessageType::kNcclCollective)) ||
                       type == static_cast<uint8_t>(MessageType::kControl);
    if (!known) {
      ++unknown_frames_;
      continue;
    }
    std::string error;
    if (!DecodePayload(static_cast<MessageType>(type), payload, out, &error)) {
      error_ = std::move(error);
      return DecodeStatus::kError;
    }
    return DecodeStatus::kOk;
  }
}

uint64_t HashBytes(uint64_t seed, const void* data, size_t size) {
  uint64_t h = seed;
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h == 0 ? 1 : h;
}

}  // namespace warpscope::cupti::wire
