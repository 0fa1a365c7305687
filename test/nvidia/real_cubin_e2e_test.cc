// SPDX-License-Identifier: Apache-2.0
// End to end with a real cubin: real_cubin_app (over the fake libcupti) loads the sm_90 cubin
// that CUDA 11.8's ptxas assembled from axpy.ptx, libwarpscope_cupti.so ships it to the agent's
// ProfileListener, the listener's worker disassembles it with NVIDIA's real nvdisasm, and the
// PC samples the app queued at real offsets appear in the flamegraph (folded) and the pprof with
// the instructions nvdisasm prints at those offsets (pinned in nvidia_tools_test.cc).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "agent/sources/cuda_profiler/profile_listener.h"
#include "base/testing/peer.h"
#include "base/testing/temp_dir.h"
#include "integration/child_process.h"
#include "profiling/testing/pprof_rows.h"

namespace warpscope::agent::cuda_profiler {
namespace {

using namespace std::chrono_literals;

const std::string kApp = std::string(WARPSCOPE_BINARY_DIR) + "/bin/real_cubin_app";
const std::string kInject = std::string(WARPSCOPE_BINARY_DIR) + "/lib/libwarpscope_cupti.so";
const std::string kFakeCupti =
    std::string(WARPSCOPE_BINARY_DIR) + "/lib/libwarpscope_fake_cupti.so";
const std::string kCubin = std::string(WARPSCOPE_CUBIN_DIR) + "/axpy_sm_90_cuda118.cubin";
const std::string kBin = WARPSCOPE_NVIDIA_BIN;

TEST(RealCubinE2eTest, PcSamplesShowNvdisasmsInstructionsOfTheRealCubin) {
  WARPSCOPE_REQUIRE_PEER(access((kBin + "/nvdisasm").c_str(), X_OK) == 0,
                         "NVIDIA's nvdisasm (" << kBin << ")",
                         "run scripts/fetch-nvidia-test-files.sh <build>/nvidia and rebuild");
  for (const auto& path : {kApp, kInject, kFakeCupti, kCubin}) {
    ASSERT_EQ(access(path.c_str(), R_OK), 0) << path << " is missing; build the test targets";
  }
  base::TempDir dir;
  const std::string socket_path = dir.path() + "/cupti.sock";
  ProfileListener::Options o;
  o.socket_path = socket_path;
  o.sass.search_path = kBin;
  o.sass.temp_dir = dir.path();
  auto listener = ProfileListener::Start(o);
  ASSERT_TRUE(listener.has_value()) << listener.error().message();

  // LDG.E at 0xd0 stalls on long_scoreboard (index 7); FFMA at 0x100 on math_pipe_throttle (12).
  auto app = test::ChildProcess::Start(
      {kApp, kCubin, "_Z4axpyPfPKffi", "d0:7:100", "100:12:25"}, dir.path(),
      {"CUDA_INJECTION64_PATH=" + kInject, "WARPSCOPE_CUPTI_LIBRARY=" + kFakeCupti,
       "WARPSCOPE_AGENT_SOCKET=" + socket_path, "WARPSCOPE_CUPTI_FLUSH_MS=50",
       "WARPSCOPE_CUPTI_PC_SAMPLING=1", "WARPSCOPE_CUPTI_PC_WINDOW_MS=20",
       "WARPSCOPE_CUPTI_PC_INTERVAL_MS=40"});
  ASSERT_TRUE(app.has_value()) << app.error().message();
  const int status = (*app)->Wait(30s);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << (*app)->Stderr();
  ASSERT_TRUE((*listener)->WaitUntil([](const auto& s) { return s.closed >= 1; }, 30s));
  ASSERT_TRUE(
      (*listener)->WaitUntil([](const auto& s) { return s.sass_done + s.sass_failed >= 1; }, 30s));
  EXPECT_EQ((*listener)->stats().sass_done, 1u);

  auto future = (*listener)->FinishWindow(1, 2);
  ASSERT_EQ(future.wait_for(30s), std::future_status::ready);
  auto profiles = future.get();
  ASSERT_EQ(profiles.size(), 1u);
  const auto& p = profiles[0];
  EXPECT_EQ(p.pc_samples, 125u);
  EXPECT_NE(p.folded_pc_samples.find("[sass] 0x00d0 LDG.E R2, [R2.64];[stall] long_scoreboard 100"),
            std::string::npos)
      << p.folded_pc_samples;
  EXPECT_NE(
      p.folded_pc_samples.find("[sass] 0x0100 FFMA R7, R2, UR6, R7;[stall] math_pipe_throttle 25"),
      std::string::npos)
      << p.folded_pc_samples;

  // The pprof carries the same frames with the sample counts.
  const profiling::PprofRows rows = profiling::ReadPprofGz(p.pprof_gz);
  int64_t ffma = 0;
  int64_t ldg = 0;
  for (const auto& r : rows.rows) {
    if (r.IndexOf("[sass] 0x0100 FFMA R7, R2, UR6, R7") >= 0) {
      ffma += r.values[2];
    }
    if (r.IndexOf("[sass] 0x00d0 LDG.E R2, [R2.64]") >= 0) {
      ldg += r.values[2];
    }
  }
  EXPECT_EQ(ffma, 25);
  EXPECT_EQ(ldg, 100);
}

}  // namespace
}  // namespace warpscope::agent::cuda_profiler
