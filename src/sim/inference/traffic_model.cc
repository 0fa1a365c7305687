// SPDX-License-Identifier: Apache-2.0
#include "sim/inference/traffic_model.h"

#include <cmath>
#include <limits>
#include <utility>

#include "base/logging.h"

namespace warpscope::sim::inference {

namespace {

// Times are computed from the same pattern values every time, so equal requests give bit-equal
// times; the slack only keeps a token that is due exactly at `t` from being lost to rounding.
constexpr double kSlack = 1e-9;

template <typename T>
const T& Cycle(const std::vector<T>& pattern, uint64_t k) {
  return pattern[k % pattern.size()];
}

base::Status CheckTimes(const char* field, const std::vector<double>& v) {
  if (v.empty()) {
    return base::InvalidArgument("traffic.{}: empty; give at least one value in seconds", field);
  }
  for (double x : v) {
    if (!(x > 0) || !std::isfinite(x)) {
      return base::InvalidArgument("traffic.{}: {} is not a positive number of seconds", field, x);
    }
  }
  return base::OkStatus();
}

}  // namespace

base::Status TrafficConfig::Validate() const {
  if (!(requests_per_second > 0) || !std::isfinite(requests_per_second)) {
    return base::InvalidArgument(
        "traffic.requests_per_second: {} must be a positive number (e.g. 2.5)",
        requests_per_second);
  }
  for (const auto& [field, v] :
       {std::pair{"queue_seconds", &queue_seconds}, std::pair{"ttft_seconds", &ttft_seconds},
        std::pair{"itl_seconds", &itl_seconds}}) {
    if (base::Status st = CheckTimes(field, *v); !st.ok()) return st;
  }
  double min_ttft = std::numeric_limits<double>::infinity();
  for (double x : ttft_seconds) min_ttft = std::min(min_ttft, x);
  for (double q : queue_seconds) {
    if (q >= min_ttft) {
      return base::InvalidArgument(
          "traffic.queue_seconds: {} is not below the smallest ttft_seconds ({}); the time to "
          "first token includes the queue time",
          q, min_ttft);
    }
  }
  if (prompt_tokens.empty() || output_tokens.empty()) {
    return base::InvalidArgument(
        "traffic.prompt_tokens and traffic.output_tokens need at least one value each");
  }
  for (uint32_t n : output_tokens) {
    if (n == 0)
      return base::InvalidArgument("traffic.output_tokens: 0; a request yields >= 1 token");
  }
  if (prefix_hit_percent > 100) {
    return base::InvalidArgument("traffic.prefix_hit_percent: {} is above 100", prefix_hit_percent);
  }
  if (!(step_seconds > 0) || !std::isfinite(step_seconds)) {
    return base::InvalidArgument("traffic.step_seconds: {} must be positive (e.g. 0.02)",
                                 step_seconds);
  }
  if (kv_cache_tokens == 0) {
    return base::InvalidArgument(
        "traffic.kv_cache_tokens: 0; give the KV-cache capacity in tokens");
  }
  return base::OkStatus();
}

uint64_t Count(const ValueCounts& v) {
  uint64_t n = 0;
  for (const auto& [value, count] : v) n += count;
  return n;
}

double Sum(const ValueCounts& v) {
  double s = 0;
  for (const auto& [value, count] : v) s += value * static_cast<double>(count);
  return s;
}

ValueCounts Subtract(const ValueCounts& later, const ValueCounts& earlier) {
  ValueCounts out = later;
  for (const auto& [value, count] : earlier) {
    auto it = out.find(value);
    WARPSCOPE_CHECK(it != out.end() && it->second >= count);
    it->second -= count;
    if (it->second == 0) out.erase(it);
  }
  return out;
}

double Quantile(const ValueCounts& v, double q) {
  const uint64_t n = Count(v);
  if (n == 0) return 0;
  const auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(n) - kSlack));
  uint64_t seen = 0;
  for (const auto& [value, count] : v) {
    seen += count;
    if (seen >= std::max<uint64_t>(rank, 1)) return value;
  }
  return v.rbegin()->first;
}

uint64_t CountAtMost(const ValueCounts& v, double bound) {
  uint64_t n = 0;
  for (auto it = v.begin(); it != v.end() && it->first <= bound; ++it) n += it->second;
  return n;
}

TrafficModel::TrafficModel(TrafficConfig config) : config_(std::move(config)) {
  WARPSCOPE_CHECK(config_.Validate().ok());
}

void TrafficModel::Reset() {
  settled_ = TrafficTotals();
  settled_k_ = 0;
  settled_work_ = 0;
  next_step_ = 1;
  last_step_work_ = 0;
  last_t_ = 0;
}

TrafficModel::Request TrafficModel::RequestAt(uint64_t k) const {
  Request r;
  r.arrival = static_cast<double>(k) / config_.requests_per_second;
  r.queue = Cycle(config_.queue_seconds, k);
  r.ttft = Cycle(config_.ttft_seconds, k);
  r.itl = Cycle(config_.itl_seconds, k);
  r.prompt = Cycle(config_.prompt_tokens, k);
  r.output = Cycle(config_.output_tokens, k);
  r.cached = static_cast<uint32_t>(uint64_t{r.prompt} * config_.prefix_hit_percent / 100);
  r.scheduled = r.arrival + r.queue;
  r.first_token = r.arrival + r.ttft;
  r.finish = r.first_token + (r.output - 1) * r.itl;
  return r;
}

uint64_t TrafficModel::TokensBy(const Request& r, double t) {
  if (t + kSlack < r.first_token) return 0;
  const double steps = std::floor((t - r.first_token) / r.itl + kSlack);
  return std::min<uint64_t>(r.output, static_cast<uint64_t>(std::max(0.0, steps)) + 1);
}

void TrafficModel::AddRequest(const Request& r, double t, TrafficTotals& out) {
  if (t + kSlack >= r.scheduled) {
    out.prompt_tokens += r.prompt;
    out.prefix_queries += r.prompt;
    out.prefix_hits += r.cached;
  }
  const uint64_t n = TokensBy(r, t);
  out.generation_tokens += n;
  if (n >= 1) ++out.ttft[r.ttft];
  if (n >= 2) out.itl[r.itl] += n - 1;
  if (n == r.output) {
    ++out.requests_finished;
    ++out.e2e[r.ttft + (r.output - 1) * r.itl];
    ++out.queue[r.queue];
    ++out.inference[r.ttft + (r.output - 1) * r.itl - r.queue];
    if (r.output >= 2) ++out.tpot[r.itl];
    ++out.request_prompt_tokens[r.prompt];
    ++out.request_output_tokens[r.output];
  }
}

uint64_t TrafficModel::WorkBy(double t) const {
  uint64_t work = settled_work_;
  for (uint64_t k = settled_k_;; ++k) {
    const Request r = RequestAt(k);
    if (r.arrival > t + kSlack) break;
    if (t + kSlack >= r.scheduled) work += r.prompt;
    work += TokensBy(r, t);
  }
  return work;
}

TrafficTotals TrafficModel::Totals(double t) {
  WARPSCOPE_CHECK(t >= 0 && std::isfinite(t));
  if (t < last_t_) Reset();
  last_t_ = t;
  // Engine steps up to t, folding finished requests into settled_ as time passes them.
  for (double s = next_step_ * config_.step_seconds; s <= t + kSlack;
       s = next_step_ * config_.step_seconds) {
    const uint64_t work = WorkBy(s);
    if (work > last_step_work_) {
      ++settled_.iteration_tokens[static_cast<double>(work - last_step_work_)];
      ++settled_.steps;
    }
    last_step_work_ = work;
    ++next_step_;
    for (;;) {
      const Request r = RequestAt(settled_k_);
      if (r.arrival > s + kSlack || TokensBy(r, s) < r.output) break;
      AddRequest(r, s, settled_);
      settled_work_ += uint64_t{r.prompt} + r.output;
      ++settled_k_;
    }
  }
  TrafficTotals out = settled_;
  out.t = t;
  uint64_t kv_tokens = 0;
  uint64_t k = settled_k_;
  for (;; ++k) {
    const Request r = RequestAt(k);
    if (r.arrival > t + kSlack) break;
    AddRequest(r, t, out);
    const uint64_t n = TokensBy(r, t);
    if (t + kSlack < r.scheduled) {
      ++out.waiting;
    } else if (n < r.output) {
      ++out.running;
      kv_tokens += r.prompt + n;
    }
  }
  out.requests_arrived = k;
  out.kv_cache_usage =
      std::min(1.0, static_cast<double>(kv_tokens) / static_cast<double>(config_.kv_cache_tokens));
  return out;
}

}  // namespace warpscope::sim::inference
