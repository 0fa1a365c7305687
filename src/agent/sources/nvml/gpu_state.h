// SPDX-License-Identifier: Apache-2.0
// Internal to the NVML source: what it knows about one GPU across polls (identity, support bits,
// degraded state, MIG instances, NVLink links, GPM samples, XID counts) and the process rows one
// poll of it collects.
#ifndef WARPSCOPE_AGENT_SOURCES_NVML_GPU_STATE_H_
#define WARPSCOPE_AGENT_SOURCES_NVML_GPU_STATE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/sources/nvml/gpm_sampler.h"
#include "agent/sources/nvml/nvml_queries.h"
#include "base/time.h"
#include "model/entity.h"
#include "model/labels.h"
#include "nvml/nvml_library.h"

namespace warpscope::agent::nvml_internal {

struct LinkState {
  unsigned link = 0;
  const model::Labels* labels = nullptr;
  bool has_prev = false;
  uint64_t tx_kib = 0;
  uint64_t rx_kib = 0;
  int64_t tx_us = 0;
  int64_t rx_us = 0;
  base::Duration prev_mono{};
  // Filled during one poll.
  uint64_t new_tx_kib = 0;
  uint64_t new_rx_kib = 0;
  int64_t new_tx_us = 0;
  int64_t new_rx_us = 0;
  bool got_tx = false;
  bool got_rx = false;
};

enum class FieldKind : uint8_t { kMemoryTemperature, kNvlinkTx, kNvlinkRx };
struct FieldSlot {
  FieldKind kind;
  unsigned field_id;
  unsigned scope;
  size_t link;  // index into GpuState::links for NVLink slots
};

struct MigState {
  nvml::Device handle = nullptr;
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  std::string uuid;
  model::Entity entity;
  Support unsupported;
  GpmSampler gpm;
  std::vector<uint8_t> gpm_metrics;  // indexes into kGpmMetrics still answered for this instance
  model::Labels process_labels[2];   // compute, graphics
  model::Labels consumer_labels;
};

// One XID code seen on a GPU: how often, and its label set {xid}.
struct XidCount {
  uint64_t count = 0;
  model::Labels labels;
};

struct GpuState {
  unsigned index = 0;
  nvml::Device handle = nullptr;
  std::string uuid;
  std::string name;
  model::Entity entity;
  const std::string& id() const { return entity.id; }

  bool degraded = false;
  uint64_t degraded_polls = 0;
  int error_streak = 0;
  Support unsupported;

  std::optional<double> max_sm_hz;
  std::optional<double> max_mem_hz;
  // Temperature thresholds in °C, in nvmlTemperatureThresholds_t order (shutdown, slowdown,
  // memory max, GPU max), as last read; unset while not supported. Read again at the first poll
  // after thresholds_read_at is unset (start, recovery) or kThresholdRereadInterval old.
  std::optional<double> temperature_thresholds[4];
  std::optional<base::Duration> thresholds_read_at;
  std::optional<bool> mig_enabled;
  std::vector<std::unique_ptr<MigState>> migs;

  std::vector<LinkState> links;
  std::vector<nvml::abi::nvmlFieldValue_t> fields;
  std::vector<FieldSlot> field_slots;

  bool gpm_supported = false;
  GpmSampler gpm;
  std::vector<uint8_t> gpm_metrics;  // indexes into kGpmMetrics still answered by the driver

  model::Labels process_labels[2];  // compute, graphics: {gpu.index, gpu.uuid, type}
  model::Labels consumer_labels;    // {gpu.index, gpu.uuid}
  unsigned long long last_util_timestamp = 0;

  bool events_registered = false;
  uint64_t last_xid = 0;
  std::map<uint64_t, XidCount> xids;
};

// One running process on one GPU (or MIG instance) in the current poll.
struct ProcessRow {
  unsigned pid;
  uint64_t memory;
  bool has_memory;
  uint8_t type;  // 0 compute, 1 graphics
  unsigned gpu_instance_id;
  // nvmlSystemGetProcessName's answer ("" when it failed), read by the poller so that the
  // process emitter never calls NVML; owned by the poller until its next poll.
  const std::string* nvml_name = nullptr;
};

// A GPU's identity as the source shows it while the GPU's poll may be running: what its
// entities are and how events name it.
struct MigIdentity {
  unsigned gpu_instance_id = 0;
  model::Entity entity;
};
struct GpuIdentity {
  nvml::Device handle = nullptr;
  model::Entity entity;
  std::vector<MigIdentity> migs;
};

// Per-process utilisation samples of one poll, summed per pid (sorted by pid).
struct UtilAccumulator {
  unsigned pid;
  double sm_sum;
  double mem_sum;
  unsigned samples;
};

// The processes one poll found on a GPU or on one of its MIG instances, with the labels their
// series carry. Rows are [rows_begin, rows_end) of the poller's row list.
struct ProcessGroup {
  const model::Labels* labels;  // [2]: compute, graphics
  const model::Labels* consumer_labels;
  bool util_known;  // per-process utilisation was read: a process without a sample is idle
  size_t rows_begin;
  size_t rows_end;
};

}  // namespace warpscope::agent::nvml_internal

#endif  // WARPSCOPE_AGENT_SOURCES_NVML_GPU_STATE_H_
