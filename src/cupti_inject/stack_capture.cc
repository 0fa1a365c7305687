// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/stack_capture.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

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

__attribute__((noinline)) size_t FramePointerWalk(const StackBounds& bounds,
                                                  std::span<uint64_t> out) {
  auto fp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
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
    out[n++] = ret;
    if (next <= fp) {
      break;  // the chain must grow toward the stack base
    }
    fp = next;
  }
  return n;
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
  void* frames[4];
  backtrace(frames, 4);
}

size_t CaptureNative(Unwinder unwinder, const StackBounds& bounds, bool skip_own_frames,
                     std::span<uint64_t> out) {
  uint64_t tmp[160];
  const size_t extra = skip_own_frames ? 32 : 0;
  std::span<uint64_t> buf(tmp, std::min<size_t>(out.size() + extra, 160));
  size_t n = unwinder == Unwinder::kFramePointer ? FramePointerWalk(bounds, buf)
                                                  : BacktraceWalk(buf);
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

// --- Python ---------------------------------------------------------------------------------------

namespace {

using PyObj = void;
struct PythonApi {
  int (*Py_IsInitialized)() = nullptr;
  int (*PyGILState_Check)() = nullptr;
  void* (*PyGILState_GetThisThreadState)() = nullptr;
  PyObj* (*PyEval_GetFrame)() = nullptr;
  PyObj* (*PyFrame_GetCode)(PyObj*) = nullptr;
  PyObj* (*PyFrame_GetBack)(PyObj*) = nullptr;
  int (*PyFrame_GetLineNumber)(PyObj*) = nullptr;
  PyObj* (*PyObject_GetAttrString)(PyObj*, const char*) = nullptr;
  const char* (*PyUnicode_AsUTF8)(PyObj*) = nullptr;
  void (*Py_DecRef)(PyObj*) = nullptr;
  void (*PyErr_Fetch)(PyObj**, PyObj**, PyObj**) = nullptr;
  void (*PyErr_Restore)(PyObj*, PyObj*, PyObj*) = nullptr;
  bool has_qualname = false;
};

template <typename T>
bool Resolve(T* fn, const char* name) {
  *fn = reinterpret_cast<T>(dlsym(RTLD_DEFAULT, name));
  return *fn != nullptr;
}

// Resolved at most once per second until found (libpython may be loaded after us).
std::atomic<const PythonApi*> g_python{nullptr};
std::atomic<uint64_t> g_python_next_try_ns{0};
std::mutex g_python_mu;

uint64_t CoarseNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + ts.tv_nsec;
}

const PythonApi* GetPython() {
  const PythonApi* api = g_python.load(std::memory_order_acquire);
  if (api != nullptr) {
    return api;
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
  auto* p = new PythonApi;
  bool ok = Resolve(&p->Py_IsInitialized, "Py_IsInitialized") &&
            Resolve(&p->PyGILState_Check, "PyGILState_Check") &&
            Resolve(&p->PyGILState_GetThisThreadState, "PyGILState_GetThisThreadState") &&
            Resolve(&p->PyEval_GetFrame, "PyEval_GetFrame") &&
            Resolve(&p->PyFrame_GetCode, "PyFrame_GetCode") &&
            Resolve(&p->PyFrame_GetBack, "PyFrame_GetBack") &&
            Resolve(&p->PyFrame_GetLineNumber, "PyFrame_GetLineNumber") &&
            Resolve(&p->PyObject_GetAttrString, "PyObject_GetAttrString") &&
            Resolve(&p->PyUnicode_AsUTF8, "PyUnicode_AsUTF8") &&
            Resolve(&p->Py_DecRef, "Py_DecRef") && Resolve(&p->PyErr_Fetch, "PyErr_Fetch") &&
            Resolve(&p->PyErr_Restore, "PyErr_Restore");
  if (!ok) {
    delete p;
    return nullptr;
  }
  // co_qualname exists from 3.11 (PyFrame_GetGenerator, also new in 3.11, tells the version).
  p->has_qualname = dlsym(RTLD_DEFAULT, "PyFrame_GetGenerator") != nullptr;
  g_python.store(p, std::memory_order_release);
  return p;
}

std::string_view CopyToArena(PythonStack* out, const char* s) {
  if (s == nullptr) {
    return {};
  }
  size_t len = std::min<size_t>(std::strlen(s), 256);
  len = std::min(len, PythonStack::kArenaSize - out->arena_used);
  char* dst = out->arena + out->arena_used;
  std::memcpy(dst, s, len);
  out->arena_used += len;
  return std::string_view(dst, len);
}

std::string_view AttrString(const PythonApi& py, PyObj* obj, const char* name, PythonStack* out) {
  PyObj* attr = py.PyObject_GetAttrString(obj, name);
  if (attr == nullptr) {
    return {};
  }
  std::string_view v = CopyToArena(out, py.PyUnicode_AsUTF8(attr));
  py.Py_DecRef(attr);
  return v;
}

}  // namespace

bool PythonAvailable() { return GetPython() != nullptr; }

void CapturePython(PythonStack* out) {
  out->count = 0;
  out->arena_used = 0;
  const PythonApi* py = GetPython();
  if (py == nullptr || !py->Py_IsInitialized() || py->PyGILState_GetThisThreadState() == nullptr ||
      py->PyGILState_Check() != 1) {
    return;
  }
  PyObj* type = nullptr;
  PyObj* value = nullptr;
  PyObj* trace = nullptr;
  py->PyErr_Fetch(&type, &value, &trace);
  PyObj* frame = py->PyEval_GetFrame();  // borrowed
  PyObj* owned = nullptr;                // the reference we must drop, if any
  while (frame != nullptr && out->count < PythonStack::kMaxFrames) {
    PyObj* code = py->PyFrame_GetCode(frame);
    if (code != nullptr) {
      auto& f = out->frames[out->count++];
      f.function = AttrString(*py, code, py->has_qualname ? "co_qualname" : "co_name", out);
      f.file = AttrString(*py, code, "co_filename", out);
      const int line = py->PyFrame_GetLineNumber(frame);
      f.line = line > 0 ? static_cast<uint32_t>(line) : 0;
      py->Py_DecRef(code);
    }
    PyObj* back = py->PyFrame_GetBack(frame);  // new reference
    if (owned != nullptr) {
      py->Py_DecRef(owned);
    }
    owned = back;
    frame = back;
  }
  if (owned != nullptr) {
    py->Py_DecRef(owned);
  }
  py->PyErr_Restore(type, value, trace);
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
