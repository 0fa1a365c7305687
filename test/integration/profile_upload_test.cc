// SPDX-License-Identifier: Apache-2.0
// ServerProfileSink against a real in-process ApiServer on loopback: the profile lands in the
// server's storage under the right host, process and window, and the server can decode it.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "agent/sources/cuda_profiler/profile_builder.h"
#include "base/testing/temp_dir.h"
#include "base/time.h"
#include "exporters/profiles/profile_sink.h"
#include "profiling/pprof.h"
#include "server/api/api_server.h"
#include "server/storage/sqlite_storage.h"

namespace warpscope::exporters {
namespace {

constexpr char kToken[] = "ingest-token-1";
constexpr int64_t kStart = 1'700'000'000'000'000'000;
constexpr int64_t kEnd = kStart + 10'000'000'000;

class ServerSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
    server::SqliteStorageOptions so;
    so.data_dir = dir_;
    auto storage = server::SqliteStorage::Open(so);
    ASSERT_TRUE(storage) << storage.error().message();
    storage_ = std::move(*storage);
    server::ApiServer::Options opts;
    opts.listen_address = "127.0.0.1:0";
    opts.auth_token = kToken;
    opts.serve_ui = false;
    api_ = std::make_unique<server::ApiServer>(opts, *storage_, clock_);
    auto port = api_->Start();
    ASSERT_TRUE(port) << port.error().message();
    url_ = "http://127.0.0.1:" + std::to_string(*port);
  }
  void TearDown() override {
    api_.reset();
    storage_.reset();
  }

  profiling::WindowProfile BuildProfile() {
    agent::cuda_profiler::ProfileBuilder builder(nullptr, {});
    builder.AddProcess({321, "/opt/train/bin/trainer", 0, 0});
    builder.AddKernelAggregate(321, {"_Z4gemmIfEvPfi", 0, 7, 3, 9000});
    auto profiles = builder.FinishWindow(kStart, kEnd);
    EXPECT_EQ(profiles.size(), 1u);
    return profiles.empty() ? profiling::WindowProfile{} : profiles[0];
  }

  base::TempDir tmp_;  // removed after everything below
  std::string dir_;
  base::FakeClock clock_{base::FromUnixNanos(kEnd + 60'000'000'000)};
  std::unique_ptr<server::Storage> storage_;
  std::unique_ptr<server::ApiServer> api_;
  std::string url_;
};

TEST_F(ServerSinkTest, UploadedProfileIsStoredUnderHostProcessAndWindow) {
  auto sink =
      ServerProfileSink::Create({.server_url = url_, .host = "node-a", .auth_token = kToken});
  ASSERT_TRUE(sink) << sink.error().message();
  profiling::WindowProfile profile = BuildProfile();
  base::Status written = (*sink)->Write(profile);
  ASSERT_TRUE(written.ok()) << written.message();

  server::ProfileQuery q;
  q.start = base::FromUnixNanos(kStart - 1);
  q.end = base::FromUnixNanos(kEnd + 1);
  auto listed = storage_->ListProfiles(q);
  ASSERT_TRUE(listed) << listed.error().message();
  ASSERT_EQ(listed->size(), 1u);
  const server::ProfileMeta& meta = (*listed)[0];
  EXPECT_EQ(meta.host, "node-a");
  EXPECT_EQ(meta.kind, "gpu");
  EXPECT_EQ(meta.pid, 321);
  EXPECT_EQ(meta.executable, "/opt/train/bin/trainer");
  EXPECT_EQ(base::ToUnixNanos(meta.start) / 1000, kStart / 1000);
  EXPECT_EQ(base::ToUnixNanos(meta.end) / 1000, kEnd / 1000);

  auto stored = storage_->ReadProfile(meta.id);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->data, profile.pprof_gz);
  auto decoded = profiling::DecodePprof(stored->data);
  ASSERT_TRUE(decoded) << decoded.error().message();
  ASSERT_EQ(decoded->samples.size(), 1u);
  std::vector<std::string> names;
  for (const auto& f : profiling::StackFrames(*decoded, decoded->samples[0])) {
    names.push_back(f.function);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"trainer", "[unsampled launch site]",
                                             "void gemm<float>(float*, int)"}));
  EXPECT_EQ(decoded->samples[0].values, (std::vector<int64_t>{9000, 3, 0}));
}

TEST_F(ServerSinkTest, WrongTokenIsPermissionDenied) {
  auto sink =
      ServerProfileSink::Create({.server_url = url_, .host = "node-a", .auth_token = "wrong"});
  ASSERT_TRUE(sink);
  EXPECT_EQ((*sink)->Write(BuildProfile()).code(), base::StatusCode::kPermissionDenied);
}

TEST_F(ServerSinkTest, StoppedServerIsUnavailable) {
  auto sink = ServerProfileSink::Create({.server_url = url_,
                                         .host = "node-a",
                                         .auth_token = kToken,
                                         .timeout = std::chrono::seconds(2)});
  ASSERT_TRUE(sink);
  // A first upload proves the server is accepting: ApiServer::Stop() right after Start() can
  // miss a listener thread that has not begun accepting yet.
  ASSERT_TRUE((*sink)->Write(BuildProfile()).ok());
  api_->Stop();
  EXPECT_EQ((*sink)->Write(BuildProfile()).code(), base::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace warpscope::exporters
