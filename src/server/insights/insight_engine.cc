// SPDX-License-Identifier: Apache-2.0
#include "server/insights/insight_engine.h"

#include <utility>

namespace warpscope::server::insights {

base::Result<std::unique_ptr<InsightEngine>> InsightEngine::Create(
    Storage& storage, EngineOptions options, std::vector<std::unique_ptr<Rule>> rules) {
  WARPSCOPE_RETURN_IF_ERROR(options.config.Validate());
  if (options.step < std::chrono::seconds(1) || options.lookback < options.step * 6 ||
      options.lookback > std::chrono::hours(6)) {
    return base::Error(base::InvalidArgument(
        "insights: step {} and lookback {} are out of range; use a step of at least 1s and a "
        "lookback of 6 steps to 6h",
        base::FormatDuration(options.step), base::FormatDuration(options.lookback)));
  }
  return std::unique_ptr<InsightEngine>(
      new InsightEngine(storage, std::move(options), std::move(rules)));
}

base::Status InsightEngine::Evaluate(base::TimePoint now) {
  InputsQuery query;
  query.end = now;
  query.lookback = options_.lookback;
  query.step = options_.step;
  WARPSCOPE_ASSIGN_OR_RETURN(InsightInputs inputs, ReadInsightInputs(storage_, query));
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::unique_ptr<Rule>& rule : rules_) {
    const RuleInfo& info = rule->info();
    RuleContext context{inputs, options_.config,
                        [&](std::string_view host, std::string_view entity) {
                          return tracker_.Open(info.name, host, entity);
                        }};
    std::vector<Observation> observations = rule->Evaluate(context);
    tracker_.Apply(info, observations, now, options_.config.gpu_hour_price);
  }
  return base::OkStatus();
}

std::vector<Finding> InsightEngine::Findings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tracker_.Findings();
}

void InsightEngine::Restore(std::vector<Finding> findings) {
  std::lock_guard<std::mutex> lock(mu_);
  tracker_.Restore(std::move(findings));
}

}  // namespace warpscope::server::insights
