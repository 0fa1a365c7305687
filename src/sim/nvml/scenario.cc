// SPDX-License-Identifier: Apache-2.0
#include "sim/nvml/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <map>

#include "base/file_util.h"
#include "nvml/abi.h"

namespace warpscope::sim {
namespace {

namespace abi = ::warpscope::nvml::abi;
using base::Error;
using base::Result;
using base::Status;

constexpr std::string_view kKnownFunctions[] = {
#define WARPSCOPE_SIM_NAME(ret, name, params) #name,
    WARPSCOPE_NVML_FUNCTIONS(WARPSCOPE_SIM_NAME) WARPSCOPE_NVML_LEGACY_FUNCTIONS(WARPSCOPE_SIM_NAME)
#undef WARPSCOPE_SIM_NAME
};

struct ArchEntry {
  std::string_view name;
  Architecture arch;
  int cc_major;
  int cc_minor;
};
constexpr ArchEntry kArchitectures[] = {
    {"kepler", Architecture::kKepler, 3, 7},
    {"maxwell", Architecture::kMaxwell, 5, 2},
    {"pascal", Architecture::kPascal, 6, 0},
    {"volta", Architecture::kVolta, 7, 0},
    {"turing", Architecture::kTuring, 7, 5},
    {"ampere", Architecture::kAmpere, 8, 0},
    {"ada", Architecture::kAda, 8, 9},
    {"hopper", Architecture::kHopper, 9, 0},
    {"blackwell", Architecture::kBlackwell, 10, 0},
};

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

bool Present(const YAML::Node& n) { return n.IsDefined() && !n.IsNull(); }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    prev[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

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

std::string Join(std::string_view path, std::string_view key) {
  if (path.empty()) {
    return std::string(key);
  }
  return fmt::format("{}.{}", path, key);
}

std::string Index(std::string_view path, size_t i) { return fmt::format("{}[{}]", path, i); }

std::string FormatUuid(std::string_view prefix, uint64_t a, uint64_t b) {
  return fmt::format("{}{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", prefix, a >> 32, (a >> 16) & 0xFFFF,
                     a & 0xFFF, 0x8000 | ((b >> 48) & 0x3FFF), b & 0xFFFFFFFFFFFFULL);
}

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

class Parser {
 public:
  explicit Parser(std::string source) : source_(std::move(source)) {}

  Result<Scenario> Parse(const YAML::Node& root) {
    Scenario s;
    s.source = source_;
    if (!root.IsMap()) {
      return Error(Err(root, "",
                       "the scenario must be a YAML map with at least 'name' and "
                       "'devices'; see docs/simulator.md"));
    }
    WARPSCOPE_RETURN_IF_ERROR(
        CheckKeys(root, "", {"name", "description", "seed", "driver", "devices"}));
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
    return s;
  }

 private:
  // "file:line: path: message". Error nodes may be missing (absent keys), then no line is given.
  Status Err(const YAML::Node& node, std::string_view path, std::string_view message) const {
    std::string where = source_;
    try {
      if (node.IsDefined() && node.Mark().line >= 0) {
        where = fmt::format("{}:{}", source_, node.Mark().line + 1);
      }
    } catch (...) {
      // An invalid node has no position; report the file only.
    }
    std::string full_path(path);
    if (!device_note_.empty()) {
      full_path += device_note_;
    }
    if (full_path.empty()) {
      return base::InvalidArgument("{}: {}", where, message);
    }
    return base::InvalidArgument("{}: {}: {}", where, full_path, message);
  }

  Status CheckKeys(const YAML::Node& map, std::string_view path,
                   std::initializer_list<std::string_view> allowed) const {
    for (const auto& kv : map) {
      if (!kv.first.IsScalar()) {
        return Err(kv.first, path, "keys must be plain names");
      }
      const std::string& key = kv.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string list;
        for (std::string_view a : allowed) {
          list += list.empty() ? "" : ", ";
          list += a;
        }
        return Err(
            kv.first, Join(path, key),
            fmt::format("unknown key '{}'.{} Allowed here: {}", key, Suggest(key, allowed), list));
      }
    }
    return base::OkStatus();
  }

  Result<std::string> Str(const YAML::Node& n, std::string_view path) const {
    if (!n.IsScalar()) {
      return Error(Err(n, path, "expected a single value, not a list or map"));
    }
    std::string v = n.Scalar();
    if (index_) {
      std::string idx = std::to_string(*index_);
      for (size_t pos = v.find("{i}"); pos != std::string::npos; pos = v.find("{i}", pos)) {
        v.replace(pos, 3, idx);
        pos += idx.size();
      }
    }
    return v;
  }

  Result<double> Quantity(const YAML::Node& n, std::string_view path, Unit unit) const {
    WARPSCOPE_ASSIGN_OR_RETURN(std::string text, Str(n, path));
    auto v = ParseQuantity(text, unit);
    if (!v) {
      return Error(
          Err(n, path, fmt::format("{}; expected {}", v.error().message(), UnitHint(unit))));
    }
    if (std::fabs(*v) > kMaxQuantity) {
      return Error(Err(n, path,
                       fmt::format("'{}' is too large; scenario values are limited to +-{:g} so "
                                   "that the simulated counters cannot overflow",
                                   text, kMaxQuantity)));
    }
    return *v;
  }

  Result<unsigned> UInt(const YAML::Node& n, std::string_view path, uint64_t min,
                        uint64_t max) const {
    WARPSCOPE_ASSIGN_OR_RETURN(std::string text, Str(n, path));
    auto v = ParseNumber(text);
    if (!v || *v != std::floor(*v)) {
      return Error(Err(n, path, fmt::format("'{}' is not a whole number", text)));
    }
    if (*v < static_cast<double>(min) || *v > static_cast<double>(max)) {
      return Error(Err(n, path, fmt::format("{} is out of range; use {}..{}", text, min, max)));
    }
    return static_cast<unsigned>(*v);
  }

  Result<uint64_t> Seed(const YAML::Node& n, std::string_view path) const {
    WARPSCOPE_ASSIGN_OR_RETURN(std::string text, Str(n, path));
    uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size()) {
      return Error(Err(n, path, fmt::format("'{}' is not a non-negative integer", text)));
    }
    return v;
  }

  Result<bool> Bool(const YAML::Node& n, std::string_view path) const {
    WARPSCOPE_ASSIGN_OR_RETURN(std::string text, Str(n, path));
    std::string v = Lower(text);
    if (v == "true" || v == "yes" || v == "on") {
      return true;
    }
    if (v == "false" || v == "no" || v == "off") {
      return false;
    }
    return Error(Err(n, path, fmt::format("'{}' is not a boolean; use true or false", text)));
  }

  // A required key of `map`, or an error naming it.
  Result<YAML::Node> Required(const YAML::Node& map, std::string_view path, std::string_view key,
                              std::string_view example) const {
    YAML::Node n = map[std::string(key)];
    if (!Present(n)) {
      return Error(Err(map, Join(path, key), fmt::format("missing; add e.g. {}", example)));
    }
    return n;
  }

  Result<Signal> ParseSignal(const YAML::Node& n, std::string_view path, Unit unit) const {
    if (n.IsScalar()) {
      WARPSCOPE_ASSIGN_OR_RETURN(double v, Quantity(n, path, unit));
      return Signal::Constant(v);
    }
    if (!n.IsMap()) {
      return Error(Err(n, path,
                       "expected a number or a spec such as {ramp: {from: 0, to: 100, duration: "
                       "10m}}"));
    }
    WARPSCOPE_RETURN_IF_ERROR(
        CheckKeys(n, path, {"constant", "ramp", "sine", "step", "piecewise", "noise"}));
    Signal s;
    if (Present(n["noise"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(s.noise, Quantity(n["noise"], Join(path, "noise"), unit));
      if (s.noise < 0) {
        return Error(
            Err(n["noise"], Join(path, "noise"), "must be >= 0 (it is the standard deviation)"));
      }
    }
    std::vector<std::string_view> shapes;
    for (std::string_view k : {"constant", "ramp", "sine", "step", "piecewise"}) {
      if (n[std::string(k)].IsDefined()) {
        shapes.push_back(k);
      }
    }
    if (shapes.empty()) {
      return Error(Err(n, path,
                       "no shape given; add one of constant, ramp, sine, step or piecewise "
                       "(noise alone is not a signal)"));
    }
    if (shapes.size() > 1) {
      return Error(
          Err(n, path,
              fmt::format("has both '{}' and '{}'; a signal has one shape", shapes[0], shapes[1])));
    }
    const std::string kind(shapes[0]);
    const std::string kpath = Join(path, kind);
    const YAML::Node spec = n[kind];
    if (kind == "constant") {
      s.kind = SignalKind::kConstant;
      WARPSCOPE_ASSIGN_OR_RETURN(s.value, Quantity(spec, kpath, unit));
      return s;
    }
    if (kind == "piecewise") {
      s.kind = SignalKind::kPiecewise;
      if (!spec.IsSequence() || spec.size() == 0) {
        return Error(Err(spec, kpath,
                         "expected a list of [time, value] points, e.g. "
                         "[[0s, 10], [1m, 80]]"));
      }
      for (size_t i = 0; i < spec.size(); ++i) {
        const YAML::Node p = spec[i];
        std::string ppath = Index(kpath, i);
        if (!p.IsSequence() || p.size() != 2) {
          return Error(Err(p, ppath, "expected a [time, value] pair such as [1m, 80]"));
        }
        WARPSCOPE_ASSIGN_OR_RETURN(double t, Quantity(p[0], ppath, Unit::kSeconds));
        WARPSCOPE_ASSIGN_OR_RETURN(double v, Quantity(p[1], ppath, unit));
        if (!s.points.empty() && t <= s.points.back().first) {
          return Error(Err(p, ppath, "point times must increase strictly; sort the points"));
        }
        s.points.emplace_back(t, v);
      }
      return s;
    }
    if (!spec.IsMap()) {
      return Error(Err(spec, kpath, fmt::format("expected a map of {} parameters", kind)));
    }
    if (kind == "ramp") {
      s.kind = SignalKind::kRamp;
      WARPSCOPE_RETURN_IF_ERROR(
          CheckKeys(spec, kpath, {"from", "to", "start", "duration"}));
      WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node from, Required(spec, kpath, "from", "from: 0"));
      WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node to, Required(spec, kpath, "to", "to: 100"));
      WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node dur,
                                 Required(spec, kpath, "duration", "duration: 10m"));
      WARPSCOPE_ASSIGN_OR_RETURN(s.from, Quantity(from, Join(kpath, "from"), unit));
      WARPSCOPE_ASSIGN_OR_RETURN(s.to, Quantity(to, Join(kpath, "to"), unit));
      WARPSCOPE_ASSIGN_OR_RETURN(s.duration_s,
                                 Quantity(dur, Join(kpath, "duration"), Unit::kSeconds));
      if (Present(spec["start"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(s.start_s,
                                   Quantity(spec["start"], Join(kpath, "start"), Unit::kSeconds));
      }
      return s;
    }
    if (kind == "sine") {
      s.kind = SignalKind::kSine;
      WARPSCOPE_RETURN_IF_ERROR(
          CheckKeys(spec, kpath, {"mean", "amplitude", "period", "phase"}));
      WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node mean, Required(spec, kpath, "mean", "mean: 50"));
      WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node period, Required(spec, kpath, "period", "period: 60s"));
      WARPSCOPE_ASSIGN_OR_RETURN(s.mean, Quantity(mean, Join(kpath, "mean"), unit));
      WARPSCOPE_ASSIGN_OR_RETURN(s.period_s,
                                 Quantity(period, Join(kpath, "period"), Unit::kSeconds));
      if (s.period_s <= 0) {
        return Error(Err(period, Join(kpath, "period"), "must be greater than 0s"));
      }
      if (Present(spec["amplitude"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(s.amplitude,
                                   Quantity(spec["amplitude"], Join(kpath, "amplitude"), unit));
      }
      if (Present(spec["phase"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(s.phase_s,
                                   Quantity(spec["phase"], Join(kpath, "phase"), Unit::kSeconds));
      }
      return s;
    }
    // step
    s.kind = SignalKind::kStep;
    WARPSCOPE_RETURN_IF_ERROR(CheckKeys(spec, kpath, {"before", "after", "at"}));
    WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node before, Required(spec, kpath, "before", "before: 0"));
    WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node after, Required(spec, kpath, "after", "after: 100"));
    WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node at, Required(spec, kpath, "at", "at: 5m"));
    WARPSCOPE_ASSIGN_OR_RETURN(s.before, Quantity(before, Join(kpath, "before"), unit));
    WARPSCOPE_ASSIGN_OR_RETURN(s.after, Quantity(after, Join(kpath, "after"), unit));
    WARPSCOPE_ASSIGN_OR_RETURN(s.at_s, Quantity(at, Join(kpath, "at"), Unit::kSeconds));
    return s;
  }

  Status ParseSignals(const YAML::Node& n, std::string_view path, bool mig_instance,
                      SignalTable& out) const {
    if (!n.IsMap()) {
      return Err(n, path, "expected a map of signal name to value, e.g. {gpu_util: 97}");
    }
    std::vector<std::string_view> names;
    for (const auto& info : AllSignals()) {
      if (!mig_instance || info.mig_instance) {
        names.push_back(info.name);
      }
    }
    for (const auto& kv : n) {
      const std::string name = kv.first.Scalar();
      const std::string spath = Join(path, name);
      auto id = FindSignal(name);
      if (!id || (mig_instance && !GetSignalInfo(*id).mig_instance)) {
        std::string list;
        for (std::string_view a : names) {
          list += list.empty() ? "" : ", ";
          list += a;
        }
        std::string_view what = mig_instance ? "MIG instance signal" : "signal";
        return Err(kv.first, spath,
                   fmt::format("unknown {} '{}'.{} Valid {}s: {}", what, name, Suggest(name, names),
                               what, list));
      }
      WARPSCOPE_ASSIGN_OR_RETURN(Signal s,
                                            ParseSignal(kv.second, spath, GetSignalInfo(*id).unit));
      out[static_cast<size_t>(*id)] = std::move(s);
    }
    return base::OkStatus();
  }

  Status ParseDriver(const YAML::Node& n, std::string_view path, DriverSpec& d) const {
    if (!n.IsMap()) {
      return Err(n, path, "expected a map, e.g. {version: \"550.127.08\"}");
    }
    WARPSCOPE_RETURN_IF_ERROR(CheckKeys(
        n, path, {"version", "nvml_version", "cuda_version", "missing_symbols", "process_stride"}));
    for (auto [key, field] : {std::pair<const char*, std::string*>{"version", &d.version},
                              {"nvml_version", &d.nvml_version}}) {
      if (Present(n[key])) {
        WARPSCOPE_ASSIGN_OR_RETURN(*field, Str(n[key], Join(path, key)));
        if (field->empty() || field->size() >= abi_string_limit_) {
          return Err(n[key], Join(path, key), "must be 1..79 characters");
        }
      }
    }
    if (Present(n["cuda_version"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(
          unsigned v, UInt(n["cuda_version"], Join(path, "cuda_version"), 1000, 99999));
      d.cuda_version = static_cast<int>(v);
    }
    if (Present(n["process_stride"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(
          d.process_stride, UInt(n["process_stride"], Join(path, "process_stride"), 0, 1024));
      if (d.process_stride != 24 && d.process_stride != 32) {
        return Err(n["process_stride"], Join(path, "process_stride"),
                   "must be 24 (most drivers) or 32 (R535.43-535.86 drivers)");
      }
    }
    if (Present(n["missing_symbols"])) {
      const YAML::Node list = n["missing_symbols"];
      const std::string lpath = Join(path, "missing_symbols");
      if (!list.IsSequence()) {
        return Err(list, lpath, "expected a list of NVML function names");
      }
      for (size_t i = 0; i < list.size(); ++i) {
        WARPSCOPE_ASSIGN_OR_RETURN(std::string name, Str(list[i], Index(lpath, i)));
        if (!IsKnownNvmlFunction(name)) {
          return Err(list[i], Index(lpath, i),
                     fmt::format("'{}' is not an NVML function the simulator exports.{} See "
                                 "WARPSCOPE_NVML_FUNCTIONS in src/nvml/abi.h",
                                 name, Suggest(name, kKnownFunctions)));
        }
        if (name == "nvmlErrorString" || name == "nvmlShutdown") {
          return Err(list[i], Index(lpath, i),
                     fmt::format("{} cannot be marked missing; every NVML library has it", name));
        }
        d.missing_symbols.insert(name);
      }
    }
    return base::OkStatus();
  }

  Status ParseDeviceEntry(const YAML::Node& entry, size_t entry_index, Scenario& s) {
    const std::string path = Index("devices", entry_index);
    if (!entry.IsMap()) {
      return Err(entry, path,
                 "expected a map describing a GPU, e.g. {name: \"NVIDIA H100 80GB "
                 "HBM3\", architecture: hopper}");
    }
    unsigned repeat = 1;
    if (Present(entry["repeat"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(
          repeat, UInt(entry["repeat"], Join(path, "repeat"), 1, kMaxDevices));
    }
    const auto first = static_cast<unsigned>(s.devices.size());
    if (first + repeat > kMaxDevices) {
      return Err(entry, path,
                 fmt::format("too many devices ({}); the simulator supports at most {}",
                             first + repeat, kMaxDevices));
    }
    std::map<unsigned, YAML::Node> overrides;
    if (Present(entry["overrides"])) {
      const YAML::Node o = entry["overrides"];
      const std::string opath = Join(path, "overrides");
      if (!o.IsMap()) {
        return Err(o, opath,
                   "expected a map of device index to changes, e.g. {\"3\": {signals: "
                   "{temperature: 81}}}");
      }
      for (const auto& kv : o) {
        const std::string key = kv.first.Scalar();
        auto idx = ParseNumber(key);
        if (!idx || *idx != std::floor(*idx) || *idx < first || *idx >= first + repeat) {
          return Err(kv.first, Join(opath, key),
                     fmt::format("'{}' is not a device index of this entry; use {}..{} (the "
                                 "NVML index, as in {{i}})",
                                 key, first, first + repeat - 1));
        }
        if (!kv.second.IsMap()) {
          return Err(kv.second, Join(opath, key), "expected a map of device keys to change");
        }
        if (kv.second["repeat"].IsDefined() || kv.second["overrides"].IsDefined()) {
          return Err(kv.second, Join(opath, key), "repeat and overrides cannot be overridden");
        }
        overrides[static_cast<unsigned>(*idx)] = kv.second;
      }
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

  Result<DeviceSpec> ParseDevice(const YAML::Node& n, const std::string& path, unsigned index) {
    WARPSCOPE_RETURN_IF_ERROR(
        CheckKeys(n, path, {"repeat",        "overrides",
                            "name",          "architecture",
                            "uuid",          "pci_bus_id",
                            "pci_device_id", "serial",
                            "minor_number",  "compute_capability",
                            "memory_total",  "memory_reserved",
                            "power_limit",   "enforced_power_limit",
                            "max_sm_clock",  "max_mem_clock",
                            "nvlink_links",  "ecc",
                            "signals",       "processes",
                            "mig",           "faults"}));
    DeviceSpec d;
    d.index = index;
    d.minor_number = index;
    if (Present(n["name"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(d.name, Str(n["name"], Join(path, "name")));
      if (d.name.empty() || d.name.size() >= abi_name_limit_) {
        return Error(Err(n["name"], Join(path, "name"), "must be 1..95 characters"));
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
        return Error(Err(n["architecture"], Join(path, "architecture"),
                         fmt::format("unknown architecture '{}'.{} Use one of kepler, maxwell, "
                                     "pascal, volta, turing, ampere, ada, hopper, blackwell",
                                     a, Suggest(a, names))));
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
        return Error(Err(n["compute_capability"], cpath,
                         fmt::format("'{}' is not a compute capability; write e.g. \"9.0\"", cc)));
      }
      d.cc_major = major;
      d.cc_minor = minor;
    }
    {
      uint64_t a = Mix64(seed_ ^ Mix64(index + 1));
      uint64_t b = Mix64(a);
      d.uuid = FormatUuid("GPU-", a, b);
      d.serial = fmt::format("1654{:09}", b % 1000000000ULL);
    }
    if (Present(n["uuid"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(d.uuid, Str(n["uuid"], Join(path, "uuid")));
      if (d.uuid.rfind("GPU-", 0) != 0 || d.uuid.size() >= abi_name_limit_) {
        return Error(Err(n["uuid"], Join(path, "uuid"),
                         fmt::format("'{}' is not a GPU UUID; write GPU-xxxxxxxx-xxxx-xxxx-xxxx-"
                                     "xxxxxxxxxxxx (or omit it for a generated one)",
                                     d.uuid)));
      }
    }
    d.pci_domain = index / 8;
    d.pci_bus = kDefaultBuses[index % 8];
    d.pci_device = 0;
    if (Present(n["pci_bus_id"])) {
      WARPSCOPE_RETURN_IF_ERROR(
          ParsePciBusId(n["pci_bus_id"], Join(path, "pci_bus_id"), d));
    }
    for (const auto& e : kPciIds) {
      if (d.name.find(e.name_part) != std::string::npos) {
        d.pci_device_id = e.device_id;
        break;
      }
    }
    if (Present(n["pci_device_id"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(d.pci_device_id,
                                 UInt(n["pci_device_id"], Join(path, "pci_device_id"), 0, 0xFFFF));
    }
    if (Present(n["serial"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(d.serial, Str(n["serial"], Join(path, "serial")));
      if (d.serial.empty() || d.serial.size() >= abi::kDeviceSerialBufferSize) {
        return Error(Err(n["serial"], Join(path, "serial"), "must be 1..29 characters"));
      }
    }
    if (Present(n["minor_number"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(d.minor_number,
                                 UInt(n["minor_number"], Join(path, "minor_number"), 0, 255));
    }
    d.memory_total = 80.0 * (1ULL << 30);
    if (Present(n["memory_total"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(
          d.memory_total, Quantity(n["memory_total"], Join(path, "memory_total"), Unit::kBytes));
      if (d.memory_total <= 0) {
        return Error(Err(n["memory_total"], Join(path, "memory_total"), "must be more than 0"));
      }
    }
    d.memory_reserved = std::floor(d.memory_total / 128);
    if (Present(n["memory_reserved"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(
          d.memory_reserved,
          Quantity(n["memory_reserved"], Join(path, "memory_reserved"), Unit::kBytes));
    }
    if (d.memory_reserved >= d.memory_total) {
      return Error(Err(n["memory_reserved"].IsDefined() ? n["memory_reserved"] : n,
                       Join(path, "memory_reserved"),
                       "must be smaller than memory_total (it is the driver's share of it)"));
    }
    if (Present(n["power_limit"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(
          d.power_limit_w, Quantity(n["power_limit"], Join(path, "power_limit"), Unit::kWatts));
      if (d.power_limit_w <= 0 || d.power_limit_w > 5000) {
        return Error(
            Err(n["power_limit"], Join(path, "power_limit"), "must be between 1 and 5000 W"));
      }
    }
    d.enforced_power_limit_w = d.power_limit_w;
    if (Present(n["enforced_power_limit"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(
          d.enforced_power_limit_w,
          Quantity(n["enforced_power_limit"], Join(path, "enforced_power_limit"), Unit::kWatts));
      if (d.enforced_power_limit_w <= 0 || d.enforced_power_limit_w > 5000) {
        return Error(Err(n["enforced_power_limit"], Join(path, "enforced_power_limit"),
                         "must be between 1 and 5000 W"));
      }
    }
    if (Present(n["max_sm_clock"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(d.max_sm_clock,
                                 UInt(n["max_sm_clock"], Join(path, "max_sm_clock"), 1, 10000));
    }
    if (Present(n["max_mem_clock"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(d.max_mem_clock,
                                 UInt(n["max_mem_clock"], Join(path, "max_mem_clock"), 1, 50000));
    }
    if (Present(n["nvlink_links"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(d.nvlink_links,
                                 UInt(n["nvlink_links"], Join(path, "nvlink_links"), 0, 36));
    }
    if (Present(n["ecc"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(d.ecc, Bool(n["ecc"], Join(path, "ecc")));
    }
    if (Present(n["signals"])) {
      WARPSCOPE_RETURN_IF_ERROR(
          ParseSignals(n["signals"], Join(path, "signals"), false, d.signals));
    }
    if (Present(n["mig"])) {
      WARPSCOPE_RETURN_IF_ERROR(ParseMig(n["mig"], Join(path, "mig"), d));
    }
    if (Present(n["processes"])) {
      WARPSCOPE_RETURN_IF_ERROR(
          ParseProcesses(n["processes"], Join(path, "processes"), d));
    }
    if (Present(n["faults"])) {
      WARPSCOPE_RETURN_IF_ERROR(ParseFaults(n["faults"], Join(path, "faults"), d));
    }
    return d;
  }

  Status ParsePciBusId(const YAML::Node& n, const std::string& path, DeviceSpec& d) const {
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

  Status ParseMig(const YAML::Node& n, const std::string& path, DeviceSpec& d) const {
    if (!n.IsMap()) {
      return Err(n, path, "expected a map such as {enabled: true, instances: [...]}");
    }
    WARPSCOPE_RETURN_IF_ERROR(CheckKeys(n, path, {"enabled", "max_devices", "instances"}));
    if (Present(n["enabled"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(d.mig.enabled,
                                            Bool(n["enabled"], Join(path, "enabled")));
    }
    if (d.mig.enabled && !d.SupportsMig()) {
      return Err(n["enabled"], Join(path, "enabled"),
                 fmt::format("MIG needs an ampere or newer GPU but this one is {}; change "
                             "architecture or remove mig",
                             ArchitectureName(d.architecture)));
    }
    if (Present(n["max_devices"])) {
      WARPSCOPE_ASSIGN_OR_RETURN(
          d.mig.max_devices, UInt(n["max_devices"], Join(path, "max_devices"), 1, kMaxMigSlots));
    }
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
      if (!m.IsMap()) {
        return Err(m, ipath, "expected a map such as {gpu_instance_id: 1, profile: 1g.10gb}");
      }
      WARPSCOPE_RETURN_IF_ERROR(CheckKeys(m, ipath,
                                          {"index", "gpu_instance_id", "compute_instance_id",
                                           "profile", "uuid", "memory_total", "signals"}));
      MigInstanceSpec inst;
      inst.slot = static_cast<unsigned>(i);
      if (Present(m["index"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(
            inst.slot, UInt(m["index"], Join(ipath, "index"), 0, d.mig.max_devices - 1));
      } else if (i >= d.mig.max_devices) {
        return Err(m, ipath,
                   fmt::format("more instances than mig.max_devices ({})", d.mig.max_devices));
      }
      WARPSCOPE_ASSIGN_OR_RETURN(
          YAML::Node gi, Required(m, ipath, "gpu_instance_id", "gpu_instance_id: 1"));
      WARPSCOPE_ASSIGN_OR_RETURN(inst.gpu_instance_id,
                                            UInt(gi, Join(ipath, "gpu_instance_id"), 0, 31));
      if (Present(m["compute_instance_id"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(
            inst.compute_instance_id,
            UInt(m["compute_instance_id"], Join(ipath, "compute_instance_id"), 0, 31));
      }
      WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node profile,
                                            Required(m, ipath, "profile", "profile: \"1g.10gb\""));
      WARPSCOPE_ASSIGN_OR_RETURN(inst.profile, Str(profile, Join(ipath, "profile")));
      if (inst.profile.empty() || inst.profile.size() > 32) {
        return Err(profile, Join(ipath, "profile"), "must be 1..32 characters, e.g. 1g.10gb");
      }
      if (Present(m["memory_total"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(
            inst.memory_total,
            Quantity(m["memory_total"], Join(ipath, "memory_total"), Unit::kBytes));
      } else {
        // "3g.40gb" -> 40 GiB.
        auto g = inst.profile.find(".");
        auto gb = Lower(inst.profile).rfind("gb");
        auto v = (g != std::string::npos && gb != std::string::npos && gb > g)
                     ? ParseNumber(std::string_view(inst.profile).substr(g + 1, gb - g - 1))
                     : base::Result<double>(base::Error(base::InvalidArgument("")));
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
      memory_sum += inst.memory_total;
      {
        uint64_t a = Mix64(seed_ ^ Mix64((d.index + 1) * 1000003ULL + inst.gpu_instance_id * 64 +
                                         inst.compute_instance_id));
        inst.uuid = FormatUuid("MIG-", a, Mix64(a));
      }
      if (Present(m["uuid"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(inst.uuid, Str(m["uuid"], Join(ipath, "uuid")));
        if (inst.uuid.rfind("MIG-", 0) != 0 || inst.uuid.size() >= abi_name_limit_) {
          return Err(m["uuid"], Join(ipath, "uuid"),
                     "a MIG UUID starts with MIG- (omit it for a generated one)");
        }
      }
      if (Present(m["signals"])) {
        WARPSCOPE_RETURN_IF_ERROR(
            ParseSignals(m["signals"], Join(ipath, "signals"), true, inst.signals));
      }
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

  const MigInstanceSpec* FindInstance(const DeviceSpec& d, unsigned gi, unsigned ci) const {
    for (const auto& inst : d.mig.instances) {
      if (inst.gpu_instance_id == gi && inst.compute_instance_id == ci) {
        return &inst;
      }
    }
    return nullptr;
  }

  Status ParseProcesses(const YAML::Node& n, const std::string& path, DeviceSpec& d) const {
    if (!n.IsSequence()) {
      return Err(n, path, "expected a list of processes");
    }
    for (size_t i = 0; i < n.size(); ++i) {
      const YAML::Node p = n[i];
      const std::string ppath = Index(path, i);
      if (!p.IsMap()) {
        return Err(p, ppath, "expected a map such as {pid: 4100, name: python3, memory: 60GiB}");
      }
      WARPSCOPE_RETURN_IF_ERROR(
          CheckKeys(p, ppath,
                    {"pid", "name", "type", "start", "stop", "memory", "sm_util", "mem_util",
                     "gpu_instance_id", "compute_instance_id"}));
      ProcessSpec proc;
      WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node pid,
                                            Required(p, ppath, "pid", "pid: 41000"));
      WARPSCOPE_ASSIGN_OR_RETURN(proc.pid, UInt(pid, Join(ppath, "pid"), 1, 4194304));
      if (Present(p["name"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(proc.name, Str(p["name"], Join(ppath, "name")));
        if (proc.name.empty() || proc.name.size() > 255) {
          return Err(p["name"], Join(ppath, "name"), "must be 1..255 characters");
        }
      }
      if (Present(p["type"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(std::string type,
                                              Str(p["type"], Join(ppath, "type")));
        if (type == "compute") {
          proc.type = ProcessType::kCompute;
        } else if (type == "graphics") {
          proc.type = ProcessType::kGraphics;
        } else {
          return Err(p["type"], Join(ppath, "type"),
                     fmt::format("unknown process type '{}'; use compute or graphics", type));
        }
      }
      if (Present(p["start"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(
            proc.start_s, Quantity(p["start"], Join(ppath, "start"), Unit::kSeconds));
      }
      if (Present(p["stop"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(
            proc.stop_s, Quantity(p["stop"], Join(ppath, "stop"), Unit::kSeconds));
        if (proc.stop_s <= proc.start_s) {
          return Err(p["stop"], Join(ppath, "stop"), "must be later than start");
        }
      }
      if (Present(p["memory"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(
            proc.memory, ParseSignal(p["memory"], Join(ppath, "memory"), Unit::kBytes));
      }
      if (Present(p["sm_util"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(
            proc.sm_util, ParseSignal(p["sm_util"], Join(ppath, "sm_util"), Unit::kNumber));
      }
      if (Present(p["mem_util"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(
            proc.mem_util, ParseSignal(p["mem_util"], Join(ppath, "mem_util"), Unit::kNumber));
      }
      if (Present(p["compute_instance_id"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(
            proc.compute_instance_id,
            UInt(p["compute_instance_id"], Join(ppath, "compute_instance_id"), 0, 31));
      }
      if (Present(p["gpu_instance_id"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(
            unsigned gi, UInt(p["gpu_instance_id"], Join(ppath, "gpu_instance_id"), 0, 31));
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
      } else if (d.mig.enabled) {
        return Err(p, Join(ppath, "gpu_instance_id"),
                   "missing; on a MIG-enabled GPU every process runs in a MIG instance");
      }
      d.processes.push_back(std::move(proc));
    }
    return base::OkStatus();
  }

  Status ParseFaults(const YAML::Node& n, const std::string& path, DeviceSpec& d) const {
    if (!n.IsSequence()) {
      return Err(n, path, "expected a list of faults");
    }
    for (size_t i = 0; i < n.size(); ++i) {
      const YAML::Node f = n[i];
      const std::string fpath = Index(path, i);
      if (!f.IsMap()) {
        return Err(f, fpath, "expected a map such as {kind: xid, at: 30s, code: 79}");
      }
      WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node kind_node,
                                            Required(f, fpath, "kind", "kind: xid"));
      WARPSCOPE_ASSIGN_OR_RETURN(std::string kind, Str(kind_node, Join(fpath, "kind")));
      FaultSpec fault;
      if (kind == "xid") {
        fault.kind = FaultKind::kXid;
        WARPSCOPE_RETURN_IF_ERROR(
            CheckKeys(f, fpath, {"kind", "at", "code", "gpu_instance_id", "compute_instance_id"}));
      } else if (kind == "gpu_lost") {
        fault.kind = FaultKind::kGpuLost;
        WARPSCOPE_RETURN_IF_ERROR(CheckKeys(f, fpath, {"kind", "at", "until"}));
      } else if (kind == "not_supported") {
        fault.kind = FaultKind::kNotSupported;
        WARPSCOPE_RETURN_IF_ERROR(CheckKeys(f, fpath, {"kind", "what", "at", "until"}));
      } else if (kind == "no_permission") {
        fault.kind = FaultKind::kNoPermission;
        WARPSCOPE_RETURN_IF_ERROR(CheckKeys(f, fpath, {"kind", "at", "until"}));
      } else if (kind == "slow") {
        fault.kind = FaultKind::kSlow;
        WARPSCOPE_RETURN_IF_ERROR(
            CheckKeys(f, fpath, {"kind", "at", "until", "what", "latency", "hang"}));
      } else {
        static constexpr std::string_view kKinds[] = {"xid", "gpu_lost", "not_supported",
                                                      "no_permission", "slow"};
        return Err(kind_node, Join(fpath, "kind"),
                   fmt::format("unknown fault kind '{}'.{} Use xid, gpu_lost, not_supported, "
                               "no_permission or slow",
                               kind, Suggest(kind, kKinds)));
      }
      if (fault.kind == FaultKind::kXid || fault.kind == FaultKind::kGpuLost) {
        WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node at, Required(f, fpath, "at", "at: 30s"));
        WARPSCOPE_ASSIGN_OR_RETURN(fault.at_s,
                                              Quantity(at, Join(fpath, "at"), Unit::kSeconds));
      } else if (Present(f["at"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(fault.at_s,
                                              Quantity(f["at"], Join(fpath, "at"), Unit::kSeconds));
      }
      if (Present(f["until"])) {
        WARPSCOPE_ASSIGN_OR_RETURN(
            fault.until_s, Quantity(f["until"], Join(fpath, "until"), Unit::kSeconds));
        if (fault.until_s <= fault.at_s) {
          return Err(f["until"], Join(fpath, "until"), "must be later than at");
        }
      }
      if (fault.kind == FaultKind::kXid) {
        WARPSCOPE_RETURN_IF_ERROR(ParseXidFault(f, fpath, d, fault));
      }
      if (fault.kind == FaultKind::kNotSupported) {
        WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node what,
                                   Required(f, fpath, "what", "what: memory_temperature"));
        WARPSCOPE_RETURN_IF_ERROR(ParseFaultWhat(what, Join(fpath, "what"), true, fault));
      }
      if (fault.kind == FaultKind::kSlow) {
        WARPSCOPE_RETURN_IF_ERROR(ParseSlowFault(f, fpath, fault));
      }
      d.faults.push_back(std::move(fault));
    }
    return base::OkStatus();
  }

  // code, and the MIG instance of an XID on a MIG-enabled GPU.
  Status ParseXidFault(const YAML::Node& f, const std::string& fpath, const DeviceSpec& d,
                       FaultSpec& fault) const {
    WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node code, Required(f, fpath, "code", "code: 79"));
    WARPSCOPE_ASSIGN_OR_RETURN(fault.code, UInt(code, Join(fpath, "code"), 0, 65535));
    bool has_gi = Present(f["gpu_instance_id"]);
    bool has_ci = Present(f["compute_instance_id"]);
    if (has_gi || has_ci) {
      if (!d.mig.enabled) {
        return Err(f, fpath, "gpu_instance_id/compute_instance_id need mig.enabled: true");
      }
      if (!has_gi) {
        return Err(f, Join(fpath, "gpu_instance_id"),
                   "missing; compute_instance_id needs "
                   "it");
      }
      WARPSCOPE_ASSIGN_OR_RETURN(fault.gpu_instance_id,
                                 UInt(f["gpu_instance_id"], Join(fpath, "gpu_instance_id"), 0, 31));
      fault.compute_instance_id = 0;
      if (has_ci) {
        WARPSCOPE_ASSIGN_OR_RETURN(
            fault.compute_instance_id,
            UInt(f["compute_instance_id"], Join(fpath, "compute_instance_id"), 0, 31));
      }
      if (!FindInstance(d, fault.gpu_instance_id, fault.compute_instance_id)) {
        return Err(f, fpath,
                   fmt::format("no MIG instance {}/{} on this GPU", fault.gpu_instance_id,
                               fault.compute_instance_id));
      }
    }
    return base::OkStatus();
  }

  // `what` of not_supported (a signal name or a device-level NVML function) and of slow (a
  // device-level NVML function only).
  Status ParseFaultWhat(const YAML::Node& what, const std::string& path, bool signals,
                        FaultSpec& fault) const {
    WARPSCOPE_ASSIGN_OR_RETURN(fault.what, Str(what, path));
    bool device_function =
        IsKnownNvmlFunction(fault.what) &&
        (fault.what.rfind("nvmlDevice", 0) == 0 || fault.what.rfind("nvmlGpm", 0) == 0);
    if (device_function || (signals && FindSignal(fault.what))) {
      return base::OkStatus();
    }
    std::vector<std::string_view> names;
    if (signals) {
      for (const auto& info : AllSignals()) {
        names.push_back(info.name);
      }
    }
    for (std::string_view fn : kKnownFunctions) {
      names.push_back(fn);
    }
    if (!signals) {
      return Err(what, path,
                 fmt::format("'{}' is not a device-level NVML function (e.g. "
                             "nvmlDeviceGetPowerUsage); leave what out to slow every call of the "
                             "device.{}",
                             fault.what, Suggest(fault.what, names)));
    }
    return Err(what, path,
               fmt::format("'{}' is neither a signal name (e.g. memory_temperature) nor a "
                           "device-level NVML function (e.g. nvmlDeviceGetSerial).{}",
                           fault.what, Suggest(fault.what, names)));
  }

  // slow: exactly one of `latency: <duration>` (each call answers that much later) or
  // `hang: true` (each call blocks until the window ends); `what` narrows it to one function.
  Status ParseSlowFault(const YAML::Node& f, const std::string& fpath, FaultSpec& fault) const {
    const bool has_latency = Present(f["latency"]);
    const bool has_hang = Present(f["hang"]);
    if (has_latency == has_hang) {
      return Err(f, fpath,
                 has_latency ? "give either latency or hang, not both"
                             : "missing latency or hang; e.g. latency: 2s (each call answers "
                               "2 s late) or hang: true (calls block until the window ends)");
    }
    if (has_hang) {
      WARPSCOPE_ASSIGN_OR_RETURN(fault.hang, Bool(f["hang"], Join(fpath, "hang")));
      if (!fault.hang) {
        return Err(f["hang"], Join(fpath, "hang"),
                   "hang: false slows nothing; use hang: true, or latency: <duration>");
      }
    } else {
      WARPSCOPE_ASSIGN_OR_RETURN(fault.latency_s,
                                 Quantity(f["latency"], Join(fpath, "latency"), Unit::kSeconds));
      if (!(fault.latency_s > 0) || fault.latency_s > kMaxSlowLatencySeconds) {
        return Err(f["latency"], Join(fpath, "latency"),
                   fmt::format("must be more than 0s and at most {}s; for calls that never "
                               "answer use hang: true",
                               kMaxSlowLatencySeconds));
      }
    }
    if (Present(f["what"])) {
      WARPSCOPE_RETURN_IF_ERROR(ParseFaultWhat(f["what"], Join(fpath, "what"), false, fault));
    }
    return base::OkStatus();
  }

  Status CheckUnique(const Scenario& s, const YAML::Node& devices) const {
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

  static constexpr size_t abi_string_limit_ = abi::kSystemDriverVersionBufferSize;
  static constexpr size_t abi_name_limit_ = abi::kDeviceNameBufferSize;

  std::string source_;
  uint64_t seed_ = 1;
  std::optional<unsigned> index_;  // substituted for "{i}" while parsing a device
  std::string device_note_;        // " (device N)" while expanding a repeated entry
};

}  // namespace

std::string_view ArchitectureName(Architecture arch) {
  for (const auto& e : kArchitectures) {
    if (e.arch == arch) {
      return e.name;
    }
  }
  return "unknown";
}

bool IsKnownNvmlFunction(std::string_view name) {
  return std::find(std::begin(kKnownFunctions), std::end(kKnownFunctions), name) !=
         std::end(kKnownFunctions);
}

Result<Scenario> ParseScenario(std::string_view yaml_text, std::string_view source_name) {
  std::string source(source_name.empty() ? "<scenario>" : source_name);
  try {
    YAML::Node root = YAML::Load(std::string(yaml_text));
    Parser parser(source);
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
