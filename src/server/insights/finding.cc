// SPDX-License-Identifier: Apache-2.0
#include "server/insights/finding.h"

#include <cmath>

#include "fmt/format.h"

namespace warpscope::server::insights {

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kTicket:
      return "ticket";
    case Severity::kPage:
      return "page";
  }
  return "info";
}

std::string_view FindingStateName(FindingState s) {
  switch (s) {
    case FindingState::kPending:
      return "pending";
    case FindingState::kFiring:
      return "firing";
    case FindingState::kResolved:
      return "resolved";
  }
  return "pending";
}

bool Matches(const Finding& f, const FindingQuery& q) {
  if (!q.host.empty() && f.host != q.host) return false;
  if (!q.entity.empty() && f.entity != q.entity) return false;
  if (!q.rule.empty() && f.rule != q.rule) return false;
  if (q.severity && f.severity != *q.severity) return false;
  if (q.state && f.state != *q.state) return false;
  if (q.end && f.start >= *q.end) return false;
  if (q.start && f.end < *q.start) return false;
  return true;
}

base::Result<Severity> ParseSeverity(std::string_view name) {
  for (Severity s : {Severity::kInfo, Severity::kTicket, Severity::kPage}) {
    if (SeverityName(s) == name) return s;
  }
  return base::Error(
      base::InvalidArgument("unknown severity \"{}\": use page, ticket or info", name));
}

base::Result<FindingState> ParseFindingState(std::string_view name) {
  for (FindingState s : {FindingState::kPending, FindingState::kFiring, FindingState::kResolved}) {
    if (FindingStateName(s) == name) return s;
  }
  return base::Error(
      base::InvalidArgument("unknown state \"{}\": use pending, firing or resolved", name));
}

std::string FindingKey(std::string_view rule, std::string_view host, std::string_view entity) {
  std::string key;
  key.reserve(rule.size() + host.size() + entity.size() + 2);
  key.append(rule).push_back('\n');
  key.append(host).push_back('\n');
  key.append(entity);
  return key;
}

std::string FindingId(std::string_view key, base::TimePoint start) {
  // FNV-1a over the key and the start in milliseconds (what storage keeps).
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ull;
  };
  for (char c : key) mix(static_cast<unsigned char>(c));
  int64_t ms = base::ToUnixMillis(start);
  for (int i = 0; i < 8; ++i) mix(static_cast<unsigned char>(static_cast<uint64_t>(ms) >> (8 * i)));
  return fmt::format("f{:016x}", h);
}

nlohmann::json FindingJson(const Finding& f) { return FindingJson(f, false); }

nlohmann::json FindingJson(const Finding& f, bool for_storage) {
  nlohmann::json attributes = nlohmann::json::object();
  for (const auto& [key, value] : f.attributes) attributes[key] = value;
  // Rounded so that a JSON reader never sees 0.30000000000000004 GPU-hours.
  auto round = [](double v) { return std::isfinite(v) ? std::round(v * 1e4) / 1e4 : 0.0; };
  nlohmann::json j = {
      {"id", f.id},
      {"rule", f.rule},
      {"title", f.title},
      {"severity", SeverityName(f.severity)},
      {"state", FindingStateName(f.state)},
      {"host", f.host},
      {"entity", f.entity},
      {"kind", model::EntityKindName(f.kind)},
      {"attributes", std::move(attributes)},
      {"start", base::ToUnixMillis(f.start)},
      {"end", base::ToUnixMillis(f.end)},
      {"summary", f.summary},
      {"evidence", f.evidence},
      {"suggestion", f.suggestion},
      {"waste", {{"gpu_hours", round(f.waste.gpu_hours)}, {"cost", round(f.waste.cost)}}},
  };
  if (for_storage) {
    j["updated"] = base::ToUnixMillis(f.updated);
    // Unrounded, so that a restart does not lose the fractions it keeps adding up.
    j["waste"] = {{"gpu_hours", f.waste.gpu_hours}, {"cost", f.waste.cost}};
  }
  return j;
}

namespace {

// The member `key` of `j`, checked for its type (no exceptions: JSON from a file is input).
const nlohmann::json* Member(const nlohmann::json& j, std::string_view key) {
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

base::Status Missing(std::string_view key) {
  return base::InvalidArgument("finding: \"{}\" is missing or has the wrong type", key);
}

base::Status Field(const nlohmann::json& j, std::string_view key, std::string& out) {
  const nlohmann::json* m = Member(j, key);
  if (!m || !m->is_string()) return Missing(key);
  out = m->get<std::string>();
  return base::OkStatus();
}

base::Status Field(const nlohmann::json& j, std::string_view key, int64_t& out) {
  const nlohmann::json* m = Member(j, key);
  if (!m || !m->is_number_integer()) return Missing(key);
  out = m->get<int64_t>();
  return base::OkStatus();
}

base::Status Field(const nlohmann::json& j, std::string_view key, double& out) {
  const nlohmann::json* m = Member(j, key);
  if (!m || !m->is_number()) return Missing(key);
  out = m->get<double>();
  return base::OkStatus();
}

base::Status Field(const nlohmann::json& j, std::string_view key, model::Labels& out) {
  const nlohmann::json* m = Member(j, key);
  if (!m || !m->is_object()) return Missing(key);
  for (const auto& [k, v] : m->items()) {
    if (!v.is_string()) return Missing(fmt::format("{}.{}", key, k));
    out.Set(k, v.get<std::string>());
  }
  return base::OkStatus();
}

base::Status Time(const nlohmann::json& j, std::string_view key, base::TimePoint& out) {
  int64_t ms = 0;
  WARPSCOPE_RETURN_IF_ERROR(Field(j, key, ms));
  out = base::FromUnixNanos(ms * 1'000'000);
  return base::OkStatus();
}

}  // namespace

base::Result<Finding> FindingFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return base::Error(base::InvalidArgument("finding: not an object"));
  Finding f;
  std::string severity, state, kind;
  WARPSCOPE_RETURN_IF_ERROR(Field(j, "id", f.id));
  WARPSCOPE_RETURN_IF_ERROR(Field(j, "rule", f.rule));
  WARPSCOPE_RETURN_IF_ERROR(Field(j, "title", f.title));
  WARPSCOPE_RETURN_IF_ERROR(Field(j, "severity", severity));
  WARPSCOPE_RETURN_IF_ERROR(Field(j, "state", state));
  WARPSCOPE_RETURN_IF_ERROR(Field(j, "host", f.host));
  WARPSCOPE_RETURN_IF_ERROR(Field(j, "entity", f.entity));
  WARPSCOPE_RETURN_IF_ERROR(Field(j, "kind", kind));
  WARPSCOPE_RETURN_IF_ERROR(Time(j, "start", f.start));
  WARPSCOPE_RETURN_IF_ERROR(Time(j, "end", f.end));
  WARPSCOPE_RETURN_IF_ERROR(Time(j, "updated", f.updated));
  WARPSCOPE_RETURN_IF_ERROR(Field(j, "summary", f.summary));
  WARPSCOPE_RETURN_IF_ERROR(Field(j, "suggestion", f.suggestion));
  WARPSCOPE_RETURN_IF_ERROR(Field(j, "attributes", f.attributes));
  if (const nlohmann::json* evidence = Member(j, "evidence")) f.evidence = *evidence;
  const nlohmann::json* waste = Member(j, "waste");
  if (!waste || !waste->is_object()) return base::Error(Missing("waste"));
  WARPSCOPE_RETURN_IF_ERROR(Field(*waste, "gpu_hours", f.waste.gpu_hours));
  WARPSCOPE_RETURN_IF_ERROR(Field(*waste, "cost", f.waste.cost));
  WARPSCOPE_ASSIGN_OR_RETURN(f.severity, ParseSeverity(severity));
  WARPSCOPE_ASSIGN_OR_RETURN(f.state, ParseFindingState(state));
  bool known = false;
  for (model::EntityKind k : {model::EntityKind::kHost, model::EntityKind::kGpu,
                              model::EntityKind::kMigInstance, model::EntityKind::kProcess,
                              model::EntityKind::kExecutable, model::EntityKind::kContainer,
                              model::EntityKind::kCluster}) {
    if (model::EntityKindName(k) == kind) f.kind = k, known = true;
  }
  if (!known) return base::Error(base::InvalidArgument("finding: unknown kind {}", kind));
  return f;
}

}  // namespace warpscope::server::insights
