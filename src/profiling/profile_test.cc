// SPDX-License-Identifier: Apache-2.0
#include "profiling/profile.h"

#include <gtest/gtest.h>

namespace warpscope::profiling {
namespace {

TEST(ProfileAggregatorTest, InternsFramesAndSumsSamplesWithTheSameStackAndLabels) {
  ProfileAggregator agg({{"samples", "count"}, {"cpu", "nanoseconds"}});
  uint32_t main = agg.InternFrame({"main", "main.cc", 1});
  uint32_t work = agg.InternFrame({"work", "work.cc", 2});
  EXPECT_EQ(agg.InternFrame({"main", "main.cc", 1}), main);
  EXPECT_NE(agg.InternFrame({"main", "main.cc", 1, "", "", "", FrameKind::kPython}), main)
      << "the kind is part of a frame's identity";
  const std::vector<uint32_t> stack{main, work};
  const int64_t one[] = {1, 10};
  const int64_t two[] = {2, 20};
  const std::vector<Label> gpu0{{"device", "", 0}};
  const std::vector<Label> gpu1{{"device", "", 1}};
  size_t a = agg.Add(stack, one, gpu0);
  EXPECT_EQ(agg.Add(stack, two, gpu0), a);
  size_t b = agg.Add(stack, one, gpu1);
  EXPECT_NE(b, a);
  size_t c = agg.Add(stack, one);
  EXPECT_NE(c, a);
  const Profile& p = agg.profile();
  ASSERT_EQ(p.samples.size(), 3u);
  EXPECT_EQ(p.samples[a].values, (std::vector<int64_t>{3, 30}));
  EXPECT_EQ(p.samples[b].labels, gpu1);
  EXPECT_EQ(StackFrames(p, p.samples[a])[1].function, "work");
}

TEST(ProfileAggregatorTest, MissingValuesCountZeroAndExtraOnesAreIgnored) {
  ProfileAggregator agg(std::vector<ValueType>{{"a", "count"}, {"b", "count"}});
  uint32_t f = agg.InternFrame({"f"});
  const int64_t short_values[] = {5};
  const int64_t long_values[] = {1, 2, 3};
  agg.Add(std::vector<uint32_t>{f}, short_values);
  agg.Add(std::vector<uint32_t>{f}, long_values);
  EXPECT_EQ(agg.profile().samples[0].values, (std::vector<int64_t>{6, 2}));
}

TEST(ProfileAggregatorTest, StacksThatDifferOnlyInLengthStayApart) {
  ProfileAggregator agg(std::vector<ValueType>{{"a", "count"}});
  uint32_t f = agg.InternFrame({"f"});
  const int64_t v[] = {1};
  agg.Add(std::vector<uint32_t>{f}, v);
  agg.Add(std::vector<uint32_t>{f, f}, v);
  agg.Add(std::vector<uint32_t>{}, v);
  EXPECT_EQ(agg.profile().samples.size(), 3u);
}

TEST(MergeTest, ReinternsFramesAcrossProfilesAndKeepsLabelsApart) {
  auto make = [](int64_t device, int64_t value) {
    ProfileAggregator agg(std::vector<ValueType>{{"gpu_time", "nanoseconds"}});
    uint32_t other = agg.InternFrame({"unused"});
    uint32_t k = agg.InternFrame({"kernel"});
    const int64_t v[] = {value};
    agg.Add(std::vector<uint32_t>{k}, v, std::vector<Label>{{"device", "", device}});
    (void)other;
    return std::move(agg).Take();
  };
  std::vector<Profile> profiles{make(0, 10), make(0, 5), make(1, 7)};
  auto merged = Merge(profiles);
  ASSERT_TRUE(merged) << merged.error().message();
  ASSERT_EQ(merged->samples.size(), 2u);
  EXPECT_EQ(merged->samples[0].values[0], 15);
  EXPECT_EQ(merged->samples[1].values[0], 7);
  EXPECT_EQ(merged->frames[merged->samples[0].stack[0]].function, "kernel");
  EXPECT_EQ(merged->frames.size(), 2u);
}

TEST(WidenSampleTypesTest, ProfilesOfTwoKindsMergeUnderTheUnionOfTheirTypes) {
  ProfileAggregator cpu(std::vector<ValueType>{{"samples", "count"}, {"cpu", "nanoseconds"}});
  const int64_t c[] = {2, 20};
  cpu.Add(std::vector<uint32_t>{cpu.InternFrame({"main"})}, c);
  ProfileAggregator gpu(std::vector<ValueType>{{"gpu_time", "nanoseconds"}, {"samples", "count"}});
  const int64_t g[] = {500, 7};
  gpu.Add(std::vector<uint32_t>{gpu.InternFrame({"main"}), gpu.InternFrame({"kernel"})}, g);
  std::vector<Profile> both{cpu.profile(), gpu.profile()};
  std::vector<ValueType> types = UnionSampleTypes(both);
  EXPECT_EQ(types, (std::vector<ValueType>{
                       {"samples", "count"}, {"cpu", "nanoseconds"}, {"gpu_time", "nanoseconds"}}));
  for (Profile& p : both) p = WidenSampleTypes(std::move(p), types);
  auto merged = Merge(both);
  ASSERT_TRUE(merged) << merged.error().message();
  ASSERT_EQ(merged->samples.size(), 2u);
  EXPECT_EQ(merged->samples[0].values, (std::vector<int64_t>{2, 20, 0}));
  EXPECT_EQ(merged->samples[1].values, (std::vector<int64_t>{7, 0, 500}));
  // A type not in the list is dropped.
  Profile narrow = WidenSampleTypes(gpu.profile(), {{"gpu_time", "nanoseconds"}});
  EXPECT_EQ(narrow.samples[0].values, (std::vector<int64_t>{500}));
}

}  // namespace
}  // namespace warpscope::profiling
