// SPDX-License-Identifier: Apache-2.0
// Which alerts go to Alertmanager after an evaluation of the insights engine, and with which
// times, following Prometheus's own model (docs/alerts.md, "Alertmanager"):
// - a firing finding of at least the configured severity is sent at once, then every `resend`
//   while it fires, each copy with the lease endsAt = now + 4 × max(evaluation, resend), so that
//   Alertmanager resolves it by itself if the server goes away;
// - a resolved one is sent with endsAt = its resolution time, then again every `resend` for
//   `resolved_resend_for` (15 min), so that an Alertmanager that missed it learns it too;
// - a firing one that leaves the engine's list unresolved (forgotten, or its severity changed)
//   is resolved now;
// - pending findings are never sent.
// Alerts are identified by their labels (alert.h), as Alertmanager identifies them: a finding
// that opens again on the same GPU replaces the resolved one before it.
//
// Not thread-safe: called on the server's main sequence after each evaluation.
#ifndef WARPSCOPE_SERVER_ALERTS_ALERT_NOTIFIER_H_
#define WARPSCOPE_SERVER_ALERTS_ALERT_NOTIFIER_H_

#include <chrono>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/time.h"
#include "server/alerts/alert.h"
#include "server/insights/finding.h"

namespace warpscope::server::alerts {

struct NotifierOptions {
  // The lowest severity sent: page by default (only what costs money or loses progress pages).
  insights::Severity min_severity = insights::Severity::kPage;
  base::Duration resend = std::chrono::minutes(1);
  base::Duration evaluation_interval = std::chrono::seconds(10);
  base::Duration resolved_resend_for = std::chrono::minutes(15);
  std::string external_url;  // the UI's base URL, for generatorURL
};

class AlertNotifier {
 public:
  explicit AlertNotifier(NotifierOptions options) : options_(std::move(options)) {}

  // `findings`: every finding the engine holds after its evaluation at `now`. Returns the
  // alerts due now, ordered by their labels.
  std::vector<Alert> Update(std::span<const insights::Finding> findings, base::TimePoint now);

  // Alerts firing, and resolved ones still being re-sent.
  size_t firing() const;
  size_t resolving() const;

 private:
  struct Tracked {
    Alert alert;
    std::string finding_id;
    bool resolved = false;
    base::TimePoint resolved_at;
    base::TimePoint last_sent;
    bool sent = false;
  };
  bool Due(const Tracked& t, base::TimePoint now) const {
    return !t.sent || now - t.last_sent >= options_.resend;
  }

  const NotifierOptions options_;
  std::map<std::string, Tracked> tracked_;  // by AlertKey
};

}  // namespace warpscope::server::alerts

#endif  // WARPSCOPE_SERVER_ALERTS_ALERT_NOTIFIER_H_
