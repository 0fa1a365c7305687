// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/sample_buffer.h"

#include <gtest/gtest.h>

#include <string>

#include "model/testing/collecting_sink.h"

namespace warpscope::agent {
namespace {

using model::EntityKind;
using model::MetricDesc;
using model::MetricKind;

constexpr MetricDesc kTemp{
    "gpu.temperature", EntityKind::kGpu, MetricKind::kGauge, "Cel", "t", "DCGM_FI_DEV_GPU_TEMP", 1,
    "hw.temperature"};

model::Event MakeEvent(std::string kind) {
  model::Event e;
  e.entity = "GPU-a";
  e.kind = std::move(kind);
  return e;
}

TEST(SampleBufferTest, ReplaysCopiesOfWhatItWasGiven) {
  SampleBuffer buffer;
  {
    std::string id = "GPU-a";  // gone before the replay
    model::Labels labels{{"link", "1"}};
    buffer.AddValue(kTemp, id, labels, 61);
    buffer.AddEntity(model::Entity{EntityKind::kGpu, id, "", {}});
    buffer.AddEvent(MakeEvent("xid"));
  }
  model::CollectingSink out;
  buffer.ReplayInto(out);
  ASSERT_EQ(out.entities.size(), 1u);
  EXPECT_EQ(out.entities[0].id, "GPU-a");
  EXPECT_EQ(out.Find(kTemp.key, "GPU-a", {{"link", "1"}}), 61);
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_EQ(out.events[0].kind, "xid");
}

TEST(SampleBufferTest, KeepsTheOrderOfEachKind) {
  SampleBuffer buffer;
  buffer.AddValue(kTemp, "GPU-a", 1);
  buffer.AddValue(kTemp, "GPU-b", 2);
  buffer.AddEvent(MakeEvent("first"));
  buffer.AddEvent(MakeEvent("second"));
  model::CollectingSink out;
  buffer.ReplayInto(out);
  ASSERT_EQ(out.values.size(), 2u);
  EXPECT_EQ(out.values[0].entity, "GPU-a");
  EXPECT_EQ(out.values[1].entity, "GPU-b");
  ASSERT_EQ(out.events.size(), 2u);
  EXPECT_EQ(out.events[0].kind, "first");
  EXPECT_EQ(out.events[1].kind, "second");
}

TEST(SampleBufferTest, ClearForgetsTheContentsAndSlotsAreReused) {
  SampleBuffer buffer;
  buffer.AddValue(kTemp, "GPU-a", 1);
  buffer.AddValue(kTemp, "GPU-b", 2);
  buffer.AddEvent(MakeEvent("xid"));
  buffer.Clear();
  EXPECT_TRUE(buffer.empty());
  buffer.AddValue(kTemp, "GPU-c", 3);
  model::CollectingSink out;
  buffer.ReplayInto(out);
  ASSERT_EQ(out.values.size(), 1u);
  EXPECT_EQ(out.values[0].entity, "GPU-c");
  EXPECT_EQ(out.values[0].value, 3);
  EXPECT_TRUE(out.events.empty());
}

TEST(SampleBufferTest, ReplayEventsIntoLeavesValuesAndEntitiesOut) {
  SampleBuffer buffer;
  buffer.AddEntity(model::Entity{EntityKind::kGpu, "GPU-a", "", {}});
  buffer.AddValue(kTemp, "GPU-a", 1);
  buffer.AddEvent(MakeEvent("gpu_lost"));
  model::CollectingSink out;
  buffer.ReplayEventsInto(out);
  EXPECT_TRUE(out.entities.empty());
  EXPECT_TRUE(out.values.empty());
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_EQ(out.events[0].kind, "gpu_lost");
}

TEST(SampleBufferTest, StepsAreReplayedWithTheEventsAndCleared) {
  SampleBuffer buffer;
  model::TrainingStep step;
  step.step = 7;
  buffer.AddStep(step);
  EXPECT_FALSE(buffer.empty());
  model::CollectingSink late;
  buffer.ReplayEventsInto(late);
  ASSERT_EQ(late.steps.size(), 1u);
  EXPECT_EQ(late.steps[0].step, 7);
  model::CollectingSink out;
  buffer.ReplayInto(out);
  EXPECT_EQ(out.steps.size(), 1u);
  buffer.Clear();
  EXPECT_TRUE(buffer.empty());
}

}  // namespace
}  // namespace warpscope::agent
