// SPDX-License-Identifier: Apache-2.0
// Hand-made inputs for rule tests: GPUs and processes with series filled by value, ramp or
// function, and a rule context whose open findings the test chooses.
#ifndef WARPSCOPE_SERVER_INSIGHTS_TESTING_INPUTS_BUILDER_H_
#define WARPSCOPE_SERVER_INSIGHTS_TESTING_INPUTS_BUILDER_H_

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "server/insights/insight_inputs.h"
#include "server/insights/rule.h"

namespace warpscope::server::insights::testing {

inline constexpr int64_t kT0 = 1'700'000'000;  // bucket 0, Unix seconds
inline constexpr double kGiB = 1024.0 * 1024 * 1024;

class InputsBuilder {
 public:
  explicit InputsBuilder(size_t buckets, std::chrono::seconds step = std::chrono::seconds(10)) {
    in_.start = base::FromUnixNanos(kT0 * 1'000'000'000);
    in_.step = step;
    in_.buckets = buckets;
  }

  // A GPU with every series empty (NaN) but a busy, healthy default where `healthy`.
  GpuInput& Gpu(const std::string& host, const std::string& uuid, const std::string& index,
                const std::string& model = "NVIDIA H100 80GB HBM3", bool healthy = true) {
    GpuInput& g = in_.gpus.emplace_back();
    g.host = host;
    g.uuid = uuid;
    g.attributes.Set("gpu.index", index);
    g.attributes.Set("gpu.model", model);
    for (Series* s :
         {&g.utilization, &g.power, &g.power_limit, &g.temperature, &g.memory_used, &g.memory_total,
          &g.ecc_uncorrected, &g.remapping_failed, &g.sm_occupancy, &g.dram_active, &g.tensor_active,
          &g.fp32_active, &g.fp16_active, &g.sm_clock}) {
      s->assign(in_.buckets, std::numeric_limits<double>::quiet_NaN());
    }
    if (healthy) {
      Fill(g.utilization, 0.95);
      Fill(g.power, 650);
      Fill(g.power_limit, 700);
      Fill(g.temperature, 63);
      Fill(g.memory_used, 70 * kGiB);
      Fill(g.memory_total, 80 * kGiB);
      Fill(g.ecc_uncorrected, 0);
      Fill(g.remapping_failed, 0);
      Fill(g.sm_occupancy, 0.52);
      Fill(g.dram_active, 0.55);
      Fill(g.tensor_active, 0.62);
      Fill(g.fp32_active, 0.12);
      Fill(g.fp16_active, 0.06);
    }
    return g;
  }

  ProcessGpuInput& Process(const std::string& host, const std::string& pid, const std::string& gpu,
                           base::Duration started_before_start) {
    ProcessGpuInput& p = in_.processes.emplace_back();
    p.host = host;
    p.entity = "pid/" + pid + "/1";
    p.gpu = gpu;
    p.attributes.Set("process.pid", pid);
    p.attributes.Set("process.executable.name", "python3");
    p.first_seen = in_.start - started_before_start;
    p.memory_used.assign(in_.buckets, std::numeric_limits<double>::quiet_NaN());
    p.cpu_utilization.assign(in_.buckets, std::numeric_limits<double>::quiet_NaN());
    for (Series* s : {&p.cuda_kernel_time, &p.cuda_h2d_time, &p.cuda_allocations, &p.cuda_releases}) {
      s->assign(in_.buckets, std::numeric_limits<double>::quiet_NaN());
    }
    return p;
  }

  // A host with `cpus` logical CPUs, `busy` of them busy (no iowait).
  HostInput& Host(const std::string& host, double cpus, double busy) {
    HostInput& h = in_.hosts.emplace_back();
    h.host = host;
    h.cpu_idle.assign(in_.buckets, 1 - busy);
    h.cpu_iowait.assign(in_.buckets, 0);
    h.logical_cpus.assign(in_.buckets, cpus);
    return h;
  }

  // A serving process (pid) of `engine` serving `model` on the GPUs `gpus` ("GPU-0,GPU-1"),
  // every inference series empty (NaN).
  InferenceInput& Serving(const std::string& host, const std::string& pid,
                          const std::string& model, const std::string& gpus,
                          const std::string& engine = "vllm") {
    InferenceInput& s = in_.inference.emplace_back();
    s.host = host;
    s.entity = "pid/" + pid + "/1";
    s.model = model;
    s.attributes.Set("process.pid", pid);
    s.attributes.Set("process.executable.name", "python3");
    s.attributes.Set("inference.engine", engine);
    s.attributes.Set("inference.gpu.uuids", gpus);
    for (Series* x : {&s.batch_efficiency, &s.requests_running, &s.requests_waiting,
                      &s.request_rate, &s.input_token_rate, &s.output_token_rate,
                      &s.kv_cache_usage, &s.ttft_p95, &s.queue_time_p95}) {
      x->assign(in_.buckets, std::numeric_limits<double>::quiet_NaN());
    }
    return s;
  }

  static void Fill(Series& s, double v, size_t from = 0, size_t to = SIZE_MAX) {
    for (size_t i = from; i < std::min(to, s.size()); ++i) s[i] = v;
  }
  // Bucket i gets f(i) for i in [from, to).
  static void Set(Series& s, const std::function<double(size_t)>& f, size_t from = 0,
                  size_t to = SIZE_MAX) {
    for (size_t i = from; i < std::min(to, s.size()); ++i) s[i] = f(i);
  }

  void Event(const std::string& host, const std::string& gpu, size_t bucket, int64_t xid) {
    EventRecord& e = in_.events.emplace_back();
    e.host = host;
    e.event.entity = gpu;
    e.event.kind = "xid";
    e.event.code = xid;
    e.event.time = in_.BucketStart(bucket) + std::chrono::seconds(1);
  }

  // The GPU profile digest of `process` over the last 10 minutes: `kernel_ms` of kernels, of
  // which the `matmuls` (name, ms).
  GpuProfileDigest& Profile(const ProcessGpuInput& process, double kernel_ms,
                            const std::vector<std::pair<std::string, double>>& matmuls) {
    GpuProfileDigest& d = in_.gpu_profiles.emplace_back();
    d.host = process.host;
    d.entity = process.entity;
    d.pid = std::stoll(std::string(process.attributes.Get("process.pid")));
    d.end = in_.end();
    d.start = d.end - std::chrono::minutes(10);
    d.read_at = d.end;
    d.profiles = 60;
    d.kernel_ns = static_cast<int64_t>(kernel_ms * 1e6);
    for (const auto& [name, ms] : matmuls) {
      d.matmuls.push_back({name, static_cast<int64_t>(ms * 1e6)});
      d.matmul_ns += static_cast<int64_t>(ms * 1e6);
    }
    return d;
  }

  InsightInputs& inputs() { return in_; }

 private:
  InsightInputs in_;
};

// A context where the findings of (host, entity) in `open` are open.
class ContextFor {
 public:
  ContextFor(const InsightInputs& in, const InsightConfig& config,
             std::set<std::pair<std::string, std::string>> open = {})
      : open_(std::move(open)),
        context_{in, config, [this](std::string_view host, std::string_view entity) {
                   return open_.contains({std::string(host), std::string(entity)});
                 }} {}
  ContextFor(const ContextFor&) = delete;
  ContextFor& operator=(const ContextFor&) = delete;
  const RuleContext& operator*() const { return context_; }

 private:
  std::set<std::pair<std::string, std::string>> open_;
  RuleContext context_;
};

// What `rule` observes in `in` with the default config and the findings of `open` open.
inline std::vector<Observation> Observe(const Rule& rule, const InsightInputs& in,
                                        std::set<std::pair<std::string, std::string>> open = {}) {
  InsightConfig config;
  ContextFor ctx(in, config, std::move(open));
  return rule.Evaluate(*ctx);
}

}  // namespace warpscope::server::insights::testing

#endif  // WARPSCOPE_SERVER_INSIGHTS_TESTING_INPUTS_BUILDER_H_
