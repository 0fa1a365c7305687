// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/nccl_aggregator.h"

#include <gtest/gtest.h>

#include "model/entity.h"
#include "model/testing/collecting_sink.h"

namespace warpscope::agent::cuda_profiler {
namespace {

namespace wire = ::warpscope::cupti::wire;

constexpr int32_t kPid = 4242;
constexpr char kEntity[] = "pid/4242/777";
constexpr uint64_t kComm = 0x5eed;

model::ProcessInfo Trainer() {
  model::ProcessInfo p;
  p.pid = kPid;
  p.container_pid = kPid;
  p.start_ticks = 777;
  p.executable = "python3";
  p.job.launcher = "torchelastic";
  p.job.id = "run-1";
  p.job.rank = "1";
  p.job.world_size = "2";
  return p;
}

wire::NcclComm Comm(uint64_t id, uint32_t rank, std::string name = "dp") {
  wire::NcclComm c;
  c.comm_id = id;
  c.name = std::move(name);
  c.nranks = 2;
  c.rank = rank;
  return c;
}

// An all-reduce of 4 MiB on 2 ranks: bus bytes = bytes x 2(n-1)/n = 4 MiB.
wire::NcclCollective AllReduce(uint64_t gpu_ns, uint64_t comm = kComm, uint32_t rank = 1) {
  wire::NcclCollective c;
  c.comm_id = comm;
  c.rank = rank;
  c.func = "AllReduce";
  c.bytes = 4u << 20;
  c.bus_bytes = 4u << 20;
  c.algo = "RING";
  c.proto = "SIMPLE";
  c.enqueue_ns = 1'000'000;
  c.complete_ns = 1'000'000 + 3 * gpu_ns;
  c.gpu_exec_ns = gpu_ns;
  return c;
}

model::Labels Op(std::string collective, std::string comm = "0000000000005eed",
                 std::string name = "dp", std::string rank = "1") {
  return {{"comm", std::move(comm)},
          {"comm_name", std::move(name)},
          {"rank", std::move(rank)},
          {"nranks", "2"},
          {"collective", std::move(collective)}};
}

class NcclAggregatorTest : public ::testing::Test {
 protected:
  NcclAggregatorTest() : agg_(NcclAggregator::Options{}) {
    agg_.AddProcess(Trainer());
    agg_.AddComm(kPid, Comm(kComm, 1));
  }
  model::CollectingSink Emit() const {
    model::CollectingSink sink;
    agg_.EmitMetrics(sink);
    return sink;
  }
  NcclAggregator agg_;
};

TEST_F(NcclAggregatorTest, RecordsBecomeCountsTimesAndBytesPerCollective) {
  agg_.AddCollective(kPid, AllReduce(100'000));
  agg_.AddCollective(kPid, AllReduce(300'000));
  wire::NcclCollective send;
  send.comm_id = kComm;
  send.rank = 1;
  send.kind = wire::NcclOpKind::kP2p;
  send.func = "Send";
  send.bytes = send.bus_bytes = 4096;
  agg_.AddCollective(kPid, send);

  const model::CollectingSink s = Emit();
  EXPECT_EQ(s.Find("nccl.collectives", kEntity, Op("AllReduce")), 2.0);
  EXPECT_DOUBLE_EQ(*s.Find("nccl.collective.gpu_time", kEntity, Op("AllReduce")), 400e-6);
  EXPECT_DOUBLE_EQ(*s.Find("nccl.collective.completion_time", kEntity, Op("AllReduce")), 1.2e-3);
  EXPECT_EQ(s.Find("nccl.collective.bytes", kEntity, Op("AllReduce")), 8.0 * (1 << 20));
  EXPECT_EQ(s.Find("nccl.collective.bus_bytes", kEntity, Op("AllReduce")), 8.0 * (1 << 20));
  EXPECT_EQ(s.Find("nccl.collectives", kEntity, Op("Send")), 1.0);
  EXPECT_EQ(s.Find("nccl.collective.bytes", kEntity, Op("Send")), 4096.0);
  EXPECT_FALSE(s.Has("nccl.collective.bus_bandwidth")) << "no window finished yet";
  const model::Entity* e = s.FindEntity(kEntity);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->attributes.Get(model::attr::kJobId), "run-1");
  EXPECT_EQ(e->attributes.Get(model::attr::kJobRank), "1");
}

TEST_F(NcclAggregatorTest, AWindowGivesBandwidthShareAndInspectorFigures) {
  agg_.AddCollective(kPid, AllReduce(100'000));
  agg_.AddCollective(kPid, AllReduce(300'000));
  agg_.FinishWindow(0, 1'000'000'000);

  const model::CollectingSink s = Emit();
  // 8 MiB of bus bytes in 400 us.
  const double bandwidth = 8.0 * (1 << 20) / 400e-6;
  EXPECT_DOUBLE_EQ(*s.Find("nccl.collective.bus_bandwidth", kEntity, Op("AllReduce")), bandwidth);
  const model::Labels comm{
      {"comm", "0000000000005eed"}, {"comm_name", "dp"}, {"rank", "1"}, {"nranks", "2"}};
  EXPECT_DOUBLE_EQ(*s.Find("nccl.time.share", kEntity, comm), 400e-6);
  const model::Labels inspector{{"collective", "AllReduce"},
                                {"message_size", "4194304"},
                                {"algo_proto", "RING_SIMPLE"},
                                {"comm_name", "dp"},
                                {"nranks", "2"},
                                {"rank", "1"}};
  EXPECT_DOUBLE_EQ(*s.Find("nccl.inspector.bus_bandwidth", kEntity, inspector), bandwidth);
  EXPECT_DOUBLE_EQ(*s.Find("nccl.inspector.exec_time", kEntity, inspector), 200e-6);

  // An empty window: no bandwidth, a zero share, the totals stay.
  agg_.FinishWindow(1'000'000'000, 2'000'000'000);
  const model::CollectingSink next = Emit();
  EXPECT_FALSE(next.Has("nccl.collective.bus_bandwidth"));
  EXPECT_FALSE(next.Has("nccl.inspector.bus_bandwidth"));
  EXPECT_EQ(next.Find("nccl.time.share", kEntity, comm), 0.0);
  EXPECT_EQ(next.Find("nccl.collectives", kEntity, Op("AllReduce")), 2.0);
}

TEST_F(NcclAggregatorTest, WithoutKernelChannelsBandwidthUsesEnqueueToCompletion) {
  wire::NcclCollective op = AllReduce(0);
  op.complete_ns = op.enqueue_ns + 2'000'000;  // 2 ms
  agg_.AddCollective(kPid, op);
  agg_.FinishWindow(0, 1'000'000'000);
  const model::CollectingSink s = Emit();
  EXPECT_EQ(s.Find("nccl.collective.gpu_time", kEntity, Op("AllReduce")), 0.0);
  EXPECT_DOUBLE_EQ(*s.Find("nccl.collective.bus_bandwidth", kEntity, Op("AllReduce")),
                   4.0 * (1 << 20) / 2e-3);
}

TEST_F(NcclAggregatorTest, CommunicatorsBeyondTheCapAreSummedUnderOther) {
  NcclAggregator agg(NcclAggregator::Options{.max_comms = 2});
  agg.AddProcess(Trainer());
  for (uint64_t comm = 1; comm <= 4; ++comm) {
    agg.AddComm(kPid, Comm(comm, 0, "c" + std::to_string(comm)));
    agg.AddCollective(kPid, AllReduce(1000, comm, 0));
  }
  model::CollectingSink s;
  agg.EmitMetrics(s);
  EXPECT_EQ(s.Find("nccl.collectives", kEntity, Op("AllReduce", "0000000000000001", "c1", "0")),
            1.0);
  EXPECT_EQ(s.Find("nccl.collectives", kEntity, Op("AllReduce", "0000000000000002", "c2", "0")),
            1.0);
  const model::Labels other{{"comm", "other"},
                            {"comm_name", "other"},
                            {"rank", ""},
                            {"nranks", ""},
                            {"collective", "AllReduce"}};
  EXPECT_EQ(s.Find("nccl.collectives", kEntity, other), 2.0);
}

TEST_F(NcclAggregatorTest, CollectiveNamesBeyondTheCapAreSummedUnderOther) {
  NcclAggregator agg(NcclAggregator::Options{.max_collectives = 1});
  agg.AddProcess(Trainer());
  agg.AddComm(kPid, Comm(kComm, 1));
  agg.AddCollective(kPid, AllReduce(1000));
  wire::NcclCollective gather = AllReduce(1000);
  gather.func = "AllGather";
  agg.AddCollective(kPid, gather);
  model::CollectingSink s;
  agg.EmitMetrics(s);
  EXPECT_EQ(s.Find("nccl.collectives", kEntity, Op("AllReduce")), 1.0);
  EXPECT_EQ(s.Find("nccl.collectives", kEntity, Op("other")), 1.0);
}

TEST_F(NcclAggregatorTest, DropCountersAreThePluginsLatestValues) {
  agg_.UpdateCounters(kPid, wire::Counters{{{wire::CounterId::kNcclEventsDropped, 3},
                                            {wire::CounterId::kRingDrops, 5},
                                            {wire::CounterId::kBytesDropped, 4096}}});
  agg_.UpdateCounters(kPid, wire::Counters{{{wire::CounterId::kRingDrops, 7}}});
  const model::CollectingSink s = Emit();
  EXPECT_EQ(s.Find("nccl.records.dropped", kEntity, {{"reason", "event_pool"}}), 3.0);
  EXPECT_EQ(s.Find("nccl.records.dropped", kEntity, {{"reason", "ring_full"}}), 7.0);
  EXPECT_EQ(s.Find("nccl.records.dropped", kEntity, {{"reason", "no_ring"}}), 0.0);
  EXPECT_EQ(s.Find("nccl.transport.dropped", kEntity), 4096.0);
}

TEST_F(NcclAggregatorTest, RecordsOfUnknownOrForgottenProcessesAreIgnored) {
  agg_.AddCollective(kPid + 1, AllReduce(1000));
  agg_.ForgetProcess(kPid);
  agg_.AddCollective(kPid, AllReduce(1000));
  EXPECT_FALSE(agg_.HasProcess(kPid));
  EXPECT_TRUE(Emit().values.empty());
}

TEST(MessageSizeBucketTest, RoundsUpToAPowerOfTwo) {
  EXPECT_EQ(MessageSizeBucket(0), 0u);
  EXPECT_EQ(MessageSizeBucket(1), 1u);
  EXPECT_EQ(MessageSizeBucket(4096), 4096u);
  EXPECT_EQ(MessageSizeBucket(4097), 8192u);
  EXPECT_EQ(MessageSizeBucket(3u << 20), 4u << 20);
}

}  // namespace
}  // namespace warpscope::agent::cuda_profiler
