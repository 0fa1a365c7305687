// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_AGENT_SOURCES_TESTING_FAKE_SOURCE_H_
#define WARPSCOPE_AGENT_SOURCES_TESTING_FAKE_SOURCE_H_

#include <functional>
#include <string>

#include "agent/sources/source.h"

namespace warpscope::agent {

// A Source whose Poll runs a test-supplied function.
class FakeSource : public Source {
 public:
  using PollFn = std::function<void(base::TimePoint, model::SampleSink&)>;
  FakeSource(std::string name, PollFn poll, base::Status start_status = {})
      : name_(std::move(name)), poll_(std::move(poll)), start_status_(std::move(start_status)) {}

  std::string_view name() const override { return name_; }
  base::Status Start() override { return start_status_; }
  void Poll(base::TimePoint now, model::SampleSink& out) override {
    ++polls;
    if (poll_) poll_(now, out);
  }
  void Stop() override { stopped = true; }

  int polls = 0;
  bool stopped = false;

 private:
  std::string name_;
  PollFn poll_;
  base::Status start_status_;
};

}  // namespace warpscope::agent

#endif  // WARPSCOPE_AGENT_SOURCES_TESTING_FAKE_SOURCE_H_
