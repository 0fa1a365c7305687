// SPDX-License-Identifier: Apache-2.0
#include "pyframes/remote_threads.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace warpscope::pyframes {
namespace {

constexpr size_t kPthreadScan = 2048;  // bytes of struct pthread searched for the tid
constexpr int64_t kMaxPid = 4194304;   // PID_MAX_LIMIT on 64-bit
constexpr uint32_t kTstateRead = 512;  // the largest thread-state prefix read at once

bool Aligned(uint64_t a) { return a != 0 && (a & 7) == 0; }

uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

}  // namespace

uint32_t CalibratePthreadTidOffset(MemoryReader& mem, pid_t pid,
                                   const std::vector<uint64_t>& pthread_ids) {
  std::vector<std::vector<int32_t>> structs;
  for (uint64_t p : pthread_ids) {
    std::vector<int32_t> words(kPthreadScan / 4);
    if (Aligned(p) && mem.Read(p, words.data(), kPthreadScan)) {
      structs.push_back(std::move(words));
    }
  }
  // Offsets where some thread's struct holds the pid: the main thread's tid.
  std::set<uint32_t> candidates;
  for (const auto& w : structs) {
    for (size_t i = 1; i < w.size(); ++i) {
      if (w[i] == pid) {
        candidates.insert(static_cast<uint32_t>(i * 4));
      }
    }
  }
  for (uint32_t off : candidates) {
    std::set<int32_t> tids;
    bool ok = true;
    for (const auto& w : structs) {
      const int32_t tid = w[off / 4];
      ok = ok && tid > 0 && tid <= kMaxPid && tids.insert(tid).second;
    }
    if (ok) {
      return off;
    }
  }
  return 0;
}

int64_t NativeTidOf(const RemotePython& py, MemoryReader& mem, uint64_t tstate,
                    uint32_t pthread_tid_offset) {
  const Layout& l = py.interp.layout;
  uint64_t v = 0;
  if (l.tstate_native_thread_id != kNoField) {
    return mem.Read(tstate + l.tstate_native_thread_id, &v, sizeof(v)) ? static_cast<int64_t>(v)
                                                                       : 0;
  }
  int32_t tid = 0;
  if (pthread_tid_offset == 0 || l.tstate_thread_id == kNoField ||
      !mem.Read(tstate + l.tstate_thread_id, &v, sizeof(v)) || !Aligned(v) ||
      !mem.Read(v + pthread_tid_offset, &tid, sizeof(tid))) {
    return 0;
  }
  return tid;
}

// One function on purpose: two nested bounded list walks sharing their limits.
void ListThreadStates(const RemotePython& py, MemoryReader& mem, uint32_t* pthread_tid_offset,
                      std::vector<RemoteThreadState>* out, ThreadListStats* stats) {
  const Layout& l = py.interp.layout;
  out->clear();
  *stats = ThreadListStats{};
  auto read = [&](uint64_t addr, void* dst, size_t len) {
    ++stats->memory_reads;
    return mem.Read(addr, dst, len);
  };
  if (l.runtime_interpreters_head == kNoField || l.interp_threads_head == kNoField ||
      l.tstate_next == kNoField) {
    return;
  }
  const uint32_t tsize =
      std::max({l.tstate_next, l.tstate_thread_id == kNoField ? 0 : l.tstate_thread_id,
                l.tstate_native_thread_id == kNoField ? 0 : l.tstate_native_thread_id}) +
      8;
  if (tsize > kTstateRead) {
    return;
  }
  std::vector<uint64_t> pthread_ids;
  std::vector<uint64_t> interps;
  uint64_t interp = 0;
  if (!read(py.runtime + l.runtime_interpreters_head, &interp, sizeof(interp))) {
    stats->unreadable = true;
    return;
  }
  while (interp != 0) {
    if (!Aligned(interp) || interps.size() >= kMaxInterpreters ||
        std::find(interps.begin(), interps.end(), interp) != interps.end()) {
      stats->truncated = true;
      break;
    }
    interps.push_back(interp);
    uint64_t head[2] = {0, 0};  // next, threads head
    uint64_t tstate = 0;
    if (!read(interp + l.interp_next, &head[0], 8) ||
        !read(interp + l.interp_threads_head, &head[1], 8)) {
      stats->unreadable = true;
      break;
    }
    tstate = head[1];
    // Brent's cycle detection over the thread list.
    uint64_t mark = tstate;
    size_t power = 1;
    size_t lambda = 0;
    while (tstate != 0) {
      uint8_t ts[kTstateRead];
      if (out->size() >= kMaxThreadStates) {
        stats->truncated = true;
        break;
      }
      if (!Aligned(tstate) || !read(tstate, ts, tsize)) {
        stats->unreadable = true;
        break;
      }
      RemoteThreadState r;
      r.tstate = tstate;
      if (l.tstate_native_thread_id != kNoField) {
        r.native_tid = static_cast<int64_t>(Load64(ts + l.tstate_native_thread_id));
      } else if (l.tstate_thread_id != kNoField) {
        pthread_ids.push_back(Load64(ts + l.tstate_thread_id));
      }
      out->push_back(r);
      const uint64_t next = Load64(ts + l.tstate_next);
      if (next != 0 && next == mark) {
        stats->truncated = true;
        break;
      }
      if (++lambda == power) {
        mark = next;
        power *= 2;
        lambda = 0;
      }
      tstate = next;
    }
    interp = head[0];
  }
  stats->interpreters = static_cast<uint32_t>(interps.size());
  stats->thread_states = static_cast<uint32_t>(out->size());
  if (l.tstate_native_thread_id != kNoField || pthread_ids.size() != out->size()) {
    return;
  }
  // 3.9/3.10: tids through glibc's struct pthread.
  // An offset found while the process had one thread may be a coincidence: when the tids it
  // gives are not distinct and plausible, calibrate again with all threads.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (*pthread_tid_offset == 0) {
      *pthread_tid_offset = CalibratePthreadTidOffset(mem, py.pid, pthread_ids);
      attempt = 1;
    }
    if (*pthread_tid_offset == 0) {
      return;
    }
    std::set<int64_t> seen;
    bool plausible = true;
    for (size_t i = 0; i < out->size(); ++i) {
      int32_t tid = 0;
      if (Aligned(pthread_ids[i]) &&
          read(pthread_ids[i] + *pthread_tid_offset, &tid, sizeof(tid))) {
        (*out)[i].native_tid = tid;
      }
      plausible = plausible && tid > 0 && tid <= kMaxPid && seen.insert(tid).second;
    }
    if (plausible) {
      return;
    }
    *pthread_tid_offset = 0;
    for (RemoteThreadState& r : *out) {
      r.native_tid = 0;
    }
  }
}

}  // namespace warpscope::pyframes
