// SPDX-License-Identifier: Apache-2.0
#include "server/mcp/tools.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "server/mcp/testing/mcp_fixture.h"
#include "server/mcp/tool_args.h"

namespace warpscope::server::mcp {
namespace {

using nlohmann::json;
using query::At;
using query::kT0;

class McpToolsTest : public McpFixture {
 protected:
  void SetUp() override {
    McpFixture::SetUp();
    RunNode();
  }
  // A tools/call that must fail on its input: its text.
  std::string Fails(const std::string& tool, json arguments) {
    json r = Call(tool, std::move(arguments));
    EXPECT_TRUE(r.value("isError", false)) << r.dump(2);
    EXPECT_FALSE(r.contains("structuredContent"));
    return Text(r);
  }
  // A tools/call that must succeed: its structured content.
  json Succeeds(const std::string& tool, json arguments, std::string* text = nullptr) {
    json r = Call(tool, std::move(arguments));
    EXPECT_FALSE(r.value("isError", true)) << r.dump(2);
    EXPECT_EQ(r["content"][0]["type"], "text");
    if (text != nullptr) *text = Text(r);
    return r.value("structuredContent", json::object());
  }
};

TEST_F(McpToolsTest, TopEntitiesRanksGpusByAMetric) {
  std::string text;
  json s = Succeeds("top_entities", {{"metric", "gpu.power.usage"}, {"kind", "gpu"}}, &text);
  ASSERT_EQ(s["entities"].size(), 4u) << s.dump(2);
  EXPECT_EQ(s["entities"][3]["entity"], "GPU-3") << "the idle GPU last";
  EXPECT_NEAR(s["entities"][0]["value"].get<double>(), 600, 1e-6);
  EXPECT_EQ(s["aggregation"], "avg");
  EXPECT_NE(text.find("GPU-3"), std::string::npos);

  json asc =
      Succeeds("top_entities", {{"metric", "gpu.power.usage"}, {"order", "asc"}, {"limit", 1}});
  ASSERT_EQ(asc["entities"].size(), 1u);
  EXPECT_EQ(asc["entities"][0]["entity"], "GPU-3");
}

TEST_F(McpToolsTest, TopEntitiesDefaultsToTheLast15Minutes) {
  // The clock is at the end of the data: 15 minutes back still covers it; an hour later not.
  EXPECT_EQ(Succeeds("top_entities", {{"metric", "gpu.utilization"}})["entities"].size(), 4u);
  clock_.Advance(std::chrono::hours(1));
  std::string text;
  EXPECT_EQ(Succeeds("top_entities", {{"metric", "gpu.utilization"}}, &text)["entities"].size(),
            0u);
  EXPECT_NE(text.find("widen the range"), std::string::npos);
  // ... and relative, RFC 3339 and Unix ms times reach back to it.
  EXPECT_EQ(Succeeds("top_entities", {{"metric", "gpu.utilization"}, {"start", "-2h"}})["entities"]
                .size(),
            4u);
  EXPECT_EQ(Succeeds("top_entities", {{"metric", "gpu.utilization"},
                                      {"start", FormatTime(At(kT0))},
                                      {"end", (kT0 + 300) * 1000}})["entities"]
                .size(),
            4u);
}

TEST_F(McpToolsTest, TopEntitiesExplainsBadArguments) {
  EXPECT_NE(Fails("top_entities", json::object()).find("\"metric\" is required"),
            std::string::npos);
  EXPECT_NE(Fails("top_entities", {{"metric", 5}}).find("must be a string"), std::string::npos);
  EXPECT_NE(
      Fails("top_entities", {{"metric", "gpu.utilization"}, {"kind", "toaster"}}).find("kind"),
      std::string::npos);
  EXPECT_NE(Fails("top_entities", {{"metric", "gpu.utilization"}, {"agg", "median"}}).find("agg"),
            std::string::npos);
  EXPECT_NE(Fails("top_entities", {{"metric", "gpu.utilization"}, {"limit", 0}}).find("limit"),
            std::string::npos);
  EXPECT_NE(Fails("top_entities", {{"metric", "gpu.utilization"}, {"limit", "ten"}}).find("limit"),
            std::string::npos);
  EXPECT_NE(Fails("top_entities", {{"metric", "gpu.utilization"}, {"start", "yesterday"}})
                .find("RFC 3339"),
            std::string::npos);
  EXPECT_NE(Fails("top_entities", {{"metric", "gpu.utilization"}, {"start", "-1h"}, {"end", "-2h"}})
                .find("before end"),
            std::string::npos);
  EXPECT_NE(
      Fails("top_entities", {{"metric", "gpu.utilization"}, {"start", "-90d"}}).find("31 days"),
      std::string::npos);
  EXPECT_NE(Fails("top_entities", {{"metric", "gpu.utilization"}, {"colour", "red"}})
                .find("unknown argument \"colour\""),
            std::string::npos);
  EXPECT_NE(Fails("top_entities", {{"metric", "gpu.utilization"}, {"start", json::array()}})
                .find("start"),
            std::string::npos);
}

TEST_F(McpToolsTest, TopEntitiesCapsTheLimit) {
  json s = Succeeds("top_entities", {{"metric", "gpu.utilization"}, {"limit", 1000000}});
  EXPECT_EQ(s["entities"].size(), 4u);
}

TEST_F(McpToolsTest, TopEntitiesOfAnUnknownMetricListsTheKnownOnes) {
  std::string text = Fails("top_entities", {{"metric", "gpu.utilisation"}});
  EXPECT_NE(text.find("gpu.utilization"), std::string::npos) << text;
}

TEST_F(McpToolsTest, QueryMetricReturnsPointsPerSeries) {
  std::string text;
  json s = Succeeds("query_metric",
                    {{"metric", "gpu.utilization"}, {"entity", "GPU-0"}, {"step", "1m"}}, &text);
  ASSERT_EQ(s["series"].size(), 1u) << s.dump(2);
  const json& points = s["series"][0]["points"];
  EXPECT_GE(points.size(), 10u);
  EXPECT_LE(points.size(), 16u);
  EXPECT_NEAR(points[0][1].get<double>(), 0.9, 1e-9);
  EXPECT_EQ(s["step_seconds"], 60.0);
  EXPECT_EQ(s["metric"]["key"], "gpu.utilization");
  EXPECT_NE(text.find("max 0.9"), std::string::npos) << text;
}

TEST_F(McpToolsTest, QueryMetricFiltersByLabelsAndBoundsSeriesAndPoints) {
  json one = Succeeds("query_metric",
                      {{"metric", "gpu.process.memory.used"}, {"labels", {{"gpu.uuid", "GPU-0"}}}});
  EXPECT_EQ(one["series"].size(), 1u);
  json none = Succeeds(
      "query_metric", {{"metric", "gpu.process.memory.used"}, {"labels", {{"gpu.uuid", "GPU-9"}}}});
  EXPECT_EQ(none["series"].size(), 0u);

  json two = Succeeds("query_metric", {{"metric", "gpu.utilization"}, {"max_series", 2}});
  EXPECT_EQ(two["series"].size(), 2u);
  EXPECT_EQ(two["series_omitted"], 2);

  std::string err =
      Fails("query_metric", {{"metric", "gpu.utilization"}, {"step", "1s"}, {"start", "-1h"}});
  EXPECT_NE(err.find("more than 500 points"), std::string::npos) << err;
  EXPECT_NE(err.find("at least 8s"), std::string::npos) << err;
  EXPECT_NE(Fails("query_metric", {{"metric", "gpu.utilization"}, {"step", "fast"}}).find("step"),
            std::string::npos);
  EXPECT_NE(
      Fails("query_metric", {{"metric", "gpu.utilization"}, {"labels", {{"a", 1}}}}).find("labels"),
      std::string::npos);
  EXPECT_NE(Fails("query_metric", {{"metric", "gpu.utilization"}, {"labels", "gpu.uuid=x"}})
                .find("labels"),
            std::string::npos);
}

TEST_F(McpToolsTest, QueryMetricOfAnUnknownMetricIsNotFoundWithTheKnownOnes) {
  std::string err = Fails("query_metric", {{"metric", "gpu.nope"}});
  EXPECT_NE(err.find("gpu.utilization"), std::string::npos) << err;
}

TEST_F(McpToolsTest, ListInsightsGivesFindingsWithEvidenceAndFilters) {
  std::string text;
  json all = Succeeds("list_insights", json::object(), &text);
  ASSERT_TRUE(all["findings"].is_array());
  std::set<std::string> rules;
  for (const json& f : all["findings"]) {
    rules.insert(f["rule"].get<std::string>());
    EXPECT_TRUE(f["evidence"].is_object());
    EXPECT_FALSE(f["evidence"].contains("series"));
  }
  EXPECT_EQ(rules, (std::set<std::string>{"hardware_errors", "idle_allocated"}));
  EXPECT_NE(text.find("idle"), std::string::npos);

  json idle = Succeeds("list_insights", {{"rule", "idle_allocated"}, {"host", "node-1"}});
  ASSERT_EQ(idle["findings"].size(), 1u);
  EXPECT_EQ(idle["findings"][0]["entity"], "GPU-3");
  EXPECT_EQ(Succeeds("list_insights", {{"host", "node-2"}})["findings"].size(), 0u);
  EXPECT_EQ(Succeeds("list_insights", {{"limit", 1}})["findings"].size(), 1u);
  EXPECT_EQ(Succeeds("list_insights", {{"state", "resolved"}})["findings"].size(), 0u);
  EXPECT_EQ(Succeeds("list_insights", {{"start", "-1m"}, {"end", "now"}})["findings"].size(), 2u);
}

TEST_F(McpToolsTest, ListInsightsExplainsBadFilters) {
  EXPECT_NE(Fails("list_insights", {{"rule", "overheating"}}).find("idle_allocated"),
            std::string::npos)
      << "lists the rules";
  EXPECT_NE(Fails("list_insights", {{"severity", "urgent"}}).find("severity"), std::string::npos);
  EXPECT_NE(Fails("list_insights", {{"state", 1}}).find("state"), std::string::npos);
}

TEST_F(McpToolsTest, ListInsightsSaysWhenInsightsAreOff) {
  McpServer no_insights(*storage_, nullptr, clock_);
  json reply = *no_insights.Handle({{"jsonrpc", "2.0"},
                                    {"id", 1},
                                    {"method", "tools/call"},
                                    {"params", {{"name", "list_insights"}}}},
                                   {});
  EXPECT_TRUE(reply["result"]["isError"].get<bool>());
  EXPECT_NE(Text(reply["result"]).find("insights are off"), std::string::npos);
}

TEST_F(McpToolsTest, ExplainGpuDescribesMetricsFindingsAndProcesses) {
  std::string text;
  json s = Succeeds("explain_gpu", {{"gpu", "GPU-3"}}, &text);
  EXPECT_EQ(s["host"], "node-1");
  EXPECT_NEAR(s["metrics"]["gpu.utilization"]["latest"].get<double>(), 0, 1e-9);
  ASSERT_EQ(s["open_findings"].size(), 1u) << s.dump(2);
  EXPECT_EQ(s["open_findings"][0]["rule"], "idle_allocated");
  EXPECT_NE(text.find("idle"), std::string::npos) << text;
  EXPECT_NE(text.find("NVIDIA H100"), std::string::npos) << text;

  json gpu0 = Succeeds("explain_gpu", {{"gpu", "0"}, {"host", "node-1"}}, &text);
  EXPECT_EQ(gpu0["gpu"], "GPU-0");
  ASSERT_EQ(gpu0["processes"].size(), 1u) << gpu0.dump(2);
  EXPECT_EQ(gpu0["processes"][0]["entity"], "pid/42/1");
  EXPECT_NE(text.find("python3 (pid 42)"), std::string::npos) << text;
  EXPECT_EQ(gpu0["open_findings"].size(), 0u);
}

TEST_F(McpToolsTest, ExplainGpuExplainsAGpuItCannotFind) {
  EXPECT_NE(Fails("explain_gpu", {{"gpu", "GPU-9"}}).find("top_entities"), std::string::npos);
  EXPECT_NE(Fails("explain_gpu", {{"gpu", "0"}}).find("host"), std::string::npos);
  EXPECT_NE(Fails("explain_gpu", json::object()).find("\"gpu\" is required"), std::string::npos);
  EXPECT_NE(Fails("explain_gpu", {{"gpu", "GPU-"}}).find("no GPU"), std::string::npos)
      << "a prefix is not a GPU";
}

TEST_F(McpToolsTest, ProfileTopRanksKernelsOfTheGpuProfile) {
  std::string text;
  json s = Succeeds("profile_top", {{"host", "node-1"}, {"pid", 42}}, &text);
  EXPECT_EQ(s["kind"], "gpu");
  EXPECT_EQ(s["sample_type"]["type"], "gpu_time");
  EXPECT_EQ(s["total"], 100'000'000);
  ASSERT_EQ(s["kernels"].size(), 2u) << s.dump(2);
  EXPECT_EQ(s["kernels"][0]["function"], "gemm");
  EXPECT_NEAR(s["kernels"][0]["share"].get<double>(), 0.75, 1e-9);
  EXPECT_EQ(s["top_self"][0]["function"], "gemm");
  // python3 and cudaLaunchKernel are on every stack: 100% each, by name on a tie.
  EXPECT_EQ(s["top_total"][0]["function"], "cudaLaunchKernel");
  EXPECT_EQ(s["top_total"][1]["function"], "python3");
  EXPECT_NEAR(s["top_total"][1]["share"].get<double>(), 1.0, 1e-9);
  EXPECT_EQ(s["top_total"][2]["function"], "gemm");
  EXPECT_NE(text.find("75.0% gemm"), std::string::npos) << text;
}

TEST_F(McpToolsTest, ProfileTopRanksCpuFunctionsBySelfAndTotal) {
  json s = Succeeds("profile_top", {{"host", "node-1"}, {"kind", "cpu"}, {"limit", 2}});
  EXPECT_EQ(s["sample_type"]["type"], "cpu");
  ASSERT_EQ(s["top_self"].size(), 2u);
  EXPECT_EQ(s["top_self"][0]["function"], "matmul");
  EXPECT_EQ(s["top_self"][0]["module"], "/usr/lib/libtorch.so");
  EXPECT_NEAR(s["top_self"][0]["share"].get<double>(), 0.75, 1e-9);
  EXPECT_EQ(s["top_total"][1]["function"], "step");
  EXPECT_EQ(s["kernels"].size(), 0u);
  json samples =
      Succeeds("profile_top", {{"host", "node-1"}, {"kind", "cpu"}, {"sample_type", "samples"}});
  EXPECT_EQ(samples["total"], 40);
}

TEST_F(McpToolsTest, ProfileTopExplainsMissingProfilesAndBadArguments) {
  EXPECT_NE(Fails("profile_top", {{"host", "node-2"}}).find("Not found"), std::string::npos);
  EXPECT_NE(Fails("profile_top", {{"host", "node-1"}, {"kind", "tpu"}}).find("kind"),
            std::string::npos);
  EXPECT_NE(Fails("profile_top", {{"host", "node-1"}, {"pid", -1}}).find("pid"), std::string::npos);
  EXPECT_NE(
      Fails("profile_top", {{"host", "node-1"}, {"sample_type", "watts"}}).find("sample_type"),
      std::string::npos);
  EXPECT_NE(Fails("profile_top", json::object()).find("host"), std::string::npos);
}

TEST(ParseToolTimeTest, AcceptsMillisRfc3339AndRelativeTimes) {
  const base::TimePoint now = At(kT0);
  EXPECT_EQ(*ParseToolTime(json(kT0 * 1000), now), now);
  EXPECT_EQ(*ParseToolTime(json(std::to_string(kT0 * 1000)), now), now);
  EXPECT_EQ(*ParseToolTime(json("2023-11-14T22:13:20Z"), now), now);
  EXPECT_EQ(*ParseToolTime(json("-15m"), now), now - std::chrono::minutes(15));
  EXPECT_EQ(*ParseToolTime(json("now-1h"), now), now - std::chrono::hours(1));
  EXPECT_EQ(*ParseToolTime(json("+5m"), now), now + std::chrono::minutes(5));
  EXPECT_EQ(*ParseToolTime(json("now"), now), now);
  for (json bad : {json(-1), json(1e300), json("tomorrow"), json(""), json(true), json("-"),
                   json("-99999999999h"), json(std::string(100, '1'))}) {
    EXPECT_FALSE(ParseToolTime(bad, now)) << bad.dump();
  }
  EXPECT_EQ(FormatTime(now), "2023-11-14T22:13:20Z");
  EXPECT_EQ(FormatTime(now + std::chrono::milliseconds(5)), "2023-11-14T22:13:20.005Z");
}

}  // namespace
}  // namespace warpscope::server::mcp
