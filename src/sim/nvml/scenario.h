// SPDX-License-Identifier: Apache-2.0
// The typed form of an NVML simulator scenario (see docs/simulator.md for the YAML format) and
// its parser. Parsing validates everything the simulator relies on, so a Scenario that parsed
// is safe to simulate: errors name the file, the line, the key path such as
// `devices[0].signals.power`, what was wrong and how to fix it.
#ifndef WARPSCOPE_SIM_NVML_SCENARIO_H_
#define WARPSCOPE_SIM_NVML_SCENARIO_H_

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "sim/nvml/signal.h"

namespace warpscope::sim {

inline constexpr double kForever = std::numeric_limits<double>::infinity();
// Upper bound on simulated GPUs (and the size of the handle table).
inline constexpr unsigned kMaxDevices = 64;
// MIG slots per GPU (A100/H100 support at most 7 MIG devices).
inline constexpr unsigned kMaxMigSlots = 8;
// Largest magnitude of any quantity in a scenario (bytes, W, %, rates, ...; about 888 PiB as a
// size). Sums, noise and integrals of such values stay finite and fit NVML's 64-bit counters.
inline constexpr double kMaxQuantity = 1e18;

// nvmlDeviceArchitecture_t values.
enum class Architecture : unsigned {
  kKepler = 2,
  kMaxwell = 3,
  kPascal = 4,
  kVolta = 5,
  kTuring = 6,
  kAmpere = 7,
  kAda = 8,
  kHopper = 9,
  kBlackwell = 10,
};
std::string_view ArchitectureName(Architecture arch);

enum class ProcessType { kCompute, kGraphics };

enum class FaultKind {
  kXid,           // XID event delivered by nvmlEventSetWait_v2 at/after `at`
  kGpuLost,       // every call on the device returns GPU_IS_LOST in [at, until)
  kNotSupported,  // the query for `what` returns NOT_SUPPORTED in [at, until)
  kNoPermission,  // nvmlDeviceGetHandleByIndex* returns NO_PERMISSION in [at, until)
  kSlow,          // calls on the device (or `what` only) answer late, or hang, in [at, until)
};

// Longest latency a slow fault may add to one call.
inline constexpr double kMaxSlowLatencySeconds = 3600;

// The temperature thresholds nvmlDeviceGetTemperatureThreshold answers, indexed by their
// nvmlTemperatureThresholds_t value (shutdown 0, slowdown 1, memory max 2, GPU max 3).
inline constexpr unsigned kTemperatureThresholdCount = 4;
// One threshold per entry in °C; absent = the call returns NOT_SUPPORTED for it.
using TemperatureThresholds = std::array<std::optional<unsigned>, kTemperatureThresholdCount>;
// The defaults of an architecture (docs/simulator.md lists them).
TemperatureThresholds DefaultTemperatureThresholds(Architecture arch);

// Optional per-signal specs, indexed by SignalId; absent = documented default.
using SignalTable = std::array<std::optional<Signal>, kSignalCount>;

// The host side of a scenario process: what the synthetic /proc tree (host_tree.h) shows for its
// pid. Processes without one exist only in NVML.
struct HostProcessSpec {
  std::string exe;                   // absolute path; default /usr/bin/<name>
  std::vector<std::string> cmdline;  // argv; default {exe}
  std::string user = "root";
  unsigned uid = 0;  // 0 for root, else given or assigned from 1000 in order of appearance
  bool uid_given = false;
  std::string container_id;  // 64 lowercase hex, or ""
  std::string pod_uid;       // Kubernetes pod UID (needs container_id), or ""
  unsigned threads = 1;
  Signal rss;  // bytes of resident memory
  Signal cpu;  // cores in use (1 = one logical CPU busy), clamped to the host's cpus
};

struct ProcessSpec {
  unsigned pid = 0;
  std::string name = "python3";
  ProcessType type = ProcessType::kCompute;
  double start_s = 0;                       // present from start_s (inclusive) ...
  double stop_s = kForever;                 // ... to stop_s (exclusive)
  Signal memory;                            // bytes of device memory
  Signal sm_util;                           // %
  Signal mem_util;                          // %
  std::optional<unsigned> gpu_instance_id;  // MIG only
  unsigned compute_instance_id = 0;         // MIG only
  std::optional<HostProcessSpec> host;      // its host side, when the scenario gives one
  // The demo workload `warpscope up --simulate` runs for this process (workloads.h), or "".
  std::string workload;
  // `ddp` only: how much longer (%) this rank's compute kernels run than its peers'.
  double slowdown_percent = 0;
};

// The simulated host: the totals of the synthetic /proc tree, and its processes that use no GPU.
struct HostSpec {
  unsigned cpus = 64;                           // logical CPUs (cpu0..cpuN-1 in /proc/stat)
  double memory_total = 1024.0 * (1ULL << 30);  // bytes (MemTotal)
  double memory_base = 8.0 * (1ULL << 30);      // bytes used besides the processes' RSS
  // Host-only processes (daemons, launchers): pid, name, start, stop and `host` are used; NVML
  // does not know them. Their pids differ from every GPU process's.
  std::vector<ProcessSpec> processes;
};

struct MigInstanceSpec {
  unsigned slot = 0;  // index for nvmlDeviceGetMigDeviceHandleByIndex
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  std::string profile;      // "1g.10gb"
  std::string uuid;         // "MIG-..."
  double memory_total = 0;  // bytes
  SignalTable signals;      // memory_used and GPM signals only
};

struct MigSpec {
  bool enabled = false;
  unsigned max_devices = 7;
  std::vector<MigInstanceSpec> instances;
};

struct FaultSpec {
  FaultKind kind = FaultKind::kXid;
  double at_s = 0;
  double until_s = kForever;
  unsigned code = 0;     // kXid
  std::string what;      // kNotSupported: a signal or NVML function name; kSlow: a function or ""
  double latency_s = 0;  // kSlow: real seconds added to each call (0 with hang)
  bool hang = false;     // kSlow: calls block until until_s (or until the simulator shuts down)
  unsigned gpu_instance_id = 0xFFFFFFFFu;      // kXid on a MIG GPU
  unsigned compute_instance_id = 0xFFFFFFFFu;  // kXid on a MIG GPU
};

struct DeviceSpec {
  unsigned index = 0;  // NVML index
  std::string name = "NVIDIA H100 80GB HBM3";
  Architecture architecture = Architecture::kHopper;
  std::string uuid;
  unsigned pci_domain = 0;
  unsigned pci_bus = 0;
  unsigned pci_device = 0;
  unsigned pci_device_id = 0;  // 16-bit PCI device id (vendor 0x10DE is added by the simulator)
  std::string serial;
  unsigned minor_number = 0;
  int cc_major = 9;
  int cc_minor = 0;
  double memory_total = 0;     // bytes
  double memory_reserved = 0;  // bytes
  double power_limit_w = 700;
  double enforced_power_limit_w = 700;
  unsigned max_sm_clock = 1980;  // MHz
  unsigned max_mem_clock = 2619;
  TemperatureThresholds temperature_thresholds = DefaultTemperatureThresholds(architecture);
  unsigned nvlink_links = 0;
  bool ecc = true;
  SignalTable signals;
  std::vector<ProcessSpec> processes;
  MigSpec mig;
  std::vector<FaultSpec> faults;

  bool SupportsGpm() const { return architecture >= Architecture::kHopper; }
  bool SupportsMig() const { return architecture >= Architecture::kAmpere; }
};

struct DriverSpec {
  std::string version = "550.127.08";
  std::string nvml_version = "12.550.127.08";
  int cuda_version = 12040;
  std::set<std::string, std::less<>> missing_symbols;
  unsigned process_stride = 24;
};

struct Scenario {
  std::string name;
  std::string description;
  uint64_t seed = 1;
  DriverSpec driver;
  HostSpec host;
  std::vector<DeviceSpec> devices;  // expanded: one per NVML index, `repeat` already applied
  std::string source;               // file name used in messages
};

// Parses YAML text. `source_name` (a file path) prefixes every error message.
[[nodiscard]] base::Result<Scenario> ParseScenario(std::string_view yaml_text,
                                                   std::string_view source_name);
// Reads and parses a scenario file.
[[nodiscard]] base::Result<Scenario> LoadScenarioFile(const std::string& path);

// A scenario process that names a demo workload (ProcessSpec::workload): one per pid, on the
// first device that lists it, in device order.
struct WorkloadProcess {
  unsigned pid = 0;
  unsigned device = 0;  // NVML index
  std::string workload;
  double slowdown_percent = 0;  // ProcessSpec::slowdown_percent
};
std::vector<WorkloadProcess> ListWorkloads(const Scenario& scenario);

// Renames scenario pids: `map` is "SCENARIO_PID=PID,..." (hooks.h kPidMapEnvVar), so that NVML
// and the host tree report the pids of real processes (the demo workloads) instead. Every
// occurrence moves: device processes and the host tree's. Fails, changing nothing, on a
// malformed entry, a scenario pid that no process has, or a new pid that another scenario
// process keeps.
[[nodiscard]] base::Status ApplyPidMap(std::string_view map, Scenario& scenario);

// True for every NVML function the simulator exports (current and legacy names).
bool IsKnownNvmlFunction(std::string_view name);

}  // namespace warpscope::sim

#endif  // WARPSCOPE_SIM_NVML_SCENARIO_H_
