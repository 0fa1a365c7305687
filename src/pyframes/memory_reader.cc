// SPDX-License-Identifier: Apache-2.0
#include "pyframes/memory_reader.h"

#include <sys/uio.h>

#include <cstring>

namespace warpscope::pyframes {

bool PlausibleUserRange(uint64_t addr, size_t len) {
  constexpr uint64_t kUserTop = uint64_t{1} << 47;  // x86-64 4-level / aarch64 48-bit VA
  return addr >= 4096 && len <= kUserTop && addr < kUserTop && addr + len <= kUserTop;
}

bool LocalMemoryReader::Read(uint64_t addr, void* dst, size_t len) {
  if (!PlausibleUserRange(addr, len)) {
    return false;
  }
  std::memcpy(dst, reinterpret_cast<const void*>(static_cast<uintptr_t>(addr)), len);
  return true;
}

bool ProcessMemoryReader::Read(uint64_t addr, void* dst, size_t len) {
  if (!PlausibleUserRange(addr, len)) {
    return false;
  }
  if (len == 0) {
    return true;
  }
  iovec local{dst, len};
  iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(addr)), len};
  const ssize_t got = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
  return got == static_cast<ssize_t>(len);
}

}  // namespace warpscope::pyframes
