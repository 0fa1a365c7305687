// SPDX-License-Identifier: Apache-2.0
// The GPU metric catalog: one description per metric (names, units, dcgm-exporter mapping,
// help), in the order of docs/metrics.md. It is one file over 800 lines on purpose: a table,
// read and reviewed as one list, with no logic between its entries.
#include "agent/sources/nvml/nvml_metrics.h"

namespace warpscope::agent::nvml_metrics {

using model::EntityKind;
using model::MetricDesc;
using model::MetricKind;

namespace {
constexpr double kMiB = 1048576.0;
}  // namespace

// --- GPU: utilisation ---------------------------------------------------------------------------

const MetricDesc kGpuUtilization{
    .key = "gpu.utilization",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Fraction of the last sample period (1/6 s to 1 s depending on the product) during "
        "which one or more kernels ran on the GPU (ratio 0..1; "
        "nvmlDeviceGetUtilizationRates().gpu / 100). Not available in MIG mode.",
    .prom_name = "DCGM_FI_DEV_GPU_UTIL",
    .prom_scale = 100,
    .otel_name = "hw.gpu.utilization",
    .otel_attrs = "hw.type=gpu;hw.gpu.task=general",
};

const MetricDesc kMemoryCopyUtilization{
    .key = "gpu.memory_copy.utilization",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Fraction of the last sample period during which device memory was being read or "
        "written (ratio 0..1; nvmlDeviceGetUtilizationRates().memory / 100).",
    .prom_name = "DCGM_FI_DEV_MEM_COPY_UTIL",
    .prom_scale = 100,
    .otel_name = "warpscope.gpu.memory_copy.utilization",
};

const MetricDesc kEncoderUtilization{
    .key = "gpu.encoder.utilization",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Video encoder (NVENC) utilisation (ratio 0..1; nvmlDeviceGetEncoderUtilization / "
        "100).",
    .prom_name = "DCGM_FI_DEV_ENC_UTIL",
    .prom_scale = 100,
    .otel_name = "hw.gpu.utilization",
    .otel_attrs = "hw.type=gpu;hw.gpu.task=encoder",
};

const MetricDesc kDecoderUtilization{
    .key = "gpu.decoder.utilization",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Video decoder (NVDEC) utilisation (ratio 0..1; nvmlDeviceGetDecoderUtilization / "
        "100).",
    .prom_name = "DCGM_FI_DEV_DEC_UTIL",
    .prom_scale = 100,
    .otel_name = "hw.gpu.utilization",
    .otel_attrs = "hw.type=gpu;hw.gpu.task=decoder",
};

// --- GPU: framebuffer memory --------------------------------------------------------------------

const MetricDesc kMemoryTotal{
    .key = "gpu.memory.total",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help =
        "Total framebuffer memory in bytes (nvmlDeviceGetMemoryInfo_v2().total, v1 on "
        "drivers before R510; per MIG instance with its device handle).",
    .prom_name = "DCGM_FI_DEV_FB_TOTAL",
    .prom_scale = 1.0 / kMiB,
    .otel_name = "hw.gpu.memory.limit",
    .otel_attrs = "hw.type=gpu",
};

const MetricDesc kMemoryUsed{
    .key = "gpu.memory.used",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help =
        "Framebuffer memory allocated by processes, in bytes, excluding driver-reserved "
        "memory (nvmlDeviceGetMemoryInfo_v2().used; with the v1 call of drivers before R510 "
        "it includes the reserved memory).",
    .prom_name = "DCGM_FI_DEV_FB_USED",
    .prom_scale = 1.0 / kMiB,
    .otel_name = "hw.gpu.memory.usage",
    .otel_attrs = "hw.type=gpu",
};

const MetricDesc kMemoryFree{
    .key = "gpu.memory.free",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help = "Unallocated framebuffer memory in bytes (nvmlDeviceGetMemoryInfo_v2().free).",
    .prom_name = "DCGM_FI_DEV_FB_FREE",
    .prom_scale = 1.0 / kMiB,
    .otel_name = "warpscope.gpu.memory.free",
    .otel_attrs = "hw.type=gpu",
};

const MetricDesc kMemoryReserved{
    .key = "gpu.memory.reserved",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help =
        "Framebuffer memory reserved by the driver and firmware, in bytes "
        "(nvmlDeviceGetMemoryInfo_v2().reserved; absent on drivers before R510).",
    .prom_name = "DCGM_FI_DEV_FB_RESERVED",
    .prom_scale = 1.0 / kMiB,
    .otel_name = "warpscope.gpu.memory.reserved",
    .otel_attrs = "hw.type=gpu",
};

const MetricDesc kMemoryUtilization{
    .key = "gpu.memory.utilization",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Fraction of the usable framebuffer memory in use: used / (total - reserved) from "
        "nvmlDeviceGetMemoryInfo_v2 (ratio 0..1).",
    .prom_name = "warpscope_gpu_memory_used_ratio",
    .prom_scale = 1,
    .otel_name = "hw.gpu.memory.utilization",
    .otel_attrs = "hw.type=gpu",
};

// --- GPU: power, energy, temperature ------------------------------------------------------------

const MetricDesc kPowerUsage{
    .key = "gpu.power.usage",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "W",
    .help =
        "Board power draw in watts (nvmlDeviceGetPowerUsage mW / 1000; a 1 s average on "
        "Ampere except GA100 and newer, instantaneous before).",
    .prom_name = "DCGM_FI_DEV_POWER_USAGE",
    .prom_scale = 1,
    .otel_name = "hw.power",
    .otel_attrs = "hw.type=gpu",
};

const MetricDesc kPowerLimit{
    .key = "gpu.power.limit",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "W",
    .help =
        "Configured power management limit in watts (nvmlDeviceGetPowerManagementLimit mW / "
        "1000).",
    .prom_name = "DCGM_FI_DEV_POWER_MGMT_LIMIT",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.power.limit",
    .otel_attrs = "hw.type=gpu",
};

const MetricDesc kEnforcedPowerLimit{
    .key = "gpu.power.enforced_limit",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "W",
    .help =
        "Power limit actually enforced after all limiters, in watts "
        "(nvmlDeviceGetEnforcedPowerLimit mW / 1000).",
    .prom_name = "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.power.enforced_limit",
    .otel_attrs = "hw.type=gpu",
};

const MetricDesc kEnergyConsumed{
    .key = "gpu.energy.consumed",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kCounter,
    .unit = "J",
    .help =
        "Energy consumed since the driver was last loaded, in joules "
        "(nvmlDeviceGetTotalEnergyConsumption mJ / 1000; Volta and newer; resets on driver "
        "reload).",
    .prom_name = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    .prom_scale = 1000,
    .otel_name = "hw.energy",
    .otel_attrs = "hw.type=gpu",
};

const MetricDesc kTemperature{
    .key = "gpu.temperature",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "Cel",
    .help =
        "GPU die temperature in degrees Celsius (nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)"
        "; readings above 200 are discarded as invalid).",
    .prom_name = "DCGM_FI_DEV_GPU_TEMP",
    .prom_scale = 1,
    .otel_name = "hw.temperature",
    .otel_attrs = "hw.type=gpu;hw.sensor_location=gpu",
};

const MetricDesc kMemoryTemperature{
    .key = "gpu.memory.temperature",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "Cel",
    .help =
        "Memory (HBM) temperature in degrees Celsius (nvmlDeviceGetFieldValues field 82 "
        "NVML_FI_DEV_MEMORY_TEMP; readings above 200 are discarded as invalid).",
    .prom_name = "DCGM_FI_DEV_MEMORY_TEMP",
    .prom_scale = 1,
    .otel_name = "hw.temperature",
    .otel_attrs = "hw.type=gpu;hw.sensor_location=memory",
};

const MetricDesc kTemperatureSlowdown{
    .key = "gpu.temperature.slowdown",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "Cel",
    .help =
        "GPU temperature in degrees Celsius at which the GPU begins hardware slowdown "
        "(nvmlDeviceGetTemperatureThreshold(NVML_TEMPERATURE_THRESHOLD_SLOWDOWN); static: read "
        "at the first poll and every 5 minutes; absent where NVML does not report it).",
    .prom_name = "DCGM_FI_DEV_SLOWDOWN_TEMP",
    .prom_scale = 1,
    .otel_name = "hw.temperature.limit",
    .otel_attrs = "hw.type=gpu;hw.sensor_location=gpu;hw.limit_type=throttled",
};

const MetricDesc kTemperatureShutdown{
    .key = "gpu.temperature.shutdown",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "Cel",
    .help =
        "GPU temperature in degrees Celsius at which the GPU shuts down to protect the hardware "
        "(nvmlDeviceGetTemperatureThreshold(NVML_TEMPERATURE_THRESHOLD_SHUTDOWN); static: read "
        "at the first poll and every 5 minutes; absent where NVML does not report it).",
    .prom_name = "DCGM_FI_DEV_SHUTDOWN_TEMP",
    .prom_scale = 1,
    .otel_name = "hw.temperature.limit",
    .otel_attrs = "hw.type=gpu;hw.sensor_location=gpu;hw.limit_type=high.critical",
};

const MetricDesc kTemperatureMaxOperating{
    .key = "gpu.temperature.max_operating",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "Cel",
    .help =
        "Maximum operating temperature of the GPU in degrees Celsius: above it the GPU may be "
        "throttled below its base clock (nvmlDeviceGetTemperatureThreshold("
        "NVML_TEMPERATURE_THRESHOLD_GPU_MAX); static: read at the first poll and every 5 "
        "minutes; absent where NVML does not report it).",
    .prom_name = "DCGM_FI_DEV_GPU_MAX_OP_TEMP",
    .prom_scale = 1,
    .otel_name = "hw.temperature.limit",
    .otel_attrs = "hw.type=gpu;hw.sensor_location=gpu;hw.limit_type=max",
};

const MetricDesc kMemoryTemperatureMax{
    .key = "gpu.memory.temperature.max",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "Cel",
    .help =
        "Maximum operating temperature of the memory (HBM) in degrees Celsius: above it the "
        "GPU begins software slowdown (nvmlDeviceGetTemperatureThreshold("
        "NVML_TEMPERATURE_THRESHOLD_MEM_MAX); static: read at the first poll and every 5 "
        "minutes; absent where NVML does not report it, as on GDDR boards).",
    .prom_name = "DCGM_FI_DEV_MEM_MAX_OP_TEMP",
    .prom_scale = 1,
    .otel_name = "hw.temperature.limit",
    .otel_attrs = "hw.type=gpu;hw.sensor_location=memory;hw.limit_type=max",
};

// --- GPU: clocks --------------------------------------------------------------------------------

const MetricDesc kSmClock{
    .key = "gpu.clock.sm",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "Hz",
    .help = "Current SM clock in hertz (nvmlDeviceGetClockInfo(NVML_CLOCK_SM) MHz x 1e6).",
    .prom_name = "DCGM_FI_DEV_SM_CLOCK",
    .prom_scale = 1e-6,
    .otel_name = "warpscope.gpu.clock.sm",
};

const MetricDesc kMemoryClock{
    .key = "gpu.clock.memory",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "Hz",
    .help = "Current memory clock in hertz (nvmlDeviceGetClockInfo(NVML_CLOCK_MEM) MHz x 1e6).",
    .prom_name = "DCGM_FI_DEV_MEM_CLOCK",
    .prom_scale = 1e-6,
    .otel_name = "warpscope.gpu.clock.memory",
};

const MetricDesc kMaxSmClock{
    .key = "gpu.clock.sm.max",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "Hz",
    .help =
        "Maximum SM clock in hertz (nvmlDeviceGetMaxClockInfo(NVML_CLOCK_SM) MHz x 1e6, read "
        "once at start).",
    .prom_name = "DCGM_FI_DEV_MAX_SM_CLOCK",
    .prom_scale = 1e-6,
    .otel_name = "warpscope.gpu.clock.sm.limit",
};

const MetricDesc kMaxMemoryClock{
    .key = "gpu.clock.memory.max",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "Hz",
    .help =
        "Maximum memory clock in hertz (nvmlDeviceGetMaxClockInfo(NVML_CLOCK_MEM) MHz x 1e6, "
        "read once at start).",
    .prom_name = "DCGM_FI_DEV_MAX_MEM_CLOCK",
    .prom_scale = 1e-6,
    .otel_name = "warpscope.gpu.clock.memory.limit",
};

const MetricDesc kClockEventReasons{
    .key = "gpu.clock.event_reasons",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Bitmask of the reasons the clocks are currently held below their maximum "
        "(nvmlDeviceGetCurrentClocksEventReasons, ...ThrottleReasons on drivers before R535): "
        "0x1 gpu_idle, 0x2 clocks_setting, 0x4 power_cap, 0x8 hw_slowdown, 0x10 sync_boost, "
        "0x20 sw_thermal, 0x40 hw_thermal, 0x80 hw_power_brake, 0x100 display_clocks.",
    .prom_name = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.clock.event_reasons",
};

const MetricDesc kClockEventReasonActive{
    .key = "gpu.clock.event_reason.active",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "1 while the clock event reason named by the reason label holds the clocks down, "
        "else 0; one series per reason (a bit of gpu.clock.event_reasons).",
    .prom_name = "warpscope_gpu_clock_event_reason_active",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.clock.event_reason.active",
    .labels = "reason",
};

// --- GPU: PCIe ----------------------------------------------------------------------------------

const MetricDesc kPcieTransmitRate{
    .key = "gpu.pcie.transmit.rate",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "By/s",
    .help =
        "PCIe transmit (GPU to host) throughput in bytes per second over a 20 ms window "
        "(nvmlDeviceGetPcieThroughput(NVML_PCIE_UTIL_TX_BYTES) KB/s x 1024).",
    .prom_name = "warpscope_gpu_pcie_transmit_bytes_per_second",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.pcie.transmit.rate",
};

const MetricDesc kPcieReceiveRate{
    .key = "gpu.pcie.receive.rate",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "By/s",
    .help =
        "PCIe receive (host to GPU) throughput in bytes per second over a 20 ms window "
        "(nvmlDeviceGetPcieThroughput(NVML_PCIE_UTIL_RX_BYTES) KB/s x 1024).",
    .prom_name = "warpscope_gpu_pcie_receive_bytes_per_second",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.pcie.receive.rate",
};

const MetricDesc kPcieReplays{
    .key = "gpu.pcie.replays",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kCounter,
    .unit = "{replay}",
    .help =
        "PCIe replays (link-level retransmissions) since the driver was loaded "
        "(nvmlDeviceGetPcieReplayCounter).",
    .prom_name = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.pcie.replays",
};

// --- GPU: NVLink --------------------------------------------------------------------------------

const MetricDesc kNvlinkTransmitBytes{
    .key = "gpu.nvlink.transmit.bytes",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kCounter,
    .unit = "By",
    .help =
        "NVLink payload bytes transmitted on one active link since the driver was loaded "
        "(nvmlDeviceGetFieldValues field 138 NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, scopeId = "
        "link, KiB x 1024).",
    .prom_name = "warpscope_gpu_nvlink_transmit_bytes_total",
    .prom_scale = 1,
    .otel_name = "hw.gpu.io",
    .otel_attrs = "hw.type=gpu;network.io.direction=transmit",
    .labels = "link",
};

const MetricDesc kNvlinkReceiveBytes{
    .key = "gpu.nvlink.receive.bytes",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kCounter,
    .unit = "By",
    .help =
        "NVLink payload bytes received on one active link since the driver was loaded "
        "(nvmlDeviceGetFieldValues field 139 NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, scopeId = "
        "link, KiB x 1024).",
    .prom_name = "warpscope_gpu_nvlink_receive_bytes_total",
    .prom_scale = 1,
    .otel_name = "hw.gpu.io",
    .otel_attrs = "hw.type=gpu;network.io.direction=receive",
    .labels = "link",
};

const MetricDesc kNvlinkTransmitRate{
    .key = "gpu.nvlink.transmit.rate",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "By/s",
    .help =
        "NVLink payload transmit throughput of one active link in bytes per second: the "
        "difference of two field-138 readings divided by the difference of their "
        "timestamps (no value after a counter reset or on the first poll).",
    .prom_name = "warpscope_gpu_nvlink_transmit_bytes_per_second",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.nvlink.transmit.rate",
    .labels = "link",
};

const MetricDesc kNvlinkReceiveRate{
    .key = "gpu.nvlink.receive.rate",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "By/s",
    .help =
        "NVLink payload receive throughput of one active link in bytes per second: the "
        "difference of two field-139 readings divided by the difference of their "
        "timestamps (no value after a counter reset or on the first poll).",
    .prom_name = "warpscope_gpu_nvlink_receive_bytes_per_second",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.nvlink.receive.rate",
    .labels = "link",
};

const MetricDesc kNvlinkBandwidthTotal{
    .key = "gpu.nvlink.bandwidth.total",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "By/s",
    .help =
        "NVLink payload throughput summed over all active links and both directions, in "
        "bytes per second (fields 138 + 139 differenced; exported to Prometheus in DCGM's "
        "unit, KiB/s / 1000).",
    .prom_name = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    .prom_scale = 1.0 / 1024000.0,
    .otel_name = "warpscope.gpu.nvlink.bandwidth",
};

// --- GPU: errors and health ---------------------------------------------------------------------

const MetricDesc kEccCorrectedVolatile{
    .key = "gpu.ecc.corrected.volatile",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kCounter,
    .unit = "{error}",
    .help =
        "Corrected (single-bit) ECC errors since the driver was loaded "
        "(nvmlDeviceGetTotalEccErrors(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC)).",
    .prom_name = "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    .prom_scale = 1,
    .otel_name = "hw.errors",
    .otel_attrs = "hw.type=gpu;error.type=corrected",
};

const MetricDesc kEccUncorrectedVolatile{
    .key = "gpu.ecc.uncorrected.volatile",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kCounter,
    .unit = "{error}",
    .help =
        "Uncorrected (double-bit) ECC errors since the driver was loaded "
        "(nvmlDeviceGetTotalEccErrors(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, "
        "NVML_VOLATILE_ECC)).",
    .prom_name = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    .prom_scale = 1,
    .otel_name = "hw.errors",
    .otel_attrs = "hw.type=gpu;error.type=uncorrected",
};

const MetricDesc kEccCorrectedAggregate{
    .key = "gpu.ecc.corrected.aggregate",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kCounter,
    .unit = "{error}",
    .help =
        "Corrected (single-bit) ECC errors over the GPU's lifetime "
        "(nvmlDeviceGetTotalEccErrors(NVML_MEMORY_ERROR_TYPE_CORRECTED, "
        "NVML_AGGREGATE_ECC)).",
    .prom_name = "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.ecc.lifetime_errors",
    .otel_attrs = "hw.type=gpu;error.type=corrected",
};

const MetricDesc kEccUncorrectedAggregate{
    .key = "gpu.ecc.uncorrected.aggregate",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kCounter,
    .unit = "{error}",
    .help =
        "Uncorrected (double-bit) ECC errors over the GPU's lifetime "
        "(nvmlDeviceGetTotalEccErrors(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, "
        "NVML_AGGREGATE_ECC)).",
    .prom_name = "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.ecc.lifetime_errors",
    .otel_attrs = "hw.type=gpu;error.type=uncorrected",
};

const MetricDesc kRemappedRowsCorrectable{
    .key = "gpu.remapped_rows.correctable",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kCounter,
    .unit = "{row}",
    .help =
        "Memory rows remapped because of correctable errors "
        "(nvmlDeviceGetRemappedRows corrRows; Ampere and newer).",
    .prom_name = "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.remapped_rows",
    .otel_attrs = "error.type=corrected",
};

const MetricDesc kRemappedRowsUncorrectable{
    .key = "gpu.remapped_rows.uncorrectable",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kCounter,
    .unit = "{row}",
    .help =
        "Memory rows remapped because of uncorrectable errors "
        "(nvmlDeviceGetRemappedRows uncRows; Ampere and newer).",
    .prom_name = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.remapped_rows",
    .otel_attrs = "error.type=uncorrected",
};

const MetricDesc kRemappedRowsPending{
    .key = "gpu.remapped_rows.pending",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "1 when a row remapping is pending and the GPU needs a reset to apply it, else 0 "
        "(nvmlDeviceGetRemappedRows isPending).",
    .prom_name = "DCGM_FI_DEV_ROW_REMAP_PENDING",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.remapped_rows.pending",
};

const MetricDesc kRemappedRowsFailure{
    .key = "gpu.remapped_rows.failure",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "1 when a row remapping has failed (the GPU should be replaced), else 0 "
        "(nvmlDeviceGetRemappedRows failureOccurred).",
    .prom_name = "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.remapped_rows.failure",
};

const MetricDesc kXidLast{
    .key = "gpu.xid.last",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Number of the last XID error reported for the GPU since the agent started, 0 when "
        "none (nvmlEventSetWait_v2 eventData of nvmlEventTypeXidCriticalError; written only "
        "when XID events could be registered).",
    .prom_name = "DCGM_FI_DEV_XID_ERRORS",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.xid.last",
};

const MetricDesc kXidErrors{
    .key = "gpu.xid.errors",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kCounter,
    .unit = "{error}",
    .help =
        "XID errors reported for the GPU since the agent started, one series per XID number "
        "(nvmlEventSetWait_v2, nvmlEventTypeXidCriticalError).",
    .prom_name = "warpscope_gpu_xid_errors_total",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.xid.errors",
    .labels = "xid",
};

const MetricDesc kDegraded{
    .key = "gpu.degraded",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "1 while the agent cannot read the GPU (NVML_ERROR_GPU_IS_LOST, reset required or "
        "repeated unknown errors) and retries it periodically, or while an NVML call on it has "
        "not answered within the per-GPU deadline, else 0.",
    .prom_name = "warpscope_gpu_degraded",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.degraded",
};

const MetricDesc kInfo{
    .key = "gpu.info",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Always 1; carries the GPU's identity (index, UUID, model, PCI bus id, serial, "
        "architecture, compute capability, driver and CUDA versions) as labels.",
    .prom_name = "warpscope_gpu_info",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.info",
};

const MetricDesc kMigMode{
    .key = "gpu.mig.enabled",
    .entity = EntityKind::kGpu,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "1 when MIG mode is enabled on the GPU, else 0 (nvmlDeviceGetMigMode current mode, "
        "read at start; absent on GPUs without MIG).",
    .prom_name = "DCGM_FI_DEV_MIG_MODE",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.mig.enabled",
};

// --- GPU: GPM profiling (Hopper and newer) ------------------------------------------------------

// clang-format off
#define WARPSCOPE_GPM_RATIO(var, key_, what, gpm, prom, otel)                                 \
  const MetricDesc var{                                                                       \
      .key = key_, .entity = EntityKind::kGpu, .kind = MetricKind::kGauge, .unit = "1",       \
      .help = what " (ratio 0..1, averaged over the poll interval; NVML GPM metric " gpm     \
                   " / 100, Hopper and newer).",                                             \
      .prom_name = prom, .prom_scale = 1, .otel_name = otel,                                  \
  }
// clang-format on

WARPSCOPE_GPM_RATIO(kGraphicsEngineActive, "gpu.graphics_engine.active",
                    "Fraction of time the graphics/compute engine had a context bound and busy",
                    "NVML_GPM_METRIC_GRAPHICS_UTIL (1)", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                    "warpscope.gpu.graphics_engine.active");
WARPSCOPE_GPM_RATIO(kSmActive, "gpu.sm.active",
                    "SM efficiency: fraction of cycles an SM had at least one warp resident, "
                    "averaged over all SMs",
                    "NVML_GPM_METRIC_SM_UTIL (2)", "DCGM_FI_PROF_SM_ACTIVE",
                    "warpscope.gpu.sm.active");
WARPSCOPE_GPM_RATIO(kSmOccupancy, "gpu.sm.occupancy",
                    "SM occupancy: resident warps as a fraction of the theoretical maximum, "
                    "averaged over all SMs",
                    "NVML_GPM_METRIC_SM_OCCUPANCY (3)", "DCGM_FI_PROF_SM_OCCUPANCY",
                    "warpscope.gpu.sm.occupancy");
WARPSCOPE_GPM_RATIO(kTensorActive, "gpu.tensor.active",
                    "Tensor core utilisation: fraction of cycles any tensor pipe was active",
                    "NVML_GPM_METRIC_ANY_TENSOR_UTIL (5)", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                    "warpscope.gpu.tensor.active");
WARPSCOPE_GPM_RATIO(kTensorHmmaActive, "gpu.tensor.hmma.active",
                    "Fraction of cycles the HMMA (half-precision matrix) tensor pipe was active",
                    "NVML_GPM_METRIC_HMMA_TENSOR_UTIL (7)", "DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE",
                    "warpscope.gpu.tensor.hmma.active");
WARPSCOPE_GPM_RATIO(kTensorImmaActive, "gpu.tensor.imma.active",
                    "Fraction of cycles the IMMA (integer matrix) tensor pipe was active",
                    "NVML_GPM_METRIC_IMMA_TENSOR_UTIL (9)", "DCGM_FI_PROF_PIPE_TENSOR_IMMA_ACTIVE",
                    "warpscope.gpu.tensor.imma.active");
WARPSCOPE_GPM_RATIO(kTensorDfmaActive, "gpu.tensor.dfma.active",
                    "Fraction of cycles the DFMA (double-precision matrix) tensor pipe was "
                    "active",
                    "NVML_GPM_METRIC_DFMA_TENSOR_UTIL (6)", "DCGM_FI_PROF_PIPE_TENSOR_DFMA_ACTIVE",
                    "warpscope.gpu.tensor.dfma.active");
WARPSCOPE_GPM_RATIO(kDramActive, "gpu.dram.active",
                    "DRAM bandwidth utilisation: fraction of cycles the device memory interface "
                    "was sending or receiving data",
                    "NVML_GPM_METRIC_DRAM_BW_UTIL (10)", "DCGM_FI_PROF_DRAM_ACTIVE",
                    "warpscope.gpu.dram.active");
WARPSCOPE_GPM_RATIO(kFp64Active, "gpu.fp64.active",
                    "Fraction of cycles the FP64 (non-tensor) pipe was active",
                    "NVML_GPM_METRIC_FP64_UTIL (11)", "DCGM_FI_PROF_PIPE_FP64_ACTIVE",
                    "warpscope.gpu.fp64.active");
WARPSCOPE_GPM_RATIO(kFp32Active, "gpu.fp32.active",
                    "Fraction of cycles the FP32 (non-tensor) pipe was active",
                    "NVML_GPM_METRIC_FP32_UTIL (12)", "DCGM_FI_PROF_PIPE_FP32_ACTIVE",
                    "warpscope.gpu.fp32.active");
WARPSCOPE_GPM_RATIO(kFp16Active, "gpu.fp16.active",
                    "Fraction of cycles the FP16 (non-tensor, excluding HMMA) pipe was active",
                    "NVML_GPM_METRIC_FP16_UTIL (13)", "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
                    "warpscope.gpu.fp16.active");
WARPSCOPE_GPM_RATIO(kIntActive, "gpu.int.active", "Fraction of cycles the integer pipe was active",
                    "NVML_GPM_METRIC_INTEGER_UTIL (4)", "DCGM_FI_PROF_PIPE_INT_ACTIVE",
                    "warpscope.gpu.int.active");
#undef WARPSCOPE_GPM_RATIO

// clang-format off
#define WARPSCOPE_GPM_RATE(var, key_, what, gpm, prom, otel)                                  \
  const MetricDesc var{                                                                       \
      .key = key_, .entity = EntityKind::kGpu, .kind = MetricKind::kGauge, .unit = "By/s",    \
      .help = what " in bytes per second including protocol headers, averaged over the poll " \
                   "interval (NVML GPM metric " gpm " MiB/s x 1048576, Hopper and newer).",  \
      .prom_name = prom, .prom_scale = 1, .otel_name = otel,                                  \
  }
// clang-format on

WARPSCOPE_GPM_RATE(kProfPcieTransmitRate, "gpu.prof.pcie.transmit.rate",
                   "PCIe transmit (GPU to host) throughput", "NVML_GPM_METRIC_PCIE_TX_PER_SEC (20)",
                   "DCGM_FI_PROF_PCIE_TX_BYTES", "warpscope.gpu.prof.pcie.transmit.rate");
WARPSCOPE_GPM_RATE(kProfPcieReceiveRate, "gpu.prof.pcie.receive.rate",
                   "PCIe receive (host to GPU) throughput", "NVML_GPM_METRIC_PCIE_RX_PER_SEC (21)",
                   "DCGM_FI_PROF_PCIE_RX_BYTES", "warpscope.gpu.prof.pcie.receive.rate");
WARPSCOPE_GPM_RATE(kProfNvlinkTransmitRate, "gpu.prof.nvlink.transmit.rate",
                   "NVLink transmit throughput over all links",
                   "NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC (61)", "DCGM_FI_PROF_NVLINK_TX_BYTES",
                   "warpscope.gpu.prof.nvlink.transmit.rate");
WARPSCOPE_GPM_RATE(kProfNvlinkReceiveRate, "gpu.prof.nvlink.receive.rate",
                   "NVLink receive throughput over all links",
                   "NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC (60)", "DCGM_FI_PROF_NVLINK_RX_BYTES",
                   "warpscope.gpu.prof.nvlink.receive.rate");
#undef WARPSCOPE_GPM_RATE

// --- Processes and executables ------------------------------------------------------------------

const MetricDesc kProcessMemoryUsed{
    .key = "gpu.process.memory.used",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help =
        "Framebuffer memory used by the process on one GPU or MIG instance, in bytes "
        "(usedGpuMemory of nvmlDeviceGetComputeRunningProcesses_v3 / "
        "nvmlDeviceGetGraphicsRunningProcesses_v3).",
    .prom_name = "warpscope_gpu_process_memory_used_bytes",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.process.memory.usage",
    .labels = "gpu.index,gpu.uuid,type",
};

const MetricDesc kProcessSmUtilization{
    .key = "gpu.process.sm.utilization",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Fraction of time the process had kernels running on the GPU's SMs since the "
        "previous poll, averaged over NVML's samples (nvmlDeviceGetProcessUtilization "
        "smUtil / 100; 0 for a running process with no sample; not available in MIG mode).",
    .prom_name = "warpscope_gpu_process_sm_utilization_ratio",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.process.sm.utilization",
    .labels = "gpu.index,gpu.uuid,type",
};

const MetricDesc kProcessMemoryUtilization{
    .key = "gpu.process.memory.utilization",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Fraction of time the process was reading or writing device memory since the "
        "previous poll (nvmlDeviceGetProcessUtilization memUtil / 100; 0 for a running "
        "process with no sample; not available in MIG mode).",
    .prom_name = "warpscope_gpu_process_memory_utilization_ratio",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.process.memory.utilization",
    .labels = "gpu.index,gpu.uuid,type",
};

const MetricDesc kExecutableMemoryUsed{
    .key = "gpu.executable.memory.used",
    .entity = EntityKind::kExecutable,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help =
        "GPU memory consumer: framebuffer memory used on one GPU or MIG instance by all "
        "processes of the executable, in bytes (sum of gpu.process.memory.used).",
    .prom_name = "warpscope_gpu_executable_memory_used_bytes",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.executable.memory.usage",
    .labels = "gpu.index,gpu.uuid",
};

const MetricDesc kExecutableSmUtilization{
    .key = "gpu.executable.sm.utilization",
    .entity = EntityKind::kExecutable,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "GPU consumer: SM utilisation of one GPU by all processes of the executable (sum of "
        "gpu.process.sm.utilization, ratio 0..1).",
    .prom_name = "warpscope_gpu_executable_sm_utilization_ratio",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.executable.sm.utilization",
    .labels = "gpu.index,gpu.uuid",
};

const MetricDesc kExecutableProcesses{
    .key = "gpu.executable.processes",
    .entity = EntityKind::kExecutable,
    .kind = MetricKind::kGauge,
    .unit = "{process}",
    .help =
        "Number of processes of the executable running on one GPU or MIG instance (from the "
        "compute and graphics running-process lists).",
    .prom_name = "warpscope_gpu_executable_processes",
    .prom_scale = 1,
    .otel_name = "warpscope.gpu.executable.processes",
    .labels = "gpu.index,gpu.uuid",
};

namespace {
constexpr const MetricDesc* kAll[] = {
    &kGpuUtilization,
    &kMemoryCopyUtilization,
    &kEncoderUtilization,
    &kDecoderUtilization,
    &kMemoryTotal,
    &kMemoryUsed,
    &kMemoryFree,
    &kMemoryReserved,
    &kMemoryUtilization,
    &kPowerUsage,
    &kPowerLimit,
    &kEnforcedPowerLimit,
    &kEnergyConsumed,
    &kTemperature,
    &kMemoryTemperature,
    &kTemperatureSlowdown,
    &kTemperatureShutdown,
    &kTemperatureMaxOperating,
    &kMemoryTemperatureMax,
    &kSmClock,
    &kMemoryClock,
    &kMaxSmClock,
    &kMaxMemoryClock,
    &kClockEventReasons,
    &kClockEventReasonActive,
    &kPcieTransmitRate,
    &kPcieReceiveRate,
    &kPcieReplays,
    &kNvlinkTransmitBytes,
    &kNvlinkReceiveBytes,
    &kNvlinkTransmitRate,
    &kNvlinkReceiveRate,
    &kNvlinkBandwidthTotal,
    &kEccCorrectedVolatile,
    &kEccUncorrectedVolatile,
    &kEccCorrectedAggregate,
    &kEccUncorrectedAggregate,
    &kRemappedRowsCorrectable,
    &kRemappedRowsUncorrectable,
    &kRemappedRowsPending,
    &kRemappedRowsFailure,
    &kXidLast,
    &kXidErrors,
    &kDegraded,
    &kInfo,
    &kMigMode,
    &kGraphicsEngineActive,
    &kSmActive,
    &kSmOccupancy,
    &kTensorActive,
    &kTensorHmmaActive,
    &kTensorImmaActive,
    &kTensorDfmaActive,
    &kDramActive,
    &kFp64Active,
    &kFp32Active,
    &kFp16Active,
    &kIntActive,
    &kProfPcieTransmitRate,
    &kProfPcieReceiveRate,
    &kProfNvlinkTransmitRate,
    &kProfNvlinkReceiveRate,
    &kProcessMemoryUsed,
    &kProcessSmUtilization,
    &kProcessMemoryUtilization,
    &kExecutableMemoryUsed,
    &kExecutableSmUtilization,
    &kExecutableProcesses,
};
}  // namespace

std::span<const MetricDesc* const> AllNvmlMetrics() { return kAll; }

}  // namespace warpscope::agent::nvml_metrics
