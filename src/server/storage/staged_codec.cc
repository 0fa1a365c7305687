// SPDX-License-Identifier: Apache-2.0
#include "server/storage/staged_codec.h"

#include <bit>
#include <cstring>

namespace warpscope::server::storage_internal {
namespace {

constexpr std::string_view kMagic = "WSSTAGE2";
constexpr uint8_t kOneValue = 1;    // avg == min == max == last (bitwise)
constexpr uint8_t kCountOne = 2;    // count == 1
constexpr uint8_t kNoDuration = 4;  // duration_ms == 0
constexpr uint8_t kKnownFlags = 7;

static_assert(sizeof(StagedSample) == 64 && std::endian::native == std::endian::little,
              "version 1 blobs are 64-byte little-endian images of StagedSample");

uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void PutDouble(std::string& out, double v) {
  char bytes[8];
  std::memcpy(bytes, &v, 8);
  out.append(bytes, 8);
}

bool SameBits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool done() const { return at_ == data_.size(); }
  bool Byte(uint8_t& v) {
    if (at_ >= data_.size()) return false;
    v = static_cast<uint8_t>(data_[at_++]);
    return true;
  }
  bool Varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b = 0;
      if (!Byte(b)) return false;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;  // more than 10 bytes
  }
  bool Signed(int64_t& v) {
    uint64_t u = 0;
    if (!Varint(u)) return false;
    v = UnZigZag(u);
    return true;
  }
  bool Double(double& v) {
    if (data_.size() - at_ < 8) return false;
    std::memcpy(&v, data_.data() + at_, 8);
    at_ += 8;
    return true;
  }
  size_t at() const { return at_; }

 private:
  std::string_view data_;
  size_t at_ = 0;
};

}  // namespace

void EncodeStaged(std::span<const StagedSample> rows, std::string& out) {
  out.reserve(out.size() + kMagic.size() + rows.size() * 14);
  out.append(kMagic);
  PutVarint(out, rows.size());
  int64_t series = 0;
  int64_t start = 0;
  for (const StagedSample& r : rows) {
    const bool one = SameBits(r.avg, r.min) && SameBits(r.avg, r.max) && SameBits(r.avg, r.last);
    uint8_t flags = 0;
    flags |= one ? kOneValue : 0;
    flags |= r.count == 1 ? kCountOne : 0;
    flags |= r.duration_ms == 0 ? kNoDuration : 0;
    out.push_back(static_cast<char>(flags));
    // Deltas wrap like the unsigned arithmetic they are, so any int64 round-trips.
    PutVarint(out, ZigZag(static_cast<int64_t>(static_cast<uint64_t>(r.series_id) -
                                               static_cast<uint64_t>(series))));
    PutVarint(out, ZigZag(static_cast<int64_t>(static_cast<uint64_t>(r.start_ms) -
                                               static_cast<uint64_t>(start))));
    series = r.series_id;
    start = r.start_ms;
    if ((flags & kNoDuration) == 0) PutVarint(out, ZigZag(r.duration_ms));
    PutDouble(out, r.avg);
    if (!one) {
      PutDouble(out, r.min);
      PutDouble(out, r.max);
      PutDouble(out, r.last);
    }
    if ((flags & kCountOne) == 0) PutVarint(out, ZigZag(r.count));
  }
}

base::Status DecodeStaged(std::string_view blob, std::vector<StagedSample>& out) {
  if (!blob.starts_with(kMagic)) {
    if (blob.size() % sizeof(StagedSample) != 0) {
      return base::InvalidArgument(
          "{} bytes are neither a version 2 blob nor a whole number of 64-byte samples",
          blob.size());
    }
    const size_t at = out.size();
    out.resize(at + blob.size() / sizeof(StagedSample));
    std::memcpy(static_cast<void*>(out.data() + at), blob.data(), blob.size());
    return base::OkStatus();
  }
  Reader in(blob.substr(kMagic.size()));
  uint64_t count = 0;
  // Each sample takes at least 11 bytes: a count beyond that is damage, not a size to reserve.
  if (!in.Varint(count) || count > blob.size() / 11) {
    return base::InvalidArgument("version 2 blob of {} bytes: damaged sample count", blob.size());
  }
  out.reserve(out.size() + count);
  int64_t series = 0;
  int64_t start = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const size_t sample_at = kMagic.size() + in.at();
    StagedSample r;
    uint8_t flags = 0;
    int64_t series_delta = 0, start_delta = 0;
    bool ok = in.Byte(flags) && (flags & ~kKnownFlags) == 0 && in.Signed(series_delta) &&
              in.Signed(start_delta);
    r.series_id = series =
        static_cast<int64_t>(static_cast<uint64_t>(series) + static_cast<uint64_t>(series_delta));
    r.start_ms = start =
        static_cast<int64_t>(static_cast<uint64_t>(start) + static_cast<uint64_t>(start_delta));
    ok = ok && ((flags & kNoDuration) != 0 || in.Signed(r.duration_ms)) && in.Double(r.avg);
    if (ok && (flags & kOneValue) != 0) {
      r.min = r.max = r.last = r.avg;
    } else {
      ok = ok && in.Double(r.min) && in.Double(r.max) && in.Double(r.last);
    }
    r.count = 1;
    ok = ok && ((flags & kCountOne) != 0 || in.Signed(r.count));
    if (!ok) {
      return base::InvalidArgument("version 2 blob of {} bytes: the sample at byte {} is damaged",
                                   blob.size(), sample_at);
    }
    out.push_back(r);
  }
  if (!in.done()) {
    return base::InvalidArgument("version 2 blob of {} bytes: {} bytes after its {} samples",
                                 blob.size(), blob.size() - kMagic.size() - in.at(), count);
  }
  return base::OkStatus();
}

}  // namespace warpscope::server::storage_internal
