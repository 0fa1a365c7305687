// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/env_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace warpscope::cupti_inject {
namespace {

InjectConfig Read(std::map<std::string, std::string> env, std::vector<std::string>* warnings) {
  return ReadInjectConfig(
      [&env](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      warnings);
}

TEST(InjectConfigTest, DefaultsWithoutEnvironment) {
  std::vector<std::string> w;
  auto c = Read({}, &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(c.rate, 200u);
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.unwinder, Unwinder::kBacktrace);
  EXPECT_FALSE(c.pc_sampling);
}

TEST(InjectConfigTest, ReadsValidValues) {
  std::vector<std::string> w;
  auto c = Read({{"WARPSCOPE_CUPTI_RATE", "50"},
                 {"WARPSCOPE_CUPTI_UNWINDER", "fp"},
                 {"WARPSCOPE_CUPTI_PC_SAMPLING", "1"},
                 {"WARPSCOPE_CUPTI_KERNELS", "all"},
                 {"WARPSCOPE_AGENT_SOCKET", "/tmp/x.sock"}},
                &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(c.rate, 50u);
  EXPECT_EQ(c.unwinder, Unwinder::kFramePointer);
  EXPECT_TRUE(c.pc_sampling);
  EXPECT_TRUE(c.all_kernels);
  EXPECT_EQ(c.agent_socket, "/tmp/x.sock");
}

TEST(InjectConfigTest, InvalidValuesWarnOnceAndKeepDefaults) {
  std::vector<std::string> w;
  auto c = Read({{"WARPSCOPE_CUPTI_RATE", "fast"},
                 {"WARPSCOPE_CUPTI_RING_KB", "1"},
                 {"WARPSCOPE_CUPTI_ENABLED", "maybe"},
                 {"WARPSCOPE_CUPTI_UNWINDER", "dwarf"}},
                &w);
  ASSERT_EQ(w.size(), 4u);
  EXPECT_NE(std::find_if(w.begin(), w.end(),
                         [](const std::string& m) {
                           return m.starts_with("WARPSCOPE_CUPTI_RATE=\"fast\" is invalid");
                         }),
            w.end());
  EXPECT_EQ(c.rate, 200u);
  EXPECT_EQ(c.ring_kb, 64u);
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.unwinder, Unwinder::kBacktrace);
}

TEST(InjectConfigTest, AllKernelsModes) {
  std::vector<std::string> w;
  EXPECT_TRUE(Read({}, &w).AllKernelsCycle().IsOff());
  EXPECT_TRUE(Read({{"WARPSCOPE_CUPTI_KERNELS", "all"}}, &w).AllKernelsCycle().IsAlways());
  auto c = Read({{"WARPSCOPE_CUPTI_ALL_KERNELS_WINDOW_MS", "100"},
                 {"WARPSCOPE_CUPTI_ALL_KERNELS_INTERVAL_MS", "1000"}},
                &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(c.AllKernelsCycle(), (KernelDutyCycle{100, 1000}));
  // The interval defaults to 10 s.
  EXPECT_EQ(Read({{"WARPSCOPE_CUPTI_ALL_KERNELS_WINDOW_MS", "200"}}, &w).AllKernelsCycle(),
            (KernelDutyCycle{200, 10000}));
  EXPECT_TRUE(w.empty());
}

TEST(InjectConfigTest, AllKernelsConflictsWarn) {
  std::vector<std::string> w;
  auto c = Read({{"WARPSCOPE_CUPTI_ALL_KERNELS_WINDOW_MS", "5000"},
                 {"WARPSCOPE_CUPTI_ALL_KERNELS_INTERVAL_MS", "1000"}},
                &w);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("cut to the interval"), std::string::npos);
  EXPECT_TRUE(c.AllKernelsCycle().IsAlways());

  w.clear();
  c = Read({{"WARPSCOPE_CUPTI_KERNELS", "all"}, {"WARPSCOPE_CUPTI_ALL_KERNELS_WINDOW_MS", "100"}},
           &w);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("is ignored"), std::string::npos);
  EXPECT_TRUE(c.AllKernelsCycle().IsAlways());

  w.clear();
  c = Read({{"WARPSCOPE_CUPTI_ALL_KERNELS_INTERVAL_MS", "5"}}, &w);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(c.all_kernels_interval_ms, 10000u);
}

TEST(InjectConfigTest, DefaultSocketFallsBackToXdgRuntimeDir) {
  auto xdg = [](const char* name) -> const char* {
    return std::string(name) == "XDG_RUNTIME_DIR" ? "/run/user/1000" : nullptr;
  };
  auto nothing_exists = [](const char*) { return false; };
  EXPECT_EQ(DefaultAgentSocket(xdg, nothing_exists), "/run/user/1000/warpscope/cupti.sock");
  auto system_socket_exists = [](const char* p) {
    return std::string(p) == "/run/warpscope/cupti.sock";
  };
  EXPECT_EQ(DefaultAgentSocket(xdg, system_socket_exists), "/run/warpscope/cupti.sock");
  EXPECT_EQ(DefaultAgentSocket([](const char*) -> const char* { return nullptr; }, nothing_exists),
            "/run/warpscope/cupti.sock");
}

}  // namespace
}  // namespace warpscope::cupti_inject
