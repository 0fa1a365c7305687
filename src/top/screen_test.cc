// SPDX-License-Identifier: Apache-2.0
#include "top/screen.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace warpscope::top {
namespace {

Snapshot TwoGpus() {
  Snapshot s;
  s.host = "node1";
  s.origin = "simulated: test";
  for (int i = 0; i < 2; ++i) {
    GpuRow g;
    g.index = i;
    g.uuid = "GPU-" + std::to_string(i);
    g.name = "NVIDIA H100 80GB HBM3";
    g.utilization = 0.98;
    g.sm_active = 0.88;
    g.memory_used = 12.0 * (1ull << 30);
    g.memory_total = 80.0 * (1ull << 30);
    g.power = 655;
    g.power_limit = 700;
    g.temperature = 63;
    g.nvlink_tx = 99e9;
    s.gpus.push_back(g);
  }
  auto proc = [](int pid, int gpu, double mem_gib, double sm, double cpu, std::string exe) {
    ProcessRow p;
    p.pid = pid;
    p.gpu_index = gpu;
    p.user = "mlops";
    p.executable = exe;
    p.command_line = "/usr/bin/" + exe + " train.py";
    p.gpu_memory = mem_gib * (1ull << 30);
    p.sm = sm;
    p.cpu = cpu;
    return p;
  };
  s.processes = {proc(300, 0, 10, 0.50, 3.5, "python3"), proc(100, 1, 30, 0.90, 0.2, "vllm"),
                 proc(200, 0, 20, 0.10, 1.0, "python3")};
  return s;
}

std::vector<int> Pids(const std::vector<ProcessRow>& rows) {
  std::vector<int> pids;
  for (const auto& r : rows) pids.push_back(r.pid);
  return pids;
}

std::string All(const Screen& screen) {
  std::string out;
  for (const Line& l : screen.lines) out += l.Text() + "\n";
  return out;
}

TEST(ScreenTest, SortsProcessesByEachKey) {
  Snapshot s = TwoGpus();
  ViewState state;
  EXPECT_EQ(Pids(VisibleProcesses(s, state)), (std::vector<int>{100, 200, 300}));  // memory
  HandleKey(state, 's', {});
  EXPECT_EQ(Pids(VisibleProcesses(s, state)), (std::vector<int>{100, 300, 200}));
  HandleKey(state, 'c', {});
  EXPECT_EQ(Pids(VisibleProcesses(s, state)), (std::vector<int>{300, 200, 100}));
  HandleKey(state, 'p', {});
  EXPECT_EQ(Pids(VisibleProcesses(s, state)), (std::vector<int>{100, 200, 300}));
  HandleKey(state, 'm', {});
  EXPECT_EQ(state.sort, SortKey::kGpuMemory);
}

TEST(ScreenTest, AbsentValuesSortLast) {
  Snapshot s = TwoGpus();
  s.processes[1].sm.reset();
  ViewState state;
  state.sort = SortKey::kSm;
  EXPECT_EQ(Pids(VisibleProcesses(s, state)), (std::vector<int>{300, 200, 100}));
}

TEST(ScreenTest, FilterTypedAfterSlashMatchesCaseInsensitively) {
  Snapshot s = TwoGpus();
  ViewState state;
  HandleKey(state, '/', {});
  EXPECT_TRUE(state.editing_filter);
  for (char c : std::string("VLLx")) HandleKey(state, c, {});
  HandleKey(state, kKeyBackspace, {});
  EXPECT_EQ(state.filter, "VLL");
  EXPECT_EQ(Pids(VisibleProcesses(s, state)), std::vector<int>{100});
  // While editing, sort keys are text.
  HandleKey(state, 's', {});
  EXPECT_EQ(state.sort, SortKey::kGpuMemory);
  HandleKey(state, kKeyBackspace, {});
  HandleKey(state, kKeyEnter, {});
  EXPECT_FALSE(state.editing_filter);
  EXPECT_EQ(state.filter, "VLL");
  EXPECT_NE(All(BuildScreen(s, History(), state, {.rows = 40, .columns = 160})).find("filter: VLL"),
            std::string::npos);
  HandleKey(state, kKeyEscape, {});
  EXPECT_EQ(state.filter, "");
  EXPECT_EQ(VisibleProcesses(s, state).size(), 3u);
}

TEST(ScreenTest, FilterMatchesPidAndEscapeWhileEditingClears) {
  Snapshot s = TwoGpus();
  ViewState state;
  HandleKey(state, '/', {});
  HandleKey(state, '3', {});
  HandleKey(state, '0', {});
  EXPECT_EQ(Pids(VisibleProcesses(s, state)), std::vector<int>{300});
  HandleKey(state, kKeyEscape, {});
  EXPECT_FALSE(state.editing_filter);
  EXPECT_EQ(VisibleProcesses(s, state).size(), 3u);
}

TEST(ScreenTest, GCyclesThroughGpusThenAll) {
  Snapshot s = TwoGpus();
  ViewState state;
  std::vector<int> gpus = {0, 1};
  HandleKey(state, 'g', gpus);
  EXPECT_EQ(state.gpu, 0);
  EXPECT_EQ(Pids(VisibleProcesses(s, state)), (std::vector<int>{200, 300}));
  std::string text = All(BuildScreen(s, History(), state, {.rows = 40, .columns = 160}));
  EXPECT_NE(text.find("GPU 0"), std::string::npos);
  EXPECT_EQ(text.find("GPU 1 "), std::string::npos);
  HandleKey(state, 'g', gpus);
  EXPECT_EQ(state.gpu, 1);
  HandleKey(state, 'g', gpus);
  EXPECT_FALSE(state.gpu.has_value());
  HandleKey(state, 'g', gpus);
  HandleKey(state, 'a', gpus);
  EXPECT_FALSE(state.gpu.has_value());
}

TEST(ScreenTest, HelpShowsKeysAndAnyKeyClosesIt) {
  ViewState state;
  HandleKey(state, '?', {});
  EXPECT_TRUE(state.help);
  std::string text = All(BuildScreen(TwoGpus(), History(), state, {.rows = 40, .columns = 100}));
  EXPECT_NE(text.find("sort processes by SM %"), std::string::npos);
  EXPECT_NE(text.find("filter processes"), std::string::npos);
  HandleKey(state, 's', {});
  EXPECT_FALSE(state.help);
  EXPECT_EQ(state.sort, SortKey::kGpuMemory);  // the key only closed the help
  HandleKey(state, 'h', {});
  HandleKey(state, 'q', {});
  EXPECT_TRUE(state.quit);
}

TEST(ScreenTest, SparklineUsesBlocksOrAsciiRightAligned) {
  std::vector<std::optional<double>> v = {0.0, 0.5, std::nullopt, 1.0, 2.0};
  EXPECT_EQ(Sparkline(v, 5, true), "▁▅ ██");
  EXPECT_EQ(Sparkline(v, 5, false), "_= ##");
  EXPECT_EQ(Sparkline(v, 7, false), "  _= ##");
  EXPECT_EQ(Sparkline(v, 2, false), "##");  // the newest
  EXPECT_EQ(Sparkline(v, 0, true), "");
}

TEST(ScreenTest, TruncateCountsCodePoints) {
  EXPECT_EQ(Truncate("▁▂▃abc", 4), "▁▂▃a");
  EXPECT_EQ(Truncate("abc", 10), "abc");
  EXPECT_EQ(Truncate("abc", 0), "");
  EXPECT_EQ(Truncate("abc", -3), "");
}

TEST(ScreenTest, ScreenShowsGpusProcessesAndFits) {
  Snapshot s = TwoGpus();
  History h;
  h.Add(s);
  h.Add(s);
  Screen screen = BuildScreen(s, h, ViewState(), {.rows = 50, .columns = 160});
  std::string text = All(screen);
  EXPECT_NE(text.find("warpscope top"), std::string::npos);
  EXPECT_NE(text.find("NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(text.find(" 98%"), std::string::npos);
  EXPECT_NE(text.find("655/700"), std::string::npos);
  EXPECT_NE(text.find("63C"), std::string::npos);
  EXPECT_NE(text.find("NVLink"), std::string::npos);
  EXPECT_NE(text.find("99G"), std::string::npos);
  EXPECT_NE(text.find("/usr/bin/vllm train.py"), std::string::npos);
  EXPECT_NE(text.find("FINDINGS"), std::string::npos);
  EXPECT_NE(text.find("▇"), std::string::npos);
  for (const Line& l : screen.lines) {
    EXPECT_LE(Truncate(l.Text(), 1000).size(), l.Text().size());
  }
}

TEST(ScreenTest, SmallTerminalsTruncateNeverOverflow) {
  Snapshot s = TwoGpus();
  History h;
  h.Add(s);
  for (int rows : {0, 1, 3, 10}) {
    for (int columns : {0, 1, 10, 40}) {
      Screen screen = BuildScreen(s, h, ViewState(), {.rows = rows, .columns = columns});
      EXPECT_LE(static_cast<int>(screen.lines.size()), rows);
      for (const Line& l : screen.lines) {
        EXPECT_LE(static_cast<int>(Truncate(l.Text(), 10000).size()),
                  static_cast<int>(l.Text().size()));
        EXPECT_EQ(Truncate(l.Text(), columns), l.Text()) << rows << "x" << columns;
      }
    }
  }
}

TEST(ScreenTest, ShortTerminalsGetOneLinePerGpu) {
  Snapshot s = TwoGpus();
  std::string tall = All(BuildScreen(s, History(), ViewState(), {.rows = 40, .columns = 160}));
  EXPECT_NE(tall.find("POW"), std::string::npos);
  Screen small = BuildScreen(s, History(), ViewState(), {.rows = 14, .columns = 160});
  std::string text = All(small);
  EXPECT_EQ(text.find("POW"), std::string::npos);
  EXPECT_NE(text.find("GPU 1"), std::string::npos);
  EXPECT_NE(text.find("/usr/bin/vllm"), std::string::npos);
}

TEST(ScreenTest, ProcessesGiveWayToFindingsPanel) {
  Snapshot s = TwoGpus();
  s.findings_available = true;
  s.findings.push_back({"page", "firing", "thermal_throttle", "GPU-1", "GPU 1 at 92 C"});
  for (int i = 0; i < 40; ++i) s.processes.push_back(s.processes[0]);
  Screen screen = BuildScreen(s, History(), ViewState(), {.rows = 24, .columns = 120});
  EXPECT_EQ(screen.lines.size(), 24u);
  std::string text = All(screen);
  EXPECT_NE(text.find("thermal_throttle"), std::string::npos);
  EXPECT_NE(text.find("GPU 1 at 92 C"), std::string::npos);
}

TEST(ScreenTest, ErrorsAndEmptyStatesAreShown) {
  Snapshot s;
  s.error = "cannot reach http://x";
  std::string text = All(BuildScreen(s, History(), ViewState(), {.rows = 20, .columns = 80}));
  EXPECT_NE(text.find("cannot reach http://x"), std::string::npos);
  EXPECT_NE(text.find("no GPU processes"), std::string::npos);
  EXPECT_NE(text.find("--server URL --host H"), std::string::npos);
}

TEST(ScreenTest, UnknownGpuOfAProcessIsADash) {
  Snapshot s = TwoGpus();
  s.processes.resize(1);
  s.processes[0].gpu_index = -1;
  std::string text = All(BuildScreen(s, History(), ViewState(), {.rows = 40, .columns = 160}));
  EXPECT_NE(text.find("   300 mlops        -"), std::string::npos) << text;
}

TEST(ScreenTest, DegradedGpuSaysSo) {
  Snapshot s = TwoGpus();
  s.gpus[1].degraded = true;
  std::string text = All(BuildScreen(s, History(), ViewState(), {.rows = 40, .columns = 160}));
  EXPECT_NE(text.find("DEGRADED"), std::string::npos);
}

TEST(ScreenTest, FormatsUnits) {
  EXPECT_EQ(FormatBytes(512), "512B");
  EXPECT_EQ(FormatBytes(81559.0 * (1 << 20)), "79.6G");
  EXPECT_EQ(FormatRate(350e6), "350M");
  EXPECT_EQ(FormatRate(5.5e9), "5.5G");
  EXPECT_EQ(FormatRate(0), "0B");
}

}  // namespace
}  // namespace warpscope::top
