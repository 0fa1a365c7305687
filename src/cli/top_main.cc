// SPDX-License-Identifier: Apache-2.0
// `warpscope top`: a live terminal view of this host's GPUs and their processes (the agent's NVML
// source and process resolver, or the simulator), or of one host of a server. The view itself
// is src/top/; this file picks the collector and wires the terminal.
#include <httplib.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/aggregator.h"
#include "agent/sources/nvml/nvml_source.h"
#include "agent/sources/procfs/procfs_process_resolver.h"
#include "agent/sources/procfs/procfs_source.h"
#include "base/logging.h"
#include "base/token_file.h"
#include "cli/commands.h"
#include "cli/simulation.h"
#include "exporters/http_push.h"
#include "model/process.h"
#include "top/frame_snapshot.h"
#include "top/remote_snapshot.h"
#include "top/terminal.h"
#include "top/top_loop.h"

namespace warpscope::cli {
namespace {

// Log lines would scribble over the screen: the latest warning goes to the status line instead,
// for the next kRefreshesShown refreshes.
class StatusLineLog final : public base::LogSink {
 public:
  static constexpr int kRefreshesShown = 10;
  void Write(base::LogSeverity severity, std::string_view, int, std::string_view message) override {
    if (severity < base::LogSeverity::kWarning) return;
    std::lock_guard lock(mu_);
    last_ = std::string(message);
    left_ = kRefreshesShown;
  }
  // The warning to show at this refresh, or "".
  std::string Next() {
    std::lock_guard lock(mu_);
    if (left_ <= 0) return "";
    --left_;
    return last_;
  }

 private:
  std::mutex mu_;
  std::string last_;
  int left_ = 0;
};

std::string LocalHostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

// This host through the agent's sources: NVML (GPUs, GPU processes resolved in /proc) and the
// host source for those processes' CPU, into an aggregator whose latest cycle is the snapshot.
class LocalCollector final : public top::Collector {
 public:
  static base::Result<std::unique_ptr<LocalCollector>> Create(const TopOptions& options) {
    std::unique_ptr<LocalCollector> c(new LocalCollector());
    std::string root = "/";
    std::string library = options.nvml_path;
    c->origin_ = "NVML";
    if (!options.simulate.empty()) {
      auto sim = PrepareSimulation(options.simulate);
      if (!sim) return base::Error(sim.error().WithContext("--simulate"));
      library = sim->library_path;
      root = sim->host_root;
      c->origin_ = "simulated: " + options.simulate;
      c->simulation_ = std::move(*sim);
    }
    c->resolver_ = std::make_unique<agent::ProcfsProcessResolver>(root);
    c->host_resolver_ = std::make_unique<agent::ProcfsProcessResolver>(root);
    agent::NvmlSourceOptions nvml;
    nvml.library_path = library;
    c->nvml_ = agent::NvmlSource::Create(nvml, c->clock_, *c->resolver_);
    if (base::Status st = c->nvml_->Start(); !st.ok()) {
      return base::Error(st.WithContext("NVML"));
    }
    agent::ProcfsSourceOptions procfs;
    procfs.root = root;
    procfs.top_processes = 0;  // the GPU processes only
    procfs.per_core_cpu = false;
    c->procfs_ = std::make_unique<agent::ProcfsSource>(procfs, c->clock_, *c->host_resolver_);
    // Without /proc the GPUs are still worth showing: no CPU column then.
    c->procfs_ok_ = c->procfs_->Start().ok();
    return c;
  }

  ~LocalCollector() override {
    if (procfs_) procfs_->Stop();
    if (nvml_) nvml_->Stop();
  }

  top::Snapshot Collect() override {
    base::TimePoint now = clock_.Now();
    agg_.BeginCycle(now);
    resolver_->BeginCycle();
    nvml_->Poll(now, agg_);
    nvml_->Finish(now, agg_);
    if (procfs_ok_) {
      std::vector<model::ProcessIdentity> gpu_processes;
      for (const model::Entity& e : agg_.cycle_entities()) {
        if (e.kind != model::EntityKind::kProcess) continue;
        auto identity = model::ParseProcessEntityId(e.id);
        if (identity && identity->known()) gpu_processes.push_back(*identity);
      }
      host_resolver_->BeginCycle();
      procfs_->SetProcessesOfInterest(std::move(gpu_processes));
      procfs_->Poll(now, agg_);
    }
    agg_.EndCycle();
    // Windows are never exported here; closing them now and then bounds what they keep.
    if (++cycles_ % 60 == 0) (void)agg_.CloseWindow(now);
    top::Snapshot snapshot = top::SnapshotFromFrame(agg_.latest());
    snapshot.host = host_;
    snapshot.origin = origin_;
    return snapshot;
  }

 private:
  LocalCollector() = default;
  base::RealClock& clock_ = base::RealClock::Get();
  std::string host_ = LocalHostName();
  std::string origin_;
  std::optional<Simulation> simulation_;  // owns the simulated host's directory
  std::unique_ptr<agent::ProcfsProcessResolver> resolver_;
  std::unique_ptr<agent::ProcfsProcessResolver> host_resolver_;
  std::unique_ptr<agent::NvmlSource> nvml_;
  std::unique_ptr<agent::ProcfsSource> procfs_;
  bool procfs_ok_ = false;
  agent::Aggregator agg_;
  uint64_t cycles_ = 0;
};

// One host of a warpscope server, through its query API.
class RemoteCollector final : public top::Collector {
 public:
  static base::Result<std::unique_ptr<RemoteCollector>> Create(const TopOptions& options) {
    WARPSCOPE_ASSIGN_OR_RETURN(
        exporters::HttpEndpoint endpoint,
        exporters::ParseHttpEndpoint(options.server, "--server", "http://127.0.0.1:9410"));
    std::unique_ptr<RemoteCollector> c(new RemoteCollector());
    if (!options.auth_token_file.empty()) {
      WARPSCOPE_ASSIGN_OR_RETURN(c->token_,
                                 base::ReadTokenFile("--auth-token-file", options.auth_token_file));
    }
    exporters::HttpClientOptions client;
    client.timeout = std::chrono::seconds(5);
    client.tls_ca_file = options.tls_ca_file;
    c->client_ = exporters::MakeHttpClient(endpoint, client);
    c->prefix_ = endpoint.path;
    while (!c->prefix_.empty() && c->prefix_.back() == '/') c->prefix_.pop_back();
    c->host_ = options.host;
    c->url_ = options.server;
    return c;
  }

  top::Snapshot Collect() override {
    std::vector<std::string> bodies;
    httplib::Headers headers;
    if (!token_.empty()) headers.emplace("Authorization", "Bearer " + token_);
    for (const std::string& path : top::RemoteRequests(host_)) {
      httplib::Result r = client_->Get((prefix_ + path).c_str(), headers);
      if (!r) {
        return Failed(fmt::format("cannot reach {} ({}); is `warpscope server` running there?",
                                  url_, httplib::to_string(r.error())));
      }
      // A metric the server never received (a host without GPU processes) is a 404 of /top:
      // nothing to show, not an error.
      if (r->status == 404 && path.starts_with("/api/v1/top?")) {
        bodies.emplace_back(R"({"entries": []})");
        continue;
      }
      if (r->status != 200) {
        return Failed(
            fmt::format("{} answered {} to {}: {}", url_, r->status, path, r->body.substr(0, 200)));
      }
      bodies.push_back(std::move(r->body));
    }
    base::Result<top::Snapshot> s = top::SnapshotFromServer(host_, bodies);
    if (!s) return Failed(s.error().message());
    s->origin = "server " + url_;
    if (s->gpus.empty()) {
      s->error = fmt::format("the server has no GPU of host \"{}\" in the last 2 minutes", host_);
    }
    return std::move(*s);
  }

 private:
  RemoteCollector() = default;
  top::Snapshot Failed(std::string error) {
    top::Snapshot s;
    s.host = host_;
    s.origin = "server " + url_;
    s.error = std::move(error);
    return s;
  }
  std::unique_ptr<httplib::Client> client_;
  std::string prefix_;
  std::string token_;
  std::string host_;
  std::string url_;
};

// Adds a recent warning to the status line of the snapshot.
class WithLog final : public top::Collector {
 public:
  WithLog(top::Collector& inner, StatusLineLog& log) : inner_(inner), log_(log) {}
  top::Snapshot Collect() override {
    top::Snapshot s = inner_.Collect();
    std::string warning = log_.Next();
    if (s.error.empty()) s.error = std::move(warning);
    return s;
  }

 private:
  top::Collector& inner_;
  StatusLineLog& log_;
};

}  // namespace

int RunTop(const TopOptions& options) {
  base::Result<base::Duration> interval = base::ParseDuration(options.interval);
  if (!interval || *interval < std::chrono::milliseconds(100)) {
    std::fprintf(stderr,
                 "warpscope top: --interval %s is not a duration of at least 100ms (e.g. 1s, "
                 "500ms, 2s)\n",
                 options.interval.c_str());
    return 2;
  }
  if (!options.server.empty() && options.host.empty()) {
    std::fprintf(stderr, "warpscope top: --server needs --host H, the host to show\n");
    return 2;
  }
  if (!options.server.empty() && !options.simulate.empty()) {
    std::fprintf(stderr, "warpscope top: --simulate and --server exclude each other\n");
    return 2;
  }
  StatusLineLog log;
  base::SetLogSink(&log);
  base::Result<std::unique_ptr<top::Collector>> collector =
      options.server.empty()
          ? base::Result<std::unique_ptr<top::Collector>>(LocalCollector::Create(options))
          : base::Result<std::unique_ptr<top::Collector>>(RemoteCollector::Create(options));
  if (!collector) {
    base::SetLogSink(nullptr);
    std::fprintf(stderr, "warpscope top: %s%s\n", collector.error().message().c_str(),
                 options.server.empty() && options.simulate.empty()
                     ? " (no GPU here? try `warpscope top --simulate healthy-8xh100`)"
                     : "");
    // Bad input (an unknown scenario included) is 2, as for the agent; NVML or a server that
    // cannot be used is 1.
    base::StatusCode code = collector.error().code();
    bool bad_input = code == base::StatusCode::kInvalidArgument ||
                     (!options.simulate.empty() && code == base::StatusCode::kNotFound &&
                      collector.error().message().starts_with("--simulate"));
    return bad_input ? 2 : 1;
  }
  int rc = 0;
  {
    base::Result<std::unique_ptr<top::CursesDisplay>> display = top::CursesDisplay::Open();
    if (!display) {
      base::SetLogSink(nullptr);
      std::fprintf(stderr, "warpscope top: %s\n", display.error().message().c_str());
      return 2;
    }
    WithLog source(**collector, log);
    top::LoopOptions loop;
    loop.interval = *interval;
    loop.stop_requested = [] { return top::CursesDisplay::stop_requested(); };
    top::RunLoop(**display, source, base::RealClock::Get(), loop);
    rc = top::CursesDisplay::stop_requested() ? 130 : 0;
  }
  collector->reset();
  base::SetLogSink(nullptr);
  return rc;
}

}  // namespace warpscope::cli
