// SPDX-License-Identifier: Apache-2.0
// Catalog of the host metrics written by ProcfsSource: machine-wide series on the host entity and
// per-process series on process entities. Values are in base units (seconds, bytes, ratio 0..1).
//
// Series label keys used beyond the entity (MetricDesc::labels lists them per metric):
//   cpu        logical CPU number, "0".."N-1"; only on the per-core series (host.cpu.core.*)
//   mode       CPU mode: user, nice, system, idle, iowait, irq, softirq, steal
//   device     block device name, "sda", "nvme0n1"
//   interface  network interface name, "eth0"
//   direction  read/write (disk) or receive/transmit (network)
// Memory and swap "states" are separate metrics (separate Prometheus families) that share one
// OTel metric through a fixed `system.memory.state` / `system.paging.state` attribute; see
// docs/design/host-metrics.md for why `used` is MemTotal - MemAvailable.
#ifndef WARPSCOPE_AGENT_SOURCES_PROCFS_HOST_METRICS_H_
#define WARPSCOPE_AGENT_SOURCES_PROCFS_HOST_METRICS_H_

#include <span>
#include <string_view>

#include "model/metric.h"

namespace warpscope::agent::host_metrics {

// CPU (/proc/stat).
extern const model::MetricDesc kCpuTime;             // counter s {mode}
extern const model::MetricDesc kCpuCoreTime;         // counter s {cpu, mode}
extern const model::MetricDesc kCpuUtilization;      // gauge 1 {mode}
extern const model::MetricDesc kCpuCoreUtilization;  // gauge 1 {cpu, mode}
extern const model::MetricDesc kCpuLogicalCount;     // gauge {cpu}

// Load (/proc/loadavg).
extern const model::MetricDesc kLoad1m;
extern const model::MetricDesc kLoad5m;
extern const model::MetricDesc kLoad15m;

// Memory and swap (/proc/meminfo), bytes.
extern const model::MetricDesc kMemoryTotal;
extern const model::MetricDesc kMemoryAvailable;
extern const model::MetricDesc kMemoryUsed;
extern const model::MetricDesc kMemoryFree;
extern const model::MetricDesc kMemoryCached;
extern const model::MetricDesc kMemoryBuffers;
extern const model::MetricDesc kMemoryUtilization;  // used / total
extern const model::MetricDesc kSwapTotal;
extern const model::MetricDesc kSwapUsed;
extern const model::MetricDesc kSwapFree;

// Block devices (/proc/diskstats).
extern const model::MetricDesc kDiskIo;          // counter By {device, direction}
extern const model::MetricDesc kDiskOperations;  // counter {device, direction}
extern const model::MetricDesc kDiskIoTime;      // counter s {device}

// Network interfaces (/proc/net/dev).
extern const model::MetricDesc kNetworkIo;       // counter By {interface, direction}
extern const model::MetricDesc kNetworkPackets;  // counter {interface, direction}
extern const model::MetricDesc kNetworkErrors;   // counter {interface, direction}
extern const model::MetricDesc kNetworkDropped;  // counter {interface, direction}

// Processes (/proc/[pid]).
extern const model::MetricDesc kProcessCount;  // host entity

// Per process (process entities), for the top-N processes by CPU and every process of interest.
extern const model::MetricDesc kProcessCpuTime;
extern const model::MetricDesc kProcessCpuUtilization;
extern const model::MetricDesc kProcessMemoryRss;
extern const model::MetricDesc kProcessMemoryVirtual;
extern const model::MetricDesc kProcessThreads;

// Every metric above, in declaration order. The pointers are stable for the program's life.
std::span<const model::MetricDesc* const> AllHostMetrics();

// The OpenTelemetry attribute name for a series label key of a host metric, following the
// semantic conventions: cpu -> cpu.logical_number, mode -> cpu.mode, device -> system.device,
// interface -> network.interface.name, direction -> disk.io.direction (disk metrics) or
// network.io.direction (network metrics). Unknown keys are returned unchanged.
std::string_view OtelAttributeKey(const model::MetricDesc& metric, std::string_view label_key);

}  // namespace warpscope::agent::host_metrics

#endif  // WARPSCOPE_AGENT_SOURCES_PROCFS_HOST_METRICS_H_
