// SPDX-License-Identifier: Apache-2.0
// The cubins of loaded modules, kept for the agent's SASS listings (PC sampling).
//
// A module's cubin is visible only inside CUPTI's MODULE_LOADED callback. While PC sampling is
// wanted, the callback copies it (once per CRC, within WARPSCOPE_CUPTI_CUBIN_CAP_MB). Before, it
// keeps only where the cubin was, its size and its CRC: no bytes. When sampling is switched on
// later, the flusher reads those places back with process_vm_readv on this process (a read that
// fails returns an error, never a fault) and keeps a copy only when its CRC is the one CUPTI gave
// at load time, so memory the driver freed or reused is never sent as a cubin.
//
// Threads: KeepCubin on the thread in the resource callback; ReadBackCubins on the flusher. Both
// take cubin_mu (state.h) briefly; the read-back copies outside it.
#ifndef WARPSCOPE_CUPTI_INJECT_CUBINS_H_
#define WARPSCOPE_CUPTI_INJECT_CUBINS_H_

#include <cstddef>
#include <cstdint>

namespace warpscope::cupti_inject {

// Where a module's cubin was when it was loaded.
struct CubinRef {
  const char* data = nullptr;
  size_t size = 0;
};

// At most this many cubins are remembered by reference (a few MiB of map at worst).
inline constexpr size_t kMaxCubinRefs = 32768;

// The key of a cubin: cuptiGetCubinCrc (the CRC the PC records carry), else our hash of it.
uint64_t CubinKey(const char* data, size_t size);

// MODULE_LOADED: copies the cubin when PC sampling is wanted now, else remembers where it is.
// Does nothing when PC sampling is impossible in this process (entry points or layout missing).
void KeepCubin(const char* data, size_t size);

// Flusher, while PC sampling is wanted: turns remembered cubins into copies. Returns how many
// could not be read back (their memory is gone or holds something else now).
size_t ReadBackCubins();

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_CUBINS_H_
