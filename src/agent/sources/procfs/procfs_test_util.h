// SPDX-License-Identifier: Apache-2.0
// Test helpers: paths of the /proc snapshots in test/data/root and writable copies of them.
#ifndef WARPSCOPE_AGENT_SOURCES_PROCFS_PROCFS_TEST_UTIL_H_
#define WARPSCOPE_AGENT_SOURCES_PROCFS_PROCFS_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace warpscope::agent::testing {

// A 4-CPU GPU host (see test/data/root/README.md) and the same host 10 s later.
inline std::string SnapshotT0() {
  return std::string(WARPSCOPE_SOURCE_DIR) + "/test/data/root/gpuhost_t0";
}
inline std::string SnapshotT1() {
  return std::string(WARPSCOPE_SOURCE_DIR) + "/test/data/root/gpuhost_t1";
}

// A private copy of a snapshot (symlinks kept as links), removed on destruction.
class SnapshotCopy {
 public:
  explicit SnapshotCopy(const std::string& snapshot) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("procfs_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
            std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::copy(
        snapshot, dir_,
        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  }
  ~SnapshotCopy() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  SnapshotCopy(const SnapshotCopy&) = delete;
  SnapshotCopy& operator=(const SnapshotCopy&) = delete;

  std::string root() const { return dir_.string(); }
  std::filesystem::path path(const std::string& relative) const { return dir_ / relative; }

 private:
  std::filesystem::path dir_;
};

}  // namespace warpscope::agent::testing

#endif  // WARPSCOPE_AGENT_SOURCES_PROCFS_PROCFS_TEST_UTIL_H_
