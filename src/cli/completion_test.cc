// SPDX-License-Identifier: Apache-2.0
#include "cli/completion.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace warpscope::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(CompletionTest, ListsEverySubcommandAndFlagPerLevel) {
  CLI::App app("tool");
  app.add_option("--config", "a file");
  CLI::App* run = app.add_subcommand("run", "runs");
  bool fast = false;
  std::string out;
  run->add_flag("-f,--fast", fast, "quickly");
  run->add_option("--output", out, "a file");
  CLI::App* nested = run->add_subcommand("twice", "runs twice");
  nested->add_flag("--again", fast, "again");

  const std::string script = BashCompletion(app, "my-tool");

  EXPECT_THAT(script, HasSubstr("    '')\n      subs='run'\n      flags='-h --help --config'\n"
                                "      valued='--config' ;;"));
  EXPECT_THAT(script, HasSubstr("    '/run')\n      subs='twice'\n"
                                "      flags='-h --help -f --fast --output'\n"
                                "      valued='--output' ;;"));
  EXPECT_THAT(script,
              HasSubstr("    '/run/twice')\n      subs=''\n      flags='-h --help --again'"));
  EXPECT_THAT(script, HasSubstr("/run|/run/twice) path="));
  EXPECT_THAT(script, HasSubstr("complete -o default -F _my_tool my-tool\n"));
}

TEST(CompletionTest, LeavesOutHiddenSubcommandsAndFlags) {
  CLI::App app("tool");
  bool b = false;
  app.add_flag("--secret", b, "hidden")->group("");
  app.add_subcommand("internal", "hidden")->group("");

  const std::string script = BashCompletion(app, "tool");

  EXPECT_THAT(script, Not(HasSubstr("--secret")));
  EXPECT_THAT(script, Not(HasSubstr("internal")));
}

}  // namespace
}  // namespace warpscope::cli
