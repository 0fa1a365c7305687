// SPDX-License-Identifier: Apache-2.0
#include "profiling/sass_disassembly.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "base/file_util.h"
#include "base/testing/temp_dir.h"

namespace warpscope::profiling {
namespace {

std::string Fixture(const char* name) {
  auto text = base::ReadFile(std::string(WARPSCOPE_SOURCE_DIR) + "/test/data/cupti/" + name);
  EXPECT_TRUE(text) << name;
  return text.value_or("");
}

TEST(ParseSassListingTest, ParsesNvdisasmFunctionsAndInstructions) {
  auto listing = ParseSassListing(Fixture("nvdisasm_sm90.txt"));
  ASSERT_TRUE(listing) << listing.error().message();
  ASSERT_EQ(listing->size(), 2u);
  const auto& gemm = listing->at("_Z4gemmIfEvPfi");
  ASSERT_EQ(gemm.size(), 8u);
  EXPECT_EQ(gemm.at(0x0), "LDC R1, c[0x0][0x28]");
  EXPECT_EQ(gemm.at(0x40), "FFMA R5, R2, R3, R4");
  EXPECT_EQ(gemm.at(0x50), "@P0 EXIT");
  EXPECT_EQ(gemm.at(0x60), "LDG.E R6, desc[UR4][R2.64]");
  EXPECT_EQ(gemm.at(0x70), "BRA `(.L_x_0)");
  EXPECT_EQ(listing->at("triton_poi_fused_add_0").at(0x10), "EXIT");
}

TEST(ParseSassListingTest, ParsesCuobjdumpSassAndIgnoresEncodings) {
  auto listing = ParseSassListing(Fixture("cuobjdump_sass_sm80.txt"));
  ASSERT_TRUE(listing) << listing.error().message();
  ASSERT_EQ(listing->size(), 2u);
  const auto& reduce = listing->at("_Z6reducePfS_i");
  ASSERT_EQ(reduce.size(), 4u);
  EXPECT_EQ(reduce.at(0x0), "IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28]");
  EXPECT_EQ(reduce.at(0x20), "@!P0 BRA 0x80");
  EXPECT_EQ(reduce.at(0x30), "BAR.SYNC.DEFER_BLOCKING 0x0");
  EXPECT_EQ(listing->at("_Z5emptyv").at(0x10), "BRA 0x10");
}

TEST(ParseSassListingTest, RejectsTextWithoutInstructions) {
  auto listing = ParseSassListing("nvdisasm fatal : Input file 'x' is not a cubin\n");
  ASSERT_FALSE(listing);
  EXPECT_EQ(listing.error().code(), base::StatusCode::kInvalidArgument);
}

TEST(ParseSassListingTest, IgnoresInstructionsOutsideAFunction) {
  auto listing = ParseSassListing(
      "        /*0000*/ MOV R1, R2 ;\n"
      "Function : f\n"
      "        /*0010*/ EXIT ;\n");
  ASSERT_TRUE(listing);
  ASSERT_EQ(listing->size(), 1u);
  EXPECT_EQ(listing->at("f").size(), 1u);
}

TEST(ToSassMapTest, KeysEveryInstructionByCubinFunctionAndOffset) {
  FunctionSass listing{{"f", {{0x0, "MOV R1, R2"}, {0x10, "EXIT"}}}};
  SassMap map = ToSassMap(0x1234, listing);
  ASSERT_EQ(map.size(), 2u);
  EXPECT_EQ(map.at(SassKey{0x1234, "f", 0x10}), "EXIT");
}

TEST(SassDisassemblerTest, MissingToolsAreUnavailableWithARemedy) {
  base::TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  SassDisassembler::Options options;
  options.search_path = tmp.path();
  SassDisassembler disassembler(options);
  EXPECT_EQ(disassembler.ToolPath(), "");
  auto result = disassembler.DisassembleFile("/nonexistent.cubin");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), base::StatusCode::kUnavailable);
  EXPECT_NE(result.error().message().find("nvidia-cuda-nvdisasm"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::profiling
