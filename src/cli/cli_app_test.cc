// SPDX-License-Identifier: Apache-2.0
#include "cli/cli_app.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "base/file_util.h"
#include "base/testing/temp_dir.h"

namespace warpscope::cli {
namespace {

class CliAppTest : public ::testing::Test {
 protected:
  std::unique_ptr<CliApp> Parse(const std::vector<std::string>& args) {
    argv_.clear();
    for (const std::string& a : args) argv_.push_back(a.c_str());
    base::Result<std::unique_ptr<CliApp>> cli =
        ParseAgain(static_cast<int>(argv_.size()), argv_.data());
    EXPECT_TRUE(cli) << cli.error().message();
    return cli ? std::move(*cli) : nullptr;
  }
  void WriteConfig(const std::string& text) { ASSERT_TRUE(base::WriteFile(config_, text).ok()); }

  base::TempDir tmp_;
  std::string config_ = tmp_.path() + "/warpscope.toml";
  std::vector<const char*> argv_;
};

TEST_F(CliAppTest, ChangedOptionsNamesWhatTheConfigFileChanged) {
  WriteConfig("[server]\nlisten-address = \"127.0.0.1:9500\"\ngpu-hour-price = 2.5\n");
  const std::vector<std::string> args = {"warpscope", "--config", config_, "server",
                                         "--data-dir=/tmp/x"};
  std::unique_ptr<CliApp> before = Parse(args);
  ASSERT_TRUE(before);
  std::unique_ptr<CliApp> same = Parse(args);
  ASSERT_TRUE(same);
  EXPECT_TRUE(ChangedOptions(*before->server_cmd, *same->server_cmd).empty());

  // One value changes, one key goes (back to its default), one is added.
  WriteConfig("[server]\nlisten-address = \"127.0.0.1:9600\"\nmax-body-bytes = 1024\n");
  std::unique_ptr<CliApp> after = Parse(args);
  ASSERT_TRUE(after);
  std::vector<std::string> changed = ChangedOptions(*before->server_cmd, *after->server_cmd);
  std::sort(changed.begin(), changed.end());
  EXPECT_EQ(changed,
            (std::vector<std::string>{"--gpu-hour-price", "--listen-address", "--max-body-bytes"}));
}

TEST_F(CliAppTest, ParseAgainNamesAMisspeltKey) {
  WriteConfig("[server]\nlisten-adress = \"127.0.0.1:9500\"\n");
  const char* argv[] = {"warpscope", "--config", config_.c_str(), "server"};
  base::Result<std::unique_ptr<CliApp>> cli = ParseAgain(4, argv);
  ASSERT_FALSE(cli);
  EXPECT_EQ(cli.error().code(), base::StatusCode::kInvalidArgument);
  EXPECT_NE(cli.error().message().find("listen-adress"), std::string::npos)
      << cli.error().message();
}

}  // namespace
}  // namespace warpscope::cli
