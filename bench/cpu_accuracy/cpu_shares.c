// SPDX-License-Identifier: Apache-2.0
// The C workload of bench/cpu_profiler_accuracy.sh: its CPU goes to four leaf functions in the
// designed proportions 50/30/15/5 %, each a few calls deep, so a profiler's per-function shares
// can be compared with the design. Built with -O2 -fomit-frame-pointer: only the DWARF CFI can
// unwind it.
//
//   main → run_units → work_unit → stage_x → inner_x → leaf_a   50 %
//                                 → stage_x → leaf_c               15 %
//                                 → stage_y → leaf_b               30 %
//                                 → leaf_d                          5 %
//
// Inclusive: stage_x 65 %, inner_x 50 %, stage_y 30 %; main, run_units, work_unit ≈ 100 %.
// Every leaf runs the same loop (a linear congruential step per iteration), so its time is
// proportional to its iteration count. `cpu_shares SECONDS` prints "ready\n" and burns one CPU.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

// Iterations per work unit and percentage point: one unit is 100 * kStep iterations (≈ 2 ms).
enum { kStep = 10000 };

static volatile uint64_t sink;

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// The loop is written out in each leaf so that the leaf itself holds the CPU time.
#define BURN(n, seed)                                        \
  uint64_t x = (seed);                                       \
  for (uint64_t i = 0; i < (uint64_t)(n); ++i) {             \
    x = x * 6364136223846793005ull + 1442695040888963407ull; \
    __asm__ volatile("" : "+r"(x));                          \
  }                                                          \
  return x

__attribute__((noinline)) uint64_t leaf_a(uint64_t n) { BURN(50 * n, 1); }
__attribute__((noinline)) uint64_t leaf_b(uint64_t n) { BURN(30 * n, 2); }
__attribute__((noinline)) uint64_t leaf_c(uint64_t n) { BURN(15 * n, 3); }
__attribute__((noinline)) uint64_t leaf_d(uint64_t n) { BURN(5 * n, 4); }

__attribute__((noinline)) uint64_t inner_x(uint64_t n) { return leaf_a(n) + 1; }

__attribute__((noinline)) uint64_t stage_x(uint64_t n) {
  uint64_t r = inner_x(n);
  return r ^ leaf_c(n);
}

__attribute__((noinline)) uint64_t stage_y(uint64_t n) { return leaf_b(n) * 3; }

__attribute__((noinline)) uint64_t work_unit(uint64_t n) {
  uint64_t r = stage_x(n);
  r ^= stage_y(n);
  return r ^ leaf_d(n);
}

__attribute__((noinline)) void run_units(double seconds) {
  const double end = Now() + seconds;
  while (Now() < end) {
    for (int i = 0; i < 10; ++i) {
      sink = work_unit(kStep);
    }
  }
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 10.0;
  printf("ready\n");
  fflush(stdout);
  run_units(seconds);
  return 0;
}
