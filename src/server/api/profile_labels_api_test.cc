// SPDX-License-Identifier: Apache-2.0
// GET /api/v1/profiles/merged with labelled GPU profiles: the labels survive storage, filter the
// tree and the download, and are listed with their shares.
#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/testing/temp_dir.h"
#include "base/time.h"
#include "profiling/pprof.h"
#include "server/api/api_server.h"
#include "server/storage/sqlite_storage.h"

namespace warpscope::server {
namespace {

using nlohmann::json;
using profiling::FrameKind;
using profiling::Label;
constexpr char kToken[] = "s3cret-token";
constexpr char kWindow[] = "host=node1&kind=gpu&start=1700000000&end=1700001000";

// One process's GPU profile as the CUDA profiler labels it: each kernel sample carries device,
// stream, pid and (when its launch was sampled) the NVTX range around the launch. Per `scale`:
//   gemm    device 0 stream 7  nvtx forward   40 ns, 1 launch
//   gemm    device 1 stream 8  nvtx forward   20 ns, 1 launch
//   relu    device 0 stream 8  nvtx backward  30 ns, 1 launch
//   relu    device 1 stream 7  (unsampled)    10 ns, 1 launch
std::string LabelledGpuPprof(int64_t scale) {
  profiling::ProfileAggregator p(std::vector<profiling::ValueType>{
      {"gpu_time", "nanoseconds"}, {"launches", "count"}, {"pc_samples", "count"}});
  const uint32_t process =
      p.InternFrame({"train", "/usr/bin/train", 0, "", "", "", FrameKind::kProcess});
  const uint32_t launch =
      p.InternFrame({"cudaLaunchKernel", "", 0, "", "", "", FrameKind::kLaunch});
  const uint32_t gemm = p.InternFrame({"gemm", "", 0, "", "", "", FrameKind::kKernel});
  const uint32_t relu = p.InternFrame({"relu", "", 0, "", "", "", FrameKind::kKernel});
  const uint32_t unsampled =
      p.InternFrame({"[unsampled launch site]", "", 0, "", "", "", FrameKind::kMarker});
  auto add = [&](std::vector<uint32_t> stack, int64_t ns, int64_t device, int64_t stream,
                 const std::string& nvtx) {
    std::vector<Label> labels = {{"device", "", device}, {"stream", "", stream}, {"pid", "", 42}};
    if (!nvtx.empty()) labels.push_back({"nvtx", nvtx, 0});
    const int64_t v[] = {ns * scale, scale, 0};
    p.Add(stack, v, labels);
  };
  add({process, launch, gemm}, 40, 0, 7, "forward");
  add({process, launch, gemm}, 20, 1, 8, "forward");
  add({process, launch, relu}, 30, 0, 8, "backward");
  add({process, unsampled, relu}, 10, 1, 7, "");
  return profiling::EncodePprof(p.profile()).value();
}

class ProfileLabelsApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    SqliteStorageOptions so;
    so.data_dir = tmp_.path();
    auto storage = SqliteStorage::Open(so);
    ASSERT_TRUE(storage) << storage.error().message();
    storage_ = std::move(*storage);
    ApiServer::Options opts;
    opts.listen_address = "127.0.0.1:0";
    opts.auth_token = kToken;
    api_ = std::make_unique<ApiServer>(opts, *storage_, clock_);
    auto port = api_->Start();
    ASSERT_TRUE(port) << port.error().message();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
    // Two windows of one process: the second with twice the GPU time.
    Upload(LabelledGpuPprof(1), 1700000000);
    Upload(LabelledGpuPprof(2), 1700000060);
  }
  void TearDown() override {
    api_.reset();
    storage_.reset();
  }

  void Upload(const std::string& pprof, int64_t start) {
    auto res = client_->Post("/api/v1/ingest/profile?host=node1&kind=gpu&pid=42&start=" +
                                 std::to_string(start) + "&end=" + std::to_string(start + 60),
                             Headers(), pprof, "application/octet-stream");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    ids_.push_back(json::parse(res->body)["id"].get<int64_t>());
  }
  httplib::Headers Headers() const { return {{"Authorization", std::string("Bearer ") + kToken}}; }
  // The merged tree for `filters` ("label=device:0&label=stream:7"); null on a failure.
  json Tree(const std::string& filters) {
    auto res = client_->Get("/api/v1/profiles/merged?" + filters + "&" + kWindow, Headers());
    EXPECT_TRUE(res);
    if (!res) return nullptr;
    EXPECT_EQ(res->status, 200) << filters << ": " << res->body;
    return res->status == 200 ? json::parse(res->body) : json(nullptr);
  }
  // [gpu_time, launches] of the merged tree's root for `filters`.
  std::vector<int64_t> Totals(const std::string& filters) {
    json tree = Tree(filters);
    if (tree.is_null()) return {};
    return {tree["root"]["total"][0].get<int64_t>(), tree["root"]["total"][1].get<int64_t>()};
  }

  base::FakeClock clock_{base::FromUnixNanos(1'700'003'600'000'000'000)};
  base::TempDir tmp_;
  std::unique_ptr<SqliteStorage> storage_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<httplib::Client> client_;
  std::vector<int64_t> ids_;
};

TEST_F(ProfileLabelsApiTest, StoredProfilesKeepTheirLabels) {
  auto res = client_->Get("/api/v1/profiles/" + std::to_string(ids_[0]), Headers());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto stored = profiling::DecodePprof(res->body);
  ASSERT_TRUE(stored) << stored.error().message();
  ASSERT_EQ(stored->samples.size(), 4u);
  EXPECT_EQ(stored->samples[0].labels,
            (std::vector<Label>{
                {"device", "", 0}, {"stream", "", 7}, {"pid", "", 42}, {"nvtx", "forward", 0}}));
}

TEST_F(ProfileLabelsApiTest, TheTreeFiltersByDeviceStreamAndNvtxRange) {
  EXPECT_EQ(Totals(""), (std::vector<int64_t>{300, 12}));
  EXPECT_EQ(Totals("label=device:0"), (std::vector<int64_t>{210, 6}));
  EXPECT_EQ(Totals("label=device:1"), (std::vector<int64_t>{90, 6}));
  EXPECT_EQ(Totals("label=stream:8"), (std::vector<int64_t>{150, 6}));
  EXPECT_EQ(Totals("label=nvtx:forward"), (std::vector<int64_t>{180, 6}));
  EXPECT_EQ(Totals("label=nvtx:backward"), (std::vector<int64_t>{90, 3}));
  EXPECT_EQ(Totals("label=nvtx:for*"), (std::vector<int64_t>{180, 6}));
  // Keys AND, one key's values OR.
  EXPECT_EQ(Totals("label=device:0&label=stream:7"), (std::vector<int64_t>{120, 3}));
  EXPECT_EQ(Totals("label=device:1&label=nvtx:forward"), (std::vector<int64_t>{60, 3}));
  EXPECT_EQ(Totals("label=stream:7&label=stream:8"), (std::vector<int64_t>{300, 12}));
  EXPECT_EQ(Totals("label=nvtx:forward&label=nvtx:backward&label=device:0"),
            (std::vector<int64_t>{210, 6}));
  EXPECT_EQ(Totals("label=device:3"), (std::vector<int64_t>{0, 0}));

  json gemm_only = Tree("label=device:0&label=stream:7");
  ASSERT_EQ(gemm_only["root"]["children"].size(), 1u);
  const json& launch = gemm_only["root"]["children"][0]["children"][0];
  EXPECT_EQ(launch["name"], "cudaLaunchKernel");
  ASSERT_EQ(launch["children"].size(), 1u);
  EXPECT_EQ(launch["children"][0]["name"], "gemm");
  EXPECT_EQ(gemm_only["label_filters"], json({"device:0", "stream:7"}));
}

TEST_F(ProfileLabelsApiTest, TheTreeListsEachKeysValuesWithTheirShare) {
  json tree = Tree("label=device:0&value=gpu_time");
  std::map<std::string, json> keys;
  for (const json& k : tree["labels"]) keys[k["key"]] = k;
  ASSERT_TRUE(keys.count("device") && keys.count("stream") && keys.count("nvtx") &&
              keys.count("pid"));
  const json& device = keys["device"];
  ASSERT_EQ(device["values"].size(), 2u);
  EXPECT_EQ(device["values"][0]["filter"], "device:0");
  EXPECT_DOUBLE_EQ(device["values"][0]["share"].get<double>(), 0.7);
  EXPECT_EQ(device["values"][1]["filter"], "device:1");
  EXPECT_DOUBLE_EQ(device["values"][1]["share"].get<double>(), 0.3);
  // The NVTX menu is of device 0 (the filter of another key applies).
  const json& nvtx = keys["nvtx"];
  EXPECT_EQ(nvtx["total"][0], 210);
  ASSERT_EQ(nvtx["values"].size(), 2u);
  EXPECT_EQ(nvtx["values"][0]["value"], "forward");
  EXPECT_EQ(nvtx["values"][0]["total"][0], 120);
  EXPECT_EQ(nvtx["values"][1]["value"], "backward");
  EXPECT_EQ(nvtx["unlabelled"][0], 0);

  json one = Tree("label_values=1");
  for (const json& k : one["labels"]) {
    if (k["key"] == "stream") {
      ASSERT_EQ(k["values"].size(), 1u);
      EXPECT_EQ(k["values_omitted"], 1);
      EXPECT_EQ(k["values"][0]["total"][0], k["total"][0].get<int64_t>() / 2);
    }
  }
}

TEST_F(ProfileLabelsApiTest, ThePprofDownloadKeepsTheLabelsAndTheFilter) {
  auto res =
      client_->Get(std::string("/api/v1/profiles/merged?format=pprof&") + kWindow, Headers());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("X-Warpscope-Label-Sets"), "4");
  EXPECT_EQ(res->get_header_value("X-Warpscope-Label-Sets-Over-Cap"), "0");
  auto merged = profiling::DecodePprof(res->body);
  ASSERT_TRUE(merged) << merged.error().message();
  ASSERT_EQ(merged->samples.size(), 4u) << "summed by stack and labels across the two windows";
  // What pprof -tagfocus=device=0 would keep.
  int64_t device0 = 0;
  for (const auto& s : merged->samples) {
    for (const Label& l : s.labels) {
      if (l.key == "device" && l.num == 0) device0 += s.values[0];
    }
  }
  EXPECT_EQ(device0, 210);
  EXPECT_EQ(merged->samples[0].values, (std::vector<int64_t>{120, 3, 0}));
  EXPECT_EQ(merged->samples[0].labels,
            (std::vector<Label>{
                {"device", "", 0}, {"nvtx", "forward", 0}, {"pid", "", 42}, {"stream", "", 7}}));

  auto filtered = client_->Get(
      std::string("/api/v1/profiles/merged?format=pprof&label=stream:8&") + kWindow, Headers());
  ASSERT_TRUE(filtered);
  ASSERT_EQ(filtered->status, 200) << filtered->body;
  auto streams = profiling::DecodePprof(filtered->body);
  ASSERT_TRUE(streams);
  ASSERT_EQ(streams->samples.size(), 2u);
  EXPECT_EQ(streams->samples[0].values[0] + streams->samples[1].values[0], 150);
}

TEST_F(ProfileLabelsApiTest, MalformedFiltersAre400NamingTheFix) {
  auto error_of = [&](const std::string& query) {
    auto res = client_->Get("/api/v1/profiles/merged?" + query + "&" + kWindow, Headers());
    EXPECT_TRUE(res);
    if (!res) return std::string();
    EXPECT_EQ(res->status, 400) << query;
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/json") << query;
    return json::parse(res->body)["error"].get<std::string>();
  };
  EXPECT_NE(error_of("label=device").find("expected KEY:VALUE, e.g. label=device:0"),
            std::string::npos);
  EXPECT_NE(error_of("label=").find("expected KEY:VALUE"), std::string::npos);
  EXPECT_NE(error_of("label=:0").find("expected KEY:VALUE"), std::string::npos);
  EXPECT_NE(error_of("label=stream:seven").find("stream is a number"), std::string::npos);
  EXPECT_NE(error_of("format=pprof&label=device:x").find("label=device:0"), std::string::npos);
  EXPECT_NE(error_of("label_values=0x").find("label_values"), std::string::npos);
  std::string many;
  for (int i = 0; i < 65; ++i) many += "label=nvtx:r" + std::to_string(i) + "&";
  EXPECT_NE(error_of(many).find("more than 64"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::server
