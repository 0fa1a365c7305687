// SPDX-License-Identifier: Apache-2.0
#include "sim/inference/fake_config.h"

#include <gtest/gtest.h>

namespace warpscope::sim::inference {
namespace {

TEST(FakeConfigTest, ReadsEveryKey) {
  auto c = ParseFakeConfig(R"({"traffic": {"requests_per_second": 0.5, "ttft_seconds": [0.1, 0.2],
    "queue_seconds": [0.01], "itl_seconds": [0.03], "prompt_tokens": [64],
    "output_tokens": [8, 16], "prefix_hit_percent": 10, "step_seconds": 0.05,
    "kv_cache_tokens": 1000}, "vllm_names": "legacy", "clock": "manual"})");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->traffic.requests_per_second, 0.5);
  EXPECT_EQ(c->traffic.ttft_seconds, (std::vector<double>{0.1, 0.2}));
  EXPECT_EQ(c->traffic.output_tokens, (std::vector<uint32_t>{8, 16}));
  EXPECT_EQ(c->traffic.kv_cache_tokens, 1000u);
  EXPECT_EQ(c->vllm_names, VllmNames::kLegacy);
  EXPECT_TRUE(c->manual_clock);
}

TEST(FakeConfigTest, EmptyObjectMeansDefaults) {
  auto c = ParseFakeConfig("{}");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->vllm_names, VllmNames::kV1);
  EXPECT_FALSE(c->manual_clock);
}

TEST(FakeConfigTest, ErrorsNameTheKey) {
  EXPECT_NE(ParseFakeConfig("[1]").error().message().find("not a JSON object"), std::string::npos);
  EXPECT_NE(ParseFakeConfig(R"({"trafic": {}})").error().message().find("trafic: unknown key"),
            std::string::npos);
  EXPECT_NE(ParseFakeConfig(R"({"traffic": {"ttft_seconds": "fast"}})")
                .error()
                .message()
                .find("traffic.ttft_seconds: expected a list"),
            std::string::npos);
  EXPECT_NE(ParseFakeConfig(R"({"traffic": {"output_tokens": [-1]}})")
                .error()
                .message()
                .find("not a whole number"),
            std::string::npos);
  EXPECT_NE(ParseFakeConfig(R"({"clock": "wall"})").error().message().find("clock"),
            std::string::npos);
}

}  // namespace
}  // namespace warpscope::sim::inference
