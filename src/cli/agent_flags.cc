// SPDX-License-Identifier: Apache-2.0
#include "cli/agent_flags.h"

#include <charconv>
#include <cstdlib>

#include "agent/sources/inference/inference_source.h"
#include "profiling/window_profile.h"

namespace warpscope::cli {

void AgentFlags::Register(CLI::App& sub) {
  sub.add_flag("--enable-gpu-metrics", enable_gpu_metrics_,
               "Collect GPU metrics through NVML (needs the NVIDIA driver, or --simulate)")
      ->envname("WARPSCOPE_ENABLE_GPU_METRICS");
  sub.add_flag("--enable-host-metrics", enable_host_metrics_,
               "Collect host metrics from /proc and /sys (default true; "
               "--enable-host-metrics=false turns them off)")
      ->envname("WARPSCOPE_ENABLE_HOST_METRICS");
  sub.add_option("--collect-metrics-interval", collect_interval_,
                 "How often to read every source, as a duration (100ms..1h)")
      ->envname("WARPSCOPE_COLLECT_METRICS_INTERVAL")
      ->capture_default_str();
  sub.add_option("--export-metrics-interval", export_interval_,
                 "How often to close a window (avg/min/max/last) and push it; >= the collect "
                 "interval")
      ->envname("WARPSCOPE_EXPORT_METRICS_INTERVAL")
      ->capture_default_str();
  sub.add_option("--nvml-path", nvml_path_,
                 "NVML library to load (default: libnvidia-ml.so.1 from the loader path)")
      ->envname("WARPSCOPE_NVML_PATH");
  sub.add_option("--simulate", simulate_,
                 "Run on the NVML simulator with this scenario: a YAML path or a shipped scenario "
                 "name (see docs/simulator.md); implies --enable-gpu-metrics")
      ->envname("WARPSCOPE_SIMULATE");
  sub.add_option("--tags", tags_,
                 "Constant labels for every series and OTLP resource attributes: 'k:v;k:v'")
      ->envname("WARPSCOPE_TAGS");
  sub.add_option("--hostname", hostname_, "Host name for labels and ids (default: gethostname)")
      ->envname("WARPSCOPE_HOSTNAME");
  sub.add_option("--host-root", host_root_,
                 "Where the host's / is mounted (for /proc and /sys), e.g. /host in a container")
      ->envname("WARPSCOPE_HOST_ROOT")
      ->capture_default_str();
  sub.add_option("--listen-address", listen_address_,
                 "Prometheus /metrics address, host:port, or :port for every interface (to be "
                 "scraped from another machine); 'off' disables")
      ->envname("WARPSCOPE_LISTEN_ADDRESS")
      ->capture_default_str();
  sub.add_option("--otlp-endpoint", otlp_endpoint_,
                 "Push each window over OTLP to this base URL (e.g. http://127.0.0.1:4318 for "
                 "OTLP/HTTP, http://127.0.0.1:4317 for --otlp-protocol=grpc; https:// for TLS)")
      ->envname("WARPSCOPE_OTLP_ENDPOINT");
  sub.add_option("--otlp-protocol", otlp_protocol_,
                 "OTLP protocol: http/json, http/protobuf or grpc (as "
                 "OTEL_EXPORTER_OTLP_PROTOCOL)")
      ->envname("WARPSCOPE_OTLP_PROTOCOL")
      ->capture_default_str();
  sub.add_option("--otlp-header", otlp_headers_, "Extra OTLP request header 'Name=value' (repeat)")
      ->envname("WARPSCOPE_OTLP_HEADERS")
      ->delimiter(',');
  sub.add_option("--top-processes", top_processes_,
                 "Processes reported by CPU use, besides every GPU process")
      ->envname("WARPSCOPE_TOP_PROCESSES")
      ->capture_default_str();
  sub.add_option("--server", server_url_,
                 "Push every window to this warpscope server (e.g. http://10.0.0.5:9410)")
      ->envname("WARPSCOPE_SERVER");
  sub.add_option("--auth-token-file", auth_token_file_,
                 "File with the bearer token the server expects (chmod 600)")
      ->envname("WARPSCOPE_AUTH_TOKEN_FILE");
  sub.add_option("--tls-ca-file", tls_ca_file_,
                 "CA bundle to verify an https --server with (default: the system's)")
      ->envname("WARPSCOPE_TLS_CA_FILE");
  sub.add_option("--buffer-dir", buffer_dir_,
                 "Keep unacknowledged windows on disk here, so they survive agent restarts and "
                 "long server outages")
      ->envname("WARPSCOPE_BUFFER_DIR");
  sub.add_option("--buffer-max-bytes", buffer_max_bytes_,
                 "Disk spool bound; beyond it the oldest windows are dropped and counted")
      ->envname("WARPSCOPE_BUFFER_MAX_BYTES")
      ->capture_default_str();
  sub.add_flag("--cuda-profiler", cuda_profiler_,
               "CUDA kernel profiler: accept applications started with "
               "CUDA_INJECTION64_PATH=/usr/lib/warpscope/libwarpscope_cupti.so and build GPU-time "
               "profiles per kernel and launch stack (docs/cuda-profiler.md)")
      ->envname("WARPSCOPE_CUDA_PROFILER");
  sub.add_option("--cuda-profiler-socket", cuda_profiler_socket_,
                 "Unix socket the injected library connects to (default: "
                 "/run/warpscope/cupti.sock, or $XDG_RUNTIME_DIR/warpscope/cupti.sock when the "
                 "agent cannot create /run/warpscope); applications read the same variable")
      ->envname("WARPSCOPE_AGENT_SOCKET");
  sub.add_option("--cuda-profile-interval", cuda_profile_interval_,
                 "Length of a CUDA profile window (1s..1h; closed at collect cycles)")
      ->envname("WARPSCOPE_CUDA_PROFILE_INTERVAL")
      ->capture_default_str();
  sub.add_option("--cuda-profile-dir", cuda_profile_dir_,
                 "Write each window's profiles here: gpu-<host>-<pid>-<start>-<end>.pb.gz "
                 "(pprof), .folded, .perfetto-trace (Perfetto's UI); with --server they are also "
                 "sent there")
      ->envname("WARPSCOPE_CUDA_PROFILE_DIR");
  sub.add_option("--cuda-profile-trace-format", cuda_profile_trace_format_,
                 "The trace in --cuda-profile-dir: perfetto (native protobuf, .perfetto-trace) or "
                 "chrome (Chrome trace event JSON, .trace.json)")
      ->envname("WARPSCOPE_CUDA_PROFILE_TRACE_FORMAT")
      ->capture_default_str();
  sub.add_option("--cuda-profiler-rate", cuda_profiler_rate_,
                 "Tell every profiled process to capture the stack of at most N launches per "
                 "thread per second (0: GPU time only; default: the process's "
                 "WARPSCOPE_CUPTI_RATE, 200)")
      ->envname("WARPSCOPE_CUDA_PROFILER_RATE");
  sub.add_flag("--cuda-pc-sampling", cuda_pc_sampling_,
               "Tell every profiled process to turn PC sampling on (stall reasons per SASS "
               "instruction, in duty-cycled windows)")
      ->envname("WARPSCOPE_CUDA_PC_SAMPLING");
  sub.add_flag("--enable-cpu-profiler", cpu_profiler_,
               "CPU profiler: sample every CPU with perf_event and build CPU-time profiles per "
               "process with native (DWARF-unwound) and kernel frames (docs/cpu-profiler.md)")
      ->envname("WARPSCOPE_CPU_PROFILER");
  sub.add_option("--cpu-profile-frequency", cpu_profile_frequency_,
                 "Samples per second per CPU (1..1000)")
      ->envname("WARPSCOPE_CPU_PROFILE_FREQUENCY")
      ->capture_default_str();
  sub.add_option("--cpu-profile-pids", cpu_profile_pids_,
                 "Profile only these processes (comma-separated pids; default: every process)")
      ->envname("WARPSCOPE_CPU_PROFILE_PIDS");
  sub.add_flag("--cpu-profile-gpu-processes", cpu_profile_gpu_processes_,
               "Profile only the processes NVML lists on a GPU (and --cpu-profile-pids); needs "
               "--enable-gpu-metrics")
      ->envname("WARPSCOPE_CPU_PROFILE_GPU_PROCESSES");
  sub.add_option("--cpu-profile-interval", cpu_profile_interval_,
                 "Length of a CPU profile window (1s..1h; closed at collect cycles)")
      ->envname("WARPSCOPE_CPU_PROFILE_INTERVAL")
      ->capture_default_str();
  sub.add_option("--cpu-profile-dir", cpu_profile_dir_,
                 "Write each window's CPU profiles here: cpu-<host>-<pid>-<start>-<end>.pb.gz "
                 "(pprof) and .folded; with --server they are also sent there")
      ->envname("WARPSCOPE_CPU_PROFILE_DIR");
  sub.add_option("--cpu-profile-stack-bytes", cpu_profile_stack_bytes_,
                 "User stack bytes copied with each sample for unwinding (512..61440, a multiple "
                 "of 8)")
      ->envname("WARPSCOPE_CPU_PROFILE_STACK_BYTES")
      ->capture_default_str();
  sub.add_flag("--enable-inference-metrics", enable_inference_metrics_,
               "Scrape the inference servers (vLLM, SGLang, TensorRT-LLM, TGI) found on this host "
               "every collect interval (default true; writes nothing while none is found; "
               "--enable-inference-metrics=false turns it off)")
      ->envname("WARPSCOPE_ENABLE_INFERENCE_METRICS");
  sub.add_option("--inference-targets", inference_targets_,
                 "Also scrape this inference server: URL[,engine=vllm|sglang|trtllm|tgi]"
                 "[,pid=PID] (repeat; the engine defaults to the one its metric names show; pid "
                 "names the serving process, else the one listening on the URL's port)")
      ->envname("WARPSCOPE_INFERENCE_TARGETS");
  sub.add_flag("--kubernetes", kubernetes_,
               "Name the pods of GPU and CPU processes (namespace, pod, container) through the "
               "Kubernetes API, with the in-cluster service account (needs get, list and watch on "
               "pods; docs/design/kubernetes.md)")
      ->envname("WARPSCOPE_KUBERNETES");
  sub.add_option("--kubeconfig", kubeconfig_,
                 "Like --kubernetes, with the current context of this kubeconfig file instead of "
                 "the in-cluster configuration (implies --kubernetes)")
      ->envname("WARPSCOPE_KUBECONFIG");
  sub.add_option("--kubernetes-node", kubernetes_node_,
                 "The node whose pods are watched (default: $NODE_NAME, set from the downward "
                 "API's spec.nodeName, else the host name)")
      ->envname("WARPSCOPE_KUBERNETES_NODE");
  sub.add_flag("--once", once,
               "Collect two cycles one collect interval apart, print the Prometheus exposition "
               "to stdout and exit");
  sub.add_option("--log-level", log_level, "error, warning, info or verbose")
      ->envname("WARPSCOPE_LOG_LEVEL")
      ->check(CLI::IsMember({"error", "warning", "info", "verbose"}));
  sub.add_flag("-v,--verbose", verbosity, "More detail in the log (repeat for more)");
}

base::Status AgentFlags::Finish(agent::AgentConfig& config) const {
  config = defaults_;
  config.enable_gpu_metrics = enable_gpu_metrics_;
  config.enable_host_metrics = enable_host_metrics_;
  auto collect = base::ParseDuration(collect_interval_);
  if (!collect) return collect.error().WithContext("--collect-metrics-interval");
  config.collect_interval = *collect;
  auto exp = base::ParseDuration(export_interval_);
  if (!exp) return exp.error().WithContext("--export-metrics-interval");
  config.export_interval = *exp;
  config.nvml_path = nvml_path_;
  config.simulate = simulate_;
  if (!simulate_.empty()) config.enable_gpu_metrics = true;
  auto tags = agent::ParseTags(tags_);
  if (!tags) return tags.error();
  config.tags = *tags;
  config.hostname = hostname_;
  config.host_root = host_root_;
  config.prometheus_listen_address = listen_address_ == "off" ? "" : listen_address_;
  config.otlp_endpoint = otlp_endpoint_;
  config.otlp_protocol = otlp_protocol_;
  for (const auto& h : otlp_headers_) {
    auto eq = h.find('=');
    if (eq == std::string::npos || eq == 0) {
      return base::InvalidArgument("--otlp-header '{}': expected Name=value", h);
    }
    config.otlp_headers.emplace_back(h.substr(0, eq), h.substr(eq + 1));
  }
  config.top_processes = top_processes_;
  config.server_url = server_url_;
  config.auth_token_file = auth_token_file_;
  config.tls_ca_file = tls_ca_file_;
  config.buffer_dir = buffer_dir_;
  config.buffer_max_bytes = buffer_max_bytes_;
  config.enable_cuda_profiler = cuda_profiler_;
  config.cuda_profiler_socket = cuda_profiler_socket_;
  auto profile_interval = base::ParseDuration(cuda_profile_interval_);
  if (!profile_interval) return profile_interval.error().WithContext("--cuda-profile-interval");
  config.cuda_profile_interval = *profile_interval;
  config.cuda_profile_dir = cuda_profile_dir_;
  if (!profiling::ParseTraceFormat(cuda_profile_trace_format_)) {
    return base::InvalidArgument(
        "--cuda-profile-trace-format={}: want perfetto (the default) or chrome",
        cuda_profile_trace_format_);
  }
  config.cuda_profile_trace_format = cuda_profile_trace_format_;
  if (cuda_profiler_rate_ < -1 || cuda_profiler_rate_ > 1000000) {
    return base::InvalidArgument(
        "--cuda-profiler-rate={}: must be between 0 and 1000000 launches per thread per second",
        cuda_profiler_rate_);
  }
  if (cuda_profiler_rate_ >= 0) {
    config.cuda_profiler_rate = static_cast<uint32_t>(cuda_profiler_rate_);
  }
  config.cuda_pc_sampling = cuda_pc_sampling_;
  config.enable_cpu_profiler = cpu_profiler_;
  config.cpu_profile_frequency = cpu_profile_frequency_;
  config.cpu_profile_pids.clear();
  std::string_view pids = cpu_profile_pids_;
  while (!pids.empty()) {
    const size_t comma = pids.find(',');
    std::string_view part = pids.substr(0, comma);
    pids = comma == std::string_view::npos ? std::string_view() : pids.substr(comma + 1);
    uint32_t pid = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), pid);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size()) {
      return base::InvalidArgument("--cpu-profile-pids '{}': expected comma-separated pids",
                                   cpu_profile_pids_);
    }
    config.cpu_profile_pids.push_back(pid);
  }
  config.cpu_profile_gpu_processes = cpu_profile_gpu_processes_;
  auto cpu_interval = base::ParseDuration(cpu_profile_interval_);
  if (!cpu_interval) return cpu_interval.error().WithContext("--cpu-profile-interval");
  config.cpu_profile_interval = *cpu_interval;
  config.cpu_profile_dir = cpu_profile_dir_;
  config.cpu_profile_stack_bytes = cpu_profile_stack_bytes_;
  config.enable_inference_metrics = enable_inference_metrics_;
  config.inference_targets = inference_targets_;
  config.kubernetes = kubernetes_ || !kubeconfig_.empty();
  config.kubeconfig = kubeconfig_;
  config.kubernetes_node = kubernetes_node_;
  if (config.kubernetes_node.empty()) {
    const char* node = std::getenv("NODE_NAME");
    if (node != nullptr) config.kubernetes_node = node;
  }
  for (const std::string& target : inference_targets_) {
    if (auto parsed = agent::inference::ParseInferenceTarget(target); !parsed) {
      return parsed.error();
    }
  }
  return config.Validate();
}

}  // namespace warpscope::cli
