// SPDX-License-Identifier: Apache-2.0
// Built with -fomit-frame-pointer -O1 (CMakeLists.txt): the unwinder must use the CFI.
#include "agent/sources/cpu_profiler/testing/unwind_fixture.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace {

// The end of the mapping holding `address` (the stack's top), from /proc/self/maps.
uint64_t MappingEnd(uint64_t address) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    uint64_t lo = 0;
    uint64_t hi = 0;
    char dash = 0;
    std::istringstream in(line);
    in >> std::hex >> lo >> dash >> hi;
    if (address >= lo && address < hi) {
      return hi;
    }
  }
  return address;
}

}  // namespace

extern "C" {

__attribute__((noinline)) int UnwindFixtureInner(warpscope::agent::cpu_profiler::DwarfRegs* regs,
                                                 std::vector<uint8_t>* stack, uint64_t max_bytes) {
  uint64_t r[17];
  // One asm block, so every register is the one at the same pc (the label's address).
  asm volatile(
      "mov %%rax, 0(%0)\n\t"
      "mov %%rdx, 8(%0)\n\t"
      "mov %%rcx, 16(%0)\n\t"
      "mov %%rbx, 24(%0)\n\t"
      "mov %%rsi, 32(%0)\n\t"
      "mov %%rdi, 40(%0)\n\t"
      "mov %%rbp, 48(%0)\n\t"
      "mov %%rsp, 56(%0)\n\t"
      "mov %%r8, 64(%0)\n\t"
      "mov %%r9, 72(%0)\n\t"
      "mov %%r10, 80(%0)\n\t"
      "mov %%r11, 88(%0)\n\t"
      "mov %%r12, 96(%0)\n\t"
      "mov %%r13, 104(%0)\n\t"
      "mov %%r14, 112(%0)\n\t"
      "mov %%r15, 120(%0)\n\t"
      "1: lea 1b(%%rip), %%rax\n\t"
      "mov %%rax, 128(%0)\n\t"
      :
      : "r"(r)
      : "rax", "memory");
  for (int i = 0; i < 17; ++i) {
    (*regs)[static_cast<size_t>(i)] = r[i];
  }
  const uint64_t sp = r[7];
  uint64_t n = MappingEnd(sp) - sp;
  if (n > max_bytes) {
    n = max_bytes;
  }
  stack->resize(n);
  std::memcpy(stack->data(), reinterpret_cast<const void*>(sp), n);
  return static_cast<int>(n & 0xff) + 1;
}

__attribute__((noinline)) int UnwindFixtureMiddle(warpscope::agent::cpu_profiler::DwarfRegs* regs,
                                                  std::vector<uint8_t>* stack, uint64_t max_bytes) {
  volatile int pad[8] = {1, 2, 3, 4, 5, 6, 7, 8};  // a frame of its own, on the stack
  return UnwindFixtureInner(regs, stack, max_bytes) + pad[3];
}

__attribute__((noinline)) int UnwindFixtureOuter(warpscope::agent::cpu_profiler::DwarfRegs* regs,
                                                 std::vector<uint8_t>* stack, uint64_t max_bytes) {
  volatile int pad[4] = {1, 2, 3, 4};
  return UnwindFixtureMiddle(regs, stack, max_bytes) * 2 + pad[1];
}

}  // extern "C"

extern "C" {

// `depth` frames of itself above UnwindFixtureOuter's three, for the cost per sample by depth.
__attribute__((noinline)) int UnwindFixtureRecurse(int depth,
                                                   warpscope::agent::cpu_profiler::DwarfRegs* regs,
                                                   std::vector<uint8_t>* stack,
                                                   uint64_t max_bytes) {
  volatile int pad[2] = {depth, 1};
  if (depth <= 0) {
    return UnwindFixtureOuter(regs, stack, max_bytes) + pad[1];
  }
  return UnwindFixtureRecurse(depth - 1, regs, stack, max_bytes) + pad[0];
}

}  // extern "C"

#include <sys/mman.h>

namespace {

// CPython 3.12/3.13's x86-64 perf trampoline (Python/asm_trampoline.S), byte for byte: no frame
// pointer and no unwind info, the evaluator called through rcx with rdi, rsi, rdx untouched.
constexpr unsigned char kCpythonTrampoline[] = {
    0x48, 0x83, 0xec, 0x08,  // sub $8, %rsp
    0xff, 0xd1,              // call *%rcx
    0x48, 0x83, 0xc4, 0x08,  // add $8, %rsp
    0xc3,                    // ret
};

using TrampolineFn = int (*)(warpscope::agent::cpu_profiler::DwarfRegs*, std::vector<uint8_t>*,
                             uint64_t,
                             int (*)(warpscope::agent::cpu_profiler::DwarfRegs*,
                                     std::vector<uint8_t>*, uint64_t));

}  // namespace

extern "C" {

uint64_t UnwindFixtureTrampoline(size_t* size) {
  static void* code = [] {
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      return static_cast<void*>(nullptr);
    }
    std::memcpy(p, kCpythonTrampoline, sizeof(kCpythonTrampoline));
    if (mprotect(p, 4096, PROT_READ | PROT_EXEC) != 0) {
      return static_cast<void*>(nullptr);
    }
    return p;
  }();
  *size = sizeof(kCpythonTrampoline);
  return reinterpret_cast<uint64_t>(code);
}

__attribute__((noinline)) int UnwindFixtureThroughTrampoline(
    warpscope::agent::cpu_profiler::DwarfRegs* regs, std::vector<uint8_t>* stack,
    uint64_t max_bytes) {
  size_t size = 0;
  const uint64_t code = UnwindFixtureTrampoline(&size);
  if (code == 0) {
    return -1;
  }
  TrampolineFn trampoline;
  std::memcpy(&trampoline, &code, sizeof(trampoline));
  volatile int pad[2] = {3, 4};
  return trampoline(regs, stack, max_bytes, UnwindFixtureOuter) * 3 + pad[0];
}

}  // extern "C"
