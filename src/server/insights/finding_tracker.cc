// SPDX-License-Identifier: Apache-2.0
#include "server/insights/finding_tracker.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>

namespace warpscope::server::insights {
namespace {

// The longest gap between two evaluations that is charged as waste: after a server outage the
// condition is not known to have held all along.
constexpr base::Duration kMaxChargedGap = std::chrono::minutes(5);

}  // namespace

void FindingTracker::Apply(const RuleInfo& rule, std::span<const Observation> observations,
                           base::TimePoint now, double price) {
  std::set<std::string, std::less<>> seen;
  for (const Observation& o : observations) {
    std::string key = FindingKey(rule.name, o.host, o.entity);
    if (!seen.insert(key).second) continue;  // one finding per entity and evaluation
    auto [it, inserted] = open_.try_emplace(key);
    OpenFinding& open = it->second;
    Finding& f = open.finding;
    if (inserted) {
      f.id = FindingId(it->first, now);
      f.rule = std::string(rule.name);
      f.title = std::string(rule.title);
      f.host = o.host;
      f.entity = o.entity;
      f.kind = o.kind;
      f.start = now;
      f.state = FindingState::kPending;
      open.last_evaluated = now;
    }
    const base::Duration gap = std::min(now - open.last_evaluated, kMaxChargedGap);
    if (gap > base::Duration::zero()) {
      f.waste.gpu_hours += o.lost_fraction * o.gpus * base::ToSeconds(gap) / 3600.0;
      f.waste.cost = f.waste.gpu_hours * price;
    }
    open.last_evaluated = now;
    f.severity = o.severity.value_or(rule.severity);
    f.attributes = o.attributes;
    f.summary = o.summary;
    f.evidence = o.evidence;
    f.suggestion = std::string(rule.suggestion);
    f.end = now;
    f.updated = now;
    if (f.state == FindingState::kPending && now - f.start >= rule.hold_for) {
      f.state = FindingState::kFiring;
    }
  }
  for (auto it = open_.begin(); it != open_.end();) {
    Finding& f = it->second.finding;
    if (f.rule != rule.name || seen.contains(it->first)) {
      ++it;
      continue;
    }
    if (f.state == FindingState::kPending) {
      it = open_.erase(it);  // never confirmed: forgotten, like an alert that never fired
      continue;
    }
    if (now - f.end >= rule.clear_after) {
      f.state = FindingState::kResolved;
      f.updated = now;
      resolved_.push_front(std::move(f));
      if (resolved_.size() > max_resolved_) resolved_.pop_back();
      it = open_.erase(it);
      continue;
    }
    ++it;
  }
}

bool FindingTracker::Open(std::string_view rule, std::string_view host,
                          std::string_view entity) const {
  return open_.find(FindingKey(rule, host, entity)) != open_.end();
}

std::vector<Finding> FindingTracker::Findings() const {
  std::vector<Finding> out;
  out.reserve(open_.size() + resolved_.size());
  for (const auto& [key, open] : open_) out.push_back(open.finding);
  out.insert(out.end(), resolved_.begin(), resolved_.end());
  return out;
}

void FindingTracker::Restore(std::vector<Finding> findings) {
  for (Finding& f : findings) {
    if (f.state == FindingState::kResolved) {
      resolved_.push_back(std::move(f));
      continue;
    }
    std::string key = FindingKey(f.rule, f.host, f.entity);
    base::TimePoint last = f.end;
    open_[key] = OpenFinding{std::move(f), last};
  }
  std::stable_sort(resolved_.begin(), resolved_.end(),
                   [](const Finding& a, const Finding& b) { return a.updated > b.updated; });
  while (resolved_.size() > max_resolved_) resolved_.pop_back();
}

}  // namespace warpscope::server::insights
