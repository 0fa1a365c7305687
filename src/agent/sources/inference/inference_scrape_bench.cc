// SPDX-License-Identifier: Apache-2.0
// Cost of one scrape of a vLLM server as the inference source does it: HTTP GET over loopback
// (an in-process cpp-httplib server), ParsePromText, Normalize and the window's series. The
// exposition is a realistic vLLM V1 one: 1 or 4 models x 2 engines, every histogram vLLM serves
// (latencies, token counts per request, iteration tokens) with its own buckets, the counters
// and gauges, and the HTTP and process metrics of the API server.
#include <benchmark/benchmark.h>
#include <httplib.h>

#include <thread>

#include "agent/sources/inference/engines.h"
#include "agent/sources/inference/inference_window.h"
#include "agent/sources/inference/prom_text.h"
#include "agent/sources/inference/scraper.h"
#include "fmt/format.h"
#include "model/sample_sink.h"

namespace warpscope::agent::inference {
namespace {

class CountingSink : public model::SampleSink {
 public:
  void AddEntity(const model::Entity&) override {}
  void AddValue(const model::MetricDesc&, std::string_view, const model::Labels&, double) override {
    ++values;
  }
  void AddEvent(const model::Event&) override {}
  using SampleSink::AddValue;
  size_t values = 0;
};

std::string VllmExposition(int scrape, int n_models) {
  const std::vector<double> ttft = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                    0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                    20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
  const std::vector<double> itl = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                   0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
  const std::vector<double> req = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                   5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                   60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
  const std::vector<double> iter = {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
  const std::vector<double> tokens = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000};
  const std::pair<const char*, const std::vector<double>*> histograms[] = {
      {"vllm:time_to_first_token_seconds", &ttft},
      {"vllm:inter_token_latency_seconds", &itl},
      {"vllm:time_per_output_token_seconds", &itl},
      {"vllm:request_time_per_output_token_seconds", &itl},
      {"vllm:e2e_request_latency_seconds", &req},
      {"vllm:request_queue_time_seconds", &req},
      {"vllm:request_inference_time_seconds", &req},
      {"vllm:request_prefill_time_seconds", &req},
      {"vllm:request_decode_time_seconds", &req},
      {"vllm:iteration_tokens_total", &iter},
      {"vllm:request_prompt_tokens", &tokens},
      {"vllm:request_generation_tokens", &tokens},
      {"vllm:request_params_max_tokens", &tokens},
      {"vllm:request_max_num_generation_tokens", &tokens}};
  const char* models[] = {"meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct",
                          "mistralai/Mistral-7B-Instruct-v0.3", "google/gemma-2-9b-it"};
  std::string out;
  auto labels = [&](int m, int e) {
    return fmt::format("engine=\"{}\",model_name=\"{}\"", e, models[m]);
  };
  for (const char* gauge :
       {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"}) {
    out += fmt::format("# HELP {} gauge\n# TYPE {} gauge\n", gauge, gauge);
    for (int m = 0; m < n_models; ++m) {
      for (int e = 0; e < 2; ++e) out += fmt::format("{}{{{}}} {}\n", gauge, labels(m, e), 0.5 + e);
    }
  }
  for (const char* counter : {"vllm:prompt_tokens_total", "vllm:generation_tokens_total",
                              "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
                              "vllm:num_preemptions_total"}) {
    out += fmt::format("# HELP {} counter\n# TYPE {} counter\n", counter, counter);
    for (int m = 0; m < n_models; ++m) {
      for (int e = 0; e < 2; ++e) {
        out += fmt::format("{}{{{}}} {}.0\n", counter, labels(m, e), 100000 + 1000 * scrape);
      }
    }
  }
  out += "# HELP vllm:request_success_total counter\n# TYPE vllm:request_success_total counter\n";
  for (int m = 0; m < n_models; ++m) {
    for (int e = 0; e < 2; ++e) {
      for (const char* reason : {"stop", "length", "abort"}) {
        out += fmt::format("vllm:request_success_total{{{},finished_reason=\"{}\"}} {}.0\n",
                           labels(m, e), reason, 500 + 10 * scrape);
      }
    }
  }
  for (const auto& [name, buckets] : histograms) {
    out += fmt::format("# HELP {} histogram\n# TYPE {} histogram\n", name, name);
    for (int m = 0; m < n_models; ++m) {
      for (int e = 0; e < 2; ++e) {
        double cum = 0;
        for (size_t i = 0; i < buckets->size(); ++i) {
          cum += (i % 5) * (10 + scrape);
          out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}.0\n", name, labels(m, e), (*buckets)[i],
                             cum);
        }
        out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}.0\n", name, labels(m, e), cum);
        out += fmt::format("{}_count{{{}}} {}.0\n{}_sum{{{}}} {}\n", name, labels(m, e), cum, name,
                           labels(m, e), cum * 0.37);
      }
    }
  }
  // The API server's own metrics (prometheus_client and the FastAPI instrumentator).
  for (int i = 0; i < 40; ++i) {
    out += fmt::format(
        "http_request_duration_seconds_bucket{{handler=\"/v1/h{}\",le=\"0.1\",method=\"POST\"}} "
        "{}.0\n",
        i, i);
  }
  return out;
}

void BM_ScrapeParseNormalize(benchmark::State& state) {
  httplib::Server server;
  const int n_models = static_cast<int>(state.range(0));
  const std::string bodies[] = {VllmExposition(1, n_models), VllmExposition(2, n_models)};
  int served = 0;
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(bodies[served++ % 2], "text/plain; version=0.0.4");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread thread([&] { server.listen_after_bind(); });
  const ScrapeTarget target{"127.0.0.1", port, "/metrics"};
  std::vector<ModelSnapshot> prev;
  CountingSink sink;
  size_t bytes = 0;
  for (auto _ : state) {
    auto body = Scrape(target, std::chrono::seconds(5), 8 << 20);
    if (!body) {
      state.SkipWithError(body.error().message().c_str());
      break;
    }
    bytes = body->size();
    auto exposition = ParsePromText(*body);
    auto snapshot = Normalize(Engine::kVllm, *exposition, "");
    for (const ModelSnapshot& m : snapshot->models) {
      const ModelSnapshot* p = nullptr;
      for (const ModelSnapshot& x : prev) {
        if (x.model == m.model) p = &x;
      }
      WriteWindow(p, m, 10.0, {.max_num_batched_tokens = 8192, .max_num_seqs = 256}, "pid/1/1",
                  sink);
    }
    prev = std::move(snapshot->models);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["values_per_scrape"] =
      benchmark::Counter(static_cast<double>(sink.values), benchmark::Counter::kAvgIterations);
  server.stop();
  thread.join();
}
BENCHMARK(BM_ScrapeParseNormalize)
    ->Arg(1)
    ->Arg(4)
    ->ArgName("models")
    ->Unit(benchmark::kMicrosecond);

// The same without the HTTP round trip: parse, normalise and window only.
void BM_ParseNormalize(benchmark::State& state) {
  const std::string body = VllmExposition(2, static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto exposition = ParsePromText(body);
    auto snapshot = Normalize(Engine::kVllm, *exposition, "");
    benchmark::DoNotOptimize(snapshot);
  }
  state.counters["bytes"] = static_cast<double>(body.size());
}
BENCHMARK(BM_ParseNormalize)->Arg(1)->Arg(4)->ArgName("models")->Unit(benchmark::kMicrosecond);

// The parser alone, for comparison.
void BM_ParseOnly(benchmark::State& state) {
  const std::string body = VllmExposition(2, static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(ParsePromText(body));
}
BENCHMARK(BM_ParseOnly)->Arg(1)->Arg(4)->ArgName("models")->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace warpscope::agent::inference

BENCHMARK_MAIN();
