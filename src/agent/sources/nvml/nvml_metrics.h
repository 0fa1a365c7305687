// SPDX-License-Identifier: Apache-2.0
// The static catalog of every metric NvmlSource writes. Values are recorded in base units
// (ratio 0..1, bytes, W, J, Cel, Hz, bytes/s); each MetricDesc carries the Prometheus name and
// scale (dcgm-exporter's name and unit where dcgm-exporter has the metric, so existing Grafana
// dashboards keep working) and the OpenTelemetry name (semantic conventions where they exist).
//
// Entities: metrics with entity kGpu are also written for MIG instances (kMigInstance, parent =
// the GPU) when NVML answers the query per instance (memory, GPM) — as dcgm-exporter writes the
// same family for a GPU and its MIG instances, told apart by the GPU_I_ID label.
//
// Series label keys (beyond the entity): "link" (NVLink link index), "reason" (clock event
// reason), "xid" (XID number), and on per-process / per-executable series "gpu.index",
// "gpu.uuid" (the MIG device UUID for processes inside a MIG instance) and "type"
// (compute|graphics).
//
// docs/metrics.md is generated from AllNvmlMetrics(); keep `help` precise: what, unit, NVML call.
#ifndef WARPSCOPE_AGENT_SOURCES_NVML_NVML_METRICS_H_
#define WARPSCOPE_AGENT_SOURCES_NVML_NVML_METRICS_H_

#include <span>
#include <string_view>

#include "model/metric.h"

namespace warpscope::agent::nvml_metrics {

// Label keys used on NVML series.
inline constexpr std::string_view kLabelLink = "link";
inline constexpr std::string_view kLabelReason = "reason";
inline constexpr std::string_view kLabelXid = "xid";
inline constexpr std::string_view kLabelType = "type";  // "compute" | "graphics"

// --- GPU: utilisation -------------------------------------------------------------------------
extern const model::MetricDesc kGpuUtilization;
extern const model::MetricDesc kMemoryCopyUtilization;
extern const model::MetricDesc kEncoderUtilization;
extern const model::MetricDesc kDecoderUtilization;
// --- GPU: framebuffer memory ------------------------------------------------------------------
extern const model::MetricDesc kMemoryTotal;
extern const model::MetricDesc kMemoryUsed;
extern const model::MetricDesc kMemoryFree;
extern const model::MetricDesc kMemoryReserved;
extern const model::MetricDesc kMemoryUtilization;
// --- GPU: power, energy, temperature ----------------------------------------------------------
extern const model::MetricDesc kPowerUsage;
extern const model::MetricDesc kPowerLimit;
extern const model::MetricDesc kEnforcedPowerLimit;
extern const model::MetricDesc kEnergyConsumed;
extern const model::MetricDesc kTemperature;
extern const model::MetricDesc kMemoryTemperature;
// Temperature thresholds (static; nvmlDeviceGetTemperatureThreshold).
extern const model::MetricDesc kTemperatureSlowdown;
extern const model::MetricDesc kTemperatureShutdown;
extern const model::MetricDesc kTemperatureMaxOperating;
extern const model::MetricDesc kMemoryTemperatureMax;
// --- GPU: clocks ------------------------------------------------------------------------------
extern const model::MetricDesc kSmClock;
extern const model::MetricDesc kMemoryClock;
extern const model::MetricDesc kMaxSmClock;
extern const model::MetricDesc kMaxMemoryClock;
extern const model::MetricDesc kClockEventReasons;
extern const model::MetricDesc kClockEventReasonActive;  // {reason}
// --- GPU: PCIe --------------------------------------------------------------------------------
extern const model::MetricDesc kPcieTransmitRate;
extern const model::MetricDesc kPcieReceiveRate;
extern const model::MetricDesc kPcieReplays;
// --- GPU: NVLink ------------------------------------------------------------------------------
extern const model::MetricDesc kNvlinkTransmitBytes;  // {link}
extern const model::MetricDesc kNvlinkReceiveBytes;   // {link}
extern const model::MetricDesc kNvlinkTransmitRate;   // {link}
extern const model::MetricDesc kNvlinkReceiveRate;    // {link}
extern const model::MetricDesc kNvlinkBandwidthTotal;
// --- GPU: errors and health -------------------------------------------------------------------
extern const model::MetricDesc kEccCorrectedVolatile;
extern const model::MetricDesc kEccUncorrectedVolatile;
extern const model::MetricDesc kEccCorrectedAggregate;
extern const model::MetricDesc kEccUncorrectedAggregate;
extern const model::MetricDesc kRemappedRowsCorrectable;
extern const model::MetricDesc kRemappedRowsUncorrectable;
extern const model::MetricDesc kRemappedRowsPending;
extern const model::MetricDesc kRemappedRowsFailure;
extern const model::MetricDesc kXidLast;
extern const model::MetricDesc kXidErrors;  // {xid}
extern const model::MetricDesc kDegraded;
extern const model::MetricDesc kInfo;
extern const model::MetricDesc kMigMode;
// --- GPU: GPM profiling (Hopper and newer) ----------------------------------------------------
extern const model::MetricDesc kGraphicsEngineActive;
extern const model::MetricDesc kSmActive;
extern const model::MetricDesc kSmOccupancy;
extern const model::MetricDesc kTensorActive;
extern const model::MetricDesc kTensorHmmaActive;
extern const model::MetricDesc kTensorImmaActive;
extern const model::MetricDesc kTensorDfmaActive;
extern const model::MetricDesc kDramActive;
extern const model::MetricDesc kFp64Active;
extern const model::MetricDesc kFp32Active;
extern const model::MetricDesc kFp16Active;
extern const model::MetricDesc kIntActive;
extern const model::MetricDesc kProfPcieTransmitRate;
extern const model::MetricDesc kProfPcieReceiveRate;
extern const model::MetricDesc kProfNvlinkTransmitRate;
extern const model::MetricDesc kProfNvlinkReceiveRate;
// --- Processes and executables ("GPU consumers") ----------------------------------------------
extern const model::MetricDesc kProcessMemoryUsed;         // {gpu.index, gpu.uuid, type}
extern const model::MetricDesc kProcessSmUtilization;      // {gpu.index, gpu.uuid, type}
extern const model::MetricDesc kProcessMemoryUtilization;  // {gpu.index, gpu.uuid, type}
extern const model::MetricDesc kExecutableMemoryUsed;      // {gpu.index, gpu.uuid}
extern const model::MetricDesc kExecutableSmUtilization;   // {gpu.index, gpu.uuid}
extern const model::MetricDesc kExecutableProcesses;       // {gpu.index, gpu.uuid}

// Every metric above, in catalog order (for docs, exporters' HELP/TYPE and tests).
std::span<const model::MetricDesc* const> AllNvmlMetrics();

}  // namespace warpscope::agent::nvml_metrics

#endif  // WARPSCOPE_AGENT_SOURCES_NVML_NVML_METRICS_H_
