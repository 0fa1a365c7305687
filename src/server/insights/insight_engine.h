// SPDX-License-Identifier: Apache-2.0
// The insights engine: every evaluation reads the recent past from storage once
// (insight_inputs.h), runs every rule over it (rule.h) and carries the findings' lifecycle
// forward (finding_tracker.h). The server calls Evaluate on its own sequence, once per export
// interval; readers (the API) call Findings from any thread.
#ifndef WARPSCOPE_SERVER_INSIGHTS_INSIGHT_ENGINE_H_
#define WARPSCOPE_SERVER_INSIGHTS_INSIGHT_ENGINE_H_

#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "server/insights/finding.h"
#include "server/insights/finding_store.h"
#include "server/insights/finding_tracker.h"
#include "server/insights/gpu_profiles.h"
#include "server/insights/insight_config.h"
#include "server/insights/insight_inputs.h"
#include "server/insights/rule.h"
#include "server/storage/storage.h"

namespace warpscope::server::insights {

struct EngineOptions {
  InsightConfig config;
  base::Duration lookback = std::chrono::minutes(15);  // covers every rule's window
  base::Duration step = std::chrono::seconds(10);
  // Evaluations read only the newest minute and keep the rest from the one before; every this
  // often they read the whole lookback again (windows delivered after an outage).
  base::Duration full_read_every = std::chrono::minutes(5);
  // The slow GPU metrics (InputsQuery::slow_every) are read this often.
  base::Duration slow_every = std::chrono::minutes(1);
  // The long view (insight_inputs.h, LongView): read once a `long_step`, re-reading its last
  // `long_reread`; every `long_full_read_every` it is read whole again.
  base::Duration long_lookback = std::chrono::minutes(90);  // covers config.fleet_window
  base::Duration long_step = std::chrono::minutes(1);
  base::Duration long_reread = std::chrono::minutes(5);
  base::Duration long_full_read_every = std::chrono::minutes(30);
};

class InsightEngine {
 public:
  // InvalidArgument when the options are out of range (the message names the setting).
  // With a `store` (may be null), the findings it holds are continued and every evaluation
  // saves them; a store that cannot be read is logged and the engine starts with none.
  [[nodiscard]] static base::Result<std::unique_ptr<InsightEngine>> Create(
      Storage& storage, EngineOptions options, FindingStore* store = nullptr,
      std::vector<std::unique_ptr<Rule>> rules = DefaultRules());

  // One evaluation at `now` over [now - lookback, now), then a save to the store. Called from
  // one sequence (not concurrently with itself). A storage
  // error leaves the findings as they were and is returned; so is a failed save (the findings
  // are updated, the next save retries).
  [[nodiscard]] base::Status Evaluate(base::TimePoint now);

  // New thresholds and read cadences (a configuration reload), from the next evaluation on;
  // InvalidArgument (naming the setting) leaves the engine as it was. The findings stay; the
  // inputs are read whole again. On Evaluate's sequence.
  [[nodiscard]] base::Status Reconfigure(EngineOptions options);

  // Every finding: open ones first, then resolved ones, newest first.
  std::vector<Finding> Findings() const;
  // Those `query` selects, at most query.limit.
  std::vector<Finding> Findings(const FindingQuery& query) const;
  std::optional<Finding> FindingById(std::string_view id) const;
  // The rules it runs, in order.
  std::vector<RuleInfo> Rules() const;

 private:
  // The long view at `now`: the one held while `now` is in the same step, else read again.
  [[nodiscard]] base::Result<std::shared_ptr<const LongView>> LongViewAt(base::TimePoint now);

  InsightEngine(Storage& storage, EngineOptions options, FindingStore* store,
                std::vector<std::unique_ptr<Rule>> rules)
      : storage_(storage),
        options_(std::move(options)),
        store_(store),
        rules_(std::move(rules)),
        gpu_profiles_(GpuProfileCacheOptions{.window = options_.config.tensor_window,
                                             .refresh = options_.config.tensor_profile_refresh}) {}

  // Fills inputs.gpu_profiles for the GPUs a rule wants profiles of (from the cache; a storage
  // error is logged and leaves the digests read so far).
  void ReadGpuProfiles(InsightInputs& inputs, base::TimePoint now);
  // The training jobs (training_inputs.h), read again once config.training_refresh has passed;
  // a failed read keeps those read before (logged).
  std::shared_ptr<const std::vector<JobInput>> JobsAt(base::TimePoint now,
                                                      const InsightInputs& inputs);

  // InvalidArgument when `options` are out of range.
  [[nodiscard]] static base::Status ValidateOptions(const EngineOptions& options);

  Storage& storage_;
  EngineOptions options_;  // Evaluate's sequence only (Reconfigure replaces it)
  FindingStore* const store_;
  bool saved_some_ = false;  // the store holds findings (so an empty set must be saved too)
  // The last snapshot and when the lookback was last read whole; Evaluate's sequence only.
  std::optional<InsightInputs> previous_;
  base::TimePoint last_full_read_;
  // The long view, and when it was last read whole; Evaluate's sequence only.
  std::shared_ptr<const LongView> long_view_;
  std::shared_ptr<const std::vector<JobInput>> jobs_;  // Evaluate's sequence only
  base::TimePoint jobs_read_;
  base::TimePoint last_long_full_read_;
  const std::vector<std::unique_ptr<Rule>> rules_;
  GpuProfileCache gpu_profiles_;  // Evaluate's sequence only
  mutable std::mutex mu_;
  FindingTracker tracker_;  // guarded by mu_
};

}  // namespace warpscope::server::insights

#endif  // WARPSCOPE_SERVER_INSIGHTS_INSIGHT_ENGINE_H_
