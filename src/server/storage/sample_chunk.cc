// SPDX-License-Identifier: Apache-2.0
// The sample chunk codec; the format is described in sample_chunk.h.
#include "server/storage/sample_chunk.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>

#include "server/storage/query_plan.h"

namespace warpscope::server {
namespace {

constexpr uint8_t kVersion = 2;
constexpr uint8_t kXorOnlyVersion = 1;  // no mode byte: `last` is always [xor]
constexpr uint64_t kSign = uint64_t{1} << 63;

uint64_t Bits(double v) { return std::bit_cast<uint64_t>(v); }
double FromBits(uint64_t v) { return std::bit_cast<double>(v); }

// The bits of a double as an integer in the doubles' order (negative values below positive
// ones, each side increasing), and back: nearby values are nearby integers.
uint64_t Ordered(uint64_t b) { return (b & kSign) != 0 ? ~b : b | kSign; }
uint64_t FromOrdered(uint64_t o) { return (o & kSign) != 0 ? o & ~kSign : ~o; }

// The [pred] prediction of the next value from the previous ones (history[0] the latest), with
// the order the chunk's start allows: `index` values came before. Wrapping arithmetic.
uint64_t Predict(const uint64_t history[3], int order, size_t index) {
  switch (std::min<size_t>(static_cast<size_t>(order), index)) {
    case 0:
      return 0;
    case 1:
      return history[0];
    case 2:
      return 2 * history[0] - history[1];
    default:
      return 3 * history[0] - 3 * history[1] + history[2];
  }
}

void Remember(uint64_t history[3], uint64_t x) {
  history[2] = history[1];
  history[1] = history[0];
  history[0] = x;
}

uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// Wrapping arithmetic on int64 (differences of arbitrary stored values must not overflow).
int64_t Sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t Add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

bool AllEqualLast(const ChunkWindow& w) {
  return Bits(w.avg) == Bits(w.last) && Bits(w.min) == Bits(w.last) &&
         Bits(w.max) == Bits(w.last);
}

// The [signed] buckets: prefix bits of ones before the terminating zero, and payload width.
struct SignedBucket {
  int ones;
  int width;
};
constexpr SignedBucket kSignedBuckets[] = {{1, 7}, {2, 9}, {3, 12}, {4, 32}};

class BitReader {
 public:
  explicit BitReader(std::string_view data) : data_(data) {}
  // False when fewer than `n` bits are left.
  bool Read(int n, uint64_t& out) {
    if (n > 0 && static_cast<size_t>(n) > data_.size() * 8 - pos_) {
      return false;
    }
    if (n == 0) {
      out = 0;
      return true;
    }
    const size_t byte = pos_ / 8;
    if (byte + 9 <= data_.size()) {
      // Away from the end: the 64 bits from pos_ out of nine bytes, read big-endian.
      const int offset = static_cast<int>(pos_ % 8);
      uint64_t word = 0;
      std::memcpy(&word, data_.data() + byte, sizeof(word));
      if constexpr (std::endian::native == std::endian::little) {
        word = __builtin_bswap64(word);
      }
      uint64_t bits = word << offset;
      if (offset != 0) {
        bits |= static_cast<uint8_t>(data_[byte + 8]) >> (8 - offset);
      }
      out = n == 64 ? bits : bits >> (64 - n);
      pos_ += static_cast<size_t>(n);
      return true;
    }
    // Near the end: a byte's worth of bits at a time (the rest of the current byte, whole
    // bytes, the start of the last one); n <= 64, so `v` never shifts out a bit it keeps.
    uint64_t v = 0;
    while (n > 0) {
      const int free = 8 - static_cast<int>(pos_ % 8);
      const int take = std::min(free, n);
      const auto byte = static_cast<uint8_t>(data_[pos_ / 8]);
      v = (v << take) | ((byte >> (free - take)) & ((1u << take) - 1));
      pos_ += static_cast<size_t>(take);
      n -= take;
    }
    out = v;
    return true;
  }
  size_t left() const { return data_.size() * 8 - pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

struct XorState {
  int leading = -1;
  int trailing = 0;
};

struct PredState {
  uint64_t history[3] = {0, 0, 0};
  int residual_length = 0;
};

bool ReadSigned(BitReader& in, int64_t& out) {
  uint64_t bit = 0;
  int ones = 0;
  while (ones < 5) {
    if (!in.Read(1, bit)) {
      return false;
    }
    if (bit == 0) {
      break;
    }
    ++ones;
  }
  uint64_t zz = 0;
  if (ones == 5) {
    if (!in.Read(64, zz)) {
      return false;
    }
  } else if (ones > 0 && !in.Read(kSignedBuckets[ones - 1].width, zz)) {
    return false;
  }
  out = UnZigZag(zz);
  return true;
}

bool ReadXor(BitReader& in, double previous, XorState& state, double& out) {
  uint64_t bit = 0;
  if (!in.Read(1, bit)) {
    return false;
  }
  if (bit == 0) {
    out = previous;
    return true;
  }
  if (!in.Read(1, bit)) {
    return false;
  }
  if (bit == 1) {
    uint64_t leading = 0, length = 0;
    if (!in.Read(5, leading) || !in.Read(6, length)) {
      return false;
    }
    const int meaningful = static_cast<int>(length) + 1;
    if (static_cast<int>(leading) + meaningful > 64) {
      return false;
    }
    state.leading = static_cast<int>(leading);
    state.trailing = 64 - state.leading - meaningful;
  } else if (state.leading < 0) {
    return false;  // a reused frame before any frame was set
  }
  const int meaningful = 64 - state.leading - state.trailing;
  uint64_t value = 0;
  if (!in.Read(meaningful, value)) {
    return false;
  }
  out = FromBits(Bits(previous) ^ (value << state.trailing));
  return true;
}

bool ReadPredicted(BitReader& in, int order, size_t index, PredState& state, double& out) {
  uint64_t bit = 0, v = 0;
  int length = state.residual_length;
  if (!in.Read(1, bit)) {
    return false;
  }
  if (bit == 1) {
    if (!in.Read(1, bit)) {
      return false;
    }
    if (bit == 0) {
      if (!in.Read(2, v)) {
        return false;
      }
      static constexpr int kSteps[] = {-2, -1, 1, 2};
      length += kSteps[v];
    } else {
      if (!in.Read(7, v)) {
        return false;
      }
      length = static_cast<int>(v);
    }
    if (length < 0 || length > 64) {
      return false;
    }
  }
  uint64_t zz = length == 0 ? 0 : uint64_t{1} << (length - 1);
  if (length >= 2) {
    if (!in.Read(length - 1, v)) {
      return false;
    }
    zz |= v;
  }
  const uint64_t x = Predict(state.history, order, index) + static_cast<uint64_t>(UnZigZag(zz));
  state.residual_length = length;
  Remember(state.history, x);
  out = FromBits(FromOrdered(x));
  return true;
}

}  // namespace

bool ChunkWindow::operator==(const ChunkWindow& o) const {
  return start_ms == o.start_ms && duration_ms == o.duration_ms && count == o.count &&
         Bits(avg) == Bits(o.avg) && Bits(min) == Bits(o.min) && Bits(max) == Bits(o.max) &&
         Bits(last) == Bits(o.last);
}

void ChunkEncoder::Stream::WriteBits(uint64_t value, int n) {
  while (n > 0) {
    if (bits % 8 == 0) {
      out.push_back(0);
    }
    const int free = 8 - static_cast<int>(bits % 8);
    const int take = std::min(free, n);
    const auto part = static_cast<uint8_t>((value >> (n - take)) & ((1u << take) - 1));
    out.back() |= static_cast<uint8_t>(part << (free - take));
    bits += static_cast<size_t>(take);
    n -= take;
  }
}

void ChunkEncoder::Stream::WriteSigned(int64_t v) {
  const uint64_t zz = ZigZag(v);
  if (zz == 0) {
    WriteBits(0, 1);
    return;
  }
  for (const SignedBucket& b : kSignedBuckets) {
    if (zz < (uint64_t{1} << b.width)) {
      WriteBits((uint64_t{1} << (b.ones + 1)) - 2, b.ones + 1);  // ones, then a zero
      WriteBits(zz, b.width);
      return;
    }
  }
  WriteBits(0x1f, 5);
  WriteBits(zz, 64);
}

void ChunkEncoder::Stream::WriteXor(double value, double previous, XorFrame& frame) {
  const uint64_t x = Bits(value) ^ Bits(previous);
  if (x == 0) {
    WriteBits(0, 1);
    return;
  }
  WriteBits(1, 1);
  const int leading = std::min(std::countl_zero(x), 31);
  const int trailing = std::countr_zero(x);
  if (frame.leading >= 0 && leading >= frame.leading && trailing >= frame.trailing) {
    WriteBits(0, 1);
    WriteBits(x >> frame.trailing, 64 - frame.leading - frame.trailing);
    return;
  }
  const int meaningful = 64 - leading - trailing;
  WriteBits(1, 1);
  WriteBits(static_cast<uint64_t>(leading), 5);
  WriteBits(static_cast<uint64_t>(meaningful - 1), 6);
  WriteBits(x >> trailing, meaningful);
  frame.leading = leading;
  frame.trailing = trailing;
}

void ChunkEncoder::Stream::WritePredicted(double value, int order, size_t index) {
  const uint64_t x = Ordered(Bits(value));
  const uint64_t zz = ZigZag(static_cast<int64_t>(x - Predict(history, order, index)));
  const int length = std::bit_width(zz);
  const int step = length - residual_length;
  if (step == 0) {
    WriteBits(0, 1);
  } else if (step >= -2 && step <= 2) {
    WriteBits(0b10, 2);
    WriteBits(static_cast<uint64_t>(step < 0 ? step + 2 : step + 1), 2);  // -2 -1 +1 +2 -> 0..3
  } else {
    WriteBits(0b11, 2);
    WriteBits(static_cast<uint64_t>(length), 7);
  }
  if (length >= 2) {
    WriteBits(zz, length - 1);  // the top bit is implied
  }
  residual_length = length;
  Remember(history, x);
}

void ChunkEncoder::AppendTo(Stream& s, int mode, const ChunkWindow& w, int64_t delta,
                            bool regular, bool flat) {
  if (windows_ == 0) {
    s.WriteBits(static_cast<uint64_t>(w.start_ms), 64);
  }
  auto write_last = [&] {
    if (mode == 0) {
      s.WriteXor(w.last, prev_.last, s.last_frame);
    } else {
      s.WritePredicted(w.last, mode, windows_);
    }
  };
  if (regular && flat) {
    s.WriteBits(1, 1);
    write_last();
  } else if (regular) {
    s.WriteBits(1, 2);  // 01
    write_last();
  } else {
    s.WriteBits(0, 2);  // 00
    s.WriteSigned(Sub(delta, prev_delta_));
    s.WriteSigned(Sub(w.duration_ms, prev_.duration_ms));
    s.WriteSigned(Sub(w.count, prev_.count));
    write_last();
    s.WriteBits(flat ? 1 : 0, 1);
  }
  if (!flat) {
    const std::pair<double, std::pair<double, XorFrame*>> fields[] = {
        {w.avg, {prev_.avg, &s.avg_frame}},
        {w.min, {prev_.min, &s.min_frame}},
        {w.max, {prev_.max, &s.max_frame}}};
    for (const auto& [value, prev] : fields) {
      if (Bits(value) == Bits(w.last)) {
        s.WriteBits(1, 1);
      } else {
        s.WriteBits(0, 1);
        s.WriteXor(value, prev.first, *prev.second);
      }
    }
  }
}

void ChunkEncoder::Append(const ChunkWindow& w) {
  if (windows_ == 0) {
    prev_.start_ms = w.start_ms;
  }
  const int64_t delta = Sub(w.start_ms, prev_.start_ms);
  const bool regular =
      delta == prev_delta_ && w.duration_ms == prev_.duration_ms && w.count == prev_.count;
  const bool flat = AllEqualLast(w);
  for (int mode = 0; mode < kModes; ++mode) {
    AppendTo(streams_[mode], mode, w, delta, regular, flat);
  }
  prev_delta_ = delta;
  prev_ = w;
  ++windows_;
}

size_t ChunkEncoder::bytes() const {
  size_t bits = streams_[0].bits;
  for (const Stream& s : streams_) {
    bits = std::min(bits, s.bits);
  }
  return (bits + 7) / 8;
}

std::string ChunkEncoder::Finish() {
  int best = 0;  // the smallest; XOR on a tie
  for (int mode = 1; mode < kModes; ++mode) {
    if (streams_[mode].bits < streams_[best].bits) {
      best = mode;
    }
  }
  const std::vector<uint8_t>& out = streams_[best].out;
  std::string chunk;
  chunk.reserve(out.size() + 12);
  chunk.push_back(static_cast<char>(kVersion));
  for (uint64_t n = windows_;; n >>= 7) {
    if (n < 0x80) {
      chunk.push_back(static_cast<char>(n));
      break;
    }
    chunk.push_back(static_cast<char>((n & 0x7f) | 0x80));
  }
  chunk.push_back(static_cast<char>(best));
  chunk.append(reinterpret_cast<const char*>(out.data()), out.size());
  *this = ChunkEncoder();
  return chunk;
}

std::string EncodeChunk(std::span<const ChunkWindow> windows) {
  ChunkEncoder encoder;
  for (const ChunkWindow& w : windows) {
    encoder.Append(w);
  }
  return encoder.Finish();
}

void ChunkCutter::Add(int64_t series_id, const ChunkWindow& w) {
  const int64_t span = FloorTo(w.start_ms, span_ms_);
  if (encoder_.windows() > 0 &&
      (series_id != open_.series_id || span != span_ || encoder_.bytes() >= target_)) {
    Close();
  }
  if (encoder_.windows() == 0) {
    open_.series_id = series_id;
    open_.start_ms = w.start_ms;
    span_ = span;
  }
  encoder_.Append(w);
  open_.end_ms = w.start_ms + 1;
}

void ChunkCutter::Close() {
  if (encoder_.windows() == 0) {
    return;
  }
  open_.count = static_cast<int64_t>(encoder_.windows());
  open_.data = encoder_.Finish();
  done_.push_back(std::move(open_));
  open_ = EncodedChunk{};
}

std::vector<EncodedChunk> ChunkCutter::Finish() {
  Close();
  return std::exchange(done_, {});
}

base::Result<std::vector<ChunkWindow>> DecodeChunk(std::string_view data) {
  auto bad = [&](std::string_view what) {
    return base::Error(base::InvalidArgument("sample chunk of {} bytes: {}", data.size(), what));
  };
  if (data.empty()) {
    return bad("empty");
  }
  const auto version = static_cast<uint8_t>(data[0]);
  if (version != kVersion && version != kXorOnlyVersion) {
    return bad("unknown version " + std::to_string(version));
  }
  uint64_t n = 0;
  size_t at = 1;
  for (int shift = 0;; shift += 7) {
    if (at >= data.size() || shift > 56) {
      return bad("truncated window count");
    }
    const auto byte = static_cast<uint8_t>(data[at++]);
    n |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      break;
    }
  }
  int mode = 0;
  if (version == kVersion) {
    if (at >= data.size()) {
      return bad("truncated header");
    }
    mode = static_cast<uint8_t>(data[at++]);
    if (mode > 3) {
      return bad("unknown value coding " + std::to_string(mode));
    }
  }
  BitReader in(data.substr(at));
  // Each window takes at least 2 bits, the first 64 more.
  if (n > kMaxChunkWindows || (n > 0 && (in.left() < 64 || n > (in.left() - 64) / 2))) {
    return bad("window count " + std::to_string(n) + " does not fit its bits");
  }
  std::vector<ChunkWindow> out;
  out.reserve(n);
  ChunkWindow prev;
  int64_t prev_delta = 0;
  XorState last_state, avg_state, min_state, max_state;
  PredState pred_state;
  uint64_t raw = 0;
  if (n > 0 && !in.Read(64, raw)) {
    return bad("truncated header");
  }
  prev.start_ms = static_cast<int64_t>(raw);
  for (uint64_t i = 0; i < n; ++i) {
    ChunkWindow w;
    auto malformed = [&] { return bad("window " + std::to_string(i) + " is truncated or malformed"); };
    // '1': regular and flat; '01': regular; '00': general (see the header).
    uint64_t flat_regular = 0, regular = 0, same = 1;
    int64_t dod = 0, dd = 0, dc = 0;
    if (!in.Read(1, flat_regular)) {
      return malformed();
    }
    if (flat_regular == 0) {
      if (!in.Read(1, regular)) {
        return malformed();
      }
      same = 0;
      if (regular == 0 && (!ReadSigned(in, dod) || !ReadSigned(in, dd) || !ReadSigned(in, dc))) {
        return malformed();
      }
    }
    const bool read = mode == 0 ? ReadXor(in, prev.last, last_state, w.last)
                                : ReadPredicted(in, mode, i, pred_state, w.last);
    if (!read) {
      return malformed();
    }
    if (flat_regular == 0 && regular == 0 && !in.Read(1, same)) {
      return malformed();
    }
    const bool flat = same == 1;
    const int64_t delta = Add(prev_delta, dod);
    w.start_ms = Add(prev.start_ms, delta);
    w.duration_ms = Add(prev.duration_ms, dd);
    w.count = Add(prev.count, dc);
    if (flat) {
      w.avg = w.min = w.max = w.last;
    } else {
      const std::pair<double*, std::pair<double, XorState*>> fields[] = {
          {&w.avg, {prev.avg, &avg_state}},
          {&w.min, {prev.min, &min_state}},
          {&w.max, {prev.max, &max_state}}};
      for (const auto& [value, p] : fields) {
        uint64_t equal = 0;
        if (!in.Read(1, equal)) {
          return malformed();
        }
        if (equal == 1) {
          *value = w.last;
        } else if (!ReadXor(in, p.first, *p.second, *value)) {
          return malformed();
        }
      }
    }
    prev_delta = delta;
    prev = w;
    out.push_back(w);
  }
  if (in.left() >= 8) {
    return bad("trailing bytes after " + std::to_string(n) + " windows");
  }
  return out;
}

}  // namespace warpscope::server
