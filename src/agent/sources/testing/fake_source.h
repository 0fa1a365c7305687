// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_AGENT_SOURCES_TESTING_FAKE_SOURCE_H_
#define WARPSCOPE_AGENT_SOURCES_TESTING_FAKE_SOURCE_H_

#include <atomic>
#include <functional>
#include <string>

#include "agent/sources/source.h"

namespace warpscope::agent {

// A Source whose Poll (on the agent's worker thread for it) and Finish (on the main sequence) run
// test-supplied functions. A Poll function may block, e.g. on a std::latch the test releases.
class FakeSource : public Source {
 public:
  using PollFn = std::function<void(base::TimePoint, model::SampleSink&)>;
  FakeSource(std::string name, PollFn poll, base::Status start_status = {}, PollFn finish = {})
      : name_(std::move(name)),
        poll_(std::move(poll)),
        finish_(std::move(finish)),
        start_status_(std::move(start_status)) {}

  std::string_view name() const override { return name_; }
  base::Status Start() override { return start_status_; }
  void Poll(base::TimePoint now, model::SampleSink& out) override {
    ++polls;
    if (poll_) poll_(now, out);
    ++polls_returned;
  }
  void Finish(base::TimePoint now, model::SampleSink& out) override {
    ++finishes;
    if (finish_) finish_(now, out);
  }
  void Stop() override { stopped = true; }
  void SetPollDeadline(base::Duration deadline) override { poll_deadline = deadline; }

  std::atomic<int> polls = 0;           // Poll calls started
  std::atomic<int> polls_returned = 0;  // Poll calls that returned
  int finishes = 0;
  bool stopped = false;
  base::Duration poll_deadline{0};

 private:
  std::string name_;
  PollFn poll_;
  PollFn finish_;
  base::Status start_status_;
};

}  // namespace warpscope::agent

#endif  // WARPSCOPE_AGENT_SOURCES_TESTING_FAKE_SOURCE_H_
