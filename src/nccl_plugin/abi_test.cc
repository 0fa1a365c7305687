// SPDX-License-Identifier: Apache-2.0
// The layouts of our declarations (abi.h) against NCCL's, on LP64 Linux: offsets and sizes as
// NCCL's own headers give them (plugins/profiler/example/nccl/profiler_v{4,5,6}.h and
// profiler.h at v2.30.7-1; the same declarations at v2.27.3-1 for v4, v2.28.3-1 for v5 and
// v2.29.2-1 for v6). A change here is an ABI break with NCCL, never a refactoring.
#include "nccl_plugin/abi.h"

#include <gtest/gtest.h>

#include <cstddef>

namespace warpscope::nccl_plugin::abi {
namespace {

TEST(NcclAbiTest, EventBitsAndStatesAreNcclsValues) {
  EXPECT_EQ(kEventColl, 2u);
  EXPECT_EQ(kEventP2p, 4u);
  EXPECT_EQ(kEventProxyOp, 8u);
  EXPECT_EQ(kEventProxyStep, 16u);
  EXPECT_EQ(kEventKernelCh, 64u);
  EXPECT_EQ(kEventCollApi, 512u);
  EXPECT_EQ(kEventCeBatch, 1u << 14);
  EXPECT_EQ(kProxyStepSendWait, 9);
  EXPECT_EQ(kProxyStepRecvWait, 10);
  EXPECT_EQ(kKernelChStop, 22);
  EXPECT_EQ(kCeBatchComplete, 30);
}

// NCCL 2.27's v4: a one-byte type; collectives and P2P without parentGroup.
TEST(NcclAbiTest, V4DescriptorLayoutIsNccl227s) {
  EXPECT_EQ(offsetof(EventDescrV4, type), 0u);
  EXPECT_EQ(offsetof(EventDescrV4, parent), 8u);
  EXPECT_EQ(offsetof(EventDescrV4, rank), 16u);
  EXPECT_EQ(offsetof(EventDescrV4, coll), 24u);
  EXPECT_EQ(offsetof(CollDescrV4, seq_number), 0u);
  EXPECT_EQ(offsetof(CollDescrV4, func), 8u);
  EXPECT_EQ(offsetof(CollDescrV4, count), 32u);
  EXPECT_EQ(offsetof(CollDescrV4, root), 40u);
  EXPECT_EQ(offsetof(CollDescrV4, datatype), 48u);
  EXPECT_EQ(offsetof(CollDescrV4, n_channels), 56u);
  EXPECT_EQ(offsetof(CollDescrV4, n_warps), 57u);
  EXPECT_EQ(offsetof(CollDescrV4, algo), 64u);
  EXPECT_EQ(offsetof(CollDescrV4, proto), 72u);
  EXPECT_EQ(sizeof(CollDescrV4), 80u);
  EXPECT_EQ(offsetof(P2pDescrV4, peer), 32u);
  EXPECT_EQ(offsetof(P2pDescrV4, n_channels), 36u);
  EXPECT_EQ(sizeof(EventDescrV4), 104u);
}

TEST(NcclAbiTest, ChildDescriptorsAndStateArgsAreSharedByEveryVersion) {
  EXPECT_EQ(offsetof(ProxyOpDescr, pid), 0u);
  EXPECT_EQ(offsetof(ProxyOpDescr, channel_id), 4u);
  EXPECT_EQ(offsetof(ProxyOpDescr, peer), 8u);
  EXPECT_EQ(offsetof(ProxyOpDescr, n_steps), 12u);
  EXPECT_EQ(offsetof(ProxyOpDescr, chunk_size), 16u);
  EXPECT_EQ(offsetof(ProxyOpDescr, is_send), 20u);
  EXPECT_EQ(offsetof(KernelChDescr, gpu_timer), 8u);
  EXPECT_EQ(sizeof(StateArgs), 8u);
  EXPECT_EQ(offsetof(EventDescrV5, proxy_op), 24u);
  EXPECT_EQ(offsetof(EventDescrV4, kernel_ch), 24u);
}

// NCCL 2.28's v5: a 64-bit type, the API events, parentGroup appended to collectives and P2P.
TEST(NcclAbiTest, V5DescriptorLayoutIsNccl228s) {
  EXPECT_EQ(offsetof(EventDescrV5, type), 0u);
  EXPECT_EQ(offsetof(EventDescrV5, parent), 8u);
  EXPECT_EQ(offsetof(EventDescrV5, rank), 16u);
  EXPECT_EQ(offsetof(EventDescrV5, coll), 24u);
  EXPECT_EQ(offsetof(CollDescrV5, parent_group), 80u);
  EXPECT_EQ(offsetof(P2pDescrV5, parent_group), 40u);
  EXPECT_EQ(offsetof(CollApiDescr, root), 24u);
  EXPECT_EQ(offsetof(CollApiDescr, stream), 32u);
  EXPECT_EQ(offsetof(CollApiDescr, graph_captured), 40u);
  EXPECT_EQ(offsetof(GroupApiDescr, group_depth), 4u);
  EXPECT_EQ(sizeof(EventDescrV5), 112u);
}

// NCCL 2.29's v6: v5 plus the copy-engine events, which do not grow the union.
TEST(NcclAbiTest, V6DescriptorLayoutIsNccl229s) {
  EXPECT_EQ(offsetof(EventDescrV6, coll), 24u);
  EXPECT_EQ(offsetof(CeCollDescr, sync_strategy), 56u);
  EXPECT_EQ(offsetof(CeCollDescr, intra_batch_sync), 64u);
  EXPECT_EQ(offsetof(CeCollDescr, batch_size), 68u);
  EXPECT_EQ(offsetof(CeCollDescr, ce_seq_num), 76u);
  EXPECT_EQ(offsetof(CeCollDescr, stream), 80u);
  EXPECT_EQ(offsetof(CeBatchDescr, total_bytes), 8u);
  EXPECT_EQ(sizeof(EventDescrV6), 112u);
}

TEST(NcclAbiTest, TablesAreANameAndFiveFunctions) {
  EXPECT_EQ(sizeof(ProfilerV4), 6 * sizeof(void*));
  EXPECT_EQ(sizeof(ProfilerV5), 6 * sizeof(void*));
  EXPECT_EQ(sizeof(ProfilerV6), 6 * sizeof(void*));
  EXPECT_EQ(offsetof(ProfilerV6, finalize), 5 * sizeof(void*));
}

}  // namespace
}  // namespace warpscope::nccl_plugin::abi
