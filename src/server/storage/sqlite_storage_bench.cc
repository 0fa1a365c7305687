// SPDX-License-Identifier: Apache-2.0
// SqliteStorage costs, with data written through the Storage API:
//   BM_Ingest          one 8-GPU agent window (1,300 series) per iteration; items = series
//                      windows, so items_per_second is the ingest rate. Arg 1 = fsync per commit.
//   BM_Query24h        a 24 h dashboard for one 8-GPU host: 20 metrics x 8 GPUs at 10 s windows
//                      (8,640 windows per series), compacted so rollups exist. One iteration
//                      queries all 20 metrics. Arg = step in seconds: 10 (raw, 8,640 points per
//                      series), 90 (a ~1,000 px chart, from 1-minute rollups), 3600 (1-hour
//                      rollups). Counters report bytes on disk per stored raw window.
//   BM_Bytes           bytes on disk per raw window and per value (a window holds 5: avg, min,
//                      max, last, count) once Compact has moved closed spans into chunks, for
//                      two data sets: Arg 0 = BM_Query24h's (160 GPU series, values on a 0.004
//                      grid, avg = last), Arg 1 = a node's 1,300 series shaped like an agent's
//                      windows of 10 one-second samples (constants, integer gauges, 3-decimal
//                      gauges, counters; see NodeLikeWindow), 6 h at 10 s.
// Run a release build: build/release/bin/sqlite_storage_bench
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "server/storage/sqlite_storage.h"

namespace warpscope::server {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

const base::TimePoint kT0 = base::FromUnixNanos(1'699'999'200'000'000'000);
constexpr int kGpus = 8;
constexpr int kGpuMetrics = 20;

std::string MakeTempDir() {
  std::string dir = (std::filesystem::temp_directory_path() / "warpscope-bench-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) {
    return "";
  }
  return dir;
}

std::unique_ptr<SqliteStorage> OpenStore(const std::string& dir, bool sync_every_commit) {
  SqliteStorageOptions o;
  o.data_dir = dir;
  o.sync_every_commit = sync_every_commit;
  auto s = SqliteStorage::Open(o);
  return s ? std::move(*s) : nullptr;
}

std::string GpuId(int g) { return "GPU-0000000" + std::to_string(g) + "-aaaa-bbbb-cccc"; }

// The shape of one window from an 8-GPU training node: 8 GPUs x 20 metrics, 64 processes x 6
// metrics, 64 CPUs x 10 modes, 116 host metrics = 1,300 series.
IngestBatch NodeWindow(uint64_t sequence, base::TimePoint start) {
  IngestBatch b;
  b.agent_id = "agent-node1";
  b.host = "node1";
  b.sequence = sequence;
  b.start = start;
  b.end = start + seconds(10);
  auto metric = [&](const std::string& key, model::EntityKind kind) {
    b.metrics.push_back(MetricInfo{.key = key, .entity_kind = kind});
  };
  auto value = [&](const std::string& key, const std::string& entity, double v,
                   model::Labels labels = {}) {
    b.series.push_back(IngestSeries{key, entity, std::move(labels), v, v * 0.9, v * 1.1, v, 10});
  };
  double phase = static_cast<double>(sequence % 360) / 360.0;
  for (int m = 0; m < kGpuMetrics; ++m) {
    metric("gpu.metric" + std::to_string(m), model::EntityKind::kGpu);
  }
  for (int g = 0; g < kGpus; ++g) {
    b.entities.push_back(model::Entity{model::EntityKind::kGpu, GpuId(g), "",
                                       {{"gpu.index", std::to_string(g)}}});
    for (int m = 0; m < kGpuMetrics; ++m) {
      value("gpu.metric" + std::to_string(m), GpuId(g), 100.0 * m + g + phase);
    }
  }
  for (int m = 0; m < 6; ++m) {
    metric("process.metric" + std::to_string(m), model::EntityKind::kProcess);
  }
  for (int p = 0; p < 64; ++p) {
    std::string id = "pid/" + std::to_string(1000 + p) + "/12345";
    b.entities.push_back(model::Entity{model::EntityKind::kProcess, id, "", {}});
    for (int m = 0; m < 6; ++m) {
      value("process.metric" + std::to_string(m), id, 1e6 * m + p);
    }
  }
  metric("host.cpu.time", model::EntityKind::kHost);
  for (int cpu = 0; cpu < 64; ++cpu) {
    for (int mode = 0; mode < 10; ++mode) {
      value("host.cpu.time", "node1", 1000.0 * static_cast<double>(sequence) + cpu,
            {{"cpu", std::to_string(cpu)}, {"mode", "m" + std::to_string(mode)}});
    }
  }
  for (int m = 0; m < 116; ++m) {
    metric("host.metric" + std::to_string(m), model::EntityKind::kHost);
    value("host.metric" + std::to_string(m), "node1", m + phase);
  }
  return b;
}

void BM_Ingest(benchmark::State& state) {
  std::string dir = MakeTempDir();
  auto store = OpenStore(dir, state.range(0) != 0);
  if (store == nullptr) {
    state.SkipWithError("cannot open the store");
    return;
  }
  uint64_t sequence = 0;
  int64_t series = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ++sequence;
    IngestBatch b = NodeWindow(sequence, kT0 + seconds(10) * static_cast<int64_t>(sequence));
    state.ResumeTiming();
    auto r = store->WriteBatch(b);
    if (!r) {
      state.SkipWithError(r.error().ToString().c_str());
      break;
    }
    series += static_cast<int64_t>(r->stored);
  }
  state.SetItemsProcessed(series);
  store.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}
BENCHMARK(BM_Ingest)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// 24 h of one 8-GPU host, 20 metrics, 10 s windows, built once and shared by BM_Query24h.
struct Dataset {
  std::string dir;
  std::unique_ptr<SqliteStorage> store;
  double raw_bytes_per_window = 0;  // samples + sample_chunks bytes / raw windows
  double all_bytes_per_window = 0;  // whole database / raw windows (rollups, ids included)
  std::string error;

  Dataset() {
    dir = MakeTempDir();
    store = OpenStore(dir, false);
    if (store == nullptr) {
      error = "cannot open the store";
      return;
    }
    const int windows = 24 * 360;
    for (int w = 0; w < windows; ++w) {
      IngestBatch b;
      b.agent_id = "agent-node1";
      b.host = "node1";
      b.sequence = static_cast<uint64_t>(w + 1);
      b.start = kT0 + seconds(10) * w;
      b.end = b.start + seconds(10);
      for (int m = 0; m < kGpuMetrics; ++m) {
        b.metrics.push_back(
            MetricInfo{.key = "gpu.metric" + std::to_string(m), .entity_kind = model::EntityKind::kGpu});
      }
      for (int g = 0; g < kGpus; ++g) {
        for (int m = 0; m < kGpuMetrics; ++m) {
          double v = 0.5 + 0.4 * static_cast<double>((w * 7 + g * 13 + m) % 100) / 100.0;
          b.series.push_back(IngestSeries{"gpu.metric" + std::to_string(m), GpuId(g), {}, v,
                                          v - 0.1, v + 0.1, v, 10});
        }
      }
      auto r = store->WriteBatch(b);
      if (!r) {
        error = r.error().ToString();
        return;
      }
      // Compact as the server would, every simulated 10 minutes.
      if (w % 60 == 59) {
        auto c = store->Compact(b.end);
        if (!c) {
          error = c.error().ToString();
          return;
        }
      }
    }
    auto c = store->Compact(kT0 + hours(24) + minutes(5));
    if (!c) {
      error = c.error().ToString();
      return;
    }
    auto stats = store->Stats();
    if (!stats) {
      error = stats.error().ToString();
      return;
    }
    uint64_t raw_bytes = 0;
    for (const TableStats& t : stats->tables) {
      if (t.name == "samples" || t.name == "sample_chunks") {
        raw_bytes += t.bytes;
      }
    }
    if (stats->raw_windows > 0) {
      const auto windows = static_cast<double>(stats->raw_windows);
      raw_bytes_per_window = static_cast<double>(raw_bytes) / windows;
      all_bytes_per_window = static_cast<double>(stats->total_bytes) / windows;
    }
  }
  ~Dataset() {
    store.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

Dataset& SharedDataset() {
  static Dataset dataset;
  return dataset;
}

void BM_Query24h(benchmark::State& state) {
  Dataset& data = SharedDataset();
  if (!data.error.empty()) {
    state.SkipWithError(data.error.c_str());
    return;
  }
  int64_t points = 0;
  for (auto _ : state) {
    for (int m = 0; m < kGpuMetrics; ++m) {
      RangeQuery q;
      q.metric = "gpu.metric" + std::to_string(m);
      q.start = kT0;
      q.end = kT0 + hours(24);
      q.step = seconds(state.range(0));
      q.aggregation = Aggregation::kMax;
      auto r = data.store->QueryRange(q);
      if (!r || r->series.size() != kGpus) {
        state.SkipWithError(r ? "wrong series count" : r.error().ToString().c_str());
        return;
      }
      for (const RangeSeries& s : r->series) {
        points += static_cast<int64_t>(s.points.size());
      }
    }
  }
  state.counters["points"] = benchmark::Counter(static_cast<double>(points),
                                                benchmark::Counter::kAvgIterations);
  state.counters["raw_bytes_per_window"] = data.raw_bytes_per_window;
  state.counters["db_bytes_per_window"] = data.all_bytes_per_window;
}
BENCHMARK(BM_Query24h)->Arg(10)->Arg(90)->Arg(3600)->Unit(benchmark::kMillisecond);

// One 10 s window of a node's 1,300 series, shaped like what an agent sends: each window
// summarizes 10 one-second samples. 20 % constants (clocks, limits, totals: min = max = avg =
// last), 40 % integer gauges (utilization %, temperatures, fan speeds: integers drifting around
// a level; avg has one decimal), 20 % 3-decimal gauges (power in W, bandwidths), 20 % counters
// (bytes, energy; the window's values are all the newest reading, as the agent sends them).
IngestBatch NodeLikeWindow(uint64_t sequence, base::TimePoint start, std::mt19937_64& rng) {
  IngestBatch b;
  b.agent_id = "agent-node1";
  b.host = "node1";
  b.sequence = sequence;
  b.start = start;
  b.end = start + seconds(10);
  constexpr int kSeriesCount = 1300;
  for (int m = 0; m < 4; ++m) {
    b.metrics.push_back(MetricInfo{.key = "shape" + std::to_string(m)});
  }
  std::uniform_real_distribution<double> unit(0, 1);
  for (int i = 0; i < kSeriesCount; ++i) {
    const int shape = i % 10 < 2 ? 0 : i % 10 < 6 ? 1 : i % 10 < 8 ? 2 : 3;
    const double level = 20 + (i * 37) % 60;
    double avg = 0, mn = 0, mx = 0, last = 0;
    switch (shape) {
      case 0:
        avg = mn = mx = last = 1000 + i;
        break;
      case 1: {  // 10 integer samples around a level that moves slowly
        const double base = std::round(level + 5 * std::sin(static_cast<double>(sequence) / 90.0));
        double sum = 0;
        mn = 1e9;
        mx = -1e9;
        for (int k = 0; k < 10; ++k) {
          last = base + std::round(unit(rng) * 2 - 1);
          sum += last;
          mn = std::min(mn, last);
          mx = std::max(mx, last);
        }
        avg = sum / 10;
        break;
      }
      case 2: {  // 3 decimals, e.g. watts
        double sum = 0;
        mn = 1e9;
        mx = -1e9;
        for (int k = 0; k < 10; ++k) {
          last = std::round((level * 5 + unit(rng) * 20) * 1000) / 1000;
          sum += last;
          mn = std::min(mn, last);
          mx = std::max(mx, last);
        }
        avg = sum / 10;
        break;
      }
      default:  // a counter: bytes growing by a varying amount
        avg = mn = mx = last =
            static_cast<double>(sequence) * 1e6 * (1 + i % 5) + std::round(unit(rng) * 1e5);
        break;
    }
    b.series.push_back(IngestSeries{"shape" + std::to_string(shape), "node1",
                                    {{"i", std::to_string(i)}}, avg, mn, mx, last, 10});
  }
  return b;
}

// Bytes of a data set after compaction: sample_chunks (with its index), the head rows left,
// the database file (page count x page size) and the WAL.
void BM_Bytes(benchmark::State& state) {
  std::string dir = MakeTempDir();
  auto store = OpenStore(dir, false);
  if (store == nullptr) {
    state.SkipWithError("cannot open the store");
    return;
  }
  const bool node_like = state.range(0) == 1;
  const int windows = node_like ? 6 * 360 : 24 * 360;
  std::mt19937_64 rng(1);
  for (auto _ : state) {
    for (int w = 0; w < windows; ++w) {
      IngestBatch b;
      const base::TimePoint start = kT0 + seconds(10) * w;
      if (node_like) {
        b = NodeLikeWindow(static_cast<uint64_t>(w + 1), start, rng);
      } else {
        b.agent_id = "agent-node1";
        b.host = "node1";
        b.sequence = static_cast<uint64_t>(w + 1);
        b.start = start;
        b.end = start + seconds(10);
        for (int m = 0; m < kGpuMetrics; ++m) {
          b.metrics.push_back(MetricInfo{.key = "gpu.metric" + std::to_string(m),
                                         .entity_kind = model::EntityKind::kGpu});
        }
        for (int g = 0; g < kGpus; ++g) {
          for (int m = 0; m < kGpuMetrics; ++m) {
            double v = 0.5 + 0.4 * static_cast<double>((w * 7 + g * 13 + m) % 100) / 100.0;
            b.series.push_back(IngestSeries{"gpu.metric" + std::to_string(m), GpuId(g), {}, v,
                                            v - 0.1, v + 0.1, v, 10});
          }
        }
      }
      auto r = store->WriteBatch(b);
      if (!r) {
        state.SkipWithError(r.error().ToString().c_str());
        return;
      }
      if (w % 60 == 59 && !store->Compact(b.end)) {
        state.SkipWithError("compaction failed");
        return;
      }
    }
    if (!store->Compact(kT0 + seconds(10) * windows + minutes(5))) {
      state.SkipWithError("compaction failed");
      return;
    }
  }
  auto stats = store->Stats();
  if (!stats) {
    state.SkipWithError(stats.error().ToString().c_str());
    return;
  }
  double chunk_bytes = 0, head_bytes = 0, head_rows = 0;
  for (const TableStats& t : stats->tables) {
    if (t.name == "sample_chunks") {
      chunk_bytes = static_cast<double>(t.bytes);
    } else if (t.name == "samples") {
      head_bytes = static_cast<double>(t.bytes);
      head_rows = static_cast<double>(t.rows);
    }
  }
  const double chunked = static_cast<double>(stats->raw_windows) - head_rows;
  std::error_code ec;
  const auto wal = static_cast<double>(std::filesystem::file_size(dir + "/warpscope.db-wal", ec));
  const auto file = static_cast<double>(std::filesystem::file_size(dir + "/warpscope.db", ec));
  const auto all = static_cast<double>(stats->raw_windows);
  state.counters["chunked_windows"] = chunked;
  state.counters["chunk_B_per_window"] = chunk_bytes / chunked;
  state.counters["chunk_B_per_value"] = chunk_bytes / chunked / 5;
  state.counters["head_B_per_window"] = head_rows > 0 ? head_bytes / head_rows : 0;
  state.counters["db_B_per_window"] = file / all;
  state.counters["db_wal_B_per_window"] = (file + wal) / all;
  store.reset();
  std::filesystem::remove_all(dir, ec);
}
BENCHMARK(BM_Bytes)->Arg(0)->Arg(1)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace warpscope::server

BENCHMARK_MAIN();
