// SPDX-License-Identifier: Apache-2.0
// The "Python frames are off" path: raised on a launch thread without allocating, posted once as
// a notice for the agent by the flusher's pass, and no Python frames captured after it.
#include <gtest/gtest.h>

#include <memory>

#include "cupti_inject/flusher.h"
#include "cupti_inject/stack_capture.h"
#include "cupti_inject/state.h"

namespace warpscope::cupti_inject {
namespace {

TEST(PythonNoticeTest, TurningPythonOffPostsOneNotice) {
  auto state = std::make_unique<Global>();
  Global* const saved = g;
  g = state.get();
  PostPythonNotice();
  EXPECT_TRUE(g->notices.empty()) << "nothing raised yet";

  TurnPythonOff(3, 15, "unsupported interpreter version");
  TurnPythonOff(3, 15, "a second reason");  // the walk is off already: no second notice
  PostPythonNotice();
  PostPythonNotice();
  ASSERT_EQ(g->notices.size(), 1u);
  EXPECT_EQ(g->notices[0].severity, wire::Severity::kWarning);
  EXPECT_EQ(g->notices[0].message,
            "Python frames are off: CPython 3.15: unsupported interpreter version (native stacks "
            "are unaffected)");
  EXPECT_EQ(g->notice_generation.load(), 1u);
  EXPECT_EQ(TakePythonNotice(), nullptr);

  PythonStack py;
  CapturePython(&py);
  EXPECT_EQ(py.count, 0u);
  EXPECT_FALSE(PythonAvailable());
  g = saved;
}

}  // namespace
}  // namespace warpscope::cupti_inject
