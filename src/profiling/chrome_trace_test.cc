// SPDX-License-Identifier: Apache-2.0
#include "profiling/chrome_trace.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace warpscope::profiling {
namespace {

using nlohmann::json;

TEST(ChromeTraceTest, WritesEventsTheTraceViewersRead) {
  ChromeTraceWriter w;
  w.ProcessName(7, "app \"x\"");
  w.Complete("kernel", 1000, 3, 1'500, 2'250, "gemm")
      .Unsigned("correlation_id", 42)
      .Array("grid", {1, 2, 3})
      .Fixed3("rate", 1.23456)
      .Str("kind", "HtoD");
  w.Instant("nvtx", 7, 9, -1'001, "mark").Str("domain", "");
  w.FlowStart("launch", "launch", 1, 7, 9, 1'000);
  w.FlowEnd("launch", "launch", 1, 1000, 3, 1'500);
  w.ThreadName(7, 9, "thread 9");
  w.ProcessSortIndex(1000, 1);
  std::string text = w.Finish({{"pid", 7}, {"window_end_ns", 9}});
  json doc = json::parse(text);
  EXPECT_EQ(doc["displayTimeUnit"], "ns");
  const json& e = doc["traceEvents"];
  ASSERT_EQ(e.size(), 7u);
  EXPECT_EQ(e[0]["args"]["name"], "app \"x\"");
  EXPECT_EQ(e[1]["ph"], "X");
  EXPECT_EQ(e[1]["ts"], 1.5);
  EXPECT_EQ(e[1]["dur"], 2.25);
  EXPECT_EQ(e[1]["args"]["grid"], json::array({1, 2, 3}));
  EXPECT_EQ(e[1]["args"]["rate"], 1.235);
  EXPECT_EQ(e[1]["args"]["kind"], "HtoD");
  EXPECT_EQ(e[2]["ph"], "i");
  EXPECT_EQ(e[2]["s"], "t");
  EXPECT_EQ(e[2]["ts"], -1.001);
  EXPECT_EQ(e[3]["ph"], "s");
  EXPECT_EQ(e[4]["bp"], "e");
  EXPECT_EQ(e[5]["tid"], 9);
  EXPECT_EQ(e[6]["args"]["sort_index"], 1);
  EXPECT_EQ(doc["otherData"]["window_end_ns"], 9);
  // Times are exact: nanoseconds as microseconds with three decimals.
  EXPECT_NE(text.find("\"ts\":1.500"), std::string::npos);
}

TEST(ChromeTraceTest, EscapesControlCharacters) {
  fmt::memory_buffer out;
  AppendJsonString(out, std::string("a\tb\n\x01\\", 6));
  EXPECT_EQ(fmt::to_string(out), "\"a\\tb\\n\\u0001\\\\\"");
}

TEST(ChromeTraceTest, AnEmptyTraceIsValid) {
  ChromeTraceWriter w;
  json doc = json::parse(w.Finish({}));
  EXPECT_TRUE(doc["traceEvents"].empty());
}

}  // namespace
}  // namespace warpscope::profiling
