// SPDX-License-Identifier: Apache-2.0
// warpscope-fake-inference as a process: started under vLLM's and TensorRT-LLM's argv on port 0,
// it looks like the engine in /proc/<pid>/cmdline and serves the engine's exposition of the
// traffic model at the time the test sets.
#include "sim/inference/testing/fake_engine_process.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include "agent/sources/inference/prom_text.h"
#include "base/testing/temp_dir.h"

namespace warpscope::sim::inference {
namespace {

namespace prom = agent::inference;

std::vector<std::string> Cmdline(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  std::stringstream parts(text);
  for (std::string part; std::getline(parts, part, '\0');) out.push_back(part);
  return out;
}

double SampleValue(const prom::Exposition& e, const std::string& name) {
  for (const prom::Family& f : e.families) {
    for (const prom::Sample& s : f.samples) {
      if (s.name == name) return s.value;
    }
  }
  return -1;
}

TEST(FakeEngineProcessTest, LooksAndScrapesLikeVllm) {
  base::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::vector<std::string> argv = {
      "vllm",   "serve",          "meta-llama/Llama-3.1-8B-Instruct",
      "--host", "127.0.0.1",      "--port",
      "0",      "--max-num-seqs", "256"};
  auto engine = FakeEngineProcess::Start(
      {.argv = argv,
       .config_json = R"({"clock": "manual", "traffic": {"requests_per_second": 1,
                          "queue_seconds": [0.01], "ttft_seconds": [0.05],
                          "itl_seconds": [0.02], "output_tokens": [10]}})",
       .dir = dir.path()});
  ASSERT_TRUE(engine.has_value()) << engine.error().message();
  EXPECT_GT((*engine)->port(), 0);
  EXPECT_EQ(Cmdline((*engine)->pid()), argv);

  httplib::Client client("127.0.0.1", (*engine)->port());
  auto set = client.Put("/warpscope-fake/time", "10", "text/plain");
  ASSERT_TRUE(set) << httplib::to_string(set.error());
  ASSERT_EQ(set->status, 200);
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200);
  auto e = prom::ParsePromText(res->body);
  ASSERT_TRUE(e.has_value()) << e.error().message();
  // Requests 0..9 arrived by 10 s and took 0.05 + 9 * 0.02 = 0.23 s; request 10 arrives at 10 s.
  EXPECT_EQ(SampleValue(*e, "vllm:request_success_total"), 10);
  EXPECT_EQ(SampleValue(*e, "vllm:generation_tokens_total"), 100);
  EXPECT_EQ(SampleValue(*e, "vllm:num_requests_waiting"), 1);

  const int status = (*engine)->Stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(FakeEngineProcessTest, TrtllmServesOnItsOwnPath) {
  base::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  auto engine =
      FakeEngineProcess::Start({.argv = {"trtllm-serve", "nvidia/Llama-3.1-8B-Instruct-FP8",
                                         "--host", "127.0.0.1", "--port", "0"},
                                .dir = dir.path()});
  ASSERT_TRUE(engine.has_value()) << engine.error().message();
  EXPECT_EQ((*engine)->metrics_path(), "/prometheus/metrics");
  httplib::Client client("127.0.0.1", (*engine)->port());
  auto res = client.Get("/prometheus/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("trtllm_time_to_first_token_seconds_bucket"), std::string::npos);
  auto other = client.Get("/metrics");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
}

TEST(FakeEngineProcessTest, SglangAndTgiCommandLines) {
  base::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::vector<std::vector<std::string>> argvs = {
      {"python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen2.5-7B-Instruct",
       "--host", "127.0.0.1", "--port", "0", "--enable-metrics"},
      {"text-generation-launcher", "--model-id", "mistralai/Mistral-7B-Instruct-v0.3", "--hostname",
       "127.0.0.1", "--port", "0"}};
  for (const auto& argv : argvs) {
    SCOPED_TRACE(argv[0]);
    auto engine = FakeEngineProcess::Start({.argv = argv, .dir = dir.path()});
    ASSERT_TRUE(engine.has_value()) << engine.error().message();
    EXPECT_EQ(Cmdline((*engine)->pid()), argv);
    httplib::Client client("127.0.0.1", (*engine)->port());
    auto res = client.Get("/metrics");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    auto e = prom::ParsePromText(res->body);
    ASSERT_TRUE(e.has_value()) << e.error().message();
    const std::string prefix = argv[0] == "python3" ? "sglang:" : "tgi_";
    for (const prom::Family& f : e->families) EXPECT_TRUE(f.name.starts_with(prefix)) << f.name;
  }
}

TEST(FakeEngineProcessTest, BadCommandLineFailsWithTheReason) {
  base::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  auto engine = FakeEngineProcess::Start(
      {.argv = {"vllm", "serve", "m", "--port", "eighty"}, .dir = dir.path()});
  ASSERT_FALSE(engine.has_value());
  EXPECT_NE(engine.error().message().find("--port 'eighty'"), std::string::npos)
      << engine.error().message();
}

}  // namespace
}  // namespace warpscope::sim::inference
