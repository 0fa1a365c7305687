// SPDX-License-Identifier: Apache-2.0
// A child process writes batches and reports each acknowledged sequence on a pipe; the parent
// kills it with SIGKILL mid-stream and checks that every acknowledged batch (its samples and its
// training step) is in the store.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>

#include "server/storage/sqlite_storage.h"

namespace warpscope::server {
namespace {

const base::TimePoint kT0 = base::FromUnixNanos(1'699'999'200'000'000'000);

IngestBatch MakeBatch(uint64_t sequence) {
  IngestBatch b;
  b.agent_id = "agent";
  b.host = "h1";
  b.sequence = sequence;
  b.start = kT0 + std::chrono::seconds(10) * static_cast<int64_t>(sequence);
  b.end = b.start + std::chrono::seconds(10);
  b.metrics.push_back(MetricInfo{.key = "gpu.utilization", .entity_kind = model::EntityKind::kGpu});
  for (int gpu = 0; gpu < 8; ++gpu) {
    b.series.push_back(IngestSeries{.metric = "gpu.utilization",
                                    .entity = "GPU-" + std::to_string(gpu),
                                    .avg = 0.5,
                                    .min = 0.5,
                                    .max = 0.5,
                                    .last = 0.5});
  }
  // One training step per batch, committed with it: step number = sequence.
  model::TrainingStep step;
  step.entity = "h1";
  step.job = "job";
  step.step = static_cast<int64_t>(sequence);
  step.start = b.start;
  step.end = b.start + std::chrono::seconds(5);
  step.source = "collectives";
  b.steps.push_back(step);
  return b;
}

// Runs in the child: writes until killed, acknowledging each stored sequence.
[[noreturn]] void WriteUntilKilled(const std::string& dir, int ack_fd) {
  SqliteStorageOptions o;
  o.data_dir = dir;
  auto storage = SqliteStorage::Open(o);
  if (!storage) {
    _exit(2);
  }
  for (uint64_t seq = 1;; ++seq) {
    auto r = (*storage)->WriteBatch(MakeBatch(seq));
    if (!r || r->stored != 8) {
      _exit(3);
    }
    if (write(ack_fd, &seq, sizeof(seq)) != sizeof(seq)) {
      _exit(4);
    }
  }
}

TEST(SqliteStorageCrashTest, AcknowledgedBatchesSurviveKill9) {
  std::string dir = (std::filesystem::path(::testing::TempDir()) / "warpscope-crash-XXXXXX");
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    WriteUntilKilled(dir, fds[1]);
  }
  close(fds[1]);
  uint64_t acknowledged = 0;
  while (acknowledged < 200) {
    uint64_t seq = 0;
    ASSERT_EQ(read(fds[0], &seq, sizeof(seq)), static_cast<ssize_t>(sizeof(seq)))
        << "the writer died before it was killed";
    acknowledged = seq;
  }
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  // Acknowledgements already in the pipe count too.
  uint64_t seq = 0;
  while (read(fds[0], &seq, sizeof(seq)) == static_cast<ssize_t>(sizeof(seq))) {
    acknowledged = seq;
  }
  close(fds[0]);

  SqliteStorageOptions o;
  o.data_dir = dir;
  auto storage = SqliteStorage::Open(o);
  ASSERT_TRUE(storage.has_value()) << storage.error().ToString();
  RangeQuery q;
  q.metric = "gpu.utilization";
  q.match.entity = "GPU-7";
  q.start = kT0;
  q.end = kT0 + std::chrono::seconds(10) * static_cast<int64_t>(acknowledged + 1);
  q.step = std::chrono::seconds(10);
  auto r = (*storage)->QueryRange(q);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->series.size(), 1u);
  EXPECT_EQ(r->series[0].points.size(), acknowledged);
  auto steps = (*storage)->QuerySteps({.job = "job", .start = q.start, .end = q.end});
  ASSERT_TRUE(steps.has_value()) << steps.error().ToString();
  ASSERT_EQ(steps->size(), acknowledged);
  for (uint64_t s = 1; s <= acknowledged; ++s) {
    ASSERT_EQ((*steps)[s - 1].step.step, static_cast<int64_t>(s));
  }
  for (uint64_t s = 1; s <= acknowledged; ++s) {
    auto again = (*storage)->WriteBatch(MakeBatch(s));
    ASSERT_TRUE(again.has_value());
    ASSERT_TRUE(again->duplicate) << "sequence " << s;
  }
  storage->reset();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace warpscope::server
