// SPDX-License-Identifier: Apache-2.0
// A finding: one problem an insight rule names on one entity, with its lifecycle, evidence,
// suggested fix and cost. What the insights engine keeps and the API answers.
#ifndef WARPSCOPE_SERVER_INSIGHTS_FINDING_H_
#define WARPSCOPE_SERVER_INSIGHTS_FINDING_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/time.h"
#include "model/entity.h"
#include "model/labels.h"

namespace warpscope::server::insights {

// Who should hear of it: page someone now, open a ticket, or show it only.
enum class Severity : uint8_t { kInfo, kTicket, kPage };
std::string_view SeverityName(Severity s);  // "info", "ticket", "page"

// pending: the condition is seen but has not held for the rule's `for` duration yet;
// firing: it has; resolved: it has been gone for the rule's clear duration.
enum class FindingState : uint8_t { kPending, kFiring, kResolved };
std::string_view FindingStateName(FindingState s);  // "pending", "firing", "resolved"

// GPU capacity a finding costs: GPU-hours lost while it held, priced per GPU-hour.
struct Waste {
  double gpu_hours = 0;
  double cost = 0;  // gpu_hours × the configured price; 0 when no price is set
};

struct Finding {
  std::string id;    // stable: FindingId of its key and start
  std::string rule;  // stable snake_case name, "cooling_failure"
  std::string title;
  Severity severity = Severity::kInfo;
  FindingState state = FindingState::kPending;
  std::string host;
  std::string entity;  // entity id on `host` ("GPU-…", "pid/…"); the host id for host findings
  model::EntityKind kind = model::EntityKind::kGpu;
  model::Labels attributes;  // of the entity: gpu.index, gpu.uuid, gpu.model, process.pid, …
  base::TimePoint start;     // when the condition was first seen
  base::TimePoint end;       // the last evaluation that saw it
  base::TimePoint updated;   // the last evaluation that changed or confirmed the finding
  std::string summary;       // one sentence with the figures
  nlohmann::json evidence = nlohmann::json::object();  // the latest evaluation's evidence
  std::string suggestion;
  Waste waste;
};

// Which findings a reader asks for. Empty strings and unset options match everything.
struct FindingQuery {
  std::string host;
  std::string entity;
  std::string rule;
  std::optional<Severity> severity;
  std::optional<FindingState> state;
  // Findings whose [start, end] overlaps [start, end).
  std::optional<base::TimePoint> start;
  std::optional<base::TimePoint> end;
  size_t limit = 1000;
};
bool Matches(const Finding& f, const FindingQuery& q);
// "page" -> kPage; InvalidArgument naming the allowed values otherwise. The same for states.
[[nodiscard]] base::Result<Severity> ParseSeverity(std::string_view name);
[[nodiscard]] base::Result<FindingState> ParseFindingState(std::string_view name);

// The identity a finding is deduplicated by.
std::string FindingKey(std::string_view rule, std::string_view host, std::string_view entity);

// "f" and 16 hex digits, from the finding's key and start: the same finding keeps its id across
// evaluations and restarts; a later one on the same entity gets another.
std::string FindingId(std::string_view key, base::TimePoint start);

// The API's JSON object of a finding ({"id", "rule", "title", "severity", "state", "host",
// "entity", "kind", "attributes", "start", "end", "summary", "evidence", "suggestion", "waste"});
// times as Unix milliseconds.
nlohmann::json FindingJson(const Finding& f);

// The finding FindingJson wrote (with "updated", which it adds for storage when `for_storage`).
// InvalidArgument naming the field that is missing or wrong.
nlohmann::json FindingJson(const Finding& f, bool for_storage);
[[nodiscard]] base::Result<Finding> FindingFromJson(const nlohmann::json& j);

}  // namespace warpscope::server::insights

#endif  // WARPSCOPE_SERVER_INSIGHTS_FINDING_H_
