// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/stack_capture.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "cupti_inject/cfi_step.h"
#include "cupti_inject/code_ranges.h"
#include "pyframes/frame_reader.h"
#include "pyframes/in_process.h"
#include "pyframes/memory_reader.h"

namespace warpscope::cupti_inject {
namespace {

// Executable range of the DSO that holds this code.
struct OwnText {
  uintptr_t low = 0;
  uintptr_t high = 0;
};

int FindOwnText(dl_phdr_info* info, size_t, void* data) {
  auto* want = static_cast<std::pair<uintptr_t, OwnText>*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) {
      continue;
    }
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    const uintptr_t hi = lo + ph.p_memsz;
    if (want->first >= lo && want->first < hi) {
      want->second = {lo, hi};
      return 1;
    }
  }
  return 0;
}

const OwnText& GetOwnText() {
  static const OwnText text = [] {
    std::pair<uintptr_t, OwnText> want{reinterpret_cast<uintptr_t>(&FindOwnText), {}};
    dl_iterate_phdr(&FindOwnText, &want);
    return want.second;
  }();
  return text;
}

}  // namespace

StackBounds CurrentThreadStackBounds() {
  StackBounds b;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) {
    return b;
  }
  void* addr = nullptr;
  size_t size = 0;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
    b.low = reinterpret_cast<uintptr_t>(addr);
    b.high = b.low + size;
  }
  pthread_attr_destroy(&attr);
  return b;
}

namespace {

// Follows the rbp chain from `fp` within the bounds; writes the return address of every frame
// record whose return-address slot lies above `above` (0: every record). With `validate`, stops
// at the first such address that is not a validated return address.
size_t WalkFrameRecords(uintptr_t fp, const StackBounds& bounds, uintptr_t above, bool validate,
                        std::span<uint64_t> out) {
  size_t n = 0;
  if (bounds.high == 0) {
    return 0;  // without the stack bounds a bad frame pointer could fault
  }
  const uintptr_t low = std::max(bounds.low, fp);  // frames lie above the current one
  while (n < out.size()) {
    if ((fp & 7) != 0 || fp < low || fp + 16 > bounds.high) {
      break;
    }
    const auto* frame = reinterpret_cast<const uintptr_t*>(fp);
    const uintptr_t next = frame[0];
    const uintptr_t ret = frame[1];
    if (ret == 0) {
      break;
    }
    if (fp + 8 > above) {
      if (validate && !IsValidatedReturnAddress(ret)) {
        break;
      }
      out[n++] = ret;
    }
    if (next <= fp) {
      break;  // the chain must grow toward the stack base
    }
    fp = next;
  }
  return n;
}

struct DwarfState {
  uint64_t* pcs;
  size_t cap;
  size_t n = 0;
  uintptr_t last_cfa = 0;
  uintptr_t last_fp = 0;  // rbp of the last frame, as libgcc restored it
  bool full = false;
};

_Unwind_Reason_Code CollectFrame(_Unwind_Context* ctx, void* arg) {
  auto* s = static_cast<DwarfState*>(arg);
  const uintptr_t ip = _Unwind_GetIP(ctx);
  if (ip == 0) {
    return _URC_END_OF_STACK;
  }
  const uintptr_t cfa = _Unwind_GetCFA(ctx);
  if (s->n > 0 && s->pcs[s->n - 1] == ip && cfa == s->last_cfa) {
    return _URC_END_OF_STACK;  // no progress (as glibc's backtrace checks)
  }
  s->pcs[s->n++] = ip;
  s->last_cfa = cfa;
#if defined(__x86_64__)
  s->last_fp = _Unwind_GetGR(ctx, 6);
#endif
  if (s->n == s->cap) {
    s->full = true;
    return _URC_END_OF_STACK;
  }
  return _URC_NO_REASON;
}

// A chain of callers unwound with their own unwind entries (CfiStep) from the return address in
// `slot`: the frames found, how the walk ended (kOk: `out` is full), the slot of the last return
// address and the registers of the last frame.
struct Chain {
  size_t n = 0;
  CfiStepResult end = CfiStepResult::kOk;
  uintptr_t last_slot = 0;
  CfiRegs regs;
};

Chain ChainFrom(uintptr_t slot, uintptr_t fp, const StackBounds& bounds, std::span<uint64_t> out) {
  Chain c;
  c.regs = {*reinterpret_cast<const uintptr_t*>(slot), slot + 8, fp};
  c.last_slot = slot;
  out[c.n++] = c.regs.pc;
  while (c.n < out.size()) {
    CfiRegs next = c.regs;
    uintptr_t ra_slot = 0;
    c.end = CfiStep(bounds, &next, &ra_slot);
    if (c.end != CfiStepResult::kOk) {
      return c;
    }
    uintptr_t lo = 0;
    uintptr_t hi = 0;
    if (!FindCodeRange(next.pc, &lo, &hi) || !PrecededByCall(next.pc, lo, hi)) {
      c.end = CfiStepResult::kUnsupported;
      return c;
    }
    c.regs = next;
    c.last_slot = ra_slot;
    out[c.n++] = next.pc;
  }
  c.end = CfiStepResult::kOk;
  return c;
}

// The callers of a frame without unwind tables whose own frame starts at `from`. Its caller's
// return address is one of the validated return addresses in the kScanBytes above, but not
// necessarily the first: the frame's uninitialized words may hold stale ones. So each of the
// first kMaxCandidates is unwound on (ChainFrom); the first whose chain reaches the outermost
// frame (or fills `out`) wins, else the longest (the earliest on a tie). A stale return address
// whose chain holds to the end is one whose frame joins the live ones: at most that frame is
// wrong. Candidates whose call instruction is a direct call landing just below `stop_pc` (the
// call that entered the frame without entries) are tried first, so a stale address left in
// that frame by an earlier, unrelated call loses to the real one even when both chains join the
// live frames. Returns the chosen chain written to `out` (n == 0: no candidate).
constexpr uintptr_t kScanBytes = 8192;
constexpr int kMaxCandidates = 8;
constexpr uintptr_t kMaxFunctionBytes = 1 << 20;  // how far below stop_pc its entry may lie

Chain BestChainAbove(uintptr_t from, uintptr_t stop_pc, uintptr_t fp, const StackBounds& bounds,
                     std::span<uint64_t> out) {
  Chain best;
  if (from < bounds.low || from >= bounds.high || out.empty()) {
    return best;
  }
  uint64_t scratch[160];
  std::span<uint64_t> trial(scratch, std::min<size_t>(out.size(), 160));
  const uintptr_t end = std::min(bounds.high, from + kScanBytes);
  for (const bool calls_into_stop : {true, false}) {
    int candidates = 0;
    for (uintptr_t slot = (from + 7) & ~uintptr_t{7};
         slot + 8 <= end && candidates < kMaxCandidates; slot += 8) {
      const uintptr_t ret = *reinterpret_cast<const uintptr_t*>(slot);
      if (!IsValidatedReturnAddress(ret) ||
          DirectCallInto(ret, stop_pc, kMaxFunctionBytes) != calls_into_stop) {
        continue;
      }
      ++candidates;
      const Chain c = ChainFrom(slot, fp, bounds, trial);
      const bool complete = c.end == CfiStepResult::kEnd || c.n == trial.size();
      if (complete || c.n > best.n) {
        best = c;
        std::memcpy(out.data(), scratch, c.n * sizeof(uint64_t));
      }
      if (complete) {
        return best;
      }
    }
  }
  return best;
}

// The stack above a frame without unwind tables: `stop` describes it (its pc, its stack pointer
// when it made the call below it, its rbp). Finds its callers (BestChainAbove); past another
// frame without entries the same way, up to kMaxResumes times; where the callers' entries
// cannot go on, the frame-pointer chain's records above the last frame found, each validated.
// Writes at most out.size().
constexpr int kMaxResumes = 4;

size_t ResumeAbove(uintptr_t fp_now, CfiRegs stop, const StackBounds& bounds,
                   std::span<uint64_t> out) {
  if (bounds.high == 0) {
    return 0;
  }
  size_t n = 0;
  uintptr_t last_slot = 0;
  CfiRegs regs = stop;
  for (int resume = 0; resume < kMaxResumes && n < out.size(); ++resume) {
    // regs.fp stays across the frame without entries: it may have kept rbp.
    const Chain c = BestChainAbove(regs.sp, regs.pc, regs.fp, bounds, out.subspan(n));
    if (c.n == 0) {
      break;
    }
    n += c.n;
    last_slot = c.last_slot;
    regs = c.regs;
    if (c.end == CfiStepResult::kEnd || n == out.size()) {
      return n;
    }
    if (c.end != CfiStepResult::kNoEntry) {
      break;
    }
  }
  if (n == 0) {
    return 0;
  }
  return n + WalkFrameRecords(fp_now, bounds, last_slot, /*validate=*/true, out.subspan(n));
}

}  // namespace

__attribute__((noinline)) size_t FramePointerWalk(const StackBounds& bounds,
                                                  std::span<uint64_t> out) {
  return WalkFrameRecords(reinterpret_cast<uintptr_t>(__builtin_frame_address(0)), bounds, 0,
                          /*validate=*/false, out);
}

__attribute__((noinline)) size_t DwarfWalk(const StackBounds& bounds, std::span<uint64_t> out,
                                           bool* resumed) {
  *resumed = false;
  DwarfState st{out.data(), out.size()};
  if (out.empty()) {
    return 0;
  }
  _Unwind_Backtrace(&CollectFrame, &st);
  // Stopped before the end of the stack at a frame no unwind entry describes (code built without
  // unwind tables): resume above it. A normal end (the outermost frame's entry marks its return
  // address undefined) has an entry.
  if (st.full || st.n == 0 || HasUnwindEntry(st.pcs[st.n - 1])) {
    return st.n;
  }
  // Everything read from here on lies above this frame: the live, mapped part of the stack.
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const StackBounds live{std::max(bounds.low, here), bounds.high};
  const CfiRegs stop{st.pcs[st.n - 1], st.last_cfa, st.last_fp};
  const size_t more = ResumeAbove(here, stop, live, out.subspan(st.n));
  *resumed = more > 0;
  return st.n + more;
}

__attribute__((noinline)) size_t BacktraceWalk(std::span<uint64_t> out) {
  void* frames[128];
  const int want = static_cast<int>(std::min<size_t>(out.size(), 128));
  const int got = backtrace(frames, want);
  for (int i = 0; i < got; ++i) {
    out[i] = reinterpret_cast<uintptr_t>(frames[i]);
  }
  return got > 0 ? static_cast<size_t>(got) : 0;
}

void WarmUpUnwinder() {
  RefreshCodeRanges();
  uint64_t frames[4];
  bool resumed = false;
  DwarfWalk(CurrentThreadStackBounds(), frames, &resumed);
}

size_t CaptureNative(Unwinder unwinder, const StackBounds& bounds, bool skip_own_frames,
                     std::span<uint64_t> out) {
  uint64_t tmp[160];
  const size_t extra = skip_own_frames ? 32 : 0;
  std::span<uint64_t> buf(tmp, std::min<size_t>(out.size() + extra, 160));
  bool resumed = false;
  size_t n = unwinder == Unwinder::kFramePointer ? FramePointerWalk(bounds, buf)
                                                 : DwarfWalk(bounds, buf, &resumed);
  size_t first = 0;
  if (skip_own_frames) {
    const OwnText& own = GetOwnText();
    while (first < n && tmp[first] >= own.low && tmp[first] < own.high) {
      ++first;
    }
  }
  const size_t count = std::min(n - first, out.size());
  std::memcpy(out.data(), tmp + first, count * sizeof(uint64_t));
  return count;
}

// --- Python
// ---------------------------------------------------------------------------------------

namespace {

struct PythonRuntime {
  pyframes::InProcessPython py;
  bool self_reads_work = false;  // process_vm_readv on this process is permitted
};

// Probed at most once per second until an interpreter is found (libpython may be loaded after
// us); an unsupported one turns the walk off for the process.
std::atomic<const PythonRuntime*> g_python{nullptr};
std::atomic<uint64_t> g_python_next_try_ns{0};
std::mutex g_python_mu;
std::atomic<bool> g_python_off{false};
// Set after the first walk with the fault-proof reader type-checked every frame it read.
std::atomic<bool> g_python_validated{false};
std::atomic<uint64_t> g_python_skipped{0};
// The one notice, written before `g_python_notice` is published; taken by the flusher.
char g_python_notice_text[192];
std::atomic<bool> g_python_notice{false};

uint64_t CoarseNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + ts.tv_nsec;
}

const PythonRuntime* GetPython() {
  const PythonRuntime* rt = g_python.load(std::memory_order_acquire);
  if (rt != nullptr || g_python_off.load(std::memory_order_relaxed)) {
    return rt;
  }
  const uint64_t now = CoarseNowNs();
  if (now < g_python_next_try_ns.load(std::memory_order_relaxed)) {
    return nullptr;
  }
  std::unique_lock lock(g_python_mu, std::try_to_lock);
  if (!lock.owns_lock()) {
    return nullptr;
  }
  g_python_next_try_ns.store(now + 1'000'000'000ull, std::memory_order_relaxed);
  // Static storage: probing allocates nothing and the runtime lives as long as the process.
  static PythonRuntime runtime;
  const pyframes::ProbeResult r = pyframes::ProbeInProcess(&runtime.py);
  if (r == pyframes::ProbeResult::kNoPython) {
    return nullptr;
  }
  if (r == pyframes::ProbeResult::kUnsupported) {
    TurnPythonOff(runtime.py.major, runtime.py.minor, pyframes::LayoutErrorName(runtime.py.error));
    return nullptr;
  }
  uint64_t probe = 0x5eed;
  uint64_t back = 0;
  pyframes::ProcessMemoryReader self(getpid());
  runtime.self_reads_work =
      self.Read(reinterpret_cast<uint64_t>(&probe), &back, sizeof(back)) && back == probe;
  g_python.store(&runtime, std::memory_order_release);
  return &runtime;
}

// Copies each frame into the capture's arena (strings cut where the arena ends).
class ArenaSink final : public pyframes::FrameSink {
 public:
  explicit ArenaSink(PythonStack* out) : out_(out) {}
  bool OnFrame(std::string_view function, std::string_view file, uint32_t line) override {
    if (out_->count >= PythonStack::kMaxFrames) {
      return false;
    }
    auto& f = out_->frames[out_->count++];
    f.function = Copy(function);
    f.file = Copy(file);
    f.line = line;
    return true;
  }

 private:
  std::string_view Copy(std::string_view s) {
    const size_t len = std::min(s.size(), PythonStack::kArenaSize - out_->arena_used);
    char* dst = out_->arena + out_->arena_used;
    std::memcpy(dst, s.data(), len);
    out_->arena_used += len;
    return std::string_view(dst, len);
  }
  PythonStack* out_;
};

}  // namespace

void TurnPythonOff(int major, int minor, const char* why) {
  if (g_python_off.exchange(true)) {
    return;
  }
  snprintf(g_python_notice_text, sizeof(g_python_notice_text),
           "Python frames are off: CPython %d.%d: %s (native stacks are unaffected)", major, minor,
           why);
  g_python_notice.store(true, std::memory_order_release);
}

bool PythonAvailable() { return GetPython() != nullptr; }

uint64_t PythonFramesSkipped() { return g_python_skipped.load(std::memory_order_relaxed); }

const char* TakePythonNotice() {
  return g_python_notice.exchange(false, std::memory_order_acquire) ? g_python_notice_text
                                                                    : nullptr;
}

void CapturePython(PythonStack* out) {
  out->count = 0;
  out->arena_used = 0;
  const PythonRuntime* rt = GetPython();
  if (rt == nullptr || g_python_off.load(std::memory_order_relaxed)) {
    return;
  }
  // The GIL-state TSS slot: this thread's state whether or not it holds the GIL; NULL on a
  // thread that never ran Python.
  void* tstate = rt->py.this_thread_state();
  if (tstate == nullptr) {
    return;
  }
  thread_local pyframes::CodeCache cache;
  ArenaSink sink(out);
  // Until one walk has type-checked, read through process_vm_readv (a wrong layout's pointer
  // fails instead of faulting); then by memcpy. getpid() each time: a forked child reads itself.
  const bool validated = g_python_validated.load(std::memory_order_relaxed) || !rt->self_reads_work;
  pyframes::LocalMemoryReader local;
  pyframes::ProcessMemoryReader self(validated ? 0 : getpid());
  pyframes::MemoryReader& mem = validated ? static_cast<pyframes::MemoryReader&>(local) : self;
  const pyframes::WalkStats st = pyframes::FrameWalker::Walk(
      rt->py.interp, mem, reinterpret_cast<uint64_t>(tstate), cache, PythonStack::kMaxFrames, sink);
  if (st.skipped != 0) {
    g_python_skipped.fetch_add(st.skipped, std::memory_order_relaxed);
  }
  if (!validated) {
    if (st.first_code_invalid || (st.chain_broken && st.frames == 0)) {
      out->count = 0;
      out->arena_used = 0;
      TurnPythonOff(rt->py.major, rt->py.minor, "the frames read do not have the expected layout");
    } else if (st.frames > 0 && st.skipped == 0) {
      g_python_validated.store(true, std::memory_order_relaxed);
    }
  }
}

uint64_t HashStack(std::span<const uint64_t> native, const PythonStack* python) {
  uint64_t h = wire::kHashSeed;
  for (uint64_t pc : native) {
    h = (h ^ pc) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  if (python != nullptr) {
    for (size_t i = 0; i < python->count; ++i) {
      const auto& f = python->frames[i];
      h = wire::HashBytes(h, f.function.data(), f.function.size());
      h = wire::HashBytes(h, f.file.data(), f.file.size());
      h = (h ^ f.line) * 0x9e3779b97f4a7c15ull;
    }
  }
  return h == 0 ? 1 : h;
}

}  // namespace warpscope::cupti_inject
