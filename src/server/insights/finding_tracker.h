// SPDX-License-Identifier: Apache-2.0
// The lifecycle of findings across evaluations: one finding per (rule, host, entity), pending
// when its condition is first seen, firing once it has held for the rule's `hold_for`, resolved
// once it has been gone for the rule's `clear_after` (so a condition that blinks for one
// evaluation neither opens nor closes a finding twice), and the GPU-hours each costs while open.
//
// Not thread-safe: the engine owns one and guards it.
#ifndef WARPSCOPE_SERVER_INSIGHTS_FINDING_TRACKER_H_
#define WARPSCOPE_SERVER_INSIGHTS_FINDING_TRACKER_H_

#include <cstddef>
#include <deque>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/time.h"
#include "server/insights/finding.h"
#include "server/insights/rule.h"

namespace warpscope::server::insights {

class FindingTracker {
 public:
  // `max_resolved`: resolved findings kept (newest first) before the oldest are forgotten.
  explicit FindingTracker(size_t max_resolved = 1000) : max_resolved_(max_resolved) {}

  // One evaluation of `rule` at `now` saw `observations`. Each opens or updates its finding;
  // open findings of `rule` it did not see are dropped (pending: never confirmed) or resolved
  // once unseen for `clear_after` (firing). `price` is per GPU-hour.
  void Apply(const RuleInfo& rule, std::span<const Observation> observations, base::TimePoint now,
             double price);

  // Whether `rule` has a pending or firing finding for `entity` on `host`.
  bool Open(std::string_view rule, std::string_view host, std::string_view entity) const;

  bool empty() const { return open_.empty() && resolved_.empty(); }

  // Open findings (by key) then resolved ones (newest resolution first).
  std::vector<Finding> Findings() const;

  // Puts back findings kept from an earlier run (a server restart): open ones continue their
  // lifecycle, resolved ones are listed again.
  void Restore(std::vector<Finding> findings);

 private:
  struct OpenFinding {
    Finding finding;
    base::TimePoint last_evaluated;  // the last evaluation of its rule that saw it
  };
  std::map<std::string, OpenFinding, std::less<>> open_;
  std::deque<Finding> resolved_;
  size_t max_resolved_;
};

}  // namespace warpscope::server::insights

#endif  // WARPSCOPE_SERVER_INSIGHTS_FINDING_TRACKER_H_
