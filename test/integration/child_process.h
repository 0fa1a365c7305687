// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_TEST_INTEGRATION_CHILD_PROCESS_H_
#define WARPSCOPE_TEST_INTEGRATION_CHILD_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/testing/temp_dir.h"

namespace warpscope::test {

// Temporary directories: the one helper every test uses.
using base::TempDir;

// A program started by a test: stdout and stderr go to files in `log_dir`; the child dies with
// the test process (PR_SET_PDEATHSIG) and is killed by the destructor if still running.
class ChildProcess {
 public:
  [[nodiscard]] static base::Result<std::unique_ptr<ChildProcess>> Start(
      std::vector<std::string> argv, const std::string& log_dir,
      std::vector<std::string> extra_env = {});
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // Sends `sig` and waits up to `timeout` for the exit; returns the exit status as from
  // waitpid (use WIFEXITED/WEXITSTATUS), or -1 on timeout (the child is then SIGKILLed).
  int Signal(int sig, std::chrono::milliseconds timeout);
  // Waits up to `timeout` for the child to exit by itself; -1 on timeout.
  int Wait(std::chrono::milliseconds timeout);
  std::string Stdout() const;
  std::string Stderr() const;

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
  bool exited_ = false;
  std::string out_path_;
  std::string err_path_;
};

// A TCP port on 127.0.0.1 that was free a moment ago (bind port 0, read it, close), for peers
// that cannot report the port they bound.
int PickFreePort();

// The `warpscope` binary of this build.
std::string WarpscopeBinary();

// What the tests that run an agent pushing to a server start from: `scenario_yaml` written to
// <dir>/scenario.yaml, an ingest token in <dir>/token (mode 0600, as the token checks require)
// and two free ports. `ok` is false (and the test should stop) when a file could not be written.
struct AgentServerFiles {
  bool ok = false;
  std::string scenario;
  std::string token;
  int server_port = 0;
  int agent_port = 0;
};
AgentServerFiles PrepareAgentAndServer(const TempDir& dir, std::string_view scenario_yaml);

// `warpscope agent` on `files.scenario` as `hostname`, collecting every 500 ms, closing a window
// every second and pushing it to the server of `files` with its token (no host metrics).
std::vector<std::string> PushingAgentArgv(const AgentServerFiles& files, std::string_view hostname);

// A simulator scenario of two busy H100s at 60 °C, named `name`, whose GPU 1 follows
// `gpu1_temperature` (a signal, e.g. "{piecewise: [[0s, 60], [2m, 110]]}"): the cooling
// failure of the insights and alert tests.
std::string TwoGpuCoolingScenario(std::string_view name, std::string_view gpu1_temperature);

}  // namespace warpscope::test

#endif  // WARPSCOPE_TEST_INTEGRATION_CHILD_PROCESS_H_
