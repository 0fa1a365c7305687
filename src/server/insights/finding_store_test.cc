// SPDX-License-Identifier: Apache-2.0
#include "server/insights/finding_store.h"

#include <gtest/gtest.h>

#include "base/file_util.h"
#include "base/testing/temp_dir.h"

namespace warpscope::server::insights {
namespace {

Finding Sample() {
  Finding f;
  f.rule = "cooling_failure";
  f.title = "Cooling failure";
  f.severity = Severity::kPage;
  f.state = FindingState::kFiring;
  f.host = "node-1";
  f.entity = "GPU-2";
  f.kind = model::EntityKind::kGpu;
  f.attributes.Set("gpu.index", "2");
  f.start = base::FromUnixNanos(1'700'000'000'000'000'000);
  f.end = f.start + std::chrono::minutes(3);
  f.updated = f.end;
  f.id = FindingId(FindingKey(f.rule, f.host, f.entity), f.start);
  f.summary = "GPU 2 heats up at 12.5 °C/min.";
  f.evidence = {{"rate_c_per_min", 12.5}, {"series", nlohmann::json::array()}};
  f.suggestion = "Check the fans.";
  f.waste = {0.123456789, 0.3};
  return f;
}

TEST(FindingStoreTest, SavedFindingsLoadBackAsTheyWere) {
  base::TempDir dir;
  FileFindingStore store(dir.path() + "/insights.json");
  base::Result<std::vector<Finding>> none = store.Load();
  ASSERT_TRUE(none) << none.error().message();
  EXPECT_TRUE(none->empty());
  Finding f = Sample();
  ASSERT_TRUE(store.Save({f}).ok());
  base::Result<std::vector<Finding>> loaded =
      FileFindingStore(dir.path() + "/insights.json").Load();
  ASSERT_TRUE(loaded) << loaded.error().message();
  ASSERT_EQ(loaded->size(), 1u);
  const Finding& g = (*loaded)[0];
  EXPECT_EQ(g.id, f.id);
  EXPECT_EQ(g.rule, f.rule);
  EXPECT_EQ(g.severity, Severity::kPage);
  EXPECT_EQ(g.state, FindingState::kFiring);
  EXPECT_EQ(g.attributes, f.attributes);
  EXPECT_EQ(g.start, f.start);
  EXPECT_EQ(g.end, f.end);
  EXPECT_EQ(g.updated, f.updated);
  EXPECT_EQ(g.evidence, f.evidence);
  EXPECT_EQ(g.waste.gpu_hours, f.waste.gpu_hours) << "kept unrounded";
  EXPECT_EQ(g.suggestion, f.suggestion);
}

TEST(FindingStoreTest, AnUnreadableFileIsMovedAsideNotLost) {
  base::TempDir dir;
  const std::string path = dir.path() + "/insights.json";
  ASSERT_TRUE(base::WriteFile(path, "{\"version\": 1, \"findings\": [{\"id\": 3}]}").ok());
  base::Result<std::vector<Finding>> loaded = FileFindingStore(path).Load();
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message().find("\"id\" is missing or has the wrong type"),
            std::string::npos)
      << loaded.error().message();
  EXPECT_NE(loaded.error().message().find(".unreadable"), std::string::npos);
  EXPECT_EQ(*base::ReadFile(path + ".unreadable"), "{\"version\": 1, \"findings\": [{\"id\": 3}]}");
  // The next load starts clean.
  ASSERT_TRUE(FileFindingStore(path).Load());

  ASSERT_TRUE(base::WriteFile(path, "not json").ok());
  EXPECT_FALSE(FileFindingStore(path).Load());
  ASSERT_TRUE(base::WriteFile(path, "{\"version\": 7, \"findings\": []}").ok());
  EXPECT_FALSE(FileFindingStore(path).Load());
}

TEST(FindingTest, JsonNamesEveryFieldAndIdsAreStable) {
  Finding f = Sample();
  nlohmann::json j = FindingJson(f);
  for (const char* key :
       {"id", "rule", "title", "severity", "state", "host", "entity", "kind", "attributes", "start",
        "end", "summary", "evidence", "suggestion", "waste"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["severity"], "page");
  EXPECT_EQ(j["kind"], "gpu");
  EXPECT_EQ(j["waste"]["gpu_hours"], 0.1235);
  EXPECT_FALSE(j.contains("updated"));
  EXPECT_EQ(f.id.size(), 17u);
  EXPECT_EQ(f.id, FindingId(FindingKey("cooling_failure", "node-1", "GPU-2"), f.start));
  EXPECT_NE(f.id, FindingId(FindingKey("cooling_failure", "node-1", "GPU-2"),
                            f.start + std::chrono::seconds(1)));
}

TEST(FindingTest, QueriesSelectByEveryFilter) {
  Finding f = Sample();
  EXPECT_TRUE(Matches(f, {}));
  EXPECT_FALSE(Matches(f, {.host = "node-2"}));
  EXPECT_FALSE(Matches(f, {.rule = "power_drop"}));
  EXPECT_TRUE(Matches(f, {.severity = Severity::kPage}));
  EXPECT_FALSE(Matches(f, {.state = FindingState::kResolved}));
  EXPECT_TRUE(Matches(f, {.start = f.end, .end = f.end + std::chrono::hours(1)}));
  EXPECT_FALSE(Matches(f, {.start = f.end + std::chrono::seconds(1)}));
  EXPECT_FALSE(Matches(f, {.end = f.start}));
  EXPECT_FALSE(ParseSeverity("urgent"));
  EXPECT_NE(ParseFindingState("open").error().message().find("pending, firing or resolved"),
            std::string::npos);
}

}  // namespace
}  // namespace warpscope::server::insights
