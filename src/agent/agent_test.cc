// SPDX-License-Identifier: Apache-2.0
#include "agent/agent.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <latch>
#include <mutex>
#include <optional>
#include <thread>

#include "agent/sources/testing/fake_source.h"
#include "base/testing/fake_task_runner.h"
#include "exporters/testing/in_memory_exporter.h"

namespace warpscope::agent {
namespace {

using model::EntityKind;
using model::MetricDesc;
using model::MetricKind;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr MetricDesc kTemp{"gpu.temperature", EntityKind::kGpu, MetricKind::kGauge, "Cel", "t",
                           "DCGM_FI_DEV_GPU_TEMP", 1, "hw.temperature"};

class AgentTest : public ::testing::Test {
 protected:
  AgentTest() : runner_(clock_) {}

  // Sources get a generous default deadline, so that only the sources a test makes late are.
  std::unique_ptr<Agent> MakeAgent(base::Duration collect, base::Duration exp,
                                   base::Duration source_deadline = seconds(30)) {
    Agent::Options opts{collect, exp,
                        model::Entity{EntityKind::kHost, "node1", "", {{"host.name", "node1"}}},
                        "test", source_deadline};
    auto agent = std::make_unique<Agent>(opts, runner_, clock_);
    auto cycle = std::make_unique<exporters::InMemoryExporter>("cycle");
    auto window = std::make_unique<exporters::InMemoryExporter>("window");
    cycle_ = cycle.get();
    window_ = window.get();
    agent->AddCycleExporter(std::move(cycle));
    agent->AddWindowExporter(std::move(window));
    return agent;
  }

  // The last value of `key` in the latest cycle frame, for `entity` and `labels`.
  std::optional<double> Latest(std::string_view key, std::string_view entity = "node1",
                               const model::Labels& labels = {}) const {
    for (const auto& p : cycle_->frames().back().series) {
      if (p.metric->key == key && p.entity == entity && p.labels == labels) return p.last;
    }
    return std::nullopt;
  }
  size_t LatestEvents(std::string_view kind) const {
    size_t n = 0;
    for (const auto& e : cycle_->frames().back().events) n += e.kind == kind ? 1 : 0;
    return n;
  }

  base::FakeClock clock_;
  base::FakeTaskRunner runner_;
  exporters::InMemoryExporter* cycle_ = nullptr;
  exporters::InMemoryExporter* window_ = nullptr;
};

TEST_F(AgentTest, CollectsEveryIntervalAndExportsEveryWindow) {
  auto agent = MakeAgent(seconds(10), seconds(30));
  double temp = 50;
  auto src = std::make_unique<FakeSource>("fake", [&](base::TimePoint, model::SampleSink& out) {
    out.AddEntity(model::Entity{EntityKind::kGpu, "GPU-a", "", {}});
    out.AddValue(kTemp, "GPU-a", temp);
    temp += 10;
  });
  FakeSource* fake = src.get();
  agent->AddSource({std::move(src), nullptr});
  agent->Start();
  runner_.RunUntilIdle();
  EXPECT_EQ(fake->polls, 1);
  runner_.AdvanceTimeAndRun(seconds(30));  // cycles at 10, 20, 30; window closes at 30
  EXPECT_EQ(fake->polls, 4);
  EXPECT_EQ(cycle_->frames().size(), 4u);
  ASSERT_EQ(window_->frames().size(), 1u);
  const model::Frame& w = window_->frames()[0];
  const model::SeriesPoint* temp_point = nullptr;
  for (const auto& p : w.series) {
    if (p.metric == &kTemp) temp_point = &p;
  }
  ASSERT_NE(temp_point, nullptr);
  EXPECT_EQ(temp_point->count, 4u);
  EXPECT_DOUBLE_EQ(temp_point->min, 50);
  EXPECT_DOUBLE_EQ(temp_point->max, 80);
  EXPECT_DOUBLE_EQ(temp_point->avg, 65);
}

TEST_F(AgentTest, FailingSourceIsSkippedAndReported) {
  auto agent = MakeAgent(seconds(1), seconds(1));
  auto bad = std::make_unique<FakeSource>("nvml", nullptr,
                                          base::Unavailable("NVML library not found"));
  FakeSource* bad_ptr = bad.get();
  auto good = std::make_unique<FakeSource>("procfs", nullptr);
  FakeSource* good_ptr = good.get();
  agent->AddSource({std::move(bad), nullptr});
  agent->AddSource({std::move(good), nullptr});
  agent->Start();
  runner_.RunUntilIdle();
  EXPECT_EQ(bad_ptr->polls, 0);
  EXPECT_EQ(good_ptr->polls, 1);
  EXPECT_EQ(agent->self_stats().errors("nvml", "start_failed"), 1u);
  bool saw_down = false;
  for (const auto& p : cycle_->frames().back().series) {
    if (p.metric->key == "agent.source.up" && p.labels.Get("source") == "nvml") {
      saw_down = p.last == 0;
    }
  }
  EXPECT_TRUE(saw_down);
}

TEST_F(AgentTest, BeforePollSeesEarlierSources) {
  auto agent = MakeAgent(seconds(1), seconds(1));
  agent->AddSource({std::make_unique<FakeSource>("gpu",
                                                 [](base::TimePoint, model::SampleSink& out) {
                                                   out.AddEntity(model::Entity{
                                                       EntityKind::kProcess, "pid/7/1", "", {}});
                                                 }),
                    nullptr});
  size_t seen = 0;
  agent->AddSource({std::make_unique<FakeSource>("host", nullptr),
                    [&](const Aggregator& agg) { seen = agg.cycle_entities().size(); }});
  agent->Start();
  runner_.RunUntilIdle();
  EXPECT_EQ(seen, 2u);  // the host entity and the process
}

TEST_F(AgentTest, StopFlushesAFinalWindowAndStopsSources) {
  auto agent = MakeAgent(seconds(10), seconds(60));
  auto src = std::make_unique<FakeSource>("fake", nullptr);
  FakeSource* fake = src.get();
  agent->AddSource({std::move(src), nullptr});
  agent->Start();
  runner_.AdvanceTimeAndRun(seconds(20));
  EXPECT_TRUE(window_->frames().empty());
  agent->Stop();
  EXPECT_EQ(window_->frames().size(), 1u);
  EXPECT_TRUE(fake->stopped);
  EXPECT_TRUE(window_->shut_down());
  int polls = fake->polls;
  runner_.AdvanceTimeAndRun(seconds(60));
  EXPECT_EQ(fake->polls, polls);
}

// A source whose n-th poll (from 1) writes 40 + n and an event "poll<n>"; while `block` is set,
// a poll waits for `gate` to open first.
struct GatedSource {
  std::latch gate{1};
  std::atomic<bool> block{false};
  FakeSource* fake = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  int returned = 0;  // guarded by mu

  bool WaitReturned(int n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, seconds(10), [&] { return returned >= n; });
  }

  Agent::SourceEntry Entry(std::string name, base::Duration deadline) {
    auto src = std::make_unique<FakeSource>(
        std::move(name), [this](base::TimePoint, model::SampleSink& out) {
          const int poll = fake->polls;
          if (block) gate.wait();
          out.AddEntity(model::Entity{EntityKind::kGpu, "GPU-slow", "", {}});
          out.AddValue(kTemp, "GPU-slow", 40 + poll);
          model::Event e;
          e.entity = "GPU-slow";
          e.kind = "poll" + std::to_string(poll);
          out.AddEvent(e);
          std::lock_guard lock(mu);
          ++returned;
          cv.notify_all();
        });
    fake = src.get();
    return {std::move(src), nullptr, deadline};
  }
};

Agent::SourceEntry FastSource(FakeSource** out, double* temp) {
  auto src = std::make_unique<FakeSource>("fast", [temp](base::TimePoint, model::SampleSink& s) {
    s.AddEntity(model::Entity{EntityKind::kGpu, "GPU-fast", "", {}});
    s.AddValue(kTemp, "GPU-fast", (*temp)++);
  });
  *out = src.get();
  return {std::move(src), nullptr, seconds(10)};
}

// Registers `slow`, hung (30 ms deadline), then a healthy "fast" source writing *temp, *temp + 1,
// ...; returns the healthy one.
FakeSource* AddHungThenHealthy(Agent& agent, GatedSource& slow, double* temp) {
  slow.block = true;
  FakeSource* fast = nullptr;
  agent.AddSource(slow.Entry("slow", milliseconds(30)));
  agent.AddSource(FastSource(&fast, temp));
  return fast;
}

TEST_F(AgentTest, PollRunsOnAWorkerOfItsOwnReusedAcrossCycles) {
  auto agent = MakeAgent(seconds(1), seconds(10));
  std::vector<std::thread::id> threads;
  agent->AddSource({std::make_unique<FakeSource>("fake",
                                                 [&](base::TimePoint, model::SampleSink&) {
                                                   threads.push_back(std::this_thread::get_id());
                                                 }),
                    nullptr});
  agent->Start();
  runner_.RunUntilIdle();
  runner_.AdvanceTimeAndRun(seconds(2));
  ASSERT_EQ(threads.size(), 3u);
  EXPECT_NE(threads[0], std::this_thread::get_id());
  EXPECT_EQ(threads[1], threads[0]);
  EXPECT_EQ(threads[2], threads[0]);
}

TEST_F(AgentTest, AHungSourceDoesNotHoldUpTheCycle) {
  auto agent = MakeAgent(seconds(1), seconds(10));
  GatedSource slow;
  double temp = 60;
  FakeSource* fast = AddHungThenHealthy(*agent, slow, &temp);
  agent->Start();
  runner_.RunUntilIdle();  // the slow source misses its 30 ms deadline
  EXPECT_EQ(agent->cycles(), 1);
  EXPECT_EQ(fast->polls, 1);
  ASSERT_EQ(cycle_->frames().size(), 1u);
  EXPECT_EQ(Latest(kTemp.key, "GPU-fast"), 60);
  EXPECT_FALSE(Latest(kTemp.key, "GPU-slow"));
  EXPECT_EQ(agent->self_stats().late("slow"), 1u);
  EXPECT_EQ(agent->self_stats().late("fast"), 0u);
  EXPECT_EQ(Latest("agent.source.late", "node1", {{"source", "slow"}}), 1);
  EXPECT_EQ(Latest("agent.source.late", "node1", {{"source", "fast"}}), 0);
  slow.gate.count_down();
  ASSERT_TRUE(agent->WaitForSourceIdleForTesting("slow", seconds(10)));
}

TEST_F(AgentTest, AHungSourceIsSkippedWhileBusyAndRejoinsWhenItAnswers) {
  auto agent = MakeAgent(seconds(1), seconds(10));
  GatedSource slow;
  double temp = 60;
  FakeSource* fast = AddHungThenHealthy(*agent, slow, &temp);
  agent->Start();
  runner_.RunUntilIdle();
  runner_.AdvanceTimeAndRun(seconds(2));  // two more cycles while it hangs
  EXPECT_EQ(agent->cycles(), 3);
  EXPECT_EQ(slow.fake->polls, 1);  // never a second poll behind the hung one
  EXPECT_EQ(fast->polls, 3);
  EXPECT_EQ(Latest(kTemp.key, "GPU-fast"), 62);
  EXPECT_EQ(agent->self_stats().late("slow"), 3u);

  slow.block = false;
  slow.gate.count_down();
  ASSERT_TRUE(agent->WaitForSourceIdleForTesting("slow", seconds(10)));
  runner_.AdvanceTimeAndRun(seconds(1));
  EXPECT_EQ(slow.fake->polls, 2);
  EXPECT_EQ(Latest(kTemp.key, "GPU-slow"), 42);  // this cycle's poll, not the late one's
  EXPECT_EQ(agent->self_stats().late("slow"), 3u);
}

TEST_F(AgentTest, ALatePollKeepsItsEventsButNotItsValues) {
  auto agent = MakeAgent(seconds(1), seconds(10));
  GatedSource slow;
  slow.block = true;
  agent->AddSource(slow.Entry("slow", milliseconds(30)));
  agent->Start();
  runner_.RunUntilIdle();
  EXPECT_EQ(LatestEvents("poll1"), 0u);
  slow.block = false;
  slow.gate.count_down();
  ASSERT_TRUE(agent->WaitForSourceIdleForTesting("slow", seconds(10)));
  runner_.AdvanceTimeAndRun(seconds(1));
  EXPECT_EQ(LatestEvents("poll1"), 1u);  // the late poll's event reaches the next cycle
  EXPECT_EQ(LatestEvents("poll2"), 1u);
  EXPECT_EQ(Latest(kTemp.key, "GPU-slow"), 42);  // its value does not: this poll's only
}

TEST_F(AgentTest, BeforePollRunsWhenAnEarlierSourceIsLate) {
  auto agent = MakeAgent(seconds(1), seconds(10));
  GatedSource slow;
  slow.block = true;
  agent->AddSource(slow.Entry("slow", milliseconds(30)));
  bool slow_in_cycle = true;
  auto host = std::make_unique<FakeSource>("host", nullptr);
  FakeSource* host_ptr = host.get();
  agent->AddSource({std::move(host),
                    [&](const Aggregator& agg) {
                      slow_in_cycle = false;
                      for (const auto& e : agg.cycle_entities()) {
                        slow_in_cycle = slow_in_cycle || e.id == "GPU-slow";
                      }
                    },
                    seconds(10)});
  agent->Start();
  runner_.RunUntilIdle();
  EXPECT_FALSE(slow_in_cycle);
  EXPECT_EQ(host_ptr->polls, 1);
  slow.gate.count_down();
  ASSERT_TRUE(agent->WaitForSourceIdleForTesting("slow", seconds(10)));
}

TEST_F(AgentTest, FinishRunsOnTheMainSequenceAfterATimelyPollOnly) {
  auto agent = MakeAgent(seconds(1), seconds(10));
  std::latch gate(1);
  std::atomic<bool> block{false};
  std::thread::id finish_thread;
  auto src = std::make_unique<FakeSource>(
      "two-step",
      [&](base::TimePoint, model::SampleSink&) {
        if (block) gate.wait();
      },
      base::Status(),
      [&](base::TimePoint, model::SampleSink& out) {
        finish_thread = std::this_thread::get_id();
        out.AddValue(kTemp, "node1", 1);
      });
  FakeSource* fake = src.get();
  agent->AddSource({std::move(src), nullptr, milliseconds(30)});
  agent->Start();
  runner_.RunUntilIdle();
  EXPECT_EQ(fake->finishes, 1);
  EXPECT_EQ(finish_thread, std::this_thread::get_id());
  EXPECT_EQ(Latest(kTemp.key), 1);
  block = true;
  runner_.AdvanceTimeAndRun(seconds(1));  // late: no Finish
  EXPECT_EQ(fake->finishes, 1);
  EXPECT_FALSE(Latest(kTemp.key));
  gate.count_down();
  ASSERT_TRUE(agent->WaitForSourceIdleForTesting("two-step", seconds(10)));
}

TEST_F(AgentTest, DeadlineIsHalfTheCollectIntervalUnlessSet) {
  auto agent = MakeAgent(seconds(10), seconds(60), /*source_deadline=*/seconds(0));
  auto a = std::make_unique<FakeSource>("a", nullptr);
  auto b = std::make_unique<FakeSource>("b", nullptr);
  FakeSource* a_ptr = a.get();
  FakeSource* b_ptr = b.get();
  agent->AddSource({std::move(a), nullptr});
  agent->AddSource({std::move(b), nullptr, seconds(2)});
  agent->Start();
  EXPECT_EQ(agent->deadline_of(0), seconds(5));
  EXPECT_EQ(a_ptr->poll_deadline, seconds(5));  // told before Start
  EXPECT_EQ(agent->deadline_of(1), seconds(2));
  EXPECT_EQ(b_ptr->poll_deadline, seconds(2));

  Agent::Options opts{seconds(10), seconds(60), model::Entity{EntityKind::kHost, "n", "", {}}, "t",
                      seconds(3)};
  Agent configured(opts, runner_, clock_);
  configured.AddSource({std::make_unique<FakeSource>("c", nullptr), nullptr});
  EXPECT_EQ(configured.deadline_of(0), seconds(3));
}

TEST_F(AgentTest, ErrorsReportedFromPollAreCounted) {
  auto agent = MakeAgent(seconds(1), seconds(10));
  ErrorCounter& errors = agent->self_stats().ErrorsFor("fake");
  agent->AddSource({std::make_unique<FakeSource>("fake",
                                                 [&](base::TimePoint, model::SampleSink&) {
                                                   errors.Count("meminfo_unreadable");
                                                 }),
                    nullptr});
  agent->Start();
  runner_.RunUntilIdle();
  runner_.AdvanceTimeAndRun(seconds(1));
  EXPECT_EQ(agent->self_stats().errors("fake", "meminfo_unreadable"), 2u);
  EXPECT_EQ(Latest("agent.source.errors", "node1",
                   {{"reason", "meminfo_unreadable"}, {"source", "fake"}}),
            2);
}

TEST_F(AgentTest, StopLeavesAHungSourceBehindWithoutStoppingIt) {
  auto agent = MakeAgent(seconds(1), seconds(10));
  GatedSource slow;
  slow.block = true;
  auto src = std::make_unique<FakeSource>("ok", nullptr);
  FakeSource* ok = src.get();
  agent->AddSource(slow.Entry("slow", milliseconds(30)));
  agent->AddSource({std::move(src), nullptr});
  agent->Start();
  runner_.RunUntilIdle();
  agent->Stop();  // returns although the slow source is still inside Poll
  EXPECT_TRUE(ok->stopped);
  EXPECT_FALSE(slow.fake->stopped);  // never stopped under its running Poll
  EXPECT_TRUE(window_->shut_down());
  agent.reset();
  // The source was left behind, not destroyed: its Poll ends normally once released.
  slow.gate.count_down();
  ASSERT_TRUE(slow.WaitReturned(1));
}

}  // namespace
}  // namespace warpscope::agent
