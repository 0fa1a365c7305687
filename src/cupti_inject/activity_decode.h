// SPDX-License-Identifier: Apache-2.0
// Decoding of CUPTI activity records into wire messages, and NVTX marker pairing. Pure functions
// over the record layouts of cupti/abi.h; used by the flusher thread.
//
// Versions: records carry no size field, so the layout comes from the libcupti API version
// (cuptiGetVersion). Kernel records are read through the prefix shared by Kernel9 (CUDA 12) and
// Kernel10 (CUDA 13.0); memcpy/memset graph ids only from CUDA 13 records (kApiVersion13_0+);
// memory records through the prefix Memory3 (CUDA 11.8) and Memory4 (CUDA 13.0) share.
#ifndef WARPSCOPE_CUPTI_INJECT_ACTIVITY_DECODE_H_
#define WARPSCOPE_CUPTI_INJECT_ACTIVITY_DECODE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "cupti/abi.h"
#include "cupti/wire.h"

namespace warpscope::cupti_inject {

namespace wire = ::warpscope::cupti::wire;

// A kernel record: the wire fields (name_id left 0) and CUPTI's shared name string.
struct DecodedKernel {
  wire::KernelActivity activity;
  const char* name = nullptr;
};

// `rec` must be of kind CONCURRENT_KERNEL or KERNEL.
DecodedKernel DecodeKernel(const cupti::abi::CUpti_Activity* rec, uint32_t cupti_version);
// `rec` must be of kind MEMCPY / MEMSET.
wire::Memcpy DecodeMemcpy(const cupti::abi::CUpti_Activity* rec, uint32_t cupti_version);
wire::Memset DecodeMemset(const cupti::abi::CUpti_Activity* rec, uint32_t cupti_version);

// An allocation or release through the CUDA allocator (a MEMORY2 record).
struct DecodedMemory {
  bool allocation = false;  // else a release (records of another operation type are not decoded)
  uint32_t memory_kind = 0;
  uint32_t device = 0;
  uint64_t address = 0;
  uint64_t bytes = 0;
};
// `rec` must be of kind MEMORY2 (Memory4 in CUDA 13, Memory3 before: the prefix read is the
// same). nullopt for an operation type other than allocation or release.
std::optional<DecodedMemory> DecodeMemory(const cupti::abi::CUpti_Activity* rec);

// Pairs NVTX MARKER start and end records by id into ranges. Bounded: at most `max_open` ranges
// wait for their end (further starts are dropped and counted).
class MarkerPairer {
 public:
  explicit MarkerPairer(size_t max_open = 4096) : max_open_(max_open) {}

  // `rec` must be of kind MARKER. Returns a range when one completes (an end, or an
  // instantaneous marker as a zero-length range).
  std::optional<wire::NvtxRange> Add(const cupti::abi::CUpti_Activity* rec);

  size_t open() const { return open_.size(); }
  uint64_t dropped() const { return dropped_; }

 private:
  struct Start {
    std::string name;
    std::string domain;
    uint64_t ts;
    uint32_t tid;
  };
  size_t max_open_;
  uint64_t dropped_ = 0;
  std::unordered_map<uint32_t, Start> open_;
};

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_ACTIVITY_DECODE_H_
