// SPDX-License-Identifier: Apache-2.0
// The agent against the fake serving engines (src/sim/inference/): vLLM under its current and
// its older metric names, SGLang, TensorRT-LLM and TGI, each a real process started under the
// engine's own command line on port 0 with a manual clock. The agent is the one `warpscope agent
// --enable-inference-metrics` runs (AgentProcess: discovery in the real /proc, scrape, engine
// names, window math, the Prometheus exporter), on a stepped clock that moves with the fakes'
// clocks, so that every window of the agent is exactly a window of the traffic model. Its
// /metrics must then say what the traffic model says for that window: the percentiles as the
// documented interpolation over the true counts bucketed by the engine's boundaries (computed
// here from the model's exact observations), the rates, gauges, hit ratios and batch
// efficiencies exactly.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "base/testing/temp_dir.h"
#include "cli/commands.h"
#include "model/entity.h"
#include "model/process.h"
#include "scrape.h"
#include "sim/inference/engine_command.h"
#include "sim/inference/exposition.h"
#include "sim/inference/testing/fake_engine_process.h"
#include "sim/inference/traffic_model.h"
#include "stepped_time.h"

namespace warpscope::test {
namespace {

using namespace std::chrono_literals;
namespace si = sim::inference;
using base::TempDir;

constexpr double kWindowSeconds = 10;  // the agent's collect interval, and each clock step
constexpr double kFakeStart = 30;      // the fakes' time at the agent's first cycle
constexpr int kWindows = 3;

// How the agent reads an engine (docs/design/inference.md, "Engine names").
enum class Tokens { kCounters, kHistogramSums };  // TGI: _sum of its token-count histograms
enum class Prefix { kNone, kHitsOfQueries, kCachedOfPrompt };

struct EngineCase {
  std::vector<std::string> argv;
  std::string engine;  // inference.engine
  std::string model;   // the model label
  double requests_per_second = 2;
  bool legacy_vllm = false;
  // The engine's histograms the agent reads ("": none).
  std::string ttft, itl, e2e, queue;
  Tokens tokens = Tokens::kCounters;
  bool kv_cache = true;
  Prefix prefix = Prefix::kNone;
  std::string basis;  // "tokens" or "sequences"
  double limit = 0;   // the batch limit of the command line (or vLLM's documented default)
};

std::vector<EngineCase> AllEngines() {
  std::vector<EngineCase> c(5);
  c[0] = {.argv = {"vllm", "serve", "e2e/vllm-v1", "--port", "0", "--max-num-batched-tokens",
                   "2048", "--max-num-seqs", "64"},
          .engine = "vllm",
          .model = "e2e/vllm-v1",
          .requests_per_second = 2,
          .ttft = "vllm:time_to_first_token_seconds",
          .itl = "vllm:inter_token_latency_seconds",
          .e2e = "vllm:e2e_request_latency_seconds",
          .queue = "vllm:request_queue_time_seconds",
          .prefix = Prefix::kHitsOfQueries,
          .basis = "tokens",
          .limit = 2048};
  c[1] = {.argv = {"python3", "-m", "vllm.entrypoints.openai.api_server", "--model",
                   "e2e/vllm-legacy", "--port", "0", "--max-num-seqs", "32"},
          .engine = "vllm",
          .model = "e2e/vllm-legacy",
          .requests_per_second = 3,
          .legacy_vllm = true,
          .ttft = "vllm:time_to_first_token_seconds",
          .itl = "vllm:time_per_output_token_seconds",
          .e2e = "vllm:e2e_request_latency_seconds",
          .queue = "vllm:request_queue_time_seconds",
          .basis = "sequences",  // no iteration histogram under the older names
          .limit = 32};
  c[2] = {.argv = {"python3", "-m", "sglang.launch_server", "--model-path", "e2e/sglang", "--port",
                   "0", "--max-running-requests", "48"},
          .engine = "sglang",
          .model = "e2e/sglang",
          .requests_per_second = 1.5,
          .ttft = "sglang:time_to_first_token_seconds",
          .itl = "sglang:inter_token_latency_seconds",
          .e2e = "sglang:e2e_request_latency_seconds",
          .prefix = Prefix::kCachedOfPrompt,
          .basis = "sequences",
          .limit = 48};
  c[3] = {.argv = {"trtllm-serve", "serve", "e2e/trtllm", "--port", "0", "--max_batch_size", "40"},
          .engine = "trtllm",
          .model = "e2e/trtllm",
          .requests_per_second = 2.5,
          .ttft = "trtllm_time_to_first_token_seconds",
          .itl = "trtllm_time_per_output_token_seconds",
          .e2e = "trtllm_e2e_request_latency_seconds",
          .queue = "trtllm_request_queue_time_seconds",
          .basis = "sequences",
          .limit = 40};
  c[4] = {.argv = {"text-generation-launcher", "--model-id", "e2e/tgi", "--port", "0",
                   "--max-batch-size", "24"},
          .engine = "tgi",
          .model = "e2e/tgi",  // no model label: the served model from the command line
          .requests_per_second = 4,
          .ttft = "",  // TGI has no time-to-first-token histogram
          .itl = "tgi_request_mean_time_per_token_duration",
          .e2e = "tgi_request_duration",
          .queue = "tgi_request_queue_duration",
          .tokens = Tokens::kHistogramSums,
          .kv_cache = false,
          .basis = "sequences",
          .limit = 24};
  return c;
}

si::TrafficConfig TrafficOf(const EngineCase& e) {
  si::TrafficConfig t;
  t.requests_per_second = e.requests_per_second;
  return t;
}

std::string ConfigJson(const EngineCase& e) {
  return R"({"clock": "manual", "vllm_names": ")" + std::string(e.legacy_vllm ? "legacy" : "v1") +
         R"(", "traffic": {"requests_per_second": )" + std::to_string(e.requests_per_second) + "}}";
}

// The q-quantile of `window` as the agent documents it, computed from the exact observations:
// bucket counts from the engine's boundaries, rank q * count, the first bucket that reaches it,
// linear between its lower bound (0 for the first) and its le; in +Inf, the last finite le.
std::optional<double> DocumentedQuantile(const std::vector<double>& bounds,
                                         const si::ValueCounts& window, double q) {
  const double total = static_cast<double>(si::Count(window));
  if (total == 0) return std::nullopt;
  const double rank = q * total;
  double below = 0;
  double lower = 0;
  for (double le : bounds) {
    const double cumulative = static_cast<double>(si::CountAtMost(window, le));
    if (cumulative >= rank) {
      if (cumulative == below) return le;
      return lower + (le - lower) * (rank - below) / (cumulative - below);
    }
    below = cumulative;
    lower = le;
  }
  return lower;
}

struct Expected {
  std::string metric;
  std::vector<std::string> labels;
  double value = 0;
};

// What the agent must write for `e` over the fakes' window (t0, t1].
std::vector<Expected> ExpectedWindow(const EngineCase& e, const si::TrafficTotals& t0,
                                     const si::TrafficTotals& t1) {
  std::vector<Expected> out;
  const double w = t1.t - t0.t;
  out.push_back({"warpscope_inference_requests_running", {}, static_cast<double>(t1.running)});
  out.push_back({"warpscope_inference_requests_waiting", {}, static_cast<double>(t1.waiting)});
  out.push_back({"warpscope_inference_request_rate",
                 {},
                 static_cast<double>(t1.requests_finished - t0.requests_finished) / w});
  double input = 0, output = 0;
  if (e.tokens == Tokens::kCounters) {
    input = static_cast<double>(t1.prompt_tokens - t0.prompt_tokens);
    output = static_cast<double>(t1.generation_tokens - t0.generation_tokens);
  } else {
    input = si::Sum(t1.request_prompt_tokens) - si::Sum(t0.request_prompt_tokens);
    output = si::Sum(t1.request_output_tokens) - si::Sum(t0.request_output_tokens);
  }
  out.push_back({"warpscope_inference_token_rate", {"token_type=\"input\""}, input / w});
  out.push_back({"warpscope_inference_token_rate", {"token_type=\"output\""}, output / w});
  if (e.kv_cache)
    out.push_back({"warpscope_inference_kv_cache_usage_ratio", {}, t1.kv_cache_usage});
  if (e.prefix == Prefix::kHitsOfQueries) {
    out.push_back({"warpscope_inference_prefix_cache_hit_ratio",
                   {},
                   static_cast<double>(t1.prefix_hits - t0.prefix_hits) /
                       static_cast<double>(t1.prefix_queries - t0.prefix_queries)});
  } else if (e.prefix == Prefix::kCachedOfPrompt) {
    out.push_back({"warpscope_inference_prefix_cache_hit_ratio",
                   {},
                   static_cast<double>(t1.prefix_hits - t0.prefix_hits) /
                       static_cast<double>(t1.prompt_tokens - t0.prompt_tokens)});
  }
  double size = 0;
  if (e.basis == "tokens") {
    const si::ValueCounts steps = si::Subtract(t1.iteration_tokens, t0.iteration_tokens);
    size = si::Count(steps) == 0 ? 0 : si::Sum(steps) / static_cast<double>(si::Count(steps));
  } else {
    size = (static_cast<double>(t0.running) + static_cast<double>(t1.running)) / 2;
  }
  const std::string basis = "basis=\"" + e.basis + "\"";
  out.push_back({"warpscope_inference_batch_size", {basis}, size});
  out.push_back({"warpscope_inference_batch_limit", {basis}, e.limit});
  out.push_back({"warpscope_inference_batch_efficiency_ratio", {basis}, size / e.limit});

  auto command = si::ParseEngineCommand(e.argv);
  EXPECT_TRUE(command) << command.error().message();
  if (!command) return out;
  const std::vector<si::HistogramSpec> specs =
      si::EngineHistograms({*command, e.legacy_vllm ? si::VllmNames::kLegacy : si::VllmNames::kV1});
  const std::pair<std::string, std::string> latencies[] = {
      {"warpscope_inference_time_to_first_token_seconds", e.ttft},
      {"warpscope_inference_inter_token_latency_seconds", e.itl},
      {"warpscope_inference_request_latency_seconds", e.e2e},
      {"warpscope_inference_queue_time_seconds", e.queue}};
  for (const auto& [metric, family] : latencies) {
    if (family.empty()) continue;
    const si::HistogramSpec* spec = nullptr;
    for (const auto& s : specs) {
      if (s.name == family) spec = &s;
    }
    EXPECT_NE(spec, nullptr) << family;
    if (spec == nullptr) continue;
    const si::ValueCounts window =
        si::Subtract(si::Observations(t1, spec->what), si::Observations(t0, spec->what));
    for (const auto& [q, name] : {std::pair{0.5, "0.5"}, {0.95, "0.95"}, {0.99, "0.99"}}) {
      auto v = DocumentedQuantile(spec->bounds, window, q);
      EXPECT_TRUE(v) << family << ": no request finished in the window; lengthen it";
      if (v) out.push_back({metric, {"quantile=\"" + std::string(name) + "\""}, *v});
    }
  }
  return out;
}

bool SetFakeTime(const si::FakeEngineProcess& fake, double seconds) {
  httplib::Client c("127.0.0.1", fake.port());
  c.set_connection_timeout(2);
  auto res = c.Put("/warpscope-fake/time", std::to_string(seconds), "text/plain");
  return res && res->status / 100 == 2;
}

std::string AgentMetrics(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2);
  auto res = c.Get("/metrics");
  return res && res->status == 200 ? res->body : "";
}

const model::Entity* FindEntity(const model::Frame& frame, const std::string& id) {
  for (const model::Entity& e : frame.entities) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

// The agent of `warpscope agent` with only the inference source (and /metrics on port 0), on
// `clock`: every collect cycle is a step of the test.
struct SteppedAgent {
  explicit SteppedAgent(base::TimePoint start) : clock(start), runner(clock) {}
  SteppedClock clock;
  SteppedTaskRunner runner;
  std::unique_ptr<cli::AgentProcess> process;
};

void StartAgent(SteppedAgent& agent, const std::string& host_root,
                const std::vector<std::string>& targets) {
  agent::AgentConfig config;
  config.collect_interval = std::chrono::seconds(static_cast<int>(kWindowSeconds));
  config.export_interval = config.collect_interval;
  // Discovery alone is not something to collect (AgentConfig::Validate): the host source runs
  // beside it; static targets are, and their test's root is empty.
  config.enable_host_metrics = targets.empty();
  config.host_root = host_root;
  config.hostname = "e2e-host";
  config.prometheus_listen_address = "127.0.0.1:0";
  config.inference_targets = targets;
  ASSERT_TRUE(config.Validate().ok()) << config.Validate().message();
  auto process = cli::AgentProcess::Start(config, agent.runner, agent.clock);
  ASSERT_TRUE(process) << process.error().message();
  agent.process = std::move(*process);
}

struct RunningEngine {
  EngineCase spec;
  std::unique_ptr<si::FakeEngineProcess> fake;
};

std::vector<RunningEngine> StartEngines(const std::vector<EngineCase>& cases, const TempDir& dir) {
  std::vector<RunningEngine> engines;
  for (const EngineCase& e : cases) {
    const std::string sub = dir.path() + "/" + std::to_string(engines.size());
    std::filesystem::create_directories(sub);
    auto fake =
        si::FakeEngineProcess::Start({.argv = e.argv, .config_json = ConfigJson(e), .dir = sub});
    EXPECT_TRUE(fake) << e.argv[0] << ": " << fake.error().message();
    if (!fake) return {};
    engines.push_back({e, std::move(*fake)});
  }
  return engines;
}

// Moves the fakes to kFakeStart + k windows and runs the agent's cycle k.
void Step(SteppedAgent& agent, std::vector<RunningEngine>& engines, int k) {
  for (const RunningEngine& e : engines) {
    ASSERT_TRUE(SetFakeTime(*e.fake, kFakeStart + k * kWindowSeconds)) << e.spec.engine;
  }
  agent.runner.RunUntil(std::chrono::seconds(static_cast<int>(k * kWindowSeconds)));
}

void ExpectClose(double actual, double expected, const std::string& what) {
  EXPECT_NEAR(actual, expected, 1e-9 * std::max(1.0, std::abs(expected))) << what;
}

// Every expectation of `e`'s window (t0, t1] in `metrics`, on the series carrying `selector`.
void CheckWindow(const std::string& metrics, const EngineCase& e, const std::string& selector,
                 const si::TrafficTotals& t0, const si::TrafficTotals& t1) {
  for (const Expected& x : ExpectedWindow(e, t0, t1)) {
    std::vector<std::string> needles = x.labels;
    needles.push_back(selector);
    needles.push_back("model=\"" + e.model + "\"");
    auto v = PromSample(metrics, x.metric, needles);
    const std::string what = e.model + " " + x.metric + " " + testing::PrintToString(x.labels) +
                             " window (" + std::to_string(t0.t) + ", " + std::to_string(t1.t) + "]";
    EXPECT_TRUE(v) << what << " missing";
    if (v) ExpectClose(*v, x.value, what);
  }
  if (e.ttft.empty()) {
    EXPECT_FALSE(PromSample(metrics, "warpscope_inference_time_to_first_token_seconds", {selector}))
        << e.model << ": a TTFT the engine does not serve";
  }
}

TEST(InferenceE2eTest, DiscoveredEnginesWindowsEqualTheTrafficModels) {
  TempDir dir;
  std::vector<RunningEngine> engines = StartEngines(AllEngines(), dir);
  ASSERT_EQ(engines.size(), 5u);
  SteppedAgent agent(base::FromUnixNanos(1'700'000'000'000'000'000));
  ASSERT_NO_FATAL_FAILURE(StartAgent(agent, "/", {}));

  std::vector<si::TrafficModel> models;
  for (const RunningEngine& e : engines) models.emplace_back(TrafficOf(e.spec));
  ASSERT_NO_FATAL_FAILURE(Step(agent, engines, 0));

  // Each server is found in /proc: its own process entity, engine and endpoint.
  const model::Frame& frame = agent.process->agent().aggregator().latest();
  for (const RunningEngine& e : engines) {
    const model::Entity* entity = nullptr;
    for (const model::Entity& candidate : frame.entities) {
      if (candidate.attributes.Get(model::attr::kPid) == std::to_string(e.fake->pid()) &&
          !candidate.attributes.Get("inference.engine").empty()) {
        entity = &candidate;
      }
    }
    ASSERT_NE(entity, nullptr) << e.spec.argv[0] << " (pid " << e.fake->pid() << ") not discovered";
    EXPECT_EQ(entity->kind, model::EntityKind::kProcess);
    auto identity = model::ParseProcessEntityId(entity->id);
    ASSERT_TRUE(identity) << entity->id;
    EXPECT_EQ(identity->pid, e.fake->pid());
    EXPECT_GT(identity->start_ticks, 0u) << entity->id;
    EXPECT_EQ(entity->attributes.Get("inference.engine"), e.spec.engine) << entity->id;
    EXPECT_EQ(entity->attributes.Get("inference.endpoint"), e.fake->url()) << entity->id;
  }

  std::vector<si::TrafficTotals> previous;
  for (si::TrafficModel& m : models) previous.push_back(m.Totals(kFakeStart));
  for (int k = 1; k <= kWindows; ++k) {
    ASSERT_NO_FATAL_FAILURE(Step(agent, engines, k));
    const std::string metrics = AgentMetrics(agent.process->metrics_port());
    ASSERT_FALSE(metrics.empty());
    for (size_t i = 0; i < engines.size(); ++i) {
      si::TrafficTotals now = models[i].Totals(kFakeStart + k * kWindowSeconds);
      CheckWindow(metrics, engines[i].spec,
                  "pid=\"" + std::to_string(engines[i].fake->pid()) + "\"", previous[i], now);
      previous[i] = std::move(now);
    }
  }
  agent.process->Stop();
}

TEST(InferenceE2eTest, StaticTargetsOfNoLocalProcessGetEntitiesOfTheirOwn) {
  TempDir dir;
  std::vector<EngineCase> cases = AllEngines();
  std::vector<RunningEngine> engines = StartEngines({cases[1], cases[2]}, dir);
  ASSERT_EQ(engines.size(), 2u);
  // A host root without /proc: nothing is discovered, so each target is a server of its own. The
  // older vLLM's engine comes from its metric names, SGLang's from the target.
  const std::string empty_root = dir.path() + "/empty-root";
  std::filesystem::create_directories(empty_root);
  SteppedAgent agent(base::FromUnixNanos(1'700'000'000'000'000'000));
  ASSERT_NO_FATAL_FAILURE(StartAgent(
      agent, empty_root, {engines[0].fake->url(), engines[1].fake->url() + ",engine=sglang"}));

  si::TrafficModel legacy(TrafficOf(engines[0].spec));
  ASSERT_NO_FATAL_FAILURE(Step(agent, engines, 0));
  const model::Frame& frame = agent.process->agent().aggregator().latest();
  for (const RunningEngine& e : engines) {
    const std::string id = "inference/127.0.0.1:" + std::to_string(e.fake->port());
    const model::Entity* entity = FindEntity(frame, id);
    ASSERT_NE(entity, nullptr) << id;
    EXPECT_EQ(entity->kind, model::EntityKind::kProcess);
    EXPECT_EQ(entity->parent, "e2e-host");
    EXPECT_EQ(entity->attributes.Get("inference.engine"), e.spec.engine);
    EXPECT_EQ(entity->attributes.Get("inference.endpoint"), e.fake->url());
    EXPECT_EQ(entity->attributes.Get("inference.gpu.uuids"), "");
  }

  si::TrafficTotals t0 = legacy.Totals(kFakeStart);
  ASSERT_NO_FATAL_FAILURE(Step(agent, engines, 1));
  const std::string metrics = AgentMetrics(agent.process->metrics_port());
  si::TrafficTotals t1 = legacy.Totals(kFakeStart + kWindowSeconds);
  // The older vLLM: latencies, rates and gauges of the window; no batch efficiency, since no
  // command line gives the limits of a server the agent cannot see.
  EngineCase expect = engines[0].spec;
  for (const Expected& x : ExpectedWindow(expect, t0, t1)) {
    if (x.metric.starts_with("warpscope_inference_batch_")) continue;
    std::vector<std::string> needles = x.labels;
    needles.push_back("model=\"" + expect.model + "\"");
    auto v = PromSample(metrics, x.metric, needles);
    EXPECT_TRUE(v) << x.metric << " missing";
    if (v) ExpectClose(*v, x.value, x.metric);
  }
  EXPECT_FALSE(PromSample(metrics, "warpscope_inference_batch_efficiency_ratio",
                          {"model=\"" + expect.model + "\""}));
  EXPECT_TRUE(PromSample(metrics, "warpscope_inference_request_rate", {"model=\"e2e/sglang\""}));
  agent.process->Stop();
}

}  // namespace
}  // namespace warpscope::test
