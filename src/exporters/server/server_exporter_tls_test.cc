// SPDX-License-Identifier: Apache-2.0
// https delivery against an in-process TLS server whose self-signed certificate (for 127.0.0.1)
// is made here with OpenSSL: trusted through tls_ca_file it works; with only the system CAs the
// batch is retried (never dropped) and the error names the remedy.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdio>
#include <mutex>
#include <thread>

#include "base/testing/temp_dir.h"
#include "exporters/server/server_exporter.h"
#include "exporters/testing/sample_frame.h"
#include "support/self_signed_cert.h"

namespace warpscope::exporters {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Stats = ServerExporter::Stats;

class TlsIngestServer {
 public:
  TlsIngestServer(const std::string& cert, const std::string& key)
      : server_(cert.c_str(), key.c_str()) {
    server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      v1::Batch batch;
      if (!batch.ParseFromString(req.body)) {
        res.status = 400;
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        sequences_.push_back(batch.sequence());
      }
      v1::BatchResponse reply;
      reply.set_accepted_sequence(batch.sequence());
      res.set_content(reply.SerializeAsString(), "application/x-protobuf");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (port_ > 0 && !server_.is_running()) {
      std::this_thread::yield();
    }
  }
  ~TlsIngestServer() {
    server_.stop();
    thread_.join();
  }
  bool valid() { return server_.is_valid() && port_ > 0; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  std::vector<uint64_t> sequences() {
    std::lock_guard<std::mutex> lock(mu_);
    return sequences_;
  }

 private:
  httplib::SSLServer server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<uint64_t> sequences_;
};

ServerExporter::Options TlsOptions(const std::string& url) {
  ServerExporter::Options o;
  o.server_url = url;
  o.agent_id = "tls-agent";
  o.initial_backoff = milliseconds(1);
  o.max_backoff = milliseconds(5);
  o.request_timeout = seconds(5);
  o.start_time = base::FromUnixNanos(500);
  return o;
}

class ServerExporterTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cert_ = tmp_.path() + "/cert.pem";
    key_ = tmp_.path() + "/key.pem";
    ASSERT_TRUE(test::MakeSelfSignedCert(cert_, key_));
  }
  base::TempDir tmp_;
  std::string cert_;
  std::string key_;
};

TEST_F(ServerExporterTlsTest, DeliversOverHttpsWithTheGivenCa) {
  TlsIngestServer server(cert_, key_);
  ASSERT_TRUE(server.valid());
  auto o = TlsOptions(server.url());
  o.tls_ca_file = cert_;
  auto exporter = ServerExporter::Create(o);
  ASSERT_TRUE(exporter.has_value()) << exporter.error().ToString();

  ASSERT_EQ((*exporter)->Export(sample::MakeSampleFrame({.gpus = 1, .processes = 0})),
            ExportResult::kSuccess);
  (*exporter)->Shutdown(seconds(10));

  EXPECT_EQ(server.sequences(), std::vector<uint64_t>{500});
  EXPECT_EQ((*exporter)->stats().sent, 1u);
}

TEST_F(ServerExporterTlsTest, UntrustedCertificateIsRetriedNotDropped) {
  TlsIngestServer server(cert_, key_);
  ASSERT_TRUE(server.valid());
  auto exporter = ServerExporter::Create(TlsOptions(server.url()));  // system CAs only
  ASSERT_TRUE(exporter.has_value()) << exporter.error().ToString();

  ASSERT_EQ((*exporter)->Export(sample::MakeSampleFrame({.gpus = 1, .processes = 0})),
            ExportResult::kSuccess);
  ASSERT_TRUE((*exporter)->WaitForStatsForTesting([](const Stats& s) { return s.retries >= 2; },
                                                  seconds(10)));
  Stats s = (*exporter)->stats();
  EXPECT_EQ(s.sent, 0u);
  EXPECT_EQ(s.dropped_rejected, 0u);
  EXPECT_NE(s.last_error.find("--tls-ca-file"), std::string::npos) << s.last_error;
  (*exporter)->Shutdown(milliseconds(10));
  EXPECT_TRUE(server.sequences().empty());
}

}  // namespace
}  // namespace warpscope::exporters
