// SPDX-License-Identifier: Apache-2.0
// A deterministic unwinding fixture: three nested functions, compiled without frame pointers
// (testing/unwind_fixture.cc), whose innermost one captures its own registers and a copy of
// the stack above its stack pointer, as PERF_SAMPLE_REGS_USER/STACK_USER would.
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_TESTING_UNWIND_FIXTURE_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_TESTING_UNWIND_FIXTURE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "agent/sources/cpu_profiler/perf_records.h"

extern "C" {
// Calls UnwindFixtureMiddle, which calls UnwindFixtureInner, which captures. Returns a value so
// that none of the calls is a tail call.
int UnwindFixtureOuter(warpscope::agent::cpu_profiler::DwarfRegs* regs, std::vector<uint8_t>* stack,
                       uint64_t max_bytes);
// `depth` more frames (UnwindFixtureRecurse) above UnwindFixtureOuter.
int UnwindFixtureRecurse(int depth, warpscope::agent::cpu_profiler::DwarfRegs* regs,
                         std::vector<uint8_t>* stack, uint64_t max_bytes);
// A copy of CPython's x86-64 perf trampoline (no frame pointer, no CFI) in executable memory
// mapped at the first call: its address, and its size in `size`. 0 when it cannot be mapped.
uint64_t UnwindFixtureTrampoline(size_t* size);
// Calls UnwindFixtureOuter through that trampoline, as CPython's eval loop is entered with
// `-X perf`: Inner → Middle → Outer → trampoline → UnwindFixtureThroughTrampoline.
int UnwindFixtureThroughTrampoline(warpscope::agent::cpu_profiler::DwarfRegs* regs,
                                   std::vector<uint8_t>* stack, uint64_t max_bytes);
}

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_TESTING_UNWIND_FIXTURE_H_
