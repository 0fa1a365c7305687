// SPDX-License-Identifier: Apache-2.0
#include "pyframes/frame_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pyframes/testing/fake_memory_reader.h"

namespace warpscope::pyframes {
namespace {

constexpr uint64_t kCodeType = 0x7000'0000'1000;
constexpr uint64_t kUnicodeType = 0x7000'0000'2000;

struct Got {
  std::string function;
  std::string file;
  uint32_t line;
  bool operator==(const Got&) const = default;
};

class CollectSink final : public FrameSink {
 public:
  bool OnFrame(std::string_view function, std::string_view file, uint32_t line) override {
    frames.push_back({std::string(function), std::string(file), line});
    return true;
  }
  std::vector<Got> frames;
};

// Lays out CPython objects of one layout in a fake address space, each in its own region so
// that a pointer past an object reads unmapped memory.
class FakePython {
 public:
  explicit FakePython(const Layout& l) : l_(l) {
    interp.layout = l;
    interp.code_type = kCodeType;
    interp.unicode_type = kUnicodeType;
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
    mem.Put<uint64_t>(a + 8, kUnicodeType);
    mem.Put<int64_t>(a + l_.unicode_length, static_cast<int64_t>(ascii.size()));
    mem.Put<uint32_t>(a + l_.unicode_state, (1u << 2) | (1u << 5) | (1u << 6) | (1u << 7));
    mem.Write(a + l_.unicode_ascii_size, ascii.data(), ascii.size());
    return a;
  }
  uint64_t WideStr(const std::vector<uint32_t>& cps, uint32_t kind) {
    const uint64_t a = Alloc(l_.unicode_compact_size + cps.size() * kind);
    mem.Put<uint64_t>(a + 8, kUnicodeType);
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
    mem.Put<uint64_t>(a + 8, kCodeType);
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
    const uint64_t ts = Alloc(l_.tstate_frame + 8);
    mem.Put<uint64_t>(ts + l_.tstate_frame, l_.frames == WS_PY_FRAMES_CFRAME ? cframe : frame);
    return ts;
  }

  WalkStats Walk(uint64_t tstate, std::vector<Got>* out, size_t max = 48) {
    CollectSink sink;
    const WalkStats st = FrameWalker::Walk(interp, mem, tstate, cache, max, sink);
    *out = sink.frames;
    return st;
  }

  Interpreter interp;
  FakeMemoryReader mem;
  CodeCache cache;

 private:
  const Layout l_;
  uint64_t next_ = 0x10'0000;
};

Layout Py(int minor) {
  Layout l;
  EXPECT_EQ(LayoutForVersion(3, minor, &l), LayoutError::kOk);
  return l;
}

TEST(FrameReaderTest, ReadsNamesFilesAndLinesInnermostFirst) {
  FakePython py(Py(11));
  const uint64_t main = py.Frame(py.Code("<module>", "train.py", 1), 0, 0);
  const uint64_t step = py.Frame(py.Code("Trainer.step", "train.py", 20), main, 3);
  const uint64_t fwd = py.Frame(py.Code("forward", "model.py", 40), step, 9);
  std::vector<Got> got;
  const WalkStats st = py.Walk(py.ThreadState(fwd), &got);
  EXPECT_EQ(st.frames, 3u);
  EXPECT_EQ(st.skipped, 0u);
  EXPECT_FALSE(st.truncated);
  EXPECT_EQ(got, (std::vector<Got>{{"forward", "model.py", 50},
                                   {"Trainer.step", "train.py", 24},
                                   {"<module>", "train.py", 2}}));
}

TEST(FrameReaderTest, ARepeatedSiteIsServedFromTheCache) {
  FakePython py(Py(12));
  const uint64_t f = py.Frame(py.Code("f", "a.py", 1), py.Frame(py.Code("g", "a.py", 9), 0, 1), 2);
  const uint64_t ts = py.ThreadState(f);
  std::vector<Got> first;
  std::vector<Got> second;
  py.Walk(ts, &first);
  const size_t reads_before = py.mem.reads();
  py.Walk(ts, &second);
  EXPECT_EQ(first, second);
  EXPECT_EQ(py.cache.misses(), 2u);
  EXPECT_EQ(py.cache.hits(), 2u);
  EXPECT_EQ(py.cache.line_misses(), 2u);
  // Warm: thread state, cframe, then per frame one frame read and one code read.
  EXPECT_EQ(py.mem.reads() - reads_before, 2u + 2 * 2);
}

TEST(FrameReaderTest, AReusedCodeAddressWithOtherNamesIsNotServedStale) {
  FakePython py(Py(11));
  const uint64_t code = py.Code("old", "a.py", 1);
  const uint64_t ts = py.ThreadState(py.Frame(code, 0, 0));
  std::vector<Got> got;
  py.Walk(ts, &got);
  ASSERT_EQ(got.at(0).function, "old");
  py.mem.Put<uint64_t>(code + py.interp.layout.code_qualname, py.Str("new"));
  py.Walk(ts, &got);
  EXPECT_EQ(got.at(0).function, "new");
}

TEST(FrameReaderTest, CorruptedCodePointersAreSkippedAndCounted) {
  FakePython py(Py(11));
  const uint64_t main = py.Frame(py.Code("<module>", "m.py", 1), 0, 0);
  const uint64_t bad_type = py.Code("x", "m.py", 1);
  py.mem.Put<uint64_t>(bad_type + 8, 0x1234);  // not PyCode_Type
  const uint64_t mid = py.Frame(bad_type, main, 0);
  const uint64_t inner = py.Frame(0xdead'0000, mid, 0);  // unmapped code object
  std::vector<Got> got;
  const WalkStats st = py.Walk(py.ThreadState(inner), &got);
  EXPECT_EQ(st.skipped, 2u);
  EXPECT_TRUE(st.first_code_invalid);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].function, "<module>");
}

TEST(FrameReaderTest, UnreadableStringsSkipTheFrame) {
  FakePython py(Py(11));
  const uint64_t not_str = py.Str("f");
  py.mem.Put<uint64_t>(not_str + 8, 0x999);  // wrong type
  const uint64_t code = py.CodeWith(not_str, py.Str("a.py"), 1, py.Bytes({0xE8, 0x02}));
  std::vector<Got> got;
  const WalkStats st = py.Walk(py.ThreadState(py.Frame(code, 0, 0)), &got);
  EXPECT_EQ(st.skipped, 1u);
  EXPECT_FALSE(st.first_code_invalid);  // the code object itself was fine
  EXPECT_TRUE(got.empty());
}

TEST(FrameReaderTest, ABrokenChainEndsTheWalk) {
  FakePython py(Py(11));
  const uint64_t f = py.Frame(py.Code("f", "a.py", 1), 0xbad'0000, 0);  // unmapped back
  std::vector<Got> got;
  const WalkStats st = py.Walk(py.ThreadState(f), &got);
  EXPECT_EQ(got.size(), 1u);
  EXPECT_TRUE(st.chain_broken);
  EXPECT_EQ(st.skipped, 1u);
  FakeMemoryReader empty;
  CollectSink sink;
  EXPECT_TRUE(FrameWalker::Walk(py.interp, empty, 0x5000, py.cache, 48, sink).chain_broken);
  // A misaligned frame pointer is not followed.
  const uint64_t odd = py.Frame(py.Code("g", "a.py", 1), f + 3, 0);
  EXPECT_TRUE(py.Walk(py.ThreadState(odd), &got).chain_broken);
}

TEST(FrameReaderTest, CyclesStop) {
  FakePython py(Py(11));
  const uint64_t code = py.Code("loop", "a.py", 1);
  const uint64_t a = py.Frame(code, 0, 0);
  const uint64_t b = py.Frame(code, a, 0);
  const uint64_t c = py.Frame(code, b, 0);
  py.mem.Put<uint64_t>(a + py.interp.layout.frame_back, c);  // c -> b -> a -> c
  std::vector<Got> got;
  const WalkStats st = py.Walk(py.ThreadState(c), &got, 1000);
  EXPECT_TRUE(st.truncated);
  EXPECT_LE(got.size(), 8u);
  const uint64_t self = py.Frame(code, 0, 0);
  py.mem.Put<uint64_t>(self + py.interp.layout.frame_back, self);
  EXPECT_TRUE(py.Walk(py.ThreadState(self), &got, 1000).truncated);
  EXPECT_EQ(got.size(), 1u);
}

TEST(FrameReaderTest, DepthIsLimited) {
  FakePython py(Py(12));
  const uint64_t code = py.Code("r", "a.py", 1);
  uint64_t f = 0;
  for (int i = 0; i < 100; ++i) {
    f = py.Frame(code, f, i % 10);
  }
  std::vector<Got> got;
  const WalkStats st = py.Walk(py.ThreadState(f), &got, 48);
  EXPECT_EQ(got.size(), 48u);
  EXPECT_TRUE(st.truncated);
  EXPECT_EQ(py.cache.misses(), 1u);
  // Without a limit, at most kMaxSteps frames are looked at.
  EXPECT_EQ(py.Walk(py.ThreadState(f), &got, 1000).frames, 100u);
}

TEST(FrameReaderTest, InterpreterEntryAndIncompleteFramesAreNotReported) {
  FakePython py(Py(12));
  const uint64_t main = py.Frame(py.Code("<module>", "m.py", 1), 0, 1);
  const uint64_t entry = py.Frame(py.Code("shim", "m.py", 1), main, 0, /*owner=*/3);
  const uint64_t code = py.Code("starting", "m.py", 1);
  py.mem.Put<int32_t>(code + py.interp.layout.code_firsttraceable, 4);
  const uint64_t incomplete = py.Frame(code, entry, 2);  // before its first traceable unit
  std::vector<Got> got;
  const WalkStats st = py.Walk(py.ThreadState(incomplete), &got);
  EXPECT_EQ(st.not_python, 2u);
  EXPECT_EQ(st.skipped, 0u);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].function, "<module>");
}

TEST(FrameReaderTest, ThreeNineFramesUseLastiAndLnotab) {
  FakePython py(Py(9));
  const Layout& l = py.interp.layout;
  const uint64_t code =
      py.CodeWith(py.Str("f"), py.Str("a.py"), 10, py.Bytes({0, 1, 6, 2}));  // 0-5: 11, 6+: 13
  const uint64_t frame = py.Alloc(l.frame_read_size);
  py.mem.Put<uint64_t>(frame + l.frame_code, code);
  py.mem.Put<int32_t>(frame + l.frame_lasti, 8);  // bytes in 3.9
  std::vector<Got> got;
  py.Walk(py.ThreadState(frame), &got);
  EXPECT_EQ(got, (std::vector<Got>{{"f", "a.py", 13}}));
}

TEST(FrameReaderTest, ThreeFourteenTaggedExecutable) {
  Layout l = Py(12);  // 3.12 offsets with 3.14's tagged f_executable
  l.code_tag_mask = 3;
  FakePython py(l);
  const uint64_t f = py.Frame(py.Code("tagged", "a.py", 1), 0, 0, 0, /*tag=*/1);
  std::vector<Got> got;
  py.Walk(py.ThreadState(f), &got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].function, "tagged");
}

TEST(FrameReaderTest, NonAsciiStringsBecomeUtf8AndLongOnesAreCut) {
  FakePython py(Py(12));
  char out[kMaxString];
  const uint64_t latin = py.WideStr({'c', 0xE9}, 1);  // "cé"
  ASSERT_EQ(FrameWalker::ReadString(py.interp, py.mem, latin, out), 3);
  EXPECT_EQ(std::string(out, 3), "c\xC3\xA9");
  const uint64_t ucs2 = py.WideStr({0x4E2D, 0x6587}, 2);  // "中文"
  ASSERT_EQ(FrameWalker::ReadString(py.interp, py.mem, ucs2, out), 6);
  EXPECT_EQ(std::string(out, 6), "\xE4\xB8\xAD\xE6\x96\x87");
  const uint64_t ucs4 = py.WideStr({0x1F600}, 4);
  ASSERT_EQ(FrameWalker::ReadString(py.interp, py.mem, ucs4, out), 4);
  // 100 three-byte characters: cut at 85 whole characters (255 bytes), never mid-character.
  const uint64_t long_cjk = py.WideStr(std::vector<uint32_t>(100, 0x4E2D), 2);
  EXPECT_EQ(FrameWalker::ReadString(py.interp, py.mem, long_cjk, out), 255);
  const uint64_t long_ascii = py.Str(std::string(1000, 'x'));
  EXPECT_EQ(FrameWalker::ReadString(py.interp, py.mem, long_ascii, out), 256);
  // The interpreter's cached UTF-8 form is used when present.
  const uint64_t cached = py.WideStr({0xE9}, 1);
  const uint64_t utf8 = py.Alloc(8);
  py.mem.Write(utf8, "\xC3\xA9", 2);
  py.mem.Put<uint64_t>(cached + py.interp.layout.unicode_utf8, utf8);
  py.mem.Put<int64_t>(cached + py.interp.layout.unicode_utf8_length, 2);
  ASSERT_EQ(FrameWalker::ReadString(py.interp, py.mem, cached, out), 2);
  EXPECT_EQ(FrameWalker::ReadString(py.interp, py.mem, 0x10, out), -1);
}

}  // namespace
}  // namespace warpscope::pyframes
