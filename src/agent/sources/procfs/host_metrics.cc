// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/procfs/host_metrics.h"

namespace warpscope::agent::host_metrics {

using model::EntityKind;
using model::MetricDesc;
using model::MetricKind;

// CPU ----------------------------------------------------------------------------------------

const MetricDesc kCpuTime{
    .key = "host.cpu.time",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kCounter,
    .unit = "s",
    .help =
        "CPU time spent in each mode, summed over all logical CPUs, in seconds: the aggregate "
        "\"cpu\" line of /proc/stat divided by USER_HZ. Guest time is already included in "
        "user and nice.",
    .prom_name = "warpscope_host_cpu_seconds_total",
    .otel_name = "system.cpu.time",
    .labels = "mode",
};

const MetricDesc kCpuCoreTime{
    .key = "host.cpu.core.time",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kCounter,
    .unit = "s",
    .help =
        "CPU time spent in each mode by one logical CPU, in seconds: the \"cpuN\" lines of "
        "/proc/stat divided by USER_HZ.",
    .prom_name = "warpscope_host_cpu_core_seconds_total",
    .otel_name = "system.cpu.time",
    .labels = "cpu,mode",
};

const MetricDesc kCpuUtilization{
    .key = "host.cpu.utilization",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Fraction of all logical CPUs' time spent in each mode over the last collection "
        "interval, 0 to 1; the modes sum to 1 and busy is 1 - idle - iowait. Computed from "
        "the change of the \"cpu\" line of /proc/stat; absent on the first collection.",
    .prom_name = "warpscope_host_cpu_utilization_ratio",
    .otel_name = "system.cpu.utilization",
    .labels = "mode",
};

const MetricDesc kCpuCoreUtilization{
    .key = "host.cpu.core.utilization",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Fraction of one logical CPU's time spent in each mode over the last collection "
        "interval, 0 to 1, from the change of its \"cpuN\" line of /proc/stat; absent on the "
        "first collection.",
    .prom_name = "warpscope_host_cpu_core_utilization_ratio",
    .otel_name = "system.cpu.utilization",
    .labels = "cpu,mode",
};

const MetricDesc kCpuLogicalCount{
    .key = "host.cpu.logical_count",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "{cpu}",
    .help = "Number of online logical CPUs: the \"cpuN\" lines of /proc/stat.",
    .prom_name = "warpscope_host_cpus",
    .otel_name = "system.cpu.logical.count",
};

// Load ---------------------------------------------------------------------------------------

const MetricDesc kLoad1m{
    .key = "host.load.1m",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "{thread}",
    .help =
        "Load average over 1 minute: the exponentially damped number of runnable plus "
        "uninterruptible (D state) threads, field 1 of /proc/loadavg.",
    .prom_name = "warpscope_host_load1",
    .otel_name = "system.cpu.load_average.1m",
};

const MetricDesc kLoad5m{
    .key = "host.load.5m",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "{thread}",
    .help =
        "Load average over 5 minutes: the exponentially damped number of runnable plus "
        "uninterruptible (D state) threads, field 2 of /proc/loadavg.",
    .prom_name = "warpscope_host_load5",
    .otel_name = "system.cpu.load_average.5m",
};

const MetricDesc kLoad15m{
    .key = "host.load.15m",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "{thread}",
    .help =
        "Load average over 15 minutes: the exponentially damped number of runnable plus "
        "uninterruptible (D state) threads, field 3 of /proc/loadavg.",
    .prom_name = "warpscope_host_load15",
    .otel_name = "system.cpu.load_average.15m",
};

// Memory -------------------------------------------------------------------------------------

const MetricDesc kMemoryTotal{
    .key = "host.memory.total",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help =
        "Usable physical memory in bytes: MemTotal in /proc/meminfo (RAM minus what the "
        "firmware and the kernel image reserve).",
    .prom_name = "warpscope_host_memory_total_bytes",
    .otel_name = "system.memory.limit",
};

const MetricDesc kMemoryAvailable{
    .key = "host.memory.available",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help =
        "Memory available to start new work without swapping, in bytes: the kernel's "
        "estimate of free memory plus reclaimable page cache and slab, MemAvailable in "
        "/proc/meminfo.",
    .prom_name = "warpscope_host_memory_available_bytes",
    .otel_name = "system.linux.memory.available",
};

const MetricDesc kMemoryUsed{
    .key = "host.memory.used",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help =
        "Memory in use in bytes, defined as MemTotal - MemAvailable from /proc/meminfo (the "
        "\"used\" of free(1)): memory that cannot be reclaimed without swapping.",
    .prom_name = "warpscope_host_memory_used_bytes",
    .otel_name = "system.memory.usage",
    .otel_attrs = "system.memory.state=used",
};

const MetricDesc kMemoryFree{
    .key = "host.memory.free",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help =
        "Memory not used for anything, in bytes: MemFree in /proc/meminfo. Small on a busy "
        "host because the page cache fills idle memory; see host.memory.available.",
    .prom_name = "warpscope_host_memory_free_bytes",
    .otel_name = "system.memory.usage",
    .otel_attrs = "system.memory.state=free",
};

const MetricDesc kMemoryCached{
    .key = "host.memory.cached",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help = "Page cache in bytes, including tmpfs and shared memory: Cached in /proc/meminfo.",
    .prom_name = "warpscope_host_memory_cached_bytes",
    .otel_name = "system.memory.usage",
    .otel_attrs = "system.memory.state=cached",
};

const MetricDesc kMemoryBuffers{
    .key = "host.memory.buffers",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help = "Block-device buffers in bytes: Buffers in /proc/meminfo.",
    .prom_name = "warpscope_host_memory_buffers_bytes",
    .otel_name = "system.memory.usage",
    .otel_attrs = "system.memory.state=buffers",
};

const MetricDesc kMemoryUtilization{
    .key = "host.memory.utilization",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Fraction of physical memory in use, 0 to 1: (MemTotal - MemAvailable) / MemTotal "
        "from /proc/meminfo.",
    .prom_name = "warpscope_host_memory_utilization_ratio",
    .otel_name = "system.memory.utilization",
    .otel_attrs = "system.memory.state=used",
};

const MetricDesc kSwapTotal{
    .key = "host.swap.total",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help = "Swap space in bytes: SwapTotal in /proc/meminfo; 0 when no swap is configured.",
    .prom_name = "warpscope_host_swap_total_bytes",
    .otel_name = "warpscope.host.swap.limit",
};

const MetricDesc kSwapUsed{
    .key = "host.swap.used",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help = "Swap space in use in bytes: SwapTotal - SwapFree from /proc/meminfo.",
    .prom_name = "warpscope_host_swap_used_bytes",
    .otel_name = "system.paging.usage",
    .otel_attrs = "system.paging.state=used",
};

const MetricDesc kSwapFree{
    .key = "host.swap.free",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help = "Unused swap space in bytes: SwapFree in /proc/meminfo.",
    .prom_name = "warpscope_host_swap_free_bytes",
    .otel_name = "system.paging.usage",
    .otel_attrs = "system.paging.state=free",
};

// Disks --------------------------------------------------------------------------------------

const MetricDesc kDiskIo{
    .key = "host.disk.io",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kCounter,
    .unit = "By",
    .help =
        "Bytes read from and written to a block device: sectors read (field 6) and written "
        "(field 10) in /proc/diskstats times 512, the kernel's fixed sector unit whatever "
        "the device's sector size.",
    .prom_name = "warpscope_host_disk_io_bytes_total",
    .otel_name = "system.disk.io",
    .labels = "device,direction",
};

const MetricDesc kDiskOperations{
    .key = "host.disk.operations",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kCounter,
    .unit = "{operation}",
    .help =
        "Read and write requests completed by a block device: fields 4 and 8 of "
        "/proc/diskstats (merged requests count once).",
    .prom_name = "warpscope_host_disk_operations_total",
    .otel_name = "system.disk.operations",
    .labels = "device,direction",
};

const MetricDesc kDiskIoTime{
    .key = "host.disk.io_time",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kCounter,
    .unit = "s",
    .help =
        "Time a block device had at least one request in flight, in seconds: field 13 of "
        "/proc/diskstats (milliseconds) / 1000. Its rate is the device's busy fraction.",
    .prom_name = "warpscope_host_disk_io_time_seconds_total",
    .otel_name = "system.disk.io_time",
    .labels = "device",
};

// Network ------------------------------------------------------------------------------------

const MetricDesc kNetworkIo{
    .key = "host.network.io",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kCounter,
    .unit = "By",
    .help =
        "Bytes received and transmitted by a network interface: the bytes columns of "
        "/proc/net/dev (the network namespace of the agent).",
    .prom_name = "warpscope_host_network_io_bytes_total",
    .otel_name = "system.network.io",
    .labels = "interface,direction",
};

const MetricDesc kNetworkPackets{
    .key = "host.network.packets",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kCounter,
    .unit = "{packet}",
    .help =
        "Packets received and transmitted by a network interface: the packets columns of "
        "/proc/net/dev.",
    .prom_name = "warpscope_host_network_packets_total",
    .otel_name = "system.network.packets",
    .labels = "interface,direction",
};

const MetricDesc kNetworkErrors{
    .key = "host.network.errors",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kCounter,
    .unit = "{error}",
    .help =
        "Receive and transmit errors a network interface's driver reported: the errs "
        "columns of /proc/net/dev.",
    .prom_name = "warpscope_host_network_errors_total",
    .otel_name = "system.network.errors",
    .labels = "interface,direction",
};

const MetricDesc kNetworkDropped{
    .key = "host.network.dropped",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kCounter,
    .unit = "{packet}",
    .help =
        "Packets a network interface dropped on receive or transmit (no buffer, filtered, "
        "queue full): the drop columns of /proc/net/dev.",
    .prom_name = "warpscope_host_network_dropped_packets_total",
    .otel_name = "system.network.dropped",
    .labels = "interface,direction",
};

// Processes ----------------------------------------------------------------------------------

const MetricDesc kProcessCount{
    .key = "host.process.count",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "{process}",
    .help =
        "Number of processes (thread-group leaders): the numeric directories of /proc at "
        "collection time.",
    .prom_name = "warpscope_host_processes",
    .otel_name = "system.process.count",
};

const MetricDesc kProcessCpuTime{
    .key = "process.cpu.time",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "s",
    .help =
        "CPU time a process used in user and kernel mode, in seconds: utime + stime (fields "
        "14 and 15 of /proc/<pid>/stat) divided by USER_HZ; waited-for children excluded.",
    .prom_name = "warpscope_host_process_cpu_seconds_total",
    .otel_name = "process.cpu.time",
};

const MetricDesc kProcessCpuUtilization{
    .key = "process.cpu.utilization",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "CPU time a process used over the last collection interval divided by the interval "
        "and by the number of logical CPUs, 0 to 1 (1 = every CPU busy in this process; one "
        "saturated thread on N CPUs reads 1/N). From /proc/<pid>/stat; absent on the first "
        "collection.",
    .prom_name = "warpscope_host_process_cpu_utilization_ratio",
    .otel_name = "process.cpu.utilization",
};

const MetricDesc kProcessMemoryRss{
    .key = "process.memory.rss",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help =
        "Resident set size of a process in bytes (anonymous, file-backed and shared pages in "
        "RAM): field 24 of /proc/<pid>/stat times the page size.",
    .prom_name = "warpscope_host_process_resident_memory_bytes",
    .otel_name = "process.memory.usage",
};

const MetricDesc kProcessMemoryVirtual{
    .key = "process.memory.virtual",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help = "Virtual address space size of a process in bytes: field 23 of /proc/<pid>/stat.",
    .prom_name = "warpscope_host_process_virtual_memory_bytes",
    .otel_name = "process.memory.virtual",
};

const MetricDesc kProcessThreads{
    .key = "process.threads",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "{thread}",
    .help = "Number of threads of a process: field 20 of /proc/<pid>/stat.",
    .prom_name = "warpscope_host_process_threads",
    .otel_name = "process.thread.count",
};

namespace {

constexpr const MetricDesc* kAll[] = {
    &kCpuTime,
    &kCpuCoreTime,
    &kCpuUtilization,
    &kCpuCoreUtilization,
    &kCpuLogicalCount,
    &kLoad1m,
    &kLoad5m,
    &kLoad15m,
    &kMemoryTotal,
    &kMemoryAvailable,
    &kMemoryUsed,
    &kMemoryFree,
    &kMemoryCached,
    &kMemoryBuffers,
    &kMemoryUtilization,
    &kSwapTotal,
    &kSwapUsed,
    &kSwapFree,
    &kDiskIo,
    &kDiskOperations,
    &kDiskIoTime,
    &kNetworkIo,
    &kNetworkPackets,
    &kNetworkErrors,
    &kNetworkDropped,
    &kProcessCount,
    &kProcessCpuTime,
    &kProcessCpuUtilization,
    &kProcessMemoryRss,
    &kProcessMemoryVirtual,
    &kProcessThreads,
};

bool IsDiskMetric(const MetricDesc& m) { return m.key.starts_with("host.disk."); }
bool IsNetworkMetric(const MetricDesc& m) { return m.key.starts_with("host.network."); }

}  // namespace

std::span<const MetricDesc* const> AllHostMetrics() { return kAll; }

std::string_view OtelAttributeKey(const MetricDesc& metric, std::string_view label_key) {
  if (label_key == "cpu") return "cpu.logical_number";
  if (label_key == "mode") return "cpu.mode";
  if (label_key == "device") return "system.device";
  if (label_key == "interface") return "network.interface.name";
  if (label_key == "direction") {
    if (IsDiskMetric(metric)) return "disk.io.direction";
    if (IsNetworkMetric(metric)) return "network.io.direction";
  }
  return label_key;
}

}  // namespace warpscope::agent::host_metrics
