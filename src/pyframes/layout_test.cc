// SPDX-License-Identifier: Apache-2.0
#include "pyframes/layout.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "pyframes/in_process.h"
#include "pyframes/testing/fake_memory_reader.h"

namespace warpscope::pyframes {
namespace {

TEST(LayoutTest, TablesCoverThreeNineToThreeTwelve) {
  for (int minor : {9, 10, 11, 12}) {
    Layout l;
    ASSERT_EQ(LayoutForVersion(3, minor, &l), LayoutError::kOk) << minor;
    EXPECT_EQ(l.minor, minor);
    EXPECT_GT(l.frame_read_size, 0u);
    EXPECT_GT(l.code_read_size, 0u);
  }
}

TEST(LayoutTest, UnknownVersionsAreRefused) {
  Layout l;
  EXPECT_EQ(LayoutForVersion(3, 8, &l), LayoutError::kUnknownVersion);
  EXPECT_EQ(LayoutForVersion(2, 7, &l), LayoutError::kUnknownVersion);
  EXPECT_EQ(LayoutForVersion(3, 13, &l), LayoutError::kUnknownVersion);  // debug offsets only
  FakeMemoryReader mem;
  EXPECT_EQ(LayoutFromDebugOffsets(mem, 0x1000, 3, 15, &l), LayoutError::kUnknownVersion);
}

// Writes a _Py_DebugOffsets block with the slot indices of `s` and plausible values.
std::vector<uint64_t> DebugOffsets(const WsPyDebugSlots& s, int minor) {
  std::vector<uint64_t> v(s.total, 0);
  std::memcpy(v.data(), "xdebugpy", 8);
  v[s.version] = 0x030000f0ull | (static_cast<uint64_t>(minor) << 16) | (3ull << 24);
  v[s.tstate_size] = 400;
  v[s.tstate_current_frame] = 72;
  v[s.frame_size] = 80;
  v[s.frame_previous] = 8;
  v[s.frame_executable] = 0;
  v[s.frame_instr_ptr] = 56;
  v[s.frame_owner] = 70;
  v[s.code_size] = 220;
  v[s.code_filename] = 112;
  v[s.code_name] = 120;
  v[s.code_qualname] = 128;
  v[s.code_linetable] = 136;
  v[s.code_firstlineno] = 68;
  v[s.code_adaptive] = 200;
  v[s.pyobject_ob_type] = 8;
  v[s.bytes_ob_size] = 16;
  v[s.bytes_ob_sval] = 32;
  v[s.unicode_state] = 32;
  v[s.unicode_length] = 16;
  v[s.unicode_ascii_size] = 40;
  v[s.runtime_size] = 2000;
  v[s.runtime_interpreters_head] = 40;
  v[s.interp_size] = 9000;
  v[s.interp_next] = 0;
  v[s.interp_threads_head] = 72;
  v[s.tstate_next] = 8;
  v[s.tstate_thread_id] = 136;
  v[s.tstate_native_thread_id] = 144;
  return v;
}

LayoutError FromOffsets(const std::vector<uint64_t>& v, int minor, Layout* l) {
  FakeMemoryReader mem;
  mem.Map(0x10000, 128 * 8);
  mem.Write(0x10000, v.data(), v.size() * 8);
  return LayoutFromDebugOffsets(mem, 0x10000, 3, minor, l);
}

TEST(LayoutTest, DebugOffsetsOfThreeThirteenAndThreeFourteen) {
  for (int minor : {13, 14}) {
    const WsPyDebugSlots& s = minor == 13 ? kWsPyDebugSlots313 : kWsPyDebugSlots314;
    Layout l;
    ASSERT_EQ(FromOffsets(DebugOffsets(s, minor), minor, &l), LayoutError::kOk) << minor;
    EXPECT_EQ(l.tstate_frame, 72u);
    EXPECT_EQ(l.frame_instr, 56u);
    EXPECT_EQ(l.code_qualname, 128u);
    EXPECT_EQ(l.unicode_compact_size, 56u);
    EXPECT_EQ(l.owner_not_python, 3);
    EXPECT_EQ(l.code_tag_mask, minor == 14 ? 3u : 0u);  // 3.14: f_executable is a _PyStackRef
    EXPECT_EQ(l.runtime_interpreters_head, 40u);
    EXPECT_EQ(l.interp_threads_head, 72u);
    EXPECT_EQ(l.tstate_next, 8u);
    EXPECT_EQ(l.tstate_native_thread_id, 144u);
  }
}

TEST(LayoutTest, DebugOffsetsThatDoNotFitAreRefused) {
  const WsPyDebugSlots& s = kWsPyDebugSlots313;
  Layout l;
  auto v = DebugOffsets(s, 13);
  v[0] = 0;
  EXPECT_EQ(FromOffsets(v, 13, &l), LayoutError::kBadCookie);
  v = DebugOffsets(s, 13);
  EXPECT_EQ(FromOffsets(v, 14, &l), LayoutError::kVersionMismatch);  // 3.13 block read as 3.14
  v[s.free_threaded] = 1;
  EXPECT_EQ(FromOffsets(v, 13, &l), LayoutError::kFreeThreaded);
  v = DebugOffsets(s, 13);
  v[s.frame_owner] = 4000;  // beyond the frame
  EXPECT_EQ(FromOffsets(v, 13, &l), LayoutError::kImplausible);
  v = DebugOffsets(s, 13);
  v[s.unicode_ascii_size] = 48;  // 3.11's str header: not a 3.13 one
  EXPECT_EQ(FromOffsets(v, 13, &l), LayoutError::kImplausible);
  v = DebugOffsets(s, 13);
  v[s.tstate_native_thread_id] = 400;  // at the thread state's end
  EXPECT_EQ(FromOffsets(v, 13, &l), LayoutError::kImplausible);
  v = DebugOffsets(s, 13);
  v[s.interp_threads_head] = 9000;
  EXPECT_EQ(FromOffsets(v, 13, &l), LayoutError::kImplausible);
  FakeMemoryReader nothing;
  EXPECT_EQ(LayoutFromDebugOffsets(nothing, 0x10000, 3, 13, &l), LayoutError::kUnreadable);
}

TEST(LayoutTest, ParsesPyGetVersion) {
  int major = 0;
  int minor = 0;
  ASSERT_TRUE(ParseVersion("3.10.13 (main, Jan  1 2024) [GCC 12]", &major, &minor));
  EXPECT_EQ(major, 3);
  EXPECT_EQ(minor, 10);
  EXPECT_FALSE(ParseVersion("x3.9", &major, &minor));
  EXPECT_FALSE(ParseVersion("3", &major, &minor));
  EXPECT_FALSE(ParseVersion(nullptr, &major, &minor));
}

TEST(LayoutTest, NoInterpreterInThisTestProcess) {
  InProcessPython py;
  EXPECT_EQ(ProbeInProcess(&py), ProbeResult::kNoPython);
}

}  // namespace
}  // namespace warpscope::pyframes
