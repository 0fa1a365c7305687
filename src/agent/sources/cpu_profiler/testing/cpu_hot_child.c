// SPDX-License-Identifier: Apache-2.0
// A C program with known hot functions, built with -fomit-frame-pointer so that only DWARF CFI
// can unwind it: `cpu_hot_child burn SECONDS` spends its CPU in burn_a, burn_b and burn_c in the
// proportions 6:3:1 (each called from work_unit, called from main); `cpu_hot_child syscalls
// SECONDS` spends it in getppid() system calls (kernel frames). Prints "ready\n" once running.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static uint64_t Spin(uint64_t n, uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
  }
  return x;
}

__attribute__((noinline)) uint64_t burn_a(uint64_t n) { return Spin(6 * n, 1) + 1; }
__attribute__((noinline)) uint64_t burn_b(uint64_t n) { return Spin(3 * n, 2) + 2; }
__attribute__((noinline)) uint64_t burn_c(uint64_t n) { return Spin(1 * n, 3) + 3; }

__attribute__((noinline)) uint64_t work_unit(uint64_t n) {
  uint64_t r = burn_a(n);
  r ^= burn_b(n);
  r ^= burn_c(n);
  return r + 1;
}

__attribute__((noinline)) uint64_t syscall_unit(int n) {
  uint64_t r = 0;
  for (int i = 0; i < n; ++i) {
    r += (uint64_t)syscall(SYS_getppid);
  }
  return r + 1;
}

int main(int argc, char** argv) {
  const int syscalls = argc > 1 && strcmp(argv[1], "syscalls") == 0;
  const double seconds = argc > 2 ? atof(argv[2]) : 5.0;
  printf("ready\n");
  fflush(stdout);
  const double end = Now() + seconds;
  while (Now() < end) {
    sink = syscalls ? syscall_unit(1000) : work_unit(200000);
  }
  return 0;
}
