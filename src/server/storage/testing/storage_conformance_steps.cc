// SPDX-License-Identifier: Apache-2.0
// The conformance suite (storage_conformance.h): training steps (QuerySteps, ListJobs, their
// retention).
#include <gmock/gmock.h>

#include <string>
#include <utility>
#include <vector>

#include "server/storage/testing/storage_conformance.h"

namespace warpscope::server {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr char kRank0[] = "pid/100/1";
constexpr char kRank1[] = "pid/101/1";

// A step of `job` by `rank` (on the process entity `entity`) that ends at `end` after 500 ms,
// every field set to something distinct.
model::TrainingStep Step(std::string job, std::string entity, uint32_t rank, int64_t number,
                         base::TimePoint end) {
  model::TrainingStep s;
  s.entity = std::move(entity);
  s.job = std::move(job);
  s.comm = "0123456789abcdef";
  s.rank = rank;
  s.world_size = 4;
  s.step = number;
  s.start = end - milliseconds(500) + nanoseconds(7);  // ns precision is kept
  s.end = end;
  s.compute_ns = 300'000'001;
  s.comm_ns = 50'000'002;
  s.overlap_ns = 20'000'003;
  s.last_collective_offset_ns = 440'000'004;
  s.nccl_ns = 70'000'005;
  s.collectives = 12;
  s.bus_bytes = 0xfedc'ba98'7654'3210ULL;  // above INT64_MAX: kept as a uint64
  s.source = "nvtx";
  return s;
}

// A batch from `host`'s agent, window [kT0 + window_start, + 1 minute), declaring both rank
// processes and carrying `steps`.
IngestBatch StepBatch(const std::string& host, uint64_t sequence, base::Duration window_start,
                      std::vector<model::TrainingStep> steps) {
  IngestBatch b;
  b.agent_id = "agent-" + host;
  b.host = host;
  b.sequence = sequence;
  b.start = StorageConformanceTest::kT0 + window_start;
  b.end = b.start + minutes(1);
  for (const char* id : {kRank0, kRank1}) {
    b.entities.push_back(model::Entity{model::EntityKind::kProcess, id, "", {}});
  }
  b.steps = std::move(steps);
  return b;
}

void WriteOk(Storage& s, const IngestBatch& batch) {
  auto r = s.WriteBatch(batch);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
}

std::vector<StoredStep> Steps(Storage& s, StepQuery q) {
  auto r = s.QuerySteps(q);
  EXPECT_TRUE(r.has_value()) << r.error().ToString();
  return r.value_or(std::vector<StoredStep>{});
}

// (step, rank, host) of each stored step, in order.
std::vector<std::tuple<int64_t, uint32_t, std::string>> Keys(const std::vector<StoredStep>& v) {
  std::vector<std::tuple<int64_t, uint32_t, std::string>> out;
  for (const StoredStep& s : v) {
    out.emplace_back(s.step.step, s.step.rank, s.host);
  }
  return out;
}

std::vector<JobRecord> Jobs(Storage& s, JobQuery q) {
  auto r = s.ListJobs(q);
  EXPECT_TRUE(r.has_value()) << r.error().ToString();
  return r.value_or(std::vector<JobRecord>{});
}

TEST_P(StorageConformanceTest, StepsRoundTripEveryField) {
  model::TrainingStep a = Step("job-1", kRank0, 0, 7, kT0 + seconds(10));
  model::TrainingStep b = Step("job-1", "h1", 1, 7, kT0 + seconds(11));
  b.compute_ns = -1;
  b.last_collective_offset_ns = -1;
  b.comm = "";
  b.source = "collectives";
  WriteOk(storage(), StepBatch("h1", 1, {}, {a, b}));

  auto got = Steps(storage(), {.job = "job-1", .start = kT0, .end = kT0 + hours(1)});

  ASSERT_THAT(got, SizeIs(2));
  EXPECT_EQ(got[0].host, "h1");
  EXPECT_EQ(got[0].step, a);
  EXPECT_EQ(got[1].host, "h1");
  EXPECT_EQ(got[1].step, b);
}

TEST_P(StorageConformanceTest, StepsAreOrderedByStepRankAndHost) {
  // Two hosts, each with two ranks, two steps; written newest first and interleaved.
  WriteOk(storage(), StepBatch("h2", 1, {},
                               {Step("job", kRank1, 3, 11, kT0 + seconds(2)),
                                Step("job", kRank0, 2, 10, kT0 + seconds(1))}));
  WriteOk(storage(), StepBatch("h1", 1, {},
                               {Step("job", kRank1, 1, 11, kT0 + seconds(2)),
                                Step("job", kRank0, 0, 11, kT0 + seconds(2)),
                                Step("job", kRank0, 0, 10, kT0 + seconds(1))}));
  // The same rank number reported from two hosts (a restarted rank): host breaks the tie.
  WriteOk(storage(), StepBatch("h0", 1, {}, {Step("job", kRank0, 0, 10, kT0 + seconds(1))}));

  auto got = Steps(storage(), {.job = "job", .start = kT0, .end = kT0 + hours(1)});

  using K = std::tuple<int64_t, uint32_t, std::string>;
  EXPECT_THAT(Keys(got), ElementsAre(K{10, 0, "h0"}, K{10, 0, "h1"}, K{10, 2, "h2"}, K{11, 0, "h1"},
                                     K{11, 1, "h1"}, K{11, 3, "h2"}));
}

TEST_P(StorageConformanceTest, QueryStepsSelectsTheJobAndEndsInTheHalfOpenRange) {
  WriteOk(storage(), StepBatch("h1", 1, {},
                               {Step("job", kRank0, 0, 1, kT0 + seconds(9)),
                                Step("job", kRank0, 0, 2, kT0 + seconds(10)),  // == start: in
                                Step("job", kRank0, 0, 3, kT0 + seconds(19)),
                                Step("job", kRank0, 0, 4, kT0 + seconds(20)),  // == end: out
                                Step("other", kRank0, 0, 2, kT0 + seconds(15))}));

  auto got = Steps(storage(), {.job = "job", .start = kT0 + seconds(10), .end = kT0 + seconds(20)});

  ASSERT_THAT(got, SizeIs(2));
  EXPECT_EQ(got[0].step.step, 2);
  EXPECT_EQ(got[1].step.step, 3);
  EXPECT_THAT(Steps(storage(), {.job = "nope", .start = kT0, .end = kT0 + hours(1)}), IsEmpty());
}

TEST_P(StorageConformanceTest, QueryStepsKeepsTheNewestLimitInStepOrder) {
  std::vector<model::TrainingStep> steps;
  for (int64_t n = 1; n <= 5; ++n) {
    steps.push_back(Step("job", kRank0, 0, n, kT0 + seconds(n)));
  }
  WriteOk(storage(), StepBatch("h1", 1, {}, steps));

  auto got = Steps(storage(), {.job = "job", .start = kT0, .end = kT0 + hours(1), .limit = 2});

  ASSERT_THAT(got, SizeIs(2));
  EXPECT_EQ(got[0].step.step, 4);
  EXPECT_EQ(got[1].step.step, 5);
}

TEST_P(StorageConformanceTest, ListJobsAggregatesRanksAndHostsNewestFirst) {
  // job-a: ranks 0, 1 on h2 and 2, 3 on h1, steps 10..12; one rank reports world size 0.
  for (const auto& [host, first_rank] : {std::pair{"h2", 0u}, std::pair{"h1", 2u}}) {
    std::vector<model::TrainingStep> steps;
    for (int64_t n = 10; n <= 12; ++n) {
      for (uint32_t r = first_rank; r < first_rank + 2; ++r) {
        steps.push_back(
            Step("job-a", r % 2 == 0 ? kRank0 : kRank1, r, n, kT0 + seconds(n) + milliseconds(r)));
      }
    }
    steps[0].world_size = 0;
    WriteOk(storage(), StepBatch(host, 1, {}, steps));
  }
  // job-b: one rank on h1, later than job-a; outside the range before and after.
  WriteOk(storage(), StepBatch("h1", 2, minutes(1),
                               {Step("job-b", kRank0, 0, 1, kT0 + seconds(30)),
                                Step("job-b", kRank0, 0, 2, kT0 + seconds(40)),
                                Step("job-b", kRank0, 0, 3, kT0 + hours(2))}));
  WriteOk(storage(), StepBatch("h3", 1, {}, {Step("job-c", kRank0, 0, 1, kT0)}));

  auto jobs = Jobs(storage(), {.start = kT0 + seconds(1), .end = kT0 + hours(1)});

  ASSERT_THAT(jobs, SizeIs(2));
  const JobRecord& b = jobs[0];
  EXPECT_EQ(b.job, "job-b");
  EXPECT_EQ(b.world_size, 4u);
  EXPECT_EQ(b.ranks, 1u);
  EXPECT_EQ(b.steps, 2u);
  EXPECT_EQ(b.first_step, 1);
  EXPECT_EQ(b.last_step, 2);
  EXPECT_EQ(b.last, kT0 + seconds(40));
  EXPECT_THAT(b.hosts, ElementsAre("h1"));
  const JobRecord& a = jobs[1];
  EXPECT_EQ(a.job, "job-a");
  EXPECT_EQ(a.world_size, 4u);
  EXPECT_EQ(a.ranks, 4u);
  EXPECT_EQ(a.steps, 12u);
  EXPECT_EQ(a.first_step, 10);
  EXPECT_EQ(a.last_step, 12);
  EXPECT_EQ(a.first, kT0 + seconds(10) - milliseconds(500) + nanoseconds(7));
  EXPECT_EQ(a.last, kT0 + seconds(12) + milliseconds(3));
  EXPECT_THAT(a.hosts, ElementsAre("h1", "h2"));

  auto newest = Jobs(storage(), {.start = kT0 + seconds(1), .end = kT0 + hours(1), .limit = 1});
  ASSERT_THAT(newest, SizeIs(1));
  EXPECT_EQ(newest[0].job, "job-b");
  EXPECT_THAT(Jobs(storage(), {.start = kT0 + hours(3), .end = kT0 + hours(4)}), IsEmpty());
}

TEST_P(StorageConformanceTest, RetriedBatchStoresItsStepsOnce) {
  IngestBatch batch = StepBatch("h1", 9, {}, {Step("job", kRank0, 0, 1, kT0 + seconds(5))});
  WriteOk(storage(), batch);

  auto again = storage().WriteBatch(batch);

  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(again->duplicate);
  EXPECT_THAT(Steps(storage(), {.job = "job", .start = kT0, .end = kT0 + hours(1)}), SizeIs(1));
  auto jobs = Jobs(storage(), {.start = kT0, .end = kT0 + hours(1)});
  ASSERT_THAT(jobs, SizeIs(1));
  EXPECT_EQ(jobs[0].steps, 1u);
}

TEST_P(StorageConformanceTest, StepsSurviveReopen) {
  WriteOk(storage(), StepBatch("h1", 1, {}, {Step("job", kRank0, 0, 1, kT0 + seconds(5))}));

  Reopen();

  auto got = Steps(storage(), {.job = "job", .start = kT0, .end = kT0 + hours(1)});
  ASSERT_THAT(got, SizeIs(1));
  EXPECT_EQ(got[0].step, Step("job", kRank0, 0, 1, kT0 + seconds(5)));
}

TEST_P(StorageConformanceTest, CompactRemovesStepsPastTheStepRetention) {
  options_.step_retention = hours(2);
  Reopen();
  WriteOk(storage(), StepBatch("h1", 1, {},
                               {Step("job", kRank0, 0, 1, kT0 + minutes(10)),
                                Step("job", kRank0, 0, 2, kT0 + minutes(50))}));

  // now - 2h = kT0 + 30 min: the first step ended before, the second after.
  auto compacted = storage().Compact(kT0 + hours(2) + minutes(30));

  ASSERT_TRUE(compacted.has_value()) << compacted.error().ToString();
  EXPECT_GE(compacted->deleted_rows, 1u);
  auto got = Steps(storage(), {.job = "job", .start = kT0, .end = kT0 + hours(3)});
  ASSERT_THAT(got, SizeIs(1));
  EXPECT_EQ(got[0].step.step, 2);
  auto jobs = Jobs(storage(), {.start = kT0, .end = kT0 + hours(3)});
  ASSERT_THAT(jobs, SizeIs(1));
  EXPECT_EQ(jobs[0].steps, 1u);
}

TEST_P(StorageConformanceTest, StatsListTheTrainingSteps) {
  WriteOk(storage(), StepBatch("h1", 1, {},
                               {Step("job", kRank0, 0, 1, kT0 + seconds(5)),
                                Step("job", kRank1, 1, 1, kT0 + seconds(5))}));

  auto stats = storage().Stats();

  ASSERT_TRUE(stats.has_value()) << stats.error().ToString();
  bool found = false;
  for (const TableStats& t : stats->tables) {
    if (t.name == "training_steps") {
      found = true;
      EXPECT_EQ(t.rows, 2u);
      EXPECT_GT(t.bytes, 0u);
    }
  }
  EXPECT_TRUE(found);
}

TEST_P(StorageConformanceTest, StepWithoutJobFailsTheWholeBatch) {
  IngestBatch batch = StepBatch(
      "h1", 1, {},
      {Step("job", kRank0, 0, 1, kT0 + seconds(5)), Step("", kRank0, 0, 2, kT0 + seconds(6))});

  auto r = storage().WriteBatch(batch);

  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), base::StatusCode::kInvalidArgument);
  EXPECT_THAT(Steps(storage(), {.job = "job", .start = kT0, .end = kT0 + hours(1)}), IsEmpty());
}

}  // namespace
}  // namespace warpscope::server
