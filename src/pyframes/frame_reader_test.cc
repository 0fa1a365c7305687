// SPDX-License-Identifier: Apache-2.0
#include "pyframes/frame_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pyframes/testing/fake_python.h"

namespace warpscope::pyframes {
namespace {

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

// The fake interpreter with a walk that collects the frames.
class FakePython : public FakePythonMemory {
 public:
  using FakePythonMemory::FakePythonMemory;
  WalkStats Walk(uint64_t tstate, std::vector<Got>* out, size_t max = 48) {
    CollectSink sink;
    const WalkStats st = FrameWalker::Walk(interp, mem, tstate, cache, max, sink);
    *out = sink.frames;
    return st;
  }
};

// Frame names with "|" where the walker reports an eval-loop boundary.
class BoundarySink final : public FrameSink {
 public:
  explicit BoundarySink(size_t stop_after = 1000) : stop_after_(stop_after) {}
  bool OnFrame(std::string_view function, std::string_view, uint32_t) override {
    text += std::string(function) + " ";
    return --stop_after_ > 0;
  }
  void OnEvalBoundary() override { text += "| "; }
  std::string text;

 private:
  size_t stop_after_;
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

// Two code objects on one stack never evict each other, wherever they were allocated (a
// direct-mapped cache loses both, on every walk, when they share a slot).
TEST(FrameReaderTest, TwoCodeObjectsAlwaysStayCached) {
  FakePython py(Py(12));
  std::vector<uint64_t> codes;
  for (int i = 0; i < 24; ++i) {
    codes.push_back(py.Code("f" + std::to_string(i), "m.py", 1));
  }
  std::vector<Got> got;
  for (size_t i = 0; i < codes.size(); ++i) {
    for (size_t j = i + 1; j < codes.size(); ++j) {
      const uint64_t outer = py.Frame(codes[i], 0, 0);
      const uint64_t tstate = py.ThreadState(py.Frame(codes[j], outer, 0));
      py.cache.Clear();
      py.Walk(tstate, &got);
      const uint64_t misses = py.cache.misses();
      py.Walk(tstate, &got);
      ASSERT_EQ(py.cache.misses(), misses) << i << " " << j;
      ASSERT_EQ(got.size(), 2u);
    }
  }
}

TEST(FrameReaderTest, EvalBoundariesFollowEveryFrameBeforeThreeEleven) {
  FakePython py(Py(10));
  const uint64_t module = py.Frame(py.Code("<module>", "m.py", 1), 0, 0);
  const uint64_t outer = py.Frame(py.Code("outer", "m.py", 1), module, 0);
  const uint64_t inner = py.Frame(py.Code("inner", "m.py", 1), outer, 0);
  BoundarySink sink;
  const WalkStats st =
      FrameWalker::Walk(py.interp, py.mem, py.ThreadState(inner), py.cache, 48, sink);
  EXPECT_EQ(sink.text, "inner | outer | <module> | ");
  EXPECT_EQ(st.eval_boundaries, 3u);
}

TEST(FrameReaderTest, EvalBoundariesAtIsEntryFramesInThreeEleven) {
  FakePython py(Py(11));
  const uint64_t module = py.Frame(py.Code("<module>", "m.py", 1), 0, 0);
  const uint64_t outer = py.Frame(py.Code("outer", "m.py", 1), module, 0);
  const uint64_t middle = py.Frame(py.Code("middle", "m.py", 1), outer, 0);  // called from C
  const uint64_t inner = py.Frame(py.Code("inner", "m.py", 1), middle, 0);
  py.MarkEntry(module);
  py.MarkEntry(middle);
  BoundarySink sink;
  FrameWalker::Walk(py.interp, py.mem, py.ThreadState(inner), py.cache, 48, sink);
  EXPECT_EQ(sink.text, "inner middle | outer <module> | ");
  // A walk the sink stops reports no boundary after its last frame.
  BoundarySink stopped(2);
  FrameWalker::Walk(py.interp, py.mem, py.ThreadState(inner), py.cache, 48, stopped);
  EXPECT_EQ(stopped.text, "inner middle ");
  // The depth limit keeps the boundaries of the frames it reported.
  BoundarySink limited;
  FrameWalker::Walk(py.interp, py.mem, py.ThreadState(inner), py.cache, 2, limited);
  EXPECT_EQ(limited.text, "inner middle | ");
}

TEST(FrameReaderTest, EvalBoundariesAtCStackEntryFramesFromThreeTwelve) {
  FakePython py(Py(12));
  const uint64_t shim0 = py.Frame(py.Code("shim", "m.py", 1), 0, 0, /*owner=*/3);
  const uint64_t module = py.Frame(py.Code("<module>", "m.py", 1), shim0, 0);
  const uint64_t outer = py.Frame(py.Code("outer", "m.py", 1), module, 0);
  const uint64_t shim1 = py.Frame(py.Code("shim", "m.py", 1), outer, 0, /*owner=*/3);
  const uint64_t middle = py.Frame(py.Code("middle", "m.py", 1), shim1, 0);
  const uint64_t inner = py.Frame(py.Code("inner", "m.py", 1), middle, 0);
  BoundarySink sink;
  const WalkStats st =
      FrameWalker::Walk(py.interp, py.mem, py.ThreadState(inner), py.cache, 48, sink);
  EXPECT_EQ(sink.text, "inner middle | outer <module> | ");
  EXPECT_EQ(st.not_python, 2u);
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
