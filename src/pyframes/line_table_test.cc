// SPDX-License-Identifier: Apache-2.0
#include "pyframes/line_table.h"

#include <gtest/gtest.h>

#include <vector>

#include "pyframes/layout_tables.h"
#include "pyframes/testing/fake_memory_reader.h"

namespace warpscope::pyframes {
namespace {

class LineTableTest : public ::testing::Test {
 protected:
  int Line(uint8_t format, const std::vector<uint8_t>& table, int first, int64_t addr) {
    FakeMemoryReader mem;
    mem.Map(0x4000, table.size() + 1);
    mem.Write(0x4000, table.data(), table.size());
    ByteStream s(mem, 0x4000, table.size());
    return LineForOffset(format, s, first, addr);
  }
};

TEST_F(LineTableTest, Lnotab39AddsSignedLineDeltasUpToTheOffset) {
  const std::vector<uint8_t> t = {0, 1, 6, 2, 4, 0xff};
  EXPECT_EQ(Line(WS_PY_LINES_LNOTAB, t, 1, 0), 2);
  EXPECT_EQ(Line(WS_PY_LINES_LNOTAB, t, 1, 5), 2);
  EXPECT_EQ(Line(WS_PY_LINES_LNOTAB, t, 1, 6), 4);
  EXPECT_EQ(Line(WS_PY_LINES_LNOTAB, t, 1, 9), 4);
  EXPECT_EQ(Line(WS_PY_LINES_LNOTAB, t, 1, 10), 3);
  EXPECT_EQ(Line(WS_PY_LINES_LNOTAB, t, 1, -1), 1);
}

TEST_F(LineTableTest, Linetable310RangesWithNoLineMarkers) {
  // [0,6) line 6; empty range: +2; [6,10) no line; [10,12) line 7.
  const std::vector<uint8_t> t = {6, 1, 0, 2, 4, 0x80, 2, 0xff};
  EXPECT_EQ(Line(WS_PY_LINES_LINETABLE, t, 5, 0), 6);
  EXPECT_EQ(Line(WS_PY_LINES_LINETABLE, t, 5, 4), 6);
  EXPECT_EQ(Line(WS_PY_LINES_LINETABLE, t, 5, 6), kNoLine);
  EXPECT_EQ(Line(WS_PY_LINES_LINETABLE, t, 5, 10), 7);
  EXPECT_EQ(Line(WS_PY_LINES_LINETABLE, t, 5, 12), kNoLine);  // past the end
}

TEST_F(LineTableTest, Locations311EveryEntryForm) {
  const std::vector<uint8_t> t = {
      0xE8, 0x02,                    // no columns, 1 unit, +1        [0,2)   line 11
      0xDA, 0x01, 0x05,              // one line (+1), 3 units         [2,8)   line 12
      0xF8,                          // no location, 1 unit            [8,10)  none
      0xF1, 0x07, 0x00, 0x01, 0x02,  // long, 2 units, -3        [10,14) line 9
      0x80, 0x05,                    // short form, 1 unit, +0         [14,16) line 9
      0xE8, 0x48, 0x03,              // no columns, +100 (2-byte varint) [16,18) line 109
  };
  EXPECT_EQ(Line(WS_PY_LINES_LOCATIONS, t, 10, 0), 11);
  EXPECT_EQ(Line(WS_PY_LINES_LOCATIONS, t, 10, 2), 12);
  EXPECT_EQ(Line(WS_PY_LINES_LOCATIONS, t, 10, 7), 12);
  EXPECT_EQ(Line(WS_PY_LINES_LOCATIONS, t, 10, 8), kNoLine);
  EXPECT_EQ(Line(WS_PY_LINES_LOCATIONS, t, 10, 12), 9);
  EXPECT_EQ(Line(WS_PY_LINES_LOCATIONS, t, 10, 14), 9);
  EXPECT_EQ(Line(WS_PY_LINES_LOCATIONS, t, 10, 16), 109);
  EXPECT_EQ(Line(WS_PY_LINES_LOCATIONS, t, 10, 18), kNoLine);
  EXPECT_EQ(Line(WS_PY_LINES_LOCATIONS, t, 10, -2), 10);  // before the first instruction
}

TEST_F(LineTableTest, MalformedOrUnreadableTablesAreReported) {
  EXPECT_EQ(Line(WS_PY_LINES_LOCATIONS, {0x05}, 1, 0), kBadTable);  // no entry-start bit
  EXPECT_EQ(Line(WS_PY_LINES_LOCATIONS, {0xE8, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F}, 1, 0),
            kBadTable);  // a varint that never ends
  FakeMemoryReader mem;  // nothing mapped
  ByteStream s(mem, 0x4000, 10);
  EXPECT_EQ(LineForOffset(WS_PY_LINES_LOCATIONS, s, 1, 0), kBadTable);
  EXPECT_EQ(Line(7, {0x80}, 1, 0), kBadTable);  // unknown format
}

TEST_F(LineTableTest, LongTablesAreStreamedInChunks) {
  std::vector<uint8_t> t;
  for (int i = 0; i < 1000; ++i) {  // 1000 entries of 1 unit, each one line further
    t.push_back(0xE8);
    t.push_back(0x02);
  }
  EXPECT_EQ(Line(WS_PY_LINES_LOCATIONS, t, 0, 2 * 999), 1000);
}

}  // namespace
}  // namespace warpscope::pyframes
