// SPDX-License-Identifier: Apache-2.0
#include "nccl_plugin/config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace warpscope::nccl_plugin {
namespace {

void ReadBool(const GetEnv& getenv, const char* name, bool* out,
              std::vector<std::string>* warnings) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') {
    return;
  }
  if (std::strcmp(v, "1") == 0) {
    *out = true;
  } else if (std::strcmp(v, "0") == 0) {
    *out = false;
  } else {
    warnings->push_back(std::string(name) + "=" + v + " is not 0 or 1; using the default");
  }
}

void ReadUint(const GetEnv& getenv, const char* name, uint32_t lo, uint32_t hi, uint32_t* out,
              std::vector<std::string>* warnings) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') {
    return;
  }
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (errno != 0 || *end != '\0' || *v == '-' || n < lo || n > hi) {
    warnings->push_back(std::string(name) + "=" + v + " is not in " + std::to_string(lo) + ".." +
                        std::to_string(hi) + "; using the default");
    return;
  }
  *out = static_cast<uint32_t>(n);
}

}  // namespace

PluginConfig ReadPluginConfig(const GetEnv& getenv, std::vector<std::string>* warnings) {
  PluginConfig c;
  for (const char* name : {"WARPSCOPE_NCCL_SOCKET", "WARPSCOPE_AGENT_SOCKET"}) {
    const char* v = getenv(name);
    if (v != nullptr && *v != '\0') {
      c.agent_socket = v;
      break;
    }
  }
  ReadBool(getenv, "WARPSCOPE_NCCL_ENABLED", &c.enabled, warnings);
  ReadBool(getenv, "WARPSCOPE_NCCL_PROXY_DETAIL", &c.proxy_detail, warnings);
  ReadUint(getenv, "WARPSCOPE_NCCL_MAX_EVENTS", 64, 1u << 20, &c.max_events, warnings);
  ReadUint(getenv, "WARPSCOPE_NCCL_RING_KB", 4, 65536, &c.ring_kb, warnings);
  ReadUint(getenv, "WARPSCOPE_NCCL_MAX_THREADS", 1, 4096, &c.max_threads, warnings);
  ReadUint(getenv, "WARPSCOPE_NCCL_OUT_KB", 64, 262144, &c.out_kb, warnings);
  ReadUint(getenv, "WARPSCOPE_NCCL_FLUSH_MS", 1, 60000, &c.flush_ms, warnings);
  const char* log = getenv("WARPSCOPE_NCCL_LOG");
  c.log_stderr = log != nullptr && std::strcmp(log, "stderr") == 0;
  return c;
}

std::string DefaultSocket(const GetEnv& getenv, const std::function<bool(const char*)>& exists) {
  static constexpr const char* kSystemSocket = "/run/warpscope/cupti.sock";
  if (exists(kSystemSocket)) {
    return kSystemSocket;
  }
  const char* xdg = getenv("XDG_RUNTIME_DIR");
  if (xdg != nullptr && *xdg == '/') {
    return std::string(xdg) + "/warpscope/cupti.sock";
  }
  return kSystemSocket;
}

}  // namespace warpscope::nccl_plugin
