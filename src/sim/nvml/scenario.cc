// SPDX-License-Identifier: Apache-2.0
// ParseScenario and LoadScenarioFile; the document, the driver and the device list (`repeat`,
// `overrides`), and the uniqueness of UUIDs and PCI bus ids across devices. The parser's other
// parts are listed in scenario_parser.h.
#include "sim/nvml/scenario.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "base/file_util.h"
#include "sim/nvml/scenario_parser.h"

namespace warpscope::sim {
namespace scenario_internal {
namespace {

// YAML merge for `overrides`: maps merge key by key (recursively), anything else is replaced.
// A signal spec is replaced as a whole (an override's `power: {piecewise: ...}` must not keep
// the template's `sine`), so under a `signals` key only one level merges.
// Children are shared with the inputs, so line numbers in messages still point into the file.
YAML::Node Merge(const YAML::Node& base, const YAML::Node& over, bool replace_children = false) {
  if (!base.IsMap() || !over.IsMap()) {
    return over;
  }
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& kv : base) {
    const std::string key = kv.first.Scalar();
    const YAML::Node o = over[key];
    if (!o.IsDefined()) {
      out[key] = kv.second;
    } else if (replace_children) {
      out[key] = o;
    } else {
      out[key] = Merge(kv.second, o, key == "signals");
    }
  }
  for (const auto& kv : over) {
    const std::string key = kv.first.Scalar();
    if (!base[key].IsDefined()) {
      out[key] = kv.second;
    }
  }
  return out;
}

}  // namespace

using base::Error;
using base::Result;
using base::Status;

Result<Scenario> Parser::Parse(const YAML::Node& root) {
  Scenario s;
  s.source = source_;
  if (!root.IsMap()) {
    return Error(Err(root, "",
                     "the scenario must be a YAML map with at least 'name' and "
                     "'devices'; see docs/simulator.md"));
  }
  WARPSCOPE_RETURN_IF_ERROR(
      CheckKeys(root, "", {"name", "description", "seed", "driver", "host", "devices"}));
  if (!Present(root["name"])) {
    return Error(Err(root, "name", "missing; every scenario needs a name, e.g. name: my-node"));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(s.name, Str(root["name"], "name"));
  if (Present(root["description"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(s.description, Str(root["description"], "description"));
  }
  if (Present(root["seed"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(s.seed, Seed(root["seed"], "seed"));
  }
  seed_ = s.seed;
  if (Present(root["driver"])) {
    WARPSCOPE_RETURN_IF_ERROR(ParseDriver(root["driver"], "driver", s.driver));
  }
  if (Present(root["host"])) {
    WARPSCOPE_RETURN_IF_ERROR(ParseHost(root["host"], "host", s.host));
  }
  const YAML::Node devices = root["devices"];
  if (!Present(devices)) {
    return Error(Err(root, "devices", "missing; list the GPUs, e.g. devices: [{repeat: 8}]"));
  }
  if (!devices.IsSequence()) {
    return Error(Err(devices, "devices", "must be a list of devices (each item starts with -)"));
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    WARPSCOPE_RETURN_IF_ERROR(ParseDeviceEntry(devices[i], i, s));
  }
  WARPSCOPE_RETURN_IF_ERROR(CheckUnique(s, devices));
  WARPSCOPE_RETURN_IF_ERROR(CheckHostPids(root, s));
  WARPSCOPE_RETURN_IF_ERROR(AssignUids(root, s));
  return s;
}

Status Parser::ParseDriver(const YAML::Node& n, std::string_view path, DriverSpec& d) const {
  if (!n.IsMap()) {
    return Err(n, path, "expected a map, e.g. {version: \"550.127.08\"}");
  }
  WARPSCOPE_RETURN_IF_ERROR(CheckKeys(
      n, path, {"version", "nvml_version", "cuda_version", "missing_symbols", "process_stride"}));
  for (auto [key, field] : {std::pair<const char*, std::string*>{"version", &d.version},
                            {"nvml_version", &d.nvml_version}}) {
    if (Present(n[key])) {
      WARPSCOPE_ASSIGN_OR_RETURN(*field, Str(n[key], Join(path, key)));
      if (field->empty() || field->size() >= kAbiStringLimit) {
        return Err(n[key], Join(path, key), "must be 1..79 characters");
      }
    }
  }
  if (Present(n["cuda_version"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(unsigned v,
                               UInt(n["cuda_version"], Join(path, "cuda_version"), 1000, 99999));
    d.cuda_version = static_cast<int>(v);
  }
  if (Present(n["process_stride"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(d.process_stride,
                               UInt(n["process_stride"], Join(path, "process_stride"), 0, 1024));
    if (d.process_stride != 24 && d.process_stride != 32) {
      return Err(n["process_stride"], Join(path, "process_stride"),
                 "must be 24 (most drivers) or 32 (R535.43-535.86 drivers)");
    }
  }
  if (Present(n["missing_symbols"])) {
    WARPSCOPE_RETURN_IF_ERROR(
        ParseMissingSymbols(n["missing_symbols"], Join(path, "missing_symbols"), d));
  }
  return base::OkStatus();
}

Status Parser::ParseMissingSymbols(const YAML::Node& list, const std::string& lpath,
                                   DriverSpec& d) const {
  if (!list.IsSequence()) {
    return Err(list, lpath, "expected a list of NVML function names");
  }
  for (size_t i = 0; i < list.size(); ++i) {
    WARPSCOPE_ASSIGN_OR_RETURN(std::string name, Str(list[i], Index(lpath, i)));
    if (!IsKnownNvmlFunction(name)) {
      return Err(list[i], Index(lpath, i),
                 fmt::format("'{}' is not an NVML function the simulator exports.{} See "
                             "WARPSCOPE_NVML_FUNCTIONS in src/nvml/abi.h",
                             name, Suggest(name, KnownNvmlFunctions())));
    }
    if (name == "nvmlErrorString" || name == "nvmlShutdown") {
      return Err(list[i], Index(lpath, i),
                 fmt::format("{} cannot be marked missing; every NVML library has it", name));
    }
    d.missing_symbols.insert(name);
  }
  return base::OkStatus();
}

// One item of `devices`: `repeat` copies of it, each with its own index and its override merged.
Status Parser::ParseDeviceEntry(const YAML::Node& entry, size_t entry_index, Scenario& s) {
  const std::string path = Index("devices", entry_index);
  if (!entry.IsMap()) {
    return Err(entry, path,
               "expected a map describing a GPU, e.g. {name: \"NVIDIA H100 80GB "
               "HBM3\", architecture: hopper}");
  }
  unsigned repeat = 1;
  WARPSCOPE_RETURN_IF_ERROR(OptionalUInt(entry, path, "repeat", 1, kMaxDevices, repeat));
  const auto first = static_cast<unsigned>(s.devices.size());
  if (first + repeat > kMaxDevices) {
    return Err(entry, path,
               fmt::format("too many devices ({}); the simulator supports at most {}",
                           first + repeat, kMaxDevices));
  }
  std::map<unsigned, YAML::Node> overrides;
  if (Present(entry["overrides"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(
        overrides, ParseOverrides(entry["overrides"], Join(path, "overrides"), first, repeat));
  }
  for (unsigned r = 0; r < repeat; ++r) {
    unsigned index = first + r;
    index_ = index;
    device_note_ = repeat > 1 ? fmt::format(" (device {})", index) : "";
    auto it = overrides.find(index);
    YAML::Node node = it == overrides.end() ? entry : Merge(entry, it->second);
    auto dev = ParseDevice(node, path, index);
    index_.reset();
    if (!dev) {
      return dev.error();
    }
    device_note_.clear();
    s.devices.push_back(std::move(*dev));
  }
  return base::OkStatus();
}

// `overrides` of an entry that covers NVML indexes first..first+repeat-1, by index.
Result<std::map<unsigned, YAML::Node>> Parser::ParseOverrides(const YAML::Node& o,
                                                              const std::string& opath,
                                                              unsigned first,
                                                              unsigned repeat) const {
  if (!o.IsMap()) {
    return Error(Err(o, opath,
                     "expected a map of device index to changes, e.g. {\"3\": {signals: "
                     "{temperature: 81}}}"));
  }
  std::map<unsigned, YAML::Node> overrides;
  for (const auto& kv : o) {
    const std::string key = kv.first.Scalar();
    auto idx = ParseNumber(key);
    if (!idx || *idx != std::floor(*idx) || *idx < first || *idx >= first + repeat) {
      return Error(Err(kv.first, Join(opath, key),
                       fmt::format("'{}' is not a device index of this entry; use {}..{} (the "
                                   "NVML index, as in {{i}})",
                                   key, first, first + repeat - 1)));
    }
    if (!kv.second.IsMap()) {
      return Error(Err(kv.second, Join(opath, key), "expected a map of device keys to change"));
    }
    if (kv.second["repeat"].IsDefined() || kv.second["overrides"].IsDefined()) {
      return Error(Err(kv.second, Join(opath, key), "repeat and overrides cannot be overridden"));
    }
    overrides[static_cast<unsigned>(*idx)] = kv.second;
  }
  return overrides;
}

Status Parser::CheckUnique(const Scenario& s, const YAML::Node& devices) const {
  std::map<std::string, unsigned> uuids, buses;
  for (const auto& d : s.devices) {
    std::string bus = fmt::format("{:08X}:{:02X}:{:02X}", d.pci_domain, d.pci_bus, d.pci_device);
    for (auto [map, key, what] :
         {std::tuple{&uuids, d.uuid, "uuid"}, std::tuple{&buses, bus, "pci_bus_id"}}) {
      auto [it, inserted] = map->emplace(key, d.index);
      if (!inserted) {
        return Err(devices, "devices",
                   fmt::format("devices {} and {} have the same {} '{}'; use \"{{i}}\" in the "
                               "value (it becomes the device index) or omit it",
                               it->second, d.index, what, key));
      }
    }
    for (const auto& inst : d.mig.instances) {
      auto [it, inserted] = uuids.emplace(inst.uuid, d.index);
      if (!inserted) {
        return Err(devices, "devices",
                   fmt::format("MIG uuid '{}' is used twice (device {})", inst.uuid, d.index));
      }
    }
  }
  return base::OkStatus();
}

}  // namespace scenario_internal

using base::Error;
using base::Result;

Result<Scenario> ParseScenario(std::string_view yaml_text, std::string_view source_name) {
  std::string source(source_name.empty() ? "<scenario>" : source_name);
  try {
    YAML::Node root = YAML::Load(std::string(yaml_text));
    scenario_internal::Parser parser(source);
    return parser.Parse(root);
  } catch (const YAML::Exception& e) {
    return Error(base::InvalidArgument("{}:{}:{}: YAML syntax error: {}; fix the file's YAML",
                                       source, e.mark.line + 1, e.mark.column + 1, e.msg));
  } catch (const std::exception& e) {
    return Error(
        base::Internal("{}: unexpected error while reading the scenario: {}", source, e.what()));
  }
}

Result<Scenario> LoadScenarioFile(const std::string& path) {
  auto text = base::ReadFile(path, 16 << 20);
  if (!text) {
    return Error(
        base::NotFound("cannot read scenario file '{}': {}; check the path (a bare name "
                       "like healthy-8xh100 is resolved by the agent, not here)",
                       path, text.error().message()));
  }
  return ParseScenario(*text, path);
}

}  // namespace warpscope::sim
