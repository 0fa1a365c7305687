// SPDX-License-Identifier: Apache-2.0
#include "server/storage/staged_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>

namespace warpscope::server::storage_internal {

// Found by argument-dependent lookup, so outside the unnamed namespace.
bool operator==(const StagedSample& a, const StagedSample& b) {
  return std::memcmp(&a, &b, sizeof(a)) == 0;  // bitwise: NaN payloads and -0 too
}

namespace {

std::vector<StagedSample> RoundTrip(const std::vector<StagedSample>& rows) {
  std::string blob;
  EncodeStaged(rows, blob);
  std::vector<StagedSample> out;
  base::Status st = DecodeStaged(blob, out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

TEST(StagedCodecTest, ARemoteWriteSampleTakesAboutTwelveBytes) {
  std::vector<StagedSample> rows;
  for (int64_t s = 1; s <= 1000; ++s) {
    const double v = 0.25 * static_cast<double>(s);
    rows.push_back(StagedSample{.series_id = s,
                                .start_ms = 1'700'000'000'000,
                                .avg = v,
                                .min = v,
                                .max = v,
                                .last = v,
                                .count = 1});
  }
  std::string blob;
  EncodeStaged(rows, blob);
  EXPECT_LT(blob.size(), 8 + 2 + 1000 * 12 + 8);  // the first start takes 6 bytes more
  EXPECT_EQ(RoundTrip(rows), rows);
}

TEST(StagedCodecTest, EveryFieldRoundTripsWhateverItHolds) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  std::vector<StagedSample> rows = {
      {.series_id = kMax,
       .start_ms = kMin,
       .duration_ms = kMax,
       .avg = 1,
       .min = -0.0,
       .max = 3,
       .last = 4,
       .count = kMin},
      {.series_id = kMin,
       .start_ms = kMax,
       .duration_ms = -5,
       .avg = -0.0,
       .min = 0.0,
       .max = 0.0,
       .last = 0.0,
       .count = 0},
      {.series_id = 3,
       .start_ms = 0,
       .avg = std::numeric_limits<double>::quiet_NaN(),
       .min = std::numeric_limits<double>::quiet_NaN(),
       .max = std::numeric_limits<double>::quiet_NaN(),
       .last = std::numeric_limits<double>::quiet_NaN(),
       .count = 1},
      {.series_id = 2,
       .start_ms = 10,
       .duration_ms = 10'000,
       .avg = 5,
       .min = 5,
       .max = 5,
       .last = 5,
       .count = 7},
  };
  std::mt19937_64 random(7);
  for (int i = 0; i < 1000; ++i) {
    StagedSample r;
    r.series_id = static_cast<int64_t>(random() >> (random() % 64));
    r.start_ms = static_cast<int64_t>(random());
    r.duration_ms = static_cast<int64_t>(random() % 3 == 0 ? 0 : random());
    r.avg = std::bit_cast<double>(random());
    const bool one = random() % 2 == 0;
    r.min = one ? r.avg : std::bit_cast<double>(random());
    r.max = one ? r.avg : std::bit_cast<double>(random());
    r.last = one ? r.avg : std::bit_cast<double>(random());
    r.count = random() % 2 == 0 ? 1 : static_cast<int64_t>(random());
    rows.push_back(r);
  }
  EXPECT_EQ(RoundTrip(rows), rows);
  EXPECT_TRUE(RoundTrip({}).empty());
}

// Databases written before version 2 hold 64-byte images; they are read as they are.
TEST(StagedCodecTest, Version1BlobsAreRead) {
  std::vector<StagedSample> rows = {
      {.series_id = 9,
       .start_ms = 1000,
       .duration_ms = 10,
       .avg = 1,
       .min = 0,
       .max = 2,
       .last = 1.5,
       .count = 4},
      {.series_id = 1, .start_ms = 2000, .avg = 3, .min = 3, .max = 3, .last = 3, .count = 1}};
  std::string blob(reinterpret_cast<const char*>(rows.data()), rows.size() * sizeof(rows[0]));
  std::vector<StagedSample> out = {rows[1]};  // appended to what is there
  ASSERT_TRUE(DecodeStaged(blob, out).ok());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1], rows[0]);
  EXPECT_EQ(out[2], rows[1]);
}

TEST(StagedCodecTest, DamagedBlobsAreErrorsNamingWhere) {
  std::vector<StagedSample> rows(
      3, StagedSample{
             .series_id = 1, .start_ms = 5, .avg = 1, .min = 0, .max = 2, .last = 1, .count = 3});
  std::string blob;
  EncodeStaged(rows, blob);
  for (size_t cut = 1; cut < blob.size() - 8; ++cut) {
    std::vector<StagedSample> out;
    base::Status st = DecodeStaged(std::string_view(blob).substr(0, blob.size() - cut), out);
    // A cut inside the magic reads as a version 1 blob of the wrong size.
    ASSERT_FALSE(st.ok()) << "cut " << cut;
    EXPECT_EQ(st.code(), base::StatusCode::kInvalidArgument);
    EXPECT_LT(out.size(), rows.size());
  }
  std::string unknown_flag = blob;
  unknown_flag[9] = static_cast<char>(0x80);  // after the magic and the count
  std::vector<StagedSample> out;
  base::Status st = DecodeStaged(unknown_flag, out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("at byte 9"), std::string::npos) << st.message();
  EXPECT_FALSE(DecodeStaged(blob + "x", out).ok()) << "bytes after the last sample";
  EXPECT_FALSE(DecodeStaged(std::string(100, 'x'), out).ok());
}

}  // namespace
}  // namespace warpscope::server::storage_internal
