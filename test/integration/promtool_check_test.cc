// SPDX-License-Identifier: Apache-2.0
// `promtool check metrics` (Prometheus's own linter) on the text exposition of a realistic
// frame: 8 GPUs with MIG instances, 64 processes, host series and tags.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <regex>

#include "base/file_util.h"
#include "exporters/prometheus/text_renderer.h"
#include "exporters/testing/sample_frame.h"
#include "base/testing/peer.h"

namespace warpscope::exporters {
namespace {

constexpr const char* kPromtool = "/usr/bin/promtool";

struct LintResult {
  int exit_code = -1;
  std::vector<std::string> problems;  // one per output line
};

LintResult Lint(const std::string& exposition) {
  char path[] = "/tmp/warpscope-promtool-XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  EXPECT_TRUE(base::WriteFile(path, exposition).ok());
  std::string cmd = std::string(kPromtool) + " check metrics < " + path + " 2>&1";
  LintResult out;
  FILE* p = popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) {
    text.append(buf, n);
  }
  int status = pclose(p);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  unlink(path);
  for (std::string_view line : base::SplitString(text, "\n")) {
    if (!line.empty()) {
      out.problems.emplace_back(line);
    }
  }
  return out;
}

// dcgm-exporter's names and labels, kept on purpose so that existing dashboards and alerts work:
// its counters have no _total suffix (one is even named ..._COUNTER) and its model label is
// camelCase.
bool IsDcgmCompatibilityNote(const std::string& line) {
  static const std::regex kCounterSuffix(
      R"(^DCGM_FI_[A-Z0-9_]+ (counter metrics should have "_total" suffix|)"
      R"(metric name should not include type '[a-z]+')$)");
  static const std::regex kModelName(
      R"(^[A-Za-z0-9_:]+ label names should be written in 'snake_case' not 'camelCase'$)");
  return std::regex_match(line, kCounterSuffix) || std::regex_match(line, kModelName);
}

class PromtoolCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WARPSCOPE_REQUIRE_PEER(access(kPromtool, X_OK) == 0, kPromtool,
                           "run scripts/setup.sh --test (apt-get install prometheus)");
  }
};

TEST_F(PromtoolCheckTest, RealisticFrameHasOnlyDcgmCompatibilityNotes) {
  TextRenderer::Options o;
  o.constant_labels = {{"cluster", "train-a"}, {"team.name", "ml"}};
  TextRenderer r(o);
  std::string text =
      r.Render(sample::MakeSampleFrame({.gpus = 8, .processes = 64, .mig_per_gpu = 2}),
               ExpositionFormat::kText004);

  LintResult lint = Lint(text);

  for (const auto& line : lint.problems) {
    EXPECT_TRUE(IsDcgmCompatibilityNote(line)) << "promtool: " << line;
  }
  // promtool exits 3 when it printed lint problems, 1 when it could not parse the input.
  EXPECT_TRUE(lint.exit_code == 0 || (lint.exit_code == 3 && !lint.problems.empty()))
      << "exit " << lint.exit_code;
}

TEST_F(PromtoolCheckTest, WarpscopeNamedFamiliesLintClean) {
  model::Frame frame = sample::MakeSampleFrame({.gpus = 8, .processes = 64});
  // Keep what does not follow dcgm-exporter: process, executable and host series.
  std::erase_if(frame.series, [](const model::SeriesPoint& p) {
    return p.metric->entity == model::EntityKind::kGpu;
  });
  TextRenderer r({});
  LintResult lint = Lint(r.Render(frame, ExpositionFormat::kText004));
  EXPECT_EQ(lint.exit_code, 0) << ::testing::PrintToString(lint.problems);
  EXPECT_THAT(lint.problems, ::testing::IsEmpty());
}

}  // namespace
}  // namespace warpscope::exporters
