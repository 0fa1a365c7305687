// SPDX-License-Identifier: Apache-2.0
// One step of DWARF call-frame unwinding from a known (pc, stack pointer, frame pointer), for
// resuming a native stack above a frame that has no unwind tables (stack_capture.cc). libgcc's
// unwinder can only start from the current context, so past such a frame the library reads the
// .eh_frame entries itself: the FDE that libgcc's _Unwind_Find_FDE finds for the pc, its CIE,
// and the call-frame instructions up to the pc, keeping only what a step needs on x86-64: the
// CFA rule (rsp or rbp plus an offset), where the return address and rbp were saved.
//
// Safety: stack words are read only inside the thread's stack bounds (8-aligned); unwind
// entries are read inside the lengths they declare, from the loaded object's mapped .eh_frame.
// Anything it does not handle (a CFA expression, a CFA in another register, DW_CFA_set_loc,
// 64-bit entries, architectures other than x86-64) ends the walk instead of guessing. No
// allocation, lock or system call.
#ifndef WARPSCOPE_CUPTI_INJECT_CFI_STEP_H_
#define WARPSCOPE_CUPTI_INJECT_CFI_STEP_H_

#include <cstdint>

namespace warpscope::cupti_inject {

struct StackBounds;

// The registers a step needs. `pc` is a return address (the step looks up pc - 1); `sp` the
// stack pointer after the call returned; `fp` the value of rbp in that frame (0 when unknown:
// a frame whose CFA is rbp-based then ends the walk).
struct CfiRegs {
  uintptr_t pc = 0;
  uintptr_t sp = 0;
  uintptr_t fp = 0;
};

enum class CfiStepResult {
  kOk,           // *regs now describes the caller; regs->pc is its return address
  kEnd,          // the outermost frame (its entry marks the return address undefined)
  kNoEntry,      // no unwind entry covers pc
  kUnsupported,  // an entry the step does not handle, or a value outside the stack bounds
};

// Steps from the frame `regs` describes to its caller. `ra_slot`, when set, receives the
// stack address the caller's return address was read from.
CfiStepResult CfiStep(const StackBounds& bounds, CfiRegs* regs, uintptr_t* ra_slot);

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_CFI_STEP_H_
