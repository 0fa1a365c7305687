// SPDX-License-Identifier: Apache-2.0
// The executable code of the process that has unwind tables, for resuming a native stack past a
// frame without any (stack_capture.cc, docs/design/cuda-profiler.md "Past code without unwind
// tables").
//
// A table of the executable PT_LOAD segments of every loaded object with a PT_GNU_EH_FRAME
// header, sorted, in static storage. Refresh() builds it with dl_iterate_phdr (the loader's lock)
// and runs only off the launch path: at initialization and once per flush period on the flusher
// thread, rebuilding only when objects were loaded or unloaded. Lookups run on application
// threads without a lock or allocation: the table is published under a sequence counter, and a
// lookup that overlaps a rebuild finds nothing.
#ifndef WARPSCOPE_CUPTI_INJECT_CODE_RANGES_H_
#define WARPSCOPE_CUPTI_INJECT_CODE_RANGES_H_

#include <cstddef>
#include <cstdint>

namespace warpscope::cupti_inject {

// Rebuilds the table when the set of loaded objects changed since the last call (any thread
// but an application's launch path: it takes the dynamic loader's lock). Returns the number of
// executable ranges in the table.
size_t RefreshCodeRanges();

// True when `pc` lies in an executable segment of a loaded object with unwind tables; sets
// [*lo, *hi) to that segment. Lock-free, allocation-free.
bool FindCodeRange(uintptr_t pc, uintptr_t* lo, uintptr_t* hi);

// True when the bytes just before `ret` inside [lo, hi) encode a call instruction that ends at
// `ret` (x86-64: call rel32 and every form of call r/m64; aarch64: BL, BLR). Reads only
// [max(lo, ret - 7), ret).
bool PrecededByCall(uintptr_t ret, uintptr_t lo, uintptr_t hi);

// True when `pc - 1` is covered by an unwind entry (an FDE) of a loaded object.
bool HasUnwindEntry(uintptr_t pc);

// A plausible return address: in code with unwind tables, right after a call instruction, and
// covered by an FDE.
bool IsValidatedReturnAddress(uintptr_t pc);

// True when the instruction before `ret` is a direct call (call rel32) whose target lies in
// [pc - max_distance, pc] and, like `pc`, has no unwind entry: the call entered the function
// without unwind entries that holds `pc`, as far as such a function can be told (a call to a PLT
// stub or to any function with unwind entries does not). False for indirect calls.
bool DirectCallInto(uintptr_t ret, uintptr_t pc, uintptr_t max_distance);

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_CODE_RANGES_H_
