// SPDX-License-Identifier: Apache-2.0
#include "pyframes/remote_threads.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pyframes/remote_reader.h"
#include "pyframes/testing/fake_python.h"

namespace warpscope::pyframes {
namespace {

constexpr pid_t kPid = 4242;
constexpr uint32_t kTidOffset = 720;  // where glibc x86-64 keeps struct pthread's tid

// A fake process: _PyRuntime, interpreters and their thread states.
class FakeProcess : public FakePythonMemory {
 public:
  explicit FakeProcess(int minor) : FakePythonMemory(LayoutOf(minor)) {
    py.pid = kPid;
    py.interp = interp;
    py.runtime = Alloc(4096);
  }
  static Layout LayoutOf(int minor) {
    Layout l;
    EXPECT_EQ(LayoutForVersion(3, minor, &l), LayoutError::kOk);
    return l;
  }
  uint64_t Interpreter(uint64_t next = 0) {
    const uint64_t a = Alloc(4096);
    mem.Put<uint64_t>(a + layout().interp_next, next);
    return a;
  }
  void SetInterpreters(uint64_t head) {
    mem.Put<uint64_t>(py.runtime + layout().runtime_interpreters_head, head);
  }
  // A thread state of thread `tid`, pushed at the head of `interp`'s list.
  uint64_t Thread(uint64_t interp, int32_t tid) {
    const uint64_t ts = ThreadState(0);
    uint64_t head = 0;
    EXPECT_TRUE(mem.Read(interp + layout().interp_threads_head, &head, 8));
    mem.Put<uint64_t>(ts + layout().tstate_next, head);
    mem.Put<uint64_t>(interp + layout().interp_threads_head, ts);
    if (layout().tstate_native_thread_id != kNoField) {
      mem.Put<uint64_t>(ts + layout().tstate_native_thread_id, static_cast<uint64_t>(tid));
    } else {
      const uint64_t pthread = Alloc(2304);  // glibc's struct pthread
      mem.Put<uint64_t>(pthread, pthread);   // tcb->tcb: points at itself
      mem.Put<int32_t>(pthread + kTidOffset, tid);
      mem.Put<uint64_t>(ts + layout().tstate_thread_id, pthread);
    }
    return ts;
  }
  std::vector<RemoteThreadState> List(ThreadListStats* st, uint32_t* offset = nullptr) {
    uint32_t local = 0;
    std::vector<RemoteThreadState> out;
    ListThreadStates(py, mem, offset != nullptr ? offset : &local, &out, st);
    return out;
  }

  RemotePython py;
};

TEST(RemoteThreadsTest, ListsEveryInterpretersThreadsWithNativeIds) {
  for (int minor : {11, 12}) {
    FakeProcess p(minor);
    const uint64_t sub = p.Interpreter();
    const uint64_t main = p.Interpreter(sub);
    p.SetInterpreters(main);
    const uint64_t t1 = p.Thread(main, kPid);
    const uint64_t t2 = p.Thread(main, kPid + 1);
    const uint64_t t3 = p.Thread(sub, kPid + 7);
    ThreadListStats st;
    const auto list = p.List(&st);
    ASSERT_EQ(list.size(), 3u) << minor;
    EXPECT_EQ(list[0].tstate, t2);
    EXPECT_EQ(list[0].native_tid, kPid + 1);
    EXPECT_EQ(list[1].tstate, t1);
    EXPECT_EQ(list[1].native_tid, kPid);
    EXPECT_EQ(list[2].tstate, t3);
    EXPECT_EQ(list[2].native_tid, kPid + 7);
    EXPECT_EQ(st.interpreters, 2u);
    EXPECT_FALSE(st.truncated);
    EXPECT_EQ(NativeTidOf(p.py, p.mem, t3, 0), kPid + 7);
  }
}

TEST(RemoteThreadsTest, BeforeThreeElevenTidsComeFromStructPthread) {
  for (int minor : {9, 10}) {
    FakeProcess p(minor);
    const uint64_t main = p.Interpreter();
    p.SetInterpreters(main);
    p.Thread(main, kPid);  // the main thread: its tid is the pid
    const uint64_t worker = p.Thread(main, kPid + 3);
    ThreadListStats st;
    uint32_t offset = 0;
    const auto list = p.List(&st, &offset);
    EXPECT_EQ(offset, kTidOffset) << minor;
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[0].native_tid, kPid + 3);
    EXPECT_EQ(list[1].native_tid, kPid);
    EXPECT_EQ(NativeTidOf(p.py, p.mem, worker, offset), kPid + 3);
    EXPECT_EQ(NativeTidOf(p.py, p.mem, worker, 0), 0);  // not calibrated: unknown
  }
}

TEST(RemoteThreadsTest, CalibrationNeedsTheMainThreadAndDistinctTids) {
  FakeProcess p(10);
  const uint64_t main = p.Interpreter();
  p.SetInterpreters(main);
  p.Thread(main, kPid + 1);  // no thread has the pid's tid: the main thread runs no Python
  p.Thread(main, kPid + 2);
  ThreadListStats st;
  uint32_t offset = 0;
  const auto list = p.List(&st, &offset);
  EXPECT_EQ(offset, 0u);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].native_tid, 0);
  // An offset found earlier that now gives duplicate tids is found again.
  FakeProcess q(10);
  const uint64_t qi = q.Interpreter();
  q.SetInterpreters(qi);
  q.Thread(qi, kPid);
  q.Thread(qi, kPid + 5);
  uint32_t wrong = 8;  // zero in every struct: no plausible tid
  const auto again = q.List(&st, &wrong);
  EXPECT_EQ(wrong, kTidOffset);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].native_tid, kPid + 5);
}

TEST(RemoteThreadsTest, CyclesAndBrokenListsAreBounded) {
  FakeProcess p(12);
  const uint64_t main = p.Interpreter();
  p.SetInterpreters(main);
  const uint64_t a = p.Thread(main, 1);
  const uint64_t b = p.Thread(main, 2);
  p.mem.Put<uint64_t>(a + p.layout().tstate_next, b);  // b -> a -> b -> ...
  ThreadListStats st;
  auto list = p.List(&st);
  EXPECT_TRUE(st.truncated);
  EXPECT_LE(list.size(), 4u);
  // An interpreter list that loops on itself.
  p.mem.Put<uint64_t>(main + p.layout().interp_next, main);
  p.mem.Put<uint64_t>(a + p.layout().tstate_next, 0);
  list = p.List(&st);
  EXPECT_TRUE(st.truncated);
  EXPECT_EQ(st.interpreters, 1u);
  EXPECT_EQ(list.size(), 2u);
  // A thread state pointer into unmapped memory ends that list.
  p.mem.Put<uint64_t>(main + p.layout().interp_next, 0);
  p.mem.Put<uint64_t>(a + p.layout().tstate_next, 0x7fff'0000'0000);
  list = p.List(&st);
  EXPECT_TRUE(st.unreadable);
  EXPECT_EQ(list.size(), 2u);
  // No runtime at all.
  p.py.runtime = 0x10;
  list = p.List(&st);
  EXPECT_TRUE(list.empty());
  EXPECT_TRUE(st.unreadable);
}

TEST(RemoteThreadsTest, ManyThreadsStopAtTheLimit) {
  FakeProcess p(12);
  const uint64_t main = p.Interpreter();
  p.SetInterpreters(main);
  for (int i = 0; i < static_cast<int>(kMaxThreadStates) + 10; ++i) {
    p.Thread(main, 100 + i);
  }
  ThreadListStats st;
  const auto list = p.List(&st);
  EXPECT_EQ(list.size(), kMaxThreadStates);
  EXPECT_TRUE(st.truncated);
}

}  // namespace
}  // namespace warpscope::pyframes

namespace warpscope::pyframes {
namespace {

std::string Collected(const std::vector<PythonFrame>& frames) {
  std::string s;
  for (const PythonFrame& f : frames) {
    s += f.function + (f.eval_entry ? "| " : " ");
  }
  return s;
}

// The collector turns the walker's boundaries into eval_entry marks, keeps an eval-loop call
// whose only frame could not be read as a placeholder, and drops a trailing empty one.
TEST(PythonFrameCollectorTest, MarksEntriesAndKeepsGroupsAligned) {
  FakeProcess p(12);
  const uint64_t base = p.Frame(p.Code("shim", "m.py", 1), 0, 0, /*owner=*/3);  // no Python
  const uint64_t shim0 = p.Frame(p.Code("shim", "m.py", 1), base, 0, 3);
  const uint64_t module = p.Frame(p.Code("<module>", "m.py", 1), shim0, 0);
  const uint64_t shim1 = p.Frame(p.Code("shim", "m.py", 1), module, 0, 3);
  const uint64_t bad_code = p.Alloc(64);  // not a code object: the frame is skipped
  const uint64_t hook = p.Frame(bad_code, shim1, 0);
  const uint64_t shim2 = p.Frame(p.Code("shim", "m.py", 1), hook, 0, 3);
  const uint64_t inner = p.Frame(p.Code("inner", "m.py", 1), shim2, 0);
  std::vector<PythonFrame> frames(1);  // reused: old contents are replaced
  frames[0].function = "stale";
  PythonFrameCollector sink(&frames, 48);
  const WalkStats st = FrameWalker::Walk(p.interp, p.mem, p.ThreadState(inner), p.cache, 48, sink);
  sink.Finish();
  EXPECT_EQ(st.skipped, 1u);
  EXPECT_EQ(Collected(frames), "inner| <unreadable>| <module>| ");
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_TRUE(frames[1].unreadable);
  EXPECT_FALSE(frames[0].unreadable);
  // The limit counts placeholders too.
  PythonFrameCollector two(&frames, 2);
  FrameWalker::Walk(p.interp, p.mem, p.ThreadState(inner), p.cache, 48, two);
  two.Finish();
  EXPECT_EQ(Collected(frames), "inner| <unreadable>| ");
}

}  // namespace
}  // namespace warpscope::pyframes

namespace warpscope::pyframes {
namespace {

TEST(PageCacheReaderTest, ReadsEachPageOnceUntilReset) {
  FakeMemoryReader mem;
  mem.Map(0x10000, 3 * 4096);  // three pages, then unmapped
  for (uint32_t i = 0; i < 3 * 1024; ++i) {
    mem.Put<uint32_t>(0x10000 + 4 * i, i);
  }
  mem.Map(0x20100, 64);  // a small object whose page is not mapped whole
  mem.Put<uint64_t>(0x20100, 77);
  PageCacheReader cache(mem);
  uint32_t v = 0;
  ASSERT_TRUE(cache.Read(0x10000 + 40, &v, 4));
  EXPECT_EQ(v, 10u);
  ASSERT_TRUE(cache.Read(0x10000 + 400, &v, 4));
  EXPECT_EQ(v, 100u);
  EXPECT_EQ(mem.reads(), 1u);  // one page read served both
  // A range over two pages reads the second page only.
  uint32_t two[2];
  ASSERT_TRUE(cache.Read(0x10000 + 4092, two, 8));
  EXPECT_EQ(two[0], 1023u);
  EXPECT_EQ(two[1], 1024u);
  EXPECT_EQ(mem.reads(), 2u);
  // What changed after the page was copied is not seen until Reset.
  mem.Put<uint32_t>(0x10000 + 40, 555);
  ASSERT_TRUE(cache.Read(0x10000 + 40, &v, 4));
  EXPECT_EQ(v, 10u);
  cache.Reset();
  ASSERT_TRUE(cache.Read(0x10000 + 40, &v, 4));
  EXPECT_EQ(v, 555u);
  // A page that cannot be read whole: the range itself is read.
  uint64_t small = 0;
  ASSERT_TRUE(cache.Read(0x20100, &small, 8));
  EXPECT_EQ(small, 77u);
  EXPECT_FALSE(cache.Read(0x20100 + 60, &small, 8));            // crosses the object's end
  EXPECT_FALSE(cache.Read(0x10000 + 3 * 4096 - 4, &small, 8));  // into the unmapped page
  // Larger ranges go straight through.
  std::vector<uint8_t> big(3 * 4096);
  const size_t before = mem.reads();
  ASSERT_TRUE(cache.Read(0x10000, big.data(), big.size()));
  EXPECT_EQ(mem.reads(), before + 1);
  EXPECT_FALSE(cache.Read(0x10, &v, 4));  // not a plausible address: no read at all
  EXPECT_EQ(mem.reads(), before + 1);
  // More pages than it holds: still correct.
  FakeMemoryReader many;
  many.Map(0x100000, 40 * 4096);
  for (uint32_t p = 0; p < 40; ++p) {
    many.Put<uint32_t>(0x100000 + p * 4096, p);
  }
  PageCacheReader small_cache(many);
  for (int round = 0; round < 2; ++round) {
    for (uint32_t p = 0; p < 40; ++p) {
      ASSERT_TRUE(small_cache.Read(0x100000 + p * 4096, &v, 4));
      EXPECT_EQ(v, p);
    }
  }
}

}  // namespace
}  // namespace warpscope::pyframes
