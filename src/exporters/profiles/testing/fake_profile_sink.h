// SPDX-License-Identifier: Apache-2.0
// A ProfileSink that keeps every profile it is given, and can be told to fail.
#ifndef WARPSCOPE_EXPORTERS_PROFILES_TESTING_FAKE_PROFILE_SINK_H_
#define WARPSCOPE_EXPORTERS_PROFILES_TESTING_FAKE_PROFILE_SINK_H_

#include <vector>

#include "exporters/profiles/profile_sink.h"

namespace warpscope::exporters {

class FakeProfileSink final : public ProfileSink {
 public:
  base::Status Write(const profiling::WindowProfile& profile) override {
    if (!fail_with.ok()) {
      ++failed_writes;
      return fail_with;
    }
    profiles.push_back(profile);
    return base::OkStatus();
  }

  profiling::ProfileFormats formats() const override { return profiling::ProfileFormats::All(); }

  std::vector<profiling::WindowProfile> profiles;
  base::Status fail_with;  // OK: accept
  int failed_writes = 0;
};

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_PROFILES_TESTING_FAKE_PROFILE_SINK_H_
