// SPDX-License-Identifier: Apache-2.0
// Fuzz target for sim::ParseScenario (docs/design/fuzzing.md). The header promises that "a
// Scenario that parsed is safe to simulate", so an accepted scenario is also simulated: first
// through Simulation (the pure model), then through NvmlSim (the NVML semantics behind
// libnvidia-ml.so.1, fed the same text through a memfd) for a few simulated seconds.
//
// Invariants, beyond "no crash, leak, UB or escaped exception":
//   - A rejection is InvalidArgument, its message starts with the source name, and it is only
//     called a "YAML syntax error" when yaml-cpp itself cannot load the text.
//   - An accepted scenario satisfies every limit scenario.h documents: device count and indexes,
//     string lengths of the NVML buffers, memory_reserved < memory_total, power limits in
//     (0, 5000] W, MIG slots and ids unique and in range, processes and faults with start < stop,
//     process MIG ids naming an instance, unique UUIDs and PCI bus ids, finite numbers
//     everywhere (only stop/until may be +inf), piecewise times strictly increasing.
//   - Simulation values are finite and inside their signal's range; memory_used stays within
//     memory_total - memory_reserved (per MIG instance: its memory_total); counter integrals are
//     finite, non-negative and non-decreasing in t.
//   - The host side: exe absolute, argv non-empty, one uid per user (0 only for root), container
//     and pod ids in their formats, host-only pids unique; a process's CPU within [0, cpus], its
//     CPU time finite and non-decreasing, its RSS within the host.
//   - NVML answers are consistent: used <= total, free + reserved + used == total.
#include <sys/mman.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "fuzz/fuzz_check.h"
#include "sim/nvml/hooks.h"
#include "sim/nvml/nvml_sim.h"
#include "sim/nvml/scenario.h"
#include "sim/nvml/simulation.h"

namespace {

namespace sim = ::warpscope::sim;
namespace abi = ::warpscope::nvml::abi;
using warpscope::fuzz::Quote;

constexpr std::string_view kSource = "fuzz.yaml";

bool Finite(double v) { return std::isfinite(v); }

// "fuzz.yaml:<line>:<column>: YAML syntax error: ..." (a value quoted in another message may
// contain the same words, so the position prefix is matched too).
bool IsSyntaxErrorMessage(std::string_view m) {
  if (!m.starts_with(kSource)) {
    return false;
  }
  m.remove_prefix(kSource.size());
  for (int field = 0; field < 2; ++field) {
    if (m.empty() || m[0] != ':') {
      return false;
    }
    m.remove_prefix(1);
    size_t digits = m.find_first_not_of("0123456789");
    if (digits == 0 || digits == m.npos) {
      return false;
    }
    m.remove_prefix(digits);
  }
  return m.starts_with(": YAML syntax error");
}

void CheckSignal(const sim::Signal& s, std::string_view where) {
  for (double v : {s.value, s.from, s.to, s.start_s, s.duration_s, s.mean, s.amplitude,
                   s.period_s, s.phase_s, s.before, s.after, s.at_s, s.noise}) {
    WARPSCOPE_FUZZ_CHECK(Finite(v), "{}: non-finite signal parameter {}", where, v);
  }
  WARPSCOPE_FUZZ_CHECK(s.noise >= 0, "{}: negative noise {}", where, s.noise);
  WARPSCOPE_FUZZ_CHECK(s.duration_s >= 0, "{}: negative ramp duration", where);
  if (s.kind == sim::SignalKind::kSine) {
    WARPSCOPE_FUZZ_CHECK(s.period_s > 0, "{}: sine period {}", where, s.period_s);
  }
  if (s.kind == sim::SignalKind::kPiecewise) {
    WARPSCOPE_FUZZ_CHECK(!s.points.empty(), "{}: piecewise without points", where);
  }
  for (size_t i = 0; i < s.points.size(); ++i) {
    WARPSCOPE_FUZZ_CHECK(Finite(s.points[i].first) && Finite(s.points[i].second),
                         "{}: non-finite piecewise point {}", where, i);
    WARPSCOPE_FUZZ_CHECK(i == 0 || s.points[i].first > s.points[i - 1].first,
                         "{}: piecewise times not increasing at {}", where, i);
  }
}

void CheckTable(const sim::SignalTable& table, std::string_view where) {
  for (size_t i = 0; i < table.size(); ++i) {
    if (table[i]) {
      CheckSignal(*table[i], fmt::format("{}.{}", where, i));
    }
  }
}

void CheckStructure(const sim::Scenario& s) {
  WARPSCOPE_FUZZ_CHECK(s.devices.size() <= sim::kMaxDevices, "{} devices", s.devices.size());
  const auto& drv = s.driver;
  WARPSCOPE_FUZZ_CHECK(!drv.version.empty() && drv.version.size() < abi::kSystemDriverVersionBufferSize,
                       "driver version {}", Quote(drv.version));
  WARPSCOPE_FUZZ_CHECK(!drv.nvml_version.empty() &&
                           drv.nvml_version.size() < abi::kSystemDriverVersionBufferSize,
                       "nvml version {}", Quote(drv.nvml_version));
  WARPSCOPE_FUZZ_CHECK(drv.process_stride == 24 || drv.process_stride == 32, "process stride {}",
                       drv.process_stride);
  WARPSCOPE_FUZZ_CHECK(drv.cuda_version >= 1000 && drv.cuda_version <= 99999, "cuda version {}",
                       drv.cuda_version);
  for (const std::string& fn : drv.missing_symbols) {
    WARPSCOPE_FUZZ_CHECK(sim::IsKnownNvmlFunction(fn) && fn != "nvmlErrorString" &&
                             fn != "nvmlShutdown",
                         "missing symbol {}", Quote(fn));
  }
  std::set<std::string> uuids;
  std::set<std::tuple<unsigned, unsigned, unsigned>> buses;
  for (size_t i = 0; i < s.devices.size(); ++i) {
    const sim::DeviceSpec& d = s.devices[i];
    const std::string where = fmt::format("devices[{}]", i);
    WARPSCOPE_FUZZ_CHECK(d.index == i, "{}: index {}", where, d.index);
    WARPSCOPE_FUZZ_CHECK(!d.name.empty() && d.name.size() < abi::kDeviceNameBufferSize,
                         "{}: name {}", where, Quote(d.name));
    WARPSCOPE_FUZZ_CHECK(d.uuid.starts_with("GPU-") && d.uuid.size() < abi::kDeviceNameBufferSize,
                         "{}: uuid {}", where, Quote(d.uuid));
    WARPSCOPE_FUZZ_CHECK(!d.serial.empty() && d.serial.size() < abi::kDeviceSerialBufferSize,
                         "{}: serial {}", where, Quote(d.serial));
    WARPSCOPE_FUZZ_CHECK(uuids.insert(d.uuid).second, "{}: duplicate uuid {}", where, d.uuid);
    WARPSCOPE_FUZZ_CHECK(buses.emplace(d.pci_domain, d.pci_bus, d.pci_device).second,
                         "{}: duplicate PCI bus id", where);
    WARPSCOPE_FUZZ_CHECK(d.pci_device <= 0x1F && d.pci_bus <= 0xFF && d.pci_device_id <= 0xFFFF,
                         "{}: PCI address out of range", where);
    WARPSCOPE_FUZZ_CHECK(d.minor_number <= 255 && d.nvlink_links <= 36 && d.max_sm_clock >= 1 &&
                             d.max_mem_clock >= 1,
                         "{}: minor/nvlink/clock out of range", where);
    WARPSCOPE_FUZZ_CHECK(d.cc_major >= 1 && d.cc_major <= 20 && d.cc_minor >= 0 && d.cc_minor <= 9,
                         "{}: compute capability {}.{}", where, d.cc_major, d.cc_minor);
    WARPSCOPE_FUZZ_CHECK(Finite(d.memory_total) && d.memory_total > 0 && d.memory_reserved >= 0 &&
                             d.memory_reserved < d.memory_total,
                         "{}: memory_total {} memory_reserved {}", where, d.memory_total,
                         d.memory_reserved);
    for (double w : {d.power_limit_w, d.enforced_power_limit_w}) {
      WARPSCOPE_FUZZ_CHECK(w > 0 && w <= 5000, "{}: power limit {}", where, w);
    }
    CheckTable(d.signals, where + ".signals");

    WARPSCOPE_FUZZ_CHECK(d.mig.max_devices >= 1 && d.mig.max_devices <= sim::kMaxMigSlots,
                         "{}: mig.max_devices {}", where, d.mig.max_devices);
    WARPSCOPE_FUZZ_CHECK(!d.mig.enabled || d.SupportsMig(), "{}: MIG on a pre-Ampere GPU", where);
    WARPSCOPE_FUZZ_CHECK(d.mig.enabled || d.mig.instances.empty(),
                         "{}: MIG instances with MIG disabled", where);
    std::set<unsigned> slots;
    std::set<std::pair<unsigned, unsigned>> ids;
    double mig_memory = 0;
    for (const sim::MigInstanceSpec& inst : d.mig.instances) {
      WARPSCOPE_FUZZ_CHECK(inst.slot < d.mig.max_devices && slots.insert(inst.slot).second,
                           "{}: MIG slot {}", where, inst.slot);
      WARPSCOPE_FUZZ_CHECK(ids.emplace(inst.gpu_instance_id, inst.compute_instance_id).second,
                           "{}: duplicate MIG ids", where);
      WARPSCOPE_FUZZ_CHECK(Finite(inst.memory_total) && inst.memory_total > 0,
                           "{}: MIG memory_total {}", where, inst.memory_total);
      WARPSCOPE_FUZZ_CHECK(inst.uuid.starts_with("MIG-") &&
                               inst.uuid.size() < abi::kDeviceNameBufferSize &&
                               uuids.insert(inst.uuid).second,
                           "{}: MIG uuid {}", where, Quote(inst.uuid));
      CheckTable(inst.signals, where + ".mig");
      mig_memory += inst.memory_total;
    }
    WARPSCOPE_FUZZ_CHECK(mig_memory <= d.memory_total, "{}: MIG memory {} > {}", where, mig_memory,
                         d.memory_total);
    for (const sim::ProcessSpec& p : d.processes) {
      WARPSCOPE_FUZZ_CHECK(p.pid >= 1 && p.pid <= 4194304, "{}: pid {}", where, p.pid);
      WARPSCOPE_FUZZ_CHECK(!p.name.empty() && p.name.size() <= 255, "{}: process name", where);
      WARPSCOPE_FUZZ_CHECK(Finite(p.start_s) && p.start_s >= 0 && p.stop_s > p.start_s &&
                               !std::isnan(p.stop_s),
                           "{}: process window [{}, {})", where, p.start_s, p.stop_s);
      CheckSignal(p.memory, where + ".process.memory");
      CheckSignal(p.sm_util, where + ".process.sm_util");
      CheckSignal(p.mem_util, where + ".process.mem_util");
      WARPSCOPE_FUZZ_CHECK(p.gpu_instance_id.has_value() == d.mig.enabled,
                           "{}: process MIG id presence", where);
      if (p.gpu_instance_id) {
        WARPSCOPE_FUZZ_CHECK(ids.contains({*p.gpu_instance_id, p.compute_instance_id}),
                             "{}: process in unknown MIG instance", where);
      }
    }
    for (const sim::FaultSpec& f : d.faults) {
      WARPSCOPE_FUZZ_CHECK(Finite(f.at_s) && f.at_s >= 0 && f.until_s > f.at_s,
                           "{}: fault window [{}, {})", where, f.at_s, f.until_s);
      if (f.kind == sim::FaultKind::kXid) {
        WARPSCOPE_FUZZ_CHECK(f.code <= 65535, "{}: XID code {}", where, f.code);
        if (f.gpu_instance_id != 0xFFFFFFFFu) {
          WARPSCOPE_FUZZ_CHECK(ids.contains({f.gpu_instance_id, f.compute_instance_id}),
                               "{}: XID in unknown MIG instance", where);
        }
      }
      if (f.kind == sim::FaultKind::kNotSupported) {
        WARPSCOPE_FUZZ_CHECK(!f.what.empty(), "{}: not_supported without what", where);
      }
      if (f.kind == sim::FaultKind::kSlow) {
        WARPSCOPE_FUZZ_CHECK(
            f.hang != (f.latency_s > 0) && f.latency_s <= sim::kMaxSlowLatencySeconds,
            "{}: slow fault latency {} hang {}", where, f.latency_s, f.hang);
      }
    }
  }
}

// Range of a signal's value after clamping.
void CheckValue(sim::SignalId id, double v, std::string_view where) {
  WARPSCOPE_FUZZ_CHECK(Finite(v), "{} {}: value {} is not finite", where,
                       sim::GetSignalInfo(id).name, v);
  switch (sim::GetSignalInfo(id).range) {
    case sim::SignalRange::kPercent:
      WARPSCOPE_FUZZ_CHECK(v >= 0 && v <= 100, "{} {} = {}", where, sim::GetSignalInfo(id).name, v);
      break;
    case sim::SignalRange::kCelsius:
      WARPSCOPE_FUZZ_CHECK(v >= 0 && v <= 200, "{} {} = {}", where, sim::GetSignalInfo(id).name, v);
      break;
    case sim::SignalRange::kNonNegative:
    case sim::SignalRange::kBitmask:
      WARPSCOPE_FUZZ_CHECK(v >= 0, "{} {} = {}", where, sim::GetSignalInfo(id).name, v);
      break;
  }
}

void Simulate(const sim::Scenario& scenario) {
  sim::Simulation simulation(scenario);
  constexpr double kTimes[] = {0, 0.05, 1.5, 61, 3600.25};
  constexpr sim::SignalId kRates[] = {sim::SignalId::kPower, sim::SignalId::kNvlinkTx,
                                      sim::SignalId::kEccSbeRate, sim::SignalId::kEccDbeRate,
                                      sim::SignalId::kPcieReplayRate};
  for (size_t d = 0; d < simulation.device_count(); ++d) {
    const sim::DeviceSpec& dev = simulation.device(d);
    const std::string where = fmt::format("device {} t", d);
    for (double t : kTimes) {
      for (const sim::SignalInfo& info : sim::AllSignals()) {
        CheckValue(info.id, simulation.Value(d, info.id, t), where);
      }
      WARPSCOPE_FUZZ_CHECK(
          simulation.Value(d, sim::SignalId::kMemoryUsed, t) <= dev.memory_total - dev.memory_reserved,
          "device {}: memory_used above memory_total - memory_reserved", d);
      for (size_t i = 0; i < dev.mig.instances.size(); ++i) {
        for (sim::SignalId id : {sim::SignalId::kMemoryUsed, sim::SignalId::kSmActive}) {
          double v = simulation.InstanceValue(d, i, id, t);
          CheckValue(id, v, where);
          WARPSCOPE_FUZZ_CHECK(id != sim::SignalId::kMemoryUsed || v <= dev.mig.instances[i].memory_total,
                               "device {} MIG {}: memory_used {} above its memory_total", d, i, v);
        }
      }
      for (size_t p = 0; p < dev.processes.size(); ++p) {
        for (auto which : {sim::ProcessSignal::kMemory, sim::ProcessSignal::kSmUtil,
                           sim::ProcessSignal::kMemUtil}) {
          double v = simulation.ProcessValue(d, p, which, t);
          WARPSCOPE_FUZZ_CHECK(Finite(v) && v >= 0, "device {} process {}: value {}", d, p, v);
        }
      }
    }
    // Integrals are evaluated cell by cell (0.1 s), so only over a short time.
    for (sim::SignalId rate : kRates) {
      double previous = 0;
      for (double t : {0.0, 0.35, 2.0}) {
        double v = simulation.Integral(d, rate, t);
        WARPSCOPE_FUZZ_CHECK(Finite(v) && v >= previous, "device {}: integral of {} at {} = {}",
                             d, sim::GetSignalInfo(rate).name, t, v);
        previous = v;
      }
    }
    double avg = simulation.Average(d, std::nullopt, sim::SignalId::kSmActive, 0.5, 1.25);
    CheckValue(sim::SignalId::kSmActive, avg, "average");
  }
  // The host side: CPU within [0, cpus], CPU time finite and non-decreasing, RSS within the host.
  const sim::HostSpec& host = scenario.host;
  for (size_t i = 0; i < simulation.host_processes().size(); ++i) {
    double previous = 0;
    for (double t : {0.0, 0.35, 2.0}) {
      const double cores = simulation.HostCpu(i, t);
      const double seconds = simulation.HostCpuSeconds(i, t);
      const double rss = simulation.HostRss(i, t);
      WARPSCOPE_FUZZ_CHECK(Finite(cores) && cores >= 0 && cores <= host.cpus,
                           "host process {}: {} cores at {}", i, cores, t);
      WARPSCOPE_FUZZ_CHECK(Finite(seconds) && seconds >= previous,
                           "host process {}: CPU time {} at {}", i, seconds, t);
      WARPSCOPE_FUZZ_CHECK(Finite(rss) && rss >= 0 && rss <= host.memory_total,
                           "host process {}: RSS {}", i, rss);
      previous = seconds;
    }
  }
}

// The host side's limits: paths, argv, users with one uid each, ids in their formats.
void CheckHostSide(const sim::Scenario& s) {
  WARPSCOPE_FUZZ_CHECK(s.host.cpus >= 1 && s.host.cpus <= 4096, "host.cpus {}", s.host.cpus);
  WARPSCOPE_FUZZ_CHECK(Finite(s.host.memory_total) && s.host.memory_total > 0 &&
                           s.host.memory_base <= s.host.memory_total,
                       "host memory {} / {}", s.host.memory_base, s.host.memory_total);
  std::map<std::string, unsigned> uids;
  std::set<unsigned> host_only;
  auto check = [&](const sim::ProcessSpec& p, std::string_view where) {
    if (!p.host) return;
    const sim::HostProcessSpec& h = *p.host;
    WARPSCOPE_FUZZ_CHECK(h.exe.size() >= 2 && h.exe[0] == '/', "{}: exe {}", where, Quote(h.exe));
    WARPSCOPE_FUZZ_CHECK(!h.cmdline.empty() && !h.cmdline[0].empty(), "{}: empty argv", where);
    WARPSCOPE_FUZZ_CHECK(!h.user.empty() && (h.uid == 0) == (h.user == "root"),
                         "{}: user {} uid {}", where, Quote(h.user), h.uid);
    auto [it, fresh] = uids.emplace(h.user, h.uid);
    WARPSCOPE_FUZZ_CHECK(fresh || it->second == h.uid, "{}: user {} has two uids", where,
                         Quote(h.user));
    WARPSCOPE_FUZZ_CHECK(h.container_id.empty() || h.container_id.size() == 64,
                         "{}: container id {}", where, Quote(h.container_id));
    WARPSCOPE_FUZZ_CHECK(h.pod_uid.empty() || !h.container_id.empty(), "{}: pod without container",
                         where);
    WARPSCOPE_FUZZ_CHECK(h.threads >= 1, "{}: {} threads", where, h.threads);
    CheckSignal(h.cpu, std::string(where) + ".host.cpu");
    CheckSignal(h.rss, std::string(where) + ".host.rss");
  };
  for (const sim::ProcessSpec& p : s.host.processes) {
    WARPSCOPE_FUZZ_CHECK(p.host.has_value(), "host process {} without a host side", p.pid);
    WARPSCOPE_FUZZ_CHECK(host_only.insert(p.pid).second, "host process pid {} twice", p.pid);
    check(p, "host.processes");
  }
  for (const sim::DeviceSpec& d : s.devices) {
    for (const sim::ProcessSpec& p : d.processes) {
      WARPSCOPE_FUZZ_CHECK(!host_only.contains(p.pid), "pid {} on the GPU and host-only", p.pid);
      check(p, "devices[].processes");
    }
  }
}

// The scenario text as a file for NvmlSim::Init, which reads the path in kScenarioEnvVar.
class ScenarioFile {
 public:
  ScenarioFile() : fd_(memfd_create("fuzz-scenario", MFD_CLOEXEC)) {
    if (fd_ >= 0) {
      std::string path = fmt::format("/proc/self/fd/{}", fd_);
      setenv(sim::kScenarioEnvVar, path.c_str(), 1);
    }
  }
  bool Write(std::string_view text) {
    return fd_ >= 0 && ftruncate(fd_, 0) == 0 &&
           pwrite(fd_, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size());
  }

 private:
  int fd_;
};

void CheckMemory(const abi::nvmlMemory_v2_t& m) {
  WARPSCOPE_FUZZ_CHECK(m.used <= m.total && m.reserved <= m.total &&
                           m.free + m.reserved + m.used == m.total,
                       "NVML memory total {} reserved {} used {} free {}", m.total, m.reserved,
                       m.used, m.free);
}

void QueryNvml(std::string_view text, size_t device_count) {
  static ScenarioFile file;
  if (!file.Write(text)) {
    return;
  }
  sim::NvmlSim nvml;
  nvml.SetTimeNs(0);
  if (nvml.Init("nvmlInit_v2") != abi::kSuccess) {
    return;  // e.g. nvmlInit_v2 listed in driver.missing_symbols
  }
  unsigned count = 0;
  if (nvml.DeviceGetCount("nvmlDeviceGetCount_v2", &count) == abi::kSuccess) {
    WARPSCOPE_FUZZ_CHECK(count == device_count, "NVML count {} for {} devices", count,
                         device_count);
  }
  for (long long t_ns : {0LL, 500'000'000LL, 2'000'000'000LL}) {
    nvml.SetTimeNs(t_ns);
    for (unsigned i = 0; i < count; ++i) {
      abi::nvmlDevice_t dev = nullptr;
      if (nvml.DeviceGetHandleByIndex("nvmlDeviceGetHandleByIndex_v2", i, &dev) != abi::kSuccess) {
        continue;
      }
      abi::nvmlMemory_v2_t mem{};
      mem.version = abi::kMemoryV2Version;
      if (nvml.DeviceGetMemoryInfoV2(dev, &mem) == abi::kSuccess) {
        CheckMemory(mem);
      }
      unsigned u = 0;
      unsigned long long ull = 0;
      abi::nvmlUtilization_t util{};
      (void)nvml.DeviceGetUtilizationRates(dev, &util);
      (void)nvml.DeviceGetPowerUsage(dev, &u);
      (void)nvml.DeviceGetPowerLimit("nvmlDeviceGetEnforcedPowerLimit", dev, &u);
      (void)nvml.DeviceGetTotalEnergyConsumption(dev, &ull);
      (void)nvml.DeviceGetTemperature(dev, abi::kTemperatureGpu, &u);
      for (unsigned clock = 0; clock < 4; ++clock) {
        (void)nvml.DeviceGetClockInfo("nvmlDeviceGetClockInfo", dev, clock, &u);
      }
      (void)nvml.DeviceGetClockReasons("nvmlDeviceGetCurrentClocksEventReasons", dev, &ull);
      (void)nvml.DeviceGetPcieThroughput(dev, 0, &u);
      (void)nvml.DeviceGetPcieThroughput(dev, 1, &u);
      (void)nvml.DeviceGetPcieReplayCounter(dev, &u);
      (void)nvml.DeviceGetTotalEccErrors(dev, 0, 1, &ull);
      (void)nvml.DeviceGetTotalEccErrors(dev, 1, 1, &ull);
      unsigned a = 0, b = 0, c = 0, e = 0;
      (void)nvml.DeviceGetRemappedRows(dev, &a, &b, &c, &e);
      abi::nvmlFieldValue_t fields[12] = {};
      const unsigned kFields[] = {abi::kFiEccSbeVolTotal,        abi::kFiEccDbeVolTotal,
                                  abi::kFiMemoryTemp,             abi::kFiTotalEnergyConsumption,
                                  abi::kFiNvlinkLinkCount,        abi::kFiNvlinkThroughputDataTx,
                                  abi::kFiNvlinkThroughputDataRx, abi::kFiRemappedCor,
                                  abi::kFiRemappedPending,        94,
                                  140,                            1};
      for (size_t f = 0; f < std::size(fields); ++f) {
        fields[f].fieldId = kFields[f];
      }
      (void)nvml.DeviceGetFieldValues(dev, static_cast<int>(std::size(fields)), fields);
      // Room for every process of the device, in the largest entry layout.
      alignas(8) unsigned char infos[64 * 32];
      for (unsigned slot = 0; slot <= sim::kMaxMigSlots; ++slot) {
        abi::nvmlDevice_t target = dev;
        if (slot > 0 && nvml.DeviceGetMigDeviceHandleByIndex(dev, slot - 1, &target) !=
                            abi::kSuccess) {
          continue;
        }
        if (slot > 0) {
          abi::nvmlMemory_v2_t mig_mem{};
          mig_mem.version = abi::kMemoryV2Version;
          if (nvml.DeviceGetMemoryInfoV2(target, &mig_mem) == abi::kSuccess) {
            CheckMemory(mig_mem);
          }
        }
        unsigned n = 64;
        (void)nvml.DeviceGetRunningProcesses("nvmlDeviceGetComputeRunningProcesses_v3", target,
                                             sim::ProcessType::kCompute, sim::ProcessLayout::kV3,
                                             &n, infos);
      }
    }
  }
  (void)nvml.Shutdown();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = warpscope::fuzz::AsText(data, size);
  auto scenario = sim::ParseScenario(text, kSource);
  if (!scenario) {
    const auto& error = scenario.error();
    WARPSCOPE_FUZZ_CHECK(error.code() == warpscope::base::StatusCode::kInvalidArgument,
                         "rejection is not InvalidArgument: {}", error.ToString());
    WARPSCOPE_FUZZ_CHECK(error.message().starts_with(kSource), "message without the source: {}",
                         error.message());
    if (IsSyntaxErrorMessage(error.message())) {
      bool loads = false;
      try {
        (void)YAML::Load(std::string(text));
        loads = true;
      } catch (...) {
      }
      WARPSCOPE_FUZZ_CHECK(!loads, "valid YAML reported as a syntax error: {}", error.message());
    }
    return 0;
  }
  WARPSCOPE_FUZZ_CHECK(scenario->source == kSource, "source {}", scenario->source);
  CheckStructure(*scenario);
  CheckHostSide(*scenario);
  Simulate(*scenario);
  QueryNvml(text, scenario->devices.size());
  return 0;
}
