// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "server/insights/rules.h"
#include "server/insights/testing/inputs_builder.h"

namespace warpscope::server::insights {
namespace {

using testing::InputsBuilder;
using testing::kGiB;
using testing::Observe;

constexpr size_t kShort = 90;  // 15 minutes of 10 s buckets
constexpr size_t kLong = 90;   // 90 minutes of 1-minute buckets

// A fleet of `hosts` hosts with `per_host` GPUs each, in the short view (with `cluster`) and in
// a long view where every GPU reports from bucket `first_data` on, 97 % busy on 70 GiB.
class Fleet {
 public:
  Fleet(int hosts, int per_host, const std::string& cluster = "", size_t first_data = 30)
      : b_(kShort) {
    auto view = std::make_shared<LongView>();
    view->step = std::chrono::minutes(1);
    view->buckets = kLong;
    view->start = b_.inputs().end() - std::chrono::minutes(kLong);
    for (int h = 0; h < hosts; ++h) {
      for (int i = 0; i < per_host; ++i) {
        const std::string host = "node-" + std::to_string(h + 1);
        const std::string uuid = "GPU-" + std::to_string(h) + "-" + std::to_string(i);
        b_.Gpu(host, uuid, std::to_string(i)).cluster = cluster;
        LongGpuInput& g = view->gpus.emplace_back();
        g.host = host;
        g.uuid = uuid;
        for (Series* s : {&g.utilization, &g.power, &g.memory_used}) s->assign(kLong, std::nan(""));
        InputsBuilder::Fill(g.utilization, 0.97, first_data);
        InputsBuilder::Fill(g.power, 650, first_data);
        InputsBuilder::Fill(g.memory_used, 70 * kGiB, first_data);
      }
    }
    view_ = view;
    b_.inputs().long_view = view;
  }

  std::vector<LongGpuInput>& gpus() { return view_->gpus; }
  const InsightInputs& inputs() { return b_.inputs(); }

  // Utilization falls linearly from `from` to `to` over buckets [start, end), then stays.
  static void Ramp(LongGpuInput& g, double from, double to, size_t start, size_t end) {
    for (size_t i = start; i < kLong; ++i) {
      if (!std::isfinite(g.utilization[i])) continue;
      const double f =
          std::min(1.0, static_cast<double>(i - start) / static_cast<double>(end - start));
      g.utilization[i] = from + (to - from) * f;
      g.power[i] = 650 - 500 * (from - g.utilization[i]);
    }
  }

 private:
  InputsBuilder b_;
  std::shared_ptr<LongView> view_;
};

TEST(FleetRegressionTest, ABroadSlowDeclineOverFortyMinutesIsAFleetRegression) {
  Fleet f(3, 8);
  for (LongGpuInput& g : f.gpus()) Fleet::Ramp(g, 0.97, 0.79, 40, 80);
  auto rule = MakeFleetRegressionRule();
  std::vector<Observation> seen = Observe(*rule, f.inputs());
  ASSERT_EQ(seen.size(), 1u);
  const Observation& o = seen[0];
  EXPECT_EQ(o.kind, model::EntityKind::kCluster);
  EXPECT_EQ(o.host, "");
  EXPECT_EQ(o.entity, "fleet") << "hosts without a cluster tag form one fleet";
  EXPECT_EQ(o.attributes.Get("host.count"), "3");
  EXPECT_EQ(o.attributes.Get("gpu.count"), "24");
  EXPECT_EQ(o.gpus, 24);
  EXPECT_EQ(o.evidence["declined_gpus"].get<size_t>(), 24u);
  EXPECT_EQ(o.evidence["hosts"].size(), 3u);
  EXPECT_NEAR(o.evidence["utilization"].get<double>(), 0.79, 0.005);
  EXPECT_GT(o.evidence["drop"].get<double>(), 0.10);
  EXPECT_LT(o.evidence["slope_per_hour"].get<double>(), 0);
  // Lost: the utilization given up against the baseline (the first third, ~95 %).
  EXPECT_NEAR(o.lost_fraction, (o.evidence["baseline_utilization"].get<double>() - 0.79) /
                                   o.evidence["baseline_utilization"].get<double>(),
              0.01);
  ASSERT_EQ(o.evidence["series"].size(), 2u);
  EXPECT_EQ(o.evidence["series"][0]["metric"], "gpu.utilization");
  EXPECT_EQ(o.evidence["series"][0]["step_ms"], 60000);
  EXPECT_EQ(o.evidence["series"][0]["values"].size(), 60u) << "the last hour";
  EXPECT_NE(o.summary.find("3 hosts, 24 GPUs"), std::string::npos) << o.summary;
  EXPECT_EQ(rule->info().severity, Severity::kTicket);
}

TEST(FleetRegressionTest, EachClusterIsJudgedOnItsOwn) {
  Fleet f(2, 8, "train-a");
  for (LongGpuInput& g : f.gpus()) Fleet::Ramp(g, 0.97, 0.79, 40, 80);
  std::vector<Observation> seen = Observe(*MakeFleetRegressionRule(), f.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].entity, "cluster/train-a");
  EXPECT_EQ(seen[0].attributes.Get("cluster"), "train-a");
}

TEST(FleetRegressionTest, AStepIsNotARegression) {
  Fleet f(3, 8);
  for (LongGpuInput& g : f.gpus()) Fleet::Ramp(g, 0.97, 0.80, 60, 61);
  EXPECT_TRUE(Observe(*MakeFleetRegressionRule(), f.inputs()).empty());
}

TEST(FleetRegressionTest, OneHostDecliningAloneIsNotTheFleet) {
  Fleet f(3, 8);
  for (LongGpuInput& g : f.gpus()) {
    if (g.host == "node-2") Fleet::Ramp(g, 0.97, 0.40, 40, 80);
  }
  EXPECT_TRUE(Observe(*MakeFleetRegressionRule(), f.inputs()).empty());

  // A host alone with 8 GPUs is a fleet of one: its own broad decline is one.
  Fleet alone(1, 8);
  for (LongGpuInput& g : alone.gpus()) Fleet::Ramp(g, 0.97, 0.79, 40, 80);
  EXPECT_EQ(Observe(*MakeFleetRegressionRule(), alone.inputs()).size(), 1u);
  Fleet small(1, 4);
  for (LongGpuInput& g : small.gpus()) Fleet::Ramp(g, 0.97, 0.79, 40, 80);
  EXPECT_TRUE(Observe(*MakeFleetRegressionRule(), small.inputs()).empty()) << "too few GPUs";
}

TEST(FleetRegressionTest, JobsEndingOneAfterAnotherAreNotARegression) {
  Fleet f(3, 8);
  size_t k = 0;
  for (LongGpuInput& g : f.gpus()) {
    // Each job ends at its own time between minutes 40 and 80: its GPU idles, memory freed.
    const size_t end = 40 + (k++ * 40) / 24;
    InputsBuilder::Fill(g.utilization, 0.0, end);
    InputsBuilder::Fill(g.memory_used, 0.5 * kGiB, end);
    InputsBuilder::Fill(g.power, 70, end);
  }
  EXPECT_TRUE(Observe(*MakeFleetRegressionRule(), f.inputs()).empty());
  // Half of them ended; the others ran on unchanged.
  Fleet half(3, 8);
  for (size_t i = 0; i < half.gpus().size(); i += 2) {
    InputsBuilder::Fill(half.gpus()[i].utilization, 0.0, 60);
    InputsBuilder::Fill(half.gpus()[i].memory_used, 0.0, 60);
  }
  EXPECT_TRUE(Observe(*MakeFleetRegressionRule(), half.inputs()).empty());
}

TEST(FleetRegressionTest, LessThanHalfAnHourOfDataJudgesNothing) {
  Fleet f(3, 8, "", /*first_data=*/kLong - 25);
  for (LongGpuInput& g : f.gpus()) Fleet::Ramp(g, 0.97, 0.70, kLong - 25, kLong);
  EXPECT_TRUE(Observe(*MakeFleetRegressionRule(), f.inputs()).empty());
  Fleet enough(3, 8, "", /*first_data=*/kLong - 35);
  for (LongGpuInput& g : enough.gpus()) Fleet::Ramp(g, 0.97, 0.70, kLong - 35, kLong);
  EXPECT_EQ(Observe(*MakeFleetRegressionRule(), enough.inputs()).size(), 1u);
}

TEST(FleetRegressionTest, ASmallerDeclineRaisesNothingButKeepsAnOpenFinding) {
  Fleet f(3, 8);
  // 0.97 -> 0.87 over the hour: ~6.7 points between its first and last thirds.
  for (LongGpuInput& g : f.gpus()) Fleet::Ramp(g, 0.97, 0.87, 30, 90);
  auto rule = MakeFleetRegressionRule();
  EXPECT_TRUE(Observe(*rule, f.inputs()).empty());
  EXPECT_EQ(Observe(*rule, f.inputs(), {{"", "fleet"}}).size(), 1u);
  // Flat again: even an open finding lets go.
  Fleet flat(3, 8);
  EXPECT_TRUE(Observe(*rule, flat.inputs(), {{"", "fleet"}}).empty());
}

TEST(FleetRegressionTest, WithoutALongViewNothingIsJudged) {
  InputsBuilder b(kShort);
  for (int i = 0; i < 8; ++i) b.Gpu("node-1", "GPU-" + std::to_string(i), std::to_string(i));
  EXPECT_TRUE(Observe(*MakeFleetRegressionRule(), b.inputs()).empty());
}

TEST(FleetRegressionTest, ItFiresAfterTheConfiguredHold) {
  std::unique_ptr<Rule> rule = MakeFleetRegressionRule();
  InsightConfig config;
  EXPECT_EQ(rule->HoldFor(config), std::chrono::minutes(5));
  config.fleet_hold = base::Duration::zero();
  EXPECT_EQ(rule->HoldFor(config), base::Duration::zero());
  config.fleet_hold = std::chrono::minutes(61);
  base::Status st = config.Validate();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("fleet-hold = 1h1m"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace warpscope::server::insights
