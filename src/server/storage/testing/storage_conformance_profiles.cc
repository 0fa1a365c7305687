// SPDX-License-Identifier: Apache-2.0
// The conformance suite (storage_conformance.h): profiles.
#include <gmock/gmock.h>

#include <algorithm>
#include <string>
#include <vector>

#include "server/storage/testing/storage_conformance.h"

namespace warpscope::server {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;


TEST_P(StorageConformanceTest, ProfilesRoundTrip) {
  std::string data("\x1f\x8b\x00binary\xff", 10);
  ProfileMeta cpu{.host = "h1",
                  .entity = "pid/42/100",
                  .pid = 42,
                  .executable = "python3",
                  .kind = "cpu",
                  .start = kT0,
                  .end = kT0 + minutes(1),
                  .labels = {{"job", "train"}}};
  ProfileMeta gpu = cpu;
  gpu.kind = "gpu";
  gpu.start = kT0 + minutes(1);
  gpu.end = kT0 + minutes(2);

  auto cpu_id = storage().WriteProfile(cpu, data);
  auto gpu_id = storage().WriteProfile(gpu, "other");

  ASSERT_TRUE(cpu_id.has_value()) << cpu_id.error().ToString();
  ASSERT_TRUE(gpu_id.has_value());
  EXPECT_NE(*cpu_id, *gpu_id);
  auto read = storage().ReadProfile(*cpu_id);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->data, data);
  EXPECT_EQ(read->meta.id, *cpu_id);
  EXPECT_EQ(read->meta.host, "h1");
  EXPECT_EQ(read->meta.entity, "pid/42/100");
  EXPECT_EQ(read->meta.pid, 42);
  EXPECT_EQ(read->meta.executable, "python3");
  EXPECT_EQ(read->meta.start, kT0);
  EXPECT_EQ(read->meta.end, kT0 + minutes(1));
  EXPECT_EQ(read->meta.labels.Get("job"), "train");
  EXPECT_EQ(read->meta.size_bytes, data.size());

  auto newest_first = storage().ListProfiles({.start = kT0, .end = kT0 + hours(1)});
  ASSERT_TRUE(newest_first.has_value());
  ASSERT_THAT(*newest_first, SizeIs(2));
  EXPECT_EQ((*newest_first)[0].kind, "gpu");
  auto cpu_only = storage().ListProfiles({.kind = "cpu", .start = kT0, .end = kT0 + hours(1)});
  ASSERT_TRUE(cpu_only.has_value());
  ASSERT_THAT(*cpu_only, SizeIs(1));
  auto overlapping =
      storage().ListProfiles({.pid = 42, .start = kT0 + seconds(90), .end = kT0 + hours(1)});
  ASSERT_TRUE(overlapping.has_value());
  ASSERT_THAT(*overlapping, SizeIs(1));
  EXPECT_EQ((*overlapping)[0].id, *gpu_id);
}

TEST_P(StorageConformanceTest, UnknownProfileIsNotFound) {
  auto r = storage().ReadProfile(12345);

  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), base::StatusCode::kNotFound);
}

TEST_P(StorageConformanceTest, OversizedProfileIsRefused) {
  options_.max_profile_bytes = 8;
  Reopen();

  auto r = storage().WriteProfile(
      ProfileMeta{.host = "h1", .kind = "cpu", .start = kT0, .end = kT0 + minutes(1)},
      "123456789");

  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), base::StatusCode::kInvalidArgument);
}

// A chart's "others": every process's profiles but those of the excluded pids.
TEST_P(StorageConformanceTest, ProfilesOfExcludedProcessesAreLeftOut) {
  for (int64_t pid : {7, 42, 4242, 424}) {
    ASSERT_TRUE(storage().WriteProfile(ProfileMeta{.host = "h1",
                                                   .pid = pid,
                                                   .kind = "cpu",
                                                   .start = kT0,
                                                   .end = kT0 + minutes(1)},
                                       "x"));
  }
  auto pids_of = [&](std::vector<int64_t> excluded) {
    std::vector<int64_t> out;
    auto list = storage().ListProfiles(
        {.exclude_pids = std::move(excluded), .start = kT0, .end = kT0 + hours(1)});
    EXPECT_TRUE(list.has_value());
    for (const ProfileMeta& m : list.value_or(std::vector<ProfileMeta>{})) out.push_back(m.pid);
    std::sort(out.begin(), out.end());
    return out;
  };
  // 42 must not exclude 4242 or 424 (whole pids, not digits).
  EXPECT_THAT(pids_of({42}), ElementsAre(7, 424, 4242));
  EXPECT_THAT(pids_of({7, 4242}), ElementsAre(42, 424));
  EXPECT_THAT(pids_of({}), ElementsAre(7, 42, 424, 4242));
  EXPECT_THAT(pids_of({7, 42, 424, 4242}), IsEmpty());
}

}  // namespace
}  // namespace warpscope::server
