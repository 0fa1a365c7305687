// SPDX-License-Identifier: Apache-2.0
#include "server/insights/insight_inputs.h"

#include <gtest/gtest.h>

#include <cmath>

#include "server/query/testing/query_fixture.h"

namespace warpscope::server::insights {
namespace {

using query::At;
using query::kT0;
using std::chrono::minutes;
using std::chrono::seconds;

class InsightInputsTest : public query::QueryFixture {};

TEST_F(InsightInputsTest, ReadsAlignedSeriesPerGpuAndProcessWithTheHostsClusterAndEvents) {
  // Ten minutes of 10-second windows; GPU-1 appears after five.
  for (int w = 0; w < 60; ++w) {
    IngestBatch b = Window("node-1", w * 10);
    b.tags.Set("cluster", "east");
    AddGpu(b, "GPU-0", "0");
    AddGauge(b, "gpu.temperature", model::EntityKind::kGpu, "GPU-0", 60 + w * 0.1);
    AddGauge(b, "gpu.power.usage", model::EntityKind::kGpu, "GPU-0", 650);
    if (w >= 30) {
      AddGpu(b, "GPU-1", "1");
      AddGauge(b, "gpu.temperature", model::EntityKind::kGpu, "GPU-1", 70);
    }
    AddProcess(b, "pid/7/1", "python3");
    AddGauge(b, "gpu.process.memory.used", model::EntityKind::kProcess, "pid/7/1", 1e9 + w,
             model::Labels{{"gpu.uuid", "GPU-0"}});
    if (w == 42) AddEvent(b, "GPU-1", "xid", 79);
    Write(b);
  }
  InputsQuery q;
  q.end = At(kT0 + 600);
  q.lookback = minutes(15);
  base::Result<InsightInputs> in = ReadInsightInputs(*storage_, q);
  ASSERT_TRUE(in) << in.error().message();
  EXPECT_EQ(in->buckets, 90u);
  EXPECT_EQ(in->end(), At(kT0 + 600));
  ASSERT_EQ(in->gpus.size(), 2u);
  const GpuInput& g0 = in->gpus[0];
  EXPECT_EQ(g0.uuid, "GPU-0");
  EXPECT_EQ(g0.host, "node-1");
  EXPECT_EQ(g0.cluster, "east");
  EXPECT_EQ(g0.attributes.Get("gpu.index"), "0");
  ASSERT_EQ(g0.temperature.size(), 90u);
  // The data starts 5 minutes (30 buckets) into the 15.
  EXPECT_TRUE(std::isnan(g0.temperature[29]));
  EXPECT_NEAR(g0.temperature[30], 60, 1e-9);
  EXPECT_NEAR(g0.temperature[89], 65.9, 1e-9);
  EXPECT_EQ(g0.power[50], 650);
  // Metrics never received read as no data, not an error.
  EXPECT_EQ(g0.utilization.size(), 90u);
  EXPECT_TRUE(std::isnan(g0.utilization[50]));
  EXPECT_TRUE(std::isnan(in->gpus[1].temperature[59]));
  EXPECT_EQ(in->gpus[1].temperature[60], 70);

  ASSERT_EQ(in->processes.size(), 1u);
  EXPECT_EQ(in->processes[0].gpu, "GPU-0");
  EXPECT_EQ(in->processes[0].first_seen, At(kT0));
  EXPECT_EQ(in->processes[0].attributes.Get("process.executable.name"), "python3");
  EXPECT_EQ(in->processes[0].memory_used[89], 1e9 + 59);

  ASSERT_EQ(in->events.size(), 1u);
  EXPECT_EQ(in->events[0].event.code, 79);
  EXPECT_EQ(in->events[0].event.entity, "GPU-1");
}

TEST_F(InsightInputsTest, AProcessesCudaRuntimeCountersAreRatesSummedOverItsDevices) {
  for (int w = 0; w < 60; ++w) {
    IngestBatch b = Window("node-1", w * 10);
    AddGpu(b, "GPU-0", "0");
    AddProcess(b, "pid/7/1", "python3");
    AddGauge(b, "gpu.process.memory.used", model::EntityKind::kProcess, "pid/7/1", 1e9,
             model::Labels{{"gpu.uuid", "GPU-0"}});
    // Counters (cumulative): host-to-device copy seconds on two CUDA devices, and the other
    // direction, which is not read.
    const double t = (w + 1) * 10.0;
    AddGauge(b, "cuda.memcpy.time", model::EntityKind::kProcess, "pid/7/1", 0.5 * t,
             model::Labels{{"cuda.device", "0"}, {"direction", "H2D"}});
    AddGauge(b, "cuda.memcpy.time", model::EntityKind::kProcess, "pid/7/1", 0.25 * t,
             model::Labels{{"cuda.device", "1"}, {"direction", "H2D"}});
    AddGauge(b, "cuda.memcpy.time", model::EntityKind::kProcess, "pid/7/1", 5 * t,
             model::Labels{{"cuda.device", "0"}, {"direction", "D2H"}});
    AddGauge(b, "cuda.kernel.time", model::EntityKind::kProcess, "pid/7/1", 0.8 * t,
             model::Labels{{"cuda.device", "0"}});
    AddGauge(b, "cuda.memory.allocations", model::EntityKind::kProcess, "pid/7/1", 3 * t,
             model::Labels{{"cuda.device", "0"}, {"kind", "device"}});
    Write(b);
  }
  InputsQuery q;
  q.end = At(kT0 + 600);
  q.lookback = minutes(15);
  base::Result<InsightInputs> in = ReadInsightInputs(*storage_, q);
  ASSERT_TRUE(in) << in.error().message();
  ASSERT_EQ(in->processes.size(), 1u);
  const ProcessGpuInput& p = in->processes[0];
  EXPECT_NEAR(p.cuda_h2d_time[89], 0.75, 1e-9);
  EXPECT_NEAR(p.cuda_kernel_time[89], 0.8, 1e-9);
  EXPECT_NEAR(p.cuda_allocations[89], 3, 1e-9);
  EXPECT_TRUE(std::isnan(p.cuda_releases[89]));  // never received
  EXPECT_TRUE(std::isnan(p.cuda_h2d_time[10]));  // before the data
}

TEST_F(InsightInputsTest, AnEventOfAMigInstanceIsItsGpusWithTheInstanceInItsAttributes) {
  IngestBatch b = Window("node-1", 0);
  AddGpu(b, "GPU-0", "0");
  b.entities.push_back(model::Entity{model::EntityKind::kMigInstance, "MIG-9", "GPU-0",
                                     model::Labels{{"mig.gpu_instance_id", "9"},
                                                   {"mig.profile", "1g.10gb"}}});
  AddGauge(b, "gpu.temperature", model::EntityKind::kGpu, "GPU-0", 50);
  AddEvent(b, "MIG-9", "xid", 43);
  Write(b);
  InputsQuery q;
  q.end = At(kT0 + 60);
  base::Result<InsightInputs> in = ReadInsightInputs(*storage_, q);
  ASSERT_TRUE(in) << in.error().message();
  ASSERT_EQ(in->events.size(), 1u);
  const model::Event& e = in->events[0].event;
  EXPECT_EQ(e.entity, "GPU-0");
  EXPECT_EQ(e.attributes.Get("mig.entity"), "MIG-9");
  EXPECT_EQ(e.attributes.Get("mig.gpu_instance_id"), "9");
  EXPECT_EQ(e.attributes.Get("mig.profile"), "1g.10gb");
}

// Series of every GPU and process of `in`, for comparing two snapshots (NaN compared as equal).
std::string Dump(const InsightInputs& in) {
  std::string out;
  auto add = [&out](const Series& s) {
    for (double v : s) out += std::isnan(v) ? "- " : std::to_string(v) + " ";
    out += "\n";
  };
  for (const GpuInput& g : in.gpus) {
    out += g.host + "/" + g.uuid + " " + g.cluster + "\n";
    for (const Series* s :
         {&g.utilization, &g.power, &g.power_limit, &g.temperature, &g.memory_used, &g.memory_total,
          &g.ecc_uncorrected, &g.remapping_failed, &g.tensor_active, &g.fp32_active,
          &g.fp16_active}) {
      add(*s);
    }
  }
  for (const ProcessGpuInput& p : in.processes) {
    out += p.entity + " " + p.gpu + "\n";
    add(p.memory_used);
    add(p.cpu_utilization);
  }
  for (const HostInput& h : in.hosts) {
    out += h.host + "\n";
    add(h.cpu_idle);
    add(h.cpu_iowait);
    add(h.logical_cpus);
  }
  for (const InferenceInput& i : in.inference) {
    out += i.entity + " " + i.model + "\n";
    for (const Series* s : {&i.batch_efficiency, &i.requests_running, &i.requests_waiting,
                            &i.request_rate, &i.input_token_rate, &i.output_token_rate,
                            &i.kv_cache_usage, &i.ttft_p95, &i.queue_time_p95}) {
      add(*s);
    }
  }
  return out;
}

TEST_F(InsightInputsTest, AnIncrementalReadEqualsAFullOneLateWindowsAndNewGpusIncluded) {
  auto window = [&](int w, bool gpu1) {
    IngestBatch b = Window("node-1", w * 10);
    AddGpu(b, "GPU-0", "0");
    AddGauge(b, "gpu.temperature", model::EntityKind::kGpu, "GPU-0", 60 + w);
    AddGauge(b, "gpu.utilization", model::EntityKind::kGpu, "GPU-0", 0.5);
    AddGauge(b, "gpu.tensor.active", model::EntityKind::kGpu, "GPU-0", 0.001 * w);
    if (gpu1) {
      AddGpu(b, "GPU-1", "1");
      AddGauge(b, "gpu.power.usage", model::EntityKind::kGpu, "GPU-1", 100 + w);
    }
    AddProcess(b, "pid/7/1", "python3");
    AddGauge(b, "gpu.process.memory.used", model::EntityKind::kProcess, "pid/7/1", w * 1e6,
             model::Labels{{"gpu.uuid", "GPU-0"}});
    AddGauge(b, "process.cpu.utilization", model::EntityKind::kProcess, "pid/7/1", 0.01 * (w % 50));
    AddGauge(b, "host.cpu.utilization", model::EntityKind::kHost, "node-1", 0.3,
             model::Labels{{"mode", "idle"}});
    AddGauge(b, "host.cpu.logical_count", model::EntityKind::kHost, "node-1", 16);
    AddGauge(b, "inference.batch.efficiency", model::EntityKind::kProcess, "pid/7/1", 0.01 * w,
             model::Labels{{"model", "llama"}, {"basis", "tokens"}});
    AddGauge(b, "inference.time_to_first_token", model::EntityKind::kProcess, "pid/7/1",
             0.001 * w, model::Labels{{"model", "llama"}, {"quantile", "0.95"}});
    Write(b);
  };
  for (int w = 0; w < 100; ++w) window(w, w < 20);  // GPU-1 leaves at window 20
  InputsQuery q;
  q.slow_every = base::Duration::zero();  // the slow metrics too on every read
  q.end = At(kT0 + 1000);
  base::Result<InsightInputs> first = ReadInsightInputs(*storage_, q);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->gpus.size(), 2u);
  // Three windows later, one of them (102) arriving after 103 and 104; GPU-1 back at 104.
  window(100, false);
  window(101, false);
  window(103, false);
  window(104, true);
  window(102, false);
  q.end = At(kT0 + 1050);
  base::Result<InsightInputs> incremental = ReadInsightInputs(*storage_, q, &*first);
  base::Result<InsightInputs> full = ReadInsightInputs(*storage_, q);
  ASSERT_TRUE(incremental && full);
  EXPECT_EQ(incremental->start, full->start);
  EXPECT_EQ(incremental->buckets, full->buckets);
  EXPECT_EQ(Dump(*incremental), Dump(*full));
  ASSERT_EQ(incremental->gpus.size(), 2u);
  EXPECT_EQ(incremental->gpus[0].temperature.back(), 60 + 104);
  EXPECT_NEAR(incremental->gpus[0].tensor_active.back(), 0.104, 1e-9);
  ASSERT_EQ(incremental->hosts.size(), 1u);
  EXPECT_EQ(incremental->hosts[0].logical_cpus.back(), 16);
  EXPECT_NEAR(incremental->hosts[0].cpu_idle.back(), 0.3, 1e-9);
  EXPECT_TRUE(std::isnan(incremental->hosts[0].cpu_iowait.back()));
  EXPECT_NEAR(incremental->processes[0].cpu_utilization.back(), 0.01 * (104 % 50), 1e-9);
  ASSERT_EQ(incremental->inference.size(), 1u);
  EXPECT_NEAR(incremental->inference[0].ttft_p95.back(), 0.104, 1e-9);
  // 15 minutes later GPU-1's early windows have left the lookback; its return keeps it.
  q.end = At(kT0 + 1050 + 900);
  base::Result<InsightInputs> later = ReadInsightInputs(*storage_, q, &*incremental);
  ASSERT_TRUE(later);
  EXPECT_EQ(Dump(*later), Dump(*ReadInsightInputs(*storage_, q)));
}

TEST_F(InsightInputsTest, SlowMetricsAreReadOnceAMinuteAndCatchUpWithAFullRead) {
  auto window = [&](int w) {
    IngestBatch b = Window("node-1", w * 10);
    AddGpu(b, "GPU-0", "0");
    AddGauge(b, "gpu.utilization", model::EntityKind::kGpu, "GPU-0", 0.01 * w);
    AddGauge(b, "gpu.tensor.active", model::EntityKind::kGpu, "GPU-0", 0.001 * w);
    AddGauge(b, "gpu.sm.occupancy", model::EntityKind::kGpu, "GPU-0", 0.002 * w);
    Write(b);
  };
  for (int w = 0; w < 100; ++w) window(w);
  InputsQuery q;  // slow_every: 1 minute
  q.end = At(kT0 + 1000);
  base::Result<InsightInputs> first = ReadInsightInputs(*storage_, q);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->slow_end, first->end());
  for (int w = 100; w < 112; ++w) window(w);
  // 30 s later: utilization is fresh, the slow metrics keep what they had and their new
  // buckets are empty.
  q.end = At(kT0 + 1030);
  base::Result<InsightInputs> skip = ReadInsightInputs(*storage_, q, &*first);
  ASSERT_TRUE(skip);
  ASSERT_EQ(skip->gpus.size(), 1u);
  const GpuInput& g = skip->gpus[0];
  EXPECT_NEAR(g.utilization.back(), 1.02, 1e-9);
  EXPECT_TRUE(std::isnan(g.tensor_active.back()));
  EXPECT_TRUE(std::isnan(g.sm_occupancy.back()));
  EXPECT_NEAR(g.tensor_active[g.tensor_active.size() - 4], 0.099, 1e-9);
  EXPECT_EQ(skip->slow_end, first->slow_end);
  // A minute after the slow read: they are read again, from before the skipped buckets on, and
  // the snapshot equals a full read.
  q.end = At(kT0 + 1060);
  base::Result<InsightInputs> caught_up = ReadInsightInputs(*storage_, q, &*skip);
  ASSERT_TRUE(caught_up);
  EXPECT_EQ(caught_up->slow_end, caught_up->end());
  EXPECT_EQ(Dump(*caught_up), Dump(*ReadInsightInputs(*storage_, q)));
  EXPECT_NEAR(caught_up->gpus[0].tensor_active.back(), 0.105, 1e-9);
}

TEST_F(InsightInputsTest, TheLongViewHasMinuteBucketsFromRollupsAndIsRefreshedIncrementally) {
  // 40 minutes of 10-second windows from a minute boundary (kT0 + 40 s); utilization falls 0.01
  // a minute; GPU-1 from minute 25.
  constexpr int64_t kMinute0 = kT0 + 40;
  auto write = [&](int from_w, int to_w) {
    for (int w = from_w; w < to_w; ++w) {
      IngestBatch b = Window("node-1", 40 + w * 10);
      AddGpu(b, "GPU-0", "0");
      AddGauge(b, "gpu.utilization", model::EntityKind::kGpu, "GPU-0", 0.9 - 0.01 * (w / 6));
      AddGauge(b, "gpu.memory.used", model::EntityKind::kGpu, "GPU-0", 7e10);
      if (w >= 150) {
        AddGpu(b, "GPU-1", "1");
        AddGauge(b, "gpu.power.usage", model::EntityKind::kGpu, "GPU-1", 600);
      }
      Write(b);
    }
  };
  write(0, 210);
  ASSERT_TRUE(storage_->Compact(At(kMinute0 + 2100)));  // rollups of the first ~33 minutes
  LongViewQuery q;
  q.end = At(kMinute0 + 2130);  // 35.5 minutes: the view ends at minute 35
  q.lookback = minutes(90);
  base::Result<LongView> before = ReadLongView(*storage_, q);
  ASSERT_TRUE(before) << before.error().message();
  EXPECT_EQ(before->buckets, 90u);
  EXPECT_EQ(before->end(), At(kMinute0 + 2100));
  ASSERT_EQ(before->gpus.size(), 2u);
  const LongGpuInput& g0 = before->gpus[0];
  EXPECT_TRUE(std::isnan(g0.utilization[54])) << "before the first window";
  EXPECT_NEAR(g0.utilization[55], 0.9, 1e-9);  // minute 0
  EXPECT_NEAR(g0.utilization[89], 0.9 - 0.34, 1e-9);  // minute 34
  EXPECT_EQ(g0.memory_used[60], 7e10);
  EXPECT_TRUE(std::isnan(before->gpus[1].power[79]));
  EXPECT_EQ(before->gpus[1].power[80], 600);

  // Five minutes later, with a late window of minute 33: the refresh equals a full read.
  write(210, 240);
  IngestBatch late = Window("node-1", 40 + 33 * 60 + 20);
  AddGpu(late, "GPU-2", "2");
  AddGauge(late, "gpu.utilization", model::EntityKind::kGpu, "GPU-2", 0.5);
  Write(late);
  q.end = At(kMinute0 + 2400);
  base::Result<LongView> refreshed = ReadLongView(*storage_, q, &*before);
  base::Result<LongView> full = ReadLongView(*storage_, q);
  ASSERT_TRUE(refreshed && full);
  ASSERT_EQ(refreshed->gpus.size(), full->gpus.size());
  EXPECT_EQ(refreshed->start, full->start);
  for (size_t i = 0; i < full->gpus.size(); ++i) {
    for (auto member : {&LongGpuInput::utilization, &LongGpuInput::power,
                        &LongGpuInput::memory_used}) {
      const Series& a = refreshed->gpus[i].*member;
      const Series& b = full->gpus[i].*member;
      ASSERT_EQ(a.size(), b.size());
      for (size_t k = 0; k < a.size(); ++k) {
        if (std::isnan(b[k])) {
          EXPECT_TRUE(std::isnan(a[k])) << i << " " << k;
        } else {
          EXPECT_NEAR(a[k], b[k], 1e-9) << i << " " << k;
        }
      }
    }
  }
  EXPECT_EQ(full->gpus[2].uuid, "GPU-2");
}

TEST_F(InsightInputsTest, AnEmptyServerGivesEmptyInputsAndBadRangesAreRefused) {
  InputsQuery q;
  q.end = At(kT0);
  base::Result<InsightInputs> in = ReadInsightInputs(*storage_, q);
  ASSERT_TRUE(in) << in.error().message();
  EXPECT_TRUE(in->gpus.empty());
  EXPECT_EQ(in->BucketAt(in->start), 0u);
  EXPECT_EQ(in->BucketAt(in->start + seconds(1)), 1u);
  EXPECT_EQ(in->BucketAt(in->end() + minutes(1)), in->buckets);
  q.step = seconds(0);
  EXPECT_FALSE(ReadInsightInputs(*storage_, q));
}

TEST_F(InsightInputsTest, ReadsEachServedModelsInferenceSeriesAlsoIncrementally) {
  // A vLLM process serving two models (batch efficiency on both bases, TTFT at p95 and p99) and
  // a TGI process without a TTFT; windows of minute 10 arrive after the first read.
  auto write = [&](int w) {
    IngestBatch b = Window("node-1", w * 10);
    b.entities.push_back(model::Entity{
        model::EntityKind::kProcess, "pid/8/1", b.host,
        model::Labels{{"inference.engine", "vllm"}, {"inference.gpu.uuids", "GPU-0,GPU-1"}}});
    AddProcess(b, "pid/9/1", "text-generation-launcher");
    for (std::string m : {"llama", "qwen"}) {
      const double scale = m == "llama" ? 1 : 2;
      AddGauge(b, "inference.batch.efficiency", model::EntityKind::kProcess, "pid/8/1",
               0.1 * scale, model::Labels{{"model", m}, {"basis", "sequences"}});
      AddGauge(b, "inference.batch.efficiency", model::EntityKind::kProcess, "pid/8/1",
               0.3 * scale, model::Labels{{"model", m}, {"basis", "tokens"}});
      AddGauge(b, "inference.time_to_first_token", model::EntityKind::kProcess, "pid/8/1",
               0.2 * scale, model::Labels{{"model", m}, {"quantile", "0.95"}});
      AddGauge(b, "inference.time_to_first_token", model::EntityKind::kProcess, "pid/8/1", 5,
               model::Labels{{"model", m}, {"quantile", "0.99"}});
      AddGauge(b, "inference.token.rate", model::EntityKind::kProcess, "pid/8/1", 100 * scale,
               model::Labels{{"model", m}, {"token_type", "output"}});
    }
    AddGauge(b, "inference.requests.waiting", model::EntityKind::kProcess, "pid/9/1", w,
             model::Labels{{"model", "falcon"}});
    Write(b);
  };
  for (int w = 0; w < 54; ++w) write(w);
  InputsQuery q;
  q.end = At(kT0 + 540);
  base::Result<InsightInputs> first = ReadInsightInputs(*storage_, q);
  ASSERT_TRUE(first) << first.error().message();
  for (int w = 54; w < 60; ++w) write(w);
  q.end = At(kT0 + 600);
  base::Result<InsightInputs> in = ReadInsightInputs(*storage_, q, &*first);
  ASSERT_TRUE(in) << in.error().message();
  ASSERT_EQ(in->inference.size(), 3u);
  const InferenceInput& llama = in->inference[0];
  EXPECT_EQ(llama.entity, "pid/8/1");
  EXPECT_EQ(llama.model, "llama");
  EXPECT_EQ(llama.attributes.Get("inference.gpu.uuids"), "GPU-0,GPU-1");
  // The higher basis, the p95 only, the output tokens; the new minute read on top of the old.
  EXPECT_NEAR(llama.batch_efficiency[85], 0.3, 1e-9);
  EXPECT_NEAR(llama.batch_efficiency[40], 0.3, 1e-9);
  EXPECT_NEAR(llama.ttft_p95[89], 0.2, 1e-9);
  EXPECT_NEAR(llama.output_token_rate[89], 100, 1e-9);
  EXPECT_TRUE(std::isnan(llama.input_token_rate[89]));
  EXPECT_TRUE(std::isnan(llama.batch_efficiency[29])) << "the data starts at minute 5";
  EXPECT_EQ(in->inference[1].model, "qwen");
  EXPECT_NEAR(in->inference[1].ttft_p95[89], 0.4, 1e-9);
  const InferenceInput& tgi = in->inference[2];
  EXPECT_EQ(tgi.model, "falcon");
  EXPECT_NEAR(tgi.requests_waiting[89], 59, 1e-9);
  EXPECT_TRUE(std::isnan(tgi.ttft_p95[89]));
}

}  // namespace
}  // namespace warpscope::server::insights
