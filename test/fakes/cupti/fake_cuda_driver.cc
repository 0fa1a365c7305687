// SPDX-License-Identifier: Apache-2.0
// A stand-in for libcuda's launch path: built like NVIDIA's library, without frame pointers or
// unwind tables, and stripped (CMakeLists.txt), so that the CUPTI callback is entered below a
// frame that neither the frame-pointer walk nor the DWARF unwinder can describe.
#include <cstdint>

#include "fakes/cupti/fake_cupti.h"

// Sums a few words on its own stack around the call, so that the frame is a real one (not a
// tail call) and its return address lies inside this library.
extern "C" __attribute__((noinline, visibility("default"))) uint32_t FakeDriverLaunch(
    int domain, uint32_t cbid, const char* symbol, void* context) {
  volatile uint64_t scratch[4] = {1, 2, 3, 4};
  const uint32_t corr = FakeCuptiLaunch(domain, cbid, symbol, context);
  scratch[3] = scratch[0] + corr;
  return static_cast<uint32_t>(scratch[3] - scratch[0]);
}
