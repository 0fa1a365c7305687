// SPDX-License-Identifier: Apache-2.0
// Fixture for the DWARF tests: a shared library built with -g -O2 in which a function is inlined
// into an exported one. WarpscopeDwarfInlinedCallSite() returns an address inside the inlined
// code (the return address of a call the inlined function makes), so that file, line and the
// inlined frame of that address are known to any DWARF reader. The build also makes a stripped
// copy with its debug info split out (objcopy --only-keep-debug, --add-gnu-debuglink).
#include <cstdint>

namespace warpscope_dwarf_fixture {

volatile int g_sink = 0;

// Not inlined: its return address lies in the code inlined into the caller.
__attribute__((noinline)) void* ReturnAddress() {
  g_sink = g_sink + 1;
  return __builtin_return_address(0);
}

// Always inlined into WarpscopeDwarfInlinedCallSite.
__attribute__((always_inline)) inline void* InlinedLeaf(int x) {
  void* where = ReturnAddress();
  g_sink = g_sink + x;  // work after the call: no tail call
  return where;
}

}  // namespace warpscope_dwarf_fixture

extern "C" {

__attribute__((noinline, visibility("default"))) void* WarpscopeDwarfInlinedCallSite(int x) {
  void* where = warpscope_dwarf_fixture::InlinedLeaf(x * 2);
  warpscope_dwarf_fixture::g_sink = warpscope_dwarf_fixture::g_sink + 3;
  return where;
}

__attribute__((noinline, visibility("default"))) int WarpscopeDwarfPlain(int x) {
  warpscope_dwarf_fixture::g_sink = x;
  return warpscope_dwarf_fixture::g_sink * 7 + 1;
}

}  // extern "C"
