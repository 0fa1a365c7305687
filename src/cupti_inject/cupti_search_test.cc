// SPDX-License-Identifier: Apache-2.0
// Where libcupti is looked for, over fake directory trees in a temporary directory: the
// configured library alone, one already loaded, the Python environment's wheel found from a
// loaded PyTorch library, the sonames, the CUDA toolkit directories newest first, and the notice
// naming everything tried.
#include "cupti_inject/cupti_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/testing/temp_dir.h"
#include "cupti_inject/cupti_loader.h"

namespace warpscope::cupti_inject {
namespace {

namespace fs = std::filesystem;

class CuptiSearchTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(tmp_.path().empty()); }
  // An empty file at <tmp>/<rel>; returns its path.
  std::string Touch(const std::string& rel) {
    const std::string path = tmp_.path() + "/" + rel;
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << "";
    return path;
  }
  size_t Index(const std::vector<std::string>& v, const std::string& s) {
    return static_cast<size_t>(std::find(v.begin(), v.end(), s) - v.begin());
  }
  base::TempDir tmp_;
};

TEST_F(CuptiSearchTest, ConfiguredLibraryIsTheOnlyCandidate) {
  Touch("usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
  CuptiSearch s{
      "/opt/my/libcupti.so", {"/x/site-packages/torch/lib/libtorch_cuda.so"}, tmp_.path()};
  EXPECT_EQ(CuptiCandidates(s), std::vector<std::string>{"/opt/my/libcupti.so"});
  EXPECT_TRUE(CuptiPlacesSearched(s).empty());
}

TEST_F(CuptiSearchTest, WithNothingOnDiskOnlyTheSonamesAreTried) {
  CuptiSearch s{"", {}, tmp_.path()};
  EXPECT_EQ(CuptiCandidates(s), (std::vector<std::string>{"libcupti.so.13", "libcupti.so.12",
                                                          "libcupti.so.11.8", "libcupti.so"}));
  const auto searched = CuptiPlacesSearched(s);
  ASSERT_EQ(searched.size(), 2u);
  EXPECT_EQ(searched[0], tmp_.path() + "/usr/local/cuda*/extras/CUPTI/lib64");
  EXPECT_EQ(searched[1], tmp_.path() + "/usr/local/cuda*/targets/*/lib");
}

TEST_F(CuptiSearchTest, ALoadedLibcuptiComesFirst) {
  CuptiSearch s{"", {"/usr/lib/libc.so.6", "/venv/lib/libcupti.so.12"}, tmp_.path()};
  const auto c = CuptiCandidates(s);
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0], "/venv/lib/libcupti.so.12");
}

TEST_F(CuptiSearchTest, ThePythonEnvironmentsWheelIsFoundFromALoadedTorchLibrary) {
  const std::string sp = tmp_.path() + "/venv/lib/python3.11/site-packages";
  const std::string wheel = Touch(
      "venv/lib/python3.11/site-packages/nvidia/cuda_cupti/lib/"
      "libcupti.so.12");
  const std::string cu13 =
      Touch("venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcupti.so.13");
  const std::string toolkit = Touch("usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
  CuptiSearch s{"", {sp + "/torch/lib/libtorch_cuda.so", sp + "/torch/lib/libc10.so"}, tmp_.path()};
  const auto c = CuptiCandidates(s);
  // The wheel before the loader's search path, the loader's before the toolkit directories.
  EXPECT_LT(Index(c, wheel), Index(c, "libcupti.so.13"));
  EXPECT_LT(Index(c, cu13), Index(c, "libcupti.so.13"));
  EXPECT_LT(Index(c, "libcupti.so"), Index(c, toolkit));
  EXPECT_LT(Index(c, toolkit), c.size());
  // Found only once although two torch libraries point at the same environment.
  EXPECT_EQ(std::count(c.begin(), c.end(), wheel), 1);
  EXPECT_TRUE(CuptiPlacesSearched(s).empty());
}

TEST_F(CuptiSearchTest, DistPackagesCountsAsAPythonEnvironment) {
  const std::string wheel = Touch(
      "usr/lib/python3/dist-packages/nvidia/cuda_cupti/lib/"
      "libcupti.so.12");
  CuptiSearch s{
      "", {tmp_.path() + "/usr/lib/python3/dist-packages/torch/lib/libtorch.so"}, tmp_.path()};
  const auto c = CuptiCandidates(s);
  EXPECT_EQ(c[0], wheel);
}

TEST_F(CuptiSearchTest, PythonEnvironmentWithoutTheWheelIsNamedInTheNotice) {
  const std::string sp = tmp_.path() + "/env/site-packages";
  CuptiSearch s{"", {sp + "/torch/lib/libtorch_cuda.so"}, tmp_.path()};
  const auto searched = CuptiPlacesSearched(s);
  EXPECT_NE(std::find(searched.begin(), searched.end(), sp + "/nvidia/cuda_cupti/lib"),
            searched.end());
}

TEST_F(CuptiSearchTest, ToolkitsAreSearchedNewestFirstInBothLayouts) {
  const std::string default_tk = Touch("usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
  const std::string v124 = Touch("usr/local/cuda-12.4/extras/CUPTI/lib64/libcupti.so.12");
  const std::string v1210 = Touch("usr/local/cuda-12.10/targets/x86_64-linux/lib/libcupti.so.12");
  const std::string v118 = Touch("usr/local/cuda-11.8/extras/CUPTI/lib64/libcupti.so.11.8");
  Touch("usr/local/cuda-12.4/extras/CUPTI/lib64/README");  // not a libcupti
  CuptiSearch s{"", {}, tmp_.path()};
  const auto c = CuptiCandidates(s);
  EXPECT_LT(Index(c, default_tk), Index(c, v1210));
  EXPECT_LT(Index(c, v1210), Index(c, v124));
  EXPECT_LT(Index(c, v124), Index(c, v118));
  EXPECT_LT(Index(c, v118), c.size());
}

TEST_F(CuptiSearchTest, LoadsTheWheelsLibcuptiAndTheNoticeNamesWhatFailed) {
  const std::string sp = tmp_.path() + "/venv/lib/python3.11/site-packages";
  const std::string lib = sp + "/nvidia/cuda_cupti/lib/libcupti.so.12";
  fs::create_directories(fs::path(lib).parent_path());
  fs::create_symlink(WARPSCOPE_FAKE_CUPTI, lib);
  CuptiApi api;
  std::string error;
  ASSERT_TRUE(
      LoadCupti(CuptiSearch{"", {sp + "/torch/lib/libtorch_cuda.so"}, tmp_.path()}, &api, &error))
      << error;
  EXPECT_NE(api.handle, nullptr);
  EXPECT_NE(api.cuptiGetVersion, nullptr);

  // A tree whose only libcupti is not a loadable library: every candidate is named.
  base::TempDir other;
  const std::string broken = other.path() + "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13";
  fs::create_directories(fs::path(broken).parent_path());
  std::ofstream(broken) << "not an ELF file";
  CuptiApi none;
  CuptiSearch s{"", {other.path() + "/site-packages/torch/lib/libtorch_cuda.so"}, other.path()};
  s.sonames = false;  // this machine's loader may well find a real libcupti
  ASSERT_FALSE(LoadCupti(s, &none, &error));
  EXPECT_EQ(none.handle, nullptr);
  EXPECT_NE(error.find(broken + ": "), std::string::npos) << error;
  EXPECT_NE(error.find("no libcupti in " + other.path() + "/site-packages/nvidia/cuda_cupti/lib"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("WARPSCOPE_CUPTI_LIBRARY"), std::string::npos) << error;
}

TEST_F(CuptiSearchTest, TheLibraryDirectoryOfAToolkitIsSearchedToo) {
  const std::string lib64 = Touch("usr/local/cuda-13.0/lib64/libcupti.so.13");
  CuptiSearch s{"", {}, tmp_.path()};
  s.sonames = false;
  EXPECT_EQ(CuptiCandidates(s), std::vector<std::string>{lib64});
}

TEST_F(CuptiSearchTest, LoadedObjectPathsListThisProcesssLibraries) {
  const auto paths = LoadedObjectPaths();
  EXPECT_TRUE(std::any_of(paths.begin(), paths.end(), [](const std::string& p) {
    return p.find("libc.so") != std::string::npos;
  }));
  for (const auto& p : paths) {
    EXPECT_EQ(p[0], '/') << p;
  }
}

}  // namespace
}  // namespace warpscope::cupti_inject
