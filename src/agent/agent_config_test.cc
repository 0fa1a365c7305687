// SPDX-License-Identifier: Apache-2.0
#include "agent/agent_config.h"

#include <gtest/gtest.h>

namespace warpscope::agent {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(AgentConfigTest, DefaultsAreValid) { EXPECT_TRUE(AgentConfig{}.Validate().ok()); }

TEST(AgentConfigTest, RejectsExportShorterThanCollect) {
  AgentConfig c;
  c.collect_interval = seconds(30);
  c.export_interval = seconds(10);
  base::Status s = c.Validate();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), base::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--export-metrics-interval=10s"), std::string::npos);
}

TEST(AgentConfigTest, RejectsTooShortCollectInterval) {
  AgentConfig c;
  c.collect_interval = milliseconds(10);
  EXPECT_NE(c.Validate().message().find("between 100ms and 1h"), std::string::npos);
}

TEST(AgentConfigTest, RejectsNothingToCollect) {
  AgentConfig c;
  c.enable_host_metrics = false;
  EXPECT_FALSE(c.Validate().ok());
  c.enable_gpu_metrics = true;
  EXPECT_TRUE(c.Validate().ok());
}

TEST(AgentConfigTest, StaticInferenceTargetsAreSomethingToCollect) {
  AgentConfig c;
  c.enable_host_metrics = false;
  c.inference_targets = {"http://127.0.0.1:8000/metrics"};
  EXPECT_TRUE(c.Validate().ok());
  c.enable_inference_metrics = false;
  EXPECT_FALSE(c.Validate().ok());
}

TEST(AgentConfigTest, RejectsBadOtlpEndpoint) {
  AgentConfig c;
  c.otlp_endpoint = "collector:4318";
  EXPECT_NE(c.Validate().message().find("http://"), std::string::npos);
}

TEST(ParseTagsTest, ParsesPairs) {
  auto tags = ParseTags("team:ml; cluster=a,zone:eu-1");
  ASSERT_TRUE(tags);
  ASSERT_EQ(tags->size(), 3u);
  EXPECT_EQ((*tags)[0], (std::pair<std::string, std::string>{"team", "ml"}));
  EXPECT_EQ((*tags)[2].second, "eu-1");
}

TEST(ParseTagsTest, RejectsBadKeysAndMissingValues) {
  EXPECT_FALSE(ParseTags("team"));
  EXPECT_FALSE(ParseTags("1team:x"));
  EXPECT_FALSE(ParseTags("bad-key:x"));
  EXPECT_FALSE(ParseTags("__name__:x"));
}

}  // namespace
}  // namespace warpscope::agent
