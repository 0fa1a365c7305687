// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/activity_decode.h"

namespace warpscope::cupti_inject {

namespace abi = ::warpscope::cupti::abi;

DecodedKernel DecodeKernel(const abi::CUpti_Activity* rec, uint32_t) {
  // Every field read here lies in the prefix Kernel9 and Kernel10 share (abi.h).
  const auto* k = reinterpret_cast<const abi::CUpti_ActivityKernel10*>(rec);
  DecodedKernel d;
  auto& a = d.activity;
  a.correlation_id = k->correlationId;
  a.device = k->deviceId;
  a.context = k->contextId;
  a.stream = k->streamId;
  a.start_ns = k->start;
  a.end_ns = k->end;
  a.grid[0] = k->gridX;
  a.grid[1] = k->gridY;
  a.grid[2] = k->gridZ;
  a.block[0] = k->blockX;
  a.block[1] = k->blockY;
  a.block[2] = k->blockZ;
  a.registers = k->registersPerThread;
  a.static_smem = static_cast<uint32_t>(k->staticSharedMemory);
  a.dynamic_smem = static_cast<uint32_t>(k->dynamicSharedMemory);
  a.graph_id = k->graphId;
  a.graph_node_id = k->graphNodeId;
  d.name = k->name;
  return d;
}

wire::Memcpy DecodeMemcpy(const abi::CUpti_Activity* rec, uint32_t cupti_version) {
  const auto* m = reinterpret_cast<const abi::CUpti_ActivityMemcpy6*>(rec);
  return wire::Memcpy{m->correlationId, m->copyKind, m->srcKind,  m->dstKind,
                      m->bytes,         m->start,    m->end,      m->deviceId,
                      m->contextId,     m->streamId,
                      cupti_version >= abi::kApiVersion13_0 ? m->graphId : 0};
}

wire::Memset DecodeMemset(const abi::CUpti_Activity* rec, uint32_t cupti_version) {
  const auto* m = reinterpret_cast<const abi::CUpti_ActivityMemset4*>(rec);
  return wire::Memset{m->correlationId, m->value,    m->bytes,     m->start,
                      m->end,           m->deviceId, m->contextId, m->streamId,
                      m->memoryKind,    cupti_version >= abi::kApiVersion13_0 ? m->graphId : 0};
}

std::optional<DecodedMemory> DecodeMemory(const abi::CUpti_Activity* rec) {
  const auto* m = reinterpret_cast<const abi::CUpti_ActivityMemory4*>(rec);
  if (m->memoryOperationType != abi::kMemoryOperationAllocation &&
      m->memoryOperationType != abi::kMemoryOperationRelease) {
    return std::nullopt;
  }
  return DecodedMemory{m->memoryOperationType == abi::kMemoryOperationAllocation,
                       static_cast<uint32_t>(m->memoryKind), m->deviceId, m->address, m->bytes};
}

std::optional<wire::NvtxRange> MarkerPairer::Add(const abi::CUpti_Activity* rec) {
  const auto* m = reinterpret_cast<const abi::CUpti_ActivityMarker2*>(rec);
  const uint32_t tid = m->objectKind == abi::kActivityObjectThread ? m->objectThreadId : 0;
  const char* name = m->name != nullptr ? m->name : "";
  const char* domain = m->domain != nullptr ? m->domain : "";
  if (m->flags & abi::kActivityFlagMarkerStart) {
    if (open_.size() >= max_open_ && !open_.contains(m->id)) {
      ++dropped_;
      return std::nullopt;
    }
    open_[m->id] = Start{name, domain, m->timestamp, tid};
    return std::nullopt;
  }
  if (m->flags & abi::kActivityFlagMarkerEnd) {
    auto it = open_.find(m->id);
    if (it == open_.end()) {
      ++dropped_;
      return std::nullopt;
    }
    wire::NvtxRange r{std::move(it->second.name), std::move(it->second.domain), it->second.ts,
                      m->timestamp, it->second.tid};
    open_.erase(it);
    return r;
  }
  if (m->flags & abi::kActivityFlagMarkerInstantaneous) {
    return wire::NvtxRange{name, domain, m->timestamp, m->timestamp, tid};
  }
  return std::nullopt;
}

}  // namespace warpscope::cupti_inject
