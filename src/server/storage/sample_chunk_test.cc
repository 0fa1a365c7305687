// SPDX-License-Identifier: Apache-2.0
#include "server/storage/sample_chunk.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace warpscope::server {
namespace {

std::vector<ChunkWindow> RoundTrip(const std::vector<ChunkWindow>& in) {
  std::string chunk = EncodeChunk(in);
  auto out = DecodeChunk(chunk);
  EXPECT_TRUE(out.has_value()) << out.error().ToString();
  return out ? *out : std::vector<ChunkWindow>{};
}

ChunkWindow Flat(int64_t start, double v) { return ChunkWindow{start, 10'000, v, v, v, v, 10}; }

// A remote-write sample: one value, count 1, every 10 s.
ChunkWindow Sample(int i, double v) {
  return ChunkWindow{1'700'000'000'000 + i * 10'000, 10'000, v, v, v, v, 1};
}

// How a chunk of fewer than 128 windows codes its `last` values (the byte after the count).
int ModeOf(const std::string& chunk) { return static_cast<uint8_t>(chunk.at(2)); }

TEST(SampleChunkTest, EmptyChunkRoundTrips) {
  EXPECT_TRUE(RoundTrip({}).empty());
  EXPECT_EQ(EncodeChunk({}).size(), 3u);  // version, count, mode
}

TEST(SampleChunkTest, RoundTripsWindowsWithDistinctValues) {
  std::vector<ChunkWindow> in;
  for (int i = 0; i < 500; ++i) {
    double v = 50 + 20 * std::sin(i * 0.1);
    in.push_back(ChunkWindow{1'700'000'000'000 + i * 10'000 + (i % 7 == 0 ? 3 : 0), 10'000, v,
                             v - 1.5, v + 2.25, v + 0.125, 10 + i % 3});
  }
  EXPECT_EQ(RoundTrip(in), in);
}

TEST(SampleChunkTest, FlatRegularWindowsCostTwoBitsEach) {
  std::vector<ChunkWindow> in;
  for (int i = 0; i < 720; ++i) {
    in.push_back(Flat(1'700'000'000'000 + i * 10'000, 42.0));
  }
  std::string chunk = EncodeChunk(in);
  // 2 bits per window after the first.
  EXPECT_LE(chunk.size(), 720u * 2 / 8 + 30);
  EXPECT_EQ(RoundTrip(in), in);
}

TEST(SampleChunkTest, RoundTripsExtremes) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<ChunkWindow> in = {
      {std::numeric_limits<int64_t>::max(), 0, -0.0, 0.0, inf, -inf, 0},
      {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), nan, 1e-308,
       -1e308, 5e-324, std::numeric_limits<int64_t>::min()},
      {0, -1, 1.0, 1.0, 1.0, 1.0, 1},
      {0, -1, 1.0, 1.0, 1.0, 1.0, 1},
      {-5, 7, 3.0, 3.0, 4.0, 3.0, 2},
  };
  EXPECT_EQ(RoundTrip(in), in);
}

TEST(SampleChunkTest, RoundTripsRandomWindows) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<ChunkWindow> in;
    int64_t t = static_cast<int64_t>(rng() % 2'000'000'000'000);
    const int n = static_cast<int>(rng() % 300);
    for (int i = 0; i < n; ++i) {
      t += static_cast<int64_t>(rng() % 4 == 0 ? rng() % 100'000 : 10'000);
      auto value = [&] {
        switch (rng() % 4) {
          case 0:
            return std::bit_cast<double>(rng());
          case 1:
            return static_cast<double>(rng() % 100);
          default:
            return static_cast<double>(rng() % 1000) / 7.0;
        }
      };
      double last = value();
      ChunkWindow w{t, static_cast<int64_t>(rng() % 3) * 5000, last, last, last, last,
                    static_cast<int64_t>(rng() % 12)};
      if (rng() % 2 == 0) {
        w.avg = value();
        w.min = rng() % 3 == 0 ? last : value();
        w.max = value();
      }
      in.push_back(w);
    }
    ASSERT_EQ(RoundTrip(in), in) << "round " << round;
  }
}

TEST(SampleChunkTest, EncoderReportsItsSizeAndResetsOnFinish) {
  ChunkEncoder e;
  EXPECT_EQ(e.bytes(), 0u);
  e.Append(Flat(1000, 1));
  e.Append(Flat(2000, 2));
  EXPECT_EQ(e.windows(), 2u);
  EXPECT_GT(e.bytes(), 8u);
  std::string first = e.Finish();
  EXPECT_EQ(e.windows(), 0u);
  e.Append(Flat(1000, 1));
  e.Append(Flat(2000, 2));
  EXPECT_EQ(e.Finish(), first);
}

TEST(SampleChunkTest, SmoothFullPrecisionValuesArePredicted) {
  // The remote-write benchmark's series: every value a full-precision double.
  std::vector<ChunkWindow> in;
  for (int i = 0; i < 120; ++i) in.push_back(Sample(i, 50.0 + 40.0 * std::sin(0.05 * i + 13)));
  std::string chunk = EncodeChunk(in);
  EXPECT_EQ(ModeOf(chunk), 3);
  // XOR spends about 57 bits on each of these values; the quadratic prediction about 43.
  EXPECT_LT(chunk.size(), 120u * 6);
  EXPECT_EQ(RoundTrip(in), in);
}

TEST(SampleChunkTest, AWanderingValueIsPredictedFromThePreviousOne) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> step(0, 0.5);
  std::vector<ChunkWindow> in;
  double v = 60;
  for (int i = 0; i < 120; ++i) in.push_back(Sample(i, v += step(rng)));
  std::string chunk = EncodeChunk(in);
  EXPECT_NE(ModeOf(chunk), 0);  // smaller than its XOR coding
  EXPECT_LT(chunk.size(), 120u * 7);
  EXPECT_EQ(RoundTrip(in), in);
}

TEST(SampleChunkTest, WholeNumbersKeepXor) {
  std::mt19937_64 rng(5);
  std::vector<ChunkWindow> in;
  for (int i = 0; i < 120; ++i) in.push_back(Sample(i, static_cast<double>(30 + rng() % 50)));
  std::string chunk = EncodeChunk(in);
  EXPECT_EQ(ModeOf(chunk), 0);
  EXPECT_LT(chunk.size(), 120u * 2);
  EXPECT_EQ(RoundTrip(in), in);
}

TEST(SampleChunkTest, PredictedChunksRoundTripExtremesAndEveryWindowShape) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<ChunkWindow> in;
  for (int i = 0; i < 100; ++i) in.push_back(Sample(i, 50.0 + 40.0 * std::sin(0.05 * i)));
  in[10].last = -0.0;
  in[11].last = std::numeric_limits<double>::quiet_NaN();
  in[12].last = -inf;
  in[13].last = 5e-324;
  in[14].last = -1e308;
  in[20].min = 1;  // not flat
  in[30].start_ms += 3;  // irregular
  in[31].count = 4;
  std::string chunk = EncodeChunk(in);
  EXPECT_NE(ModeOf(chunk), 0);
  EXPECT_EQ(RoundTrip(in), in);
  for (size_t len = 0; len < chunk.size(); ++len) {
    ASSERT_FALSE(DecodeChunk(chunk.substr(0, len)).has_value()) << len;
  }
  std::string moded = chunk;
  moded[2] = 7;
  EXPECT_NE(DecodeChunk(moded).error().message().find("unknown value coding 7"),
            std::string::npos);
}

TEST(SampleChunkTest, VersionOneChunksStillDecode) {
  // Written by the first version of the codec (no mode byte, every value XOR'd).
  const std::string v1(
      "\x01\x06\x00\x00\x01\x8b\xcf\xe5\x68\x00\x1e\x00\x00\x4e\x20\x81\x61\x3a\x02\x4c"
      "\xf0\x00\x02\x71\x01\xaf\x3c\x25\xaa\x29\x15\xdc\x77\xe2\xd0\xbf\x1f\x4c\xb6\x72"
      "\x21\xc8\x34\x29\x3b\xc3\xcc\xf3\x63\x6b\x76\x16\x9d\xe1\xe6\x79\xb1\xb6\xec\x3f"
      "\x3b\xc3\xcc\xf3\x63\x64\x6d\x05\x87\xdc\xb6\xf2\x38\xd4\xd6\x43\x8d\xb9\x7e\xbd"
      "\xb9\xd3\x16\x70\x18",
      85);
  const std::vector<ChunkWindow> want = {
      {1700000000000, 10000, 0x1.9p+5, 0x1.9p+5, 0x1.9p+5, 0x1.9p+5, 1},
      {1700000010000, 10000, 0x1.14b54522bb8eep+6, 0x1.14b54522bb8eep+6, 0x1.14b54522bb8eep+6,
       0x1.14b54522bb8eep+6, 1},
      {1700000020000, 10000, 0x1.4ea2a6cb2d40ap+6, 0x1.4ea2a6cb2d40ap+6, 0x1.4ea2a6cb2d40ap+6,
       0x1.4ea2a6cb2d40ap+6, 1},
      {1700000030007, 10000, 0x1.67996507de23cp+6, 0x1.63996507de23cp+6, 0x1.71996507de23cp+6,
       0x1.67996507de23cp+6, 4},
      {1700000040000, 10000, 0x1.597cd29618856p+6, 0x1.597cd29618856p+6, 0x1.597cd29618856p+6,
       0x1.597cd29618856p+6, 1},
      {1700000050000, 10000, 0x1.27c16b450ef57p+6, 0x1.27c16b450ef57p+6, 0x1.27c16b450ef57p+6,
       0x1.27c16b450ef57p+6, 1},
  };
  auto got = DecodeChunk(v1);
  ASSERT_TRUE(got.has_value()) << got.error().ToString();
  EXPECT_EQ(*got, want);
}

TEST(SampleChunkTest, RefusesDamagedChunksWithClearErrors) {
  std::vector<ChunkWindow> in;
  for (int i = 0; i < 40; ++i) {
    in.push_back(ChunkWindow{i * 1000, 1000, i * 1.5, i * 1.0, i * 2.0, i * 1.25, i});
  }
  std::string chunk = EncodeChunk(in);
  for (size_t len = 0; len < chunk.size(); ++len) {
    auto r = DecodeChunk(chunk.substr(0, len));
    ASSERT_FALSE(r.has_value()) << "prefix of " << len << " bytes decoded";
    EXPECT_EQ(r.error().code(), base::StatusCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find("sample chunk"), std::string::npos);
  }
  std::string versioned = chunk;
  versioned[0] = 9;
  EXPECT_NE(DecodeChunk(versioned).error().message().find("unknown version 9"),
            std::string::npos);
  EXPECT_FALSE(DecodeChunk(chunk + std::string(4, '\0')).has_value());
  std::string huge = std::string("\x01\xff\xff\xff\x7f", 5) + std::string(16, '\0');
  EXPECT_NE(DecodeChunk(huge).error().message().find("does not fit"), std::string::npos);
}

// Windows of two series cut at the span's start, at the target size and between the series;
// every chunk decodes to its windows, with the start, end and count it is indexed by.
TEST(ChunkCutterTest, CutsAtSeriesSpansAndTheTargetSize) {
  constexpr int64_t kSpan = 1000;
  ChunkCutter cutter(kSpan, 40);
  std::vector<std::pair<int64_t, ChunkWindow>> added;
  for (int64_t series : {7, 9}) {
    for (int64_t t = -300; t < 1700; t += 10) {  // the spans [-1000, 0), [0, 1000), [1000, 2000)
      const double v = 0.1 * static_cast<double>(t) + static_cast<double>(series);
      added.push_back({series, ChunkWindow{t, 10, v, v - 1, v + 1, v + 0.5, 3}});
      cutter.Add(series, added.back().second);
    }
  }
  const std::vector<EncodedChunk> chunks = cutter.Finish();

  std::vector<std::pair<int64_t, ChunkWindow>> decoded;
  for (const EncodedChunk& c : chunks) {
    auto windows = DecodeChunk(c.data);
    ASSERT_TRUE(windows.has_value()) << windows.error().ToString();
    ASSERT_FALSE(windows->empty());
    EXPECT_EQ(c.start_ms, windows->front().start_ms);
    EXPECT_EQ(c.end_ms, windows->back().start_ms + 1);
    EXPECT_EQ(c.count, static_cast<int64_t>(windows->size()));
    // Inside one span.
    const int64_t span = (c.start_ms % kSpan + kSpan) % kSpan;
    EXPECT_LT(c.end_ms - 1 - (c.start_ms - span), kSpan) << c.start_ms;
    for (const ChunkWindow& w : *windows) {
      decoded.push_back({c.series_id, w});
    }
  }
  EXPECT_EQ(decoded, added);
  // At 40 bytes the cutter closes chunks well before the spans do.
  EXPECT_GT(chunks.size(), 6u);
  EXPECT_TRUE(cutter.Finish().empty());
}

TEST(ChunkCutterTest, NothingAddedIsNoChunk) {
  ChunkCutter cutter(1000, 1000);
  EXPECT_TRUE(cutter.Finish().empty());
}

}  // namespace
}  // namespace warpscope::server
