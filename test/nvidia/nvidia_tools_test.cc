// SPDX-License-Identifier: Apache-2.0
// The SASS path against NVIDIA's own tools: the cubins ptxas assembled from axpy.ptx at build
// time (test/nvidia/CMakeLists.txt) are disassembled by the real nvdisasm and cuobjdump (CUDA
// 11.8, fetched from Debian non-free) through profiling::SassDisassembler, and the instructions
// at known offsets are the ones the tools print (read from their listings once and pinned here:
// ptxas, nvdisasm and cuobjdump are pinned by the image and Debian 12). The real libcupti of the
// CUDA 13 image computes the cubins' CRC through our abi.h parameter struct, without a GPU.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "base/testing/peer.h"
#include "base/testing/temp_dir.h"
#include "cupti/abi.h"
#include "profiling/sass_disassembly.h"

namespace warpscope::profiling {
namespace {

namespace abi = ::warpscope::cupti::abi;

constexpr char kAxpy[] = "_Z4axpyPfPKffi";
const std::string kBin = WARPSCOPE_NVIDIA_BIN;
const std::string kCubins = WARPSCOPE_CUBIN_DIR;
constexpr char kRemedy[] =
    "run scripts/fetch-nvidia-test-files.sh <build>/nvidia and rebuild "
    "(test/nvidia/CMakeLists.txt)";

std::string Cubin(const std::string& name) { return kCubins + "/" + name; }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class NvidiaToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* tool : {"nvdisasm", "cuobjdump"}) {
      WARPSCOPE_REQUIRE_PEER(access((kBin + "/" + tool).c_str(), X_OK) == 0,
                             "NVIDIA's " << tool << " (" << kBin << ")", kRemedy);
    }
    ASSERT_FALSE(tmp_.path().empty());
  }
  // A disassembler that finds only `tool` (a directory holding a link to it).
  SassDisassembler Only(const std::string& tool) {
    const std::string dir = tmp_.path() + "/" + tool;
    std::filesystem::create_directories(dir);
    std::filesystem::create_symlink(kBin + "/" + tool, dir + "/" + tool);
    SassDisassembler::Options o;
    o.search_path = dir;
    o.temp_dir = tmp_.path();
    return SassDisassembler(o);
  }
  base::TempDir tmp_;
};

TEST_F(NvidiaToolsTest, NvdisasmShowsTheRealInstructionsOfTheHopperCubin) {
  SassDisassembler d = Only("nvdisasm");
  auto listing = d.DisassembleFile(Cubin("axpy_sm_90_cuda118.cubin"));
  ASSERT_TRUE(listing) << listing.error().message();
  ASSERT_EQ(listing->size(), 1u);
  const auto& f = listing->at(kAxpy);
  EXPECT_EQ(f.at(0x0), "LDC R1, c[0x0][0x28]");
  EXPECT_EQ(f.at(0x10), "S2UR UR4, SR_CTAID.X");
  EXPECT_EQ(f.at(0x70), "@P0 EXIT");
  EXPECT_EQ(f.at(0xd0), "LDG.E R2, [R2.64]");
  EXPECT_EQ(f.at(0x100), "FFMA R7, R2, UR6, R7");
  EXPECT_EQ(f.at(0x110), "STG.E [R4.64], R7");
  // Volta and newer encode every instruction in 16 bytes: offsets step by 0x10 from 0.
  uint64_t expect = 0;
  for (const auto& [offset, text] : f) {
    EXPECT_EQ(offset, expect) << text;
    expect += 0x10;
  }
}

TEST_F(NvidiaToolsTest, CuobjdumpShowsTheRealInstructionsOfTheAmpereCubin) {
  SassDisassembler d = Only("cuobjdump");
  EXPECT_TRUE(d.ToolPath().ends_with("/cuobjdump"));
  auto listing = d.DisassembleFile(Cubin("axpy_sm_80_cuda118.cubin"));
  ASSERT_TRUE(listing) << listing.error().message();
  const auto& f = listing->at(kAxpy);
  EXPECT_EQ(f.at(0x0), "MOV R1, c[0x0][0x28]");
  EXPECT_EQ(f.at(0x50), "@P0 EXIT");
  EXPECT_EQ(f.at(0xa0), "LDG.E R2, [R2.64]");
  EXPECT_EQ(f.at(0xc0), "FFMA R7, R2, c[0x0][0x170], R7");
  EXPECT_EQ(f.at(0xe0), "EXIT");
}

// nvdisasm and cuobjdump -sass print the same instruction at every offset (branch targets
// aside: nvdisasm names them by label, cuobjdump by address), on both architectures.
TEST_F(NvidiaToolsTest, BothToolsAgreeOnEveryInstruction) {
  SassDisassembler nvdisasm = Only("nvdisasm");
  SassDisassembler cuobjdump = Only("cuobjdump");
  for (const char* cubin : {"axpy_sm_90_cuda118.cubin", "axpy_sm_80_cuda118.cubin"}) {
    auto a = nvdisasm.DisassembleFile(Cubin(cubin));
    auto b = cuobjdump.DisassembleFile(Cubin(cubin));
    ASSERT_TRUE(a) << a.error().message();
    ASSERT_TRUE(b) << b.error().message();
    ASSERT_EQ(a->size(), 1u) << cubin;
    ASSERT_EQ(b->size(), 1u) << cubin;
    const auto& fa = a->at(kAxpy);
    const auto& fb = b->at(kAxpy);
    ASSERT_EQ(fa.size(), fb.size()) << cubin;
    for (const auto& [offset, text] : fa) {
      ASSERT_TRUE(fb.contains(offset)) << cubin << " " << offset;
      if (text.starts_with("BRA ")) {
        EXPECT_TRUE(fb.at(offset).starts_with("BRA ")) << fb.at(offset);
      } else {
        EXPECT_EQ(text, fb.at(offset)) << cubin << " offset " << offset;
      }
    }
  }
}

// CUDA 13's ptxas writes ELF ABI version 8 cubins; the 11.8 nvdisasm rejects them. The failure
// reaches the caller with the tool's own message (profiles then show offsets without SASS).
TEST_F(NvidiaToolsTest, ACuda13CubinNeedsANewerNvdisasmAndSaysSo) {
  const std::string cubin = ReadAll(Cubin("axpy_sm_90_cuda13.cubin"));
  ASSERT_GT(cubin.size(), 16u);
  EXPECT_EQ(cubin.substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_EQ(static_cast<unsigned char>(cubin[8]), 8u);  // EI_ABIVERSION
  auto listing = Only("nvdisasm").DisassembleBytes(cubin);
  ASSERT_FALSE(listing);
  EXPECT_EQ(listing.error().code(), base::StatusCode::kInternal);
  EXPECT_NE(listing.error().message().find("does not contain Cuda architecture information"),
            std::string::npos)
      << listing.error().message();
}

// libcupti.so.13 computes a cubin's CRC on a machine without a GPU, through the parameter struct
// of cupti/abi.h; the same bytes give the same CRC wherever they lie (the library computes it on
// the driver's copy in the module callback, the PC records carry CUPTI's own computation).
TEST_F(NvidiaToolsTest, RealLibcuptiComputesTheCubinCrcThroughOurParams) {
  void* lib = dlopen(WARPSCOPE_CUDA_LIBCUPTI, RTLD_NOW | RTLD_LOCAL);
  WARPSCOPE_REQUIRE_PEER(lib != nullptr, "libcupti.so.13 of the CUDA toolkit",
                         "set WARPSCOPE_CUDA_ROOT to a CUDA 13 toolkit");
  auto crc_fn = reinterpret_cast<abi::cuptiGetCubinCrc_fn>(dlsym(lib, "cuptiGetCubinCrc"));
  ASSERT_NE(crc_fn, nullptr);
  auto crc = [&](const std::string& bytes) {
    abi::CUpti_GetCubinCrcParams p{};
    p.size = sizeof(p);
    p.cubinSize = bytes.size();
    p.cubin = bytes.data();
    EXPECT_EQ(crc_fn(&p), abi::kSuccess);
    return p.cubinCrc;
  };
  const std::string sm90 = ReadAll(Cubin("axpy_sm_90_cuda13.cubin"));
  const std::string sm80 = ReadAll(Cubin("axpy_sm_80_cuda13.cubin"));
  const std::string copy = sm90;
  const uint64_t a = crc(sm90);
  EXPECT_NE(a, 0u);
  EXPECT_EQ(crc(copy), a);
  EXPECT_NE(crc(sm80), a);
  EXPECT_NE(crc(ReadAll(Cubin("axpy_sm_90_cuda118.cubin"))), a);
}

}  // namespace
}  // namespace warpscope::profiling
