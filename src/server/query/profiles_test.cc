// SPDX-License-Identifier: Apache-2.0
#include "server/query/profiles.h"

#include <gtest/gtest.h>

#include "profiling/pprof.h"
#include "server/query/testing/query_fixture.h"

namespace warpscope::server::query {
namespace {

// main -> work (`work` samples, 1 ms each) and main -> idle, labelled by `device`.
std::string CpuPprof(int64_t work, int64_t idle, int64_t device) {
  profiling::ProfileAggregator p(
      std::vector<profiling::ValueType>{{"samples", "count"}, {"cpu", "nanoseconds"}});
  uint32_t main = p.InternFrame({"main", "main.cc", 1});
  const int64_t w[] = {work, work * 1'000'000};
  const int64_t i[] = {idle, idle * 1'000'000};
  const std::vector<profiling::Label> labels{{"device", "", device}};
  p.Add(std::vector<uint32_t>{main, p.InternFrame({"work", "work.cc", 2})}, w, labels);
  p.Add(std::vector<uint32_t>{main, p.InternFrame({"idle", "main.cc", 3})}, i, labels);
  return profiling::EncodePprof(p.profile()).value();
}

class MergedProfilesTest : public QueryFixture {
 protected:
  void Store(const std::string& data, const std::string& kind, int64_t offset_s) {
    ProfileMeta m;
    m.host = "node1";
    m.kind = kind;
    m.start = At(kT0 + offset_s);
    m.end = At(kT0 + offset_s + 10);
    ASSERT_TRUE(storage_->WriteProfile(m, data));
  }
  ProfileQuery Window() const {
    ProfileQuery q;
    q.host = "node1";
    q.start = At(kT0);
    q.end = At(kT0 + 100);
    return q;
  }
};

TEST_F(MergedProfilesTest, SumsTheWindowsProfilesByStackWithoutLabels) {
  Store(CpuPprof(10, 5, 0), "cpu", 0);
  Store(CpuPprof(30, 1, 1), "cpu", 10);
  auto merged = MergeStoredProfiles(*storage_, Window());
  ASSERT_TRUE(merged) << merged.error().message();
  EXPECT_EQ(merged->profiles, 2u);
  EXPECT_EQ(merged->skipped, 0u);
  ASSERT_EQ(merged->profile.samples.size(), 2u) << "labels of the two devices are not kept";
  EXPECT_TRUE(merged->profile.samples[0].labels.empty());
  int64_t work = 0;
  for (const auto& s : merged->profile.samples) {
    if (merged->profile.frames[s.stack.back()].function == "work") work = s.values[0];
  }
  EXPECT_EQ(work, 40);
  nlohmann::json tree = MergedProfileTreeJson(*merged, {.sort_value = 1});
  EXPECT_EQ(tree["profiles"], 2);
  EXPECT_EQ(tree["value"], 1);
  EXPECT_EQ(tree["root"]["total"][0], 46);
}

TEST_F(MergedProfilesTest, LeavesOutWhatDoesNotDecodeAndSaysWhy) {
  Store(CpuPprof(10, 5, 0), "cpu", 0);
  Store("not a profile", "cpu", 10);
  auto merged = MergeStoredProfiles(*storage_, Window());
  ASSERT_TRUE(merged) << merged.error().message();
  EXPECT_EQ(merged->profiles, 1u);
  EXPECT_EQ(merged->skipped, 1u);
  EXPECT_NE(merged->first_error.find("pprof"), std::string::npos) << merged->first_error;

  ProfileQuery only_bad = Window();
  only_bad.start = At(kT0 + 10);
  auto none = MergeStoredProfiles(*storage_, only_bad);
  ASSERT_TRUE(none) << none.error().message();
  EXPECT_EQ(none->profiles, 0u);
  EXPECT_EQ(none->skipped, 1u);
}

TEST_F(MergedProfilesTest, AnEmptyWindowIsNotFoundAndMixedKindsAreRefused) {
  auto empty = MergeStoredProfiles(*storage_, Window());
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code(), base::StatusCode::kNotFound);
  EXPECT_NE(empty.error().message().find("run the CPU or CUDA profiler"), std::string::npos);

  Store(CpuPprof(10, 5, 0), "cpu", 0);
  profiling::ProfileAggregator gpu(std::vector<profiling::ValueType>{{"gpu_time", "nanoseconds"}});
  const int64_t v[] = {100};
  gpu.Add(std::vector<uint32_t>{gpu.InternFrame({"kernel"})}, v);
  Store(profiling::EncodePprof(gpu.profile()).value(), "gpu", 10);
  auto mixed = MergeStoredProfiles(*storage_, Window());
  ASSERT_FALSE(mixed);
  EXPECT_EQ(mixed.error().code(), base::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace warpscope::server::query
