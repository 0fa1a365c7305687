// SPDX-License-Identifier: Apache-2.0
// What `warpscope top` shows at one refresh: the GPUs of one host, their processes and the
// host's open findings. Pure data, filled by a Collector (local NVML or a server).
#ifndef WARPSCOPE_TOP_SNAPSHOT_H_
#define WARPSCOPE_TOP_SNAPSHOT_H_

#include <optional>
#include <string>
#include <vector>

namespace warpscope::top {

// One GPU. Absent values were not reported (never shown as 0).
struct GpuRow {
  int index = 0;
  std::string uuid;
  std::string name;                    // "NVIDIA H100 80GB HBM3"
  std::optional<double> utilization;   // 0..1
  std::optional<double> sm_active;     // 0..1 (GPM)
  std::optional<double> memory_used;   // bytes
  std::optional<double> memory_total;  // bytes
  std::optional<double> power;         // watts
  std::optional<double> power_limit;   // watts
  std::optional<double> temperature;   // celsius
  std::optional<double> pcie_tx;       // bytes per second
  std::optional<double> pcie_rx;
  std::optional<double> nvlink_tx;  // bytes per second, summed over the links
  std::optional<double> nvlink_rx;
  bool degraded = false;
};

// One process on one GPU (a process on two GPUs is two rows).
struct ProcessRow {
  int pid = 0;
  int gpu_index = -1;
  std::string user;
  std::string executable;
  std::string command_line;
  std::optional<double> gpu_memory;  // bytes
  std::optional<double> sm;          // 0..1 of the GPU
  std::optional<double> cpu;         // CPU cores busy (1.0 = one core), as top's %CPU / 100
};

// An open insight finding of the host.
struct FindingRow {
  std::string severity;  // "page", "ticket", "info"
  std::string state;     // "firing", "pending"
  std::string rule;
  std::string entity;
  std::string summary;
};

struct Snapshot {
  std::string host;
  std::string origin;  // "NVML", "simulated: healthy-8xh100", "server http://..."
  std::vector<GpuRow> gpus;
  std::vector<ProcessRow> processes;
  std::vector<FindingRow> findings;
  // Whether findings can be had at all (a server); locally the panel says so instead.
  bool findings_available = false;
  // Why the last collection failed, shown in the status line; "" when it worked.
  std::string error;
};

}  // namespace warpscope::top

#endif  // WARPSCOPE_TOP_SNAPSHOT_H_
