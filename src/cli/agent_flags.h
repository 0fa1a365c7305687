// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_CLI_AGENT_FLAGS_H_
#define WARPSCOPE_CLI_AGENT_FLAGS_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "agent/agent_config.h"
#include "base/status.h"

namespace warpscope::cli {

// Binds the `agent` subcommand's flags (each with a WARPSCOPE_* environment twin) to raw strings;
// Finish() converts and validates them into an AgentConfig.
class AgentFlags {
 public:
  // Adds the options to `sub`. `this` must outlive parsing.
  void Register(CLI::App& sub);
  // Converts the parsed values into `config` (starting from its defaults) and validates it.
  [[nodiscard]] base::Status Finish(agent::AgentConfig& config) const;

  int verbosity = 0;
  bool once = false;
  std::string log_level = "info";

 private:
  agent::AgentConfig defaults_;
  bool enable_gpu_metrics_ = false;
  bool enable_host_metrics_ = true;
  std::string collect_interval_ = "30s";
  std::string export_interval_ = "1m";
  std::string nvml_path_;
  std::string simulate_;
  std::string tags_;
  std::string hostname_;
  std::string host_root_ = "/";
  std::string listen_address_ = "127.0.0.1:9400";
  std::string otlp_endpoint_;
  std::string otlp_protocol_ = "http/json";
  std::vector<std::string> otlp_headers_;
  int top_processes_ = 10;
  std::string server_url_;
  std::string auth_token_file_;
  std::string tls_ca_file_;
  std::string buffer_dir_;
  uint64_t buffer_max_bytes_ = 256ull << 20;
  bool cuda_profiler_ = false;
  std::string cuda_profiler_socket_;
  std::string cuda_profile_interval_ = "1m";
  std::string cuda_profile_dir_;
  std::string cuda_profile_trace_format_ = "perfetto";
  int64_t cuda_profiler_rate_ = -1;  // -1: not given
  bool cuda_pc_sampling_ = false;
  bool cpu_profiler_ = false;
  uint32_t cpu_profile_frequency_ = 19;
  std::string cpu_profile_pids_;
  bool cpu_profile_gpu_processes_ = false;
  std::string cpu_profile_interval_ = "1m";
  std::string cpu_profile_dir_;
  uint32_t cpu_profile_stack_bytes_ = 16 * 1024;
  bool enable_inference_metrics_ = true;
  std::vector<std::string> inference_targets_;
  bool kubernetes_ = false;
  std::string kubeconfig_;
  std::string kubernetes_node_;
};

}  // namespace warpscope::cli

#endif  // WARPSCOPE_CLI_AGENT_FLAGS_H_
