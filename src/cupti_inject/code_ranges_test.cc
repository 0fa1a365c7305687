// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/code_ranges.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <vector>

namespace warpscope::cupti_inject {
namespace {

// True when `code` followed by the return address (the end of `code`) is recognised as a call.
bool EndsWithCall(std::vector<uint8_t> code, size_t lead = 8) {
  std::vector<uint8_t> buf(lead, 0x90);  // nops before
  buf.insert(buf.end(), code.begin(), code.end());
  buf.push_back(0xc3);
  const auto lo = reinterpret_cast<uintptr_t>(buf.data());
  const uintptr_t ret = lo + lead + code.size();
  return PrecededByCall(ret, lo, lo + buf.size());
}

#if defined(__x86_64__)
TEST(CodeRangesTest, RecognisesEveryCallForm) {
  EXPECT_TRUE(EndsWithCall({0xe8, 0x10, 0x20, 0x30, 0x40}));              // call rel32
  EXPECT_TRUE(EndsWithCall({0xff, 0xd0}));                                // call *%rax
  EXPECT_TRUE(EndsWithCall({0x41, 0xff, 0xd3}));                          // call *%r11
  EXPECT_TRUE(EndsWithCall({0xff, 0x15, 0x01, 0x02, 0x03, 0x04}));        // call *x(%rip)
  EXPECT_TRUE(EndsWithCall({0xff, 0x10}));                                // call *(%rax)
  EXPECT_TRUE(EndsWithCall({0xff, 0x50, 0x08}));                          // call *8(%rax)
  EXPECT_TRUE(EndsWithCall({0xff, 0x54, 0x24, 0x08}));                    // call *8(%rsp)
  EXPECT_TRUE(EndsWithCall({0xff, 0x14, 0x24}));                          // call *(%rsp)
  EXPECT_TRUE(EndsWithCall({0xff, 0x90, 0x00, 0x01, 0x00, 0x00}));        // call *0x100(%rax)
  EXPECT_TRUE(EndsWithCall({0xff, 0x94, 0x24, 0x00, 0x01, 0x00, 0x00}));  // call *0x100(%rsp)
  EXPECT_TRUE(EndsWithCall({0xff, 0x14, 0x25, 0x00, 0x10, 0x00, 0x00}));  // call *0x1000
}

TEST(CodeRangesTest, RefusesWhatIsNotACall) {
  EXPECT_FALSE(EndsWithCall({}));
  EXPECT_FALSE(EndsWithCall({0xff, 0xe0}));                    // jmp *%rax
  EXPECT_FALSE(EndsWithCall({0xe9, 0x10, 0x20, 0x30, 0x40}));  // jmp rel32
  EXPECT_FALSE(EndsWithCall({0xff, 0x50}));                    // call *disp8(%rax) cut short
  EXPECT_FALSE(EndsWithCall({0x48, 0x89, 0xc7}));              // mov %rax,%rdi
}

TEST(CodeRangesTest, ReadsNothingBeforeTheSegment) {
  // The call opcode would lie before the segment's start: not read, not a call.
  EXPECT_FALSE(EndsWithCall({0x10, 0x20, 0x30, 0x40}, 0));
  std::vector<uint8_t> call = {0xe8, 0, 0, 0, 0};
  const auto lo = reinterpret_cast<uintptr_t>(call.data());
  EXPECT_TRUE(PrecededByCall(lo + 5, lo, lo + 5));
  EXPECT_FALSE(PrecededByCall(lo + 5, lo + 1, lo + 5));
  EXPECT_FALSE(PrecededByCall(lo, lo, lo + 5));
  EXPECT_FALSE(PrecededByCall(lo + 6, lo, lo + 5));
}
#endif

__attribute__((noinline)) uintptr_t MyReturnAddress() {
  const auto ret = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  asm volatile("" ::: "memory");
  return ret;
}

TEST(CodeRangesTest, FindsLoadedCodeWithUnwindTables) {
  ASSERT_GT(RefreshCodeRanges(), 0u);
  uintptr_t lo = 0;
  uintptr_t hi = 0;
  const auto fn = reinterpret_cast<uintptr_t>(&MyReturnAddress);
  ASSERT_TRUE(FindCodeRange(fn, &lo, &hi));
  EXPECT_LE(lo, fn);
  EXPECT_GT(hi, fn);
  EXPECT_TRUE(FindCodeRange(reinterpret_cast<uintptr_t>(&malloc), &lo, &hi));  // libc
  auto heap = std::make_unique<uint64_t>(0);
  EXPECT_FALSE(FindCodeRange(reinterpret_cast<uintptr_t>(heap.get()), &lo, &hi));
  uint64_t local = 0;
  EXPECT_FALSE(FindCodeRange(reinterpret_cast<uintptr_t>(&local), &lo, &hi));
  EXPECT_EQ(RefreshCodeRanges(), RefreshCodeRanges()) << "nothing loaded in between";
}

TEST(CodeRangesTest, ValidatesReturnAddresses) {
  RefreshCodeRanges();
  const uintptr_t ret = MyReturnAddress();
  EXPECT_TRUE(HasUnwindEntry(ret));
  EXPECT_TRUE(IsValidatedReturnAddress(ret));
  uint64_t local = 0;
  EXPECT_FALSE(IsValidatedReturnAddress(reinterpret_cast<uintptr_t>(&local)));
  EXPECT_FALSE(IsValidatedReturnAddress(0));
  EXPECT_FALSE(HasUnwindEntry(0));
}

}  // namespace
}  // namespace warpscope::cupti_inject
