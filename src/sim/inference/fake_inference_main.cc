// SPDX-License-Identifier: Apache-2.0
// warpscope-fake-inference: one fake serving engine. Started with the engine's own argv (argv[0]
// chosen by the starter: `vllm serve MODEL --port P ...`, `python3 -m sglang.launch_server ...`,
// `trtllm-serve MODEL ...`, `text-generation-launcher --model-id MODEL ...`), it serves the
// engine's exposition of a deterministic traffic model over HTTP, so that /proc/<pid>/cmdline,
// the listening socket and the scrape all look like the real server's. The traffic, vLLM's
// naming era and the clock come from the JSON file in $WARPSCOPE_FAKE_INFERENCE_CONFIG
// (fake_config.h); the bound port is written to $WARPSCOPE_FAKE_INFERENCE_PORT_FILE.
//
// Threads: main listens (cpp-httplib's pool answers requests, the model behind one mutex); one
// thread waits for SIGTERM/SIGINT (stop) and SIGCHLD (reaps children: `up` starts an engine's
// GPU worker as its child). Exit status 2 on a bad command line or config, 1 when it cannot
// listen.
#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sim/inference/engine_command.h"
#include "sim/inference/exposition.h"
#include "sim/inference/fake_config.h"
#include "sim/inference/traffic_model.h"

namespace warpscope::sim::inference {
namespace {

base::Result<FakeConfig> LoadConfig() {
  const char* path = std::getenv(kConfigEnv);
  if (path == nullptr || *path == '\0') return ParseFakeConfig("{}");
  std::ifstream in(path);
  if (!in) {
    return base::Error(base::NotFound("{}={}: cannot read the file", kConfigEnv, path));
  }
  std::stringstream text;
  text << in.rdbuf();
  auto config = ParseFakeConfig(text.str());
  if (!config) {
    return base::Error(base::InvalidArgument("{}: {}", path, config.error().message()));
  }
  return config;
}

// "PORT\n" to `path`: straight into a FIFO (the starter is reading it), else through a
// temporary file and a rename, so that a reader never sees half a number.
bool WritePort(const char* path, int port) {
  const std::string text = std::to_string(port) + "\n";
  struct stat st {};
  const bool fifo = stat(path, &st) == 0 && S_ISFIFO(st.st_mode);
  const std::string target = fifo ? std::string(path) : std::string(path) + ".tmp";
  const int fd = open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok && (fifo || rename(target.c_str(), path) == 0);
}

void ReapChildren() {
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

class FakeEngine {
 public:
  FakeEngine(const EngineCommand& command, const FakeConfig& config)
      : options_{command, config.vllm_names},
        manual_clock_(config.manual_clock),
        model_(config.traffic),
        start_(std::chrono::steady_clock::now()) {}

  void Install(httplib::Server& server) {
    server.Get(std::string(MetricsPath(options_.command.engine)),
               [this](const httplib::Request&, httplib::Response& res) {
                 std::lock_guard lock(mu_);
                 res.set_content(RenderExposition(options_, model_.Totals(Now())),
                                 "text/plain; version=0.0.4; charset=utf-8");
               });
    server.Get("/health", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("", "text/plain");
    });
    server.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content("{\"object\":\"list\",\"data\":[{\"id\":\"" + options_.command.model +
                          "\",\"object\":\"model\"}]}",
                      "application/json");
    });
    if (manual_clock_) {
      server.Put(kTimePath, [this](const httplib::Request& req, httplib::Response& res) {
        char* end = nullptr;
        const double t = std::strtod(req.body.c_str(), &end);
        if (end == req.body.c_str() || !(t >= 0)) {
          res.status = 400;
          res.set_content("body: seconds since the start, a number >= 0\n", "text/plain");
          return;
        }
        std::lock_guard lock(mu_);
        manual_t_ = t;
      });
    }
  }

 private:
  double Now() const {
    if (manual_clock_) return manual_t_;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  const ExpositionOptions options_;
  const bool manual_clock_;
  std::mutex mu_;
  TrafficModel model_;   // guarded by mu_
  double manual_t_ = 0;  // guarded by mu_
  const std::chrono::steady_clock::time_point start_;
};

int Run(int argc, char** argv) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ReapChildren();  // a child that exited before SIGCHLD was blocked
  // The engine's process name too (/proc/<pid>/comm, the executable the agent reports when it
  // resolves the serving process): what the kernel names an exec'd script, argv[0]'s file name.
  if (argc > 0) {
    const std::string name = std::string(argv[0]).substr(std::string(argv[0]).rfind('/') + 1);
    prctl(PR_SET_NAME, name.substr(0, 15).c_str(), 0, 0, 0);
  }

  auto command = ParseEngineCommand(std::vector<std::string>(argv, argv + argc));
  if (!command) {
    std::fprintf(stderr, "warpscope-fake-inference: %s\n", command.error().message().c_str());
    return 2;
  }
  auto config = LoadConfig();
  if (!config) {
    std::fprintf(stderr, "warpscope-fake-inference: %s\n", config.error().message().c_str());
    return 2;
  }
  FakeEngine engine(*command, *config);
  httplib::Server server;
  engine.Install(server);
  const int port = command->port == 0
                       ? server.bind_to_any_port(command->host)
                       : (server.bind_to_port(command->host, command->port) ? command->port : -1);
  if (port <= 0) {
    std::fprintf(stderr, "warpscope-fake-inference: cannot listen on %s:%d; pick a free --port\n",
                 command->host.c_str(), command->port);
    return 1;
  }
  if (const char* path = std::getenv(kPortFileEnv); path != nullptr && *path != '\0') {
    if (!WritePort(path, port)) {
      std::fprintf(stderr, "warpscope-fake-inference: cannot write the port to %s=%s\n",
                   kPortFileEnv, path);
      return 1;
    }
  }
  std::fprintf(stderr, "warpscope-fake-inference: %s serving %s on %s:%d%s\n",
               std::string(EngineName(command->engine)).c_str(), command->model.c_str(),
               command->host.c_str(), port, std::string(MetricsPath(command->engine)).c_str());
  std::thread waiter([&] {
    for (;;) {
      int sig = 0;
      if (sigwait(&signals, &sig) != 0) continue;
      if (sig == SIGCHLD) {
        ReapChildren();
        continue;
      }
      server.stop();
      return;
    }
  });
  server.listen_after_bind();
  // listen_after_bind returns only after stop() (or a failure); make sure the waiter ends too.
  if (waiter.joinable()) {
    pthread_kill(waiter.native_handle(), SIGTERM);
    waiter.join();
  }
  ReapChildren();
  return 0;
}

}  // namespace
}  // namespace warpscope::sim::inference

int main(int argc, char** argv) {
  try {
    return warpscope::sim::inference::Run(argc, argv);
  } catch (...) {
    std::fprintf(stderr, "warpscope-fake-inference: unexpected exception\n");
    return 1;
  }
}
