// SPDX-License-Identifier: Apache-2.0
#include "nccl_plugin/bandwidth.h"

#include <gtest/gtest.h>

namespace warpscope::nccl_plugin {
namespace {

TEST(NcclBandwidthTest, DatatypeSizesFollowNcclsNames) {
  EXPECT_EQ(DatatypeSize("ncclFloat32"), 4u);
  EXPECT_EQ(DatatypeSize("ncclBfloat16"), 2u);
  EXPECT_EQ(DatatypeSize("ncclFloat8e4m3"), 1u);
  EXPECT_EQ(DatatypeSize("ncclUint64"), 8u);
  EXPECT_EQ(DatatypeSize("float"), 0u);
}

TEST(NcclBandwidthTest, BusBytesUseInspectorsFactors) {
  const uint64_t mb = 1 << 20;
  EXPECT_EQ(BusBytes("AllReduce", false, 8 * mb, 8), 14 * mb);             // 2(n-1)/n
  EXPECT_EQ(BusBytes("AllGather", false, mb, 8), 7 * mb);                  // n x msg x (n-1)/n
  EXPECT_EQ(BusBytes("ReduceScatter", false, mb, 4), 3 * mb);
  EXPECT_EQ(BusBytes("Broadcast", false, mb, 8), mb);
  EXPECT_EQ(BusBytes("Send", true, mb, 8), mb);
  EXPECT_EQ(BusBytes("AllReduce", false, mb, 1), 0u);  // one rank moves nothing
  EXPECT_EQ(BusBytes("AlltoAll", false, mb, 8), 0u);   // no agreed factor: none reported
}

}  // namespace
}  // namespace warpscope::nccl_plugin
