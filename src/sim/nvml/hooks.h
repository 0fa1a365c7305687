// SPDX-License-Identifier: Apache-2.0
// What a test needs to drive the simulated libnvidia-ml.so.1 besides NVML itself: the
// environment variable naming the scenario, and the two extra exported C functions with their
// function-pointer types (resolve them with dlsym on the library handle).
//
//   setenv(kScenarioEnvVar, "/path/scenario.yaml", 1);
//   auto set_time = reinterpret_cast<SetTimeNsFn>(dlsym(lib, kSetTimeNsSymbol));
//   set_time(30'000'000'000);  // from now on simulated time only moves when set
#ifndef WARPSCOPE_SIM_NVML_HOOKS_H_
#define WARPSCOPE_SIM_NVML_HOOKS_H_

namespace warpscope::sim {

// Path of the scenario YAML; read by nvmlInit_v2/nvmlInit when the init count goes 0 -> 1.
inline constexpr char kScenarioEnvVar[] = "WARPSCOPE_SIM_SCENARIO";

// Directory in which the simulator keeps the synthetic /proc tree of the scenario's host side
// (proc/, etc/passwd; see host_tree.h). Read at the same init; unset or empty: no tree.
inline constexpr char kHostRootEnvVar[] = "WARPSCOPE_SIM_HOST_ROOT";

// Scenario pids renamed to the pids of real processes, "SCENARIO_PID=PID,..." (ApplyPidMap in
// scenario.h): `warpscope up --simulate` puts its demo workloads' pids here. Read at the same
// init; unset or empty: the scenario's pids. A bad map fails the init like a bad scenario.
inline constexpr char kPidMapEnvVar[] = "WARPSCOPE_SIM_PIDS";

// void warpscope_sim_set_time_ns(long long t_ns): switches to the manual clock and sets the
// simulated time (nanoseconds since start). Callable before init; wakes nvmlEventSetWait_v2.
inline constexpr char kSetTimeNsSymbol[] = "warpscope_sim_set_time_ns";
using SetTimeNsFn = void (*)(long long t_ns);

// const char* warpscope_sim_last_error(void): why the last init returned NVML_ERROR_UNKNOWN
// ("" after a successful init). The string stays valid until the next init.
inline constexpr char kLastErrorSymbol[] = "warpscope_sim_last_error";
using LastErrorFn = const char* (*)();

// long warpscope_sim_list_workloads(const char* scenario_path, char* out, unsigned long cap):
// parses the scenario file (no init needed, no simulator state touched) and writes its demo
// workload processes (ListWorkloads), one "PID DEVICE WORKLOAD SLOWDOWN\n" line each (SLOWDOWN:
// the process's `slowdown` percentage, 0 unless given), NUL-terminated,
// into `out`. Returns the length written, or minus the length needed (NUL included) when `cap`
// is too small; on a scenario that does not load, writes the error message and returns
// LONG_MIN.
inline constexpr char kListWorkloadsSymbol[] = "warpscope_sim_list_workloads";
using ListWorkloadsFn = long (*)(const char* scenario_path, char* out, unsigned long cap);

}  // namespace warpscope::sim

#endif  // WARPSCOPE_SIM_NVML_HOOKS_H_
