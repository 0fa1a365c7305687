// SPDX-License-Identifier: Apache-2.0
// Internal to the NVML source: turns the process rows of a poll into process, executable and
// container entities, per-process series and per-executable roll-ups (docs/design/nvml.md
// section 6). Resolves pids through the agent's model::ProcessResolver, so it runs where the
// resolver may be used (the agent main sequence: NvmlSource::Finish). Makes no NVML call. Caches
// what it built per pid across polls.
#ifndef WARPSCOPE_AGENT_SOURCES_NVML_PROCESS_EMITTER_H_
#define WARPSCOPE_AGENT_SOURCES_NVML_PROCESS_EMITTER_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agent/sources/nvml/gpu_poller.h"
#include "agent/sources/nvml/gpu_state.h"
#include "model/entity.h"
#include "model/process.h"
#include "model/sample_sink.h"

namespace warpscope::agent::nvml_internal {

class ProcessEmitter {
 public:
  // `resolver` must outlive the emitter.
  explicit ProcessEmitter(model::ProcessResolver& resolver) : resolver_(resolver) {}

  // Starts one poll: entities are declared at most once per poll.
  void BeginPoll();
  // Writes the entities and series of one group. A pid the resolver does not know is named
  // after the row's NVML name; when NVML had none it is "unknown", reported as "process_name".
  void Emit(const ProcessGroup& group, std::span<const ProcessRow> rows,
            std::span<const UtilAccumulator> utilization, Reporter& reporter,
            model::SampleSink& out);
  // Forgets the pids that no group of this poll mentioned.
  void EndPoll();
  void Clear() { cache_.clear(); }

 private:
  // What the source knows about one pid across polls, so that entities and ids are built once.
  struct CacheEntry {
    bool from_nvml_name = false;
    uint64_t start_ticks = 0;
    model::Entity process;
    model::Entity executable;
    std::optional<model::Entity> container;
    uint64_t seen_poll = 0;
    uint64_t emitted_poll = 0;
  };
  struct Rollup {
    const CacheEntry* entry;
    double memory;
    double sm;
    bool has_memory;
    unsigned processes;
  };

  CacheEntry& Resolve(const ProcessRow& row, Reporter& reporter);
  void EmitEntities(CacheEntry& entry, model::SampleSink& out);

  model::ProcessResolver& resolver_;
  uint64_t poll_seq_ = 0;
  std::unordered_map<unsigned, CacheEntry> cache_;
  // Reused per-poll scratch space.
  std::vector<Rollup> rollups_;
  std::vector<std::string_view> emitted_executables_;
  std::vector<std::string_view> emitted_containers_;
};

}  // namespace warpscope::agent::nvml_internal

#endif  // WARPSCOPE_AGENT_SOURCES_NVML_PROCESS_EMITTER_H_
