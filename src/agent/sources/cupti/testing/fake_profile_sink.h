// SPDX-License-Identifier: Apache-2.0
// A ProfileSink that keeps every profile it is given, and can be told to fail.
#ifndef WARPSCOPE_AGENT_SOURCES_CUPTI_TESTING_FAKE_PROFILE_SINK_H_
#define WARPSCOPE_AGENT_SOURCES_CUPTI_TESTING_FAKE_PROFILE_SINK_H_

#include <vector>

#include "agent/sources/cupti/profile_sink.h"

namespace warpscope::agent::cupti {

class FakeProfileSink final : public ProfileSink {
 public:
  base::Status Write(const WindowProfile& profile) override {
    if (!fail_with.ok()) {
      ++failed_writes;
      return fail_with;
    }
    profiles.push_back(profile);
    return base::OkStatus();
  }

  std::vector<WindowProfile> profiles;
  base::Status fail_with;  // OK: accept
  int failed_writes = 0;
};

}  // namespace warpscope::agent::cupti

#endif  // WARPSCOPE_AGENT_SOURCES_CUPTI_TESTING_FAKE_PROFILE_SINK_H_
