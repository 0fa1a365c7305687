// SPDX-License-Identifier: Apache-2.0
// The scraper against an in-process HTTP server on port 0, and the source end to end: a fake
// /proc with a vLLM server whose listening socket is that server's port.
#include "agent/sources/inference/inference_source.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "base/testing/temp_dir.h"
#include "model/testing/collecting_sink.h"

namespace warpscope::agent::inference {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::string ReadFixture(std::string_view name) {
  std::ifstream in(std::string(WARPSCOPE_SOURCE_DIR) + "/test/data/inference/" + std::string(name));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// An HTTP server on a free loopback port, in a thread of its own.
class TestServer {
 public:
  TestServer() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~TestServer() {
    server_.stop();
    thread_.join();
  }
  httplib::Server& server() { return server_; }
  int port() const { return port_; }
  ScrapeTarget Target(std::string path) const { return {"127.0.0.1", port_, std::move(path)}; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(ScraperTest, ParsesUrls) {
  auto t = ParseScrapeUrl("http://10.0.0.5:8000/prometheus/metrics");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->host, "10.0.0.5");
  EXPECT_EQ(t->port, 8000);
  EXPECT_EQ(t->path, "/prometheus/metrics");
  EXPECT_EQ(ParseScrapeUrl("http://[::1]:9000")->host, "::1");
  EXPECT_EQ(ParseScrapeUrl("http://[::1]:9000")->path, "/metrics");
  EXPECT_FALSE(ParseScrapeUrl("https://host:8000/metrics").has_value());
  EXPECT_FALSE(ParseScrapeUrl("http://host:http/metrics").has_value());
  EXPECT_TRUE(ParseInferenceTarget("http://127.0.0.1:8000/metrics,engine=sglang").has_value());
  auto bad = ParseInferenceTarget("http://127.0.0.1:8000/metrics,engine=triton");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("expected vllm, sglang, trtllm or tgi"), std::string::npos);
  auto with_pid = ParseInferenceTarget("http://127.0.0.1:8000/metrics,engine=vllm,pid=4242");
  ASSERT_TRUE(with_pid.has_value());
  EXPECT_EQ(with_pid->engine, Engine::kVllm);
  EXPECT_EQ(with_pid->pid, 4242);
  EXPECT_EQ(ParseInferenceTarget("http://127.0.0.1:8000/metrics,pid=7")->pid, 7);
  EXPECT_FALSE(ParseInferenceTarget("http://127.0.0.1:8000/metrics").value().pid.has_value());
  auto bad_pid = ParseInferenceTarget("http://127.0.0.1:8000/metrics,pid=12x");
  ASSERT_FALSE(bad_pid.has_value());
  EXPECT_NE(bad_pid.error().message().find("expected pid=PID"), std::string::npos);
  EXPECT_FALSE(ParseInferenceTarget("http://127.0.0.1:8000/metrics,pid=0").has_value());
  EXPECT_FALSE(ParseInferenceTarget("http://127.0.0.1:8000/metrics,port=1").has_value());
}

TEST(ScraperTest, GetsTheBodyAndRefusesErrorsAndOversize) {
  TestServer s;
  s.server().Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(1000, '#'), "text/plain");
  });
  auto ok = Scrape(s.Target("/metrics"), seconds(5), 4096);
  ASSERT_TRUE(ok.has_value()) << ok.error().ToString();
  EXPECT_EQ(ok->size(), 1000u);

  auto missing = Scrape(s.Target("/nothing"), seconds(5), 4096);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), base::StatusCode::kUnavailable);
  EXPECT_NE(missing.error().message().find("HTTP 404"), std::string::npos);

  auto big = Scrape(s.Target("/metrics"), seconds(5), 100);
  ASSERT_FALSE(big.has_value());
  EXPECT_EQ(big.error().code(), base::StatusCode::kResourceExhausted);
}

TEST(ScraperTest, TimesOutOnASilentServer) {
  TestServer s;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  s.server().Get("/metrics", [released](const httplib::Request&, httplib::Response& res) {
    released.wait();  // answers only once the test is done
    res.set_content("up 1\n", "text/plain");
  });
  auto r = Scrape(s.Target("/metrics"), milliseconds(200), 4096);
  release.set_value();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), base::StatusCode::kUnavailable);
}

TEST(ScraperTest, NothingListening) {
  TestServer s;
  const int port = s.port();
  s.server().stop();
  auto r = Scrape({"127.0.0.1", port, "/metrics"}, seconds(1), 4096);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), base::StatusCode::kUnavailable);
}

// A vLLM server of pid 4242 listening on `port` (tcp, inode 777) in a fake /proc under `root`.
void FakeVllmProcess(const std::string& root, int port) {
  const std::string dir = root + "/proc/4242";
  fs::create_directories(dir + "/fd");
  fs::create_directories(dir + "/net");
  fs::create_directories(root + "/proc/4243/fd");
  std::ofstream(dir + "/stat")
      << "4242 (python3) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5000 0 0\n";
  std::ofstream(root + "/proc/4243/stat")
      << "4243 (VLLM::EngineCor) S 4242 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5001 0 0\n";
  const std::string argv[] = {"python3",
                              "/usr/bin/vllm",
                              "serve",
                              "meta-llama/Llama-3.1-8B-Instruct",
                              "--max-num-batched-tokens",
                              "8192"};
  std::string cmdline;
  for (const auto& a : argv) cmdline += a + '\0';
  std::ofstream(dir + "/cmdline", std::ios::binary) << cmdline;
  std::ofstream(root + "/proc/4243/cmdline") << "VLLM::EngineCore";
  fs::create_symlink("socket:[777]", dir + "/fd/5");
  char local[32];
  std::snprintf(local, sizeof(local), "0100007F:%04X", port);
  std::ofstream(dir + "/net/tcp")
      << "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
         "timeout inode\n"
      << "   0: " << local
      << " 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 "
         "0 777 1 0000000000000000 100 0 0 10 0\n";
}

TEST(InferenceSourceTest, DiscoversScrapesAndWritesTheWindow) {
  TestServer s;
  int scrape = 0;
  s.server().Get("/metrics", [&scrape](const httplib::Request&, httplib::Response& res) {
    res.set_content(ReadFixture(++scrape == 1 ? "vllm_1.prom" : "vllm_2.prom"), "text/plain");
  });
  base::TempDir root("inference_source_");
  FakeVllmProcess(root.path(), s.port());
  base::FakeClock clock;
  std::vector<std::string> errors;
  InferenceSourceOptions options;
  options.host_root = root.path();
  InferenceSource source(options, clock, nullptr,
                         [&errors](std::string_view r) { errors.emplace_back(r); });
  source.SetPollDeadline(seconds(5));
  ASSERT_TRUE(source.Start().ok());
  // NVML saw the engine core child on GPU 1 and the API server nowhere.
  model::Frame nvml;
  nvml.series.push_back(
      {.entity = "pid/4243/5001", .labels = {{"gpu.index", "1"}, {"gpu.uuid", "GPU-bbb"}}});
  nvml.series.push_back(
      {.entity = "pid/4243/5001", .labels = {{"gpu.index", "0"}, {"gpu.uuid", "GPU-aaa"}}});
  source.SetGpuProcesses(GpuProcessesOf(nvml));

  model::CollectingSink out;
  source.Poll(clock.Now(), out);
  source.Finish(clock.Now(), out);
  clock.Advance(seconds(10));
  out.Clear();
  source.Poll(clock.Now(), out);
  source.Finish(clock.Now(), out);

  EXPECT_TRUE(errors.empty()) << errors.front();
  const model::Entity* e = out.FindEntity("pid/4242/5000");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->attributes.Get("inference.engine"), "vllm");
  EXPECT_EQ(e->attributes.Get("inference.endpoint"),
            "http://127.0.0.1:" + std::to_string(s.port()) + "/metrics");
  EXPECT_EQ(e->attributes.Get("inference.gpu.uuids"), "GPU-aaa,GPU-bbb");
  const model::Labels p50{{"model", "meta-llama/Llama-3.1-8B-Instruct"}, {"quantile", "0.5"}};
  EXPECT_NEAR(*out.Find("inference.time_to_first_token", "pid/4242/5000", p50), 0.064, 1e-9);
  const model::Labels tokens{{"basis", "tokens"}, {"model", "meta-llama/Llama-3.1-8B-Instruct"}};
  EXPECT_EQ(out.Find("inference.batch.efficiency", "pid/4242/5000", tokens), 0.125);
  EXPECT_TRUE(out.Find("inference.scrape.samples", "pid/4242/5000").has_value());
}

TEST(InferenceSourceTest, CountsBadExpositionsAndStaticTargets) {
  TestServer s;
  s.server().Get("/bad", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("vllm:num_requests_running{model_name=\"m} 1\n", "text/plain");
  });
  s.server().Get("/other", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("up 1\n", "text/plain");
  });
  s.server().Get("/big", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(200000, '\n'), "text/plain");
  });
  s.server().Get("/sglang", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(ReadFixture("sglang_1.prom"), "text/plain");
  });
  const std::string base = "http://127.0.0.1:" + std::to_string(s.port());
  InferenceSourceOptions options;
  options.discover = false;
  options.host_id = "host1";
  for (const char* path : {"/bad", "/other", "/big", "/missing"}) {
    options.targets.push_back({base + path, std::nullopt});
  }
  options.max_body_bytes = 100000;
  options.targets.push_back({base + "/sglang", Engine::kSglang});
  base::FakeClock clock;
  std::vector<std::string> errors;
  InferenceSource source(options, clock, nullptr,
                         [&errors](std::string_view r) { errors.emplace_back(r); });
  ASSERT_TRUE(source.Start().ok());
  model::CollectingSink out;
  source.Poll(clock.Now(), out);
  source.Finish(clock.Now(), out);
  EXPECT_EQ(errors, (std::vector<std::string>{"parse_failed", "unknown_engine", "too_large",
                                              "scrape_failed"}));
  const std::string id = "inference/127.0.0.1:" + std::to_string(s.port());
  const model::Entity* e = out.FindEntity(id);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->parent, "host1");
  EXPECT_EQ(e->attributes.Get("inference.engine"), "sglang");
  EXPECT_EQ(
      out.Find("inference.requests.running", id, {{"model", "meta-llama/Llama-3.1-8B-Instruct"}}),
      10);
}

TEST(InferenceSourceTest, RefusesABadStaticTarget) {
  base::FakeClock clock;
  InferenceSource source({.discover = false, .targets = {{"ftp://x/metrics", std::nullopt}}}, clock,
                         nullptr, nullptr);
  EXPECT_FALSE(source.Start().ok());
}

}  // namespace
}  // namespace warpscope::agent::inference
