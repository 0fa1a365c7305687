// SPDX-License-Identifier: Apache-2.0
// InferenceSource: the inference servers of the host (vLLM, SGLang, TensorRT-LLM, TGI), found
// in /proc and rediscovered periodically, plus static targets, scraped every cycle and written
// as the metrics of inference_metrics.h on the serving process's entity
// (docs/design/inference.md, "Collection in the agent").
//
// Threads: as every Source. Poll (the source's worker) discovers, scrapes, parses and computes
// the window into a buffer of its own; Finish (main sequence) resolves the serving processes
// through the agent's process resolver, writes their entities and replays the buffer.
// SetGpuProcesses runs on the main sequence before a Poll. Errors go to the hook:
// "scrape_failed" (connection, timeout, HTTP status), "too_large" (body or parse limit),
// "parse_failed" (exposition or engine layout), "unknown_engine" (a static target whose
// exposition names no engine).
#ifndef WARPSCOPE_AGENT_SOURCES_INFERENCE_INFERENCE_SOURCE_H_
#define WARPSCOPE_AGENT_SOURCES_INFERENCE_INFERENCE_SOURCE_H_

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/sources/inference/discovery.h"
#include "agent/sources/inference/engines.h"
#include "agent/sources/inference/scraper.h"
#include "agent/sources/sample_buffer.h"
#include "agent/sources/source.h"
#include "base/time.h"
#include "model/frame.h"
#include "model/process.h"

namespace warpscope::agent::inference {

// One --inference-targets value: "URL[,engine=vllm|sglang|trtllm|tgi][,pid=PID]".
struct StaticInferenceTarget {
  std::string url;
  std::optional<Engine> engine;  // nullopt: from the exposition's metric prefix
  // The serving process, read in InferenceSourceOptions::target_pid_root's /proc: its entity,
  // command line (model, limits) and descendants (GPUs). nullopt: the discovered process that
  // listens on the URL's loopback port, else an entity of the target's own.
  std::optional<int> pid;
};
[[nodiscard]] base::Result<StaticInferenceTarget> ParseInferenceTarget(std::string_view spec);

struct InferenceSourceOptions {
  std::string host_root = "/";  // /proc is read under it
  // Where the pids of static targets are read: the machine's own root. It differs from
  // host_root under --simulate, where discovery reads the simulated host's tree but a pid that
  // names a real server (`up`'s fake vLLM) is this machine's.
  std::string target_pid_root = "/";
  bool discover = true;  // look for servers in /proc
  std::vector<StaticInferenceTarget> targets;
  base::Duration rediscover_interval = std::chrono::seconds(30);
  size_t max_body_bytes = 8 << 20;
  std::string host_id;  // the parent of a static target's entity
};

// The GPUs each pid uses according to the NVML source's per-process series of `frame` (process
// entities with gpu.uuid and gpu.index labels): pid -> (NVML index, UUID).
std::map<int, std::vector<std::pair<int, std::string>>> GpuProcessesOf(const model::Frame& frame);

class InferenceSource final : public Source {
 public:
  // `resolver` (may be null) is used in Finish only; it must outlive the source.
  InferenceSource(InferenceSourceOptions options, const base::Clock& clock,
                  model::ProcessResolver* resolver, SourceErrorHook on_error);

  std::string_view name() const override { return "inference"; }
  base::Status Start() override;
  void Poll(base::TimePoint now, model::SampleSink& out) override;
  void Finish(base::TimePoint now, model::SampleSink& out) override;
  void Stop() override {}
  void SetPollDeadline(base::Duration deadline) override { deadline_ = deadline; }

  void SetGpuProcesses(std::map<int, std::vector<std::pair<int, std::string>>> gpus) {
    gpus_ = std::move(gpus);
  }

 private:
  struct Target {
    std::string url;
    ScrapeTarget scrape;
    std::optional<Engine> engine;
    std::string default_model;
    BatchLimits limits;
    const ServingProcess* process = nullptr;  // null for a static target of no local process
  };
  struct State {
    base::TimePoint time;
    std::vector<ModelSnapshot> models;
    bool seen = false;
  };
  // What Finish writes for one scraped target.
  struct PendingEntity {
    std::optional<ServingProcess> process;
    std::string static_id;
    Engine engine = Engine::kVllm;
    std::string endpoint;
  };

  std::vector<Target> Targets();
  void ScrapeOne(const Target& target, base::TimePoint now, base::Duration timeout);
  std::string EntityId(const Target& target) const;
  std::string GpuUuids(const ServingProcess& p) const;
  void Report(std::string_view reason) const {
    if (on_error_) on_error_(reason);
  }

  InferenceSourceOptions options_;
  const base::Clock& clock_;
  model::ProcessResolver* resolver_;
  SourceErrorHook on_error_;
  base::Duration deadline_ = std::chrono::seconds(5);
  std::vector<StaticInferenceTarget> static_targets_;
  std::vector<ScrapeTarget> static_scrape_;
  std::vector<ServingProcess> processes_;
  std::vector<std::optional<ServingProcess>> pid_processes_;  // per static target with a pid
  std::optional<base::Duration> last_discovery_;
  std::optional<base::Duration> last_pid_read_;
  std::map<std::string, State> states_;  // by URL and entity
  std::map<int, std::vector<std::pair<int, std::string>>> gpus_;
  SampleBuffer pending_;
  std::vector<PendingEntity> pending_entities_;
};

}  // namespace warpscope::agent::inference

#endif  // WARPSCOPE_AGENT_SOURCES_INFERENCE_INFERENCE_SOURCE_H_
