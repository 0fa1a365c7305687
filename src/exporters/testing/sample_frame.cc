// SPDX-License-Identifier: Apache-2.0
#include "exporters/testing/sample_frame.h"

#include <fmt/format.h>

#include <array>

#include "model/entity.h"

namespace warpscope::exporters::sample {

using model::EntityKind;
using model::MetricDesc;
using model::MetricKind;

constexpr double kMiB = 1.0 / (1024.0 * 1024.0);

const MetricDesc kGpuTemp{"gpu.temperature",
                          EntityKind::kGpu,
                          MetricKind::kGauge,
                          "Cel",
                          "GPU temperature (in C).",
                          "DCGM_FI_DEV_GPU_TEMP",
                          1.0,
                          "hw.gpu.temperature"};
const MetricDesc kGpuUtil{"gpu.utilization",
                          EntityKind::kGpu,
                          MetricKind::kGauge,
                          "1",
                          "GPU utilization (in %).",
                          "DCGM_FI_DEV_GPU_UTIL",
                          100.0,
                          "hw.gpu.utilization",
                          "hw.gpu.task=general"};
const MetricDesc kMemCopyUtil{"gpu.memory_copy.utilization",
                              EntityKind::kGpu,
                              MetricKind::kGauge,
                              "1",
                              "Memory utilization (in %).",
                              "DCGM_FI_DEV_MEM_COPY_UTIL",
                              100.0,
                              "hw.gpu.memory.utilization"};
const MetricDesc kEncUtil{"gpu.encoder.utilization",
                          EntityKind::kGpu,
                          MetricKind::kGauge,
                          "1",
                          "Encoder utilization (in %).",
                          "DCGM_FI_DEV_ENC_UTIL",
                          100.0,
                          "hw.gpu.utilization",
                          "hw.gpu.task=encoder"};
const MetricDesc kDecUtil{"gpu.decoder.utilization",
                          EntityKind::kGpu,
                          MetricKind::kGauge,
                          "1",
                          "Decoder utilization (in %).",
                          "DCGM_FI_DEV_DEC_UTIL",
                          100.0,
                          "hw.gpu.utilization",
                          "hw.gpu.task=decoder"};
const MetricDesc kFbUsed{"gpu.memory.used",
                         EntityKind::kGpu,
                         MetricKind::kGauge,
                         "By",
                         "Framebuffer memory used (in MiB).",
                         "DCGM_FI_DEV_FB_USED",
                         kMiB,
                         "hw.gpu.memory.usage"};
const MetricDesc kFbFree{"gpu.memory.free",
                         EntityKind::kGpu,
                         MetricKind::kGauge,
                         "By",
                         "Framebuffer memory free (in MiB).",
                         "DCGM_FI_DEV_FB_FREE",
                         kMiB,
                         "warpscope.gpu.memory.free"};
const MetricDesc kMemTemp{"gpu.memory.temperature",
                          EntityKind::kGpu,
                          MetricKind::kGauge,
                          "Cel",
                          "Memory temperature (in C).",
                          "DCGM_FI_DEV_MEMORY_TEMP",
                          1.0,
                          "warpscope.gpu.memory.temperature"};
const MetricDesc kPower{"gpu.power", EntityKind::kGpu,     MetricKind::kGauge,
                        "W",         "Power draw (in W).", "DCGM_FI_DEV_POWER_USAGE",
                        1.0,         "hw.power",           "hw.type=gpu"};
const MetricDesc kPowerLimit{"gpu.power.limit",
                             EntityKind::kGpu,
                             MetricKind::kGauge,
                             "W",
                             "Enforced power limit (in W).",
                             "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
                             1.0,
                             "warpscope.gpu.power.limit"};
const MetricDesc kEnergy{"gpu.energy",
                         EntityKind::kGpu,
                         MetricKind::kCounter,
                         "J",
                         "Total energy consumption since boot (in mJ).",
                         "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                         1000.0,
                         "hw.energy",
                         "hw.type=gpu"};
const MetricDesc kSmClock{"gpu.clock.sm",
                          EntityKind::kGpu,
                          MetricKind::kGauge,
                          "Hz",
                          "SM clock frequency (in MHz).",
                          "DCGM_FI_DEV_SM_CLOCK",
                          1e-6,
                          "warpscope.gpu.clock.sm"};
const MetricDesc kMemClock{"gpu.clock.memory",
                           EntityKind::kGpu,
                           MetricKind::kGauge,
                           "Hz",
                           "Memory clock frequency (in MHz).",
                           "DCGM_FI_DEV_MEM_CLOCK",
                           1e-6,
                           "warpscope.gpu.clock.memory"};
const MetricDesc kPcieReplay{"gpu.pcie.replay",
                             EntityKind::kGpu,
                             MetricKind::kCounter,
                             "{event}",
                             "Total number of PCIe retries.",
                             "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
                             1.0,
                             "warpscope.gpu.pcie.replay"};
const MetricDesc kXid{"gpu.xid",
                      EntityKind::kGpu,
                      MetricKind::kGauge,
                      "1",
                      "Value of the last XID error encountered.",
                      "DCGM_FI_DEV_XID_ERRORS",
                      1.0,
                      "warpscope.gpu.xid"};
const MetricDesc kSmActive{"gpu.sm.active",
                           EntityKind::kGpu,
                           MetricKind::kGauge,
                           "1",
                           "Ratio of cycles an SM has at least 1 warp assigned.",
                           "DCGM_FI_PROF_SM_ACTIVE",
                           1.0,
                           "warpscope.gpu.sm.active"};
const MetricDesc kSmOccupancy{"gpu.sm.occupancy",
                              EntityKind::kGpu,
                              MetricKind::kGauge,
                              "1",
                              "Ratio of resident warps to the maximum per SM.",
                              "DCGM_FI_PROF_SM_OCCUPANCY",
                              1.0,
                              "warpscope.gpu.sm.occupancy"};
const MetricDesc kTensorActive{"gpu.tensor.active",
                               EntityKind::kGpu,
                               MetricKind::kGauge,
                               "1",
                               "Ratio of cycles the tensor (HMMA / IMMA) pipe is active.",
                               "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                               1.0,
                               "warpscope.gpu.tensor.active"};
const MetricDesc kDramActive{"gpu.dram.active",
                             EntityKind::kGpu,
                             MetricKind::kGauge,
                             "1",
                             "Ratio of cycles the device memory interface is active.",
                             "DCGM_FI_PROF_DRAM_ACTIVE",
                             1.0,
                             "warpscope.gpu.dram.active"};
const MetricDesc kGrActive{"gpu.graphics_engine.active",
                           EntityKind::kGpu,
                           MetricKind::kGauge,
                           "1",
                           "Ratio of time the graphics engine is active.",
                           "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                           1.0,
                           "warpscope.gpu.engine.active"};
const MetricDesc kPcieTx{"gpu.pcie.tx_rate",
                         EntityKind::kGpu,
                         MetricKind::kGauge,
                         "By/s",
                         "The rate of data transmitted over the PCIe bus (bytes per second).",
                         "DCGM_FI_PROF_PCIE_TX_BYTES",
                         1.0,
                         "warpscope.gpu.pcie.tx_rate"};
const MetricDesc kPcieRx{"gpu.pcie.rx_rate",
                         EntityKind::kGpu,
                         MetricKind::kGauge,
                         "By/s",
                         "The rate of data received over the PCIe bus (bytes per second).",
                         "DCGM_FI_PROF_PCIE_RX_BYTES",
                         1.0,
                         "warpscope.gpu.pcie.rx_rate"};
const MetricDesc kRemapped{"gpu.remapped_rows.uncorrectable",
                           EntityKind::kGpu,
                           MetricKind::kCounter,
                           "{row}",
                           "Number of remapped rows for uncorrectable errors.",
                           "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
                           1.0,
                           "warpscope.gpu.remapped_rows"};
const MetricDesc kNvlinkTx{"gpu.nvlink.tx",
                           EntityKind::kGpu,
                           MetricKind::kCounter,
                           "By",
                           "Bytes transmitted over one NVLink link.",
                           "warpscope_gpu_nvlink_transmit_bytes_total",
                           1.0,
                           "hw.gpu.io",
                           "network.io.direction=transmit",
                           "link"};
const MetricDesc kNvlinkRx{"gpu.nvlink.rx",
                           EntityKind::kGpu,
                           MetricKind::kCounter,
                           "By",
                           "Bytes received over one NVLink link.",
                           "warpscope_gpu_nvlink_receive_bytes_total",
                           1.0,
                           "hw.gpu.io",
                           "network.io.direction=receive",
                           "link"};
const MetricDesc kClockEvent{"gpu.clock_event.active",
                             EntityKind::kGpu,
                             MetricKind::kGauge,
                             "1",
                             "1 while the clock event reason is active, else 0.",
                             "warpscope_gpu_clock_event_active",
                             1.0,
                             "warpscope.gpu.clock_event.active",
                             {},
                             "reason"};
const MetricDesc kMigFbUsed{"mig.memory.used",
                            EntityKind::kMigInstance,
                            MetricKind::kGauge,
                            "By",
                            "Framebuffer memory used (in MiB).",
                            "DCGM_FI_DEV_FB_USED",
                            kMiB,
                            "hw.gpu.memory.usage"};
const MetricDesc kProcessGpuMem{"process.gpu.memory.used",
                                EntityKind::kProcess,
                                MetricKind::kGauge,
                                "By",
                                "GPU memory used by the process on one GPU.",
                                "warpscope_process_gpu_memory_used_bytes",
                                1.0,
                                "warpscope.process.gpu.memory.usage",
                                {},
                                "gpu.index,gpu.uuid"};
const MetricDesc kProcessGpuUtil{"process.gpu.utilization",
                                 EntityKind::kProcess,
                                 MetricKind::kGauge,
                                 "1",
                                 "Share of time the process ran kernels on one GPU.",
                                 "warpscope_process_gpu_utilization_ratio",
                                 1.0,
                                 "warpscope.process.gpu.utilization",
                                 {},
                                 "gpu.index,gpu.uuid"};
const MetricDesc kProcessCpu{"process.cpu.utilization",
                             EntityKind::kProcess,
                             MetricKind::kGauge,
                             "1",
                             "CPU time of the process per second of wall time.",
                             "warpscope_process_cpu_utilization_ratio",
                             1.0,
                             "process.cpu.utilization"};
const MetricDesc kProcessRss{"process.memory.rss",
                             EntityKind::kProcess,
                             MetricKind::kGauge,
                             "By",
                             "Resident set size of the process.",
                             "warpscope_process_resident_memory_bytes",
                             1.0,
                             "process.memory.usage"};
const MetricDesc kExecutableGpuMem{"executable.gpu.memory.used",
                                   EntityKind::kExecutable,
                                   MetricKind::kGauge,
                                   "By",
                                   "GPU memory used by all processes of one executable.",
                                   "warpscope_executable_gpu_memory_used_bytes",
                                   1.0,
                                   "warpscope.executable.gpu.memory.usage"};
const MetricDesc kHostCpuTime{"host.cpu.time",
                              EntityKind::kHost,
                              MetricKind::kCounter,
                              "s",
                              "CPU time spent in each mode, all CPUs.",
                              "warpscope_host_cpu_time_seconds_total",
                              1.0,
                              "system.cpu.time",
                              {},
                              "mode"};
const MetricDesc kHostMemUsage{"host.memory.usage",
                               EntityKind::kHost,
                               MetricKind::kGauge,
                               "By",
                               "Host memory by state.",
                               "warpscope_host_memory_usage_bytes",
                               1.0,
                               "system.memory.usage",
                               {},
                               "state"};
const MetricDesc kHostNetIo{"host.network.io",
                            EntityKind::kHost,
                            MetricKind::kCounter,
                            "By",
                            "Bytes through a network interface.",
                            "warpscope_host_network_io_bytes_total",
                            1.0,
                            "system.network.io",
                            {},
                            "interface,direction"};
const MetricDesc kHostLoad{"host.load.1m",
                           EntityKind::kHost,
                           MetricKind::kGauge,
                           "1",
                           "One-minute load average.",
                           "warpscope_host_load1",
                           1.0,
                           "system.cpu.load_average.1m"};

double SampleGpuTemperatureCelsius(int gpu) { return 40 + gpu; }
double SampleGpuUtilizationRatio(int gpu) { return (50 + gpu) / 100.0; }
double SampleFbUsedBytes(int gpu) { return (gpu + 1) * 1024.0 * 1024.0 * 1024.0; }
double SamplePowerWatts(int gpu) { return 300.5 + 10 * gpu; }
double SampleEnergyJoules(int gpu) { return 1e6 * (gpu + 1); }
double SampleSmClockHz(int gpu) { return (1980.0 - gpu) * 1e6; }
double SampleMemClockHz(int gpu) { return 2619e6; }
std::string SampleGpuUuid(int gpu) {
  return fmt::format("GPU-00000000-0000-0000-0000-{:012d}", gpu);
}
std::string SamplePciBusId(int gpu) { return fmt::format("00000000:{:02X}:00.0", 0x17 + gpu); }

namespace {

void Add(model::Frame& f, const MetricDesc& m, const std::string& entity, double value,
         uint32_t count, model::Labels labels = {}) {
  model::SeriesPoint p;
  p.metric = &m;
  p.entity = entity;
  p.labels = std::move(labels);
  p.avg = value;
  p.last = value;
  p.count = m.kind == model::MetricKind::kCounter ? 1 : count;
  p.min = (m.kind == model::MetricKind::kGauge && count > 1) ? value - 1 : value;
  p.max = (m.kind == model::MetricKind::kGauge && count > 1) ? value + 1 : value;
  p.last_time = f.end;
  f.series.push_back(std::move(p));
}

constexpr std::array<const char*, 8> kReasons = {
    "gpu_idle",   "applications_clocks_setting", "sw_power_cap",        "hw_slowdown",
    "sync_boost", "sw_thermal_slowdown",         "hw_thermal_slowdown", "hw_power_brake_slowdown"};

}  // namespace

model::Frame MakeSampleFrame(const SampleFrameOptions& o) {
  model::Frame f;
  f.start = o.start;
  f.end = o.start + o.window;
  f.sequence = 1;
  const uint32_t n = o.samples_per_series;

  model::Entity host;
  host.kind = EntityKind::kHost;
  host.id = o.host;
  host.attributes.Set(model::attr::kHostName, o.host);
  f.entities.push_back(host);
  Add(f, kHostLoad, o.host, 3.25, n);
  for (const char* mode : {"user", "system", "idle", "iowait", "irq", "softirq", "steal"}) {
    Add(f, kHostCpuTime, o.host, 12345.5, n, {{"mode", mode}});
  }
  for (const char* state : {"used", "free", "cached", "buffers"}) {
    Add(f, kHostMemUsage, o.host, 64e9, n, {{"state", state}});
  }
  for (const char* dir : {"receive", "transmit"}) {
    Add(f, kHostNetIo, o.host, 9.5e12, n, {{"direction", dir}, {"interface", "eth0"}});
  }

  for (int g = 0; g < o.gpus; ++g) {
    model::Entity gpu;
    gpu.kind = EntityKind::kGpu;
    gpu.id = SampleGpuUuid(g);
    gpu.parent = o.host;
    gpu.attributes.Set(model::attr::kGpuIndex, std::to_string(g));
    gpu.attributes.Set(model::attr::kGpuUuid, gpu.id);
    gpu.attributes.Set(model::attr::kGpuPciBusId, SamplePciBusId(g));
    gpu.attributes.Set(model::attr::kGpuModel, kSampleGpuModel);
    gpu.attributes.Set(model::attr::kGpuSerial, fmt::format("16523000{:05d}", g));
    gpu.attributes.Set(model::attr::kDriverVersion, o.driver_version);
    gpu.attributes.Set(model::attr::kGpuArchitecture, "hopper");
    f.entities.push_back(gpu);
    const std::string& id = gpu.id;
    Add(f, kGpuTemp, id, SampleGpuTemperatureCelsius(g), n);
    Add(f, kMemTemp, id, SampleGpuTemperatureCelsius(g) + 5, n);
    Add(f, kGpuUtil, id, SampleGpuUtilizationRatio(g), n);
    Add(f, kMemCopyUtil, id, 0.25, n);
    Add(f, kEncUtil, id, 0, n);
    Add(f, kDecUtil, id, 0, n);
    Add(f, kFbUsed, id, SampleFbUsedBytes(g), n);
    Add(f, kFbFree, id, 80.0 * 1024 * 1024 * 1024 - SampleFbUsedBytes(g), n);
    Add(f, kPower, id, SamplePowerWatts(g), n);
    Add(f, kPowerLimit, id, 700, n);
    Add(f, kEnergy, id, SampleEnergyJoules(g), n);
    Add(f, kSmClock, id, SampleSmClockHz(g), n);
    Add(f, kMemClock, id, SampleMemClockHz(g), n);
    Add(f, kPcieReplay, id, 0, n);
    Add(f, kXid, id, 0, n);
    Add(f, kSmActive, id, 0.875, n);
    Add(f, kSmOccupancy, id, 0.4375, n);
    Add(f, kTensorActive, id, 0.5, n);
    Add(f, kDramActive, id, 0.625, n);
    Add(f, kGrActive, id, 0.9375, n);
    Add(f, kPcieTx, id, 1.5e9, n);
    Add(f, kPcieRx, id, 2.5e9, n);
    Add(f, kRemapped, id, 0, n);
    for (int link = 0; link < 18; ++link) {
      Add(f, kNvlinkTx, id, 1e12 + link, n, {{"link", std::to_string(link)}});
      Add(f, kNvlinkRx, id, 2e12 + link, n, {{"link", std::to_string(link)}});
    }
    for (const char* reason : kReasons) {
      Add(f, kClockEvent, id, 0, n, {{"reason", reason}});
    }
    for (int m = 0; m < o.mig_per_gpu; ++m) {
      model::Entity mig;
      mig.kind = EntityKind::kMigInstance;
      mig.id = fmt::format("{}/gi{}", gpu.id, m + 1);
      mig.parent = gpu.id;
      mig.attributes.Set(model::attr::kMigGpuInstanceId, std::to_string(m + 1));
      mig.attributes.Set(model::attr::kMigComputeInstanceId, "0");
      mig.attributes.Set(model::attr::kMigProfile, "1g.10gb");
      f.entities.push_back(mig);
      Add(f, kMigFbUsed, mig.id, 512.0 * 1024 * 1024 * (m + 1), n);
    }
  }

  for (int p = 0; p < o.processes; ++p) {
    const int pid = 4000 + p;
    const int g = o.gpus > 0 ? p % o.gpus : 0;
    const std::string exe = p % 2 == 0 ? "python3" : "vllm-worker";
    const std::string exe_path = p % 2 == 0 ? "/usr/bin/python3.11" : "/opt/vllm/bin/vllm-worker";

    model::Entity proc;
    proc.kind = EntityKind::kProcess;
    proc.id = fmt::format("pid/{}/{}", pid, 100000 + p);
    proc.attributes.Set(model::attr::kPid, std::to_string(pid));
    proc.attributes.Set(model::attr::kExecutable, exe);
    proc.attributes.Set(model::attr::kExecutablePath, exe_path);
    proc.attributes.Set(model::attr::kCommandLine,
                        exe_path + " train.py --rank " + std::to_string(p));
    if (p % 4 == 1) {
      proc.attributes.Set(model::attr::kContainerId, fmt::format("{:064x}", p));
      proc.attributes.Set(model::attr::kPodUid, fmt::format("0c6f2f4e-7a1b-4f7e-9d3c-{:012d}", p));
    }
    f.entities.push_back(proc);
    model::Labels on_gpu{{"gpu.index", std::to_string(g)}, {"gpu.uuid", SampleGpuUuid(g)}};
    Add(f, kProcessGpuMem, proc.id, 2.0 * 1024 * 1024 * 1024 + p, n, on_gpu);
    Add(f, kProcessGpuUtil, proc.id, 0.5, n, on_gpu);
    Add(f, kProcessCpu, proc.id, 1.25, n);
    Add(f, kProcessRss, proc.id, 8e9 + p, n);
  }
  for (int e = 0; e < (o.processes > 1 ? 2 : o.processes); ++e) {
    model::Entity exe;
    exe.kind = EntityKind::kExecutable;
    exe.attributes.Set(model::attr::kExecutable, e == 0 ? "python3" : "vllm-worker");
    exe.attributes.Set(model::attr::kExecutablePath,
                       e == 0 ? "/usr/bin/python3.11" : "/opt/vllm/bin/vllm-worker");
    exe.id = "exe/" + std::string(exe.attributes.Get(model::attr::kExecutablePath));
    f.entities.push_back(exe);
    Add(f, kExecutableGpuMem, exe.id, 64.0 * 1024 * 1024 * 1024, n);
  }
  return f;
}

}  // namespace warpscope::exporters::sample
