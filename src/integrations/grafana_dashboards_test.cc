// SPDX-License-Identifier: Apache-2.0
#include "integrations/grafana_dashboards.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>

namespace warpscope::integrations {
namespace {

using nlohmann::json;

// The fields of Grafana's dashboard JSON model that a dashboard file must carry for import and
// provisioning (Grafana docs, "JSON model"), with their types.
void ExpectDashboardModel(const json& d) {
  ASSERT_TRUE(d.is_object());
  EXPECT_TRUE(d["title"].is_string() && !d["title"].get<std::string>().empty());
  EXPECT_TRUE(d["uid"].is_string() && !d["uid"].get<std::string>().empty());
  EXPECT_LE(d["uid"].get<std::string>().size(), 40u) << "Grafana's uid limit";
  EXPECT_EQ(d["schemaVersion"], 39);
  EXPECT_TRUE(d["version"].is_number_integer());
  EXPECT_TRUE(d["time"]["from"].is_string());
  EXPECT_TRUE(d["time"]["to"].is_string());
  EXPECT_TRUE(d["refresh"].is_string());
  EXPECT_TRUE(d["tags"].is_array());
  EXPECT_TRUE(d["links"].is_array());
  EXPECT_FALSE(d.contains("id")) << "an id would clash on import; the uid identifies it";
  ASSERT_TRUE(d["templating"]["list"].is_array());
  for (const json& v : d["templating"]["list"]) {
    SCOPED_TRACE(v.dump());
    EXPECT_TRUE(v["name"].is_string());
    EXPECT_THAT(std::set<std::string>({"datasource", "query"}),
                ::testing::Contains(v["type"].get<std::string>()));
    EXPECT_TRUE(v["query"].is_string() && !v["query"].get<std::string>().empty());
  }
  ASSERT_TRUE(d["panels"].is_array());
  EXPECT_FALSE(d["panels"].empty());
  for (const json& p : d["panels"]) {
    SCOPED_TRACE(p.value("title", "?"));
    EXPECT_TRUE(p["id"].is_number_integer());
    EXPECT_THAT(std::set<std::string>({"timeseries", "stat", "table"}),
                ::testing::Contains(p["type"].get<std::string>()));
    EXPECT_TRUE(p["title"].is_string());
    EXPECT_EQ(p["datasource"]["uid"], "${datasource}");
    EXPECT_EQ(p["datasource"]["type"], "prometheus");
    for (const char* k : {"x", "y", "w", "h"}) EXPECT_TRUE(p["gridPos"][k].is_number_integer());
    EXPECT_TRUE(p["fieldConfig"]["defaults"]["unit"].is_string());
    ASSERT_TRUE(p["targets"].is_array());
    EXPECT_FALSE(p["targets"].empty());
    std::set<std::string> ref_ids;
    for (const json& t : p["targets"]) {
      EXPECT_TRUE(t["expr"].is_string() && !t["expr"].get<std::string>().empty());
      EXPECT_TRUE(ref_ids.insert(t["refId"].get<std::string>()).second) << "duplicate refId";
      EXPECT_EQ(t["datasource"]["uid"], "${datasource}");
    }
  }
}

std::string VariableNames(const json& d) {
  std::string out;
  for (const json& v : d["templating"]["list"]) out += v["name"].get<std::string>() + " ";
  return out;
}

// Every URL of the dashboard's links and its panels' data links.
std::vector<std::string> Urls(const json& d) {
  std::vector<std::string> out;
  for (const json& l : d["links"]) out.push_back(l["url"]);
  for (const json& p : d["panels"]) {
    for (const json& l : p["fieldConfig"]["defaults"].value("links", json::array())) {
      out.push_back(l["url"]);
    }
  }
  return out;
}

TEST(GrafanaDashboardsTest, EveryDashboardFollowsGrafanasModel) {
  const auto dashboards = GrafanaDashboards();
  ASSERT_EQ(dashboards.size(), 3u);
  std::set<std::string> uids;
  std::set<std::string> files;
  for (const GrafanaDashboard& d : dashboards) {
    SCOPED_TRACE(d.file_name);
    ExpectDashboardModel(d.json);
    EXPECT_TRUE(uids.insert(d.json["uid"]).second);
    EXPECT_TRUE(files.insert(d.file_name).second);
    EXPECT_THAT(d.file_name, ::testing::EndsWith(".json"));
  }
  EXPECT_EQ(uids,
            (std::set<std::string>{std::string(kFleetDashboardUid), std::string(kHostDashboardUid),
                                   std::string(kGpuDashboardUid)}));
}

TEST(GrafanaDashboardsTest, VariablesFollowTheHierarchy) {
  const auto dashboards = GrafanaDashboards();
  EXPECT_EQ(VariableNames(dashboards[0].json), "datasource Hostname ");
  EXPECT_EQ(VariableNames(dashboards[1].json), "datasource Hostname gpu ");
  EXPECT_EQ(VariableNames(dashboards[2].json), "datasource Hostname gpu ");
  for (const GrafanaDashboard& d : dashboards) {
    for (const json& v : d.json["templating"]["list"]) {
      if (v["type"] == "query") {
        EXPECT_THAT(v["query"].get<std::string>(), ::testing::StartsWith("label_values("));
      }
    }
  }
}

TEST(GrafanaDashboardsTest, PanelIdsAreUniqueAndTheGridHasNoOverlap) {
  for (const GrafanaDashboard& d : GrafanaDashboards()) {
    SCOPED_TRACE(d.file_name);
    std::set<int> ids;
    std::set<std::pair<int, int>> cells;
    for (const json& p : d.json["panels"]) {
      EXPECT_TRUE(ids.insert(p["id"].get<int>()).second) << "duplicate panel id " << p["id"];
      const json& g = p["gridPos"];
      const int x = g["x"], y = g["y"], w = g["w"], h = g["h"];
      EXPECT_GE(x, 0);
      EXPECT_GE(y, 0);
      EXPECT_GT(w, 0);
      EXPECT_GT(h, 0);
      EXPECT_LE(x + w, 24) << p["title"];
      for (int cx = x; cx < x + w; ++cx) {
        for (int cy = y; cy < y + h; ++cy) {
          EXPECT_TRUE(cells.insert({cx, cy}).second)
              << p["title"] << " overlaps another panel at " << cx << "," << cy;
        }
      }
    }
  }
}

TEST(GrafanaDashboardsTest, EveryLinkPointsAtAnExportedDashboard) {
  const auto dashboards = GrafanaDashboards();
  std::set<std::string> uids;
  for (const GrafanaDashboard& d : dashboards) uids.insert(d.json["uid"]);
  const std::regex kDashboardUrl(R"(^/d/([A-Za-z0-9_-]+)\?(.*)$)");
  for (const GrafanaDashboard& d : dashboards) {
    SCOPED_TRACE(d.file_name);
    const std::vector<std::string> urls = Urls(d.json);
    EXPECT_FALSE(d.json["links"].empty()) << "no way up or down";
    for (const std::string& url : urls) {
      std::smatch m;
      ASSERT_TRUE(std::regex_match(url, m, kDashboardUrl)) << url;
      EXPECT_TRUE(uids.contains(m[1].str())) << url;
      EXPECT_NE(m[1].str(), d.json["uid"].get<std::string>()) << "links to itself: " << url;
      EXPECT_THAT(url, ::testing::HasSubstr("${__url_time_range}"));
      EXPECT_THAT(url, ::testing::HasSubstr("${datasource:queryparam}"));
      if (m[1].str() == kGpuDashboardUid && url.find("var-gpu=") != std::string::npos) {
        EXPECT_THAT(url, ::testing::HasSubstr("var-Hostname="));
      }
    }
  }
  // Down the hierarchy by data links: fleet -> host and GPU, host -> GPU.
  auto data_links_to = [](const json& d, std::string_view uid, std::string_view var) {
    int n = 0;
    for (const json& p : d["panels"]) {
      for (const json& l : p["fieldConfig"]["defaults"].value("links", json::array())) {
        const std::string url = l["url"];
        n += url.starts_with("/d/" + std::string(uid) + "?") &&
             url.find(std::string(var)) != std::string::npos;
      }
    }
    return n;
  };
  EXPECT_GT(data_links_to(dashboards[0].json, kHostDashboardUid, "var-Hostname="), 0);
  EXPECT_GT(data_links_to(dashboards[0].json, kGpuDashboardUid, "var-gpu="), 0);
  EXPECT_GT(data_links_to(dashboards[1].json, kGpuDashboardUid, "var-gpu="), 0);
}

TEST(GrafanaDashboardsTest, PanelsHaveUnitsForTheirMetrics) {
  for (const GrafanaDashboard& d : GrafanaDashboards()) {
    for (const json& p : d.json["panels"]) {
      const std::string expr = p["targets"][0]["expr"];
      const std::string unit = p["fieldConfig"]["defaults"]["unit"];
      SCOPED_TRACE(expr);
      if (expr.find("DCGM_FI_DEV_GPU_TEMP") != std::string::npos) {
        EXPECT_EQ(unit, "celsius");
      }
      if (expr.find("DCGM_FI_DEV_POWER_USAGE") != std::string::npos) {
        EXPECT_EQ(unit, "watt");
      }
      if (expr.find("DCGM_FI_DEV_FB_USED") != std::string::npos) {
        EXPECT_EQ(unit, "bytes");
      }
      if (expr.starts_with("count(")) continue;  // a number of GPUs
      if (expr.find("(DCGM_FI_DEV_GPU_UTIL") != std::string::npos ||
          expr.starts_with("DCGM_FI_DEV_GPU_UTIL")) {
        EXPECT_EQ(unit, "percent");
      }
    }
  }
}

}  // namespace
}  // namespace warpscope::integrations
