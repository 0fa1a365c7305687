// SPDX-License-Identifier: Apache-2.0
// A minimal agent for the profiler's end-to-end tests: listens on a unix socket, accepts any
// number of injected processes and decodes their wire messages with cupti::wire::StreamDecoder.
#ifndef WARPSCOPE_TEST_FAKES_CUPTI_TEST_AGENT_H_
#define WARPSCOPE_TEST_FAKES_CUPTI_TEST_AGENT_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cupti/wire.h"

namespace warpscope::cupti::testing {

struct AgentConnection {
  std::vector<wire::Message> messages;
  bool closed = false;     // the process closed its end (after its final flush)
  std::string error;       // a decode error, if any
  uint32_t pid = 0;        // from Hello
};

class TestAgent {
 public:
  // Listens on `socket_path`. With `reading` false the agent accepts but does not read until
  // StartReading() (a flooded agent).
  TestAgent(std::string socket_path, bool reading = true);
  ~TestAgent();
  TestAgent(const TestAgent&) = delete;
  TestAgent& operator=(const TestAgent&) = delete;

  void StartReading();
  // Sends a Control message to every open connection.
  void SendControl(const wire::Control& control);

  // Waits until `done(connections)` holds (checked after every change) or the timeout passes.
  bool WaitUntil(const std::function<bool(const std::vector<AgentConnection>&)>& done,
                 std::chrono::milliseconds timeout);
  std::vector<AgentConnection> Snapshot();

 private:
  void Loop();

  std::string path_;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::mutex mu_;
  std::condition_variable cv_;
  bool reading_;
  bool stop_ = false;
  std::vector<int> fds_;
  std::vector<wire::StreamDecoder> decoders_;
  std::vector<AgentConnection> connections_;
  std::thread thread_;
};

}  // namespace warpscope::cupti::testing

#endif  // WARPSCOPE_TEST_FAKES_CUPTI_TEST_AGENT_H_
