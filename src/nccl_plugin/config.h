// SPDX-License-Identifier: Apache-2.0
// The NCCL plugin's settings, read once from WARPSCOPE_NCCL_* at the first communicator's init
// (docs/design/nccl.md, "Settings"). An invalid value is reported in `warnings` and means the
// default.
#ifndef WARPSCOPE_NCCL_PLUGIN_CONFIG_H_
#define WARPSCOPE_NCCL_PLUGIN_CONFIG_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace warpscope::nccl_plugin {

struct PluginConfig {
  // WARPSCOPE_NCCL_SOCKET, else WARPSCOPE_AGENT_SOCKET (the agent listens on one socket for both
  // libraries), else the agent's default (/run/warpscope/cupti.sock, or
  // $XDG_RUNTIME_DIR/warpscope/cupti.sock when the former does not exist).
  std::string agent_socket;
  bool enabled = true;            // WARPSCOPE_NCCL_ENABLED (0/1): 0 makes init fail (plugin off)
  bool proxy_detail = false;      // WARPSCOPE_NCCL_PROXY_DETAIL (0/1): proxy ops and steps too
  uint32_t max_events = 8192;     // WARPSCOPE_NCCL_MAX_EVENTS in flight (64..1048576)
  uint32_t ring_kb = 256;         // WARPSCOPE_NCCL_RING_KB per recording thread (4..65536)
  uint32_t max_threads = 64;      // WARPSCOPE_NCCL_MAX_THREADS with a ring (1..4096)
  uint32_t out_kb = 4096;         // WARPSCOPE_NCCL_OUT_KB: unsent bytes kept (64..262144)
  uint32_t flush_ms = 200;        // WARPSCOPE_NCCL_FLUSH_MS: the flusher's period (1..60000)
  bool log_stderr = false;        // WARPSCOPE_NCCL_LOG=stderr: also log to stderr
};

using GetEnv = std::function<const char*(const char*)>;

PluginConfig ReadPluginConfig(const GetEnv& getenv, std::vector<std::string>* warnings);

// The agent's default socket when none is configured (`exists` is a seam for tests).
std::string DefaultSocket(const GetEnv& getenv, const std::function<bool(const char*)>& exists);

}  // namespace warpscope::nccl_plugin

#endif  // WARPSCOPE_NCCL_PLUGIN_CONFIG_H_
