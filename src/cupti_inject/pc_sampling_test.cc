// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/pc_sampling.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace warpscope::cupti_inject {
namespace {

constexpr uint64_t kMs = 1'000'000;

// A scripted CUPTI PC-sampling API: every call is counted; GetData returns one PC with two stall
// reasons (one with samples, one without).
struct FakePcApi {
  abi::CUptiResult enable_result = abi::kSuccess;
  int enables = 0, disables = 0, starts = 0, stops = 0, get_data = 0;
  size_t config_attributes = 0;
  uint32_t config_period = 0;
  std::vector<abi::CUcontext> started;
};
FakePcApi* fake = nullptr;

abi::CUptiResult Enable(abi::CUpti_PCSamplingContextParams*) {
  ++fake->enables;
  return fake->enable_result;
}
abi::CUptiResult Disable(abi::CUpti_PCSamplingContextParams*) {
  ++fake->disables;
  return abi::kSuccess;
}
abi::CUptiResult Start(abi::CUpti_PCSamplingContextParams* p) {
  ++fake->starts;
  fake->started.push_back(p->ctx);
  return abi::kSuccess;
}
abi::CUptiResult Stop(abi::CUpti_PCSamplingContextParams*) {
  ++fake->stops;
  return abi::kSuccess;
}
abi::CUptiResult GetNumStallReasons(abi::CUpti_PCSamplingGetNumStallReasonsParams* p) {
  *p->numStallReasons = 2;
  return abi::kSuccess;
}
abi::CUptiResult GetStallReasons(abi::CUpti_PCSamplingGetStallReasonsParams* p) {
  const uint32_t indices[] = {3, 7};
  const char* names[] = {"smsp__pcsamp_warps_issue_stalled_barrier", "smsp__pcsamp_sample_a"};
  for (size_t i = 0; i < p->numStallReasons; ++i) {
    p->stallReasonIndex[i] = indices[i];
    std::strncpy(p->stallReasons[i], names[i], abi::kStallReasonNameMax - 1);
  }
  return abi::kSuccess;
}
abi::CUptiResult SetConfigurationAttribute(abi::CUpti_PCSamplingConfigurationInfoParams* p) {
  fake->config_attributes = p->numAttributes;
  for (size_t i = 0; i < p->numAttributes; ++i) {
    const auto& a = p->pPCSamplingConfigurationInfo[i];
    if (a.attributeType == abi::kPcSamplingAttrSamplingPeriod) {
      fake->config_period = a.attributeData.samplingPeriod;
    }
  }
  return abi::kSuccess;
}
abi::CUptiResult GetData(abi::CUpti_PCSamplingGetDataParams* p) {
  ++fake->get_data;
  auto* data = static_cast<abi::CUpti_PCSamplingData*>(p->pcSamplingData);
  auto& pc = data->pPcData[0];
  pc.cubinCrc = 0xc0b1;
  pc.pcOffset = 0x40;
  pc.functionName = strdup("_Z4kernv");  // the caller frees it, as with CUPTI
  pc.stallReasonCount = 2;
  pc.stallReason[0] = {3, 5};
  pc.stallReason[1] = {7, 0};
  data->totalNumPcs = 1;
  data->remainingNumPcs = 0;
  data->totalSamples = 5;
  data->droppedSamples = 1;
  return abi::kSuccess;
}

struct Notice {
  uint32_t code;
  std::string message;
};
std::vector<Notice>* notices = nullptr;
void RecordNotice(wire::Severity, uint32_t code, std::string message) {
  notices->push_back({code, std::move(message)});
}
uint64_t RealtimeNs() { return 1'700'000'000'000'000'000ull; }

class CollectingSink : public MessageSink {
 public:
  bool Emit(const wire::Message& m) override {
    messages.push_back(m);
    return true;
  }
  template <typename T>
  std::vector<T> Of() const {
    std::vector<T> out;
    for (const auto& m : messages) {
      if (const auto* t = std::get_if<T>(&m)) {
        out.push_back(*t);
      }
    }
    return out;
  }
  std::vector<wire::Message> messages;
};

abi::CUcontext Ctx(uintptr_t n) { return reinterpret_cast<abi::CUcontext>(n); }

class CuptiPcSamplerTest : public ::testing::Test {
 protected:
  CuptiPcSamplerTest() {
    fake = &fake_;
    notices = &notices_;
    api_.cuptiPCSamplingEnable = &Enable;
    api_.cuptiPCSamplingDisable = &Disable;
    api_.cuptiPCSamplingStart = &Start;
    api_.cuptiPCSamplingStop = &Stop;
    api_.cuptiPCSamplingGetNumStallReasons = &GetNumStallReasons;
    api_.cuptiPCSamplingGetStallReasons = &GetStallReasons;
    api_.cuptiPCSamplingSetConfigurationAttribute = &SetConfigurationAttribute;
    api_.cuptiPCSamplingGetData = &GetData;
  }
  ~CuptiPcSamplerTest() override {
    fake = nullptr;
    notices = nullptr;
  }

  FakePcApi fake_;
  std::vector<Notice> notices_;
  CuptiApi api_;
  PcSampler sampler_{&api_, &RecordNotice, &RealtimeNs};
  CollectingSink out_;
  const PcSampler::Schedule schedule_{200, 1000, 0};
};

TEST_F(CuptiPcSamplerTest, WindowOfWindowMsEveryIntervalIsStartedStoppedAndCollected) {
  const abi::CUcontext contexts[] = {Ctx(0x10)};
  sampler_.TrackContexts(contexts);
  sampler_.Step(0, true, schedule_, out_);
  EXPECT_EQ(fake_.enables, 1);
  ASSERT_EQ(out_.Of<wire::StallReasons>().size(), 1u);
  const auto reasons = out_.Of<wire::StallReasons>()[0];
  EXPECT_EQ(reasons.device, 0u);
  ASSERT_EQ(reasons.reasons.size(), 2u);
  EXPECT_EQ(reasons.reasons[0].index, 3u);
  EXPECT_EQ(reasons.reasons[0].name, "smsp__pcsamp_warps_issue_stalled_barrier");
  EXPECT_EQ(fake_.config_attributes, 4u);  // no period attribute without a period
  EXPECT_EQ(fake_.starts, 1);

  sampler_.Step(199 * kMs, true, schedule_, out_);
  EXPECT_EQ(fake_.stops, 0);
  sampler_.Step(200 * kMs, true, schedule_, out_);
  EXPECT_EQ(fake_.stops, 1);
  EXPECT_EQ(fake_.get_data, 1);
  const auto samples = out_.Of<wire::PcSamples>();
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].total_samples, 5u);
  EXPECT_EQ(samples[0].dropped_samples, 1u);
  ASSERT_EQ(samples[0].samples.size(), 1u);  // the stall reason without samples is left out
  EXPECT_EQ(samples[0].samples[0].function, "_Z4kernv");
  EXPECT_EQ(samples[0].samples[0].pc_offset, 0x40u);
  EXPECT_EQ(samples[0].samples[0].stall_reason, 3u);
  EXPECT_EQ(samples[0].samples[0].count, 5u);
  EXPECT_EQ(sampler_.dropped_samples(), 1u);

  sampler_.Step(999 * kMs, true, schedule_, out_);
  EXPECT_EQ(fake_.starts, 1);  // the next window starts an interval after the first
  sampler_.Step(1000 * kMs, true, schedule_, out_);
  EXPECT_EQ(fake_.starts, 2);
  EXPECT_EQ(fake_.enables, 1);
}

TEST_F(CuptiPcSamplerTest, RefusedContextIsReportedOnceAndNotRetried) {
  fake_.enable_result = 35;  // e.g. insufficient privileges
  const abi::CUcontext contexts[] = {Ctx(0x10)};
  sampler_.TrackContexts(contexts);
  sampler_.Step(0, true, schedule_, out_);
  sampler_.Step(300 * kMs, true, schedule_, out_);
  sampler_.Step(1000 * kMs, true, schedule_, out_);
  EXPECT_EQ(fake_.enables, 1);
  ASSERT_EQ(notices_.size(), 1u);
  EXPECT_EQ(notices_[0].code, 35u);
  EXPECT_NE(notices_[0].message.find("profiling permission"), std::string::npos);
  EXPECT_TRUE(out_.Of<wire::StallReasons>().empty());
  EXPECT_EQ(fake_.starts, 0);
}

TEST_F(CuptiPcSamplerTest, TurningItOffCollectsTheOpenWindowAndDisables) {
  const abi::CUcontext contexts[] = {Ctx(0x10)};
  sampler_.TrackContexts(contexts);
  sampler_.Step(0, true, schedule_, out_);
  sampler_.Step(50 * kMs, false, schedule_, out_);
  EXPECT_EQ(fake_.stops, 1);
  EXPECT_EQ(out_.Of<wire::PcSamples>().size(), 1u);
  EXPECT_EQ(fake_.disables, 1);
  sampler_.Step(60 * kMs, false, schedule_, out_);
  EXPECT_EQ(fake_.stops, 1);
  EXPECT_EQ(fake_.disables, 1);
  // Wanted again: the context is enabled anew and its stall reasons are sent again.
  sampler_.Step(70 * kMs, true, schedule_, out_);
  EXPECT_EQ(fake_.enables, 2);
  EXPECT_EQ(out_.Of<wire::StallReasons>().size(), 2u);
}

TEST_F(CuptiPcSamplerTest, DestroyedContextsAreNoLongerSampled) {
  const abi::CUcontext both[] = {Ctx(0x10), Ctx(0x20)};
  sampler_.TrackContexts(both);
  sampler_.Step(0, true, schedule_, out_);
  ASSERT_EQ(fake_.started, (std::vector<abi::CUcontext>{Ctx(0x10), Ctx(0x20)}));
  const auto reasons = out_.Of<wire::StallReasons>();
  ASSERT_EQ(reasons.size(), 2u);
  EXPECT_EQ(reasons[1].device, 1u);
  const abi::CUcontext second[] = {Ctx(0x20)};
  sampler_.TrackContexts(second);
  sampler_.Step(200 * kMs, true, schedule_, out_);
  sampler_.Step(1000 * kMs, true, schedule_, out_);
  EXPECT_EQ(fake_.started, (std::vector<abi::CUcontext>{Ctx(0x10), Ctx(0x20), Ctx(0x20)}));
}

TEST_F(CuptiPcSamplerTest, NewConnectionGetsTheStallReasonsOfEnabledContexts) {
  const abi::CUcontext contexts[] = {Ctx(0x10)};
  sampler_.TrackContexts(contexts);
  CollectingSink reconnected;
  sampler_.OnConnected(reconnected);
  EXPECT_TRUE(reconnected.messages.empty());  // nothing enabled yet
  sampler_.Step(0, true, schedule_, out_);
  sampler_.OnConnected(reconnected);
  ASSERT_EQ(reconnected.Of<wire::StallReasons>().size(), 1u);
  EXPECT_EQ(reconnected.Of<wire::StallReasons>()[0].reasons.size(), 2u);
}

TEST_F(CuptiPcSamplerTest, ConfiguredPeriodIsPassedToCupti) {
  const abi::CUcontext contexts[] = {Ctx(0x10)};
  sampler_.TrackContexts(contexts);
  sampler_.Step(0, true, {200, 1000, 12}, out_);
  EXPECT_EQ(fake_.config_attributes, 5u);
  EXPECT_EQ(fake_.config_period, 12u);
}

TEST_F(CuptiPcSamplerTest, NothingHappensWithoutTheGetDataEntryPoint) {
  api_.cuptiPCSamplingGetData = nullptr;
  const abi::CUcontext contexts[] = {Ctx(0x10)};
  sampler_.TrackContexts(contexts);
  sampler_.Step(0, true, schedule_, out_);
  EXPECT_EQ(fake_.enables, 0);
  EXPECT_TRUE(out_.messages.empty());
}

}  // namespace
}  // namespace warpscope::cupti_inject
