// SPDX-License-Identifier: Apache-2.0
// Wiring of `warpscope agent`: builds the sources and exporters the config asks for, runs the
// main sequence until SIGINT/SIGTERM.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "agent/agent.h"
#include "agent/kubernetes/api_config.h"
#include "agent/kubernetes/kubernetes_process_resolver.h"
#include "agent/kubernetes/pod_directory.h"
#include "agent/sources/cpu_profiler/cpu_profiler_source.h"
#include "agent/sources/cpu_profiler/cpython_stacks.h"
#include "agent/sources/cpu_profiler/gpu_process_selection.h"
#include "agent/sources/cuda_profiler/cuda_profiler_source.h"
#include "agent/sources/inference/inference_source.h"
#include "agent/sources/nvml/nvml_source.h"
#include "agent/sources/procfs/procfs_process_resolver.h"
#include "agent/sources/procfs/procfs_source.h"
#include "base/logging.h"
#include "base/task_runner.h"
#include "base/token_file.h"
#include "cli/cli_app.h"
#include "cli/commands.h"
#include "cli/simulation.h"
#include "exporters/otlp/otlp_exporter.h"
#include "exporters/profiles/profile_sink.h"
#include "exporters/profiles/profile_uploader.h"
#include "exporters/prometheus/metrics_http_server.h"
#include "exporters/prometheus/prometheus_exporter.h"
#include "exporters/server/server_exporter.h"
#include "model/process.h"

namespace warpscope::cli {
namespace {

std::string HostName(const agent::AgentConfig& config) {
  if (!config.hostname.empty()) return config.hostname;
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

// --kubernetes / --kubeconfig: the node's pod directory, its watcher started; its errors are
// counted as the "kubernetes" source's.
base::Result<std::unique_ptr<agent::kubernetes::PodDirectory>> MakePodDirectory(
    const agent::AgentConfig& config, const std::string& host, const base::Clock& clock,
    agent::ErrorCounter& errors) {
  namespace k8s = agent::kubernetes;
  base::Result<k8s::ApiServerConfig> api = config.kubeconfig.empty()
                                               ? k8s::LoadInClusterConfig(::getenv)
                                               : k8s::LoadKubeconfig(config.kubeconfig);
  if (!api) return base::Error(api.error());
  k8s::PodDirectory::Options options;
  options.node_name = config.kubernetes_node.empty() ? host : config.kubernetes_node;
  WARPSCOPE_ASSIGN_OR_RETURN(
      auto directory,
      k8s::PodDirectory::Create(std::move(*api), options, clock,
                                [&errors](std::string_view reason) { errors.Count(reason); }));
  directory->Start();
  return directory;
}

// The resolver that sources see: `inner`, with the pods' names when --kubernetes is on.
std::shared_ptr<model::ProcessResolver> WithPods(std::shared_ptr<model::ProcessResolver> inner,
                                                 const agent::kubernetes::PodDirectory* directory) {
  if (directory == nullptr) return inner;
  return std::make_shared<agent::kubernetes::KubernetesProcessResolver>(std::move(inner),
                                                                        directory->cache());
}

// The processes the cycle has seen so far (the GPU processes NVML reported), by identity: a GPU
// process without a start time (not found in this /proc, or simulated) names no local process.
std::vector<model::ProcessIdentity> ProcessesOfInterest(const agent::Aggregator& agg) {
  std::vector<model::ProcessIdentity> processes;
  for (const auto& e : agg.cycle_entities()) {
    if (e.kind != model::EntityKind::kProcess) continue;
    std::optional<model::ProcessIdentity> identity = model::ParseProcessEntityId(e.id);
    if (identity && identity->known()) processes.push_back(*identity);
  }
  return processes;
}

// A profiler's exporters: a directory (`dir`, named by `dir_flag` in errors) and the server.
base::Result<std::vector<std::unique_ptr<profiling::ProfileExporter>>> MakeProfileExporters(
    const agent::AgentConfig& config, const std::string& host, const std::string& dir,
    std::string_view dir_flag, std::string_view what) {
  std::vector<std::unique_ptr<profiling::ProfileExporter>> exporters;
  if (!dir.empty()) {
    auto sink = exporters::DirectoryProfileSink::Create(
        dir, host,
        profiling::ParseTraceFormat(config.cuda_profile_trace_format)
            .value_or(profiling::TraceFormat::kPerfetto));
    if (!sink) return base::Error(sink.error().WithContext(dir_flag));
    exporters::ProfileUploader::Options upload;
    upload.name = "directory";
    exporters.push_back(std::make_unique<exporters::ProfileUploader>(std::move(*sink), upload));
  }
  if (!config.server_url.empty()) {
    exporters::ServerProfileSink::Options so;
    so.server_url = config.server_url;
    so.host = host;
    so.tls_ca_file = config.tls_ca_file;
    so.timeout = std::chrono::seconds(5);  // bounds the agent's shutdown
    if (!config.auth_token_file.empty()) {
      WARPSCOPE_ASSIGN_OR_RETURN(so.auth_token,
                                 base::ReadTokenFile("--auth-token-file", config.auth_token_file));
    }
    auto server = exporters::ServerProfileSink::Create(so);
    if (!server) {
      return base::Error(server.error().WithContext(fmt::format("--server ({} profiles)", what)));
    }
    exporters::ProfileUploader::Options upload;
    upload.name = "server";
    exporters.push_back(std::make_unique<exporters::ProfileUploader>(std::move(*server), upload));
  }
  return exporters;
}

// The CUDA kernel profiler source (--cuda-profiler): listener, window length, sinks.
base::Result<std::unique_ptr<agent::Source>> MakeCudaProfiler(const agent::AgentConfig& config,
                                                              const std::string& host,
                                                              const base::Clock& clock,
                                                              agent::ErrorCounter& errors) {
  namespace cuda = agent::cuda_profiler;
  namespace wire = ::warpscope::cupti::wire;
  cuda::CudaProfilerSource::Options options;
  options.listener.socket_path = config.cuda_profiler_socket.empty()
                                     ? cuda::DefaultListenSocket(::getenv)
                                     : config.cuda_profiler_socket;
  options.listener.symbolizer.host_root = config.host_root;
  if (config.cuda_profiler_rate) {
    options.listener.controls_on_connect.push_back(
        wire::Control{wire::ControlOp::kSetRate, *config.cuda_profiler_rate});
  }
  if (config.cuda_pc_sampling) {
    options.listener.controls_on_connect.push_back(
        wire::Control{wire::ControlOp::kEnablePcSampling, 0});
  }
  options.window = config.cuda_profile_interval;
  WARPSCOPE_ASSIGN_OR_RETURN(
      cuda::CudaProfilerSource::Exporters exporters,
      MakeProfileExporters(config, host, config.cuda_profile_dir, "--cuda-profile-dir", "CUDA"));
  WARPSCOPE_LOG(INFO, "CUDA profiler: profiles every {}{}{}",
                base::FormatDuration(config.cuda_profile_interval),
                config.cuda_profile_dir.empty() ? "" : " to " + config.cuda_profile_dir,
                config.server_url.empty() ? "" : " to " + config.server_url);
  return std::unique_ptr<agent::Source>(std::make_unique<cuda::CudaProfilerSource>(
      std::move(options), std::move(exporters), clock,
      [&errors](std::string_view reason) { errors.Count(reason); }));
}

// The CPU profiler source (--enable-cpu-profiler): sampling, window length, sinks.
base::Result<std::unique_ptr<agent::cpu_profiler::CpuProfilerSource>> MakeCpuProfiler(
    const agent::AgentConfig& config, const std::string& host, const base::Clock& clock,
    agent::ErrorCounter& errors, const agent::kubernetes::PodDirectory* pods) {
  namespace cpu = agent::cpu_profiler;
  cpu::CpuProfilerSource::Options options;
  options.sampler.sampling.frequency_hz = config.cpu_profile_frequency;
  options.sampler.sampling.stack_bytes = config.cpu_profile_stack_bytes;
  options.sampler.host_root = config.host_root;
  if (!config.cpu_profile_pids.empty() || config.cpu_profile_gpu_processes) {
    options.sampler.pids =
        std::set<uint32_t>(config.cpu_profile_pids.begin(), config.cpu_profile_pids.end());
  }
  options.window = config.cpu_profile_interval;
  options.host_id = host;
  // The sampler's thread names containers and namespace pids through a resolver of its own.
  options.sampler.identities =
      WithPods(std::make_shared<agent::ProcfsProcessResolver>(config.host_root), pods);
  WARPSCOPE_ASSIGN_OR_RETURN(
      cpu::CpuProfilerSource::Exporters exporters,
      MakeProfileExporters(config, host, config.cpu_profile_dir, "--cpu-profile-dir", "CPU"));
  WARPSCOPE_LOG(INFO, "CPU profiler: {} Hz per CPU, profiles every {}{}{}",
                config.cpu_profile_frequency, base::FormatDuration(config.cpu_profile_interval),
                config.cpu_profile_dir.empty() ? "" : " to " + config.cpu_profile_dir,
                config.server_url.empty() ? "" : " to " + config.server_url);
  return std::make_unique<cpu::CpuProfilerSource>(
      std::move(options), std::move(exporters), cpu::LinuxPerfEventApi(config.host_root),
      std::make_unique<cpu::CpythonStacks>(
          cpu::CpythonStacks::Options{.host_root = config.host_root}),
      clock, [&errors](std::string_view reason) { errors.Count(reason); });
}

}  // namespace

AgentProcess::AgentProcess() = default;
int AgentProcess::metrics_port() const { return http_ != nullptr ? http_->port() : 0; }
AgentProcess::~AgentProcess() { Stop(); }

base::Result<std::unique_ptr<AgentProcess>> AgentProcess::Start(const agent::AgentConfig& config_in,
                                                                base::TaskRunner& runner,
                                                                const base::Clock& clock,
                                                                bool force_prometheus_exporter) {
  std::unique_ptr<AgentProcess> p(new AgentProcess());
  agent::AgentConfig config = config_in;
  // Where host metrics and the GPU processes' identities come from. With --simulate it is the
  // simulated host's synthetic /proc tree: NVML reports the scenario's pids, which name no
  // process of this machine, so they are resolved there and the host's own processes and totals
  // never mix with the simulated ones.
  std::string process_root = config.host_root;
  if (!config.simulate.empty()) {
    auto sim = PrepareSimulation(config.simulate);
    if (!sim) return base::Error(sim.error().WithContext("--simulate"));
    config.nvml_path = sim->library_path;
    process_root = sim->host_root;
    WARPSCOPE_LOG(INFO, "simulating NVML with scenario {} ({}), its host in {}", config.simulate,
                  sim->scenario_path, sim->host_root);
    p->simulation_ = std::move(*sim);
  }

  const std::string host = HostName(config);
  model::Entity host_entity{model::EntityKind::kHost, host, "", {}};
  host_entity.attributes.Set(model::attr::kHostName, host);
  p->agent_ = std::make_unique<agent::Agent>(
      agent::Agent::Options{config.collect_interval, config.export_interval, host_entity,
                            std::string(kVersion)},
      runner, clock);
  agent::Agent& agent = *p->agent_;
  if (config.kubernetes) {
    WARPSCOPE_ASSIGN_OR_RETURN(
        p->pods_,
        MakePodDirectory(config, host, clock, agent.self_stats().ErrorsFor("kubernetes")));
  }
  p->resolver_ =
      WithPods(std::make_shared<agent::ProcfsProcessResolver>(process_root), p->pods_.get());
  model::ProcessResolver& resolver = *p->resolver_;

  if (config.enable_gpu_metrics) {
    agent::NvmlSourceOptions nvml_options;
    nvml_options.library_path = config.nvml_path;
    agent::ErrorCounter& nvml_errors = agent.self_stats().ErrorsFor("nvml");
    agent.AddSource({agent::NvmlSource::Create(
                         nvml_options, clock, resolver,
                         [&nvml_errors](std::string_view reason) { nvml_errors.Count(reason); }),
                     nullptr});
  }
  if (config.enable_cpu_profiler) {
    // Right after the NVML source: the before_poll hook of --cpu-profile-gpu-processes must see
    // NVML's process entities only, not the host source's top processes (gpu_process_selection.h).
    WARPSCOPE_ASSIGN_OR_RETURN(
        auto profiler,
        MakeCpuProfiler(config, host, clock, agent.self_stats().ErrorsFor("cpu_profiler"),
                        p->pods_.get()));
    std::function<void(const agent::Aggregator&)> before_poll;
    if (config.cpu_profile_gpu_processes) {
      agent::cpu_profiler::CpuProfilerSource* source = profiler.get();
      auto selection = std::make_shared<agent::cpu_profiler::GpuProcessSelection>(
          std::set<uint32_t>(config.cpu_profile_pids.begin(), config.cpu_profile_pids.end()),
          [source](std::optional<std::set<uint32_t>> pids) {
            source->SetPidFilter(std::move(pids));
          });
      before_poll = [selection](const agent::Aggregator& agg) {
        selection->Update(agg.cycle_entities());
      };
    }
    agent.AddSource({std::move(profiler), std::move(before_poll)});
  }
  if (config.enable_host_metrics) {
    agent::ProcfsSourceOptions procfs_options;
    procfs_options.root = process_root;
    procfs_options.host_id = host;
    procfs_options.top_processes = static_cast<size_t>(config.top_processes);
    agent::ErrorCounter& procfs_errors = agent.self_stats().ErrorsFor("procfs");
    // The host source resolves on its own worker: a resolver of its own, never shared.
    p->host_resolver_ =
        WithPods(std::make_shared<agent::ProcfsProcessResolver>(process_root), p->pods_.get());
    model::ProcessResolver& host_resolver = *p->host_resolver_;
    auto procfs = std::make_unique<agent::ProcfsSource>(
        procfs_options, clock, host_resolver,
        [&procfs_errors](std::string_view reason) { procfs_errors.Count(reason); });
    agent::ProcfsSource* procfs_ptr = procfs.get();
    agent.AddSource({std::move(procfs), [procfs_ptr, &host_resolver](const agent::Aggregator& agg) {
                       host_resolver.BeginCycle();  // on the main sequence, its worker idle
                       procfs_ptr->SetProcessesOfInterest(ProcessesOfInterest(agg));
                     }});
  }

  if (config.enable_inference_metrics) {
    namespace inference = agent::inference;
    inference::InferenceSourceOptions options;
    options.host_root = process_root;
    options.target_pid_root = config.host_root;  // this machine's, also under --simulate
    options.host_id = host;
    for (const std::string& spec : config.inference_targets) {
      WARPSCOPE_ASSIGN_OR_RETURN(inference::StaticInferenceTarget target,
                                 inference::ParseInferenceTarget(spec));
      options.targets.push_back(std::move(target));
    }
    agent::ErrorCounter& inference_errors = agent.self_stats().ErrorsFor("inference");
    auto source = std::make_unique<inference::InferenceSource>(
        std::move(options), clock, &resolver,
        [&inference_errors](std::string_view reason) { inference_errors.Count(reason); });
    inference::InferenceSource* source_ptr = source.get();
    // The GPUs of the serving processes: NVML's per-process series of the last cycle.
    agent.AddSource({std::move(source), [source_ptr](const agent::Aggregator& agg) {
                       source_ptr->SetGpuProcesses(inference::GpuProcessesOf(agg.latest()));
                     }});
  }

  if (config.enable_cuda_profiler) {
    WARPSCOPE_ASSIGN_OR_RETURN(
        auto profiler,
        MakeCudaProfiler(config, host, clock, agent.self_stats().ErrorsFor("cuda_profiler")));
    agent.AddSource({std::move(profiler), nullptr});
  }

  p->store_ = std::make_shared<exporters::MetricsSnapshotStore>();
  if (!config.prometheus_listen_address.empty() || force_prometheus_exporter) {
    exporters::PrometheusExporter::Options prom;
    prom.render.hostname = host;
    prom.render.constant_labels = config.tags;
    prom.render.service_version = std::string(kVersion);
    agent.AddCycleExporter(std::make_unique<exporters::PrometheusExporter>(prom, p->store_));
  }
  if (!config.prometheus_listen_address.empty()) {
    exporters::MetricsHttpServer::Options http_options;
    http_options.listen_address = config.prometheus_listen_address;
    p->http_ = std::make_unique<exporters::MetricsHttpServer>(http_options, p->store_);
    WARPSCOPE_ASSIGN_OR_RETURN(int port, p->http_->Start());
    WARPSCOPE_LOG(INFO, "serving Prometheus metrics on {} (port {})",
                  config.prometheus_listen_address, port);
  }
  exporters::OtlpExporter* otlp_exporter = nullptr;
  if (!config.otlp_endpoint.empty()) {
    exporters::OtlpExporter::Options otlp;
    otlp.endpoint = config.otlp_endpoint;
    WARPSCOPE_ASSIGN_OR_RETURN(otlp.protocol, exporters::ParseOtlpProtocol(config.otlp_protocol));
    otlp.headers = config.otlp_headers;
    otlp.tls_ca_file = config.tls_ca_file;
    otlp.encoder.host_name = host;
    otlp.encoder.service_version = std::string(kVersion);
    otlp.encoder.resource_attributes = config.tags;
    WARPSCOPE_ASSIGN_OR_RETURN(auto exporter, exporters::OtlpExporter::Create(otlp));
    otlp_exporter = exporter.get();
    agent.AddWindowExporter(std::move(exporter));
  }
  exporters::ServerExporter* server_exporter = nullptr;
  if (!config.server_url.empty()) {
    exporters::ServerExporter::Options so;
    so.server_url = config.server_url;
    so.agent_id = host;
    so.host = host;
    so.tags = config.tags;
    so.agent_version = std::string(kVersion);
    so.auth_token_file = config.auth_token_file;
    so.tls_ca_file = config.tls_ca_file;
    so.buffer_dir = config.buffer_dir;
    so.buffer_max_bytes = config.buffer_max_bytes;
    WARPSCOPE_ASSIGN_OR_RETURN(auto exporter, exporters::ServerExporter::Create(so));
    server_exporter = exporter.get();
    p->server_exporter_ = server_exporter;
    agent.AddWindowExporter(std::move(exporter));
    WARPSCOPE_LOG(INFO, "pushing every window to {}", config.server_url);
  }

  // Push exporters drop frames on their own threads; report the counts with the self-metrics.
  const agent::kubernetes::PodDirectory* pods = p->pods_.get();
  agent.SetBeforeCycle([&resolver, &agent, otlp_exporter, server_exporter, pods] {
    resolver.BeginCycle();
    if (pods != nullptr) {
      const agent::kubernetes::PodDirectory::Stats s = pods->stats();
      agent.self_stats().SetKubernetes({.pods = pods->cache()->live_pods(),
                                        .synced = s.synced,
                                        .watch_restarts = s.watch_restarts});
    }
    if (otlp_exporter != nullptr) {
      agent.self_stats().SetExporterDropped("otlp", otlp_exporter->stats().dropped);
    }
    if (server_exporter != nullptr) {
      auto s = server_exporter->stats();
      agent.self_stats().SetExporterDropped(
          "server", s.dropped_full + s.dropped_rejected + s.dropped_shutdown);
    }
  });
  agent.Start();
  return p;
}

void AgentProcess::Stop() {
  if (pods_) pods_->Stop();
  if (agent_) agent_->Stop();
  if (http_) http_->Stop();
}

const std::string& AgentProcess::LatestExposition() const {
  return store_->Get()->body(exporters::ExpositionFormat::kText004);
}

namespace {

// SIGHUP: the log level applies at once; other changed settings are named as needing a restart
// (the sources, exporters and listeners are built once, at start).
void ReloadAgent(const Reloader& reloader) {
  base::Result<std::unique_ptr<CliApp>> again = reloader.parse_again();
  agent::AgentConfig next;
  base::Status st = again ? (*again)->agent_flags.Finish(next) : again.error();
  if (!st.ok()) {
    WARPSCOPE_LOG(ERROR, "reload refused, the running configuration stays: {}", st.message());
    return;
  }
  const AgentFlags& flags = (*again)->agent_flags;
  std::vector<std::string> restart;
  for (const std::string& name :
       ChangedOptions(*reloader.at_start->agent_cmd, *(*again)->agent_cmd)) {
    if (name != "--log-level" && name != "--verbose") restart.push_back(name);
  }
  if (!restart.empty()) {
    WARPSCOPE_LOG(WARNING,
                  "reload: {} changed; that takes a restart (systemctl restart warpscope-agent)",
                  fmt::join(restart, ", "));
  }
  // Said before the new level applies, so that it is seen whatever the level.
  WARPSCOPE_LOG(INFO, "configuration reloaded: log level {}, verbosity {}", flags.log_level,
                flags.verbosity);
  base::SetMinLogSeverity(LogSeverityFromName(flags.log_level));
  base::SetVerboseLevel(flags.verbosity);
}

}  // namespace

int RunAgent(const agent::AgentConfig& config, bool once, const Reloader& reloader) {
  const sigset_t signals = BlockTerminationSignals();

  base::RealClock& clock = base::RealClock::Get();
  base::ThreadTaskRunner runner(clock);
  agent::AgentConfig effective = config;
  if (once) effective.prometheus_listen_address.clear();
  auto process = AgentProcess::Start(effective, runner, clock, /*force_prometheus_exporter=*/once);
  if (!process) {
    std::fprintf(stderr, "warpscope agent: %s\n", process.error().message().c_str());
    base::StatusCode code = process.error().code();
    return code == base::StatusCode::kInvalidArgument || code == base::StatusCode::kNotFound ? 2
                                                                                             : 1;
  }
  if (once) {
    // Two cycles: rates (CPU utilization, NVLink, GPM) need a previous sample.
    runner.PostDelayedTask([&] { runner.Quit(); },
                           config.collect_interval + std::chrono::milliseconds(50));
    runner.Run();
    (*process)->agent().CollectCycle();
    (*process)->Stop();
    const std::string& body = (*process)->LatestExposition();
    std::fwrite(body.data(), 1, body.size(), stdout);
    return 0;
  }
  std::function<void()> reload;
  if (reloader.parse_again) reload = [&] { ReloadAgent(reloader); };
  RunUntilSignal(
      runner, signals, [&] { (*process)->Stop(); }, std::move(reload));
  return 0;
}

}  // namespace warpscope::cli
