// SPDX-License-Identifier: Apache-2.0
// Signals: a number, or one shape (constant, ramp, sine, step, piecewise) plus optional noise;
// and the `signals` table of a device or MIG instance.
#include <string>
#include <utility>
#include <vector>

#include "sim/nvml/scenario_parser.h"

namespace warpscope::sim::scenario_internal {

using base::Error;
using base::Result;
using base::Status;

Result<Signal> Parser::ParseSignal(const YAML::Node& n, std::string_view path, Unit unit) const {
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
    WARPSCOPE_RETURN_IF_ERROR(ParsePiecewise(spec, kpath, unit, s));
    return s;
  }
  if (!spec.IsMap()) {
    return Error(Err(spec, kpath, fmt::format("expected a map of {} parameters", kind)));
  }
  if (kind == "ramp") {
    WARPSCOPE_RETURN_IF_ERROR(ParseRamp(spec, kpath, unit, s));
  } else if (kind == "sine") {
    WARPSCOPE_RETURN_IF_ERROR(ParseSine(spec, kpath, unit, s));
  } else {
    WARPSCOPE_RETURN_IF_ERROR(ParseStep(spec, kpath, unit, s));
  }
  return s;
}

Status Parser::ParsePiecewise(const YAML::Node& spec, const std::string& kpath, Unit unit,
                              Signal& s) const {
  s.kind = SignalKind::kPiecewise;
  if (!spec.IsSequence() || spec.size() == 0) {
    return Err(spec, kpath,
               "expected a list of [time, value] points, e.g. "
               "[[0s, 10], [1m, 80]]");
  }
  for (size_t i = 0; i < spec.size(); ++i) {
    const YAML::Node p = spec[i];
    std::string ppath = Index(kpath, i);
    if (!p.IsSequence() || p.size() != 2) {
      return Err(p, ppath, "expected a [time, value] pair such as [1m, 80]");
    }
    WARPSCOPE_ASSIGN_OR_RETURN(double t, Quantity(p[0], ppath, Unit::kSeconds));
    WARPSCOPE_ASSIGN_OR_RETURN(double v, Quantity(p[1], ppath, unit));
    if (!s.points.empty() && t <= s.points.back().first) {
      return Err(p, ppath, "point times must increase strictly; sort the points");
    }
    s.points.emplace_back(t, v);
  }
  return base::OkStatus();
}

Status Parser::ParseShapeParameters(const YAML::Node& spec, const std::string& kpath, Unit unit,
                                    std::initializer_list<ShapeParameter> required,
                                    Signal& s) const {
  // Every required key is looked up before any is read, so a missing key is reported first.
  for (const auto& p : required) {
    if (auto present = Required(spec, kpath, p.key, p.example); !present) {
      return present.error();
    }
  }
  for (const auto& p : required) {
    WARPSCOPE_ASSIGN_OR_RETURN(
        s.*p.field, Quantity(spec[p.key], Join(kpath, p.key), p.seconds ? Unit::kSeconds : unit));
  }
  return base::OkStatus();
}

Status Parser::ParseRamp(const YAML::Node& spec, const std::string& kpath, Unit unit,
                         Signal& s) const {
  s.kind = SignalKind::kRamp;
  WARPSCOPE_RETURN_IF_ERROR(CheckKeys(spec, kpath, {"from", "to", "start", "duration"}));
  WARPSCOPE_RETURN_IF_ERROR(
      ParseShapeParameters(spec, kpath, unit,
                           {{"from", "from: 0", false, &Signal::from},
                            {"to", "to: 100", false, &Signal::to},
                            {"duration", "duration: 10m", true, &Signal::duration_s}},
                           s));
  return OptionalQuantity(spec, kpath, "start", Unit::kSeconds, s.start_s);
}

Status Parser::ParseSine(const YAML::Node& spec, const std::string& kpath, Unit unit,
                         Signal& s) const {
  s.kind = SignalKind::kSine;
  WARPSCOPE_RETURN_IF_ERROR(CheckKeys(spec, kpath, {"mean", "amplitude", "period", "phase"}));
  WARPSCOPE_RETURN_IF_ERROR(
      ParseShapeParameters(spec, kpath, unit,
                           {{"mean", "mean: 50", false, &Signal::mean},
                            {"period", "period: 60s", true, &Signal::period_s}},
                           s));
  if (s.period_s <= 0) {
    return Err(spec["period"], Join(kpath, "period"), "must be greater than 0s");
  }
  WARPSCOPE_RETURN_IF_ERROR(OptionalQuantity(spec, kpath, "amplitude", unit, s.amplitude));
  return OptionalQuantity(spec, kpath, "phase", Unit::kSeconds, s.phase_s);
}

Status Parser::ParseStep(const YAML::Node& spec, const std::string& kpath, Unit unit,
                         Signal& s) const {
  s.kind = SignalKind::kStep;
  WARPSCOPE_RETURN_IF_ERROR(CheckKeys(spec, kpath, {"before", "after", "at"}));
  return ParseShapeParameters(spec, kpath, unit,
                              {{"before", "before: 0", false, &Signal::before},
                               {"after", "after: 100", false, &Signal::after},
                               {"at", "at: 5m", true, &Signal::at_s}},
                              s);
}

Status Parser::ParseSignals(const YAML::Node& n, std::string_view path, bool mig_instance,
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
      std::string_view what = mig_instance ? "MIG instance signal" : "signal";
      return Err(kv.first, spath,
                 fmt::format("unknown {} '{}'.{} Valid {}s: {}", what, name, Suggest(name, names),
                             what, ListNames(names)));
    }
    WARPSCOPE_ASSIGN_OR_RETURN(Signal s, ParseSignal(kv.second, spath, GetSignalInfo(*id).unit));
    out[static_cast<size_t>(*id)] = std::move(s);
  }
  return base::OkStatus();
}

}  // namespace warpscope::sim::scenario_internal
