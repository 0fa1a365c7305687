// SPDX-License-Identifier: Apache-2.0
// Simulated hosts pushing to a real server, all on one simulated clock: each host is an
// insights_sim_host process (the agent as `warpscope agent --simulate` wires it, on the NVML
// simulator's manual clock), the server is ServerProcess (HTTP ingest on 127.0.0.1, port 0,
// embedded storage, the insights engine with its default rules) in this process. RunUntil moves
// everything forward one export interval at a time: every host collects and pushes its window,
// the server acknowledges it, then the server's due tasks (the insights evaluation) run at that
// same simulated instant. An hour takes seconds, and nothing waits on the wall clock.
#ifndef WARPSCOPE_TEST_INTEGRATION_SIM_FLEET_H_
#define WARPSCOPE_TEST_INTEGRATION_SIM_FLEET_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "cli/commands.h"
#include "stepped_time.h"

namespace warpscope::test {

struct SimHost {
  std::string scenario_path;  // a scenario YAML file
  std::string hostname;       // the agent's --hostname
};

class SimFleet {
 public:
  // `warpscope up`'s export interval: the step of RunUntil and of the server's evaluations.
  static constexpr base::Duration kStep = std::chrono::seconds(10);

  // Starts the server and one host process per entry (logs in `dir`), and waits until every
  // host ran its first cycle. The error names the host and quotes its log.
  [[nodiscard]] static base::Result<std::unique_ptr<SimFleet>> Start(
      const std::vector<SimHost>& hosts, const std::string& dir);
  ~SimFleet();

  // Moves simulated time to `elapsed` since the start in steps of kStep. After each step's
  // evaluation, `on_findings(t, answer)` gets GET /api/v1/insights (every kept finding).
  [[nodiscard]] base::Status RunUntil(
      base::Duration elapsed,
      const std::function<void(base::Duration, const nlohmann::json&)>& on_findings);

  // Stops the hosts (each pushes a final window), then the server.
  void Stop();

 private:
  struct Host;  // one insights_sim_host process and its pipes
  SimFleet();

  base::Status Call(Host& host, const std::string& command);
  base::Result<std::string> ReadLine(Host& host);
  std::string LogOf(const Host& host) const;

  SteppedClock clock_;
  SteppedTaskRunner runner_;
  std::string dir_;
  std::string token_;
  std::unique_ptr<cli::ServerProcess> server_;
  std::vector<std::unique_ptr<Host>> hosts_;
};

}  // namespace warpscope::test

#endif  // WARPSCOPE_TEST_INTEGRATION_SIM_FLEET_H_
