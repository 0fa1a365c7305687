// SPDX-License-Identifier: Apache-2.0
// The insights engine: every evaluation reads the recent past from storage once
// (insight_inputs.h), runs every rule over it (rule.h) and carries the findings' lifecycle
// forward (finding_tracker.h). The server calls Evaluate on its own sequence, once per export
// interval; readers (the API) call Findings from any thread.
#ifndef WARPSCOPE_SERVER_INSIGHTS_INSIGHT_ENGINE_H_
#define WARPSCOPE_SERVER_INSIGHTS_INSIGHT_ENGINE_H_

#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "server/insights/finding.h"
#include "server/insights/finding_tracker.h"
#include "server/insights/insight_config.h"
#include "server/insights/insight_inputs.h"
#include "server/insights/rule.h"
#include "server/storage/storage.h"

namespace warpscope::server::insights {

struct EngineOptions {
  InsightConfig config;
  base::Duration lookback = std::chrono::minutes(15);  // covers every rule's window
  base::Duration step = std::chrono::seconds(10);
};

class InsightEngine {
 public:
  // InvalidArgument when the options are out of range (the message names the setting).
  [[nodiscard]] static base::Result<std::unique_ptr<InsightEngine>> Create(
      Storage& storage, EngineOptions options,
      std::vector<std::unique_ptr<Rule>> rules = DefaultRules());

  // One evaluation at `now` over [now - lookback, now). A storage error leaves the findings as
  // they were and is returned.
  [[nodiscard]] base::Status Evaluate(base::TimePoint now);

  // Every finding: open ones first, then resolved ones, newest first.
  std::vector<Finding> Findings() const;

  // Findings kept from an earlier run, to continue.
  void Restore(std::vector<Finding> findings);

 private:
  InsightEngine(Storage& storage, EngineOptions options, std::vector<std::unique_ptr<Rule>> rules)
      : storage_(storage), options_(std::move(options)), rules_(std::move(rules)) {}

  Storage& storage_;
  const EngineOptions options_;
  const std::vector<std::unique_ptr<Rule>> rules_;
  mutable std::mutex mu_;
  FindingTracker tracker_;  // guarded by mu_
};

}  // namespace warpscope::server::insights

#endif  // WARPSCOPE_SERVER_INSIGHTS_INSIGHT_ENGINE_H_
