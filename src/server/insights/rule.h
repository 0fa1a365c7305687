// SPDX-License-Identifier: Apache-2.0
// One insight rule: a small, independent piece that looks at the inputs snapshot and names the
// entities where its condition holds now. Lifecycle (pending/firing/resolved), deduplication
// and cost accounting are the tracker's (finding_tracker.h), so a rule only answers "where
// does it hold, with which evidence, and what share of the GPU does it cost".
#ifndef WARPSCOPE_SERVER_INSIGHTS_RULE_H_
#define WARPSCOPE_SERVER_INSIGHTS_RULE_H_

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/time.h"
#include "model/entity.h"
#include "model/labels.h"
#include "server/insights/finding.h"
#include "server/insights/insight_config.h"
#include "server/insights/insight_inputs.h"

namespace warpscope::server::insights {

struct RuleInfo {
  std::string_view name;   // stable snake_case, the API's `rule`
  std::string_view title;  // "Cooling failure"
  Severity severity = Severity::kTicket;
  base::Duration hold_for{};     // pending until the condition has held this long; 0: at once
  base::Duration clear_after{};  // firing until the condition has been gone this long
  std::string_view suggestion;   // what to do about it
};

// Where the condition holds, now.
struct Observation {
  std::string host;
  std::string entity;
  model::EntityKind kind = model::EntityKind::kGpu;
  model::Labels attributes;
  std::string summary;  // one sentence with the figures
  nlohmann::json evidence = nlohmann::json::object();
  // The share of the entity's GPU capacity the problem costs while it holds (idle: 1, a GPU
  // throttled to half its power: ~0.5, a risk that costs nothing yet: 0).
  double lost_fraction = 0;
  // The GPUs the entity spans, which the waste is charged for (a cluster: its GPUs).
  double gpus = 1;
  // Overrides the rule's severity for this entity (an XID the application caused is a ticket,
  // one the hardware caused a page).
  std::optional<Severity> severity;
};

struct RuleContext {
  const InsightInputs& inputs;
  const InsightConfig& config;
  // Whether `rule` has an open (pending or firing) finding for `entity` on `host`: rules with
  // a lower threshold to clear than to raise (hysteresis) ask this.
  std::function<bool(std::string_view host, std::string_view entity)> open;
};

class Rule {
 public:
  virtual ~Rule() = default;
  virtual const RuleInfo& info() const = 0;
  virtual std::vector<Observation> Evaluate(const RuleContext& context) const = 0;
  // How long a finding stays pending before it fires: info().hold_for unless the rule reads it
  // from the config.
  virtual base::Duration HoldFor(const InsightConfig& /*config*/) const { return info().hold_for; }
  // How long a firing finding stays open once its condition is gone: info().clear_after unless
  // the rule reads it from the config.
  virtual base::Duration ClearAfter(const InsightConfig& /*config*/) const {
    return info().clear_after;
  }
  // Whether the rule reads the GPU profiles of `gpu`'s processes (InsightInputs::gpu_profiles)
  // in this snapshot: the engine reads only those, from its cache (gpu_profiles.h).
  virtual bool WantsGpuProfiles(const InsightInputs& /*inputs*/, const InsightConfig& /*config*/,
                                const GpuInput& /*gpu*/) const {
    return false;
  }
};

// The evidence of one series over buckets [from, to): {"metric", "unit", "start", "step_ms",
// "values"} with null for buckets without data, so the UI can draw it and link the chart.
nlohmann::json SeriesEvidence(const InsightInputs& inputs, std::string_view metric,
                              std::string_view unit, const Series& series, size_t from, size_t to);

// The same over buckets of `step` from `start` (the long view's).
nlohmann::json SeriesEvidence(base::TimePoint start, base::Duration step, std::string_view metric,
                              std::string_view unit, const Series& series, size_t from, size_t to);

// Every rule the engine runs, in the order docs/insights.md lists them: the one table that
// registers a rule.
std::vector<std::unique_ptr<Rule>> DefaultRules();

// The alertname of a rule's findings in Alertmanager (server/alerts) and of its twin in the
// exported Prometheus rules (integrations/): "Gpu" and the rule in CamelCase
// ("cooling_failure" -> "GpuCoolingFailure"); a process's leak is "GpuProcessMemoryLeak", a
// cluster's regression "FleetRegression", the inference rules' (a model's serving process) have
// no "Gpu" ("inference_queueing" -> "InferenceQueueing"), nor have the training rules' (a rank's
// process: "training_straggler" -> "TrainingStraggler"). hardware_errors is "GpuHardwareError" here; the
// exported rules split it by kind (XID, application XID, ECC, row remapping) under the same
// `rule` label.
std::string AlertName(std::string_view rule);

}  // namespace warpscope::server::insights

#endif  // WARPSCOPE_SERVER_INSIGHTS_RULE_H_
