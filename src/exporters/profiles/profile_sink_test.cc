// SPDX-License-Identifier: Apache-2.0
#include "exporters/profiles/profile_sink.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "base/file_util.h"
#include "base/testing/temp_dir.h"
#include "exporters/profiles/testing/fake_profile_sink.h"

namespace warpscope::exporters {
namespace {

using profiling::WindowProfile;

namespace fs = std::filesystem;
using base::TempDir;

WindowProfile Profile() {
  WindowProfile p;
  p.pid = 4242;
  p.executable = "/usr/bin/python3.11";
  p.start_ns = 1'700'000'000'123'000'000;
  p.end_ns = 1'700'000'010'123'000'000;
  p.pprof_gz = "\x1f\x8b pprof";
  p.folded = "a;b 10\n";
  p.trace_json = "{}";
  return p;
}

TEST(DirectoryProfileSinkTest, WritesEveryFormatNamedByHostPidAndWindow) {
  TempDir tmp;
  auto sink = DirectoryProfileSink::Create(tmp.path() + "/out/gpu", "node/1");
  ASSERT_TRUE(sink) << sink.error().message();
  ASSERT_TRUE((*sink)->Write(Profile()).ok());
  std::string stem = tmp.path() + "/out/gpu/gpu-node_1-4242-1700000000123-1700000010123";
  EXPECT_EQ(base::ReadFile(stem + ".pb.gz").value_or(""), "\x1f\x8b pprof");
  EXPECT_EQ(base::ReadFile(stem + ".folded").value_or(""), "a;b 10\n");
  EXPECT_EQ(base::ReadFile(stem + ".trace.json").value_or(""), "{}");
  EXPECT_FALSE(fs::exists(stem + ".pc.folded")) << "no PC samples, no file";
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(tmp.path() + "/out/gpu")) {
    ++files;
  }
  EXPECT_EQ(files, 3u) << "no temporary files left behind";
}

TEST(DirectoryProfileSinkTest, WritesPcSampleFoldedStacksWhenPresent) {
  TempDir tmp;
  auto sink = DirectoryProfileSink::Create(tmp.path(), "h");
  ASSERT_TRUE(sink);
  WindowProfile p = Profile();
  p.folded_pc_samples = "k;[stall] wait 3\n";
  ASSERT_TRUE((*sink)->Write(p).ok());
  EXPECT_EQ(base::ReadFile(tmp.path() + "/" + (*sink)->StemFor(p) + ".pc.folded").value_or(""),
            "k;[stall] wait 3\n");
}

TEST(DirectoryProfileSinkTest, AsksForThePerfettoTraceUnlessChromeJsonIsChosen) {
  TempDir tmp;
  auto perfetto = DirectoryProfileSink::Create(tmp.path() + "/p", "h");
  ASSERT_TRUE(perfetto);
  EXPECT_TRUE((*perfetto)->formats().trace);
  EXPECT_FALSE((*perfetto)->formats().chrome_trace);
  auto chrome =
      DirectoryProfileSink::Create(tmp.path() + "/c", "h", profiling::TraceFormat::kChrome);
  ASSERT_TRUE(chrome);
  EXPECT_FALSE((*chrome)->formats().trace);
  EXPECT_TRUE((*chrome)->formats().chrome_trace);
  WindowProfile p = Profile();
  p.trace_json.clear();
  p.perfetto_trace = std::string("\x0a\x00", 2);
  ASSERT_TRUE((*perfetto)->Write(p).ok());
  const std::string stem = tmp.path() + "/p/" + (*perfetto)->StemFor(p);
  EXPECT_EQ(base::ReadFile(stem + ".perfetto-trace").value_or(""), p.perfetto_trace);
  EXPECT_FALSE(fs::exists(stem + ".trace.json"));
}

TEST(DirectoryProfileSinkTest, RefusesAPathThatIsAFile) {
  TempDir tmp;
  ASSERT_TRUE(base::WriteFile(tmp.path() + "/file", "x").ok());
  auto sink = DirectoryProfileSink::Create(tmp.path() + "/file", "h");
  ASSERT_FALSE(sink);
  EXPECT_EQ(sink.error().code(), base::StatusCode::kInvalidArgument);
}

TEST(DirectoryProfileSinkTest, UnwritableDirectoryIsUnavailable) {
  TempDir tmp;
  auto sink = DirectoryProfileSink::Create(tmp.path() + "/d", "h");
  ASSERT_TRUE(sink);
  fs::remove_all(tmp.path() + "/d");  // the directory vanished under the agent
  base::Status written = (*sink)->Write(Profile());
  EXPECT_EQ(written.code(), base::StatusCode::kUnavailable);
}

TEST(UrlEncodeTest, EncodesReservedCharacters) {
  EXPECT_EQ(UrlEncode("/usr/bin/python3.11"), "%2Fusr%2Fbin%2Fpython3.11");
  EXPECT_EQ(UrlEncode("a b&c=d~e"), "a%20b%26c%3Dd~e");
}

TEST(ServerProfileSinkTest, TargetCarriesHostKindPidExecutableAndWindow) {
  auto sink = ServerProfileSink::Create(
      {.server_url = "http://127.0.0.1:9410/prefix/", .host = "gpu-node-1"});
  ASSERT_TRUE(sink) << sink.error().message();
  EXPECT_EQ((*sink)->TargetFor(Profile()),
            "/prefix/api/v1/ingest/profile?host=gpu-node-1&kind=gpu&pid=4242"
            "&executable=%2Fusr%2Fbin%2Fpython3.11"
            "&start=1700000000.123000000&end=1700000010.123000000");
}

TEST(ServerProfileSinkTest, RejectsBadSettings) {
  EXPECT_EQ(ServerProfileSink::Create({.server_url = "ftp://x", .host = "h"}).error().code(),
            base::StatusCode::kInvalidArgument);
  EXPECT_EQ(ServerProfileSink::Create({.server_url = "http://x:1", .host = ""}).error().code(),
            base::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      ServerProfileSink::Create({.server_url = "http://x:1", .host = "h", .auth_token = "a\nb"})
          .error()
          .code(),
      base::StatusCode::kInvalidArgument);
}

TEST(FakeProfileSinkTest, KeepsProfilesAndFailsOnRequest) {
  FakeProfileSink sink;
  ASSERT_TRUE(sink.Write(Profile()).ok());
  sink.fail_with = base::Unavailable("down");
  EXPECT_EQ(sink.Write(Profile()).code(), base::StatusCode::kUnavailable);
  EXPECT_EQ(sink.profiles.size(), 1u);
  EXPECT_EQ(sink.failed_writes, 1);
}

}  // namespace
}  // namespace warpscope::exporters
