// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/perf_records.h"

#include <gtest/gtest.h>

#include "agent/sources/cpu_profiler/perf_api.h"
#include "agent/sources/cpu_profiler/testing/record_writer.h"

namespace warpscope::agent::cpu_profiler {
namespace {

using testing::CommBytes;
using testing::Mmap2Bytes;
using testing::RecordWriter;
using testing::SampleBytes;
using testing::TaskBytes;

TEST(PerfRecordsTest, ParsesSampleWithKernelChainRegistersAndStack) {
  DwarfRegs regs{};
  for (size_t i = 0; i < regs.size(); ++i) {
    regs[i] = 100 + i;
  }
  std::vector<uint8_t> stack = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  auto bytes =
      SampleBytes(42, 43, 1000, 1, {0xffffffff81000010, 0xffffffff81000020}, &regs, stack, 64, 777);
  auto record = ParseRecord(bytes);
  ASSERT_TRUE(record.has_value()) << record.error().message();
  const auto& s = std::get<SampleRecord>(*record);
  EXPECT_EQ(s.pid, 42u);
  EXPECT_EQ(s.tid, 43u);
  EXPECT_EQ(s.time_ns, 1000u);
  EXPECT_EQ(s.cpu, 1u);
  EXPECT_EQ(s.period, 777u);
  EXPECT_EQ(s.kernel_ips, (std::vector<uint64_t>{0xffffffff81000010, 0xffffffff81000020}));
  ASSERT_TRUE(s.has_user_regs);
  EXPECT_EQ(s.regs, regs);
  EXPECT_EQ(s.stack, stack) << "only dyn_size bytes of the 64-byte copy are kept";
}

TEST(PerfRecordsTest, KernelThreadSampleHasNoUserPart) {
  auto record = ParseRecord(SampleBytes(0, 0, 5, 0, {0xffffffff81000010}));
  ASSERT_TRUE(record.has_value());
  const auto& s = std::get<SampleRecord>(*record);
  EXPECT_FALSE(s.has_user_regs);
  EXPECT_TRUE(s.stack.empty());
  EXPECT_EQ(s.kernel_ips.size(), 1u);
}

TEST(PerfRecordsTest, UserContextPartOfTheChainIsDropped) {
  RecordWriter w(PERF_RECORD_SAMPLE);
  w.Put(uint32_t{1}).Put(uint32_t{1}).Put(uint64_t{0}).Put(uint32_t{0}).Put(uint32_t{0});
  w.Put(uint64_t{1000});  // period
  w.Put(uint64_t{4}).Put(static_cast<uint64_t>(PERF_CONTEXT_KERNEL)).Put(uint64_t{0xffff1});
  w.Put(static_cast<uint64_t>(PERF_CONTEXT_USER)).Put(uint64_t{0x401000});
  w.Put(uint64_t{PERF_SAMPLE_REGS_ABI_NONE}).Put(uint64_t{0});
  auto record = ParseRecord(w.Done());
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(std::get<SampleRecord>(*record).kernel_ips, std::vector<uint64_t>{0xffff1});
}

TEST(PerfRecordsTest, TruncatedSampleIsAnError) {
  DwarfRegs regs{};
  auto bytes = SampleBytes(1, 1, 0, 0, {}, &regs, std::vector<uint8_t>(16, 7));
  for (size_t cut : {bytes.size() - 8, size_t{40}, size_t{20}}) {
    std::vector<uint8_t> shorter(bytes.begin(), bytes.begin() + static_cast<long>(cut));
    uint16_t size = static_cast<uint16_t>(cut);
    std::memcpy(shorter.data() + 6, &size, 2);
    auto record = ParseRecord(shorter);
    EXPECT_FALSE(record.has_value()) << "cut at " << cut;
  }
  bytes.pop_back();
  EXPECT_FALSE(ParseRecord(bytes).has_value()) << "header size disagrees with the span";
}

TEST(PerfRecordsTest, ParsesMmap2CommAndTaskRecords) {
  auto mmap = ParseRecord(Mmap2Bytes(7, 0x400000, 0x2000, 0x1000, "/usr/bin/app", true, 99));
  ASSERT_TRUE(mmap.has_value());
  const auto& m = std::get<MmapRecord>(*mmap);
  EXPECT_EQ(m.pid, 7u);
  EXPECT_EQ(m.start, 0x400000u);
  EXPECT_EQ(m.length, 0x2000u);
  EXPECT_EQ(m.file_offset, 0x1000u);
  EXPECT_EQ(m.inode, 99u);
  EXPECT_TRUE(m.executable);
  EXPECT_EQ(m.path, "/usr/bin/app");
  auto data = ParseRecord(Mmap2Bytes(7, 0x600000, 0x1000, 0, "/usr/bin/app", false));
  ASSERT_TRUE(data.has_value());
  EXPECT_FALSE(std::get<MmapRecord>(*data).executable);

  auto comm = ParseRecord(CommBytes(7, 8, "worker", true));
  ASSERT_TRUE(comm.has_value());
  EXPECT_EQ(std::get<CommRecord>(*comm).comm, "worker");
  EXPECT_TRUE(std::get<CommRecord>(*comm).exec);

  auto exit = ParseRecord(TaskBytes(true, 7, 8, 55));
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(std::get<TaskRecord>(*exit).exit);
  EXPECT_EQ(std::get<TaskRecord>(*exit).tid, 8u);
  EXPECT_EQ(std::get<TaskRecord>(*exit).time_ns, 55u);
}

TEST(PerfRecordsTest, UnknownTypesAreOther) {
  RecordWriter w(PERF_RECORD_THROTTLE);
  w.Put(uint64_t{0}).Put(uint64_t{0}).Put(uint64_t{0});
  auto record = ParseRecord(w.Done());
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(std::get<OtherRecord>(*record).type, uint32_t{PERF_RECORD_THROTTLE});
}

TEST(PerfApiTest, SamplingAttrAsksForTheParsedLayout) {
  perf_event_attr attr = BuildSamplingAttr({.frequency_hz = 19, .stack_bytes = 8192});
  EXPECT_EQ(attr.type, uint32_t{PERF_TYPE_SOFTWARE});
  EXPECT_EQ(attr.config, uint64_t{PERF_COUNT_SW_CPU_CLOCK});
  EXPECT_EQ(attr.freq, 1u);
  EXPECT_EQ(attr.sample_freq, 19u);
  EXPECT_EQ(attr.sample_type, kSampleType);
  EXPECT_EQ(attr.sample_regs_user, kUserRegsMask);
  EXPECT_EQ(attr.sample_stack_user, 8192u);
  EXPECT_EQ(attr.exclude_callchain_user, 1u);
  EXPECT_EQ(attr.mmap2, 1u);
  EXPECT_EQ(attr.comm_exec, 1u);
  EXPECT_EQ(attr.task, 1u);
  EXPECT_EQ(attr.inherit, 0u);
  EXPECT_EQ(attr.disabled, 1u);
  EXPECT_EQ(BuildSamplingAttr({.inherit = true}).inherit, 1u);
}

TEST(PerfApiTest, ParsesCpuLists) {
  EXPECT_EQ(ParseCpuList("0-3,5,7-8\n").value(), (std::vector<int>{0, 1, 2, 3, 5, 7, 8}));
  EXPECT_EQ(ParseCpuList("0").value(), std::vector<int>{0});
  EXPECT_FALSE(ParseCpuList("").has_value());
  EXPECT_FALSE(ParseCpuList("3-1").has_value());
  EXPECT_FALSE(ParseCpuList("a").has_value());
  EXPECT_FALSE(ParseCpuList("1,,2").has_value());
}

}  // namespace
}  // namespace warpscope::agent::cpu_profiler
