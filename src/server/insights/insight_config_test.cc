// SPDX-License-Identifier: Apache-2.0
#include "server/insights/insight_config.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "base/file_util.h"

namespace warpscope::server::insights {
namespace {

TEST(InsightConfigTest, TheDefaultsAreValid) { EXPECT_TRUE(InsightConfig().Validate().ok()); }

TEST(InsightConfigTest, EveryKeyIsUniqueAndSetsItsField) {
  std::set<std::string_view> keys;
  for (const InsightConfigKey& k : InsightConfigKeys()) {
    EXPECT_TRUE(keys.insert(k.key).second) << k.key;
    EXPECT_FALSE(k.meaning.empty()) << k.key;
    // Its default, written back, is its default.
    InsightConfig config;
    const std::string value = InsightConfigValue(config, k);
    ASSERT_TRUE(SetInsightConfig(config, k.key, value).ok()) << k.key << " = " << value;
    EXPECT_EQ(InsightConfigValue(config, k), value);
  }
  EXPECT_GE(keys.size(), 40u);
}

TEST(InsightConfigTest, SetsNumbersCountsAndDurations) {
  InsightConfig c;
  ASSERT_TRUE(SetInsightConfig(c, "thermal-outlier-c", "7.5").ok());
  ASSERT_TRUE(SetInsightConfig(c, "thermal-min-peers", "5").ok());
  ASSERT_TRUE(SetInsightConfig(c, "idle-window", "12m").ok());
  EXPECT_EQ(c.thermal_outlier_c, 7.5);
  EXPECT_EQ(c.thermal_min_peers, 5u);
  EXPECT_EQ(c.idle_window, std::chrono::minutes(12));
  EXPECT_TRUE(c.Validate().ok());
}

TEST(InsightConfigTest, AnUnknownKeyNamesTheClosestOne) {
  InsightConfig c;
  base::Status st = SetInsightConfig(c, "thermal-outlier", "5");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("\"thermal-outlier\""), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("did you mean \"thermal-outlier-c\""), std::string::npos)
      << st.message();
}

TEST(InsightConfigTest, AValueOfTheWrongFormSaysWhatToGive) {
  InsightConfig c;
  base::Status st = SetInsightConfig(c, "idle-window", "10");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("idle-window = \"10\""), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("duration"), std::string::npos) << st.message();
  EXPECT_FALSE(SetInsightConfig(c, "thermal-outlier-c", "warm").ok());
  EXPECT_FALSE(SetInsightConfig(c, "thermal-min-peers", "2.5").ok());
}

TEST(InsightConfigTest, AValueOutOfRangeNamesTheKeyItsValueAndTheRange) {
  InsightConfig c;
  c.thermal_outlier_c = 0.1;
  base::Status st = c.Validate();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("thermal-outlier-c = 0.1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("[0.5, 100]"), std::string::npos) << st.message();
  InsightConfig w;
  w.fleet_min_span = std::chrono::minutes(90);
  st = w.Validate();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("fleet-min-span = 1h30m"), std::string::npos) << st.message();
}

TEST(InsightConfigTest, TheDocsListEveryKeyWithItsDefault) {
  auto doc = base::ReadFile(std::string(WARPSCOPE_SOURCE_DIR) + "/docs/insights.md");
  ASSERT_TRUE(doc) << doc.error().message();
  EXPECT_NE(doc->find(InsightConfigTable()), std::string::npos)
      << "docs/insights.md's table of [server.insights] keys is stale; it should read:\n"
      << InsightConfigTable();
}

}  // namespace
}  // namespace warpscope::server::insights
