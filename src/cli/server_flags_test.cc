// SPDX-License-Identifier: Apache-2.0
#include "cli/server_flags.h"

#include <gtest/gtest.h>

#include "base/file_util.h"
#include "base/testing/temp_dir.h"

namespace warpscope::cli {
namespace {

using std::chrono::minutes;

// Parses `args` (after the program name) as main does: a root app with --config, and the
// server subcommand.
base::Status Parse(std::vector<std::string> args, server::ServerConfig& config) {
  CLI::App app("test");
  app.set_config("--config");
  app.allow_config_extras(CLI::config_extras_mode::error);
  auto* sub = app.add_subcommand("server");
  ServerFlags flags;
  flags.Register(*sub);
  app.config_formatter(flags.ConfigReader());
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return base::InvalidArgument("{}", e.what());
  }
  return flags.Finish(config);
}

// `toml` written to a file in `dir`; its path.
std::string ConfigFile(const base::TempDir& dir, const std::string& toml) {
  const std::string path = dir.path() + "/server.toml";
  EXPECT_TRUE(base::WriteFile(path, toml).ok());
  return path;
}

TEST(ServerFlagsTest, InsightThresholdsComeFromTheConfigFileToTheEngine) {
  base::TempDir dir;
  const std::string path = ConfigFile(dir, R"(
[server]
data-dir = "/tmp/warpscope-data"
gpu-hour-price = 2.5

[server.insights]
thermal-outlier-c = 7
idle-window = "12m"
thermal-min-peers = 4
fleet-drop = 0.2   # twenty points
)");
  server::ServerConfig config;
  base::Status st = Parse({"--config=" + path, "server"}, config);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(config.data_dir, "/tmp/warpscope-data");
  server::insights::EngineOptions options = InsightEngineOptions(config);
  EXPECT_EQ(options.config.thermal_outlier_c, 7);
  EXPECT_EQ(options.config.idle_window, minutes(12));
  EXPECT_EQ(options.config.thermal_min_peers, 4u);
  EXPECT_EQ(options.config.fleet_drop, 0.2);
  EXPECT_EQ(options.config.gpu_hour_price, 2.5);
  // The rest keep InsightConfig's defaults.
  EXPECT_EQ(options.config.cooling_window, server::insights::InsightConfig().cooling_window);
}

TEST(ServerFlagsTest, AThresholdOutOfRangeNamesTheKeyItsValueAndTheRange) {
  base::TempDir dir;
  server::ServerConfig config;
  base::Status st = Parse(
      {"--config=" + ConfigFile(dir, "[server.insights]\nthermal-outlier-c = 0.1\n"), "server"},
      config);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), base::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("thermal-outlier-c = 0.1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("[0.5, 100]"), std::string::npos) << st.message();

  st = Parse({"--config=" + ConfigFile(dir, "[server.insights]\nidle-window = 10\n"), "server"},
             config);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("idle-window = \"10\""), std::string::npos) << st.message();
}

TEST(ServerFlagsTest, AnUnknownInsightKeyNamesTheClosestValidOne) {
  base::TempDir dir;
  server::ServerConfig config;
  base::Status st = Parse(
      {"--config=" + ConfigFile(dir, "[server.insights]\nthermal-outliers-c = 6\n"), "server"},
      config);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("\"thermal-outliers-c\""), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("did you mean \"thermal-outlier-c\""), std::string::npos)
      << st.message();
  // A misspelt key of [server] itself is still CLI11's error.
  EXPECT_FALSE(
      Parse({"--config=" + ConfigFile(dir, "[server]\ndata-dri = \"/x\"\n"), "server"}, config)
          .ok());
}

TEST(ServerFlagsTest, StorageFlagsReachTheConfig) {
  server::ServerConfig config;
  base::Status st = Parse({"server", "--storage=clickhouse://ch.internal:8123/warpscope",
                           "--storage-user=ingest", "--storage-password-file=/etc/ws/ch.pw"},
                          config);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(config.storage, "clickhouse://ch.internal:8123/warpscope");
  EXPECT_EQ(config.storage_user, "ingest");
  EXPECT_EQ(config.storage_password_file, "/etc/ws/ch.pw");

  ASSERT_TRUE(Parse({"server"}, config).ok());
  EXPECT_EQ(config.storage, "sqlite");
}

TEST(ServerFlagsTest, ABadStorageUrlNamesTheExpectedForm) {
  server::ServerConfig config;
  base::Status st = Parse({"server", "--storage=clickhouse://ch.internal:8123"}, config);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), base::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("clickhouse://HOST[:PORT]/DATABASE"), std::string::npos)
      << st.message();
  EXPECT_FALSE(Parse({"server", "--storage=postgres://x/y"}, config).ok());
}

TEST(ServerFlagsTest, AlertmanagerFlagsReachTheConfig) {
  server::ServerConfig config;
  base::Status st = Parse({"server", "--alertmanager-url=http://127.0.0.1:9093",
                           "--alertmanager-url=http://am2:9093/prefix", "--alert-severity=ticket",
                           "--alert-resend-interval=30s", "--external-url=https://ws.example"},
                          config);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(config.alertmanager_urls,
            (std::vector<std::string>{"http://127.0.0.1:9093", "http://am2:9093/prefix"}));
  EXPECT_EQ(config.alert_severity, "ticket");
  EXPECT_EQ(config.alert_resend_interval, std::chrono::seconds(30));
  EXPECT_EQ(config.external_url, "https://ws.example");
}

TEST(ServerFlagsTest, StepRetentionReachesTheConfig) {
  server::ServerConfig config;
  ASSERT_TRUE(Parse({"server"}, config).ok());
  EXPECT_EQ(config.step_retention, std::chrono::hours(24 * 30));
  base::Status st = Parse({"server", "--step-retention=3d"}, config);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(config.step_retention, std::chrono::hours(72));
  st = Parse({"server", "--step-retention=10m"}, config);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("--step-retention"), std::string::npos) << st.message();
}

TEST(ServerFlagsTest, StepRetentionComesFromTheConfigFile) {
  base::TempDir dir;
  const std::string path = ConfigFile(dir, "[server]\nstep-retention = \"2d\"\n");
  server::ServerConfig config;
  base::Status st = Parse({"--config=" + path, "server"}, config);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(config.step_retention, std::chrono::hours(48));
}

TEST(ServerFlagsTest, TraceRetentionAndBoundReachTheConfig) {
  server::ServerConfig config;
  ASSERT_TRUE(Parse({"server"}, config).ok());
  EXPECT_EQ(config.trace_retention, std::chrono::hours(24));
  EXPECT_EQ(config.trace_max_spans, 1'000'000u);
  base::Status st = Parse({"server", "--trace-retention=2h", "--trace-max-spans=5000"}, config);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(config.trace_retention, std::chrono::hours(2));
  EXPECT_EQ(config.trace_max_spans, 5000u);
  for (const char* bad : {"--trace-retention=10s", "--trace-max-spans=10"}) {
    st = Parse({"server", bad}, config);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find(std::string(bad).substr(0, std::string(bad).find('='))),
              std::string::npos)
        << st.message();
  }
}

TEST(ServerFlagsTest, BadAlertSettingsAreRefusedNamingTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string flag;
  } const cases[] = {
      {{"server", "--alertmanager-url=ftp://am:9093"}, "--alertmanager-url"},
      {{"server", "--alertmanager-url=http://am:9093", "--insights-interval=0s"},
       "--alertmanager-url"},
      {{"server", "--alert-severity=urgent"}, "--alert-severity"},
      {{"server", "--alert-resend-interval=0s"}, "--alert-resend-interval"},
      {{"server", "--external-url=ws.example"}, "--external-url"},
  };
  for (const Case& c : cases) {
    server::ServerConfig config;
    base::Status st = Parse(c.args, config);
    ASSERT_FALSE(st.ok()) << c.args.back();
    EXPECT_NE(st.message().find(c.flag), std::string::npos) << st.message();
  }
}

TEST(ServerFlagsTest, HttpFrontEndLimitsReachTheConfigAndBadOnesAreRefused) {
  server::ServerConfig config;
  base::Status st =
      Parse({"server", "--http-request-deadline=5s", "--http-keepalive-timeout=2m",
             "--http-max-requests-per-connection=0", "--http-max-connections=500",
             "--http-max-connections-per-client=20", "--http-io-threads=3",
             "--http-ingest-threads=4", "--http-query-threads=6", "--http-queue-depth=64"},
            config);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(config.http_request_deadline, std::chrono::seconds(5));
  EXPECT_EQ(config.http_keepalive_timeout, minutes(2));
  EXPECT_EQ(config.http_max_requests_per_connection, 0);
  EXPECT_EQ(config.http_max_connections, 500);
  EXPECT_EQ(config.http_max_connections_per_client, 20);
  EXPECT_EQ(config.http_io_threads, 3);
  EXPECT_EQ(config.http_ingest_threads, 4);
  EXPECT_EQ(config.http_query_threads, 6);
  EXPECT_EQ(config.http_queue_depth, 64u);

  server::ServerConfig defaults;
  ASSERT_TRUE(Parse({"server"}, defaults).ok());
  EXPECT_EQ(defaults.http_request_deadline, std::chrono::seconds(30));
  EXPECT_EQ(defaults.http_max_connections, 10'000);

  st = Parse({"server", "--http-request-deadline=10ms"}, config);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("--http-request-deadline"), std::string::npos) << st.message();
  st = Parse({"server", "--http-query-threads=0"}, config);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("--http-query-threads"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace warpscope::cli
