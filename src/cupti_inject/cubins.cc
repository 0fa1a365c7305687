// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/cubins.h"

#include <sys/uio.h>
#include <unistd.h>

#include <map>
#include <string>

#include "cupti_inject/state.h"

namespace warpscope::cupti_inject {
namespace {

bool PcSamplingPossible() {
  return g->api.cuptiPCSamplingEnable != nullptr && g->api.cuptiPCSamplingGetData != nullptr &&
         abi::PcSamplingLayoutFor(g->cupti_version).pc_record_size != 0;
}

size_t CapBytes() { return static_cast<size_t>(g->config.cubin_cap_mb) << 20; }

// Adds a copy under cubin_mu; false when it is known already or does not fit.
bool AddCopyLocked(uint64_t crc, std::string bytes) {
  if (g->cubins.contains(crc) || g->cubin_bytes + bytes.size() > CapBytes()) {
    return false;
  }
  g->cubin_bytes += bytes.size();
  g->cubins.emplace(crc, std::move(bytes));
  g->cubins_captured.fetch_add(1, std::memory_order_relaxed);
  g->cubin_generation.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace

uint64_t CubinKey(const char* data, size_t size) {
  if (g->api.cuptiGetCubinCrc != nullptr) {
    abi::CUpti_GetCubinCrcParams p{};
    p.size = sizeof(p);
    p.cubinSize = size;
    p.cubin = data;
    if (g->api.cuptiGetCubinCrc(&p) == abi::kSuccess && p.cubinCrc != 0) {
      return p.cubinCrc;
    }
  }
  return wire::HashBytes(wire::kHashSeed, data, size);
}

void KeepCubin(const char* data, size_t size) {
  if (data == nullptr || size == 0 || !PcSamplingPossible()) {
    return;
  }
  const uint64_t crc = CubinKey(data, size);
  const bool wanted = g->controls.pc_wanted.load(std::memory_order_relaxed);
  std::lock_guard lock(g->cubin_mu);
  if (g->cubins.contains(crc)) {
    return;
  }
  if (!wanted) {
    if (g->cubin_refs.size() < kMaxCubinRefs && size <= CapBytes()) {
      g->cubin_refs.try_emplace(crc, CubinRef{data, size});
    }
    return;
  }
  g->cubin_refs.erase(crc);
  AddCopyLocked(crc, std::string(data, size));
}

size_t ReadBackCubins() {
  std::map<uint64_t, CubinRef> refs;
  {
    std::lock_guard lock(g->cubin_mu);
    refs.swap(g->cubin_refs);
  }
  size_t lost = 0;
  for (const auto& [crc, ref] : refs) {
    {
      std::lock_guard lock(g->cubin_mu);
      if (g->cubins.contains(crc)) {
        continue;  // loaded again while sampling was on
      }
      if (g->cubin_bytes + ref.size > CapBytes()) {
        continue;  // over the cap, like a copy at load time would have been
      }
    }
    std::string bytes(ref.size, '\0');
    iovec local{bytes.data(), ref.size};
    iovec remote{const_cast<char*>(ref.data), ref.size};
    const ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (n != static_cast<ssize_t>(ref.size) || CubinKey(bytes.data(), bytes.size()) != crc) {
      ++lost;
      continue;
    }
    std::lock_guard lock(g->cubin_mu);
    AddCopyLocked(crc, std::move(bytes));
  }
  return lost;
}

}  // namespace warpscope::cupti_inject
