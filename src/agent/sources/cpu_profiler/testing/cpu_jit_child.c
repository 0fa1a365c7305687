// SPDX-License-Identifier: Apache-2.0
// A JIT in miniature, for the CPU profiler's frame-pointer walk through code without unwind
// info: `cpu_jit_child SECONDS` writes, into executable memory it maps at run time, a
// trampoline that keeps a frame pointer the way CPython's `-X perf` trampoline does on x86-64
//   push rbp; mov rbp, rsp; mov rax, rdi; mov rdi, rsi; call rax; pop rbp; ret
// names it in /tmp/perf-<pid>.map ("jit_trampoline"), and spends its CPU in
// main → jit_caller → jit_trampoline → jit_hot. The C code is built with -fomit-frame-pointer:
// only DWARF CFI unwinds it, and nothing unwinds the trampoline but its frame pointer. Prints
// "ready\n" once running; removes the perf map at exit.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) uint64_t jit_hot(uint64_t n) {
  uint64_t x = n;
  for (uint64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
  }
  return x;
}

typedef uint64_t (*Trampoline)(uint64_t (*fn)(uint64_t), uint64_t arg);

__attribute__((noinline)) uint64_t jit_caller(Trampoline trampoline, uint64_t n) {
  return trampoline(jit_hot, n) + 1;
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 5.0;
#if defined(__x86_64__)
  static const unsigned char kCode[] = {
      0x55,              // push rbp
      0x48, 0x89, 0xe5,  // mov rbp, rsp
      0x48, 0x89, 0xf8,  // mov rax, rdi
      0x48, 0x89, 0xf7,  // mov rdi, rsi
      0xff, 0xd0,        // call rax
      0x5d,              // pop rbp
      0xc3,              // ret
  };
#else
#error "cpu_jit_child writes x86-64 code"
#endif
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  unsigned char* code =
      mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (code == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  memcpy(code, kCode, sizeof(kCode));
  if (mprotect(code, page, PROT_READ | PROT_EXEC) != 0) {
    perror("mprotect");
    return 1;
  }
  char map_path[64];
  snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
  FILE* map = fopen(map_path, "w");
  if (map == NULL) {
    perror(map_path);
    return 1;
  }
  fprintf(map, "%lx %zx jit_trampoline\n", (unsigned long)(uintptr_t)code, sizeof(kCode));
  fclose(map);

  Trampoline trampoline;
  memcpy(&trampoline, &code, sizeof(trampoline));
  printf("ready\n");
  fflush(stdout);
  const double end = Now() + seconds;
  while (Now() < end) {
    sink = jit_caller(trampoline, 2000000);
  }
  unlink(map_path);
  return 0;
}
