// SPDX-License-Identifier: Apache-2.0
// The flags of `warpscope profile` and their checks (docs/profile.md).
#ifndef WARPSCOPE_CLI_PROFILE_FLAGS_H_
#define WARPSCOPE_CLI_PROFILE_FLAGS_H_

#include <CLI/CLI.hpp>
#include <string>

#include "base/status.h"
#include "cli/commands.h"

namespace warpscope::cli {

class ProfileFlags {
 public:
  ProfileOptions options;
  std::string log_level = "warning";

  // Adds the flags to `cmd`; every argument from the first positional one on is CMD.
  void Register(CLI::App& cmd);
  // Copies the parsed command and checks the values: InvalidArgument naming the flag, or "no
  // command". `separator_before_command`: the command line had "--" before CMD
  // (SeparatorBeforeCommand).
  [[nodiscard]] base::Status Finish(const CLI::App& cmd, bool separator_before_command,
                                    ProfileOptions& out) const;
  // Whether argv, after the "profile" subcommand, has "--" before its first argument that is
  // not a flag or a flag's value (CMD).
  static bool SeparatorBeforeCommand(int argc, const char* const* argv);

 private:
  std::string program_;  // the first positional argument
  std::string trace_format_ = "perfetto";
};

}  // namespace warpscope::cli

#endif  // WARPSCOPE_CLI_PROFILE_FLAGS_H_
