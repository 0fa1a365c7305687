// SPDX-License-Identifier: Apache-2.0
// Fixture for symbolizer tests: prints the address of a known function of this executable as
// "0x<hex>\n", then waits until its stdin is closed, so the test can read /proc/<pid>/maps.
#include <unistd.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>

namespace warpscope_testee {
__attribute__((noinline)) int KnownTesteeFunction(int x) { return x * 11 + 2; }
}  // namespace warpscope_testee

int main() {
  std::printf("0x%" PRIxPTR "\n",
              reinterpret_cast<uintptr_t>(&warpscope_testee::KnownTesteeFunction));
  std::fflush(stdout);
  char buf[64];
  while (read(STDIN_FILENO, buf, sizeof(buf)) > 0) {
  }
  return warpscope_testee::KnownTesteeFunction(0) == 2 ? 0 : 1;
}
