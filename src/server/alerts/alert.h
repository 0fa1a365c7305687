// SPDX-License-Identifier: Apache-2.0
// An alert as Alertmanager's API v2 takes it (`POST /api/v2/alerts`), and the alert of a
// finding: which labels identify it, which annotations explain it, where it links to.
#ifndef WARPSCOPE_SERVER_ALERTS_ALERT_H_
#define WARPSCOPE_SERVER_ALERTS_ALERT_H_

#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "base/time.h"
#include "server/insights/finding.h"

namespace warpscope::server::alerts {

struct Alert {
  // Identify the alert: Alertmanager groups, deduplicates and routes by them.
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  base::TimePoint starts_at;
  // While firing, a lease: Alertmanager resolves the alert by itself when no newer copy arrives
  // before it. Once resolved, the resolution time.
  base::TimePoint ends_at;
  std::string generator_url;
};

// The alert of `f` (times left unset: the notifier decides them). Labels: alertname (the rule's,
// insights::AlertName: "GpuCoolingFailure", as in the exported Prometheus rules), severity,
// rule, host, and where the finding's entity has them gpu (its index), UUID, pid and cluster.
// Annotations: summary, description (title, summary and the suggested fix), evidence (its JSON,
// cut at 4 KiB), finding_id, and the GPU-hours lost. `external_url`: the UI's base URL; the
// alert links to the finding's page there (`<external_url>/insights/<id>`).
Alert AlertOfFinding(const insights::Finding& f, std::string_view external_url);

// The labels alone of AlertOfFinding(f): what identifies its alert, cheap to build.
std::map<std::string, std::string> AlertLabels(const insights::Finding& f);

// A stable key of the alert's label set (Alertmanager's identity of an alert).
std::string AlertKey(const Alert& a);
std::string AlertKey(const std::map<std::string, std::string>& labels);

// The request body of `POST /api/v2/alerts`: a JSON array, times in RFC 3339 (UTC, ms).
nlohmann::json AlertsJson(std::span<const Alert> alerts);

// "2026-12-05T09:38:19.123Z".
std::string Rfc3339(base::TimePoint t);

}  // namespace warpscope::server::alerts

#endif  // WARPSCOPE_SERVER_ALERTS_ALERT_H_
