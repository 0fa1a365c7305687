// SPDX-License-Identifier: Apache-2.0
#include "server/insights/insight_engine.h"

#include <charconv>
#include <set>
#include <utility>

#include "base/logging.h"
#include "server/insights/training_inputs.h"

namespace warpscope::server::insights {

base::Status InsightEngine::ValidateOptions(const EngineOptions& options) {
  WARPSCOPE_RETURN_IF_ERROR(options.config.Validate());
  if (options.step < std::chrono::seconds(1) || options.lookback < options.step * 6 ||
      options.lookback > std::chrono::hours(6)) {
    return base::Error(base::InvalidArgument(
        "insights: step {} and lookback {} are out of range; use a step of at least 1s and a "
        "lookback of 6 steps to 6h",
        base::FormatDuration(options.step), base::FormatDuration(options.lookback)));
  }
  if (options.long_step < options.step || options.long_lookback < options.config.fleet_window ||
      options.long_lookback > std::chrono::hours(6) || options.long_reread < options.long_step) {
    return base::Error(base::InvalidArgument(
        "insights: the long view's step {}, lookback {} and re-read {} are out of range; use a "
        "step of at least {}, a lookback of fleet-window ({}) to 6h and a re-read of a step or "
        "more",
        base::FormatDuration(options.long_step), base::FormatDuration(options.long_lookback),
        base::FormatDuration(options.long_reread), base::FormatDuration(options.step),
        base::FormatDuration(options.config.fleet_window)));
  }
  return base::OkStatus();
}

base::Status InsightEngine::Reconfigure(EngineOptions options) {
  WARPSCOPE_RETURN_IF_ERROR(ValidateOptions(options));
  options_ = std::move(options);
  gpu_profiles_ = GpuProfileCache(GpuProfileCacheOptions{
      .window = options_.config.tensor_window, .refresh = options_.config.tensor_profile_refresh});
  previous_.reset();
  long_view_.reset();
  jobs_.reset();
  return base::OkStatus();
}

base::Result<std::unique_ptr<InsightEngine>> InsightEngine::Create(
    Storage& storage, EngineOptions options, FindingStore* store,
    std::vector<std::unique_ptr<Rule>> rules) {
  WARPSCOPE_RETURN_IF_ERROR(ValidateOptions(options));
  std::unique_ptr<InsightEngine> engine(
      new InsightEngine(storage, std::move(options), store, std::move(rules)));
  if (store) {
    base::Result<std::vector<Finding>> kept = store->Load();
    if (kept) {
      engine->saved_some_ = !kept->empty();
      engine->tracker_.Restore(std::move(*kept));
    } else {
      WARPSCOPE_LOG(WARNING, "insights: {}", kept.error().message());
    }
  }
  return engine;
}

base::Status InsightEngine::Evaluate(base::TimePoint now) {
  InputsQuery query;
  query.end = now;
  query.lookback = options_.lookback;
  query.step = options_.step;
  query.slow_every = options_.slow_every;
  const bool full =
      !previous_ || now - last_full_read_ >= options_.full_read_every || now < last_full_read_;
  WARPSCOPE_ASSIGN_OR_RETURN(InsightInputs inputs,
                             ReadInsightInputs(storage_, query, full ? nullptr : &*previous_));
  if (full) last_full_read_ = now;
  WARPSCOPE_ASSIGN_OR_RETURN(inputs.long_view, LongViewAt(now));
  ReadGpuProfiles(inputs, now);
  inputs.jobs = JobsAt(now, inputs);
  std::vector<Finding> findings;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::unique_ptr<Rule>& rule : rules_) {
      RuleInfo info = rule->info();
      info.hold_for = rule->HoldFor(options_.config);
      info.clear_after = rule->ClearAfter(options_.config);
      RuleContext context{inputs, options_.config,
                          [&](std::string_view host, std::string_view entity) {
                            return tracker_.Open(info.name, host, entity);
                          }};
      std::vector<Observation> observations = rule->Evaluate(context);
      tracker_.Apply(info, observations, now, options_.config.gpu_hour_price);
    }
    previous_ = std::move(inputs);
    if (!store_ || (!saved_some_ && tracker_.empty())) return base::OkStatus();
    findings = tracker_.Findings();
  }
  // Evaluations run on one sequence, so saves never race each other; readers are not held up.
  WARPSCOPE_RETURN_IF_ERROR(store_->Save(findings));
  saved_some_ = !findings.empty();
  return base::OkStatus();
}

base::Result<std::shared_ptr<const LongView>> InsightEngine::LongViewAt(base::TimePoint now) {
  LongViewQuery query;
  query.end = now;
  query.lookback = options_.long_lookback;
  query.step = options_.long_step;
  query.reread = options_.long_reread;
  if (long_view_ && now >= long_view_->end() && now < long_view_->end() + query.step) {
    return long_view_;  // the same step: nothing new is complete
  }
  const bool full = !long_view_ || now - last_long_full_read_ >= options_.long_full_read_every ||
                    now < last_long_full_read_;
  WARPSCOPE_ASSIGN_OR_RETURN(LongView view,
                             ReadLongView(storage_, query, full ? nullptr : long_view_.get()));
  if (full) last_long_full_read_ = now;
  long_view_ = std::make_shared<const LongView>(std::move(view));
  return long_view_;
}

std::shared_ptr<const std::vector<JobInput>> InsightEngine::JobsAt(base::TimePoint now,
                                                                   const InsightInputs& inputs) {
  const InsightConfig& config = options_.config;
  if (jobs_ && now >= jobs_read_ && now - jobs_read_ < config.training_refresh) return jobs_;
  base::Result<std::vector<JobInput>> jobs =
      ReadTrainingJobs(storage_, now - config.training_window, now, config, inputs.processes);
  if (!jobs) {
    // The training rules keep the jobs read before; the other rules are not held up.
    WARPSCOPE_LOG_EVERY_N(WARNING, 60, "insights: reading training steps: {}",
                          jobs.error().message());
    if (!jobs_) jobs_ = std::make_shared<const std::vector<JobInput>>();
    return jobs_;
  }
  jobs_read_ = now;
  jobs_ = std::make_shared<const std::vector<JobInput>>(std::move(*jobs));
  return jobs_;
}

void InsightEngine::ReadGpuProfiles(InsightInputs& inputs, base::TimePoint now) {
  std::set<std::pair<std::string_view, std::string_view>> wanted;  // (host, GPU uuid)
  for (const GpuInput& g : inputs.gpus) {
    for (const std::unique_ptr<Rule>& rule : rules_) {
      if (rule->WantsGpuProfiles(inputs, options_.config, g)) {
        wanted.insert({g.host, g.uuid});
        break;
      }
    }
  }
  std::vector<ProfileTarget> targets;
  for (const ProcessGpuInput& p : inputs.processes) {
    if (!wanted.contains({p.host, p.gpu})) continue;
    std::string_view pid = p.attributes.Get(model::attr::kPid);
    int64_t n = 0;
    auto [end, ec] = std::from_chars(pid.data(), pid.data() + pid.size(), n);
    if (ec != std::errc() || end != pid.data() + pid.size() || n <= 0) continue;
    targets.push_back({p.host, p.entity, n});
  }
  if (base::Status st = gpu_profiles_.Update(storage_, targets, now, inputs.gpu_profiles);
      !st.ok()) {
    WARPSCOPE_LOG_EVERY_N(WARNING, 60, "insights: reading GPU profiles: {}", st.message());
  }
}

std::vector<Finding> InsightEngine::Findings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tracker_.Findings();
}

std::vector<Finding> InsightEngine::Findings(const FindingQuery& query) const {
  std::vector<Finding> out;
  for (Finding& f : Findings()) {
    if (out.size() >= query.limit) break;
    if (Matches(f, query)) out.push_back(std::move(f));
  }
  return out;
}

std::optional<Finding> InsightEngine::FindingById(std::string_view id) const {
  for (Finding& f : Findings()) {
    if (f.id == id) return std::move(f);
  }
  return std::nullopt;
}

std::vector<RuleInfo> InsightEngine::Rules() const {
  std::vector<RuleInfo> out;
  for (const std::unique_ptr<Rule>& rule : rules_) out.push_back(rule->info());
  return out;
}

}  // namespace warpscope::server::insights
