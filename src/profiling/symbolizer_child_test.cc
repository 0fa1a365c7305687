// SPDX-License-Identifier: Apache-2.0
// Symbolizes an address of another process through its /proc/<pid>/maps.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "profiling/symbolizer.h"

extern char** environ;

namespace warpscope::profiling {
namespace {

// The fixture executable, running until Stop() closes its stdin.
class Testee {
 public:
  Testee() {
    int in[2];
    int out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
      return;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    char* argv[] = {const_cast<char*>(SYMBOLIZER_TESTEE), nullptr};
    if (posix_spawn(&pid_, SYMBOLIZER_TESTEE, &actions, nullptr, argv, environ) != 0) {
      pid_ = 0;
    }
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    FILE* f = fdopen(out[0], "r");
    if (f != nullptr) {
      char line[64] = {};
      if (std::fgets(line, sizeof(line), f) != nullptr) {
        address_ = std::strtoull(line, nullptr, 16);
      }
      std::fclose(f);
    }
  }
  ~Testee() { Stop(); }
  int Stop() {
    if (stdin_ >= 0) {
      close(stdin_);
      stdin_ = -1;
    }
    int status = -1;
    if (pid_ > 0) {
      waitpid(pid_, &status, 0);
      pid_ = 0;
    }
    return status;
  }
  pid_t pid() const { return pid_; }
  uint64_t address() const { return address_; }

 private:
  pid_t pid_ = 0;
  int stdin_ = -1;
  uint64_t address_ = 0;
};

TEST(SymbolizerChildTest, ResolvesAFunctionOfAnotherProcess) {
  Testee testee;
  ASSERT_GT(testee.pid(), 0);
  ASSERT_NE(testee.address(), 0u);
  Symbolizer symbolizer({});
  uint64_t addresses[] = {testee.address(), testee.address() + 2};
  auto frames = symbolizer.Symbolize(testee.pid(), addresses);
  EXPECT_EQ(frames[0].function, "warpscope_testee::KnownTesteeFunction(int)");
  EXPECT_EQ(frames[1].function, "warpscope_testee::KnownTesteeFunction(int)");
  EXPECT_EQ(frames[0].module, std::filesystem::canonical(SYMBOLIZER_TESTEE).string());
  EXPECT_EQ(frames[0].build_id.size(), 40u);
  EXPECT_EQ(testee.Stop(), 0);
}

TEST(SymbolizerChildTest, ExitedProcessYieldsUnknownFramesAfterForget) {
  Testee testee;
  ASSERT_GT(testee.pid(), 0);
  pid_t pid = testee.pid();
  uint64_t address = testee.address();
  Symbolizer symbolizer({});
  ASSERT_TRUE(symbolizer.Symbolize(pid, std::span(&address, 1))[0].resolved);
  testee.Stop();
  symbolizer.ForgetProcess(pid);
  auto frames = symbolizer.Symbolize(pid, std::span(&address, 1));
  EXPECT_FALSE(frames[0].resolved);
}

}  // namespace
}  // namespace warpscope::profiling
