// SPDX-License-Identifier: Apache-2.0
#include "server/alerts/alert.h"

#include <gtest/gtest.h>

namespace warpscope::server::alerts {
namespace {

insights::Finding CoolingFinding() {
  insights::Finding f;
  f.id = "f0123456789abcdef";
  f.rule = "cooling_failure";
  f.title = "Cooling failure";
  f.severity = insights::Severity::kPage;
  f.state = insights::FindingState::kFiring;
  f.host = "node-7";
  f.entity = "GPU-aaaa";
  f.attributes = model::Labels({{"gpu.index", "3"}, {"gpu.uuid", "GPU-aaaa"}, {"cluster", "c1"}});
  f.summary = "GPU 3 heats at 25 °C/min";
  f.suggestion = "check the fans";
  f.evidence = {{"rate_c_per_min", 25.0}};
  f.waste.gpu_hours = 0.5;
  return f;
}

TEST(AlertTest, AFindingsAlertCarriesItsIdentityEvidenceAndLink) {
  Alert a = AlertOfFinding(CoolingFinding(), "http://ui.example:9410/");
  EXPECT_EQ(a.labels.at("alertname"), "GpuCoolingFailure");
  EXPECT_EQ(a.labels.at("severity"), "page");
  EXPECT_EQ(a.labels.at("rule"), "cooling_failure");
  EXPECT_EQ(a.labels.at("host"), "node-7");
  EXPECT_EQ(a.labels.at("gpu"), "3");
  EXPECT_EQ(a.labels.at("UUID"), "GPU-aaaa");
  EXPECT_EQ(a.labels.at("cluster"), "c1");
  EXPECT_FALSE(a.labels.contains("pid"));
  EXPECT_EQ(a.annotations.at("summary"), "GPU 3 heats at 25 °C/min");
  EXPECT_NE(a.annotations.at("description").find("check the fans"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(a.annotations.at("evidence"))["rate_c_per_min"], 25.0);
  EXPECT_EQ(a.annotations.at("finding_id"), "f0123456789abcdef");
  EXPECT_EQ(a.annotations.at("gpu_hours_lost"), "0.50");
  EXPECT_EQ(a.generator_url, "http://ui.example:9410/insights/f0123456789abcdef");
}

TEST(AlertTest, ATrainingFindingNamesItsJobAndRank) {
  insights::Finding f = CoolingFinding();
  f.rule = "training_straggler";
  f.entity = "pid/7730/1";
  f.attributes = model::Labels({{"process.pid", "7730"}, {"job.id", "run-3"}, {"job.rank", "5"}});
  Alert a = AlertOfFinding(f, "http://ui.example:9410/");
  EXPECT_EQ(a.labels.at("alertname"), "TrainingStraggler");
  EXPECT_EQ(a.labels.at("pid"), "7730");
  EXPECT_EQ(a.labels.at("job"), "run-3");
  EXPECT_EQ(a.labels.at("rank"), "5");
  EXPECT_FALSE(a.labels.contains("gpu"));
}

TEST(AlertTest, HugeEvidenceIsCut) {
  insights::Finding f = CoolingFinding();
  f.evidence = {{"series", std::string(100000, 'x')}};
  Alert a = AlertOfFinding(f, "");
  EXPECT_LT(a.annotations.at("evidence").size(), 4200u);
  EXPECT_TRUE(a.generator_url.empty());
}

TEST(AlertTest, TheKeyIsTheLabelSet) {
  Alert a = AlertOfFinding(CoolingFinding(), "");
  insights::Finding other = CoolingFinding();
  other.id = "fffffffffffffffff";
  other.summary = "another sentence";
  EXPECT_EQ(AlertKey(a), AlertKey(AlertOfFinding(other, "")));
  other.attributes = model::Labels({{"gpu.index", "4"}});
  EXPECT_NE(AlertKey(a), AlertKey(AlertOfFinding(other, "")));
}

TEST(AlertTest, TheBodyIsAlertmanagersV2Array) {
  Alert a = AlertOfFinding(CoolingFinding(), "http://x");
  a.starts_at = base::FromUnixNanos(1'764'927'499'123'000'000);
  a.ends_at = a.starts_at + std::chrono::minutes(4);
  nlohmann::json body = AlertsJson(std::vector<Alert>{a});
  ASSERT_TRUE(body.is_array());
  ASSERT_EQ(body.size(), 1u);
  EXPECT_EQ(body[0]["startsAt"], "2025-12-05T09:38:19.123Z");
  EXPECT_EQ(body[0]["endsAt"], "2025-12-05T09:42:19.123Z");
  EXPECT_EQ(body[0]["generatorURL"], "http://x/insights/f0123456789abcdef");
  EXPECT_EQ(body[0]["labels"]["alertname"], "GpuCoolingFailure");
  EXPECT_TRUE(body[0]["annotations"]["summary"].is_string());
}

TEST(AlertTest, Rfc3339BeforeTheEpochKeepsItsMilliseconds) {
  EXPECT_EQ(Rfc3339(base::FromUnixNanos(-1'000'000)), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(Rfc3339(base::FromUnixNanos(0)), "1970-01-01T00:00:00.000Z");
}

}  // namespace
}  // namespace warpscope::server::alerts
