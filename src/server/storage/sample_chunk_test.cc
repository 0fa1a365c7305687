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

TEST(SampleChunkTest, EmptyChunkRoundTrips) {
  EXPECT_TRUE(RoundTrip({}).empty());
  EXPECT_EQ(EncodeChunk({}).size(), 2u);
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

}  // namespace
}  // namespace warpscope::server
