// SPDX-License-Identifier: Apache-2.0
#include "nccl_plugin/recorder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

namespace warpscope::nccl_plugin {
namespace {

std::atomic<uint64_t> g_now{1'000'000};
uint64_t FakeNow() { return g_now.load(); }

Recorder::Options SmallOptions() {
  Recorder::Options o;
  o.max_events = 64;
  o.ring_kb = 16;
  o.max_threads = 4;
  return o;
}

Descr Coll(const char* func, uint64_t count, uint32_t channels, uint64_t seq = 1) {
  Descr d;
  d.type = abi::kEventColl;
  d.func = func;
  d.datatype = "ncclFloat32";
  d.algo = "RING";
  d.proto = "SIMPLE";
  d.count = count;
  d.n_channels = channels;
  d.seq_number = seq;
  return d;
}

Descr KernelCh(void* parent, uint64_t gpu_start) {
  Descr d;
  d.type = abi::kEventKernelCh;
  d.parent = parent;
  d.gpu_timer = gpu_start;
  return d;
}

void RunChannel(Recorder& r, Comm* comm, void* op, uint64_t gpu_start, uint64_t gpu_stop) {
  void* ch = nullptr;
  r.StartEvent(comm, &ch, KernelCh(op, gpu_start));
  ASSERT_NE(ch, nullptr);
  abi::StateArgs args{};
  args.kernel_ch.gpu_timer = gpu_stop;
  r.RecordState(ch, abi::kKernelChStop, &args);
  r.StopEvent(ch);
}

std::vector<wire::NcclCollective> Drain(Recorder& r) {
  std::vector<wire::NcclCollective> out;
  r.DrainRings([&](const OpRecord& rec) { out.push_back(r.ToWire(rec)); });
  return out;
}

uint64_t Counter(const Recorder& r, wire::CounterId id) {
  std::vector<wire::Counter> cs;
  r.AppendCounters(&cs);
  for (const auto& c : cs) {
    if (c.id == id) {
      return c.value;
    }
  }
  return 0;
}

TEST(NcclRecorderTest, InitSetsTheDefaultMaskAndRemembersTheCommunicator) {
  Recorder r(SmallOptions(), &FakeNow);
  int mask = 0;
  Comm* c = r.Init(0xabc, "dp", 2, 8, 3, 6, &mask);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(mask, kDefaultMask);
  EXPECT_EQ(r.comm_count(), 1u);
  EXPECT_EQ(c->nranks, 8u);
  EXPECT_STREQ(c->name, "dp");
}

TEST(NcclRecorderTest, ACollectiveCompletesWhenItsLastKernelChannelStops) {
  Recorder r(SmallOptions(), &FakeNow);
  int mask = 0;
  Comm* comm = r.Init(1, "", 1, 4, 0, 6, &mask);
  void* op = nullptr;
  g_now = 1'000'000;
  r.StartEvent(comm, &op, Coll("AllReduce", 1 << 20, 2, 7));
  ASSERT_NE(op, nullptr);
  g_now = 1'000'500;
  r.StopEvent(op);  // enqueued only
  EXPECT_TRUE(Drain(r).empty());
  g_now = 1'010'000;
  RunChannel(r, comm, op, 1'006'000, 1'008'000);
  EXPECT_TRUE(Drain(r).empty());
  g_now = 1'020'000;
  RunChannel(r, comm, op, 1'008'500, 1'018'000);
  const auto out = Drain(r);
  ASSERT_EQ(out.size(), 1u);
  const wire::NcclCollective& c = out[0];
  EXPECT_EQ(c.func, "AllReduce");
  EXPECT_EQ(c.rank, 0u);
  EXPECT_EQ(c.seq_number, 7u);
  EXPECT_EQ(c.bytes, 4u << 20);
  EXPECT_EQ(c.bus_bytes, (4u << 20) * 2 * 3 / 4);
  EXPECT_EQ(c.enqueue_ns, 1'000'000u);
  EXPECT_EQ(c.enqueued_ns, 1'000'500u);
  EXPECT_EQ(c.complete_ns, 1'020'000u);
  EXPECT_EQ(c.kernel_channels, 2u);
  EXPECT_EQ(c.tid, static_cast<uint32_t>(gettid()));  // the thread that enqueued it
  EXPECT_EQ(c.gpu_exec_ns, 1'018'000u - 1'006'000u);
  EXPECT_EQ(wire::NcclExecNs(c), 12'000u);
  EXPECT_EQ(Counter(r, wire::CounterId::kNcclCollectives), 1u);
}

TEST(NcclRecorderTest, GpuTimesMoveOntoTheCpuClockByTheSmallestReportingDelay) {
  Recorder r(SmallOptions(), &FakeNow);
  int mask = 0;
  Comm* comm = r.Init(1, "", 1, 2, 0, 6, &mask);
  const uint64_t kGpuBehind = 3'000'000'000ull;  // the GPU timer's epoch is elsewhere
  g_now = 10'000'000'000ull;
  void* op = nullptr;
  r.StartEvent(comm, &op, Coll("AllGather", 256, 2));
  r.StopEvent(op);
  // Reported 5 us, then 1 us, after the channels started on the GPU.
  g_now = 10'000'105'000ull;
  RunChannel(r, comm, op, 10'000'100'000ull - kGpuBehind, 10'000'104'000ull - kGpuBehind);
  g_now = 10'000'201'000ull;
  RunChannel(r, comm, op, 10'000'200'000ull - kGpuBehind, 10'000'200'500ull - kGpuBehind);
  const auto out = Drain(r);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].gpu_start_ns, 10'000'100'000ull + 1'000);
  EXPECT_EQ(out[0].gpu_end_ns, 10'000'200'500ull + 1'000);
  EXPECT_EQ(out[0].bus_bytes, 256u * 4 * 2 / 2);
}

TEST(NcclRecorderTest, ProxyDetailRewritesTheMaskAndCountsSteps) {
  Recorder r(SmallOptions(), &FakeNow);
  int mask = 0;
  Comm* comm = r.Init(1, "", 1, 2, 0, 5, &mask);
  r.SetProxyDetail(true);
  EXPECT_EQ(mask, kDetailMask);
  void* op = nullptr;
  r.StartEvent(comm, &op, Coll("Broadcast", 1024, 1));
  r.StopEvent(op);
  Descr pd;
  pd.type = abi::kEventProxyOp;
  pd.parent = op;
  pd.proxy_pid = getpid();
  void* proxy = nullptr;
  r.StartEvent(comm, &proxy, pd);
  ASSERT_NE(proxy, nullptr);
  for (int i = 0; i < 3; ++i) {
    Descr sd;
    sd.type = abi::kEventProxyStep;
    sd.parent = proxy;
    void* step = nullptr;
    r.StartEvent(comm, &step, sd);
    abi::StateArgs a{};
    a.proxy_step.trans_size = 1000;
    r.RecordState(step, abi::kProxyStepSendWait, &a);
    r.StopEvent(step);
  }
  RunChannel(r, comm, op, 100, 200);
  EXPECT_TRUE(Drain(r).empty());  // the proxy op is still open
  r.StopEvent(proxy);
  const auto out = Drain(r);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].proxy_ops, 1u);
  EXPECT_EQ(out[0].proxy_steps, 3u);
  EXPECT_EQ(out[0].step_bytes, 3000u);
  EXPECT_EQ(out[0].flags, wire::kNcclProxyDetail);
  r.SetProxyDetail(false);
  EXPECT_EQ(mask, kDefaultMask);
  r.SetCollecting(false);
  EXPECT_EQ(mask, 0);
  void* late = reinterpret_cast<void*>(0x1);
  r.StartEvent(comm, &late, Coll("AllReduce", 1, 2));  // created by NCCL before the change
  EXPECT_EQ(late, nullptr);
  void* ch = reinterpret_cast<void*>(0x1);
  r.StartEvent(comm, &ch, KernelCh(late, 1));
  EXPECT_EQ(ch, nullptr);
}

TEST(NcclRecorderTest, AnotherProcesssProxyOpIsNotDereferenced) {
  Recorder r(SmallOptions(), &FakeNow);
  int mask = 0;
  Comm* comm = r.Init(1, "", 1, 2, 0, 6, &mask);
  Descr pd;
  pd.type = abi::kEventProxyOp;
  pd.parent = reinterpret_cast<void*>(0x1);  // an address of the other process: never read
  pd.proxy_pid = getpid() + 1;
  void* h = reinterpret_cast<void*>(0x2);
  r.StartEvent(comm, &h, pd);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(Counter(r, wire::CounterId::kNcclOrphanEvents), 1u);
}

TEST(NcclRecorderTest, PointToPointWithoutChannelsCompletesAtItsStop) {
  Recorder r(SmallOptions(), &FakeNow);
  int mask = 0;
  Comm* comm = r.Init(1, "", 1, 2, 0, 4, &mask);
  Descr d;
  d.type = abi::kEventP2p;
  d.func = "Send";
  d.datatype = "ncclInt8";
  d.count = 100;
  d.root = 1;
  void* op = nullptr;
  r.StartEvent(comm, &op, d);
  r.StopEvent(op);
  const auto out = Drain(r);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, wire::NcclOpKind::kP2p);
  EXPECT_EQ(out[0].root, 1);
  EXPECT_EQ(out[0].bus_bytes, 100u);
  EXPECT_EQ(Counter(r, wire::CounterId::kNcclP2p), 1u);
}

TEST(NcclRecorderTest, AnExhaustedPoolRefusesEventsAndCountsThem) {
  Recorder r(SmallOptions(), &FakeNow);  // 64 events
  int mask = 0;
  Comm* comm = r.Init(1, "", 1, 2, 0, 6, &mask);
  std::vector<void*> open;
  for (int i = 0; i < 70; ++i) {
    void* op = nullptr;
    r.StartEvent(comm, &op, Coll("AllReduce", 1, 0));
    if (op != nullptr) {
      open.push_back(op);
    }
  }
  EXPECT_EQ(open.size(), 64u);
  EXPECT_EQ(Counter(r, wire::CounterId::kNcclEventsDropped), 6u);
  for (void* op : open) {
    r.StopEvent(op);
  }
  void* again = nullptr;
  r.StartEvent(comm, &again, Coll("AllReduce", 1, 0));
  EXPECT_NE(again, nullptr);  // stopped events went back to the pool
  r.StopEvent(again);
}

TEST(NcclRecorderTest, OperationsHoldingThePoolStillCompleteWhenTheirChannelsFindNoEvent) {
  Recorder r(SmallOptions(), &FakeNow);  // 64 events
  int mask = 0;
  Comm* comm = r.Init(1, "", 1, 2, 0, 6, &mask);
  std::vector<void*> ops;
  for (int i = 0; i < 64; ++i) {  // the application thread runs ahead of the proxy thread
    void* op = nullptr;
    r.StartEvent(comm, &op, Coll("AllReduce", 1, 1));
    r.StopEvent(op);
    ops.push_back(op);
  }
  size_t without_channel = 0;
  for (void* op : ops) {
    void* ch = nullptr;
    r.StartEvent(comm, &ch, KernelCh(op, 100));
    if (ch == nullptr) {
      ++without_channel;  // no event left: the operation completes without its GPU time
    } else {
      r.StopEvent(ch);  // an operation that completed gave its event back
    }
  }
  EXPECT_EQ(without_channel, 1u);
  EXPECT_EQ(Drain(r).size(), 64u);  // every operation completed
  void* op = nullptr;
  r.StartEvent(comm, &op, Coll("AllReduce", 1, 1));
  ASSERT_NE(op, nullptr);  // and the pool is whole again
  r.StopEvent(op);
  RunChannel(r, comm, op, 100, 150);
  const auto out = Drain(r);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].gpu_exec_ns, 50u);
}

TEST(NcclRecorderTest, AFullRingDropsAndCountsWhileMemoryStaysCapped) {
  Recorder r(SmallOptions(), &FakeNow);  // 16 KB ring
  int mask = 0;
  Comm* comm = r.Init(1, "", 1, 2, 0, 6, &mask);
  const size_t before = r.memory_bytes();
  for (int i = 0; i < 1000; ++i) {
    void* op = nullptr;
    r.StartEvent(comm, &op, Coll("AllReduce", 1, 0));
    r.StopEvent(op);
  }
  const uint64_t kept = Counter(r, wire::CounterId::kNcclCollectives);
  EXPECT_LT(kept, 1000u);
  EXPECT_EQ(kept + Counter(r, wire::CounterId::kRingDrops), 1000u);
  EXPECT_LE(r.memory_bytes(), before + 16 * 1024);
  EXPECT_EQ(Drain(r).size(), kept);
}

TEST(NcclRecorderTest, ApplicationAndProxyThreadsRecordConcurrently) {
  Recorder::Options o = SmallOptions();
  o.max_events = 4096;
  o.ring_kb = 1024;
  Recorder r(o, &FakeNow);
  int mask = 0;
  Comm* comm = r.Init(1, "", 1, 2, 0, 6, &mask);
  constexpr int kOps = 2000;
  std::vector<std::atomic<void*>> handles(kOps);
  std::thread app([&] {
    for (int i = 0; i < kOps; ++i) {
      void* op = nullptr;
      r.StartEvent(comm, &op, Coll("AllReduce", 8, 2, static_cast<uint64_t>(i)));
      handles[i].store(op, std::memory_order_release);
      r.StopEvent(op);  // may come before or after the channels
    }
  });
  std::thread proxy([&] {
    for (int i = 0; i < kOps; ++i) {
      void* op;
      while ((op = handles[i].load(std::memory_order_acquire)) == nullptr) {
      }
      RunChannel(r, comm, op, 10, 20);
      RunChannel(r, comm, op, 11, 25);
    }
  });
  app.join();
  proxy.join();
  const auto out = Drain(r);
  ASSERT_EQ(out.size(), static_cast<size_t>(kOps));
  for (const auto& c : out) {
    EXPECT_EQ(c.kernel_channels, 2u);
    EXPECT_EQ(c.gpu_exec_ns, 15u);
  }
}

}  // namespace
}  // namespace warpscope::nccl_plugin
