// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_AGENT_AGENT_CONFIG_H_
#define WARPSCOPE_AGENT_AGENT_CONFIG_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/time.h"

namespace warpscope::agent {

// Everything `warpscope agent` can be told. Defaults live here; flags, WARPSCOPE_* environment
// variables and the config file only override them (precedence: flag > env > file > default).
// Every field is documented in docs/design/config.md.
struct AgentConfig {
  using KeyValues = std::vector<std::pair<std::string, std::string>>;

  // Collect GPU metrics through NVML. Opt-in, as GPU metrics need the NVIDIA driver.
  bool enable_gpu_metrics = false;
  // Collect host metrics from /proc and /sys.
  bool enable_host_metrics = true;
  // How often sources are polled. Bounds: [100ms, 1h]; GPM rates need >= 100ms between samples.
  base::Duration collect_interval = std::chrono::seconds(30);
  // How often a window (avg/min/max/last per series) is closed and pushed. >= collect_interval.
  base::Duration export_interval = std::chrono::minutes(1);
  // NVML library to dlopen; empty = libnvidia-ml.so.1 from the loader's search path.
  std::string nvml_path;
  // Run on the NVML simulator with this scenario (a path, or the name of a shipped scenario).
  std::string simulate;
  // Constant labels for every series and resource attributes for OTLP, from "k:v;k:v".
  KeyValues tags;
  // Host name used in labels and entity ids; empty = gethostname().
  std::string hostname;
  // Root of the host file system for /proc and /sys ("/host" when the agent runs in a container
  // with the host's / mounted there).
  std::string host_root = "/";
  // Prometheus /metrics listen address, "host:port" or ":port" (all interfaces); "" disables.
  // Loopback by default: nothing listens on other addresses unless asked (":9400" exposes it to
  // a remote Prometheus, as dcgm-exporter does).
  std::string prometheus_listen_address = "127.0.0.1:9400";
  // OTLP receiver (e.g. http://collector:4318 for OTLP/HTTP, http://collector:4317 for gRPC;
  // https:// for TLS); "" disables OTLP push.
  std::string otlp_endpoint;
  // How to send: "http/json" (the default), "http/protobuf" or "grpc" (OTEL_EXPORTER_OTLP_PROTOCOL's
  // names). Every protocol has the same queue, retries and backoff.
  std::string otlp_protocol = "http/json";
  // Extra request headers (gRPC: metadata, names lowercased), e.g. authorization.
  KeyValues otlp_headers;
  // Processes reported by CPU use besides every GPU process.
  int top_processes = 10;
  // Push every window to a warpscope server at this base URL ("" = no push).
  std::string server_url;
  // Bearer token for the server (file content, trimmed).
  std::string auth_token_file;
  // CA bundle to verify an https server with (default: the system's).
  std::string tls_ca_file;
  // Disk spool for windows the server has not acknowledged yet ("" = memory only).
  std::string buffer_dir;
  uint64_t buffer_max_bytes = 256ull << 20;

  // CUDA kernel profiler (docs/cuda-profiler.md): accept processes running with
  // CUDA_INJECTION64_PATH=libwarpscope_cupti.so on a unix socket and build GPU-time profiles.
  bool enable_cuda_profiler = false;
  // The socket; "" = the injected library's default (/run/warpscope/cupti.sock, else
  // $XDG_RUNTIME_DIR/warpscope/cupti.sock).
  std::string cuda_profiler_socket;
  // Length of a profile window. Bounds: [1s, 1h]; windows close at collect cycles.
  base::Duration cuda_profile_interval = std::chrono::seconds(60);
  // Write every window's pprof/folded/trace files here ("" = no files). Profiles also go to
  // server_url when set.
  std::string cuda_profile_dir;
  // The trace format of those files: "perfetto" (.perfetto-trace) or "chrome" (.trace.json).
  std::string cuda_profile_trace_format = "perfetto";
  // Sent to every process that connects: admitted launches per thread per second (stack
  // captures); unset = the process's own setting (WARPSCOPE_CUPTI_RATE, default 200).
  std::optional<uint32_t> cuda_profiler_rate;
  // Sent to every process that connects: turn PC sampling on.
  bool cuda_pc_sampling = false;

  // CPU profiler (docs/cpu-profiler.md): perf_event sampling of every CPU (or of selected
  // processes), DWARF-unwound native and kernel stacks, CPU-time profiles per process and window.
  bool enable_cpu_profiler = false;
  // Samples per second per CPU. Bounds: [1, 1000].
  uint32_t cpu_profile_frequency = 19;
  // Only these processes (with cpu_profile_gpu_processes: these and the GPU processes); empty
  // and cpu_profile_gpu_processes false = every process.
  std::vector<uint32_t> cpu_profile_pids;
  // Only the processes NVML lists on a GPU (needs GPU metrics), plus cpu_profile_pids.
  bool cpu_profile_gpu_processes = false;
  // Length of a CPU profile window. Bounds: [1s, 1h]; windows close at collect cycles.
  base::Duration cpu_profile_interval = std::chrono::seconds(60);
  // Write every window's pprof and folded files here ("" = no files). Profiles also go to
  // server_url when set.
  std::string cpu_profile_dir;
  // User stack bytes copied with each sample for unwinding. Bounds: [512, 61440], a multiple of
  // 8; deeper stacks end in an "[unwinding stopped]" marker.
  uint32_t cpu_profile_stack_bytes = 16 * 1024;

  // Inference servers (docs/design/inference.md): scrape the vLLM, SGLang, TensorRT-LLM and TGI
  // servers found in /proc every collect interval. On by default; it writes nothing while no
  // server is found.
  bool enable_inference_metrics = true;
  // Static inference targets besides the discovered ones: "URL[,engine=vllm|sglang|trtllm|tgi]"
  // (the engine defaults to the one the exposition's metric names show).
  std::vector<std::string> inference_targets;

  // Kubernetes pod attribution (docs/design/kubernetes.md): processes in pods get their
  // namespace, pod and container names from the API server (a read-only LIST and WATCH of this
  // node's pods). Uses the in-cluster configuration (service account) unless `kubeconfig` names
  // a file; a kubeconfig implies it.
  bool kubernetes = false;
  std::string kubeconfig;
  // The node whose pods are watched; "" = the host name (the flags fill in NODE_NAME first).
  std::string kubernetes_node;

  [[nodiscard]] base::Status Validate() const;
};

// Parses "k:v;k:v" (also accepts "k=v" and "," separators). Keys must be valid label names.
base::Result<AgentConfig::KeyValues> ParseTags(std::string_view text);

}  // namespace warpscope::agent

#endif  // WARPSCOPE_AGENT_AGENT_CONFIG_H_
