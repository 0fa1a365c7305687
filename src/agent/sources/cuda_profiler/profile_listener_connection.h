// SPDX-License-Identifier: Apache-2.0
// One library connection of ProfileListener (private to profile_listener*.cc).
#ifndef WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_PROFILE_LISTENER_CONNECTION_H_
#define WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_PROFILE_LISTENER_CONNECTION_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "agent/sources/cuda_profiler/profile_listener.h"
#include "agent/sources/cuda_profiler/wire_convert.h"
#include "cupti/wire.h"

namespace warpscope::agent::cuda_profiler {

struct ProfileListener::Connection {
  Connection(int fd_in, int32_t peer_pid, const ConnectionConverter::Options& options)
      : fd(fd_in), converter(peer_pid, options) {}
  int fd;
  ConnectionConverter converter;
  ::warpscope::cupti::wire::StreamDecoder decoder;
  std::string out;
  size_t out_pos = 0;
  bool closed = false;
  bool nccl = false;     // its Hello came from the NCCL plugin
  int32_t live_pid = 0;  // counted in live_by_pid_ (nccl_live_by_pid_ for the NCCL plugin)
};

}  // namespace warpscope::agent::cuda_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_PROFILE_LISTENER_CONNECTION_H_
