// SPDX-License-Identifier: Apache-2.0
#include "sim/inference/engine_command.h"

#include <gtest/gtest.h>

namespace warpscope::sim::inference {
namespace {

TEST(EngineCommandTest, ReadsVllmServe) {
  auto c = ParseEngineCommand({"vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--port", "0",
                               "--max-num-seqs", "64", "--max-num-batched-tokens=4096",
                               "--gpu-memory-utilization", "0.9", "--enable-prefix-caching"});
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->engine, Engine::kVllm);
  EXPECT_EQ(c->model, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(c->port, 0);
  EXPECT_EQ(c->max_num_seqs, 64u);
  EXPECT_EQ(c->max_num_batched_tokens, 4096u);
}

TEST(EngineCommandTest, ReadsVllmApiServerModuleWithServedName) {
  auto c = ParseEngineCommand({"/usr/bin/python3.11", "-m", "vllm.entrypoints.openai.api_server",
                               "--model", "/models/llama", "--served-model-name", "llama"});
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->engine, Engine::kVllm);
  EXPECT_EQ(c->model, "llama");
  EXPECT_EQ(c->port, 8000);
  EXPECT_EQ(c->max_num_seqs, 256u);
}

TEST(EngineCommandTest, ReadsTheOtherEngines) {
  auto s = ParseEngineCommand({"python3", "-m", "sglang.launch_server", "--model-path", "m",
                               "--port", "31000", "--max-running-requests", "32"});
  ASSERT_TRUE(s.has_value()) << s.error().message();
  EXPECT_EQ(s->engine, Engine::kSglang);
  EXPECT_EQ(s->max_num_seqs, 32u);
  EXPECT_EQ(s->port, 31000);
  auto t = ParseEngineCommand({"trtllm-serve", "m", "--max_batch_size", "8"});
  ASSERT_TRUE(t.has_value()) << t.error().message();
  EXPECT_EQ(t->engine, Engine::kTrtllm);
  EXPECT_EQ(t->max_num_seqs, 8u);
  EXPECT_EQ(MetricsPath(t->engine), "/prometheus/metrics");
  auto g = ParseEngineCommand(
      {"text-generation-launcher", "--model-id", "m", "--hostname", "127.0.0.1", "--port", "0"});
  ASSERT_TRUE(g.has_value()) << g.error().message();
  EXPECT_EQ(g->engine, Engine::kTgi);
  EXPECT_EQ(g->host, "127.0.0.1");
  EXPECT_EQ(EngineName(g->engine), "tgi");
}

TEST(EngineCommandTest, ErrorsNameTheArgument) {
  auto bad_port = ParseEngineCommand({"vllm", "serve", "m", "--port", "http"});
  ASSERT_FALSE(bad_port.has_value());
  EXPECT_NE(bad_port.error().message().find("--port 'http'"), std::string::npos);
  auto no_model = ParseEngineCommand({"text-generation-launcher", "--port", "0"});
  ASSERT_FALSE(no_model.has_value());
  EXPECT_NE(no_model.error().message().find("no model"), std::string::npos);
  auto unknown = ParseEngineCommand({"ollama", "serve"});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message().find("vllm serve MODEL"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::sim::inference
