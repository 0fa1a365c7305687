// SPDX-License-Identifier: Apache-2.0
// SIGHUP with the real binaries: the server reads its config file and token file again (a
// rotated token is taken, the old one refused; a setting that needs a restart is named; a broken
// file is refused and the running configuration stays), and the agent applies a new log level
// and keeps collecting.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "base/file_util.h"
#include "child_process.h"
#include "scrape.h"

namespace warpscope::test {
namespace {

using std::chrono::seconds;

// Polls `done` every 50 ms until it holds or 20 s have passed.
bool Eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

void WriteSecret(const std::string& path, const std::string& text) {
  ASSERT_TRUE(base::WriteFile(path, text).ok()) << path;
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
}

// The status of an empty batch sent with `token`: 401 when the server refuses the token (any
// other status means it was accepted and the body judged).
int IngestStatus(int port, const std::string& token) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2);
  httplib::Headers headers = {{"Authorization", "Bearer " + token}};
  auto res = c.Post("/api/v1/ingest/batch", headers, "", "application/x-protobuf");
  return res ? res->status : -1;
}

std::string ServerConfig(const TempDir& tmp, int port, const std::string& extra = "") {
  return "[server]\n"
         "data-dir = \"" +
         tmp.path() +
         "/data\"\n"
         "listen-address = \"127.0.0.1:" +
         std::to_string(port) +
         "\"\n"
         "auth-token-file = \"" +
         tmp.path() + "/token\"\n" + extra;
}

TEST(ReloadE2ETest, ServerTakesARotatedTokenAndKeepsItsConfigOnABrokenFile) {
  TempDir tmp;
  const int port = PickFreePort();
  const std::string config = tmp.path() + "/warpscope.toml";
  const std::string first(32, 'a');
  const std::string second(32, 'b');
  WriteSecret(tmp.path() + "/token", first + "\n");
  ASSERT_TRUE(base::WriteFile(config, ServerConfig(tmp, port)).ok());
  auto server = ChildProcess::Start({WarpscopeBinary(), "--config", config, "server"}, tmp.path());
  ASSERT_TRUE(server);
  WaitForHttp(port, "/healthz", [](const std::string&) { return true; });
  EXPECT_NE(IngestStatus(port, first), 401);
  EXPECT_EQ(IngestStatus(port, second), 401);

  // The token is rotated and a setting that needs a restart changes.
  WriteSecret(tmp.path() + "/token", second + "\n");
  ASSERT_TRUE(base::WriteFile(config, ServerConfig(tmp, port, "max-body-bytes = 1048576\n")).ok());
  ASSERT_EQ(kill((*server)->pid(), SIGHUP), 0);
  ASSERT_TRUE(Eventually([&] { return IngestStatus(port, second) != 401; })) << (*server)->Stderr();
  EXPECT_EQ(IngestStatus(port, first), 401);
  ASSERT_TRUE(Eventually([&] {
    return (*server)->Stderr().find("--max-body-bytes changed; that takes a restart") !=
           std::string::npos;
  })) << (*server)->Stderr();
  EXPECT_NE((*server)->Stderr().find("configuration reloaded: applied the bearer token"),
            std::string::npos);

  // A misspelt key: refused with the key named, and the running configuration stays.
  ASSERT_TRUE(base::WriteFile(config, ServerConfig(tmp, port, "max-body-byte = 1\n")).ok());
  ASSERT_EQ(kill((*server)->pid(), SIGHUP), 0);
  ASSERT_TRUE(Eventually([&] {
    const std::string err = (*server)->Stderr();
    return err.find("reload refused") != std::string::npos &&
           err.find("max-body-byte") != std::string::npos;
  })) << (*server)->Stderr();
  EXPECT_NE(IngestStatus(port, second), 401);
  EXPECT_EQ(IngestStatus(port, first), 401);

  // An unreadable token file keeps the token in use.
  ASSERT_TRUE(base::WriteFile(config, ServerConfig(tmp, port)).ok());
  ASSERT_EQ(chmod((tmp.path() + "/token").c_str(), 0644), 0);
  ASSERT_EQ(kill((*server)->pid(), SIGHUP), 0);
  ASSERT_TRUE(Eventually([&] {
    return (*server)->Stderr().find("the token in use stays") != std::string::npos;
  })) << (*server)->Stderr();
  EXPECT_NE(IngestStatus(port, second), 401);

  const int status = (*server)->Signal(SIGTERM, seconds(10));
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ReloadE2ETest, AgentAppliesALogLevelAndNamesWhatNeedsARestart) {
  TempDir tmp;
  const int port = PickFreePort();
  const std::string config = tmp.path() + "/warpscope.toml";
  auto agent_config = [&](const std::string& level, const std::string& interval) {
    return "[agent]\nlog-level = \"" + level + "\"\ncollect-metrics-interval = \"" + interval +
           "\"\nlisten-address = \"127.0.0.1:" + std::to_string(port) + "\"\n";
  };
  ASSERT_TRUE(base::WriteFile(config, agent_config("info", "500ms")).ok());
  auto agent = ChildProcess::Start({WarpscopeBinary(), "--config", config, "agent", "--simulate",
                                    "healthy-8xh100", "--enable-host-metrics=false"},
                                   tmp.path());
  ASSERT_TRUE(agent);
  WaitForHttp(port, "/metrics", [](const std::string& b) {
    return b.find("DCGM_FI_DEV_GPU_TEMP") != std::string::npos;
  });

  ASSERT_TRUE(base::WriteFile(config, agent_config("warning", "2s")).ok());
  ASSERT_EQ(kill((*agent)->pid(), SIGHUP), 0);
  ASSERT_TRUE(Eventually([&] {
    return (*agent)->Stderr().find("configuration reloaded: log level warning") !=
           std::string::npos;
  })) << (*agent)->Stderr();
  EXPECT_NE((*agent)->Stderr().find("--collect-metrics-interval changed; that takes a restart"),
            std::string::npos)
      << (*agent)->Stderr();
  // Still collecting and serving.
  WaitForHttp(port, "/metrics", [](const std::string& b) {
    return b.find("DCGM_FI_DEV_GPU_TEMP") != std::string::npos;
  });
  const int status = (*agent)->Signal(SIGTERM, seconds(10));
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace warpscope::test
