// SPDX-License-Identifier: Apache-2.0
#include "sim/nvml/simulation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace warpscope::sim {
namespace {

// Defaults for signals a scenario leaves out. Idle H100-class boards draw about 10% of their
// limit and run near 30 °C; under full load they reach about 90% of the limit and 70 °C.
constexpr double kIdlePowerFraction = 0.10;
constexpr double kLoadPowerFraction = 0.80;
constexpr double kBaseTemperature = 28;
constexpr double kTemperaturePerLimit = 45;
constexpr double kMemoryTemperatureOffset = 6;
constexpr unsigned long long kClockEventGpuIdle = 0x1;

size_t Idx(SignalId id) { return static_cast<size_t>(id); }

}  // namespace

Simulation::Simulation(Scenario scenario) : scenario_(std::move(scenario)) {
  const size_t n = scenario_.devices.size();
  noise_keys_.resize(n);
  process_keys_.resize(n);
  instance_keys_.resize(n);
  for (size_t d = 0; d < n; ++d) {
    const DeviceSpec& dev = scenario_.devices[d];
    for (const auto& info : AllSignals()) {
      noise_keys_[d].push_back(NoiseKey(scenario_.seed, dev.index, info.name));
    }
    for (size_t p = 0; p < dev.processes.size(); ++p) {
      std::array<uint64_t, 3> keys{};
      const char* names[] = {"memory", "sm_util", "mem_util"};
      for (size_t k = 0; k < 3; ++k) {
        keys[k] = NoiseKey(scenario_.seed, dev.index, fmt::format("processes[{}].{}", p, names[k]));
      }
      process_keys_[d].push_back(keys);
    }
    for (size_t i = 0; i < dev.mig.instances.size(); ++i) {
      std::vector<uint64_t> keys;
      for (const auto& info : AllSignals()) {
        keys.push_back(
            NoiseKey(scenario_.seed, dev.index, fmt::format("mig[{}].{}", i, info.name)));
      }
      instance_keys_[d].push_back(std::move(keys));
    }
  }
  std::map<unsigned, HostProcess> by_pid;
  for (size_t d = 0; d < n; ++d) {
    const auto& procs = scenario_.devices[d].processes;
    for (size_t p = 0; p < procs.size(); ++p) {
      if (procs[p].host) by_pid.try_emplace(procs[p].pid, HostProcess{procs[p].pid, d, p});
    }
  }
  for (size_t p = 0; p < scenario_.host.processes.size(); ++p) {
    by_pid.try_emplace(scenario_.host.processes[p].pid,
                       HostProcess{scenario_.host.processes[p].pid, kHostOnly, p});
  }
  for (const auto& [pid, hp] : by_pid) {
    host_processes_.push_back(hp);
    // Host-only processes draw their noise as a device index past the last GPU.
    const bool host_only = hp.device == kHostOnly;
    const unsigned index = host_only ? kMaxDevices : scenario_.devices[hp.device].index;
    const std::string name = host_only ? fmt::format("host.processes[{}]", hp.process)
                                       : fmt::format("processes[{}].host", hp.process);
    host_keys_.push_back({NoiseKey(scenario_.seed, index, name + ".cpu"),
                          NoiseKey(scenario_.seed, index, name + ".rss")});
  }
  host_cpu_integrals_.resize(host_processes_.size());
}

double Simulation::Raw(size_t d, SignalId id, double t) {
  const DeviceSpec& dev = scenario_.devices[d];
  const auto& spec = dev.signals[Idx(id)];
  if (spec) {
    return Evaluate(*spec, noise_keys_[d][Idx(id)], t);
  }
  switch (id) {
    case SignalId::kMemoryUsed: {
      double sum = 0;
      for (size_t p = 0; p < dev.processes.size(); ++p) {
        if (ProcessActive(d, p, t)) {
          sum += ProcessValue(d, p, ProcessSignal::kMemory, t);
        }
      }
      return sum;
    }
    case SignalId::kPower:
      return dev.power_limit_w *
             (kIdlePowerFraction + kLoadPowerFraction * Value(d, SignalId::kGpuUtil, t) / 100.0);
    case SignalId::kTemperature:
      return kBaseTemperature +
             kTemperaturePerLimit * Value(d, SignalId::kPower, t) / dev.power_limit_w;
    case SignalId::kMemoryTemperature:
      return Value(d, SignalId::kTemperature, t) + kMemoryTemperatureOffset;
    case SignalId::kSmClock:
      return dev.max_sm_clock;
    case SignalId::kMemClock:
      return dev.max_mem_clock;
    case SignalId::kClockEventReasons:
      return Value(d, SignalId::kGpuUtil, t) < 1.0 ? static_cast<double>(kClockEventGpuIdle) : 0;
    case SignalId::kGrEngineActive:
      return Value(d, SignalId::kGpuUtil, t);
    case SignalId::kGpmPcieTx:
      return Value(d, SignalId::kPcieTx, t) / 1024.0;  // KB/s -> MiB/s
    case SignalId::kGpmPcieRx:
      return Value(d, SignalId::kPcieRx, t) / 1024.0;
    case SignalId::kGpmNvlinkTx:
      return Value(d, SignalId::kNvlinkTx, t) * dev.nvlink_links / (1024.0 * 1024.0);
    case SignalId::kGpmNvlinkRx:
      return Value(d, SignalId::kNvlinkRx, t) * dev.nvlink_links / (1024.0 * 1024.0);
    default:
      return 0;
  }
}

double Simulation::Value(size_t d, SignalId id, double t) {
  double v = ClampSignal(id, Raw(d, id, t));
  if (id == SignalId::kMemoryUsed) {
    const DeviceSpec& dev = scenario_.devices[d];
    v = std::min(v, dev.memory_total - dev.memory_reserved);
  }
  return v;
}

double Simulation::InstanceRaw(size_t d, size_t instance, SignalId id, double t) {
  const DeviceSpec& dev = scenario_.devices[d];
  const MigInstanceSpec& inst = dev.mig.instances[instance];
  const auto& spec = inst.signals[Idx(id)];
  if (spec) {
    return Evaluate(*spec, instance_keys_[d][instance][Idx(id)], t);
  }
  if (id == SignalId::kMemoryUsed) {
    double sum = 0;
    for (size_t p = 0; p < dev.processes.size(); ++p) {
      const ProcessSpec& proc = dev.processes[p];
      if (proc.gpu_instance_id == inst.gpu_instance_id &&
          proc.compute_instance_id == inst.compute_instance_id && ProcessActive(d, p, t)) {
        sum += ProcessValue(d, p, ProcessSignal::kMemory, t);
      }
    }
    return sum;
  }
  return 0;
}

double Simulation::InstanceValue(size_t d, size_t instance, SignalId id, double t) {
  double v = ClampSignal(id, InstanceRaw(d, instance, id, t));
  if (id == SignalId::kMemoryUsed) {
    v = std::min(v, scenario_.devices[d].mig.instances[instance].memory_total);
  }
  return v;
}

bool Simulation::ProcessActive(size_t d, size_t p, double t) const {
  const ProcessSpec& proc = scenario_.devices[d].processes[p];
  return t >= proc.start_s && t < proc.stop_s;
}

double Simulation::ProcessValue(size_t d, size_t p, ProcessSignal which, double t) {
  const DeviceSpec& dev = scenario_.devices[d];
  const ProcessSpec& proc = dev.processes[p];
  const Signal* s = &proc.memory;
  if (which == ProcessSignal::kSmUtil) {
    s = &proc.sm_util;
  } else if (which == ProcessSignal::kMemUtil) {
    s = &proc.mem_util;
  }
  double v = Evaluate(*s, process_keys_[d][p][static_cast<size_t>(which)], t);
  if (which == ProcessSignal::kMemory) {
    return std::clamp(v, 0.0, dev.memory_total);
  }
  return std::clamp(v, 0.0, 100.0);
}

double Simulation::HostCpu(size_t i, double t) {
  const ProcessSpec& proc = host_process(i);
  if (t < proc.start_s || t >= proc.stop_s) return 0;
  const double cores = Evaluate(proc.host->cpu, host_keys_[i][0], t);
  return std::clamp(cores, 0.0, static_cast<double>(scenario_.host.cpus));
}

double Simulation::HostCpuSeconds(size_t i, double t) {
  return host_cpu_integrals_[i].At(t, [this, i](double ts) { return HostCpu(i, ts); });
}

double Simulation::HostRss(size_t i, double t) {
  const double bytes = Evaluate(host_process(i).host->rss, host_keys_[i][1], t);
  return std::clamp(bytes, 0.0, scenario_.host.memory_total);
}

double Simulation::Integral(size_t d, SignalId rate, double t) {
  auto& integral = integrals_[{d, static_cast<int>(rate)}];
  return integral.At(t, [this, d, rate](double ts) { return Value(d, rate, ts); });
}

double Simulation::Average(size_t d, std::optional<size_t> instance, SignalId id, double t1,
                           double t2) {
  if (t2 <= t1) {
    return instance ? InstanceValue(d, *instance, id, t2) : Value(d, id, t2);
  }
  CumulativeIntegral::Rate rate;
  if (instance) {
    size_t i = *instance;
    rate = [this, d, i, id](double ts) { return InstanceValue(d, i, id, ts); };
  } else {
    rate = [this, d, id](double ts) { return Value(d, id, ts); };
  }
  return CumulativeIntegral::Between(t1, t2, rate) / (t2 - t1);
}

bool Simulation::FaultActive(size_t d, FaultKind kind, std::string_view what, double t) const {
  for (const auto& f : scenario_.devices[d].faults) {
    if (f.kind == kind && t >= f.at_s && t < f.until_s &&
        (kind != FaultKind::kNotSupported || f.what == what)) {
      return true;
    }
  }
  return false;
}

bool Simulation::Lost(size_t d, double t) const {
  return FaultActive(d, FaultKind::kGpuLost, "", t);
}

bool Simulation::NoPermission(size_t d, double t) const {
  return FaultActive(d, FaultKind::kNoPermission, "", t);
}

bool Simulation::Unsupported(size_t d, std::string_view what, double t) const {
  return FaultActive(d, FaultKind::kNotSupported, what, t);
}

const FaultSpec* Simulation::Slow(size_t d, std::string_view fn, double t) const {
  for (const auto& f : scenario_.devices[d].faults) {
    if (f.kind == FaultKind::kSlow && t >= f.at_s && t < f.until_s &&
        (f.what.empty() || f.what == fn)) {
      return &f;
    }
  }
  return nullptr;
}

std::optional<double> Simulation::NextEventTime(double t) const {
  std::optional<double> next;
  for (const auto& dev : scenario_.devices) {
    for (const auto& f : dev.faults) {
      if ((f.kind == FaultKind::kXid || f.kind == FaultKind::kGpuLost) && f.at_s > t &&
          (!next || f.at_s < *next)) {
        next = f.at_s;
      }
    }
  }
  return next;
}

}  // namespace warpscope::sim
