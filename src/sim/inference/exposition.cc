// SPDX-License-Identifier: Apache-2.0
#include "sim/inference/exposition.h"

#include <fmt/format.h>

#include <cmath>

namespace warpscope::sim::inference {

namespace {

// vLLM V1 (vllm/v1/metrics/loggers.py); TensorRT-LLM's collector copies the same lists.
const std::vector<double> kVllmTtft = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                       0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                       20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kVllmPerToken = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                           0.3,  0.4,   0.5,  0.75,  1.0, 2.5,  5.0,
                                           7.5,  10.0,  20.0, 40.0,  80.0};
const std::vector<double> kVllmRequestLatency = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                                 5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                                 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
const std::vector<double> kVllmIterationTokens = {1,   8,    16,   32,   64,   128,  256,
                                                  512, 1024, 2048, 4096, 8192, 16384};
// SGLang (python/sglang/srt/metrics/collector.py).
const std::vector<double> kSglangTtft = {0.1, 0.2, 0.4, 0.6, 0.8, 1,  2,   4,   6,
                                         8,   10,  20,  40,  60,  80, 100, 200, 400};
const std::vector<double> kSglangItl = {0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025,
                                        0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400,
                                        0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000};
const std::vector<double> kSglangE2e = {0.1, 0.2, 0.4, 0.6, 0.8, 1,   2,   4,   6,  8,
                                        10,  20,  40,  60,  80,  100, 200, 400, 800};

// vLLM's build_1_2_5_buckets(max): 1, 2, 5, 10, 20, 50, ... up to max.
std::vector<double> OneTwoFive(uint32_t max) {
  std::vector<double> out;
  for (double scale = 1;; scale *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (m * scale > max) return out;
      out.push_back(m * scale);
    }
  }
}

// TGI's router: 35 durations 0.0001 * 1.5^k, k = 1..35.
std::vector<double> TgiDurations() {
  std::vector<double> out;
  double v = 0.0001;
  for (int i = 0; i < 35; ++i) {
    v *= 1.5;
    out.push_back(v);
  }
  return out;
}

// TGI's token-count histograms: 100 equal steps up to `max`.
std::vector<double> TgiSteps(double max) {
  std::vector<double> out;
  for (int x = 0; x < 100; ++x) out.push_back(max / 100.0 * (x + 1));
  return out;
}

// TGI (Rust) writes the shortest round-trip form.
std::string RustNumber(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

class Writer {
 public:
  Writer(bool python, std::string labels) : python_(python), labels_(std::move(labels)) {}

  void Head(const std::string& name, const char* type, const char* help) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  // Python's multiprocess collector writes `le` first (as vLLM's and SGLang's documented
  // outputs show); other extra labels follow the family's.
  void Sample(const std::string& name, double v, const std::string& extra = "") {
    std::string labels = labels_;
    if (!extra.empty()) {
      const bool first = python_ && extra.starts_with("le=");
      labels = labels.empty() ? extra : first ? extra + "," + labels : labels + "," + extra;
    }
    out_ += name;
    if (!labels.empty()) out_ += "{" + labels + "}";
    out_ += " " + Number(v) + "\n";
  }
  void Gauge(const std::string& name, const char* help, double v) {
    Head(name, "gauge", help);
    Sample(name, v);
  }
  // Python's client names the family without `_total` and the sample with it; TGI's exporter
  // writes the name as registered.
  void Counter(const std::string& family, const std::string& sample, const char* help, double v,
               const std::string& extra = "") {
    Head(family, "counter", help);
    Sample(sample, v, extra);
  }
  void Histogram(const HistogramSpec& h, const char* help, const ValueCounts& v) {
    Head(h.name, "histogram", help);
    if (python_) Sample(h.name + "_sum", Sum(v));
    for (double b : h.bounds) {
      Sample(h.name + "_bucket", static_cast<double>(CountAtMost(v, b)),
             "le=\"" + Number(b) + "\"");
    }
    Sample(h.name + "_bucket", static_cast<double>(Count(v)), "le=\"+Inf\"");
    if (!python_) Sample(h.name + "_sum", Sum(v));
    Sample(h.name + "_count", static_cast<double>(Count(v)));
  }
  std::string Number(double v) const { return python_ ? PythonNumber(v) : RustNumber(v); }
  std::string Take() { return std::move(out_); }

 private:
  bool python_;
  std::string labels_;
  std::string out_;
};

const HistogramSpec& Find(const std::vector<HistogramSpec>& specs, Observed what) {
  for (const HistogramSpec& h : specs) {
    if (h.what == what) return h;
  }
  static const HistogramSpec kNone;
  return kNone;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void RenderVllm(const ExpositionOptions& o, const TrafficTotals& t, Writer& w) {
  const auto specs = EngineHistograms(o);
  const bool v1 = o.vllm_names == VllmNames::kV1;
  w.Gauge("vllm:num_requests_running", "Number of requests in model execution batches.", t.running);
  w.Gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", t.waiting);
  if (v1) {
    w.Gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
            t.kv_cache_usage);
    w.Counter("vllm:prefix_cache_queries", "vllm:prefix_cache_queries_total",
              "Prefix cache queries, in terms of number of queried tokens.",
              static_cast<double>(t.prefix_queries));
    w.Counter("vllm:prefix_cache_hits", "vllm:prefix_cache_hits_total",
              "Prefix cache hits, in terms of number of cached tokens.",
              static_cast<double>(t.prefix_hits));
  } else {
    w.Gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.",
            t.kv_cache_usage);
  }
  w.Counter("vllm:prompt_tokens", "vllm:prompt_tokens_total", "Number of prefill tokens processed.",
            static_cast<double>(t.prompt_tokens));
  w.Counter("vllm:generation_tokens", "vllm:generation_tokens_total",
            "Number of generation tokens processed.", static_cast<double>(t.generation_tokens));
  w.Counter("vllm:request_success", "vllm:request_success_total",
            "Count of successfully processed requests.", static_cast<double>(t.requests_finished),
            "finished_reason=\"stop\"");
  w.Histogram(Find(specs, Observed::kPromptTokens), "Number of prefill tokens processed.",
              t.request_prompt_tokens);
  w.Histogram(Find(specs, Observed::kOutputTokens), "Number of generation tokens processed.",
              t.request_output_tokens);
  if (v1) {
    w.Histogram(Find(specs, Observed::kIterationTokens),
                "Histogram of number of tokens per engine_step.", t.iteration_tokens);
  }
  w.Histogram(Find(specs, Observed::kTtft), "Histogram of time to first token in seconds.", t.ttft);
  if (v1) {
    w.Histogram(Find(specs, Observed::kItl), "Histogram of inter-token latency in seconds.", t.itl);
    w.Histogram(Find(specs, Observed::kTpot),
                "Histogram of time_per_output_token_seconds per request.", t.tpot);
  } else {
    w.Histogram(Find(specs, Observed::kItl), "Histogram of time per output token in seconds.",
                t.itl);
  }
  w.Histogram(Find(specs, Observed::kE2e), "Histogram of e2e request latency in seconds.", t.e2e);
  w.Histogram(Find(specs, Observed::kQueue),
              "Histogram of time spent in WAITING phase for request.", t.queue);
  w.Histogram(Find(specs, Observed::kInference),
              "Histogram of time spent in RUNNING phase for request.", t.inference);
}

void RenderSglang(const ExpositionOptions& o, const TrafficTotals& t, Writer& w) {
  const auto specs = EngineHistograms(o);
  const double capacity = static_cast<double>(o.command.max_num_batched_tokens);
  w.Gauge("sglang:num_running_reqs", "The number of running requests.", t.running);
  w.Gauge("sglang:num_used_tokens", "The number of used tokens.",
          std::round(t.kv_cache_usage * capacity));
  w.Gauge("sglang:token_usage", "The token usage.", t.kv_cache_usage);
  w.Gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", t.waiting);
  w.Gauge("sglang:cache_hit_rate", "The prefix cache hit rate.",
          t.prefix_queries == 0
              ? 0.0
              : static_cast<double>(t.prefix_hits) / static_cast<double>(t.prefix_queries));
  w.Counter("sglang:prompt_tokens", "sglang:prompt_tokens_total",
            "Number of prefill tokens processed.", static_cast<double>(t.prompt_tokens));
  w.Counter("sglang:generation_tokens", "sglang:generation_tokens_total",
            "Number of generation tokens processed.", static_cast<double>(t.generation_tokens));
  w.Counter("sglang:cached_tokens", "sglang:cached_tokens_total", "Number of cached prompt tokens.",
            static_cast<double>(t.prefix_hits));
  w.Counter("sglang:num_requests", "sglang:num_requests_total", "Number of requests processed.",
            static_cast<double>(t.requests_finished));
  w.Histogram(Find(specs, Observed::kTtft), "Histogram of time to first token in seconds.", t.ttft);
  w.Histogram(Find(specs, Observed::kItl), "Histogram of inter-token latency in seconds.", t.itl);
  w.Histogram(Find(specs, Observed::kE2e), "Histogram of End-to-end request latency in seconds",
              t.e2e);
}

void RenderTrtllm(const ExpositionOptions& o, const TrafficTotals& t, Writer& w) {
  const auto specs = EngineHistograms(o);
  w.Counter("trtllm_request_success", "trtllm_request_success_total",
            "Count of successfully processed requests.", static_cast<double>(t.requests_finished),
            "finished_reason=\"stop\"");
  w.Histogram(Find(specs, Observed::kE2e), "Histogram of end to end request latency in seconds.",
              t.e2e);
  w.Histogram(Find(specs, Observed::kTtft), "Histogram of time to first token in seconds.", t.ttft);
  w.Histogram(Find(specs, Observed::kTpot), "Histogram of time per output token in seconds.",
              t.tpot);
  w.Histogram(Find(specs, Observed::kQueue),
              "Histogram of time spent in WAITING phase for request.", t.queue);
  w.Counter("trtllm_prompt_tokens", "trtllm_prompt_tokens_total",
            "Cumulative number of prompt (input) tokens processed.",
            static_cast<double>(t.prompt_tokens));
  w.Counter("trtllm_generation_tokens", "trtllm_generation_tokens_total",
            "Cumulative number of generation (output) tokens produced.",
            static_cast<double>(t.generation_tokens));
  w.Gauge("trtllm_kv_cache_hit_rate", "KV cache hit rate",
          t.prefix_queries == 0
              ? 0.0
              : static_cast<double>(t.prefix_hits) / static_cast<double>(t.prefix_queries));
  w.Gauge("trtllm_kv_cache_utilization", "KV cache utilization", t.kv_cache_usage);
  w.Gauge("trtllm_num_requests_running", "Number of active requests", t.running);
  w.Gauge("trtllm_num_requests_waiting", "Number of queued requests", t.waiting);
}

void RenderTgi(const ExpositionOptions& o, const TrafficTotals& t, Writer& w) {
  const auto specs = EngineHistograms(o);
  w.Counter("tgi_request_count", "tgi_request_count", "Total number of requests",
            static_cast<double>(t.requests_arrived));
  w.Counter("tgi_request_success", "tgi_request_success", "Number of successful requests",
            static_cast<double>(t.requests_finished));
  w.Gauge("tgi_queue_size", "Current queue size", t.waiting);
  w.Gauge("tgi_batch_current_size", "Current batch size", t.running);
  w.Gauge("tgi_batch_current_max_tokens", "Maximum tokens for the current batch",
          std::round(t.kv_cache_usage * static_cast<double>(o.command.max_num_batched_tokens)));
  w.Histogram(Find(specs, Observed::kE2e), "Total time spent processing the request (e2e latency)",
              t.e2e);
  w.Histogram(Find(specs, Observed::kQueue), "Time spent in the queue per request", t.queue);
  w.Histogram(Find(specs, Observed::kInference), "Request inference duration", t.inference);
  w.Histogram(Find(specs, Observed::kTpot), "Mean time per token per request", t.tpot);
  w.Histogram(Find(specs, Observed::kPromptTokens), "Input token count per request",
              t.request_prompt_tokens);
  w.Histogram(Find(specs, Observed::kOutputTokens), "Generated token count per request",
              t.request_output_tokens);
}

}  // namespace

std::string PythonNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // repr(float): the shortest round-trip digits, ".0" on whole numbers below 1e16.
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  // prometheus_client's floatToGoString: 7+ integer digits become Go's exponent form.
  const size_t dot = s.find('.');
  if (v > 0 && dot != std::string::npos && dot > 6 && s.find('e') == std::string::npos) {
    std::string mantissa = s.substr(0, 1) + "." + s.substr(1, dot - 1) + s.substr(dot + 1);
    while (!mantissa.empty() && (mantissa.back() == '0' || mantissa.back() == '.')) {
      mantissa.pop_back();
    }
    return fmt::format("{}e+0{}", mantissa, dot - 1);
  }
  return s;
}

const ValueCounts& Observations(const TrafficTotals& t, Observed what) {
  switch (what) {
    case Observed::kTtft:
      return t.ttft;
    case Observed::kItl:
      return t.itl;
    case Observed::kTpot:
      return t.tpot;
    case Observed::kE2e:
      return t.e2e;
    case Observed::kQueue:
      return t.queue;
    case Observed::kInference:
      return t.inference;
    case Observed::kIterationTokens:
      return t.iteration_tokens;
    case Observed::kPromptTokens:
      return t.request_prompt_tokens;
    case Observed::kOutputTokens:
      return t.request_output_tokens;
  }
  return t.ttft;
}

std::vector<HistogramSpec> EngineHistograms(const ExpositionOptions& o) {
  const uint32_t len = o.command.max_model_len;
  switch (o.command.engine) {
    case Engine::kVllm:
      if (o.vllm_names == VllmNames::kV1) {
        return {{"vllm:request_prompt_tokens", Observed::kPromptTokens, OneTwoFive(len)},
                {"vllm:request_generation_tokens", Observed::kOutputTokens, OneTwoFive(len)},
                {"vllm:iteration_tokens_total", Observed::kIterationTokens, kVllmIterationTokens},
                {"vllm:time_to_first_token_seconds", Observed::kTtft, kVllmTtft},
                {"vllm:inter_token_latency_seconds", Observed::kItl, kVllmPerToken},
                {"vllm:request_time_per_output_token_seconds", Observed::kTpot, kVllmPerToken},
                {"vllm:e2e_request_latency_seconds", Observed::kE2e, kVllmRequestLatency},
                {"vllm:request_queue_time_seconds", Observed::kQueue, kVllmRequestLatency},
                {"vllm:request_inference_time_seconds", Observed::kInference, kVllmRequestLatency}};
      }
      return {{"vllm:request_prompt_tokens", Observed::kPromptTokens, OneTwoFive(len)},
              {"vllm:request_generation_tokens", Observed::kOutputTokens, OneTwoFive(len)},
              {"vllm:time_to_first_token_seconds", Observed::kTtft, kVllmTtft},
              {"vllm:time_per_output_token_seconds", Observed::kItl, kVllmPerToken},
              {"vllm:e2e_request_latency_seconds", Observed::kE2e, kVllmRequestLatency},
              {"vllm:request_queue_time_seconds", Observed::kQueue, kVllmRequestLatency},
              {"vllm:request_inference_time_seconds", Observed::kInference, kVllmRequestLatency}};
    case Engine::kSglang:
      return {{"sglang:time_to_first_token_seconds", Observed::kTtft, kSglangTtft},
              {"sglang:inter_token_latency_seconds", Observed::kItl, kSglangItl},
              {"sglang:e2e_request_latency_seconds", Observed::kE2e, kSglangE2e}};
    case Engine::kTrtllm:
      return {{"trtllm_e2e_request_latency_seconds", Observed::kE2e, kVllmRequestLatency},
              {"trtllm_time_to_first_token_seconds", Observed::kTtft, kVllmTtft},
              {"trtllm_time_per_output_token_seconds", Observed::kTpot, kVllmPerToken},
              {"trtllm_request_queue_time_seconds", Observed::kQueue, kVllmRequestLatency}};
    case Engine::kTgi:
      return {{"tgi_request_duration", Observed::kE2e, TgiDurations()},
              {"tgi_request_queue_duration", Observed::kQueue, TgiDurations()},
              {"tgi_request_inference_duration", Observed::kInference, TgiDurations()},
              {"tgi_request_mean_time_per_token_duration", Observed::kTpot, TgiDurations()},
              {"tgi_request_input_length", Observed::kPromptTokens, TgiSteps(len)},
              {"tgi_request_generated_tokens", Observed::kOutputTokens, TgiSteps(len)}};
  }
  return {};
}

std::string RenderExposition(const ExpositionOptions& o, const TrafficTotals& totals) {
  const std::string model = "model_name=\"" + Escape(o.command.model) + "\"";
  switch (o.command.engine) {
    case Engine::kVllm: {
      Writer w(true, model + ",engine=\"0\"");
      RenderVllm(o, totals, w);
      return w.Take();
    }
    case Engine::kSglang: {
      Writer w(true, model);
      RenderSglang(o, totals, w);
      return w.Take();
    }
    case Engine::kTrtllm: {
      Writer w(true, model + ",engine_type=\"trtllm\"");
      RenderTrtllm(o, totals, w);
      return w.Take();
    }
    case Engine::kTgi: {
      Writer w(false, "");
      RenderTgi(o, totals, w);
      return w.Take();
    }
  }
  return "";
}

}  // namespace warpscope::sim::inference
