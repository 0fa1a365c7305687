// SPDX-License-Identifier: Apache-2.0
// Message size and bus traffic of an NCCL operation, as NCCL Inspector and nccl-tests count them
// (docs/design/nccl.md, "Bandwidth"). Pure functions, no allocation: called on NCCL's threads.
//
//   bytes     = count x size of the datatype (the message of one rank)
//   all-reduce:                  bus = bytes x 2(n-1)/n
//   reduce-scatter, all-gather:  bus = (n x bytes) x (n-1)/n     (count is the per-rank part)
//   broadcast, reduce, send, recv and P2P: bus = bytes
//   anything else:               bus = 0 (no bandwidth reported)
// Bus bandwidth = bus / execution time; algorithm bandwidth = bytes (n x bytes for
// reduce-scatter and all-gather) / execution time.
#ifndef WARPSCOPE_NCCL_PLUGIN_BANDWIDTH_H_
#define WARPSCOPE_NCCL_PLUGIN_BANDWIDTH_H_

#include <cstdint>
#include <string_view>

namespace warpscope::nccl_plugin {

// Bytes per element of an NCCL datatype name ("ncclFloat32" -> 4); 0 when unknown.
constexpr uint32_t DatatypeSize(std::string_view t) {
  if (t == "ncclInt8" || t == "ncclUint8" || t == "ncclFloat8e4m3" || t == "ncclFloat8e5m2") {
    return 1;
  }
  if (t == "ncclFloat16" || t == "ncclBfloat16") {
    return 2;
  }
  if (t == "ncclInt32" || t == "ncclUint32" || t == "ncclFloat32") {
    return 4;
  }
  if (t == "ncclInt64" || t == "ncclUint64" || t == "ncclFloat64") {
    return 8;
  }
  return 0;
}

// Bus bytes of an operation of `bytes` per rank in a communicator of `nranks`.
constexpr uint64_t BusBytes(std::string_view func, bool p2p, uint64_t bytes, uint32_t nranks) {
  if (p2p || func == "Broadcast" || func == "Reduce" || func == "Send" || func == "Recv" ||
      func == "SendRecv") {
    return bytes;
  }
  if (nranks == 0) {
    return 0;
  }
  if (func == "AllReduce") {
    return bytes * 2 * (nranks - 1) / nranks;
  }
  if (func == "ReduceScatter" || func == "AllGather" || func == "AllGatherV") {
    return bytes * nranks * (nranks - 1) / nranks;
  }
  return 0;
}

}  // namespace warpscope::nccl_plugin

#endif  // WARPSCOPE_NCCL_PLUGIN_BANDWIDTH_H_
