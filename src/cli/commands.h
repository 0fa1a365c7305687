// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_CLI_COMMANDS_H_
#define WARPSCOPE_CLI_COMMANDS_H_

#include <string>
#include <string_view>

#include "agent/agent_config.h"

namespace warpscope::cli {

inline constexpr std::string_view kVersion = "0.1.0";

// `warpscope agent`: runs until SIGINT/SIGTERM (or, with `once`, collects two cycles one collect
// interval apart, prints the Prometheus exposition and returns). Returns the exit code.
int RunAgent(const agent::AgentConfig& config, bool once);

// `warpscope metrics`: the reference of every metric (docs/metrics.md is this output).
std::string MetricsReference(std::string_view format);

}  // namespace warpscope::cli

#endif  // WARPSCOPE_CLI_COMMANDS_H_
