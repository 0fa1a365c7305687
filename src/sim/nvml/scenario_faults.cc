// SPDX-License-Identifier: Apache-2.0
// A device's faults: xid, gpu_lost, not_supported, no_permission and slow, each with the keys of
// its kind and a window [at, until).
#include <string>
#include <utility>
#include <vector>

#include "sim/nvml/scenario_parser.h"

namespace warpscope::sim::scenario_internal {

using base::Status;

Status Parser::ParseFaults(const YAML::Node& n, const std::string& path, DeviceSpec& d) const {
  if (!n.IsSequence()) {
    return Err(n, path, "expected a list of faults");
  }
  for (size_t i = 0; i < n.size(); ++i) {
    FaultSpec fault;
    WARPSCOPE_RETURN_IF_ERROR(ParseFault(n[i], Index(path, i), d, fault));
    d.faults.push_back(std::move(fault));
  }
  return base::OkStatus();
}

Status Parser::ParseFault(const YAML::Node& f, const std::string& fpath, const DeviceSpec& d,
                          FaultSpec& fault) const {
  if (!f.IsMap()) {
    return Err(f, fpath, "expected a map such as {kind: xid, at: 30s, code: 79}");
  }
  WARPSCOPE_RETURN_IF_ERROR(ParseFaultKind(f, fpath, fault));
  WARPSCOPE_RETURN_IF_ERROR(ParseFaultWindow(f, fpath, fault));
  switch (fault.kind) {
    case FaultKind::kXid:
      return ParseXidFault(f, fpath, d, fault);
    case FaultKind::kNotSupported: {
      WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node what,
                                 Required(f, fpath, "what", "what: memory_temperature"));
      return ParseFaultWhat(what, Join(fpath, "what"), true, fault);
    }
    case FaultKind::kSlow:
      return ParseSlowFault(f, fpath, fault);
    case FaultKind::kGpuLost:
    case FaultKind::kNoPermission:
      break;
  }
  return base::OkStatus();
}

// `kind`, and the keys that kind allows.
Status Parser::ParseFaultKind(const YAML::Node& f, const std::string& fpath,
                              FaultSpec& fault) const {
  WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node kind_node, Required(f, fpath, "kind", "kind: xid"));
  WARPSCOPE_ASSIGN_OR_RETURN(std::string kind, Str(kind_node, Join(fpath, "kind")));
  if (kind == "xid") {
    fault.kind = FaultKind::kXid;
    return CheckKeys(f, fpath, {"kind", "at", "code", "gpu_instance_id", "compute_instance_id"});
  }
  if (kind == "gpu_lost") {
    fault.kind = FaultKind::kGpuLost;
    return CheckKeys(f, fpath, {"kind", "at", "until"});
  }
  if (kind == "not_supported") {
    fault.kind = FaultKind::kNotSupported;
    return CheckKeys(f, fpath, {"kind", "what", "at", "until"});
  }
  if (kind == "no_permission") {
    fault.kind = FaultKind::kNoPermission;
    return CheckKeys(f, fpath, {"kind", "at", "until"});
  }
  if (kind == "slow") {
    fault.kind = FaultKind::kSlow;
    return CheckKeys(f, fpath, {"kind", "at", "until", "what", "latency", "hang"});
  }
  static constexpr std::string_view kKinds[] = {"xid", "gpu_lost", "not_supported", "no_permission",
                                                "slow"};
  return Err(kind_node, Join(fpath, "kind"),
             fmt::format("unknown fault kind '{}'.{} Use xid, gpu_lost, not_supported, "
                         "no_permission or slow",
                         kind, Suggest(kind, kKinds)));
}

// [at, until): `at` is required for xid and gpu_lost, 0 by default for the others; `until`
// defaults to forever.
Status Parser::ParseFaultWindow(const YAML::Node& f, const std::string& fpath,
                                FaultSpec& fault) const {
  if (fault.kind == FaultKind::kXid || fault.kind == FaultKind::kGpuLost) {
    WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node at, Required(f, fpath, "at", "at: 30s"));
    WARPSCOPE_ASSIGN_OR_RETURN(fault.at_s, Quantity(at, Join(fpath, "at"), Unit::kSeconds));
  } else {
    WARPSCOPE_RETURN_IF_ERROR(OptionalQuantity(f, fpath, "at", Unit::kSeconds, fault.at_s));
  }
  if (Present(f["until"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(fault.until_s,
                               Quantity(f["until"], Join(fpath, "until"), Unit::kSeconds));
    if (fault.until_s <= fault.at_s) {
      return Err(f["until"], Join(fpath, "until"), "must be later than at");
    }
  }
  return base::OkStatus();
}

// code, and the MIG instance of an XID on a MIG-enabled GPU.
Status Parser::ParseXidFault(const YAML::Node& f, const std::string& fpath, const DeviceSpec& d,
                             FaultSpec& fault) const {
  WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node code, Required(f, fpath, "code", "code: 79"));
  WARPSCOPE_ASSIGN_OR_RETURN(fault.code, UInt(code, Join(fpath, "code"), 0, 65535));
  bool has_gi = Present(f["gpu_instance_id"]);
  bool has_ci = Present(f["compute_instance_id"]);
  if (!has_gi && !has_ci) {
    return base::OkStatus();
  }
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
  WARPSCOPE_RETURN_IF_ERROR(
      OptionalUInt(f, fpath, "compute_instance_id", 0, 31, fault.compute_instance_id));
  if (!FindInstance(d, fault.gpu_instance_id, fault.compute_instance_id)) {
    return Err(f, fpath,
               fmt::format("no MIG instance {}/{} on this GPU", fault.gpu_instance_id,
                           fault.compute_instance_id));
  }
  return base::OkStatus();
}

// `what` of not_supported (a signal name or a device-level NVML function) and of slow (a
// device-level NVML function only).
Status Parser::ParseFaultWhat(const YAML::Node& what, const std::string& path, bool signals,
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
  for (std::string_view fn : KnownNvmlFunctions()) {
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
Status Parser::ParseSlowFault(const YAML::Node& f, const std::string& fpath,
                              FaultSpec& fault) const {
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

}  // namespace warpscope::sim::scenario_internal
