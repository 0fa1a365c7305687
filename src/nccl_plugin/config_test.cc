// SPDX-License-Identifier: Apache-2.0
#include "nccl_plugin/config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace warpscope::nccl_plugin {
namespace {

GetEnv Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(NcclConfigTest, DefaultsAreTheCheapMask) {
  std::vector<std::string> warnings;
  const PluginConfig c = ReadPluginConfig(Env({}), &warnings);
  EXPECT_TRUE(c.enabled);
  EXPECT_FALSE(c.proxy_detail);
  EXPECT_EQ(c.max_events, 8192u);
  EXPECT_TRUE(c.agent_socket.empty());
  EXPECT_TRUE(warnings.empty());
}

TEST(NcclConfigTest, ReadsEveryVariableAndPrefersItsOwnSocket) {
  std::vector<std::string> warnings;
  const PluginConfig c = ReadPluginConfig(
      Env({{"WARPSCOPE_NCCL_SOCKET", "/tmp/n.sock"}, {"WARPSCOPE_AGENT_SOCKET", "/tmp/a.sock"},
           {"WARPSCOPE_NCCL_PROXY_DETAIL", "1"}, {"WARPSCOPE_NCCL_MAX_EVENTS", "128"},
           {"WARPSCOPE_NCCL_RING_KB", "16"}, {"WARPSCOPE_NCCL_FLUSH_MS", "10"},
           {"WARPSCOPE_NCCL_ENABLED", "0"}, {"WARPSCOPE_NCCL_LOG", "stderr"}}),
      &warnings);
  EXPECT_EQ(c.agent_socket, "/tmp/n.sock");
  EXPECT_TRUE(c.proxy_detail);
  EXPECT_EQ(c.max_events, 128u);
  EXPECT_EQ(c.ring_kb, 16u);
  EXPECT_EQ(c.flush_ms, 10u);
  EXPECT_FALSE(c.enabled);
  EXPECT_TRUE(c.log_stderr);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(ReadPluginConfig(Env({{"WARPSCOPE_AGENT_SOCKET", "/tmp/a.sock"}}), &warnings)
                .agent_socket,
            "/tmp/a.sock");
}

TEST(NcclConfigTest, InvalidValuesWarnAndKeepTheDefault) {
  std::vector<std::string> warnings;
  const PluginConfig c = ReadPluginConfig(
      Env({{"WARPSCOPE_NCCL_MAX_EVENTS", "3"}, {"WARPSCOPE_NCCL_PROXY_DETAIL", "yes"}}), &warnings);
  EXPECT_EQ(c.max_events, 8192u);
  EXPECT_FALSE(c.proxy_detail);
  EXPECT_EQ(warnings.size(), 2u);
}

TEST(NcclConfigTest, DefaultSocketIsTheAgentsOne) {
  const auto none = [](const char*) { return false; };
  EXPECT_EQ(DefaultSocket(Env({{"XDG_RUNTIME_DIR", "/run/user/7"}}), none),
            "/run/user/7/warpscope/cupti.sock");
  EXPECT_EQ(DefaultSocket(Env({}), [](const char*) { return true; }),
            "/run/warpscope/cupti.sock");
}

}  // namespace
}  // namespace warpscope::nccl_plugin
