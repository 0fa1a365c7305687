// SPDX-License-Identifier: Apache-2.0
// Heap allocations counted in a benchmark binary. Linking warpscope::bench_alloc_counter
// replaces the global operator new and delete with versions that count every allocation
// (malloc underneath), so a benchmark can report allocations per iteration:
//
//   const uint64_t before = bench::AllocationCount();
//   for (auto _ : state) { ... }
//   state.counters["allocs"] = double(bench::AllocationCount() - before) / state.iterations();
//
// Benchmarks only: never link it into a product binary or a test.
#ifndef WARPSCOPE_BENCH_ALLOC_COUNTER_ALLOC_COUNTER_H_
#define WARPSCOPE_BENCH_ALLOC_COUNTER_ALLOC_COUNTER_H_

#include <cstdint>

namespace warpscope::bench {

// Calls of any operator new since the program started. Thread-safe.
uint64_t AllocationCount();

}  // namespace warpscope::bench

#endif  // WARPSCOPE_BENCH_ALLOC_COUNTER_ALLOC_COUNTER_H_
