// SPDX-License-Identifier: Apache-2.0
#include "server/insights/finding.h"

#include <cmath>

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

std::string FindingKey(std::string_view rule, std::string_view host, std::string_view entity) {
  std::string key;
  key.reserve(rule.size() + host.size() + entity.size() + 2);
  key.append(rule).push_back('\n');
  key.append(host).push_back('\n');
  key.append(entity);
  return key;
}

nlohmann::json FindingJson(const Finding& f) {
  nlohmann::json attributes = nlohmann::json::object();
  for (const auto& [key, value] : f.attributes) attributes[key] = value;
  // Rounded so that a JSON reader never sees 0.30000000000000004 GPU-hours.
  auto round = [](double v) { return std::isfinite(v) ? std::round(v * 1e4) / 1e4 : 0.0; };
  return {
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
}

}  // namespace warpscope::server::insights
