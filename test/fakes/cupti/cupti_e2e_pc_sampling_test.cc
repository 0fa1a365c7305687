// SPDX-License-Identifier: Apache-2.0
// End to end (cupti_e2e_fixture.h). PC sampling and cubins: windows, stall reasons, the cubin of a
// module loaded before sampling was switched on, an unknown CUPTI version refused once.
#include "cupti_e2e_fixture.h"

namespace warpscope::cupti::e2e {
namespace {

TEST_F(CuptiE2eTest, PcSamplesStallReasonsAndCubin) {
  TestAgent agent(SocketPath());
  auto run =
      RunApp(dir_.path(), {"--threads", "1", "--launches", "2", "--pc"},
             Env(SocketPath(), {"WARPSCOPE_CUPTI_PC_SAMPLING=1", "WARPSCOPE_CUPTI_PC_WINDOW_MS=20",
                                "WARPSCOPE_CUPTI_PC_INTERVAL_MS=40"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  ASSERT_FALSE(r.stall_reasons.empty());
  ASSERT_EQ(r.stall_reasons[0].reasons.size(), 9u);
  EXPECT_EQ(r.stall_reasons[0].reasons[1].index, 7u);
  EXPECT_EQ(r.stall_reasons[0].reasons[1].name, "smsp__pcsamp_warps_issue_stalled_long_scoreboard");
  ASSERT_EQ(r.pc_samples.size(), 2u);
  EXPECT_EQ(r.pc_samples[0].function, "_Z9fake_gemmv");
  // Both records carried one shared name string (freed once, or glibc aborts the app).
  EXPECT_EQ(r.pc_samples[1].function, "_Z9fake_gemmv");
  EXPECT_EQ(r.pc_samples[1].pc_offset, 0x50u);
  EXPECT_EQ(r.pc_samples[0].pc_offset, 0x40u);
  EXPECT_EQ(r.pc_samples[0].stall_reason, 7u);
  EXPECT_EQ(r.pc_samples[0].count, 100u);
  ASSERT_EQ(r.cubins.size(), 1u);
  EXPECT_EQ(r.cubins.begin()->first, r.pc_samples[0].cubin_crc);
  EXPECT_TRUE(
      r.cubins.begin()->second.starts_with("\x7f"
                                           "ELF"));
}

// The module was loaded before the agent switched PC sampling on: its cubin was kept at the load
// and is sent once sampling runs.
TEST_F(CuptiE2eTest, CubinLoadedBeforePcSamplingWasSwitchedOnIsSent) {
  Received r;
  RunControlled(dir_.path(), SocketPath(), {{wire::ControlOp::kEnablePcSampling, 20}}, &r,
                {"WARPSCOPE_CUPTI_BURST=1000", "WARPSCOPE_CUPTI_PC_INTERVAL_MS=40"});
  ASSERT_FALSE(r.stall_reasons.empty());  // sampling was enabled on the context
  ASSERT_EQ(r.cubins.size(), 1u);
  EXPECT_TRUE(
      r.cubins.begin()->second.starts_with("\x7f"
                                           "ELF"));
  EXPECT_EQ(r.cubins.begin()->second.size(), 24u);
}

// A module whose cubin memory was reused before sampling was switched on: what is there now is not
// the cubin CUPTI showed at load (its CRC differs), so it is not sent, and one notice says so.
TEST_F(CuptiE2eTest, CubinWhoseMemoryWasReusedBeforePcSamplingIsNotSent) {
  Received r;
  RunControlled(dir_.path(), SocketPath(), {{wire::ControlOp::kEnablePcSampling, 20}}, &r,
                {"WARPSCOPE_CUPTI_BURST=1000", "WARPSCOPE_CUPTI_PC_INTERVAL_MS=40"},
                {"--reused-cubin"});
  ASSERT_FALSE(r.stall_reasons.empty());
  ASSERT_EQ(r.cubins.size(), 1u);  // the first module's, still in place
  EXPECT_EQ(r.cubins.begin()->second.size(), 24u);
  size_t read_back_notices = 0;
  for (const auto& n : r.notices) {
    read_back_notices += n.message.find("1 cubin(s) loaded before PC sampling") == 0;
  }
  EXPECT_EQ(read_back_notices, 1u);
}

// A CUPTI version whose PC record layout the library does not know: PC sampling is refused with
// one notice, everything else works.
TEST_F(CuptiE2eTest, PcSamplingOnAnUnknownCuptiVersionIsRefusedOnce) {
  TestAgent agent(SocketPath());
  auto run = RunApp(
      dir_.path(), {"--threads", "1", "--launches", "5"},
      Env(SocketPath(), {"WARPSCOPE_FAKE_CUPTI_VERSION=29", "WARPSCOPE_CUPTI_PC_SAMPLING=1",
                         "WARPSCOPE_CUPTI_PC_WINDOW_MS=20", "WARPSCOPE_CUPTI_PC_INTERVAL_MS=40"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  EXPECT_EQ(r.hello.cupti_version, 29u);
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_NE(r.notices[0].message.find("PC record layout"), std::string::npos)
      << r.notices[0].message;
  EXPECT_TRUE(r.stall_reasons.empty());
  EXPECT_TRUE(r.pc_samples.empty());
  EXPECT_EQ(r.counters[wire::CounterId::kKernelsJoined], 10u);
}

}  // namespace
}  // namespace warpscope::cupti::e2e
