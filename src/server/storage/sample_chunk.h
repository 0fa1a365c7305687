// SPDX-License-Identifier: Apache-2.0
// The sample chunk codec: a run of one series' raw windows (start, duration, avg, min, max,
// last, count) as one compressed blob, the unit of the sample_chunks table
// (docs/design/storage.md, "Sample chunks"). Pure code, no I/O.
//
// Format (version 2): a version byte, the window count as a LEB128 varint, a mode byte (how
// `last` is coded: 0 = [xor], 1-3 = [pred] of that order), then a bit stream (most significant
// bit first, zero-padded to a byte): the first window's start as 64 raw bits, then per window,
// against the previous one (the first against start delta 0, duration 0, count 0 and values
// +0.0):
//   '1'   regular and flat: the same start delta, duration and count, and avg = min = max =
//         last; then  last [value]
//   '01'  regular: the same start delta, duration and count; then  last [value], fields
//   '00'  general: start delta-of-delta [signed], duration difference [signed], count
//         difference [signed], last [value], then 1 bit: 1 = flat, else fields
//   fields  for each of avg, min, max: '1' equal to last, else '0' + [xor] against the previous
//           window's same field
//   [value]  [xor] in mode 0, else [pred]
//   [signed] zigzag, then '0' (0), '10'+7 bits, '110'+9, '1110'+12, '11110'+32, '11111'+64
//   [xor]    '0' when equal; else '1' then '0' + the meaningful bits in the previous
//            leading/trailing-zero frame, or '1' + 5 bits leading zeros + 6 bits (length - 1)
//            + that many bits (Gorilla's float compression, one frame per field)
//   [pred]   the value's bits as an ordered integer (sign-magnitude flipped so that integer
//            order is the doubles' order) minus a prediction from the previous values of the
//            chunk (order 1: the previous; 2: linear; 3: quadratic extrapolation; fewer at the
//            chunk's start), wrapping; the zigzagged residual's bit length L, against the
//            previous residual's: '0' the same, '10' + 2 bits (-2, -1, +1, +2), '11' + 7 bits
//            (L itself); then its L - 1 low bits (the top one is 1)
// The encoder codes the chunk in all four modes and keeps the smallest: values that are whole
// numbers or repeat (counters, temperatures, utilisation) compress best as XOR, whose frames
// drop their trailing zeros; full-precision values that move smoothly or wander (a power
// reading, a ratio) best as a predicted residual, whose bits XOR spends on the mantissa.
// Version 1 (no mode byte, always [xor]) is still read.
// A remote-write sample (one value, count 1, regular timestamps) costs 1 bit plus its value.
// A window whose value did not change costs 2 bits.
#ifndef WARPSCOPE_SERVER_STORAGE_SAMPLE_CHUNK_H_
#define WARPSCOPE_SERVER_STORAGE_SAMPLE_CHUNK_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warpscope::server {

// One raw window, as a samples row holds it.
struct ChunkWindow {
  int64_t start_ms = 0;
  int64_t duration_ms = 0;
  double avg = 0, min = 0, max = 0, last = 0;
  int64_t count = 0;

  // Bitwise on the values (so -0.0 and NaN payloads round-trip and compare as stored).
  bool operator==(const ChunkWindow& o) const;
};

// The most windows one chunk may hold; DecodeChunk refuses a larger count.
inline constexpr uint64_t kMaxChunkWindows = 1u << 20;

// Builds one chunk from windows appended in order. Not thread-safe.
class ChunkEncoder {
 public:
  ChunkEncoder() = default;
  // Appends a window; windows should come in increasing start order (any order round-trips,
  // only less compactly). At most kMaxChunkWindows.
  void Append(const ChunkWindow& w);
  size_t windows() const { return windows_; }
  // The encoded size so far in its smallest mode, in bytes, without the header.
  size_t bytes() const;
  // The chunk; the encoder is empty again afterwards.
  std::string Finish();

 private:
  struct XorFrame {
    int leading = -1;  // -1: no frame yet
    int trailing = 0;
  };
  // The chunk coded in one mode.
  struct Stream {
    std::vector<uint8_t> out;
    size_t bits = 0;
    XorFrame last_frame, avg_frame, min_frame, max_frame;
    uint64_t history[3] = {0, 0, 0};  // the previous `last` values, as ordered integers
    int residual_length = 0;

    void WriteBits(uint64_t value, int n);
    void WriteSigned(int64_t v);
    void WriteXor(double value, double previous, XorFrame& frame);
    void WritePredicted(double value, int order, size_t index);
  };
  static constexpr int kModes = 4;
  void AppendTo(Stream& s, int mode, const ChunkWindow& w, int64_t delta, bool regular, bool flat);

  Stream streams_[kModes];
  size_t windows_ = 0;
  ChunkWindow prev_;
  int64_t prev_delta_ = 0;
};

// Encodes `windows` as one chunk.
[[nodiscard]] std::string EncodeChunk(std::span<const ChunkWindow> windows);

// A run of one series' windows encoded as one chunk, with what a chunk table indexes it by.
struct EncodedChunk {
  int64_t series_id = 0;
  int64_t start_ms = 0;  // the first window's start
  int64_t end_ms = 0;    // the last window's start + 1
  int64_t count = 0;     // windows
  std::string data;      // the chunk
};

// Cuts windows, added in (series, start) order, into chunks: a new chunk for each series, at
// each multiple of `span_ms` (a chunk never crosses one) and once a chunk holds `target_bytes`.
// Not thread-safe.
class ChunkCutter {
 public:
  ChunkCutter(int64_t span_ms, size_t target_bytes) : span_ms_(span_ms), target_(target_bytes) {}
  void Add(int64_t series_id, const ChunkWindow& w);
  // The chunks cut so far, the open one closed; the cutter is empty again afterwards.
  std::vector<EncodedChunk> Finish();

 private:
  void Close();

  int64_t span_ms_;
  size_t target_;
  ChunkEncoder encoder_;
  EncodedChunk open_;
  int64_t span_ = 0;
  std::vector<EncodedChunk> done_;
};

// Decodes a chunk. A blob EncodeChunk did not produce (truncated, an unknown version, a count
// above kMaxChunkWindows or more than its bits can hold, trailing bytes) is InvalidArgument
// naming what is wrong; it never reads outside `data`.
[[nodiscard]] base::Result<std::vector<ChunkWindow>> DecodeChunk(std::string_view data);

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_STORAGE_SAMPLE_CHUNK_H_
