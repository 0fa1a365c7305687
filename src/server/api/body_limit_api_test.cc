// SPDX-License-Identifier: Apache-2.0
// Compressed request bodies are inflated only up to --max-body-bytes: a small gzip body that
// inflates to 48 MiB (a gzip bomb) is refused with 413 without the server holding what it
// inflates to; bodies within the limit, plain or gzip, are read whole.
#include <gtest/gtest.h>
#include <httplib.h>
#include <zlib.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "base/gzip.h"
#include "base/testing/temp_dir.h"
#include "base/time.h"
#include "server/api/api_server.h"
#include "server/storage/sqlite_storage.h"

namespace warpscope::server {
namespace {

using nlohmann::json;

// `zeros` zero bytes as one gzip member, made 1 MiB at a time so that the test itself never
// holds them (base::GzipCompress takes the whole input at once).
std::string GzipOfZeros(size_t zeros) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  const std::string chunk(1u << 20, '\0');
  std::string out;
  char buf[1 << 16];
  for (size_t left = zeros; left > 0 || z.avail_in > 0;) {
    if (z.avail_in == 0) {
      const size_t n = std::min(left, chunk.size());
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(chunk.data()));
      z.avail_in = static_cast<uInt>(n);
      left -= n;
    }
    const int flush = left == 0 ? Z_FINISH : Z_NO_FLUSH;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof(buf);
      deflate(&z, flush);
      out.append(buf, sizeof(buf) - z.avail_out);
    } while (z.avail_out == 0);
    if (flush == Z_FINISH) break;
  }
  deflateEnd(&z);
  return out;
}

// The process's peak resident memory so far (VmHWM), in bytes.
size_t PeakRss() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

class BodyLimitApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SqliteStorageOptions so;
    so.data_dir = tmp_.path();
    auto storage = SqliteStorage::Open(so);
    ASSERT_TRUE(storage) << storage.error().message();
    storage_ = std::move(*storage);
    ApiServer::Options opts;
    opts.listen_address = "127.0.0.1:0";
    opts.max_body_bytes = 1u << 20;
    api_ = std::make_unique<ApiServer>(opts, *storage_, clock_);
    auto port = api_->Start();
    ASSERT_TRUE(port) << port.error().message();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
  }
  void TearDown() override {
    client_.reset();
    api_.reset();
    storage_.reset();
  }

  httplib::Result PostGzip(const std::string& path, const std::string& body,
                           const std::string& type) {
    return client_->Post(path, {{"Content-Encoding", "gzip"}}, body, type.c_str());
  }

  base::FakeClock clock_{base::FromUnixNanos(1'700'000'000'000'000'000)};
  base::TempDir tmp_;
  std::unique_ptr<SqliteStorage> storage_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(BodyLimitApiTest, AGzipBombIsRefusedWithoutInflatingIt) {
  const std::string bomb = GzipOfZeros(48u << 20);
  ASSERT_LT(bomb.size(), 1u << 20);  // under the limit as sent: only inflating can exceed it
  const size_t before = PeakRss();
  for (const char* path : {"/api/v1/ingest/batch", "/v1/metrics", "/api/v1/write"}) {
    auto res = PostGzip(path, bomb, "application/x-protobuf");
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 413) << path << ": " << res->body;
    json body = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << res->body;
    EXPECT_NE(body["error"].get<std::string>().find("--max-body-bytes"), std::string::npos)
        << res->body;
  }
  // Inflating one bomb whole would take 48 MiB (more while a string grows); the limit bounds
  // each request to about 1 MiB plus httplib's buffers.
  EXPECT_LT(PeakRss() - before, size_t{16} << 20)
      << "peak RSS grew by " << ((PeakRss() - before) >> 20) << " MiB";
  EXPECT_EQ(api_->stats().batches, 0u);
}

TEST_F(BodyLimitApiTest, BodiesWithinTheLimitAreReadWholePlainOrGzip) {
  // An OTLP JSON body with no resource metrics: accepted, plain and gzip-compressed.
  const std::string empty = R"({"resourceMetrics": []})";
  auto plain = client_->Post("/v1/metrics", empty, "application/json");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->status, 200) << plain->body;
  base::Result<std::string> compressed = base::GzipCompress(empty);
  ASSERT_TRUE(compressed) << compressed.error().message();
  auto gzip = PostGzip("/v1/metrics", *compressed, "application/json");
  ASSERT_TRUE(gzip);
  EXPECT_EQ(gzip->status, 200) << gzip->body;
}

}  // namespace
}  // namespace warpscope::server
