// SPDX-License-Identifier: Apache-2.0
// The three formats, as CPython's own decoders read them (Objects/codeobject.c of each version;
// Objects/lnotab_notes.txt for 3.9/3.10, Objects/locations.md for 3.11+).
#include "pyframes/line_table.h"

#include <algorithm>

#include "pyframes/layout_tables.h"

namespace warpscope::pyframes {

bool ByteStream::Peek(uint8_t* b) {
  if (failed_ || pos_ >= len_) {
    return false;
  }
  if (pos_ >= buf_start_ + buf_len_) {
    buf_start_ = pos_;
    buf_len_ = std::min(sizeof(buf_), len_ - pos_);
    if (!mem_.Read(addr_ + buf_start_, buf_, buf_len_)) {
      failed_ = true;
      return false;
    }
  }
  *b = buf_[pos_ - buf_start_];
  return true;
}

namespace {

// 3.9 co_lnotab: byte pairs (address increment, signed line increment); the line of `addr` is
// firstlineno plus the line increments of every pair whose cumulated address is <= addr.
int LnotabLine(ByteStream& t, int first, int64_t addr) {
  int line = first;
  int64_t a = 0;
  uint8_t da = 0;
  uint8_t dl = 0;
  while (t.Next(&da)) {
    if (!t.Next(&dl)) {
      break;
    }
    a += da;
    if (a > addr) {
      break;
    }
    line += static_cast<int8_t>(dl);
  }
  return t.failed() ? kBadTable : line;
}

// 3.10 co_linetable: pairs (byte length of the range, signed line delta; -128 = no line);
// empty ranges only carry their line delta.
int LinetableLine(ByteStream& t, int first, int64_t addr) {
  int computed = first;
  int64_t start = 0;
  uint8_t len = 0;
  uint8_t dl = 0;
  while (t.Next(&len)) {
    if (!t.Next(&dl)) {
      break;
    }
    const int8_t delta = static_cast<int8_t>(dl);
    int line = kNoLine;
    if (delta != -128) {
      computed += delta;
      line = computed;
    }
    const int64_t end = start + len;
    if (addr >= start && addr < end) {
      return line;
    }
    start = end;
  }
  return t.failed() ? kBadTable : kNoLine;
}

bool Varint(ByteStream& t, uint32_t* out) {
  uint32_t v = 0;
  uint32_t shift = 0;
  uint8_t b = 0;
  do {
    if (shift > 28 || !t.Next(&b)) {
      return false;
    }
    v |= static_cast<uint32_t>(b & 63) << shift;
    shift += 6;
  } while (b & 64);
  *out = v;
  return true;
}

// 3.11+ location table: entries start with a byte with bit 7 set: bits 3-6 the form, bits 0-2
// the length - 1 in code units (2 bytes). Forms: 15 no location, 14 long (svarint line delta,
// then end line and columns), 13 no columns (svarint line delta), 10-12 one line (delta = form
// - 10, two column bytes), 0-9 short (delta 0, one column byte).
int LocationsLine(ByteStream& t, int first, int64_t addr) {
  int computed = first;
  int64_t start = 0;
  uint8_t b = 0;
  while (t.Next(&b)) {
    if ((b & 0x80) == 0) {
      return kBadTable;
    }
    const int form = (b >> 3) & 15;
    const int64_t end = start + ((b & 7) + 1) * 2;
    int delta = 0;
    if (form == 13 || form == 14) {
      uint32_t v = 0;
      if (!Varint(t, &v)) {
        return kBadTable;
      }
      delta = (v & 1) ? -static_cast<int>(v >> 1) : static_cast<int>(v >> 1);
    } else if (form >= 10 && form <= 12) {
      delta = form - 10;
    }
    computed += delta;
    if (addr >= start && addr < end) {
      return form == 15 ? kNoLine : computed;
    }
    start = end;
    uint8_t next = 0;  // skip the entry's remaining bytes (bit 7 clear)
    while (t.Peek(&next) && (next & 0x80) == 0) {
      t.Next(&next);
    }
  }
  return t.failed() ? kBadTable : kNoLine;
}

}  // namespace

int LineForOffset(uint8_t format, ByteStream& table, int firstlineno, int64_t addr) {
  if (addr < 0) {
    return firstlineno;
  }
  switch (format) {
    case WS_PY_LINES_LNOTAB:
      return LnotabLine(table, firstlineno, addr);
    case WS_PY_LINES_LINETABLE:
      return LinetableLine(table, firstlineno, addr);
    case WS_PY_LINES_LOCATIONS:
      return LocationsLine(table, firstlineno, addr);
    default:
      return kBadTable;
  }
}

}  // namespace warpscope::pyframes
