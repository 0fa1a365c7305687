// SPDX-License-Identifier: Apache-2.0
// The scenario parser's insides, shared by its files. Private to src/sim/nvml.
//   scenario_parser.cc   error wording, suggestions, key paths, reading one value;
//                        IsKnownNvmlFunction
//   scenario.cc          ParseScenario, LoadScenarioFile; the document, the driver, the device
//                        list (repeat, overrides), unique UUIDs and PCI bus ids
//   scenario_signals.cc  signals and the signal table
//   scenario_device.cc   one device: identity, PCI, memory, power, clocks, temperature
//                        thresholds, MIG, processes; ArchitectureName,
//                        DefaultTemperatureThresholds
//   scenario_faults.cc   faults, including the slow fault
//   scenario_host.cc     the host side: the simulated host and each process's host side
// The Parser is used by one thread for one document; every error it returns is InvalidArgument
// and reads "file:line: key.path: what is wrong; how to fix it".
#ifndef WARPSCOPE_SIM_NVML_SCENARIO_PARSER_H_
#define WARPSCOPE_SIM_NVML_SCENARIO_PARSER_H_

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "nvml/abi.h"
#include "sim/nvml/scenario.h"
#include "sim/nvml/signal.h"
#include "sim/nvml/units.h"

namespace warpscope::sim::scenario_internal {

// A key that is given and not null (`key:` alone or `key: ~` counts as absent).
inline bool Present(const YAML::Node& n) { return n.IsDefined() && !n.IsNull(); }

std::string Lower(std::string_view s);
size_t EditDistance(std::string_view a, std::string_view b);

// " Did you mean 'x'?" when a candidate is close to `word`, else "".
template <typename Range>
std::string Suggest(std::string_view word, const Range& candidates) {
  std::string_view best;
  // Typos (up to two edits, more for long names) and truncations ("memory_temp") qualify.
  size_t best_distance = std::max<size_t>(3, word.size() / 4 + 1);
  const std::string lower_word = Lower(word);
  for (std::string_view c : candidates) {
    const std::string lower_c = Lower(c);
    size_t d = EditDistance(lower_word, lower_c);
    if (lower_word.size() >= 4 && lower_c.rfind(lower_word, 0) == 0) {
      d = std::min<size_t>(d, 1);
    }
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  if (best.empty()) {
    return "";
  }
  return fmt::format(" Did you mean '{}'?", best);
}

// "a, b, c": the names a message lists as valid.
template <typename Range>
std::string ListNames(const Range& names) {
  std::string list;
  for (std::string_view a : names) {
    list += list.empty() ? "" : ", ";
    list += a;
  }
  return list;
}

// Key paths as messages write them: Join("devices[0]", "name") == "devices[0].name",
// Index("faults", 2) == "faults[2]".
std::string Join(std::string_view path, std::string_view key);
std::string Index(std::string_view path, size_t i);

// Every NVML function the simulator exports, current and legacy names (nvml/abi.h).
std::span<const std::string_view> KnownNvmlFunctions();

class Parser {
 public:
  explicit Parser(std::string source) : source_(std::move(source)) {}

  // The whole document (scenario.cc).
  base::Result<Scenario> Parse(const YAML::Node& root);

 private:
  // Error wording and reading one value (scenario_parser.cc).
  // "file:line: path: message". Error nodes may be missing (absent keys), then no line is given.
  base::Status Err(const YAML::Node& node, std::string_view path, std::string_view message) const;
  base::Status CheckKeys(const YAML::Node& map, std::string_view path,
                         std::initializer_list<std::string_view> allowed) const;
  // A scalar, with "{i}" replaced by the device index while a device is parsed.
  base::Result<std::string> Str(const YAML::Node& n, std::string_view path) const;
  base::Result<double> Quantity(const YAML::Node& n, std::string_view path, Unit unit) const;
  base::Result<unsigned> UInt(const YAML::Node& n, std::string_view path, uint64_t min,
                              uint64_t max) const;
  base::Result<uint64_t> Seed(const YAML::Node& n, std::string_view path) const;
  base::Result<bool> Bool(const YAML::Node& n, std::string_view path) const;
  // A required key of `map`, or an error naming it.
  base::Result<YAML::Node> Required(const YAML::Node& map, std::string_view path,
                                    std::string_view key, std::string_view example) const;
  // map[key] into `out` when the key is present; `out` keeps its default otherwise.
  base::Status OptionalUInt(const YAML::Node& map, std::string_view path, const char* key,
                            uint64_t min, uint64_t max, unsigned& out) const;
  base::Status OptionalQuantity(const YAML::Node& map, std::string_view path, const char* key,
                                Unit unit, double& out) const;

  // The driver and the device list (scenario.cc).
  base::Status ParseDriver(const YAML::Node& n, std::string_view path, DriverSpec& d) const;
  base::Status ParseMissingSymbols(const YAML::Node& list, const std::string& lpath,
                                   DriverSpec& d) const;
  base::Status ParseDeviceEntry(const YAML::Node& entry, size_t entry_index, Scenario& s);
  base::Result<std::map<unsigned, YAML::Node>> ParseOverrides(const YAML::Node& o,
                                                              const std::string& opath,
                                                              unsigned first,
                                                              unsigned repeat) const;
  base::Status CheckUnique(const Scenario& s, const YAML::Node& devices) const;

  // Signals (scenario_signals.cc).
  base::Result<Signal> ParseSignal(const YAML::Node& n, std::string_view path, Unit unit) const;
  // A required parameter of a ramp, sine or step: its key, an example for the message, whether
  // it is a time (else it has the signal's unit), and the field it fills.
  struct ShapeParameter {
    const char* key;
    const char* example;
    bool seconds;
    double Signal::*field;
  };
  base::Status ParseShapeParameters(const YAML::Node& spec, const std::string& kpath, Unit unit,
                                    std::initializer_list<ShapeParameter> required,
                                    Signal& s) const;
  base::Status ParsePiecewise(const YAML::Node& spec, const std::string& kpath, Unit unit,
                              Signal& s) const;
  base::Status ParseRamp(const YAML::Node& spec, const std::string& kpath, Unit unit,
                         Signal& s) const;
  base::Status ParseSine(const YAML::Node& spec, const std::string& kpath, Unit unit,
                         Signal& s) const;
  base::Status ParseStep(const YAML::Node& spec, const std::string& kpath, Unit unit,
                         Signal& s) const;
  base::Status ParseSignals(const YAML::Node& n, std::string_view path, bool mig_instance,
                            SignalTable& out) const;

  // One device (scenario_device.cc).
  base::Result<DeviceSpec> ParseDevice(const YAML::Node& n, const std::string& path,
                                       unsigned index) const;
  base::Status ParseModel(const YAML::Node& n, const std::string& path, DeviceSpec& d) const;
  base::Status ParseIdentity(const YAML::Node& n, const std::string& path, DeviceSpec& d) const;
  base::Status ParsePciBusId(const YAML::Node& n, const std::string& path, DeviceSpec& d) const;
  base::Status ParseMemoryAndPower(const YAML::Node& n, const std::string& path,
                                   DeviceSpec& d) const;
  base::Status ParsePowerLimit(const YAML::Node& n, const std::string& path, const char* key,
                               double& out) const;
  base::Status ParseTemperatureThresholds(const YAML::Node& n, const std::string& path,
                                          DeviceSpec& d) const;
  base::Status ParseMig(const YAML::Node& n, const std::string& path, DeviceSpec& d) const;
  base::Status ParseMigInstance(const YAML::Node& m, const std::string& ipath, size_t i,
                                const DeviceSpec& d, MigInstanceSpec& inst) const;
  base::Status ParseMigMemory(const YAML::Node& m, const std::string& ipath,
                              MigInstanceSpec& inst) const;
  base::Status ParseProcesses(const YAML::Node& n, const std::string& path, DeviceSpec& d) const;
  base::Status ParseProcess(const YAML::Node& p, const std::string& ppath, const DeviceSpec& d,
                            ProcessSpec& proc) const;
  base::Status ParseProcessMig(const YAML::Node& p, const std::string& ppath, const DeviceSpec& d,
                               ProcessSpec& proc) const;

  // The host side (scenario_host.cc): the top-level `host` map, a process's `host` map, and the
  // users' uids once every device is parsed.
  base::Status ParseHost(const YAML::Node& n, std::string_view path, HostSpec& host) const;
  base::Status ParseHostProcess(const YAML::Node& n, const std::string& path,
                                ProcessSpec& proc) const;
  // `check_keys` false: the caller checked the map's keys (a host-only process has its own).
  base::Status ParseProcessHost(const YAML::Node& n, const std::string& path,
                                const ProcessSpec& proc, HostProcessSpec& host,
                                bool check_keys = true) const;
  base::Status CheckHostPids(const YAML::Node& root, const Scenario& s) const;
  base::Status ParseCmdline(const YAML::Node& n, const std::string& path,
                            HostProcessSpec& host) const;
  base::Status ParseProcessIds(const YAML::Node& n, const std::string& path,
                               HostProcessSpec& host) const;
  base::Status AssignUids(const YAML::Node& root, Scenario& s) const;

  // Faults (scenario_faults.cc).
  base::Status ParseFaults(const YAML::Node& n, const std::string& path, DeviceSpec& d) const;
  base::Status ParseFault(const YAML::Node& f, const std::string& fpath, const DeviceSpec& d,
                          FaultSpec& fault) const;
  base::Status ParseFaultKind(const YAML::Node& f, const std::string& fpath,
                              FaultSpec& fault) const;
  base::Status ParseFaultWindow(const YAML::Node& f, const std::string& fpath,
                                FaultSpec& fault) const;
  base::Status ParseXidFault(const YAML::Node& f, const std::string& fpath, const DeviceSpec& d,
                             FaultSpec& fault) const;
  base::Status ParseFaultWhat(const YAML::Node& what, const std::string& path, bool signals,
                              FaultSpec& fault) const;
  base::Status ParseSlowFault(const YAML::Node& f, const std::string& fpath,
                              FaultSpec& fault) const;

  static constexpr size_t kAbiStringLimit = nvml::abi::kSystemDriverVersionBufferSize;
  static constexpr size_t kAbiNameLimit = nvml::abi::kDeviceNameBufferSize;

  std::string source_;
  uint64_t seed_ = 1;
  std::optional<unsigned> index_;  // substituted for "{i}" while parsing a device
  std::string device_note_;        // " (device N)" while expanding a repeated entry
};

// The MIG instance with these ids on `d`, or nullptr.
const MigInstanceSpec* FindInstance(const DeviceSpec& d, unsigned gi, unsigned ci);

}  // namespace warpscope::sim::scenario_internal

#endif  // WARPSCOPE_SIM_NVML_SCENARIO_PARSER_H_
