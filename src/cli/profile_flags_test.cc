// SPDX-License-Identifier: Apache-2.0
#include "cli/profile_flags.h"

#include <gtest/gtest.h>

namespace warpscope::cli {
namespace {

base::Result<ProfileOptions> Parse(std::vector<const char*> argv) {
  CLI::App app;
  CLI::App* cmd = app.add_subcommand("profile");
  ProfileFlags flags;
  flags.Register(*cmd);
  app.parse(static_cast<int>(argv.size()), argv.data());
  ProfileOptions out;
  base::Status st = flags.Finish(
      *cmd, ProfileFlags::SeparatorBeforeCommand(static_cast<int>(argv.size()), argv.data()), out);
  if (!st.ok()) return base::Error(st);
  return out;
}

TEST(ProfileFlagsTest, TheCommandKeepsItsOwnFlagsAndSeparators) {
  auto o = Parse({"warpscope", "profile", "-o", "d", "--duration", "2", "--", "python3", "-c", "x",
                  "--", "y"});
  ASSERT_TRUE(o.has_value()) << o.error().message();
  EXPECT_EQ(o->command, (std::vector<std::string>{"python3", "-c", "x", "--", "y"}));
  EXPECT_EQ(o->output, "d");
  EXPECT_EQ(o->duration_s, 2);
  o = Parse({"warpscope", "profile", "echo", "--threads", "1"});
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->command, (std::vector<std::string>{"echo", "--threads", "1"}));
}

TEST(ProfileFlagsTest, NoCommandIsAnError) {
  auto o = Parse({"warpscope", "profile", "-o", "d"});
  ASSERT_FALSE(o.has_value());
  EXPECT_NE(o.error().message().find("no command"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::cli
