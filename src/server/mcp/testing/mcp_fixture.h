// SPDX-License-Identifier: Apache-2.0
// A test fixture for the MCP server: a real SqliteStorage (query/testing/query_fixture.h) with
// one host of four GPUs over 11 minutes, a process on GPU-0, CPU and GPU profiles, an insights
// engine evaluated after every window, and an McpServer over them with a fake clock.
#ifndef WARPSCOPE_SERVER_MCP_TESTING_MCP_FIXTURE_H_
#define WARPSCOPE_SERVER_MCP_TESTING_MCP_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/time.h"
#include "profiling/pprof.h"
#include "profiling/profile.h"
#include "server/insights/insight_engine.h"
#include "server/mcp/mcp_server.h"
#include "server/query/testing/query_fixture.h"

namespace warpscope::server::mcp {

// Windows written by RunNode: 66 of 10 s, so that the idle GPU's finding fires.
inline constexpr int kWindows = 66;

class McpFixture : public query::QueryFixture {
 protected:
  void SetUp() override {
    QueryFixture::SetUp();
    auto engine = insights::InsightEngine::Create(*storage_, insights::EngineOptions{});
    ASSERT_TRUE(engine) << engine.error().message();
    engine_ = std::move(*engine);
    server_ = std::make_unique<McpServer>(*storage_, engine_.get(), clock_);
  }
  void TearDown() override {
    server_.reset();
    engine_.reset();
    QueryFixture::TearDown();
  }

  // node-1: GPU-0..2 busy (utilization 0.9, 600 W), GPU-3 idle (0, 70 W) holding 40 GiB, all
  // 60 C; GPU-1 has an XID 79 at window 50; pid/42/1 (python3) holds 10 GiB on GPU-0. A CPU
  // and a GPU profile of pid 42 in the last window. The clock ends at the last window's end.
  void RunNode() {
    for (int w = 0; w < kWindows; ++w) {
      IngestBatch b = Window("node-1", w * 10);
      for (int i = 0; i < 4; ++i) {
        std::string uuid = "GPU-" + std::to_string(i);
        b.entities.push_back(model::Entity{model::EntityKind::kGpu, uuid, b.host,
                                           model::Labels{{"gpu.index", std::to_string(i)},
                                                         {"gpu.uuid", uuid},
                                                         {"gpu.model", "NVIDIA H100 80GB HBM3"}}});
        AddGauge(b, "gpu.utilization", model::EntityKind::kGpu, uuid, i == 3 ? 0.0 : 0.9);
        AddGauge(b, "gpu.memory.used", model::EntityKind::kGpu, uuid, 40.0 * (1 << 30));
        AddGauge(b, "gpu.temperature", model::EntityKind::kGpu, uuid, 60);
        AddGauge(b, "gpu.power.usage", model::EntityKind::kGpu, uuid, i == 3 ? 70 : 600);
      }
      b.entities.push_back(model::Entity{
          model::EntityKind::kProcess, "pid/42/1", b.host,
          model::Labels{{"process.executable.name", "python3"}, {"process.pid", "42"}}});
      AddGauge(b, "gpu.process.memory.used", model::EntityKind::kProcess, "pid/42/1",
               10.0 * (1 << 30), model::Labels{{"gpu.index", "0"}, {"gpu.uuid", "GPU-0"}});
      if (w == 50) AddEvent(b, "GPU-1", "xid", 79);
      Write(b);
      ASSERT_TRUE(engine_->Evaluate(query::At(query::kT0 + (w + 1) * 10)).ok());
    }
    StoreProfile(CpuProfile(), "cpu", (kWindows - 1) * 10);
    StoreProfile(GpuProfile(), "gpu", (kWindows - 1) * 10);
    clock_.Advance(query::At(query::kT0 + kWindows * 10) - clock_.Now());
  }

  void StoreProfile(const std::string& data, const std::string& kind, int64_t offset_s) {
    ProfileMeta m;
    m.host = "node-1";
    m.entity = "pid/42/1";
    m.pid = 42;
    m.kind = kind;
    m.start = query::At(query::kT0 + offset_s);
    m.end = query::At(query::kT0 + offset_s + 10);
    ASSERT_TRUE(storage_->WriteProfile(m, data));
  }

  // python3 -> step -> matmul (30 ms) and python3 -> step -> load (10 ms), main -> matmul as
  // well (recursion-free): matmul has self 30, step total 40.
  static std::string CpuProfile() {
    using profiling::FrameKind;
    profiling::ProfileAggregator p(
        std::vector<profiling::ValueType>{{"samples", "count"}, {"cpu", "nanoseconds"}});
    uint32_t process =
        p.InternFrame({"python3", "/usr/bin/python3", 0, "", "", "", FrameKind::kProcess});
    uint32_t step = p.InternFrame({"step", "train.py", 3, "", "", "", FrameKind::kPython});
    uint32_t matmul =
        p.InternFrame({"matmul", "", 0, "", "/usr/lib/libtorch.so", "", FrameKind::kNative});
    uint32_t load = p.InternFrame({"load", "data.py", 7, "", "", "", FrameKind::kPython});
    const int64_t hot[] = {30, 30'000'000};
    const int64_t cold[] = {10, 10'000'000};
    p.Add(std::vector<uint32_t>{process, step, matmul}, hot);
    p.Add(std::vector<uint32_t>{process, step, load}, cold);
    p.mutable_profile().default_sample_type = "cpu";
    return profiling::EncodePprof(p.profile()).value();
  }

  // python3 -> cudaLaunchKernel -> gemm (75 ms) and -> relu (25 ms).
  static std::string GpuProfile() {
    using profiling::FrameKind;
    profiling::ProfileAggregator p(
        std::vector<profiling::ValueType>{{"gpu_time", "nanoseconds"}, {"launches", "count"}});
    uint32_t process =
        p.InternFrame({"python3", "/usr/bin/python3", 0, "", "", "", FrameKind::kProcess});
    uint32_t launch = p.InternFrame({"cudaLaunchKernel", "", 0, "", "", "", FrameKind::kLaunch});
    uint32_t gemm = p.InternFrame({"gemm", "", 0, "", "", "", FrameKind::kKernel});
    uint32_t relu = p.InternFrame({"relu", "", 0, "", "", "", FrameKind::kKernel});
    const int64_t g[] = {75'000'000, 3};
    const int64_t r[] = {25'000'000, 1};
    p.Add(std::vector<uint32_t>{process, launch, gemm}, g);
    p.Add(std::vector<uint32_t>{process, launch, relu}, r);
    return profiling::EncodePprof(p.profile()).value();
  }

  // The reply to one request.
  nlohmann::json Request(const std::string& method, nlohmann::json params = nullptr,
                         const McpRequestContext& context = {}) {
    nlohmann::json m = {{"jsonrpc", "2.0"}, {"id", ++next_id_}, {"method", method}};
    if (!params.is_null()) m["params"] = std::move(params);
    std::optional<nlohmann::json> reply = server_->Handle(m, context);
    EXPECT_TRUE(reply.has_value()) << m.dump();
    return reply.value_or(nlohmann::json());
  }

  // The result of tools/call `tool` with `arguments` (2025 era: no _meta).
  nlohmann::json Call(const std::string& tool, nlohmann::json arguments) {
    nlohmann::json reply =
        Request("tools/call", {{"name", tool}, {"arguments", std::move(arguments)}});
    EXPECT_TRUE(reply.contains("result")) << reply.dump(2);
    return reply.value("result", nlohmann::json::object());
  }

  // The text of a tools/call result.
  static std::string Text(const nlohmann::json& result) {
    if (!result.contains("content") || result["content"].empty()) return "";
    return result["content"][0].value("text", "");
  }

  base::FakeClock clock_{query::At(query::kT0)};
  std::unique_ptr<insights::InsightEngine> engine_;
  std::unique_ptr<McpServer> server_;
  int next_id_ = 0;
};

}  // namespace warpscope::server::mcp

#endif  // WARPSCOPE_SERVER_MCP_TESTING_MCP_FIXTURE_H_
