// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "server/insights/rules.h"
#include "server/insights/testing/inputs_builder.h"

namespace warpscope::server::insights {
namespace {

using testing::InputsBuilder;

constexpr size_t kBuckets = 90;

std::vector<Observation> Observe(const InsightInputs& in) {
  return testing::Observe(*MakeHardwareErrorsRule(), in);
}

TEST(HardwareErrorsTest, AnXidNamesItsCodeAndMeaningOnItsGpuAndPages) {
  InputsBuilder b(kBuckets);
  b.Gpu("node-1", "GPU-0", "0");
  b.Gpu("node-1", "GPU-1", "1");
  b.Event("node-1", "GPU-1", kBuckets - 3, 79);
  b.Event("node-1", "GPU-1", kBuckets - 2, 79);
  std::vector<Observation> seen = Observe(b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].entity, "GPU-1");
  EXPECT_EQ(seen[0].severity, Severity::kPage);
  EXPECT_NE(seen[0].summary.find("XID 79 (GPU has fallen off the bus) ×2"), std::string::npos)
      << seen[0].summary;
  EXPECT_EQ(seen[0].evidence["xids"].size(), 2u);
}

TEST(HardwareErrorsTest, AnApplicationXidIsATicketForItsOwner) {
  InputsBuilder b(kBuckets);
  b.Gpu("node-1", "GPU-0", "0");
  b.Event("node-1", "GPU-0", kBuckets - 3, 31);
  std::vector<Observation> seen = Observe(b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].severity, Severity::kTicket);
  EXPECT_NE(seen[0].summary.find("raised by the application"), std::string::npos);
}

TEST(HardwareErrorsTest, UncorrectableEccAndRemappingFailuresAreSeenOldXidsAreNot) {
  InputsBuilder b(kBuckets);
  GpuInput& ecc = b.Gpu("node-1", "GPU-0", "0");
  InputsBuilder::Fill(ecc.ecc_uncorrected, 3, kBuckets - 4);
  GpuInput& remap = b.Gpu("node-1", "GPU-1", "1");
  InputsBuilder::Fill(remap.remapping_failed, 1, kBuckets - 1);
  b.Gpu("node-1", "GPU-2", "2");
  b.Event("node-1", "GPU-2", 5, 48);  // 14 minutes ago: past the 10-minute hold
  std::vector<Observation> seen = Observe(b.inputs());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].entity, "GPU-0");
  EXPECT_NE(seen[0].summary.find("3 uncorrectable ECC errors"), std::string::npos);
  EXPECT_EQ(seen[1].entity, "GPU-1");
  EXPECT_TRUE(seen[1].evidence["row_remapping_failed"].get<bool>());
}

TEST(HardwareErrorsTest, ACounterResetIsNotAnError) {
  InputsBuilder b(kBuckets);
  GpuInput& g = b.Gpu("node-1", "GPU-0", "0");
  InputsBuilder::Fill(g.ecc_uncorrected, 5, 0, kBuckets - 10);  // a driver reload resets to 0
  InputsBuilder::Fill(g.ecc_uncorrected, 0, kBuckets - 10);
  EXPECT_TRUE(Observe(b.inputs()).empty());
}

}  // namespace
}  // namespace warpscope::server::insights
