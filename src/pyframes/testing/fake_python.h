// SPDX-License-Identifier: Apache-2.0
// CPython objects of one layout laid out in a FakeMemoryReader: str, bytes, code objects,
// frames and thread states, for the frame reader's and the remote reader's unit tests.
// Test-only (allocates).
#ifndef WARPSCOPE_PYFRAMES_TESTING_FAKE_PYTHON_H_
#define WARPSCOPE_PYFRAMES_TESTING_FAKE_PYTHON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "pyframes/frame_reader.h"
#include "pyframes/layout.h"
#include "pyframes/testing/fake_memory_reader.h"

namespace warpscope::pyframes {

inline constexpr uint64_t kFakeCodeType = 0x7000'0000'1000;
inline constexpr uint64_t kFakeUnicodeType = 0x7000'0000'2000;

// Lays out CPython objects of one layout in a fake address space, each in its own region so
// that a pointer past an object reads unmapped memory.
class FakePythonMemory {
 public:
  explicit FakePythonMemory(const Layout& l) : l_(l) {
    interp.layout = l;
    interp.code_type = kFakeCodeType;
    interp.unicode_type = kFakeUnicodeType;
  }

  uint64_t Alloc(size_t size) {
    const uint64_t a = next_;
    next_ += (size + 0xfff) / 0x1000 * 0x1000 + 0x1000;  // a gap after each object
    mem.Map(a, size);
    return a;
  }

  // A compact ASCII str, or a compact non-ASCII one of `kind` (1, 2 or 4) code points.
  uint64_t Str(const std::string& ascii) {
    const uint64_t a = Alloc(l_.unicode_ascii_size + ascii.size() + 1);
    mem.Put<uint64_t>(a + 8, kFakeUnicodeType);
    mem.Put<int64_t>(a + l_.unicode_length, static_cast<int64_t>(ascii.size()));
    mem.Put<uint32_t>(a + l_.unicode_state, (1u << 2) | (1u << 5) | (1u << 6) | (1u << 7));
    mem.Write(a + l_.unicode_ascii_size, ascii.data(), ascii.size());
    return a;
  }
  uint64_t WideStr(const std::vector<uint32_t>& cps, uint32_t kind) {
    const uint64_t a = Alloc(l_.unicode_compact_size + cps.size() * kind);
    mem.Put<uint64_t>(a + 8, kFakeUnicodeType);
    mem.Put<int64_t>(a + l_.unicode_length, static_cast<int64_t>(cps.size()));
    mem.Put<uint32_t>(a + l_.unicode_state, (kind << 2) | (1u << 5) | (1u << 7));
    for (size_t i = 0; i < cps.size(); ++i) {
      mem.Write(a + l_.unicode_compact_size + i * kind, &cps[i], kind);  // little-endian
    }
    return a;
  }
  uint64_t Bytes(const std::vector<uint8_t>& b) {
    const uint64_t a = Alloc(l_.bytes_data + b.size() + 1);
    mem.Put<int64_t>(a + l_.bytes_size, static_cast<int64_t>(b.size()));
    mem.Write(a + l_.bytes_data, b.data(), b.size());
    return a;
  }
  // A code object whose line table gives line first + 1 + i to code unit i (10 units).
  uint64_t Code(const std::string& name, const std::string& file, int first) {
    std::vector<uint8_t> table;
    for (int i = 0; i < 10; ++i) {
      table.push_back(0xE8);  // 3.11+: no-columns entry, 1 unit, line +1
      table.push_back(0x02);
    }
    return CodeWith(Str(name), Str(file), first, Bytes(table));
  }
  uint64_t CodeWith(uint64_t name, uint64_t file, int first, uint64_t table) {
    const uint64_t a = Alloc(l_.code_adaptive + 64);
    mem.Put<uint64_t>(a + 8, kFakeCodeType);
    mem.Put<uint64_t>(a + l_.code_qualname, name);
    mem.Put<uint64_t>(a + l_.code_name, name);
    mem.Put<uint64_t>(a + l_.code_filename, file);
    mem.Put<uint64_t>(a + l_.code_linetable, table);
    mem.Put<int32_t>(a + l_.code_firstlineno, first);
    if (l_.code_firsttraceable != kNoField) {
      mem.Put<int32_t>(a + l_.code_firsttraceable, 0);
    }
    return a;
  }
  // A frame executing code unit `unit` of `code`.
  uint64_t Frame(uint64_t code, uint64_t back, int unit, uint8_t owner = 0, uint64_t tag = 0) {
    const uint64_t a = Alloc(l_.frame_read_size);
    mem.Put<uint64_t>(a + l_.frame_code, code | tag);
    mem.Put<uint64_t>(a + l_.frame_back, back);
    mem.Put<uint64_t>(a + l_.frame_instr, code + l_.code_adaptive + 2 * unit);
    mem.Put<uint8_t>(a + l_.frame_owner, owner);
    return a;
  }
  uint64_t ThreadState(uint64_t frame) {
    const uint64_t cframe = Alloc(16);
    mem.Put<uint64_t>(cframe + l_.cframe_current_frame, frame);
    const uint64_t ts = Alloc(512);
    mem.Put<uint64_t>(ts + l_.tstate_frame, l_.frames == WS_PY_FRAMES_CFRAME ? cframe : frame);
    return ts;
  }
  // 3.11: marks `frame` as the one a native eval-loop call began with.
  void MarkEntry(uint64_t frame) { mem.Put<uint8_t>(frame + l_.frame_is_entry, 1); }

  const Layout& layout() const { return l_; }

  Interpreter interp;
  FakeMemoryReader mem;
  CodeCache cache;

 private:
  const Layout l_;
  uint64_t next_ = 0x10'0000;
};

}  // namespace warpscope::pyframes

#endif  // WARPSCOPE_PYFRAMES_TESTING_FAKE_PYTHON_H_
