// SPDX-License-Identifier: Apache-2.0
// Runs SassDisassembler against stand-in nvdisasm / cuobjdump scripts that print the checked-in
// sample listings, so the process handling is exercised without the CUDA toolkit.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "base/file_util.h"
#include "base/testing/temp_dir.h"
#include "profiling/sass_disassembly.h"

namespace warpscope::profiling {
namespace {

class SassToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
  }

  // Writes an executable script `name` into the tool directory.
  void Tool(const std::string& name, const std::string& body) {
    std::string path = dir_ + "/" + name;
    ASSERT_TRUE(base::WriteFile(path, "#!/bin/sh\n" + body).ok());
    ASSERT_EQ(chmod(path.c_str(), 0755), 0);
  }
  SassDisassembler Disassembler() {
    SassDisassembler::Options options;
    options.search_path = "/nonexistent:" + dir_;
    options.temp_dir = dir_;
    return SassDisassembler(options);
  }
  std::string Sample(const char* name) {
    return std::string(WARPSCOPE_SOURCE_DIR) + "/test/data/cupti/" + name;
  }

  base::TempDir tmp_;
  std::string dir_;
};

TEST_F(SassToolTest, RunsNvdisasmWithCodeOnlyFlagOnTheCubin) {
  Tool("nvdisasm",
       "[ \"$1\" = -c ] && [ -f \"$2\" ] || exit 3\ncat " + Sample("nvdisasm_sm90.txt") + "\n");
  auto listing = Disassembler().DisassembleBytes("not really a cubin");
  ASSERT_TRUE(listing) << listing.error().message();
  EXPECT_EQ(listing->at("_Z4gemmIfEvPfi").at(0x40), "FFMA R5, R2, R3, R4");
  // The temporary cubin is gone.
  size_t left = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    left += e.path().filename().string().rfind("warpscope-cubin-", 0) == 0;
  }
  EXPECT_EQ(left, 0u);
}

TEST_F(SassToolTest, FallsBackToCuobjdumpSass) {
  Tool("cuobjdump",
       "[ \"$1\" = -sass ] || exit 3\ncat " + Sample("cuobjdump_sass_sm80.txt") + "\n");
  SassDisassembler disassembler = Disassembler();
  EXPECT_EQ(disassembler.ToolPath(), dir_ + "/cuobjdump");
  auto listing = disassembler.DisassembleFile(Sample("cuobjdump_sass_sm80.txt"));
  ASSERT_TRUE(listing) << listing.error().message();
  EXPECT_EQ(listing->at("_Z6reducePfS_i").at(0x20), "@!P0 BRA 0x80");
}

TEST_F(SassToolTest, ToolFailureCarriesItsStderr) {
  Tool("nvdisasm", "echo 'nvdisasm fatal : bad cubin' >&2\nexit 1\n");
  auto listing = Disassembler().DisassembleFile("/dev/null");
  ASSERT_FALSE(listing);
  EXPECT_EQ(listing.error().code(), base::StatusCode::kInternal);
  EXPECT_NE(listing.error().message().find("bad cubin"), std::string::npos)
      << listing.error().message();
}

TEST_F(SassToolTest, HungToolTimesOut) {
  Tool("nvdisasm", "exec sleep 30\n");
  SassDisassembler::Options options;
  options.search_path = dir_;
  options.timeout = std::chrono::milliseconds(200);
  auto listing = SassDisassembler(options).DisassembleFile("/dev/null");
  ASSERT_FALSE(listing);
  EXPECT_NE(listing.error().message().find("timed out"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::profiling
