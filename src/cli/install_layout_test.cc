// SPDX-License-Identifier: Apache-2.0
#include "cli/install_layout.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

namespace warpscope::cli {
namespace {

namespace fs = std::filesystem;

class InstallLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "warpscope-layout-XXXXXX").string();
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    root_ = templ;
    fs::create_directories(root_ / "bin");
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(InstallLayoutTest, ABuildTreeKeepsLibrariesInLibAndHelpersBesideTheBinary) {
  fs::create_directories(root_ / "lib" / "sim");

  InstallLayout layout = FindInstallLayout((root_ / "bin").string());

  EXPECT_EQ(layout.cupti_inject, (root_ / "lib" / "libwarpscope_cupti.so").string());
  EXPECT_EQ(layout.nccl_plugin, (root_ / "lib" / "libwarpscope_nccl.so").string());
  EXPECT_EQ(layout.sim_dir, (root_ / "lib" / "sim").string());
  EXPECT_EQ(layout.helper_dir, (root_ / "bin").string());
  EXPECT_EQ(layout.scenarios_dir, (root_ / "share" / "warpscope" / "scenarios").string());
}

TEST_F(InstallLayoutTest, AnInstalledTreeKeepsLibrariesAndHelpersInLibWarpscope) {
  fs::create_directories(root_ / "lib" / "warpscope" / "sim");

  InstallLayout layout = FindInstallLayout((root_ / "bin").string());

  const fs::path own = root_ / "lib" / "warpscope";
  EXPECT_EQ(layout.cupti_inject, (own / "libwarpscope_cupti.so").string());
  EXPECT_EQ(layout.nccl_plugin, (own / "libwarpscope_nccl.so").string());
  EXPECT_EQ(layout.sim_dir, (own / "sim").string());
  EXPECT_EQ(layout.helper_dir, own.string());
  EXPECT_EQ(layout.scenarios_dir, (root_ / "share" / "warpscope" / "scenarios").string());
}

}  // namespace
}  // namespace warpscope::cli
