// SPDX-License-Identifier: Apache-2.0
#include "server/alerts/alert_notifier.h"

#include <algorithm>
#include <set>

namespace warpscope::server::alerts {

using insights::Finding;
using insights::FindingState;

std::vector<Alert> AlertNotifier::Update(std::span<const Finding> findings, base::TimePoint now) {
  const base::Duration lease = 4 * std::max(options_.evaluation_interval, options_.resend);
  std::set<std::string> firing;
  std::vector<Alert> due;
  auto send = [&](Tracked& t) {
    t.sent = true;
    t.last_sent = now;
    due.push_back(t.alert);
  };

  // Firing findings first: a new finding on the same labels takes the place of an old one.
  for (const Finding& f : findings) {
    if (f.state != FindingState::kFiring || f.severity < options_.min_severity) continue;
    std::string key = AlertKey(AlertLabels(f));
    firing.insert(key);
    Tracked& t = tracked_[key];
    if (t.finding_id != f.id || t.resolved) t = Tracked{.finding_id = f.id};
    if (!Due(t, now)) continue;  // its annotations are built only when it goes out
    t.alert = AlertOfFinding(f, options_.external_url);
    t.alert.starts_at = f.start;
    t.alert.ends_at = now + lease;
    send(t);
  }

  // Resolved findings: the ones sent firing, and others resolved recently (a restart may have
  // lost which were sent).
  std::set<std::string> resolved_seen;
  for (const Finding& f : findings) {
    if (f.state != FindingState::kResolved || f.severity < options_.min_severity) continue;
    // Resolved long ago: neither tracked nor to be sent (most of the engine's 1,000 kept).
    if (now - f.updated >= options_.resolved_resend_for) continue;
    std::string key = AlertKey(AlertLabels(f));
    if (firing.contains(key) || !resolved_seen.insert(key).second) continue;
    auto it = tracked_.find(key);
    if (it == tracked_.end()) {
      it = tracked_.emplace(key, Tracked{.finding_id = f.id}).first;
    } else if (it->second.finding_id != f.id) {
      continue;  // an older finding on the same labels; the tracked one is handled below
    }
    Tracked& t = it->second;
    if (!t.resolved) {
      t.resolved = true;
      t.resolved_at = f.updated;
      t.sent = false;  // the resolution goes out now
    }
    if (!Due(t, now)) continue;
    t.alert = AlertOfFinding(f, options_.external_url);
    t.alert.starts_at = f.start;
    t.alert.ends_at = t.resolved_at;
  }

  for (auto it = tracked_.begin(); it != tracked_.end();) {
    Tracked& t = it->second;
    if (!t.resolved && !firing.contains(it->first)) {
      // Firing before, gone from the list now without a resolution: resolved now.
      t.resolved = true;
      t.resolved_at = now;
      t.alert.ends_at = now;
      t.sent = false;
    }
    if (t.resolved) {
      if (now - t.resolved_at >= options_.resolved_resend_for) {
        it = tracked_.erase(it);
        continue;
      }
      if (Due(t, now)) send(t);
    }
    ++it;
  }
  std::sort(due.begin(), due.end(),
            [](const Alert& a, const Alert& b) { return a.labels < b.labels; });
  return due;
}

size_t AlertNotifier::firing() const {
  return std::count_if(tracked_.begin(), tracked_.end(),
                       [](const auto& kv) { return !kv.second.resolved; });
}

size_t AlertNotifier::resolving() const { return tracked_.size() - firing(); }

}  // namespace warpscope::server::alerts
