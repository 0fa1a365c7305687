// SPDX-License-Identifier: Apache-2.0
// What the CPU profiler's end-to-end tests share: whether this user may sample system-wide,
// and the CPU pprof files one process left in a --cpu-profile-dir.
#ifndef WARPSCOPE_TEST_INTEGRATION_CPU_PROFILES_H_
#define WARPSCOPE_TEST_INTEGRATION_CPU_PROFILES_H_

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "profiling/pprof.h"

namespace warpscope {

// Root, or perf_event_paranoid <= 0.
inline bool MayProfileSystemWide() {
  if (geteuid() == 0) return true;
  auto p = base::ReadFile("/proc/sys/kernel/perf_event_paranoid");
  return p && std::atoi(p->c_str()) <= 0;
}

// The decoded "cpu-*-<pid>-*.pb.gz" files of `dir`; a file that does not decode fails the test.
inline std::vector<profiling::Profile> ProfilesOf(const std::string& dir, int pid) {
  std::vector<profiling::Profile> out;
  const std::string needle = fmt::format("-{}-", pid);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("cpu-", 0) != 0 || name.find(needle) == std::string::npos ||
        !name.ends_with(".pb.gz")) {
      continue;
    }
    auto bytes = base::ReadFile(entry.path().string());
    if (!bytes) continue;
    auto p = profiling::DecodePprof(*bytes);
    EXPECT_TRUE(p.has_value()) << name << ": " << (p ? "" : p.error().message());
    if (p) out.push_back(std::move(*p));
  }
  return out;
}

}  // namespace warpscope

#endif  // WARPSCOPE_TEST_INTEGRATION_CPU_PROFILES_H_
