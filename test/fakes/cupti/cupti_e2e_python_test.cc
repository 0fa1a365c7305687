// SPDX-License-Identifier: Apache-2.0
// End to end (cupti_e2e_fixture.h). Python frames of the launching code, read from Debian's embedded CPython 3.11 with the GIL held
// and released.
#include "cupti_e2e_fixture.h"

namespace warpscope::cupti::e2e {
namespace {

TEST_F(CuptiE2eTest, PythonFramesOfTheLaunchingCode) {
  WARPSCOPE_REQUIRE_PEER(FAKE_APP_HAS_PYTHON, "python3-dev (fake_cuda_app was built without Python)",
                         "run scripts/setup.sh --test and rebuild");
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "0", "--python"}, Env(SocketPath(), {}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  ASSERT_EQ(r.launches.size(), 6u);
  const auto& stack = r.stacks[r.launches[0].stack_hash];
  ASSERT_GE(stack.python.size(), 3u);
  EXPECT_EQ(stack.python[0].function, "model_forward");
  EXPECT_EQ(stack.python[0].file, "fake_train.py");
  EXPECT_EQ(stack.python[0].line, 4u);
  EXPECT_EQ(stack.python[1].function, "train_step");
  EXPECT_EQ(stack.python[1].line, 6u);
  EXPECT_EQ(stack.python[2].function, "<module>");
  EXPECT_TRUE(StackHasSite(stack, run.sites["FakeAppLaunchFromPython"]));
  // The launch made with the GIL released has its Python frames too (read from memory).
  const auto& nogil = r.stacks[r.launches[5].stack_hash];
  EXPECT_EQ(r.launches[5].symbol, "_Z10nogil_kernv");
  ASSERT_EQ(nogil.python.size(), 1u);
  EXPECT_EQ(nogil.python[0].function, "<module>");
  EXPECT_EQ(nogil.python[0].file, "fake_train.py");
  EXPECT_EQ(nogil.python[0].line, 8u);
  EXPECT_TRUE(StackHasSite(nogil, run.sites["FakeAppLaunchFromPython"]));
  ASSERT_EQ(r.kernels.size(), 6u);
  EXPECT_EQ(r.names[r.kernels[0].name_id], "_Z9py_kernelv");
  EXPECT_EQ(r.gpu_ns["_Z9py_kernelv"], 5u * 3000);
}

// PyTorch, Triton and vLLM release the GIL before they launch: the stack still names the
// Python code, frame by frame (test/fakes/cupti/fake_cuda_app.cc kNoGilScript).
TEST_F(CuptiE2eTest, PythonFramesOfLaunchesWithTheGilReleased) {
  WARPSCOPE_REQUIRE_PEER(FAKE_APP_HAS_PYTHON, "python3-dev (fake_cuda_app was built without Python)",
                         "run scripts/setup.sh --test and rebuild");
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "0", "--python-nogil"}, Env(SocketPath(), {}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  ASSERT_EQ(r.launches.size(), 6u);
  ASSERT_TRUE(r.notices.empty()) << r.notices[0].message;
  struct Want {
    std::string function;
    std::string file;
    uint32_t line;
  };
  auto python_of = [&](const std::string& symbol) {
    std::vector<Want> out;
    for (const auto& l : r.launches) {
      if (l.symbol == symbol) {
        for (const auto& f : r.stacks[l.stack_hash].python) {
          out.push_back({std::string(f.function), std::string(f.file), f.line});
        }
        EXPECT_TRUE(StackHasSite(r.stacks[l.stack_hash], run.sites["FakeAppLaunchFromPython"]))
            << symbol;
        return out;
      }
    }
    ADD_FAILURE() << "no launch of " << symbol;
    return out;
  };
  auto expect = [](const std::vector<Want>& got, const std::vector<Want>& want,
                   const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].function, want[i].function) << what << " frame " << i;
      EXPECT_EQ(got[i].file, want[i].file) << what << " frame " << i;
      EXPECT_EQ(got[i].line, want[i].line) << what << " frame " << i;
    }
  };
  expect(python_of("_Z13nogil_forwardv"),
         {{"model_forward", "fake_nogil.py", 5}, {"train_step", "fake_nogil.py", 7},
          {"<module>", "fake_nogil.py", 17}},
         "function");
  expect(python_of("_Z12nogil_methodv"),
         {{"Model.forward", "fake_nogil.py", 10}, {"<module>", "fake_nogil.py", 18}}, "method");
  expect(python_of("_Z15nogil_generatorv"),
         {{"batches", "fake_nogil.py", 12}, {"<module>", "fake_nogil.py", 19}}, "generator");
  // The coroutine runs under asyncio's event loop: its own frame first, the script's last.
  const auto coro = python_of("_Z15nogil_coroutinev");
  ASSERT_GE(coro.size(), 3u);
  EXPECT_EQ(coro.front().function, "serve");
  EXPECT_EQ(coro.front().file, "fake_nogil.py");
  EXPECT_EQ(coro.front().line, 16u);
  EXPECT_EQ(coro.back().function, "<module>");
  EXPECT_EQ(coro.back().line, 21u);
  for (size_t i = 1; i + 1 < coro.size(); ++i) {
    EXPECT_NE(coro[i].file.find("asyncio"), std::string::npos) << coro[i].file;
  }
  // A thread that never ran Python: native frames only.
  EXPECT_TRUE(python_of("_Z12native_kernv").empty());
  EXPECT_EQ(r.kernels.size(), 6u);
}

}  // namespace
}  // namespace warpscope::cupti::e2e
