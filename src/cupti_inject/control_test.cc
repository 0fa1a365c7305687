// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/control.h"

#include <gtest/gtest.h>

#include "cupti_inject/kernel_duty_cycle.h"

namespace warpscope::cupti_inject {
namespace {

TEST(CuptiControlTest, CollectionIsSwitchedOffAndOn) {
  RuntimeControls controls;
  controls.enabled = true;
  EXPECT_TRUE(ApplyControl({wire::ControlOp::kDisableCollection, 0}, 10000, &controls));
  EXPECT_FALSE(controls.enabled.load());
  EXPECT_TRUE(ApplyControl({wire::ControlOp::kEnableCollection, 0}, 10000, &controls));
  EXPECT_TRUE(controls.enabled.load());
}

TEST(CuptiControlTest, RateIsSetAndCappedAtOneMillion) {
  RuntimeControls controls;
  EXPECT_TRUE(ApplyControl({wire::ControlOp::kSetRate, 5}, 10000, &controls));
  EXPECT_EQ(controls.rate.load(), 5u);
  EXPECT_TRUE(ApplyControl({wire::ControlOp::kSetRate, 0}, 10000, &controls));
  EXPECT_EQ(controls.rate.load(), 0u);
  EXPECT_TRUE(ApplyControl({wire::ControlOp::kSetRate, 1ull << 40}, 10000, &controls));
  EXPECT_EQ(controls.rate.load(), 1'000'000u);
}

TEST(CuptiControlTest, PcSamplingWindowIsCappedByTheIntervalAndZeroKeepsIt) {
  RuntimeControls controls;
  controls.pc_window_ms = 200;
  EXPECT_TRUE(ApplyControl({wire::ControlOp::kEnablePcSampling, 0}, 10000, &controls));
  EXPECT_TRUE(controls.pc_wanted.load());
  EXPECT_EQ(controls.pc_window_ms, 200u);
  EXPECT_TRUE(ApplyControl({wire::ControlOp::kEnablePcSampling, 500}, 10000, &controls));
  EXPECT_EQ(controls.pc_window_ms, 500u);
  EXPECT_TRUE(ApplyControl({wire::ControlOp::kEnablePcSampling, 50000}, 10000, &controls));
  EXPECT_EQ(controls.pc_window_ms, 10000u);
  EXPECT_TRUE(ApplyControl({wire::ControlOp::kDisablePcSampling, 0}, 10000, &controls));
  EXPECT_FALSE(controls.pc_wanted.load());
  EXPECT_EQ(controls.pc_window_ms, 10000u);
}

TEST(CuptiControlTest, AllKernelsDutyCycleIsReplaced) {
  RuntimeControls controls;
  const KernelDutyCycle cycle{100, 1000};
  EXPECT_TRUE(
      ApplyControl({wire::ControlOp::kSetAllKernelsDutyCycle, cycle.Pack()}, 10000, &controls));
  EXPECT_EQ(KernelDutyCycle::Unpack(controls.all_kernels_cycle.load()), cycle);
  EXPECT_TRUE(ApplyControl({wire::ControlOp::kSetAllKernelsDutyCycle, 0}, 10000, &controls));
  EXPECT_TRUE(KernelDutyCycle::Unpack(controls.all_kernels_cycle.load()).IsOff());
}

TEST(CuptiControlTest, UnknownOpChangesNothingAndIsNotCounted) {
  RuntimeControls controls;
  controls.enabled = true;
  controls.rate = 7;
  EXPECT_FALSE(ApplyControl({static_cast<wire::ControlOp>(200), 1}, 10000, &controls));
  EXPECT_TRUE(controls.enabled.load());
  EXPECT_EQ(controls.rate.load(), 7u);
  EXPECT_FALSE(controls.pc_wanted.load());
  EXPECT_EQ(controls.all_kernels_cycle.load(), 0u);
}

}  // namespace
}  // namespace warpscope::cupti_inject
