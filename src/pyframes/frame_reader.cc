// SPDX-License-Identifier: Apache-2.0
#include "pyframes/frame_reader.h"

#include <algorithm>
#include <cstring>

#include "pyframes/line_table.h"

namespace warpscope::pyframes {
namespace {

constexpr int64_t kNoOffset = INT64_MIN;
constexpr uint64_t kMaxLineTable = uint64_t{1} << 20;  // bytes; larger tables are not read
constexpr uint8_t kOwnedByGenerator = 1;               // FRAME_OWNED_BY_GENERATOR, 3.11+

uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

int32_t Load32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

bool Aligned(uint64_t addr) { return addr != 0 && (addr & 7) == 0; }

// Length of the longest prefix of s[0, n) that ends on a UTF-8 character boundary.
size_t Utf8Prefix(const char* s, size_t n, size_t full) {
  if (n >= full) {
    return full;
  }
  while (n > 0 && (static_cast<uint8_t>(s[n]) & 0xC0) == 0x80) {
    --n;  // s[n] continues the character that starts before it: cut before that character
  }
  return n;
}

// Appends code point `cp` as UTF-8 if it fits in out[0, kMaxString).
bool PutUtf8(uint32_t cp, char* out, size_t* n) {
  char tmp[4];
  size_t len = 0;
  if (cp < 0x80) {
    tmp[len++] = static_cast<char>(cp);
  } else if (cp < 0x800) {
    tmp[len++] = static_cast<char>(0xC0 | (cp >> 6));
    tmp[len++] = static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    tmp[len++] = static_cast<char>(0xE0 | (cp >> 12));
    tmp[len++] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    tmp[len++] = static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    tmp[len++] = static_cast<char>(0xF0 | ((cp >> 18) & 0x07));
    tmp[len++] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    tmp[len++] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    tmp[len++] = static_cast<char>(0x80 | (cp & 0x3F));
  }
  if (*n + len > kMaxString) {
    return false;
  }
  std::memcpy(out + *n, tmp, len);
  *n += len;
  return true;
}

// The set of `code` in the 2-way cache: a full 64-bit mix (splitmix64's finalizer), so that
// code objects allocated at regular distances (one module's functions) spread over the sets.
size_t Set(uint64_t code) {
  uint64_t x = code >> 3;
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<size_t>(x % CodeCache::kSets);
}

// The line of the frame at byte offset `addr` of `e`'s code: from the entry's small cache or
// the line table.
uint32_t LineOf(const Interpreter& in, MemoryReader& mem, CodeCache::Entry& e, int64_t addr,
                uint64_t* line_misses) {
  for (size_t i = 0; i < CodeCache::kLinesPerEntry; ++i) {
    if (e.line_offset[i] == addr) {
      return static_cast<uint32_t>(std::max(e.line_value[i], 0));
    }
  }
  ++*line_misses;
  const Layout& l = in.layout;
  int line = kBadTable;
  uint8_t head[64];
  if (Aligned(e.linetable) && l.bytes_data <= sizeof(head) &&
      mem.Read(e.linetable, head, l.bytes_data)) {
    const auto size = static_cast<int64_t>(Load64(head + l.bytes_size));
    if (size >= 0 && static_cast<uint64_t>(size) <= kMaxLineTable) {
      ByteStream table(mem, e.linetable + l.bytes_data, static_cast<size_t>(size));
      line = LineForOffset(l.lines, table, e.firstlineno, addr);
    }
  }
  const size_t slot = e.next_line++ % CodeCache::kLinesPerEntry;
  e.line_offset[slot] = addr;
  e.line_value[slot] = line;
  return static_cast<uint32_t>(std::max(line, 0));
}

// Fills `e` for the code object at `code` whose fields were read into `cb`; false when a name
// cannot be read.
bool FillEntry(const Interpreter& in, MemoryReader& mem, uint64_t code, uint64_t name,
               uint64_t filename, uint64_t linetable, const uint8_t* cb, CodeCache::Entry& e) {
  const Layout& l = in.layout;
  e.valid = false;
  const int fn = FrameWalker::ReadString(in, mem, name, e.function);
  const int fl = FrameWalker::ReadString(in, mem, filename, e.file);
  if (fn < 0 || fl < 0) {
    return false;
  }
  e.code = code;
  e.name = name;
  e.filename = filename;
  e.linetable = linetable;
  e.firstlineno = Load32(cb + l.code_firstlineno);
  e.firsttraceable = l.code_firsttraceable != kNoField ? Load32(cb + l.code_firsttraceable) : 0;
  e.function_len = static_cast<uint16_t>(fn);
  e.file_len = static_cast<uint16_t>(fl);
  e.next_line = 0;
  std::fill(std::begin(e.line_offset), std::end(e.line_offset), kNoOffset);
  e.valid = true;
  return true;
}

}  // namespace

void CodeCache::Clear() {
  for (Entry& e : entries_) {
    e.valid = false;
  }
}

int FrameWalker::ReadString(const Interpreter& in, MemoryReader& mem, uint64_t addr,
                            char (&out)[kMaxString]) {
  const Layout& l = in.layout;
  uint8_t h[128];
  // The PyASCIIObject header first: a short ASCII str is smaller than a compact header.
  if (!Aligned(addr) || l.unicode_compact_size > sizeof(h) ||
      !mem.Read(addr, h, l.unicode_ascii_size)) {
    return -1;
  }
  if (Load64(h + 8) != in.unicode_type) {
    return -1;
  }
  const auto length = static_cast<int64_t>(Load64(h + l.unicode_length));
  uint32_t state;
  std::memcpy(&state, h + l.unicode_state, sizeof(state));
  // PyASCIIObject.state bit fields (little-endian, LSB first): interned:2, kind:3, compact:1,
  // ascii:1, then ready:1 (3.9-3.11) or statically_allocated:1 (3.12+).
  const uint32_t kind = (state >> 2) & 7;
  const bool compact = (state >> 5) & 1;
  const bool ascii = (state >> 6) & 1;
  if (length < 0 || !compact || (l.unicode_has_ready && ((state >> 7) & 1) == 0)) {
    return -1;
  }
  if (ascii) {
    const size_t n = std::min<size_t>(static_cast<size_t>(length), kMaxString);
    return mem.Read(addr + l.unicode_ascii_size, out, n) ? static_cast<int>(n) : -1;
  }
  if (!mem.Read(addr + l.unicode_ascii_size, h + l.unicode_ascii_size,
                l.unicode_compact_size - l.unicode_ascii_size)) {
    return -1;
  }
  const uint64_t utf8 = Load64(h + l.unicode_utf8);
  if (utf8 != 0) {  // the UTF-8 form, cached by the interpreter
    const auto full = static_cast<int64_t>(Load64(h + l.unicode_utf8_length));
    if (full < 0) {
      return -1;
    }
    const size_t want = std::min<size_t>(static_cast<size_t>(full), kMaxString);
    char tmp[kMaxString + 1];
    const size_t peek = std::min<size_t>(static_cast<size_t>(full), kMaxString + 1);
    if (!mem.Read(utf8, tmp, peek)) {
      return -1;
    }
    const size_t n = Utf8Prefix(tmp, want, static_cast<size_t>(full));
    std::memcpy(out, tmp, n);
    return static_cast<int>(n);
  }
  if (kind != 1 && kind != 2 && kind != 4) {
    return -1;
  }
  // Latin-1, UCS-2 or UCS-4 code points after the compact header: at most kMaxString of them
  // can fit.
  uint8_t data[kMaxString * 4];
  const size_t count = std::min<size_t>(static_cast<size_t>(length), kMaxString);
  if (!mem.Read(addr + l.unicode_compact_size, data, count * kind)) {
    return -1;
  }
  size_t n = 0;
  for (size_t i = 0; i < count; ++i) {
    uint32_t cp = 0;
    if (kind == 1) {
      cp = data[i];
    } else if (kind == 2) {
      uint16_t c;
      std::memcpy(&c, data + 2 * i, 2);
      cp = c;
    } else {
      std::memcpy(&cp, data + 4 * i, 4);
      if (cp > 0x10FFFF) {
        return -1;
      }
    }
    if (!PutUtf8(cp, out, &n)) {
      break;
    }
  }
  return static_cast<int>(n);
}

// One function on purpose: the walk is a single loop whose steps share the frame's bytes.
WalkStats FrameWalker::Walk(const Interpreter& in, MemoryReader& mem, uint64_t tstate,
                            CodeCache& cache, size_t max_frames, FrameSink& sink) {
  const Layout& l = in.layout;
  WalkStats st;
  uint64_t frame = 0;
  if (!mem.Read(tstate + l.tstate_frame, &frame, sizeof(frame))) {
    st.chain_broken = true;
    return st;
  }
  if (l.frames == WS_PY_FRAMES_CFRAME && frame != 0 &&
      !mem.Read(frame + l.cframe_current_frame, &frame, sizeof(frame))) {
    st.chain_broken = true;
    return st;
  }
  bool first_code = true;
  // Brent's cycle detection: `mark` is a frame seen earlier; a chain that comes back to it
  // loops.
  uint64_t mark = frame;
  size_t power = 1;
  size_t lambda = 0;
  // A boundary after the frame just looked at (3.9/3.10 always, 3.11 is_entry): delivered
  // before the next frame is looked at or at the end of the walk, not when the sink stopped it.
  bool boundary_after = false;
  auto boundary = [&] {
    ++st.eval_boundaries;
    sink.OnEvalBoundary();
  };
  for (size_t steps = 0; frame != 0; ++steps) {
    if (boundary_after) {
      boundary();
      boundary_after = false;
    }
    if (steps >= kMaxSteps || st.frames >= max_frames) {
      st.truncated = true;
      break;
    }
    uint8_t fb[512];
    if (!Aligned(frame) || !mem.Read(frame, fb, l.frame_read_size)) {
      ++st.skipped;
      st.chain_broken = true;
      break;
    }
    const uint64_t next = Load64(fb + l.frame_back);
    frame = next;
    if (next != 0) {
      if (next == mark) {
        st.truncated = true;
        frame = 0;  // report what was read up to the loop, then stop
      } else if (++lambda == power) {
        mark = next;
        power *= 2;
        lambda = 0;
      }
    }
    boundary_after = l.frames == WS_PY_FRAMES_OBJECT ||
                     (l.frame_is_entry != kNoField && fb[l.frame_is_entry] != 0);
    uint8_t owner = 0;
    if (l.frame_owner != kNoField) {
      owner = fb[l.frame_owner];
      if (owner >= l.owner_not_python) {
        ++st.not_python;
        boundary();  // 3.12+: the entry frame a native eval-loop call pushes below its frames
        continue;
      }
    }
    const uint64_t code = Load64(fb + l.frame_code) & ~l.code_tag_mask;
    if (code == 0) {
      ++st.not_python;
      continue;
    }
    uint8_t cb[512];
    if (!Aligned(code) || !mem.Read(code, cb, l.code_read_size)) {
      ++st.skipped;
      st.first_code_invalid |= first_code;
      first_code = false;
      continue;
    }
    if (Load64(cb + 8) != in.code_type) {
      if (l.minor >= 13) {
        ++st.not_python;  // 3.13+: f_executable may be another object than code (None)
        continue;
      }
      ++st.skipped;
      st.first_code_invalid |= first_code;
      first_code = false;
      continue;
    }
    first_code = false;
    const uint64_t name =
        Load64(cb + (l.code_qualname != kNoField ? l.code_qualname : l.code_name));
    const uint64_t filename = Load64(cb + l.code_filename);
    const uint64_t linetable = Load64(cb + l.code_linetable);
    const size_t set = Set(code);
    auto matches = [&](const CodeCache::Entry& c) {
      return c.valid && c.code == code && c.name == name && c.filename == filename &&
             c.linetable == linetable;
    };
    size_t way = matches(cache.entries_[2 * set])       ? 0
                 : matches(cache.entries_[2 * set + 1]) ? 1
                                                        : 2;
    const bool hit = way < 2;
    if (!hit) {
      way = cache.recent_[set] ^ 1;  // replace the way used less recently
    }
    cache.recent_[set] = static_cast<uint8_t>(way);
    CodeCache::Entry& e = cache.entries_[2 * set + way];
    if (hit) {
      ++cache.hits_;
    } else {
      ++cache.misses_;
      if (!FillEntry(in, mem, code, name, filename, linetable, cb, e)) {
        ++st.skipped;
        continue;
      }
    }
    int64_t addr = 0;
    if (l.frame_lasti != kNoField) {
      const int32_t lasti = Load32(fb + l.frame_lasti);
      addr = l.minor >= 10 && lasti >= 0 ? int64_t{lasti} * 2 : lasti;  // 3.10: code units
    } else {
      const uint64_t instr = Load64(fb + l.frame_instr);
      addr = static_cast<int64_t>(instr - (code + l.code_adaptive));
      // An incomplete frame (3.11/3.12 _PyFrame_IsIncomplete): pushed but not yet past its
      // prologue; the interpreter's own tracebacks skip it too.
      if (l.code_firsttraceable != kNoField && owner != kOwnedByGenerator &&
          addr < int64_t{e.firsttraceable} * 2) {
        ++st.not_python;
        continue;
      }
    }
    const uint32_t line = LineOf(in, mem, e, addr, &cache.line_misses_);
    ++st.frames;
    if (!sink.OnFrame(std::string_view(e.function, e.function_len),
                      std::string_view(e.file, e.file_len), line)) {
      boundary_after = false;
      break;
    }
  }
  if (boundary_after) {
    boundary();
  }
  return st;
}

}  // namespace warpscope::pyframes
