// SPDX-License-Identifier: Apache-2.0
// Simulates a fleet of agents pushing to a warpscope server: each simulated agent owns one
// exporters::ServerExporter (distinct agent id and host) and exports a realistic 8-GPU window
// every --interval for --duration: exporters::sample::MakeSampleFrame (8 GPUs, 64 processes,
// host series: 808 series) plus the agent's per-core CPU time (64 CPUs x 8 modes), 1,320 series
// in all, close to the 1,263 of `warpscope agent --simulate healthy-8xh100`.
// Agents are spread evenly over the interval, as independent agents would be. At the end every
// exporter drains its queue (up to --drain-timeout) and the totals are printed, followed by one
// machine-readable "RESULT key=value ..." line that bench/server_load.sh parses.
// With --history, every agent first sends the GPU series of the hour (or whatever) before the
// run, one window per --history-interval, as an agent replaying its spool after an outage would,
// and the run starts once the server has acknowledged all of it: the UI's pages then read a
// range full of data.
//
//   server_load_agents --server=http://127.0.0.1:9410 [--agents=64] [--interval=10s]
//                      [--duration=60s] [--history=1h --history-interval=60s]

#include <fmt/format.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "exporters/exporter.h"
#include "exporters/server/server_exporter.h"
#include "exporters/testing/sample_frame.h"
#include "model/frame.h"
#include "model/metric.h"

namespace warpscope {
namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  std::string server_url;
  int agents = 64;
  std::string interval = "10s";
  std::string duration = "60s";
  std::string drain_timeout = "30s";
  int gpus = 8;
  int processes = 64;
  int cpus = 64;
  std::string history = "0s";
  std::string history_interval = "60s";
};

// The agent's per-core CPU time (host.cpu.core.time in the procfs source), restated here so that
// the benchmark does not depend on the agent.
const model::MetricDesc kCpuCoreTime{
    .key = "host.cpu.core.time",
    .entity = model::EntityKind::kHost,
    .kind = model::MetricKind::kCounter,
    .unit = "s",
    .help = "CPU time spent in each mode by one logical CPU, in seconds.",
    .prom_name = "warpscope_host_cpu_core_seconds_total",
    .otel_name = "system.cpu.time",
    .labels = "cpu,mode",
};

void AddPerCoreCpu(model::Frame& frame, const std::string& host, int cpus) {
  for (int cpu = 0; cpu < cpus; ++cpu) {
    for (const char* mode :
         {"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"}) {
      model::SeriesPoint point;
      point.metric = &kCpuCoreTime;
      point.entity = host;
      point.labels = model::Labels{{"cpu", std::to_string(cpu)}, {"mode", mode}};
      point.avg = point.min = point.max = point.last = 1000.0 + cpu;
      point.count = 1;
      point.last_time = frame.end;
      frame.series.push_back(std::move(point));
    }
  }
}

struct SimulatedAgent {
  std::string id;
  model::Frame frame;  // the agent's window; timestamps and values move on every export
  std::unique_ptr<exporters::ServerExporter> exporter;
  Clock::time_point next;  // when the next window is due
  uint64_t exported = 0;   // Export() calls answered kSuccess
  uint64_t refused = 0;    // Export() calls answered otherwise
  exporters::ServerExporter::Stats before;  // the exporter's counts once --history was sent
};

double CpuSecondsOfThisProcess() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) {
    return 0;
  }
  auto seconds = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Moves the window to [end - interval, end) and changes the values a little, so that the server
// stores new numbers each time (counters grow, gauges wobble) rather than one repeated window.
void AdvanceWindow(model::Frame& frame, base::TimePoint end, base::Duration interval,
                   uint64_t window) {
  frame.start = end - interval;
  frame.end = end;
  const double wobble = static_cast<double>(window % 7) * 0.01;
  const double seconds = std::chrono::duration<double>(interval).count();
  for (model::SeriesPoint& point : frame.series) {
    point.last_time = end;
    if (point.metric != nullptr && point.metric->kind == model::MetricKind::kCounter) {
      point.last += seconds;
      point.avg = point.min = point.max = point.last;
    } else {
      const double delta = (window % 2 == 0) ? wobble : -wobble;
      point.avg += delta;
      point.min += delta;
      point.max += delta;
      point.last += delta;
    }
  }
}

// Sends each agent's GPU windows of [now - history, now), `step` apart, and waits (up to
// `timeout`) until every one is acknowledged. Returns false, having said why, if some were not.
bool SendHistory(std::vector<SimulatedAgent>& agents, const Flags& flags, base::Duration history,
                 base::Duration step, base::Duration timeout) {
  const Clock::time_point began = Clock::now();
  const base::TimePoint now = base::RealClock::Get().Now();
  const int64_t windows = history / step;
  size_t series = 0;
  uint64_t refused = 0;
  for (SimulatedAgent& agent : agents) {
    exporters::sample::SampleFrameOptions options;
    options.gpus = flags.gpus;
    options.processes = 0;
    options.host = agent.id;
    options.window = step;
    model::Frame frame = exporters::sample::MakeSampleFrame(options);
    series = frame.series.size();
    for (int64_t k = windows; k >= 1; --k) {
      AdvanceWindow(frame, now - step * (k - 1), step, static_cast<uint64_t>(k));
      if (agent.exporter->Export(frame) != exporters::ExportResult::kSuccess) ++refused;
    }
  }
  const Clock::time_point deadline = began + timeout;
  auto queued = [&] {
    uint64_t n = 0;
    for (SimulatedAgent& agent : agents) n += agent.exporter->stats().queued;
    return n;
  };
  // A benchmark's wait for other processes' work, polled: nothing here signals completion.
  while (queued() > 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - began).count();
  const uint64_t left = queued();
  fmt::print(
      "history: {} windows of {} series per agent, {} apart, acknowledged in {:.1f} s "
      "({:.0f} series-windows/s); {} refused, {} still queued\n",
      windows, series, base::FormatDuration(step), seconds,
      seconds > 0 ? static_cast<double>(windows * agents.size() * series) / seconds : 0, refused,
      left);
  std::fflush(stdout);
  for (SimulatedAgent& agent : agents) agent.before = agent.exporter->stats();
  return refused == 0 && left == 0;
}

int Run(const Flags& flags) {
  auto interval = base::ParseDuration(flags.interval);
  auto duration = base::ParseDuration(flags.duration);
  auto drain = base::ParseDuration(flags.drain_timeout);
  auto history = base::ParseDuration(flags.history);
  auto history_interval = base::ParseDuration(flags.history_interval);
  if (!interval || !duration || !drain || !history || !history_interval ||
      *interval <= base::Duration::zero() || *history_interval <= base::Duration::zero()) {
    fmt::print(stderr,
               "--interval, --duration, --drain-timeout, --history and --history-interval take "
               "durations like 10s, 1m or 500ms, and the intervals must be positive\n");
    return 2;
  }

  std::vector<SimulatedAgent> agents(flags.agents);
  size_t series_per_window = 0;
  for (int i = 0; i < flags.agents; ++i) {
    SimulatedAgent& agent = agents[i];
    agent.id = fmt::format("load-agent-{:03}", i);
    exporters::sample::SampleFrameOptions frame_options;
    frame_options.gpus = flags.gpus;
    frame_options.processes = flags.processes;
    frame_options.host = agent.id;
    frame_options.window = *interval;
    agent.frame = exporters::sample::MakeSampleFrame(frame_options);
    AddPerCoreCpu(agent.frame, agent.id, flags.cpus);
    series_per_window = agent.frame.series.size();

    exporters::ServerExporter::Options options;
    options.server_url = flags.server_url;
    options.agent_id = agent.id;
    options.host = agent.id;
    options.initial_backoff = std::chrono::milliseconds(200);
    options.max_backoff = std::chrono::seconds(5);
    auto exporter = exporters::ServerExporter::Create(std::move(options));
    if (!exporter) {
      fmt::print(stderr, "simulated agent {}: {}\n", agent.id, exporter.error().ToString());
      return 1;
    }
    agent.exporter = std::move(*exporter);
  }

  fmt::print("{} agents x {} series per window, one window every {} per agent, for {}\n",
             flags.agents, series_per_window, base::FormatDuration(*interval),
             base::FormatDuration(*duration));
  std::fflush(stdout);

  if (*history > base::Duration::zero() &&
      !SendHistory(agents, flags, *history, *history_interval, *history + *drain)) {
    fmt::print(stderr, "the history was not all acknowledged; not starting the run\n");
    return 1;
  }
  const double cpu_at_start = CpuSecondsOfThisProcess();
  const Clock::time_point start = Clock::now();
  const Clock::time_point stop = start + *duration;
  for (int i = 0; i < flags.agents; ++i) {
    agents[i].next = start + *interval * i / flags.agents;
  }

  // One thread walks the schedule: the agent due soonest exports, then waits one interval.
  while (true) {
    auto due = std::min_element(agents.begin(), agents.end(),
                                [](const auto& a, const auto& b) { return a.next < b.next; });
    if (due == agents.end() || due->next >= stop) {
      break;
    }
    std::this_thread::sleep_until(due->next);
    AdvanceWindow(due->frame, base::RealClock::Get().Now(), *interval,
                  due->exported + due->refused);
    if (due->exporter->Export(due->frame) == exporters::ExportResult::kSuccess) {
      ++due->exported;
    } else {
      ++due->refused;
    }
    due->next += *interval;
  }
  const Clock::time_point pushed = Clock::now();

  // Drain: Shutdown() keeps sending until the exporter's queue is empty; every exporter gets the
  // same deadline (the others keep sending while one is waited on).
  const Clock::time_point drain_deadline = pushed + *drain;
  for (SimulatedAgent& agent : agents) {
    auto left = std::max(Clock::duration::zero(), drain_deadline - Clock::now());
    agent.exporter->Shutdown(std::chrono::duration_cast<base::Duration>(left));
  }
  const Clock::time_point drained = Clock::now();

  uint64_t exported = 0, refused = 0, sent = 0, duplicates = 0, dropped = 0, retries = 0,
           unsent = 0;
  std::string last_error;
  for (SimulatedAgent& agent : agents) {
    const exporters::ServerExporter::Stats stats = agent.exporter->stats();
    exported += agent.exported;
    refused += agent.refused;
    sent += stats.sent - agent.before.sent;
    duplicates += stats.duplicates - agent.before.duplicates;
    dropped += stats.dropped_full + stats.dropped_rejected - agent.before.dropped_full -
               agent.before.dropped_rejected;
    retries += stats.retries - agent.before.retries;
    unsent += stats.dropped_shutdown;
    if (!stats.last_error.empty()) {
      last_error = stats.last_error;
    }
  }
  const double cpu_seconds = CpuSecondsOfThisProcess() - cpu_at_start;

  const double push_seconds = std::chrono::duration<double>(pushed - start).count();
  const double total_seconds = std::chrono::duration<double>(drained - start).count();
  // Each agent pushes duration / interval windows, so over a run that kept up the steady rate is
  // sent / duration; a server that fell behind stretches the drain and lowers it.
  const double rate_seconds =
      std::max(std::chrono::duration<double>(*duration).count(), total_seconds);
  const double windows_per_second = rate_seconds > 0 ? sent / rate_seconds : 0;
  const uint64_t failures = refused + dropped + unsent;
  fmt::print("windows exported {}, acknowledged {} ({} duplicates), series-windows sent {}\n",
             exported, sent, duplicates, sent * series_per_window);
  fmt::print(
      "failures {} (refused {}, dropped {}, not sent by the drain deadline {}), retries {}{}\n",
      failures, refused, dropped, unsent, retries,
      last_error.empty() ? "" : fmt::format(", last error: {}", last_error));
  fmt::print(
      "push phase {:.1f} s, drained after {:.1f} s: {:.2f} windows/s, {:.0f} "
      "series-windows/s; generator CPU {:.2f} s\n",
      push_seconds, total_seconds, windows_per_second, windows_per_second * series_per_window,
      cpu_seconds);
  fmt::print(
      "RESULT agents={} series_per_window={} exported={} sent={} series_windows={} "
      "failures={} retries={} seconds={:.2f} windows_per_s={:.2f} series_windows_per_s={:.0f} "
      "generator_cpu_s={:.2f}\n",
      flags.agents, series_per_window, exported, sent, sent * series_per_window, failures, retries,
      total_seconds, windows_per_second, windows_per_second * series_per_window, cpu_seconds);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace warpscope

int main(int argc, char** argv) {
  CLI::App app("Simulated agents pushing 8-GPU windows to a warpscope server");
  warpscope::Flags flags;
  app.add_option("--server", flags.server_url, "Server base URL, e.g. http://127.0.0.1:9410")
      ->required();
  app.add_option("--agents", flags.agents, "Simulated agents")->check(CLI::Range(1, 10000));
  app.add_option("--interval", flags.interval, "Window length: one push per agent per interval");
  app.add_option("--duration", flags.duration, "How long agents keep pushing");
  app.add_option("--drain-timeout", flags.drain_timeout,
                 "How long queued windows may take to reach the server after the push phase");
  app.add_option("--gpus", flags.gpus, "GPUs per simulated node")->check(CLI::Range(0, 64));
  app.add_option("--processes", flags.processes, "GPU processes per simulated node")
      ->check(CLI::Range(0, 4096));
  app.add_option("--cpus", flags.cpus, "Logical CPUs per simulated node (per-core CPU series)")
      ->check(CLI::Range(0, 4096));
  app.add_option("--history", flags.history,
                 "Before the run, send each agent's GPU windows of this long before now");
  app.add_option("--history-interval", flags.history_interval, "The windows' length in --history");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return warpscope::Run(flags);
}
