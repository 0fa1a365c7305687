// SPDX-License-Identifier: Apache-2.0
// Test helper: whether a captured stack returns into a given function.
#ifndef WARPSCOPE_CUPTI_INJECT_TESTING_HAS_FRAME_IN_H_
#define WARPSCOPE_CUPTI_INJECT_TESTING_HAS_FRAME_IN_H_

#include <dlfcn.h>
#include <link.h>

#include <cstdint>
#include <span>

namespace warpscope::cupti_inject::testing {

// True when some frame returns into `fn` (its extent comes from the dynamic symbol table: the
// test is linked with exported symbols).
inline bool HasFrameIn(std::span<const uint64_t> frames, const void* fn) {
  Dl_info info;
  void* extra = nullptr;
  if (dladdr1(fn, &info, &extra, RTLD_DL_SYMENT) == 0 || extra == nullptr) {
    return false;
  }
  const auto lo = reinterpret_cast<uintptr_t>(info.dli_saddr);
  const auto size = static_cast<const ElfW(Sym)*>(extra)->st_size;
  for (uint64_t pc : frames) {
    if (pc > lo && pc <= lo + size) {
      return true;
    }
  }
  return false;
}

}  // namespace warpscope::cupti_inject::testing

#endif  // WARPSCOPE_CUPTI_INJECT_TESTING_HAS_FRAME_IN_H_
