// SPDX-License-Identifier: Apache-2.0
#include "cli/export_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/file_util.h"
#include "base/testing/temp_dir.h"

namespace warpscope::cli {
namespace {

using ::testing::HasSubstr;

struct Outcome {
  int rc = -1;
  std::string out;
  std::string err;
};

// Parses `args` (after the program name) as main does, with the server and export
// subcommands, and runs the export.
Outcome RunCommand(std::vector<std::string> args) {
  CLI::App app("test");
  app.set_config("--config");
  app.allow_config_extras(CLI::config_extras_mode::error);
  ServerFlags server_flags;
  server_flags.Register(*app.add_subcommand("server"));
  app.config_formatter(server_flags.ConfigReader());
  ExportFlags flags;
  flags.Register(*app.add_subcommand("export"));
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  Outcome o;
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    o.err = e.what();
    return o;
  }
  std::ostringstream out, err;
  o.rc = RunExport(flags, server_flags, out, err);
  o.out = out.str();
  o.err = err.str();
  return o;
}

std::string ConfigFile(const base::TempDir& dir, const std::string& toml) {
  const std::string path = dir.path() + "/warpscope.toml";
  EXPECT_TRUE(base::WriteFile(path, toml).ok());
  return path;
}

TEST(ExportFlagsTest, RulesTakeTheThresholdsOfTheServersConfigFile) {
  base::TempDir dir;
  const std::string config = ConfigFile(dir, R"(
[server]
data-dir = "/tmp/warpscope-data"

[server.insights]
cooling-rate-c-per-min = 7
cooling-window = "2m"
)");
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"--config=" + config, "export", "prometheus-rules"},
                                             {"export", "prometheus-rules", "--config", config}}) {
    Outcome o = RunCommand(args);
    ASSERT_EQ(o.rc, 0) << o.err;
    EXPECT_THAT(o.out, HasSubstr("deriv(DCGM_FI_DEV_GPU_TEMP[2m]) * 60 > 7\n"));
  }
  Outcome defaults = RunCommand({"export", "prometheus-rules"});
  ASSERT_EQ(defaults.rc, 0) << defaults.err;
  EXPECT_THAT(defaults.out, HasSubstr("deriv(DCGM_FI_DEV_GPU_TEMP[1m]) * 60 > 10\n"));
}

TEST(ExportFlagsTest, ABadThresholdIsExitTwoWithTheKey) {
  base::TempDir dir;
  Outcome o = RunCommand({"export", "prometheus-rules", "--config",
                          ConfigFile(dir, "[server.insights]\ncooling-rate-c-per-mn = 7\n")});
  EXPECT_EQ(o.rc, 2);
  EXPECT_THAT(o.err, HasSubstr("cooling-rate-c-per-mn"));
  EXPECT_THAT(o.err, HasSubstr("cooling-rate-c-per-min"));  // the closest valid key
  EXPECT_TRUE(o.out.empty());
}

TEST(ExportFlagsTest, RulesGoToOutputWithTheRunbookBase) {
  base::TempDir dir;
  const std::string path = dir.path() + "/rules.yml";
  Outcome o = RunCommand({"export", "prometheus-rules", "--output", path, "--runbook-base-url",
                          "https://docs.example/insights.md", "--no-keep-firing-for"});
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_TRUE(o.out.empty());
  auto text = base::ReadFile(path);
  ASSERT_TRUE(text.has_value());
  EXPECT_THAT(*text, HasSubstr("runbook_url: https://docs.example/insights.md#rules"));
  EXPECT_THAT(*text, ::testing::Not(HasSubstr("keep_firing_for:")));

  Outcome bad =
      RunCommand({"export", "prometheus-rules", "--output", dir.path() + "/no/such/rules.yml"});
  EXPECT_EQ(bad.rc, 2);
  EXPECT_THAT(bad.err, HasSubstr("no/such/rules.yml"));
}

TEST(ExportFlagsTest, GrafanaWritesTheThreeDashboards) {
  base::TempDir dir;
  const std::string out_dir = dir.path() + "/dashboards";
  Outcome o = RunCommand({"export", "grafana", "--output-dir", out_dir});
  ASSERT_EQ(o.rc, 0) << o.err;
  for (const char* name : {"warpscope-fleet.json", "warpscope-host.json", "warpscope-gpu.json"}) {
    const std::string path = out_dir + "/" + name;
    EXPECT_THAT(o.out, HasSubstr(path));
    auto text = base::ReadFile(path);
    ASSERT_TRUE(text.has_value()) << path;
    auto doc = nlohmann::json::parse(*text, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << path;
    EXPECT_EQ(doc["schemaVersion"], 39);
  }
  ASSERT_TRUE(base::WriteFile(dir.path() + "/file", "x").ok());
  Outcome bad = RunCommand({"export", "grafana", "--output-dir", dir.path() + "/file/sub"});
  EXPECT_EQ(bad.rc, 2);
  EXPECT_THAT(bad.err, HasSubstr("--output-dir"));
}

TEST(ExportFlagsTest, ExportNeedsOneOfItsSubcommands) {
  Outcome o = RunCommand({"export"});
  EXPECT_EQ(o.rc, -1);
  EXPECT_FALSE(o.err.empty());
}

}  // namespace
}  // namespace warpscope::cli
