// SPDX-License-Identifier: Apache-2.0
// One device of the scenario: model and architecture, identity (UUID, serial, PCI), memory and
// power, clocks, temperature thresholds, its signals, MIG and processes (faults are in
// scenario_faults.cc). Unset identity fields get values derived from the seed and the index,
// stable across runs.
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/file_util.h"
#include "sim/nvml/scenario_parser.h"
#include "sim/nvml/workloads.h"

namespace warpscope::sim {
namespace {

constexpr std::optional<unsigned> kNone = std::nullopt;

// The compute capability and temperature thresholds (°C, in nvmlTemperatureThresholds_t order:
// shutdown, slowdown, memory max, GPU max) of each architecture's typical datacenter board, as
// nvidia-smi -q reports them for such boards (plausible values, not a board's specification).
// Memory max only where the typical board has HBM; GPU max from Volta on.
struct ArchEntry {
  std::string_view name;
  Architecture arch;
  int cc_major;
  int cc_minor;
  TemperatureThresholds thresholds;
};
constexpr ArchEntry kArchitectures[] = {
    {"kepler", Architecture::kKepler, 3, 7, {98, 95, kNone, kNone}},
    {"maxwell", Architecture::kMaxwell, 5, 2, {97, 94, kNone, kNone}},
    {"pascal", Architecture::kPascal, 6, 0, {85, 82, kNone, kNone}},
    {"volta", Architecture::kVolta, 7, 0, {90, 87, 85, 83}},
    {"turing", Architecture::kTuring, 7, 5, {96, 93, kNone, 85}},
    {"ampere", Architecture::kAmpere, 8, 0, {92, 89, 95, 85}},
    {"ada", Architecture::kAda, 8, 9, {98, 95, kNone, 89}},
    {"hopper", Architecture::kHopper, 9, 0, {92, 89, 95, 87}},
    {"blackwell", Architecture::kBlackwell, 10, 0, {92, 89, 95, 87}},
};

// Scenario keys of the thresholds, in the same order.
constexpr const char* kThresholdKeys[kTemperatureThresholdCount] = {
    "shutdown_temperature", "slowdown_temperature", "memory_max_temperature",
    "max_operating_temperature"};

// PCI device ids of common datacenter boards, matched as substrings of the device name in this
// order (more specific names first). Unknown names get 0.
struct PciIdEntry {
  std::string_view name_part;
  unsigned device_id;
};
constexpr PciIdEntry kPciIds[] = {
    {"GH200", 0x2342},
    {"H200", 0x2335},
    {"H100 NVL", 0x2321},
    {"H100 PCIe", 0x2331},
    {"H100", 0x2330},
    {"B200", 0x2901},
    {"A100 80GB PCIe", 0x20B5},
    {"A100-SXM4-80GB", 0x20B2},
    {"A100 80GB", 0x20B2},
    {"A100", 0x20B0},
    {"L40S", 0x26B9},
    {"L40", 0x26B5},
    {"L4", 0x27B8},
    {"A10", 0x2236},
    {"T4", 0x1EB8},
    {"V100", 0x1DB1},
};

// PCI buses of the eight GPUs on a typical HGX baseboard; more GPUs move to the next domain.
constexpr unsigned kDefaultBuses[8] = {0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB};

std::string FormatUuid(std::string_view prefix, uint64_t a, uint64_t b) {
  return fmt::format("{}{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", prefix, a >> 32, (a >> 16) & 0xFFFF,
                     a & 0xFFF, 0x8000 | ((b >> 48) & 0x3FFF), b & 0xFFFFFFFFFFFFULL);
}

// The size a MIG profile names, in GiB ("3g.40gb" -> 40), if it names one.
std::optional<double> ProfileSizeGib(std::string_view profile) {
  auto g = profile.find('.');
  auto gb = scenario_internal::Lower(profile).rfind("gb");
  if (g == std::string_view::npos || gb == std::string::npos || gb <= g) {
    return std::nullopt;
  }
  auto v = ParseNumber(profile.substr(g + 1, gb - g - 1));
  if (!v) {
    return std::nullopt;
  }
  return *v;
}

}  // namespace

std::string_view ArchitectureName(Architecture arch) {
  for (const auto& e : kArchitectures) {
    if (e.arch == arch) {
      return e.name;
    }
  }
  return "unknown";
}

TemperatureThresholds DefaultTemperatureThresholds(Architecture arch) {
  for (const auto& e : kArchitectures) {
    if (e.arch == arch) {
      return e.thresholds;
    }
  }
  return {};
}

namespace scenario_internal {

using base::Error;
using base::Result;
using base::Status;

const MigInstanceSpec* FindInstance(const DeviceSpec& d, unsigned gi, unsigned ci) {
  for (const auto& inst : d.mig.instances) {
    if (inst.gpu_instance_id == gi && inst.compute_instance_id == ci) {
      return &inst;
    }
  }
  return nullptr;
}

Result<DeviceSpec> Parser::ParseDevice(const YAML::Node& n, const std::string& path,
                                       unsigned index) const {
  WARPSCOPE_RETURN_IF_ERROR(CheckKeys(n, path, {"repeat",        "overrides",
                                                "name",          "architecture",
                                                "uuid",          "pci_bus_id",
                                                "pci_device_id", "serial",
                                                "minor_number",  "compute_capability",
                                                "memory_total",  "memory_reserved",
                                                "power_limit",   "enforced_power_limit",
                                                "max_sm_clock",  "max_mem_clock",
                                                "nvlink_links",  "ecc",
                                                "signals",       "processes",
                                                "mig",           "faults",
                                                "shutdown_temperature",
                                                "slowdown_temperature",
                                                "memory_max_temperature",
                                                "max_operating_temperature"}));
  DeviceSpec d;
  d.index = index;
  d.minor_number = index;
  WARPSCOPE_RETURN_IF_ERROR(ParseModel(n, path, d));
  WARPSCOPE_RETURN_IF_ERROR(ParseIdentity(n, path, d));
  WARPSCOPE_RETURN_IF_ERROR(ParseMemoryAndPower(n, path, d));
  WARPSCOPE_RETURN_IF_ERROR(OptionalUInt(n, path, "max_sm_clock", 1, 10000, d.max_sm_clock));
  WARPSCOPE_RETURN_IF_ERROR(OptionalUInt(n, path, "max_mem_clock", 1, 50000, d.max_mem_clock));
  WARPSCOPE_RETURN_IF_ERROR(ParseTemperatureThresholds(n, path, d));
  WARPSCOPE_RETURN_IF_ERROR(OptionalUInt(n, path, "nvlink_links", 0, 36, d.nvlink_links));
  if (Present(n["ecc"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(d.ecc, Bool(n["ecc"], Join(path, "ecc")));
  }
  if (Present(n["signals"])) {
    WARPSCOPE_RETURN_IF_ERROR(ParseSignals(n["signals"], Join(path, "signals"), false, d.signals));
  }
  // MIG before processes and faults: both may name MIG instances.
  if (Present(n["mig"])) {
    WARPSCOPE_RETURN_IF_ERROR(ParseMig(n["mig"], Join(path, "mig"), d));
  }
  if (Present(n["processes"])) {
    WARPSCOPE_RETURN_IF_ERROR(ParseProcesses(n["processes"], Join(path, "processes"), d));
  }
  if (Present(n["faults"])) {
    WARPSCOPE_RETURN_IF_ERROR(ParseFaults(n["faults"], Join(path, "faults"), d));
  }
  return d;
}

// name, architecture, and the compute capability (the architecture's unless given).
Status Parser::ParseModel(const YAML::Node& n, const std::string& path, DeviceSpec& d) const {
  if (Present(n["name"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(d.name, Str(n["name"], Join(path, "name")));
    if (d.name.empty() || d.name.size() >= kAbiNameLimit) {
      return Err(n["name"], Join(path, "name"), "must be 1..95 characters");
    }
  }
  if (Present(n["architecture"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(std::string a, Str(n["architecture"], Join(path, "architecture")));
    const ArchEntry* found = nullptr;
    std::vector<std::string_view> names;
    for (const auto& e : kArchitectures) {
      names.push_back(e.name);
      if (e.name == Lower(a)) {
        found = &e;
      }
    }
    if (!found) {
      return Err(n["architecture"], Join(path, "architecture"),
                 fmt::format("unknown architecture '{}'.{} Use one of kepler, maxwell, "
                             "pascal, volta, turing, ampere, ada, hopper, blackwell",
                             a, Suggest(a, names)));
    }
    d.architecture = found->arch;
  }
  for (const auto& e : kArchitectures) {
    if (e.arch == d.architecture) {
      d.cc_major = e.cc_major;
      d.cc_minor = e.cc_minor;
    }
  }
  if (Present(n["compute_capability"])) {
    const std::string cpath = Join(path, "compute_capability");
    WARPSCOPE_ASSIGN_OR_RETURN(std::string cc, Str(n["compute_capability"], cpath));
    auto dot = cc.find('.');
    int major = -1, minor = -1;
    if (dot != std::string::npos) {
      std::from_chars(cc.data(), cc.data() + dot, major);
      std::from_chars(cc.data() + dot + 1, cc.data() + cc.size(), minor);
    }
    if (major < 1 || minor < 0 || major > 20 || minor > 9) {
      return Err(n["compute_capability"], cpath,
                 fmt::format("'{}' is not a compute capability; write e.g. \"9.0\"", cc));
    }
    d.cc_major = major;
    d.cc_minor = minor;
  }
  return base::OkStatus();
}

// uuid, PCI bus id and device id, serial and minor number; generated ones where not given.
Status Parser::ParseIdentity(const YAML::Node& n, const std::string& path, DeviceSpec& d) const {
  {
    uint64_t a = Mix64(seed_ ^ Mix64(d.index + 1));
    uint64_t b = Mix64(a);
    d.uuid = FormatUuid("GPU-", a, b);
    d.serial = fmt::format("1654{:09}", b % 1000000000ULL);
  }
  if (Present(n["uuid"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(d.uuid, Str(n["uuid"], Join(path, "uuid")));
    if (d.uuid.rfind("GPU-", 0) != 0 || d.uuid.size() >= kAbiNameLimit) {
      return Err(n["uuid"], Join(path, "uuid"),
                 fmt::format("'{}' is not a GPU UUID; write GPU-xxxxxxxx-xxxx-xxxx-xxxx-"
                             "xxxxxxxxxxxx (or omit it for a generated one)",
                             d.uuid));
    }
  }
  d.pci_domain = d.index / 8;
  d.pci_bus = kDefaultBuses[d.index % 8];
  d.pci_device = 0;
  if (Present(n["pci_bus_id"])) {
    WARPSCOPE_RETURN_IF_ERROR(ParsePciBusId(n["pci_bus_id"], Join(path, "pci_bus_id"), d));
  }
  for (const auto& e : kPciIds) {
    if (d.name.find(e.name_part) != std::string::npos) {
      d.pci_device_id = e.device_id;
      break;
    }
  }
  WARPSCOPE_RETURN_IF_ERROR(OptionalUInt(n, path, "pci_device_id", 0, 0xFFFF, d.pci_device_id));
  if (Present(n["serial"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(d.serial, Str(n["serial"], Join(path, "serial")));
    if (d.serial.empty() || d.serial.size() >= nvml::abi::kDeviceSerialBufferSize) {
      return Err(n["serial"], Join(path, "serial"), "must be 1..29 characters");
    }
  }
  return OptionalUInt(n, path, "minor_number", 0, 255, d.minor_number);
}

Status Parser::ParsePciBusId(const YAML::Node& n, const std::string& path, DeviceSpec& d) const {
  WARPSCOPE_ASSIGN_OR_RETURN(std::string text, Str(n, path));
  // DDDDDDDD:BB:DD.F or DDDD:BB:DD.F (hex).
  auto bad = [&] {
    return Err(n, path,
               fmt::format("'{}' is not a PCI bus id; write DDDDDDDD:BB:DD.F in hex, e.g. "
                           "00000000:18:00.0",
                           text));
  };
  auto parts = base::SplitString(text, ":");
  if (parts.size() != 3) {
    return bad();
  }
  auto dot = parts[2].find('.');
  if (dot == std::string_view::npos) {
    return bad();
  }
  auto hex = [](std::string_view s, unsigned& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
    return !s.empty() && ec == std::errc() && p == s.data() + s.size();
  };
  unsigned function = 0;
  if ((parts[0].size() != 4 && parts[0].size() != 8) || parts[1].size() != 2 ||
      !hex(parts[0], d.pci_domain) || !hex(parts[1], d.pci_bus) ||
      !hex(parts[2].substr(0, dot), d.pci_device) || !hex(parts[2].substr(dot + 1), function)) {
    return bad();
  }
  if (d.pci_device > 0x1F || function > 7) {
    return Err(n, path, fmt::format("'{}': device must be 00..1F and function 0..7", text));
  }
  return base::OkStatus();
}

// memory_total, memory_reserved (the driver's share, 1/128 of the total unless given) and the
// power limits (the enforced one defaults to power_limit).
Status Parser::ParseMemoryAndPower(const YAML::Node& n, const std::string& path,
                                   DeviceSpec& d) const {
  d.memory_total = 80.0 * (1ULL << 30);
  if (Present(n["memory_total"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(
        d.memory_total, Quantity(n["memory_total"], Join(path, "memory_total"), Unit::kBytes));
    if (d.memory_total <= 0) {
      return Err(n["memory_total"], Join(path, "memory_total"), "must be more than 0");
    }
  }
  d.memory_reserved = std::floor(d.memory_total / 128);
  WARPSCOPE_RETURN_IF_ERROR(
      OptionalQuantity(n, path, "memory_reserved", Unit::kBytes, d.memory_reserved));
  if (d.memory_reserved >= d.memory_total) {
    return Err(n["memory_reserved"].IsDefined() ? n["memory_reserved"] : n,
               Join(path, "memory_reserved"),
               "must be smaller than memory_total (it is the driver's share of it)");
  }
  WARPSCOPE_RETURN_IF_ERROR(ParsePowerLimit(n, path, "power_limit", d.power_limit_w));
  d.enforced_power_limit_w = d.power_limit_w;
  return ParsePowerLimit(n, path, "enforced_power_limit", d.enforced_power_limit_w);
}

Status Parser::ParsePowerLimit(const YAML::Node& n, const std::string& path, const char* key,
                               double& out) const {
  if (Present(n[key])) {
    WARPSCOPE_ASSIGN_OR_RETURN(out, Quantity(n[key], Join(path, key), Unit::kWatts));
    if (out <= 0 || out > 5000) {
      return Err(n[key], Join(path, key), "must be between 1 and 5000 W");
    }
  }
  return base::OkStatus();
}

// The temperature thresholds: the architecture's, each replaced by its key when given (a whole
// number of °C, or `none`: the board does not report that threshold).
Status Parser::ParseTemperatureThresholds(const YAML::Node& n, const std::string& path,
                                          DeviceSpec& d) const {
  d.temperature_thresholds = DefaultTemperatureThresholds(d.architecture);
  for (unsigned i = 0; i < kTemperatureThresholdCount; ++i) {
    const YAML::Node v = n[kThresholdKeys[i]];
    if (!Present(v)) {
      continue;
    }
    const std::string kpath = Join(path, kThresholdKeys[i]);
    WARPSCOPE_ASSIGN_OR_RETURN(std::string text, Str(v, kpath));
    if (Lower(text) == "none") {
      d.temperature_thresholds[i].reset();
      continue;
    }
    base::Result<double> celsius = ParseNumber(text);
    if (!celsius || *celsius != std::floor(*celsius) || *celsius < 1 || *celsius > 200) {
      return Err(v, kpath,
                 fmt::format("'{}' is not a threshold; write whole degrees Celsius 1..200 (e.g. "
                             "89), or none when the board does not report it",
                             text));
    }
    d.temperature_thresholds[i] = static_cast<unsigned>(*celsius);
  }
  return base::OkStatus();
}

Status Parser::ParseMig(const YAML::Node& n, const std::string& path, DeviceSpec& d) const {
  if (!n.IsMap()) {
    return Err(n, path, "expected a map such as {enabled: true, instances: [...]}");
  }
  WARPSCOPE_RETURN_IF_ERROR(CheckKeys(n, path, {"enabled", "max_devices", "instances"}));
  if (Present(n["enabled"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(d.mig.enabled, Bool(n["enabled"], Join(path, "enabled")));
  }
  if (d.mig.enabled && !d.SupportsMig()) {
    return Err(n["enabled"], Join(path, "enabled"),
               fmt::format("MIG needs an ampere or newer GPU but this one is {}; change "
                           "architecture or remove mig",
                           ArchitectureName(d.architecture)));
  }
  WARPSCOPE_RETURN_IF_ERROR(
      OptionalUInt(n, path, "max_devices", 1, kMaxMigSlots, d.mig.max_devices));
  if (!Present(n["instances"])) {
    return base::OkStatus();
  }
  const YAML::Node list = n["instances"];
  const std::string lpath = Join(path, "instances");
  if (!list.IsSequence()) {
    return Err(list, lpath, "expected a list of MIG instances");
  }
  if (!d.mig.enabled && list.size() > 0) {
    return Err(list, lpath, "MIG instances need mig.enabled: true");
  }
  double memory_sum = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node m = list[i];
    const std::string ipath = Index(lpath, i);
    MigInstanceSpec inst;
    WARPSCOPE_RETURN_IF_ERROR(ParseMigInstance(m, ipath, i, d, inst));
    memory_sum += inst.memory_total;
    for (const auto& other : d.mig.instances) {
      if (other.slot == inst.slot) {
        return Err(m, ipath,
                   fmt::format("index {} is used twice; give each instance its own "
                               "index",
                               inst.slot));
      }
      if (other.gpu_instance_id == inst.gpu_instance_id &&
          other.compute_instance_id == inst.compute_instance_id) {
        return Err(m, ipath,
                   fmt::format("gpu_instance_id {} / compute_instance_id {} is used twice",
                               inst.gpu_instance_id, inst.compute_instance_id));
      }
    }
    d.mig.instances.push_back(std::move(inst));
  }
  if (memory_sum > d.memory_total) {
    return Err(list, lpath,
               "the instances' memory_total add up to more than the GPU's "
               "memory_total");
  }
  return base::OkStatus();
}

// mig.instances[i] on its own; ParseMig checks it against the others.
Status Parser::ParseMigInstance(const YAML::Node& m, const std::string& ipath, size_t i,
                                const DeviceSpec& d, MigInstanceSpec& inst) const {
  if (!m.IsMap()) {
    return Err(m, ipath, "expected a map such as {gpu_instance_id: 1, profile: 1g.10gb}");
  }
  WARPSCOPE_RETURN_IF_ERROR(CheckKeys(m, ipath,
                                      {"index", "gpu_instance_id", "compute_instance_id", "profile",
                                       "uuid", "memory_total", "signals"}));
  inst.slot = static_cast<unsigned>(i);
  if (Present(m["index"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(inst.slot,
                               UInt(m["index"], Join(ipath, "index"), 0, d.mig.max_devices - 1));
  } else if (i >= d.mig.max_devices) {
    return Err(m, ipath,
               fmt::format("more instances than mig.max_devices ({})", d.mig.max_devices));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node gi,
                             Required(m, ipath, "gpu_instance_id", "gpu_instance_id: 1"));
  WARPSCOPE_ASSIGN_OR_RETURN(inst.gpu_instance_id, UInt(gi, Join(ipath, "gpu_instance_id"), 0, 31));
  WARPSCOPE_RETURN_IF_ERROR(
      OptionalUInt(m, ipath, "compute_instance_id", 0, 31, inst.compute_instance_id));
  WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node profile,
                             Required(m, ipath, "profile", "profile: \"1g.10gb\""));
  WARPSCOPE_ASSIGN_OR_RETURN(inst.profile, Str(profile, Join(ipath, "profile")));
  if (inst.profile.empty() || inst.profile.size() > 32) {
    return Err(profile, Join(ipath, "profile"), "must be 1..32 characters, e.g. 1g.10gb");
  }
  WARPSCOPE_RETURN_IF_ERROR(ParseMigMemory(m, ipath, inst));
  {
    uint64_t a =
        Mix64(seed_ ^ Mix64((d.index + 1) * 1000003ULL + uint64_t{inst.gpu_instance_id} * 64 +
                            inst.compute_instance_id));
    inst.uuid = FormatUuid("MIG-", a, Mix64(a));
  }
  if (Present(m["uuid"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(inst.uuid, Str(m["uuid"], Join(ipath, "uuid")));
    if (inst.uuid.rfind("MIG-", 0) != 0 || inst.uuid.size() >= kAbiNameLimit) {
      return Err(m["uuid"], Join(ipath, "uuid"),
                 "a MIG UUID starts with MIG- (omit it for a generated one)");
    }
  }
  if (Present(m["signals"])) {
    WARPSCOPE_RETURN_IF_ERROR(
        ParseSignals(m["signals"], Join(ipath, "signals"), true, inst.signals));
  }
  return base::OkStatus();
}

// memory_total of a MIG instance, or the size its profile names ("3g.40gb" -> 40 GiB).
Status Parser::ParseMigMemory(const YAML::Node& m, const std::string& ipath,
                              MigInstanceSpec& inst) const {
  if (Present(m["memory_total"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(
        inst.memory_total, Quantity(m["memory_total"], Join(ipath, "memory_total"), Unit::kBytes));
  } else {
    std::optional<double> v = ProfileSizeGib(inst.profile);
    if (!v || *v <= 0) {
      return Err(m, Join(ipath, "memory_total"),
                 fmt::format("missing, and the profile '{}' does not name a size like "
                             "1g.10gb; add e.g. memory_total: 10GiB",
                             inst.profile));
    }
    inst.memory_total = *v * (1ULL << 30);
  }
  if (inst.memory_total <= 0) {
    return Err(m["memory_total"], Join(ipath, "memory_total"), "must be more than 0");
  }
  return base::OkStatus();
}

Status Parser::ParseProcesses(const YAML::Node& n, const std::string& path, DeviceSpec& d) const {
  if (!n.IsSequence()) {
    return Err(n, path, "expected a list of processes");
  }
  for (size_t i = 0; i < n.size(); ++i) {
    ProcessSpec proc;
    WARPSCOPE_RETURN_IF_ERROR(ParseProcess(n[i], Index(path, i), d, proc));
    d.processes.push_back(std::move(proc));
  }
  return base::OkStatus();
}

Status Parser::ParseProcess(const YAML::Node& p, const std::string& ppath, const DeviceSpec& d,
                            ProcessSpec& proc) const {
  if (!p.IsMap()) {
    return Err(p, ppath, "expected a map such as {pid: 4100, name: python3, memory: 60GiB}");
  }
  WARPSCOPE_RETURN_IF_ERROR(
      CheckKeys(p, ppath,
                {"pid", "name", "type", "start", "stop", "memory", "sm_util", "mem_util",
                 "gpu_instance_id", "compute_instance_id", "host", "workload", "slowdown"}));
  WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node pid, Required(p, ppath, "pid", "pid: 41000"));
  WARPSCOPE_ASSIGN_OR_RETURN(proc.pid, UInt(pid, Join(ppath, "pid"), 1, 4194304));
  if (Present(p["name"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(proc.name, Str(p["name"], Join(ppath, "name")));
    if (proc.name.empty() || proc.name.size() > 255) {
      return Err(p["name"], Join(ppath, "name"), "must be 1..255 characters");
    }
  }
  if (Present(p["type"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(std::string type, Str(p["type"], Join(ppath, "type")));
    if (type == "compute") {
      proc.type = ProcessType::kCompute;
    } else if (type == "graphics") {
      proc.type = ProcessType::kGraphics;
    } else {
      return Err(p["type"], Join(ppath, "type"),
                 fmt::format("unknown process type '{}'; use compute or graphics", type));
    }
  }
  WARPSCOPE_RETURN_IF_ERROR(OptionalQuantity(p, ppath, "start", Unit::kSeconds, proc.start_s));
  if (Present(p["stop"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(proc.stop_s,
                               Quantity(p["stop"], Join(ppath, "stop"), Unit::kSeconds));
    if (proc.stop_s <= proc.start_s) {
      return Err(p["stop"], Join(ppath, "stop"), "must be later than start");
    }
  }
  for (auto [key, signal, unit] : {std::tuple{"memory", &proc.memory, Unit::kBytes},
                                   std::tuple{"sm_util", &proc.sm_util, Unit::kNumber},
                                   std::tuple{"mem_util", &proc.mem_util, Unit::kNumber}}) {
    if (Present(p[key])) {
      WARPSCOPE_ASSIGN_OR_RETURN(*signal, ParseSignal(p[key], Join(ppath, key), unit));
    }
  }
  WARPSCOPE_RETURN_IF_ERROR(
      OptionalUInt(p, ppath, "compute_instance_id", 0, 31, proc.compute_instance_id));
  if (Present(p["workload"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(proc.workload, Str(p["workload"], Join(ppath, "workload")));
    if (!IsKnownWorkload(proc.workload)) {
      return Err(p["workload"], Join(ppath, "workload"),
                 fmt::format("unknown workload '{}'; use one of {}", proc.workload,
                             KnownWorkloadList()));
    }
  }
  if (Present(p["slowdown"])) {
    WARPSCOPE_RETURN_IF_ERROR(
        OptionalQuantity(p, ppath, "slowdown", Unit::kNumber, proc.slowdown_percent));
    if (proc.workload != kDdpWorkload) {
      return Err(p["slowdown"], Join(ppath, "slowdown"),
                 fmt::format("only for workload: {} (a rank that computes slower); remove it",
                             kDdpWorkload));
    }
    if (!(proc.slowdown_percent >= 0 && proc.slowdown_percent <= 400)) {
      return Err(p["slowdown"], Join(ppath, "slowdown"),
                 "must be a percentage 0..400 (20 computes 20 % longer)");
    }
  }
  if (Present(p["host"])) {
    HostProcessSpec host;
    WARPSCOPE_RETURN_IF_ERROR(ParseProcessHost(p["host"], Join(ppath, "host"), proc, host));
    proc.host = std::move(host);
  }
  return ParseProcessMig(p, ppath, d, proc);
}

// gpu_instance_id: required on a MIG-enabled GPU and naming one of its instances, else absent.
Status Parser::ParseProcessMig(const YAML::Node& p, const std::string& ppath, const DeviceSpec& d,
                               ProcessSpec& proc) const {
  if (!Present(p["gpu_instance_id"])) {
    if (d.mig.enabled) {
      return Err(p, Join(ppath, "gpu_instance_id"),
                 "missing; on a MIG-enabled GPU every process runs in a MIG instance");
    }
    return base::OkStatus();
  }
  WARPSCOPE_ASSIGN_OR_RETURN(unsigned gi,
                             UInt(p["gpu_instance_id"], Join(ppath, "gpu_instance_id"), 0, 31));
  proc.gpu_instance_id = gi;
  if (!d.mig.enabled) {
    return Err(p["gpu_instance_id"], Join(ppath, "gpu_instance_id"),
               "only for GPUs with mig.enabled: true; remove it");
  }
  if (!FindInstance(d, gi, proc.compute_instance_id)) {
    return Err(p["gpu_instance_id"], Join(ppath, "gpu_instance_id"),
               fmt::format("no MIG instance with gpu_instance_id {} and "
                           "compute_instance_id {} under mig.instances",
                           gi, proc.compute_instance_id));
  }
  return base::OkStatus();
}

}  // namespace scenario_internal
}  // namespace warpscope::sim
