// SPDX-License-Identifier: Apache-2.0
// Fixture for symbolizer tests: a shared library with functions of known names. Built with its
// symbol table, and stripped (dynsym only) by the build.
#include <cstdint>

namespace warpscope_fixture {

struct Widget {
  __attribute__((noinline, visibility("default"))) static int Compute(int x);
};

int Widget::Compute(int x) { return x * 3 + 1; }

// Only in .symtab: the stripped copy cannot name it.
__attribute__((noinline)) static int InternalHelper(int x) { return x ^ 0x5a; }

}  // namespace warpscope_fixture

extern "C" {

__attribute__((noinline, visibility("default"))) int WarpscopeFixtureExported(int x) {
  return warpscope_fixture::Widget::Compute(x) + 7;
}

__attribute__((visibility("default"))) void* WarpscopeFixtureInternalAddress() {
  return reinterpret_cast<void*>(&warpscope_fixture::InternalHelper);
}

__attribute__((visibility("default"))) void* WarpscopeFixtureComputeAddress() {
  return reinterpret_cast<void*>(&warpscope_fixture::Widget::Compute);
}

}  // extern "C"
