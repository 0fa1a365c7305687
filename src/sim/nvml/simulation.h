// SPDX-License-Identifier: Apache-2.0
// The device state model of the NVML simulator: evaluates a parsed Scenario at a simulated time
// t (seconds since the simulator started). Gauges are the scenario's signals (or documented
// defaults derived from other signals), clamped to valid ranges; counters are integrals of their
// rate signals from 0 to t; faults are time windows.
//
// Everything is a pure function of (scenario, t); the only state is a cache of integrals.
// Not thread-safe: NvmlSim serialises all calls.
#ifndef WARPSCOPE_SIM_NVML_SIMULATION_H_
#define WARPSCOPE_SIM_NVML_SIMULATION_H_

#include <array>
#include <map>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/nvml/integrator.h"
#include "sim/nvml/scenario.h"

namespace warpscope::sim {

enum class ProcessSignal { kMemory, kSmUtil, kMemUtil };

class Simulation {
 public:
  explicit Simulation(Scenario scenario);
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  const Scenario& scenario() const { return scenario_; }
  size_t device_count() const { return scenario_.devices.size(); }
  const DeviceSpec& device(size_t d) const { return scenario_.devices[d]; }

  // A device signal at t: the scenario's spec plus noise, or the default documented in
  // docs/simulator.md (e.g. power follows gpu_util), clamped to its range. memory_used is also
  // bounded by memory_total - memory_reserved.
  double Value(size_t d, SignalId id, double t);
  // A MIG instance signal (memory_used or a GPM signal); memory_used defaults to the sum of the
  // instance's processes and is bounded by the instance's memory_total; others default to 0.
  double InstanceValue(size_t d, size_t instance, SignalId id, double t);

  // Whether process `p` of device `d` runs at t (start <= t < stop).
  bool ProcessActive(size_t d, size_t p, double t) const;
  // A process signal at t (bytes or %), clamped.
  double ProcessValue(size_t d, size_t p, ProcessSignal which, double t);

  // The processes with a host side, one per pid (the first device listing the pid with a `host`
  // map wins) plus the host-only ones (host.processes), sorted by pid.
  static constexpr size_t kHostOnly = static_cast<size_t>(-1);  // HostProcess::device
  struct HostProcess {
    unsigned pid = 0;
    size_t device = 0;  // kHostOnly: process indexes host.processes
    size_t process = 0;
  };
  const std::vector<HostProcess>& host_processes() const { return host_processes_; }
  const ProcessSpec& host_process(size_t i) const {
    const HostProcess& hp = host_processes_[i];
    return hp.device == kHostOnly ? scenario_.host.processes[hp.process]
                                  : scenario_.devices[hp.device].processes[hp.process];
  }
  // Cores process `i` uses at t: its cpu signal clamped to [0, host.cpus]; 0 while not running.
  double HostCpu(size_t i, double t);
  // CPU seconds process `i` used over [0, t]. Monotonic in t.
  double HostCpuSeconds(size_t i, double t);
  // Resident bytes of process `i` at t, clamped to [0, host.memory_total].
  double HostRss(size_t i, double t);

  // Integral of a rate signal over [0, t] (energy in J from power, bytes per link from nvlink_tx,
  // errors from ecc_*_rate, replays from pcie_replay_rate). Monotonic in t.
  double Integral(size_t d, SignalId rate, double t);
  // Average of a signal over [t1, t2] (device when `instance` is empty, else a MIG instance).
  // This is what GPM reports: NVML derives GPM metrics from counter deltas between two samples.
  double Average(size_t d, std::optional<size_t> instance, SignalId id, double t1, double t2);

  bool Lost(size_t d, double t) const;
  bool NoPermission(size_t d, double t) const;
  // True when a not_supported fault for `what` (a signal or NVML function name) is active at t.
  bool Unsupported(size_t d, std::string_view what, double t) const;
  // The first slow fault of device `d` active at t that covers the call `fn` (a fault without
  // `what` covers every call on the device), or nullptr.
  const FaultSpec* Slow(size_t d, std::string_view fn, double t) const;
  // Earliest XID fault or gpu_lost start at a time > t on any device, for waking event waiters.
  std::optional<double> NextEventTime(double t) const;

 private:
  double Raw(size_t d, SignalId id, double t);
  double InstanceRaw(size_t d, size_t instance, SignalId id, double t);
  bool FaultActive(size_t d, FaultKind kind, std::string_view what, double t) const;

  Scenario scenario_;
  // Noise keys, computed once: noise_keys_[d][signal], process_keys_[d][p][ProcessSignal],
  // instance_keys_[d][instance][signal].
  std::vector<std::vector<uint64_t>> noise_keys_;
  std::vector<std::vector<std::array<uint64_t, 3>>> process_keys_;
  std::vector<std::vector<std::vector<uint64_t>>> instance_keys_;
  std::vector<HostProcess> host_processes_;
  std::vector<std::array<uint64_t, 2>> host_keys_;  // cpu, rss noise keys per host process
  std::vector<CumulativeIntegral> host_cpu_integrals_;
  // Counter integrals by (device, signal).
  std::map<std::pair<size_t, int>, CumulativeIntegral> integrals_;
};

}  // namespace warpscope::sim

#endif  // WARPSCOPE_SIM_NVML_SIMULATION_H_
