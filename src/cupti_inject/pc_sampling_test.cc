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
  uint32_t record_size = 64;              // the stride this "CUPTI" writes records at
  size_t data_size_seen = 0;              // CUpti_PCSamplingData.size the client set
  bool size_mismatch = false;             // a record's size field differed from record_size
  int pcs_per_get = 1;                    // records per GetData, all sharing one functionName
  uint32_t correlation = 0;               // written to correlationId where the layout has it
  std::vector<abi::CUcontext> current;    // contexts pushed by the guard
  std::vector<abi::CUcontext> called_in;  // the current context at each GetData
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
  fake->called_in.push_back(fake->current.empty() ? nullptr : fake->current.back());
  auto* data = static_cast<abi::CUpti_PCSamplingData*>(p->pcSamplingData);
  fake->data_size_seen = data->size;
  // One string for every record of this call, as CUPTI may share it: freeing it per record is a
  // double free that glibc aborts on.
  char* shared = strdup("_Z4kernv");
  auto* base = reinterpret_cast<uint8_t*>(data->pPcData);
  for (int i = 0; i < fake->pcs_per_get; ++i) {
    auto* pc = reinterpret_cast<abi::CUpti_PCSamplingPCData_v1*>(base + i * fake->record_size);
    if (pc->size != fake->record_size) {
      fake->size_mismatch = true;
    }
    pc->cubinCrc = 0xc0b1;
    pc->pcOffset = 0x40 + 0x10 * static_cast<uint64_t>(i);
    pc->functionName = shared;
    pc->stallReasonCount = 2;
    pc->stallReason[0] = {3, 5};
    pc->stallReason[1] = {7, 0};
    if (fake->record_size >= 64) {
      std::memcpy(base + i * fake->record_size + 56, &fake->correlation, 4);
    }
  }
  data->totalNumPcs = static_cast<size_t>(fake->pcs_per_get);
  data->remainingNumPcs = 0;
  data->totalSamples = 5 * static_cast<uint64_t>(fake->pcs_per_get);
  data->droppedSamples = 1;
  return abi::kSuccess;
}

bool Push(abi::CUcontext ctx) {
  fake->current.push_back(ctx);
  return true;
}
void Pop() { fake->current.pop_back(); }

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
  PcSampler sampler_{&api_, 130001, &RecordNotice, &RealtimeNs};
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

TEST(CuptiPcSamplingLayoutTest, LayoutFollowsTheCuptiApiVersion) {
  // CUDA 11.8 (18): 56-byte records, 72-byte data header (NVIDIA's 11.8 header).
  EXPECT_EQ(abi::PcSamplingLayoutFor(18).pc_record_size, 56u);
  EXPECT_EQ(abi::PcSamplingLayoutFor(18).data_size, 72u);
  // CUDA 12.0-12.3 (19-21): no correlationId yet, hardwareBufferFull already.
  for (uint32_t v : {19u, 20u, 21u}) {
    EXPECT_EQ(abi::PcSamplingLayoutFor(v).pc_record_size, 56u) << v;
    EXPECT_EQ(abi::PcSamplingLayoutFor(v).data_size, 80u) << v;
    EXPECT_FALSE(abi::PcSamplingLayoutFor(v).has_correlation_id) << v;
  }
  // CUDA 12.4-12.9 (22-28) and 13.x: the 64-byte record with correlationId.
  for (uint32_t v : {22u, 24u, 28u, 130000u, 130001u, 139999u}) {
    EXPECT_EQ(abi::PcSamplingLayoutFor(v).pc_record_size, 64u) << v;
    EXPECT_EQ(abi::PcSamplingLayoutFor(v).data_size, 80u) << v;
    EXPECT_TRUE(abi::PcSamplingLayoutFor(v).has_correlation_id) << v;
  }
  // Versions whose headers were not read.
  for (uint32_t v : {0u, 17u, 29u, 100u, 129999u, 140000u}) {
    EXPECT_EQ(abi::PcSamplingLayoutFor(v).pc_record_size, 0u) << v;
  }
}

TEST_F(CuptiPcSamplerTest, SharedFunctionNameIsFreedOnceAfterEveryRecordIsRead) {
  fake_.pcs_per_get = 3;  // three records, one string: a per-record free aborts the test
  const abi::CUcontext contexts[] = {Ctx(0x10)};
  sampler_.TrackContexts(contexts);
  sampler_.Step(0, true, schedule_, out_);
  sampler_.Step(200 * kMs, true, schedule_, out_);
  const auto samples = out_.Of<wire::PcSamples>();
  ASSERT_EQ(samples.size(), 1u);
  ASSERT_EQ(samples[0].samples.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(samples[0].samples[i].function, "_Z4kernv");
    EXPECT_EQ(samples[0].samples[i].pc_offset, 0x40u + 0x10 * i);
  }
}

// CUDA 12.3 (API version 21): 56-byte records. Read with the 64-byte stride, the second and
// third records would be misread and CUPTI would find a wrong size field.
TEST_F(CuptiPcSamplerTest, Cuda12RecordsAreReadWithTheirOwnStride) {
  fake_.record_size = 56;
  fake_.pcs_per_get = 3;
  PcSampler sampler(&api_, 21, &RecordNotice, &RealtimeNs);
  EXPECT_EQ(sampler.layout().pc_record_size, 56u);
  const abi::CUcontext contexts[] = {Ctx(0x10)};
  sampler.TrackContexts(contexts);
  sampler.Step(0, true, schedule_, out_);
  sampler.Step(200 * kMs, true, schedule_, out_);
  EXPECT_FALSE(fake_.size_mismatch);
  EXPECT_EQ(fake_.data_size_seen, 80u);
  const auto samples = out_.Of<wire::PcSamples>();
  ASSERT_EQ(samples.size(), 1u);
  ASSERT_EQ(samples[0].samples.size(), 3u);
  EXPECT_EQ(samples[0].samples[2].pc_offset, 0x60u);
  EXPECT_EQ(samples[0].samples[2].cubin_crc, 0xc0b1u);
  EXPECT_TRUE(notices_.empty());
}

TEST_F(CuptiPcSamplerTest, Cuda11_8DataHeaderIsTheShorterOne) {
  fake_.record_size = 56;
  PcSampler sampler(&api_, 18, &RecordNotice, &RealtimeNs);
  const abi::CUcontext contexts[] = {Ctx(0x10)};
  sampler.TrackContexts(contexts);
  sampler.Step(0, true, schedule_, out_);
  sampler.Step(200 * kMs, true, schedule_, out_);
  EXPECT_EQ(fake_.data_size_seen, 72u);
  EXPECT_FALSE(fake_.size_mismatch);
  EXPECT_EQ(out_.Of<wire::PcSamples>().size(), 1u);
}

TEST_F(CuptiPcSamplerTest, CorrelationIdIsReadOnlyWhereTheLayoutHasIt) {
  PcBuffer b64;
  b64.Allocate(abi::PcSamplingLayoutFor(130001), 2, 1);
  std::memcpy(reinterpret_cast<uint8_t*>(b64.records.data()) + 64 + 56, "\x2a\0\0\0", 4);
  EXPECT_EQ(b64.CorrelationId(1), 42u);
  EXPECT_EQ(b64.Record(1)->size, 64u);
  PcBuffer b56;
  b56.Allocate(abi::PcSamplingLayoutFor(21), 2, 1);
  EXPECT_EQ(b56.records.size() * 8, 112u);
  EXPECT_EQ(b56.CorrelationId(1), 0u);
  EXPECT_EQ(b56.Record(1)->size, 56u);
  EXPECT_EQ(b56.Record(1)->stallReason, b56.reasons.data() + 1);
}

TEST_F(CuptiPcSamplerTest, UnknownVersionIsRefusedWithOneNotice) {
  PcSampler sampler(&api_, 140000, &RecordNotice, &RealtimeNs);
  const abi::CUcontext contexts[] = {Ctx(0x10)};
  sampler.TrackContexts(contexts);
  sampler.Step(0, true, schedule_, out_);
  sampler.Step(200 * kMs, true, schedule_, out_);
  sampler.Step(1000 * kMs, true, schedule_, out_);
  EXPECT_EQ(fake_.enables, 0);
  EXPECT_EQ(fake_.starts, 0);
  EXPECT_TRUE(out_.messages.empty());
  ASSERT_EQ(notices_.size(), 1u);
  EXPECT_NE(notices_[0].message.find("140000"), std::string::npos);
  EXPECT_NE(notices_[0].message.find("layout"), std::string::npos);
}

TEST_F(CuptiPcSamplerTest, EveryCallIsMadeWithItsContextCurrent) {
  PcSampler sampler(&api_, 130001, &RecordNotice, &RealtimeNs, {&Push, &Pop});
  const abi::CUcontext contexts[] = {Ctx(0x10), Ctx(0x20)};
  sampler.TrackContexts(contexts);
  sampler.Step(0, true, schedule_, out_);
  sampler.Step(200 * kMs, true, schedule_, out_);
  EXPECT_EQ(fake_.called_in, (std::vector<abi::CUcontext>{Ctx(0x10), Ctx(0x20)}));
  EXPECT_TRUE(fake_.current.empty());  // every push was popped
}

TEST_F(CuptiPcSamplerTest, PrivilegeRefusalNamesTheDriverSetting) {
  fake_.enable_result = abi::kErrorInsufficientPrivileges;
  const abi::CUcontext contexts[] = {Ctx(0x10)};
  sampler_.TrackContexts(contexts);
  sampler_.Step(0, true, schedule_, out_);
  ASSERT_EQ(notices_.size(), 1u);
  EXPECT_NE(notices_[0].message.find("NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos);
  EXPECT_NE(notices_[0].message.find("CAP_SYS_ADMIN"), std::string::npos);
  EXPECT_NE(notices_[0].message.find("CVE-2024-0090"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::cupti_inject
