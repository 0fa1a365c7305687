// SPDX-License-Identifier: Apache-2.0
// The rules the engine ships, one factory each (DefaultRules in rule.h lists them all). Their
// logic and thresholds are documented in docs/insights.md.
#ifndef WARPSCOPE_SERVER_INSIGHTS_RULES_H_
#define WARPSCOPE_SERVER_INSIGHTS_RULES_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "server/insights/rule.h"

namespace warpscope::server::insights {

std::unique_ptr<Rule> MakeInputBoundRule();      // rules_input.cc
std::unique_ptr<Rule> MakeMemoryBoundRule();     // rules_efficiency.cc
std::unique_ptr<Rule> MakeTensorCoresIdleRule();  // rules_tensor.cc
std::unique_ptr<Rule> MakeUnderpoweredRule();    // rules_efficiency.cc
std::unique_ptr<Rule> MakeCoolingFailureRule();  // rules_thermal.cc
std::unique_ptr<Rule> MakeThermalOutlierRule();  // rules_thermal.cc
std::unique_ptr<Rule> MakePowerDropRule();       // rules_power.cc
std::unique_ptr<Rule> MakeHardwareErrorsRule();  // rules_hardware.cc
std::unique_ptr<Rule> MakeTrainingStragglerRule();         // rules_training.cc
std::unique_ptr<Rule> MakeTrainingSlowInterconnectRule();  // rules_training.cc
std::unique_ptr<Rule> MakeTrainingCommHeavyRule();         // rules_training.cc
std::unique_ptr<Rule> MakeTrainingStepRegressionRule();    // rules_training.cc
std::unique_ptr<Rule> MakeIdleAllocatedRule();   // rules_memory.cc
std::unique_ptr<Rule> MakeMemoryLeakRule();      // rules_memory.cc
std::unique_ptr<Rule> MakeInferenceOverprovisionedRule();  // rules_inference.cc
std::unique_ptr<Rule> MakeInferenceQueueingRule();         // rules_inference.cc
std::unique_ptr<Rule> MakeInferenceSlowFirstTokenRule();   // rules_inference.cc
std::unique_ptr<Rule> MakeInferenceMemoryBoundRule();      // rules_inference.cc
std::unique_ptr<Rule> MakeFleetRegressionRule();  // rules_fleet.cc

// What the rules share.
// The number of buckets `d` spans at the inputs' step (at least 1).
size_t BucketsIn(const InsightInputs& inputs, base::Duration d);
// The last `d` of the inputs: `w` buckets wanted, [from, n) present.
struct Trailing {
  size_t n = 0;
  size_t w = 0;
  size_t from = 0;
  Trailing(const InsightInputs& inputs, base::Duration d);
};
// The GPU's attributes with its uuid, for a finding.
model::Labels GpuAttributes(const GpuInput& gpu);
// An observation on `gpu`: its host, uuid and attributes set.
Observation OnGpu(const GpuInput& gpu);
// The GPU's full-load power (gpu_models.h), from its model and its latest power limit.
double FullLoadWatts(const GpuInput& gpu);
// The XIDs an application's own bug raises (an illegal memory access, a fault in its kernel, a
// cancelled context): hardware_errors makes them a ticket for the application's owner, not a
// page for the operator.
std::span<const int64_t> ApplicationXids();
// "GPU 2 (NVIDIA H100 80GB HBM3) of node-1" for summaries.
std::string GpuName(const GpuInput& gpu);

}  // namespace warpscope::server::insights

#endif  // WARPSCOPE_SERVER_INSIGHTS_RULES_H_
