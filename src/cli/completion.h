// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_CLI_COMPLETION_H_
#define WARPSCOPE_CLI_COMPLETION_H_

#include <CLI/CLI.hpp>
#include <string>

namespace warpscope::cli {

// The bash completion script of `app` (`warpscope completion bash`), generated from its own
// definitions so that it cannot miss a subcommand or a flag: at every level of subcommands it
// completes the subcommands, and after `-` the flags (hidden ones left out); after an option
// that takes a value, and after `--`, bash completes file names. Defines the function
// `_<name>` and `complete`s the command `name`.
std::string BashCompletion(const CLI::App& app, const std::string& name);

}  // namespace warpscope::cli

#endif  // WARPSCOPE_CLI_COMPLETION_H_
