// SPDX-License-Identifier: Apache-2.0
// What the CUDA profiler's listener needs of the file system: its socket path (default,
// directories, a stale socket) and the /proc files of a connecting process (start ticks, job, step range).
// Plain functions; callable from any thread.
#ifndef WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_LISTEN_SOCKET_H_
#define WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_LISTEN_SOCKET_H_

#include <sys/un.h>

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"
#include "model/job.h"

namespace warpscope::agent::cuda_profiler {

// Where the agent listens when --cuda-profiler-socket is not given, matching the injected
// library's default (src/cupti_inject/env_config.h): /run/warpscope/cupti.sock when the agent
// may create it (root, or /run/warpscope writable), else $XDG_RUNTIME_DIR/warpscope/cupti.sock,
// else the /run path (Start then fails with a message naming the flag).
std::string DefaultListenSocket(const std::function<const char*(const char*)>& getenv);

// The address of a path shorter than sun_path (the caller checks).
sockaddr_un SocketAddress(const std::string& path);

// Creates the missing parent directories (0755) and removes a stale socket file (nobody
// accepting). Unavailable when another agent listens there or a directory cannot be made;
// InvalidArgument when the path is not a socket or its parent not a directory.
[[nodiscard]] base::Status PrepareSocketPath(const std::string& path);

// Field 22 of <host_root>/proc/<pid>/stat; 0 when unreadable.
uint64_t ReadStartTicks(const std::string& host_root, int32_t pid);
// The job of <host_root>/proc/<pid>/environ (model::ParseJobEnviron); empty when unreadable.
model::JobIdentity ReadJobIdentity(const std::string& host_root, int32_t pid);
// The process's job, and its WARPSCOPE_STEP_RANGE (the name of its NVTX step range; "" when
// unset or unreadable, at most 128 bytes), from one read of its environ.
struct ProcessEnviron {
  model::JobIdentity job;
  std::string step_range;
};
ProcessEnviron ReadProcessEnviron(const std::string& host_root, int32_t pid);

}  // namespace warpscope::agent::cuda_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_LISTEN_SOCKET_H_
