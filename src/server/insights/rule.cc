// SPDX-License-Identifier: Apache-2.0
#include "server/insights/rule.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "fmt/format.h"
#include "server/insights/gpu_models.h"
#include "server/insights/rules.h"
#include "server/insights/series_math.h"

namespace warpscope::server::insights {

nlohmann::json SeriesEvidence(const InsightInputs& inputs, std::string_view metric,
                              std::string_view unit, const Series& series, size_t from, size_t to) {
  return SeriesEvidence(inputs.start, inputs.step, metric, unit, series, from, to);
}

nlohmann::json SeriesEvidence(base::TimePoint start, base::Duration step, std::string_view metric,
                              std::string_view unit, const Series& series, size_t from, size_t to) {
  to = std::min(to, series.size());
  from = std::min(from, to);
  nlohmann::json values = nlohmann::json::array();
  for (size_t i = from; i < to; ++i) {
    if (std::isfinite(series[i])) {
      values.push_back(std::round(series[i] * 1000) / 1000);
    } else {
      values.push_back(nullptr);
    }
  }
  return {{"metric", metric},
          {"unit", unit},
          {"start", base::ToUnixMillis(start + step * static_cast<int64_t>(from))},
          {"step_ms", std::chrono::duration_cast<std::chrono::milliseconds>(step).count()},
          {"values", std::move(values)}};
}

size_t BucketsIn(const InsightInputs& inputs, base::Duration d) {
  return std::max<size_t>(1, static_cast<size_t>(d / inputs.step));
}

Trailing::Trailing(const InsightInputs& inputs, base::Duration d)
    : n(inputs.buckets), w(BucketsIn(inputs, d)), from(n > w ? n - w : 0) {}

Observation OnGpu(const GpuInput& gpu) {
  Observation o;
  o.host = gpu.host;
  o.entity = gpu.uuid;
  o.attributes = GpuAttributes(gpu);
  return o;
}

double FullLoadWatts(const GpuInput& gpu) {
  std::optional<std::pair<size_t, double>> limit = Last(gpu.power_limit);
  return ExpectedFullLoadWatts(gpu.attributes.Get(model::attr::kGpuModel),
                               limit ? std::optional<double>(limit->second) : std::nullopt);
}

model::Labels GpuAttributes(const GpuInput& gpu) {
  model::Labels attributes = gpu.attributes;
  attributes.Set(model::attr::kGpuUuid, gpu.uuid);
  return attributes;
}

std::string GpuName(const GpuInput& gpu) {
  std::string_view index = gpu.attributes.Get(model::attr::kGpuIndex);
  std::string_view model_name = gpu.attributes.Get(model::attr::kGpuModel);
  std::string name = index.empty() ? gpu.uuid : fmt::format("GPU {}", index);
  if (!model_name.empty()) name += fmt::format(" ({})", model_name);
  return name + fmt::format(" of {}", gpu.host);
}

std::vector<std::unique_ptr<Rule>> DefaultRules() {
  std::vector<std::unique_ptr<Rule>> rules;
  rules.push_back(MakeInputBoundRule());       // 1
  rules.push_back(MakeMemoryBoundRule());      // 2
  rules.push_back(MakeTensorCoresIdleRule());  // 3
  rules.push_back(MakeUnderpoweredRule());     // 4
  rules.push_back(MakeThermalOutlierRule());   // 5
  rules.push_back(MakeCoolingFailureRule());   // 6
  rules.push_back(MakePowerDropRule());        // 7
  rules.push_back(MakeHardwareErrorsRule());   // 8
  rules.push_back(MakeTrainingStragglerRule());         // 9
  rules.push_back(MakeTrainingSlowInterconnectRule());  // 9
  rules.push_back(MakeTrainingCommHeavyRule());         // 10
  rules.push_back(MakeTrainingStepRegressionRule());    // 11
  rules.push_back(MakeMemoryLeakRule());       // 12
  rules.push_back(MakeInferenceOverprovisionedRule());  // 13
  rules.push_back(MakeInferenceQueueingRule());         // 13
  rules.push_back(MakeInferenceSlowFirstTokenRule());   // 13
  rules.push_back(MakeInferenceMemoryBoundRule());      // 13
  rules.push_back(MakeIdleAllocatedRule());    // 14
  rules.push_back(MakeFleetRegressionRule());  // 15
  return rules;
}

std::string AlertName(std::string_view rule) {
  if (rule == "memory_leak") return "GpuProcessMemoryLeak";
  if (rule == "fleet_regression") return "FleetRegression";
  if (rule == "hardware_errors") return "GpuHardwareError";
  // A serving process's findings are the model's, not a GPU's: "inference_queueing" ->
  // "InferenceQueueing".
  // So are a training job's (a rank's process): "training_straggler" -> "TrainingStraggler".
  const bool inference = rule.starts_with("inference_") || rule.starts_with("training_");
  std::string out = inference ? "" : "Gpu";
  bool upper = true;
  for (char c : rule) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

}  // namespace warpscope::server::insights
