// SPDX-License-Identifier: Apache-2.0
#include "agent/agent_config.h"

#include <cctype>

#include "base/file_util.h"

namespace warpscope::agent {
namespace {

bool IsLabelName(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return !(s.size() >= 2 && s[0] == '_' && s[1] == '_');
}

}  // namespace

base::Result<AgentConfig::KeyValues> ParseTags(std::string_view text) {
  AgentConfig::KeyValues out;
  for (std::string_view item : base::SplitString(text, ";,")) {
    item = base::TrimWhitespace(item);
    if (item.empty()) continue;
    size_t sep = item.find_first_of(":=");
    if (sep == std::string_view::npos) {
      return base::Error(base::InvalidArgument(
          "--tags: '{}' has no value; write key:value pairs separated by ';', e.g. "
          "--tags 'team:ml;cluster:a'",
          item));
    }
    std::string_view key = base::TrimWhitespace(item.substr(0, sep));
    std::string_view value = base::TrimWhitespace(item.substr(sep + 1));
    if (!IsLabelName(key)) {
      return base::Error(base::InvalidArgument(
          "--tags: key '{}' is not a valid label name; use letters, digits and '_', not starting "
          "with a digit or '__'",
          key));
    }
    out.emplace_back(std::string(key), std::string(value));
  }
  return out;
}

base::Status AgentConfig::Validate() const {
  using std::chrono::hours;
  using std::chrono::milliseconds;
  if (collect_interval < milliseconds(100) || collect_interval > hours(1)) {
    return base::InvalidArgument(
        "--collect-metrics-interval={}: must be between 100ms and 1h (e.g. 30s)",
        base::FormatDuration(collect_interval));
  }
  if (export_interval < collect_interval) {
    return base::InvalidArgument(
        "--export-metrics-interval={} is shorter than --collect-metrics-interval={}: a window "
        "must hold at least one sample; raise the export interval or lower the collect interval",
        base::FormatDuration(export_interval), base::FormatDuration(collect_interval));
  }
  if (export_interval > hours(24)) {
    return base::InvalidArgument("--export-metrics-interval={}: must be at most 24h",
                                 base::FormatDuration(export_interval));
  }
  if (top_processes < 0 || top_processes > 10000) {
    return base::InvalidArgument("--top-processes={}: must be between 0 and 10000", top_processes);
  }
  if (!otlp_endpoint.empty() && otlp_endpoint.rfind("http://", 0) != 0 &&
      otlp_endpoint.rfind("https://", 0) != 0) {
    return base::InvalidArgument(
        "--otlp-endpoint={}: must start with http:// or https:// (e.g. http://127.0.0.1:4318)",
        otlp_endpoint);
  }
  if (otlp_protocol != "http/json" && otlp_protocol != "http/protobuf" && otlp_protocol != "grpc") {
    return base::InvalidArgument(
        "--otlp-protocol={}: use grpc, http/protobuf or http/json (OTEL_EXPORTER_OTLP_PROTOCOL's "
        "names)",
        otlp_protocol);
  }
  if (!server_url.empty() && server_url.rfind("http://", 0) != 0 &&
      server_url.rfind("https://", 0) != 0) {
    return base::InvalidArgument(
        "--server={}: must start with http:// or https:// (e.g. http://127.0.0.1:9410)",
        server_url);
  }
  if (server_url.empty() && (!buffer_dir.empty() || !auth_token_file.empty())) {
    return base::InvalidArgument(
        "--buffer-dir and --auth-token-file need --server (the server to push to)");
  }
  if (!prometheus_listen_address.empty() &&
      prometheus_listen_address.find(':') == std::string::npos) {
    return base::InvalidArgument(
        "--listen-address={}: expected host:port or :port (e.g. :9400 or 127.0.0.1:9400)",
        prometheus_listen_address);
  }
  // Static inference targets are something to collect (an agent beside a serving container);
  // discovery alone is not: it finds nothing on most hosts.
  const bool inference_only = enable_inference_metrics && !inference_targets.empty();
  if (!enable_gpu_metrics && !enable_host_metrics && !enable_cuda_profiler &&
      !enable_cpu_profiler && !inference_only) {
    return base::InvalidArgument(
        "nothing to collect: --enable-host-metrics=false and GPU metrics are off; add "
        "--enable-gpu-metrics, --cuda-profiler, --enable-cpu-profiler or --inference-targets");
  }
  if (cuda_profile_interval < std::chrono::seconds(1) || cuda_profile_interval > hours(1)) {
    return base::InvalidArgument("--cuda-profile-interval={}: must be between 1s and 1h",
                                 base::FormatDuration(cuda_profile_interval));
  }
  if (cuda_profiler_rate && *cuda_profiler_rate > 1000000) {
    return base::InvalidArgument(
        "--cuda-profiler-rate={}: at most 1000000 launches per thread per second (0 = GPU time "
        "only, no stacks)",
        *cuda_profiler_rate);
  }
  if (!enable_cuda_profiler &&
      (!cuda_profile_dir.empty() || cuda_profiler_rate || cuda_pc_sampling)) {
    return base::InvalidArgument(
        "--cuda-profile-dir, --cuda-profiler-rate and --cuda-pc-sampling need --cuda-profiler");
  }
  if (cpu_profile_frequency < 1 || cpu_profile_frequency > 1000) {
    return base::InvalidArgument("--cpu-profile-frequency={}: must be between 1 and 1000 Hz",
                                 cpu_profile_frequency);
  }
  if (cpu_profile_interval < std::chrono::seconds(1) || cpu_profile_interval > hours(1)) {
    return base::InvalidArgument("--cpu-profile-interval={}: must be between 1s and 1h",
                                 base::FormatDuration(cpu_profile_interval));
  }
  if (cpu_profile_stack_bytes < 512 || cpu_profile_stack_bytes > 61440 ||
      cpu_profile_stack_bytes % 8 != 0) {
    return base::InvalidArgument(
        "--cpu-profile-stack-bytes={}: must be a multiple of 8 between 512 and 61440 (a perf "
        "sample stays under 64 KiB)",
        cpu_profile_stack_bytes);
  }
  for (uint32_t pid : cpu_profile_pids) {
    if (pid == 0) {
      return base::InvalidArgument("--cpu-profile-pids: 0 is not a process id");
    }
  }
  if (cpu_profile_gpu_processes && !enable_gpu_metrics) {
    return base::InvalidArgument(
        "--cpu-profile-gpu-processes needs --enable-gpu-metrics (NVML lists the GPU processes)");
  }
  if (!enable_cpu_profiler &&
      (!cpu_profile_dir.empty() || !cpu_profile_pids.empty() || cpu_profile_gpu_processes)) {
    return base::InvalidArgument(
        "--cpu-profile-dir, --cpu-profile-pids and --cpu-profile-gpu-processes need "
        "--enable-cpu-profiler");
  }
  return base::OkStatus();
}

}  // namespace warpscope::agent
