// SPDX-License-Identifier: Apache-2.0
// Starts one warpscope-fake-inference from a test, under an engine's own argv, on a port of its
// choice, and hands back its pid and port: what the agent's end-to-end tests discover and
// scrape.
//
//   auto engine = FakeEngineProcess::Start({.argv = {"vllm", "serve", "m", "--port", "0"},
//                                           .config_json = R"({"clock": "manual"})",
//                                           .dir = temp_dir.path()});
//   // engine->pid(), engine->port(), engine->url() == "http://127.0.0.1:PORT/metrics"
//
// The port comes back through a FIFO the fake writes once it listens (no polling). The child
// dies with the test process (PR_SET_PDEATHSIG); the destructor SIGTERMs it and reaps it.
#ifndef WARPSCOPE_SIM_INFERENCE_TESTING_FAKE_ENGINE_PROCESS_H_
#define WARPSCOPE_SIM_INFERENCE_TESTING_FAKE_ENGINE_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace warpscope::sim::inference {

class FakeEngineProcess {
 public:
  struct Options {
    // The engine's argv; argv[0] becomes the process's argv[0] (and its comm). Pass
    // `--port 0` for a free port.
    std::vector<std::string> argv;
    std::string config_json;  // fake_config.h; empty: the defaults
    std::string dir;          // an existing directory for the config, the FIFO and the log
    std::string program = WARPSCOPE_FAKE_INFERENCE_BINARY;
    std::chrono::milliseconds timeout{10000};  // until the port is reported
  };
  [[nodiscard]] static base::Result<std::unique_ptr<FakeEngineProcess>> Start(
      const Options& options);
  ~FakeEngineProcess();
  FakeEngineProcess(const FakeEngineProcess&) = delete;
  FakeEngineProcess& operator=(const FakeEngineProcess&) = delete;

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  const std::string& metrics_path() const { return metrics_path_; }
  // http://127.0.0.1:PORT plus the engine's metrics path.
  std::string url() const;
  // SIGTERM, then waits up to 5 s (SIGKILL after); the exit status as from waitpid.
  int Stop();

 private:
  FakeEngineProcess() = default;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string metrics_path_;
};

}  // namespace warpscope::sim::inference

#endif  // WARPSCOPE_SIM_INFERENCE_TESTING_FAKE_ENGINE_PROCESS_H_
