// SPDX-License-Identifier: Apache-2.0
// Instruction offset -> line number from a code object's line table, in the three formats
// CPython has used (layout_tables.h WS_PY_LINES_*), reading the table through a MemoryReader in
// small chunks (no allocation).
#ifndef WARPSCOPE_PYFRAMES_LINE_TABLE_H_
#define WARPSCOPE_PYFRAMES_LINE_TABLE_H_

#include <cstddef>
#include <cstdint>

#include "pyframes/memory_reader.h"

namespace warpscope::pyframes {

// Sequential reader of `len` bytes at `addr`, 128 bytes per Read.
class ByteStream {
 public:
  ByteStream(MemoryReader& mem, uint64_t addr, size_t len) : mem_(mem), addr_(addr), len_(len) {}
  // The next byte without consuming it; false at the end or when a read fails (see failed()).
  bool Peek(uint8_t* b);
  bool Next(uint8_t* b) {
    if (!Peek(b)) {
      return false;
    }
    ++pos_;
    return true;
  }
  bool failed() const { return failed_; }

 private:
  MemoryReader& mem_;
  uint64_t addr_;
  size_t len_;
  size_t pos_ = 0;
  size_t buf_start_ = 0;
  size_t buf_len_ = 0;
  bool failed_ = false;
  uint8_t buf_[128];
};

inline constexpr int kNoLine = -1;    // the offset has no line (e.g. artificial instructions)
inline constexpr int kBadTable = -2;  // the table could not be read or is malformed

// The line of the instruction at byte offset `addr` (offsets < 0 give firstlineno, as
// PyCode_Addr2Line does). `format` is WS_PY_LINES_*; `table` streams the table's payload.
int LineForOffset(uint8_t format, ByteStream& table, int firstlineno, int64_t addr);

}  // namespace warpscope::pyframes

#endif  // WARPSCOPE_PYFRAMES_LINE_TABLE_H_
