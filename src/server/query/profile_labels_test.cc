// SPDX-License-Identifier: Apache-2.0
#include "server/query/profile_labels.h"

#include <gtest/gtest.h>

namespace warpscope::server::query {
namespace {

using profiling::Label;

LabelFilter Filter(std::string_view text) {
  auto f = ParseLabelFilter(text);
  EXPECT_TRUE(f) << text << ": " << f.error().message();
  return f.value_or(LabelFilter{});
}

profiling::Sample Sample(std::vector<Label> labels, int64_t value) {
  return {{0}, {value, value * 10}, std::move(labels)};
}

TEST(LabelFilterTest, ParsesNumbersStringsAndPrefixes) {
  EXPECT_EQ(Filter("device:0"), (LabelFilter{"device", "0", false, 0}));
  EXPECT_EQ(Filter("stream:-1"), (LabelFilter{"stream", "-1", false, -1}));
  EXPECT_EQ(Filter("nvtx:forward"), (LabelFilter{"nvtx", "forward", false, std::nullopt}));
  EXPECT_EQ(Filter("nvtx:train_step*"), (LabelFilter{"nvtx", "train_step", true, std::nullopt}));
  // Only the first ':' separates: NVTX ranges and C++ names have colons of their own.
  EXPECT_EQ(Filter("nvtx:aten::mm").value, "aten::mm");
  EXPECT_EQ(LabelFilterText(Filter("nvtx:step*")), "nvtx:step*");
}

TEST(LabelFilterTest, MalformedFiltersNameTheProblemAndTheFix) {
  for (std::string_view bad : {"device", ":0", "device:", ""}) {
    auto f = ParseLabelFilter(bad);
    ASSERT_FALSE(f) << bad;
    EXPECT_NE(f.error().message().find("expected KEY:VALUE"), std::string::npos)
        << f.error().message();
  }
  auto word = ParseLabelFilter("device:first");
  ASSERT_FALSE(word);
  EXPECT_NE(word.error().message().find("device is a number"), std::string::npos);
  EXPECT_NE(word.error().message().find("label=device:0"), std::string::npos);
  EXPECT_FALSE(ParseLabelFilter("stream:7*")) << "a prefix of a numeric key";
  // A numeric value also matches a string label of that text (another agent's labels).
  EXPECT_TRUE(LabelMatches(Filter("device:1"), Label{"device", "1", 0}));
  EXPECT_TRUE(LabelMatches(Filter("device:1"), Label{"device", "", 1}));
  EXPECT_FALSE(LabelMatches(Filter("nvtx:1x"), Label{"nvtx", "", 1}));
}

TEST(LabelSelectorTest, KeysAndTogetherAndOneKeysValuesOr) {
  const std::vector<LabelFilter> filters = {Filter("device:0"), Filter("stream:7"),
                                            Filter("stream:8")};
  const LabelSelector selector(filters);
  EXPECT_EQ(selector.keys(), (std::vector<std::string>{"device", "stream"}));
  EXPECT_TRUE(selector.Passes(std::vector<Label>{{"device", "", 0}, {"stream", "", 7}}));
  EXPECT_TRUE(selector.Passes(std::vector<Label>{{"stream", "", 8}, {"device", "", 0}}));
  auto v = selector.Check(std::vector<Label>{{"device", "", 1}, {"stream", "", 8}});
  EXPECT_EQ(v.failed, 1u);
  EXPECT_EQ(v.key, 0u);
  EXPECT_EQ(selector.Check(std::vector<Label>{{"pid", "", 4}}).failed, 2u);
  EXPECT_TRUE(LabelSelector().Passes(std::vector<Label>{}));
}

TEST(LabelCounterTest, EachKeysMenuIgnoresItsOwnFilter) {
  // device 0: 60 (stream 7: 40, stream 8: 20); device 1: 30 (stream 7); no device: 10.
  const std::vector<profiling::Sample> samples = {
      Sample({{"device", "", 0}, {"stream", "", 7}}, 40),
      Sample({{"device", "", 0}, {"stream", "", 8}}, 20),
      Sample({{"device", "", 1}, {"stream", "", 7}}, 30), Sample({{"stream", "", 7}}, 10)};
  const std::vector<LabelFilter> filters = {Filter("device:0")};
  const LabelSelector selector(filters);
  LabelCounter counter(selector);
  for (const auto& s : samples) counter.Add(selector.Check(s.labels), s);
  const std::vector<LabelKeyTotals> totals = counter.Totals(2);
  ASSERT_EQ(totals.size(), 2u);
  const LabelKeyTotals& device = totals[0];
  EXPECT_EQ(device.key, "device");
  EXPECT_EQ(device.total, (std::vector<int64_t>{100, 1000})) << "every device is on offer";
  EXPECT_EQ(device.unlabelled, (std::vector<int64_t>{10, 100}));
  ASSERT_EQ(device.values.size(), 2u);
  EXPECT_EQ(device.values[0].label, (Label{"device", "", 0}));
  EXPECT_EQ(device.values[0].total[0], 60);
  EXPECT_EQ(device.values[1].total[0], 30);
  const LabelKeyTotals& stream = totals[1];
  EXPECT_EQ(stream.total[0], 60) << "the streams of device 0";
  ASSERT_EQ(stream.values.size(), 2u);
  EXPECT_EQ(stream.values[0].total[0], 40);
  EXPECT_EQ(stream.values[1].total[0], 20);

  nlohmann::json json = LabelTotalsJson(totals, {.max_values = 1});
  ASSERT_EQ(json.size(), 2u);
  EXPECT_EQ(json[0]["key"], "device") << "the key labelling most first";
  EXPECT_EQ(json[0]["values"][0]["value"], 0);
  EXPECT_EQ(json[0]["values"][0]["filter"], "device:0");
  EXPECT_DOUBLE_EQ(json[0]["values"][0]["share"].get<double>(), 0.6);
  EXPECT_EQ(json[0]["values_omitted"], 1);
  EXPECT_EQ(json[0]["omitted_total"], (std::vector<int64_t>{30, 300}));
}

TEST(LabelCounterTest, StringValuesAndRepeatedLabelsCountOnce) {
  const LabelSelector selector;
  LabelCounter counter(selector);
  profiling::Sample s = Sample({{"nvtx", "forward", 0}, {"nvtx", "forward", 0}}, 5);
  counter.Add(selector.Check(s.labels), s);
  const auto totals = counter.Totals(2);
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].values.size(), 1u);
  EXPECT_EQ(totals[0].values[0].total[0], 5);
  EXPECT_EQ(totals[0].unlabelled[0], 0);
  nlohmann::json json = LabelTotalsJson(totals, {});
  EXPECT_EQ(json[0]["values"][0]["value"], "forward");
  EXPECT_EQ(json[0]["values"][0]["filter"], "nvtx:forward");
}

TEST(CapLabelSetsTest, KeepsTheHeaviestSetsAndFoldsTheRestUnderOneLabel) {
  profiling::Profile p;
  p.sample_types = {{"gpu_time", "nanoseconds"}, {"launches", "count"}};
  p.samples = {Sample({{"nvtx", "step 1", 0}}, 10), Sample({{"nvtx", "step 2", 0}}, 50),
               Sample({{"nvtx", "step 3", 0}}, 30), Sample({{"nvtx", "step 1", 0}}, 5),
               Sample({}, 7)};
  std::vector<profiling::Profile> profiles = {p};
  const LabelSetStats stats = CapLabelSets(profiles, 2);
  EXPECT_EQ(stats.kept, 2u);
  EXPECT_EQ(stats.over_cap, 1u);
  const auto& s = profiles[0].samples;
  EXPECT_EQ(s[1].labels, (std::vector<Label>{{"nvtx", "step 2", 0}}));
  EXPECT_EQ(s[2].labels, (std::vector<Label>{{"nvtx", "step 3", 0}}));
  const std::vector<Label> over = {{"labels_dropped", "over the cap of 2 label sets", 0}};
  EXPECT_EQ(s[0].labels, over) << "step 1 weighs 15 of 102, the lightest";
  EXPECT_EQ(s[3].labels, over);
  EXPECT_TRUE(s[4].labels.empty());

  std::vector<profiling::Profile> under = {p};
  EXPECT_EQ(CapLabelSets(under, 3).over_cap, 0u);
  EXPECT_EQ(under[0].samples[0].labels, p.samples[0].labels);
}

TEST(CapLabelSetsTest, SortsEachSamplesLabelsSoOrderDoesNotSplitASet) {
  profiling::Profile p;
  p.sample_types = {{"gpu_time", "nanoseconds"}, {"launches", "count"}};
  p.samples = {Sample({{"stream", "", 7}, {"device", "", 0}}, 1),
               Sample({{"device", "", 0}, {"stream", "", 7}}, 1)};
  std::vector<profiling::Profile> profiles = {p};
  EXPECT_EQ(CapLabelSets(profiles, 10).kept, 1u);
  EXPECT_EQ(profiles[0].samples[0].labels, profiles[0].samples[1].labels);
}

}  // namespace
}  // namespace warpscope::server::query
