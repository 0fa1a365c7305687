// SPDX-License-Identifier: Apache-2.0
// Feeds a Prometheus remote-write 1.0 receiver a fixed set of samples as fast as it takes them,
// so that two receivers (warpscope's /api/v1/write and Prometheus' own receiver) can be compared
// on exactly the same bytes: bench/remote_write_vs_prometheus.sh runs it against both.
//
// The data looks like dcgm-exporter scraped on a fleet: --hosts hosts x 8 GPUs x 20 DCGM
// metrics, with dcgm-exporter's labels (Hostname, UUID, gpu, modelName) plus instance and job,
// --samples samples per series --step apart, ending now. Every request carries --per-request
// samples of one timestamp (one sample per series, as Prometheus' queue manager sends them).
// All requests are built and snappy-compressed before the clock starts. Each series always goes
// through the same connection, in time order, so an in-order receiver accepts every sample; no
// connection runs more than kMaxLeadSteps timestamps ahead of the others.
// Prints one machine-readable "RESULT key=value ..." line.
//
//   remote_write_load --url=http://127.0.0.1:9090/api/v1/write [--hosts=64] [--samples=60]
//                     [--step=10s] [--per-request=500] [--connections=4] [--token=T]

#include <fmt/format.h>
#include <httplib.h>
#include <snappy.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/time.h"
#include "prometheus/remote.pb.h"

namespace warpscope {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr int kGpusPerHost = 8;
// How many timestamps one connection may run ahead of the slowest (see Lockstep).
constexpr int kMaxLeadSteps = 30;
constexpr std::array<const char*, 20> kMetrics = {
    "DCGM_FI_DEV_GPU_UTIL",         "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_FB_USED",          "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_POWER_USAGE",      "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_MEMORY_TEMP",      "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_MEM_CLOCK",        "DCGM_FI_PROF_SM_ACTIVE",
    "DCGM_FI_PROF_SM_OCCUPANCY",    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",     "DCGM_FI_PROF_PCIE_TX_BYTES",
    "DCGM_FI_PROF_PCIE_RX_BYTES",   "DCGM_FI_PROF_NVLINK_TX_BYTES",
    "DCGM_FI_PROF_NVLINK_RX_BYTES", "DCGM_FI_DEV_ENC_UTIL",
    "DCGM_FI_DEV_DEC_UTIL",         "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"};

struct Flags {
  std::string url;
  int hosts = 64;
  int samples = 60;
  std::string step = "10s";
  int per_request = 500;
  int connections = 4;
  std::string token;
};

struct SeriesLabels {
  std::vector<std::pair<std::string, std::string>> labels;  // sorted by name
};

std::vector<SeriesLabels> MakeSeries(int hosts) {
  std::vector<SeriesLabels> out;
  out.reserve(static_cast<size_t>(hosts) * kGpusPerHost * kMetrics.size());
  for (int h = 0; h < hosts; ++h) {
    std::string host = fmt::format("gpu-node-{:03d}", h);
    for (int g = 0; g < kGpusPerHost; ++g) {
      std::string uuid = fmt::format("GPU-{:08x}-0000-4000-8000-{:012x}", h, g);
      for (const char* metric : kMetrics) {
        // Byte order of the names: "Hostname" < "UUID" < "__name__" < "gpu" < "instance" <
        // "job" < "modelName" (remote write requires sorted labels).
        out.push_back({{{"Hostname", host},
                        {"UUID", uuid},
                        {"__name__", metric},
                        {"gpu", std::to_string(g)},
                        {"instance", host + ":9400"},
                        {"job", "dcgm"},
                        {"modelName", "NVIDIA H100 80GB HBM3"}}});
      }
    }
  }
  return out;
}

// One request: the index of its timestamp and its snappy body.
struct Request {
  int step = 0;
  std::string body;
};
// One connection's requests, in the order it sends them.
using Requests = std::vector<Request>;

// Keeps the connections within `lead` timestamps of each other, as Prometheus's sender shards
// move through time together: a receiver that only accepts samples near its newest (Prometheus's
// head takes nothing more than 1.5 h behind its newest sample) would otherwise refuse a slow
// connection's samples once a fast one ran hours ahead.
class Lockstep {
 public:
  Lockstep(int connections, int lead) : done_(static_cast<size_t>(connections), -1), lead_(lead) {}
  // Waits until every connection has sent all its requests of timestamps before step - lead.
  void WaitFor(int step) {
    std::unique_lock lock(mu_);
    cv_.wait(lock,
             [&] { return *std::min_element(done_.begin(), done_.end()) >= step - lead_ - 1; });
  }
  // Connection `c` has sent every request of timestamps up to `step`.
  void Done(int c, int step) {
    {
      std::lock_guard lock(mu_);
      done_[static_cast<size_t>(c)] = step;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> done_;
  const int lead_;
};

std::vector<Requests> BuildRequests(const Flags& flags, int64_t step_ms, int64_t end_ms) {
  std::vector<SeriesLabels> series = MakeSeries(flags.hosts);
  size_t chunks = (series.size() + flags.per_request - 1) / flags.per_request;
  std::vector<Requests> per_connection(flags.connections);
  for (int i = 0; i < flags.samples; ++i) {
    int64_t ts = end_ms - static_cast<int64_t>(flags.samples - 1 - i) * step_ms;
    for (size_t c = 0; c < chunks; ++c) {
      prometheus::WriteRequest request;
      size_t first = c * flags.per_request;
      size_t last = std::min(series.size(), first + flags.per_request);
      for (size_t s = first; s < last; ++s) {
        prometheus::TimeSeries* ts_proto = request.add_timeseries();
        for (const auto& [name, value] : series[s].labels) {
          prometheus::Label* label = ts_proto->add_labels();
          label->set_name(name);
          label->set_value(value);
        }
        prometheus::Sample* sample = ts_proto->add_samples();
        // Values that change from sample to sample, as real gauges do.
        sample->set_value(
            50.0 + 40.0 * std::sin(0.05 * static_cast<double>(i) + static_cast<double>(s % 97)));
        sample->set_timestamp(ts);
      }
      std::string raw;
      request.SerializeToString(&raw);
      std::string compressed;
      snappy::Compress(raw.data(), raw.size(), &compressed);
      per_connection[c % flags.connections].push_back(Request{i, std::move(compressed)});
    }
  }
  return per_connection;
}

struct Totals {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> failures{0};
  std::atomic<uint64_t> bytes{0};
};

void SendAll(const std::string& base, const std::string& path, const std::string& token,
             int connection, const Requests& requests, Lockstep& lockstep, Totals& totals,
             std::string& first_error) {
  httplib::Client client(base);
  client.set_keep_alive(true);
  // As Prometheus's sender (Go sets TCP_NODELAY on every connection): without it, the body
  // written after the headers waits for the receiver's delayed ACK, ~40 ms per request, and
  // both receivers measure that wait instead of their own speed.
  client.set_tcp_nodelay(true);
  client.set_read_timeout(60, 0);
  httplib::Headers headers = {{"Content-Encoding", "snappy"},
                              {"X-Prometheus-Remote-Write-Version", "0.1.0"},
                              {"User-Agent", "warpscope-remote-write-load"}};
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  if (requests.empty()) {
    lockstep.Done(connection, INT_MAX - 1);
  }
  for (size_t r = 0; r < requests.size(); ++r) {
    const auto& [step, body] = requests[r];
    lockstep.WaitFor(step);
    httplib::Result res = client.Post(path, headers, body, "application/x-protobuf");
    totals.requests.fetch_add(1);
    totals.bytes.fetch_add(body.size());
    if (r + 1 == requests.size() || requests[r + 1].step != step) {
      lockstep.Done(connection, r + 1 == requests.size() ? INT_MAX - 1 : step);
    }
    if (!res || res->status / 100 != 2) {
      if (totals.failures.fetch_add(1) == 0) {
        first_error = res ? fmt::format("HTTP {}: {}", res->status, res->body)
                          : fmt::format("no answer ({})", httplib::to_string(res.error()));
      }
    }
  }
}

int Run(const Flags& flags) {
  auto step = base::ParseDuration(flags.step);
  if (!step.has_value() || step->count() <= 0) {
    fmt::print(stderr, "--step={} is not a positive duration such as 10s\n", flags.step);
    return 2;
  }
  // Split the URL into scheme://host:port and the path.
  size_t scheme_end = flags.url.find("://");
  size_t path_start =
      scheme_end == std::string::npos ? std::string::npos : flags.url.find('/', scheme_end + 3);
  if (path_start == std::string::npos) {
    fmt::print(stderr, "--url={} must be like http://127.0.0.1:9090/api/v1/write\n", flags.url);
    return 2;
  }
  std::string base = flags.url.substr(0, path_start);
  std::string path = flags.url.substr(path_start);

  int64_t step_ms = std::chrono::duration_cast<std::chrono::milliseconds>(*step).count();
  int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  std::vector<Requests> requests = BuildRequests(flags, step_ms, now_ms);
  uint64_t series = static_cast<uint64_t>(flags.hosts) * kGpusPerHost * kMetrics.size();
  uint64_t samples = series * static_cast<uint64_t>(flags.samples);

  Totals totals;
  Lockstep lockstep(flags.connections, kMaxLeadSteps);
  std::vector<std::string> errors(flags.connections);
  SteadyClock::time_point start = SteadyClock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < flags.connections; ++c) {
    threads.emplace_back(
        [&, c] { SendAll(base, path, flags.token, c, requests[c], lockstep, totals, errors[c]); });
  }
  for (std::thread& t : threads) t.join();
  double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();

  for (const std::string& e : errors) {
    if (!e.empty()) fmt::print(stderr, "first failure: {}\n", e);
  }
  fmt::print(
      "{} series x {} samples = {} samples in {} requests ({:.1f} MB snappy) over {} "
      "connections: {:.2f} s, {:.0f} samples/s, {} failed requests\n",
      series, flags.samples, samples, totals.requests.load(),
      static_cast<double>(totals.bytes.load()) / 1e6, flags.connections, seconds,
      static_cast<double>(samples) / seconds, totals.failures.load());
  fmt::print("RESULT samples={} requests={} failures={} seconds={:.3f} samples_per_s={:.0f}\n",
             samples, totals.requests.load(), totals.failures.load(), seconds,
             static_cast<double>(samples) / seconds);
  return totals.failures.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace warpscope

int main(int argc, char** argv) {
  warpscope::Flags flags;
  CLI::App app{"Feeds a Prometheus remote-write receiver a fixed set of dcgm-like samples"};
  app.add_option("--url", flags.url, "Receiver URL, e.g. http://127.0.0.1:9090/api/v1/write")
      ->required();
  app.add_option("--hosts", flags.hosts, "Hosts (8 GPUs x 20 metrics each)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--samples", flags.samples, "Samples per series")->check(CLI::Range(1, 100000));
  app.add_option("--step", flags.step, "Time between a series' samples");
  app.add_option("--per-request", flags.per_request, "Samples per request")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--connections", flags.connections, "Concurrent connections")
      ->check(CLI::Range(1, 256));
  app.add_option("--token", flags.token, "Bearer token");
  CLI11_PARSE(app, argc, argv);
  return warpscope::Run(flags);
}
