// SPDX-License-Identifier: Apache-2.0
// Discovery of the inference servers of a host from /proc: serving processes by command line
// (vLLM, SGLang, TensorRT-LLM, TGI), their arguments, and the TCP port they listen on (LISTEN
// sockets of /proc/<pid>/net/tcp and tcp6 matched by inode against the socket:[N] links in
// /proc/<pid>/fd of the process and its descendants). Reads files only; a process that vanishes
// or cannot be read is skipped. Any thread; no state.
#ifndef WARPSCOPE_AGENT_SOURCES_INFERENCE_DISCOVERY_H_
#define WARPSCOPE_AGENT_SOURCES_INFERENCE_DISCOVERY_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "agent/sources/inference/engines.h"
#include "agent/sources/inference/inference_window.h"

namespace warpscope::agent::inference {

// What a server's command line says.
struct ServerCommand {
  Engine engine = Engine::kVllm;
  std::optional<int> port;   // --port, else the engine's default
  std::string model;         // the served model name, else the model argument
  BatchLimits limits;        // from the arguments, else the engine's documented defaults
  std::string metrics_path;  // "/metrics" ("/prometheus/metrics" for TensorRT-LLM)
};

// The serving command `argv` runs; nullopt for any other command line.
std::optional<ServerCommand> ParseServerCommand(std::span<const std::string> argv);

struct ServingProcess {
  int pid = 0;
  uint64_t start_ticks = 0;  // /proc/<pid>/stat field 22
  std::string comm;          // /proc/<pid>/stat field 2
  std::string command_line;  // argv joined by spaces
  ServerCommand command;
  std::vector<int> descendants;   // sorted
  std::vector<int> listen_ports;  // of the process and its descendants, sorted
  std::string url;                // http://127.0.0.1:<port><metrics path>; "" when not listening
  // False for a process read by pid (ReadServingProcess) whose command line is no server's:
  // `command` is then the default (engine, model and limits unknown).
  bool serving_command = true;
};

// The serving processes under `proc_root` (e.g. "/proc"), by pid. A serving process that
// descends from another one (a forked worker with the same command line) is part of that one.
// The port is --port when the process listens there, else its lowest listening port.
std::vector<ServingProcess> DiscoverServingProcesses(const std::string& proc_root);

// The process `pid` under `proc_root` as a serving process, whatever its command line (a static
// target names it: a wrapper's command line is not a server's), with its descendants and
// listening ports; nullopt when it does not exist.
std::optional<ServingProcess> ReadServingProcess(const std::string& proc_root, int pid);

}  // namespace warpscope::agent::inference

#endif  // WARPSCOPE_AGENT_SOURCES_INFERENCE_DISCOVERY_H_
