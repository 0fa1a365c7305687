// SPDX-License-Identifier: Apache-2.0
// Tests that need a real peer (a program or library installed by scripts/setup.sh: Prometheus,
// node_exporter, Chromium, python3-dev, the OpenTelemetry SDK, the NVML simulator, ...).
//
// WARPSCOPE_REQUIRE_PEER(available, what, remedy): when `available` is false, the test fails in
// CI (environment CI=true, as .ci/run runs) and is skipped elsewhere, both with "<what> is
// missing: <remedy>". A CI run therefore never passes a test that checked nothing. Use it in a
// test body or SetUp (it returns from the enclosing function); a helper that uses it leaves the
// caller to stop on `IsSkipped() || HasFatalFailure()`.
#ifndef WARPSCOPE_BASE_TESTING_PEER_H_
#define WARPSCOPE_BASE_TESTING_PEER_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string_view>

namespace warpscope::base {

// True when the tests run in CI: the environment variable CI is "true" (or "1").
inline bool InCi() {
  const char* ci = getenv("CI");
  return ci != nullptr && (std::string_view(ci) == "true" || std::string_view(ci) == "1");
}

}  // namespace warpscope::base

#define WARPSCOPE_REQUIRE_PEER(available, what, remedy)                                          \
  do {                                                                                           \
    if (!(available)) {                                                                          \
      if (::warpscope::base::InCi()) {                                                           \
        GTEST_FAIL() << what << " is missing: " << remedy << " (CI=true: a missing peer fails)"; \
      } else {                                                                                   \
        GTEST_SKIP() << what << " is missing: " << remedy;                                       \
      }                                                                                          \
    }                                                                                            \
  } while (0)

#endif  // WARPSCOPE_BASE_TESTING_PEER_H_
