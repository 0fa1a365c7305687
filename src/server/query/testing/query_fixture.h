// SPDX-License-Identifier: Apache-2.0
// A test fixture for the query layer: a real SqliteStorage in a temporary directory, and
// helpers that write 10-second windows of GPU, process and host metrics into it.
#ifndef WARPSCOPE_SERVER_QUERY_TESTING_QUERY_FIXTURE_H_
#define WARPSCOPE_SERVER_QUERY_TESTING_QUERY_FIXTURE_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "base/testing/temp_dir.h"
#include "server/storage/sqlite_storage.h"

namespace warpscope::server::query {

// The start of the first window the tests write, in Unix seconds.
inline constexpr int64_t kT0 = 1'700'000'000;

inline base::TimePoint At(int64_t unix_seconds) {
  return base::FromUnixNanos(unix_seconds * 1'000'000'000);
}

class QueryFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
    SqliteStorageOptions options;
    options.data_dir = dir_;
    auto storage = SqliteStorage::Open(options);
    ASSERT_TRUE(storage) << storage.error().message();
    storage_ = std::move(*storage);
  }
  void TearDown() override { storage_.reset(); }

  // The window [kT0 + offset_s, +10 s) of `host`, from the agent "agent-<host>".
  IngestBatch Window(const std::string& host, int64_t offset_s) {
    IngestBatch b;
    b.agent_id = "agent-" + host;
    b.sequence = ++sequences_[host];
    b.start = At(kT0 + offset_s);
    b.end = At(kT0 + offset_s + 10);
    b.host = host;
    return b;
  }

  // Adds a GPU entity to `b`.
  static void AddGpu(IngestBatch& b, const std::string& id, const std::string& index) {
    b.entities.push_back(
        model::Entity{model::EntityKind::kGpu, id, b.host, model::Labels{{"gpu.index", index}}});
  }
  // Adds a process entity running `executable` to `b`.
  static void AddProcess(IngestBatch& b, const std::string& id, const std::string& executable) {
    b.entities.push_back(model::Entity{model::EntityKind::kProcess, id, b.host,
                                       model::Labels{{"process.executable.name", executable}}});
  }
  // Adds one series of the gauge `metric` on entities of `kind`: avg = last = value, min = value
  // - 0.1, max = value + 0.1 (the metric is described in `b` once).
  static void AddGauge(IngestBatch& b, const std::string& metric, model::EntityKind kind,
                       const std::string& entity, double value, model::Labels labels = {}) {
    bool described = false;
    for (const MetricInfo& m : b.metrics) {
      described = described || m.key == metric;
    }
    if (!described) {
      MetricInfo info;
      info.key = metric;
      info.unit = "1";
      info.entity_kind = kind;
      b.metrics.push_back(info);
    }
    IngestSeries s;
    s.metric = metric;
    s.entity = entity;
    s.labels = std::move(labels);
    s.avg = value;
    s.min = value - 0.1;
    s.max = value + 0.1;
    s.last = value;
    s.count = 10;
    b.series.push_back(std::move(s));
  }
  static void AddEvent(IngestBatch& b, const std::string& entity, const std::string& kind,
                       int64_t code) {
    b.events.push_back(
        model::Event{b.start + std::chrono::seconds(1), entity, kind, code, "event " + kind, {}});
  }

  void Write(const IngestBatch& b) {
    auto written = storage_->WriteBatch(b);
    ASSERT_TRUE(written) << written.error().message();
    ASSERT_FALSE(written->duplicate);
  }

  base::TempDir tmp_;  // removed after everything below
  std::string dir_;
  std::unique_ptr<SqliteStorage> storage_;
  std::map<std::string, uint64_t> sequences_;
};

}  // namespace warpscope::server::query

#endif  // WARPSCOPE_SERVER_QUERY_TESTING_QUERY_FIXTURE_H_
