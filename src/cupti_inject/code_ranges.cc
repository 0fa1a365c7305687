// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/code_ranges.h"

#include <link.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

// libgcc's FDE lookup (unwind-dw2-fde.h; exported by libgcc_s and in libgcc_eh, which the
// injected library links statically). The returned FDE is only tested against null.
struct dwarf_eh_bases {
  void* tbase;
  void* dbase;
  void* func;
};
extern "C" const void* _Unwind_Find_FDE(void* pc, dwarf_eh_bases* bases);

namespace warpscope::cupti_inject {
namespace {

constexpr size_t kMaxRanges = 2048;

// Published under a sequence counter (odd while a rebuild writes): readers use relaxed loads and
// discard what they found when the counter moved.
struct Table {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> count{0};
  std::atomic<uintptr_t> lo[kMaxRanges];
  std::atomic<uintptr_t> hi[kMaxRanges];
};
Table g_table;

struct Range {
  uintptr_t lo;
  uintptr_t hi;
};

// Refresh state, under g_refresh_mu (never taken on a launch path).
std::mutex g_refresh_mu;
bool g_built = false;
unsigned long long g_adds = 0;
unsigned long long g_subs = 0;
Range g_scratch[kMaxRanges];

struct Collect {
  size_t n = 0;
  bool unchanged = false;
};

int CollectRanges(dl_phdr_info* info, size_t size, void* data) {
  auto* c = static_cast<Collect*>(data);
  if (c->n == 0 && !c->unchanged &&
      size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    if (g_built && info->dlpi_adds == g_adds && info->dlpi_subs == g_subs) {
      c->unchanged = true;
      return 1;  // nothing was loaded or unloaded since the last build
    }
    g_adds = info->dlpi_adds;
    g_subs = info->dlpi_subs;
  }
  bool has_eh_frame = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    has_eh_frame |= info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME;
  }
  if (!has_eh_frame) {
    return 0;
  }
  for (int i = 0; i < info->dlpi_phnum && c->n < kMaxRanges; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) != 0 && ph.p_memsz > 0) {
      const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
      g_scratch[c->n++] = {lo, lo + ph.p_filesz};  // file-backed bytes only: they are code
    }
  }
  return 0;
}

}  // namespace

size_t RefreshCodeRanges() {
  std::lock_guard lock(g_refresh_mu);
  Collect c;
  dl_iterate_phdr(&CollectRanges, &c);
  if (c.unchanged) {
    return g_table.count.load(std::memory_order_relaxed);
  }
  g_built = true;
  std::sort(g_scratch, g_scratch + c.n, [](const Range& a, const Range& b) { return a.lo < b.lo; });
  const uint32_t s = g_table.seq.load(std::memory_order_relaxed);
  g_table.seq.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (size_t i = 0; i < c.n; ++i) {
    g_table.lo[i].store(g_scratch[i].lo, std::memory_order_relaxed);
    g_table.hi[i].store(g_scratch[i].hi, std::memory_order_relaxed);
  }
  g_table.count.store(static_cast<uint32_t>(c.n), std::memory_order_relaxed);
  g_table.seq.store(s + 2, std::memory_order_release);
  return c.n;
}

bool FindCodeRange(uintptr_t pc, uintptr_t* lo, uintptr_t* hi) {
  const uint32_t s = g_table.seq.load(std::memory_order_acquire);
  if ((s & 1) != 0) {
    return false;
  }
  const size_t n = std::min<size_t>(g_table.count.load(std::memory_order_relaxed), kMaxRanges);
  size_t a = 0;
  size_t b = n;
  while (a < b) {  // the first range starting above pc
    const size_t mid = a + (b - a) / 2;
    if (g_table.lo[mid].load(std::memory_order_relaxed) <= pc) {
      a = mid + 1;
    } else {
      b = mid;
    }
  }
  if (a == 0) {
    return false;
  }
  const uintptr_t l = g_table.lo[a - 1].load(std::memory_order_relaxed);
  const uintptr_t h = g_table.hi[a - 1].load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (g_table.seq.load(std::memory_order_relaxed) != s || pc < l || pc >= h) {
    return false;
  }
  *lo = l;
  *hi = h;
  return true;
}

bool PrecededByCall(uintptr_t ret, uintptr_t lo, uintptr_t hi) {
  if (ret <= lo || ret > hi) {
    return false;
  }
  const uintptr_t avail = ret - lo;
  const auto* p = reinterpret_cast<const uint8_t*>(ret);
#if defined(__x86_64__)
  if (avail >= 5 && p[-5] == 0xe8) {
    return true;  // call rel32
  }
  // call r/m64: FF /2, with an optional REX prefix before it; k is the length from the opcode.
  for (uintptr_t k = 2; k <= 7 && k <= avail; ++k) {
    if (p[-static_cast<ptrdiff_t>(k)] != 0xff) {
      continue;
    }
    const uint8_t modrm = p[1 - static_cast<ptrdiff_t>(k)];
    if (((modrm >> 3) & 7) != 2) {
      continue;
    }
    const int mod = modrm >> 6;
    const int rm = modrm & 7;
    uintptr_t len = 2;
    if (mod != 3 && rm == 4) {  // a SIB byte follows
      if (k < 3) {
        continue;
      }
      const uint8_t sib = p[2 - static_cast<ptrdiff_t>(k)];
      len += 1;
      if (mod == 0 && (sib & 7) == 5) {
        len += 4;
      }
    } else if (mod == 0 && rm == 5) {
      len += 4;  // rip-relative
    }
    len += mod == 1 ? 1 : mod == 2 ? 4 : 0;
    if (len == k) {
      return true;
    }
  }
  return false;
#elif defined(__aarch64__)
  if (avail < 4 || (ret & 3) != 0) {
    return false;
  }
  uint32_t insn;
  std::memcpy(&insn, p - 4, sizeof(insn));
  return (insn & 0xfc000000u) == 0x94000000u ||  // BL
         (insn & 0xfffffc1fu) == 0xd63f0000u;    // BLR
#else
  (void)avail;
  (void)p;
  return false;
#endif
}

bool HasUnwindEntry(uintptr_t pc) {
  if (pc == 0) {
    return false;
  }
  dwarf_eh_bases bases;
  return _Unwind_Find_FDE(reinterpret_cast<void*>(pc - 1), &bases) != nullptr;
}

bool DirectCallInto(uintptr_t ret, uintptr_t pc, uintptr_t max_distance) {
#if defined(__x86_64__)
  uintptr_t lo = 0;
  uintptr_t hi = 0;
  if (!FindCodeRange(ret, &lo, &hi) || ret > hi || ret - lo < 5) {
    return false;
  }
  const auto* p = reinterpret_cast<const uint8_t*>(ret);
  if (p[-5] != 0xe8) {
    return false;
  }
  int32_t rel = 0;
  std::memcpy(&rel, p - 4, sizeof(rel));
  const uintptr_t target = ret + static_cast<uintptr_t>(static_cast<intptr_t>(rel));
  return target <= pc && pc - target <= max_distance && !HasUnwindEntry(target);
#else
  (void)ret;
  (void)pc;
  (void)max_distance;
  return false;
#endif
}

bool IsValidatedReturnAddress(uintptr_t pc) {
  uintptr_t lo = 0;
  uintptr_t hi = 0;
  return FindCodeRange(pc, &lo, &hi) && PrecededByCall(pc, lo, hi) && HasUnwindEntry(pc);
}

}  // namespace warpscope::cupti_inject
