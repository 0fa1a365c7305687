// SPDX-License-Identifier: Apache-2.0
#include "top/top_loop.h"

#include <gtest/gtest.h>

#include "top/testing/fake_display.h"

namespace warpscope::top {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Snapshot WithGpu(double util) {
  Snapshot s;
  s.host = "node1";
  GpuRow g;
  g.index = 0;
  g.uuid = "GPU-a";
  g.name = "Test GPU";
  g.utilization = util;
  s.gpus.push_back(g);
  ProcessRow p;
  p.pid = 42;
  p.gpu_index = 0;
  p.executable = "python3";
  s.processes.push_back(p);
  return s;
}

TEST(TopLoopTest, CollectsEveryIntervalAndQuitsOnQ) {
  base::FakeClock clock;
  FakeDisplay display(clock, 30, 120);
  FakeCollector collector({WithGpu(0.1), WithGpu(0.2), WithGpu(0.3)});
  display.Script({kNoKey, kNoKey, 'q'});
  LoopStats stats = RunLoop(display, collector, clock, {.interval = seconds(2)});
  EXPECT_EQ(stats.collections, 3u);
  EXPECT_EQ(collector.calls(), 3);
  ASSERT_EQ(display.waits().size(), 3u);
  EXPECT_EQ(display.waits()[0], seconds(2));
  EXPECT_NE(display.screens().back().lines[1].Text().find(" 30%"), std::string::npos);
}

TEST(TopLoopTest, KeysRedrawWithoutCollectingAndWaitOnlyTheRest) {
  base::FakeClock clock;
  FakeDisplay display(clock, 30, 120);
  FakeCollector collector({WithGpu(0.5)});
  display.Script({'?', 'q'});
  LoopStats stats = RunLoop(display, collector, clock, {.interval = seconds(1)});
  EXPECT_EQ(stats.collections, 1u);
  ASSERT_EQ(display.screens().size(), 2u);
  EXPECT_NE(display.screens()[1].lines[0].Text().find("help"), std::string::npos);
}

TEST(TopLoopTest, ResizeRebuildsForTheNewSize) {
  base::FakeClock clock;
  FakeDisplay display(clock, 30, 120);
  FakeCollector collector({WithGpu(0.5)});
  display.Script({kResize});
  display.Resize(5, 20);
  RunLoop(display, collector, clock, {.interval = seconds(1)});
  const Screen& last = display.screens().back();
  EXPECT_LE(last.lines.size(), 5u);
  for (const Line& l : last.lines) EXPECT_LE(l.Text().size(), 20u);
}

TEST(TopLoopTest, StopRequestEndsTheLoop) {
  base::FakeClock clock;
  FakeDisplay display(clock, 30, 120);
  FakeCollector collector({WithGpu(0.5)});
  display.Script({kNoKey, kNoKey, kNoKey, kNoKey});
  int polls = 0;
  LoopStats stats =
      RunLoop(display, collector, clock,
              {.interval = milliseconds(500), .stop_requested = [&polls] { return ++polls > 2; }});
  EXPECT_EQ(stats.collections, 2u);
}

}  // namespace
}  // namespace warpscope::top
