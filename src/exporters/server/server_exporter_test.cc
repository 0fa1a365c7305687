// SPDX-License-Identifier: Apache-2.0
// The server exporter against an in-process fake ingest server on 127.0.0.1:0. The fake decodes
// batches with the generated classes and stores each (agent_id, sequence) once, like the real
// server. Waits are on conditions (WaitForStatsForTesting, the fake's condition variable) with
// bounded timeouts; backoffs are a few milliseconds.
#include "exporters/server/server_exporter.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "base/file_util.h"
#include "base/testing/temp_dir.h"
#include "exporters/testing/sample_frame.h"

namespace warpscope::exporters {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using base::TempDir;
using Stats = ServerExporter::Stats;

constexpr auto kWait = seconds(10);  // upper bound for any condition; normally milliseconds
constexpr int64_t kStartNs = 1000;   // first sequence without a spool

// What the fake server saw. Shared by server instances so an outage test can restart it.
struct IngestRecord {
  struct Request {
    std::string path;
    std::string content_type;
    std::string authorization;
    std::string user_agent;
    std::string agent_id;
    uint64_t sequence = 0;
    int status = 0;
  };

  std::mutex mu;
  std::condition_variable cv;
  std::vector<Request> requests;  // every request, in arrival order
  std::vector<uint64_t> stored;   // sequences stored, each (agent, sequence) once
  std::set<std::pair<std::string, uint64_t>> seen;
  std::vector<int> statuses;  // answer to the n-th request; the last repeats; empty: 200
  bool blocked = false;       // hold requests (recorded) until Release()

  void Block() {
    std::lock_guard<std::mutex> lock(mu);
    blocked = true;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu);
      blocked = false;
    }
    cv.notify_all();
  }
  bool WaitForRequests(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, kWait, [&] { return requests.size() >= n; });
  }
  std::vector<uint64_t> Stored() {
    std::lock_guard<std::mutex> lock(mu);
    return stored;
  }
  std::vector<Request> Requests() {
    std::lock_guard<std::mutex> lock(mu);
    return requests;
  }
};

class FakeIngestServer {
 public:
  // Listens on 127.0.0.1:`port` (0: any free port).
  explicit FakeIngestServer(std::shared_ptr<IngestRecord> record, int port = 0)
      : record_(std::move(record)) {
    server_.set_socket_options([](int sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    server_.Post(".*",
                 [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); });
    if (port == 0) {
      port_ = server_.bind_to_any_port("127.0.0.1");
    } else if (server_.bind_to_port("127.0.0.1", port)) {
      port_ = port;
    }
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (port_ > 0 && !server_.is_running()) {
      std::this_thread::yield();
    }
  }
  ~FakeIngestServer() {
    record_->Release();
    server_.stop();
    thread_.join();
  }

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  void Handle(const httplib::Request& req, httplib::Response& res) {
    std::unique_lock<std::mutex> lock(record_->mu);
    IngestRecord::Request r;
    r.path = req.path;
    r.content_type = req.get_header_value("Content-Type");
    r.authorization = req.get_header_value("Authorization");
    r.user_agent = req.get_header_value("User-Agent");
    v1::Batch batch;
    const bool parsed = batch.ParseFromString(req.body);
    r.agent_id = batch.agent_id();
    r.sequence = batch.sequence();
    const size_t n = record_->requests.size();
    const auto& statuses = record_->statuses;
    r.status = !parsed ? 400 : statuses.empty() ? 200 : statuses[std::min(n, statuses.size() - 1)];
    record_->requests.push_back(r);
    record_->cv.notify_all();
    record_->cv.wait(lock, [&] { return !record_->blocked; });
    res.status = r.status;
    if (r.status != 200) {
      res.set_content(R"({"error":"scripted"})", "application/json");
      return;
    }
    v1::BatchResponse reply;
    reply.set_accepted_sequence(batch.sequence());
    if (record_->seen.insert({batch.agent_id(), batch.sequence()}).second) {
      record_->stored.push_back(batch.sequence());
    } else {
      reply.set_duplicate(true);
    }
    record_->cv.notify_all();
    res.set_content(reply.SerializeAsString(), "application/x-protobuf");
  }

  std::shared_ptr<IngestRecord> record_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

// A loopback port nothing listens on: connections are refused at once.
int RefusingPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::string UrlForPort(int port) { return "http://127.0.0.1:" + std::to_string(port); }

model::Frame TestFrame() { return sample::MakeSampleFrame({.gpus = 1, .processes = 0}); }

// Encoded size of TestFrame(); equal for every sequence near kStartNs (same varint length).
uint64_t BatchSize() {
  return BatchEncoder({.agent_id = "test-agent"}).Encode(TestFrame(), kStartNs).size();
}

ServerExporter::Options FastOptions(const std::string& url) {
  ServerExporter::Options o;
  o.server_url = url;
  o.agent_id = "test-agent";
  o.agent_version = "9.9.9";
  o.initial_backoff = milliseconds(1);
  o.max_backoff = milliseconds(5);
  o.request_timeout = seconds(5);
  o.spool_flush_timeout = seconds(5);
  o.start_time = base::FromUnixNanos(kStartNs);
  o.jitter_seed = 1;
  return o;
}

std::unique_ptr<ServerExporter> MakeExporter(const ServerExporter::Options& o) {
  auto e = ServerExporter::Create(o);
  EXPECT_TRUE(e.has_value()) << e.error().ToString();
  return e ? std::move(*e) : nullptr;
}

std::vector<uint64_t> Range(uint64_t first, uint64_t count) {
  std::vector<uint64_t> out;
  for (uint64_t i = 0; i < count; ++i) {
    out.push_back(first + i);
  }
  return out;
}

TEST(ServerExporterTest, DeliversBatchesInOrderAsProtobufToTheIngestPath) {
  auto record = std::make_shared<IngestRecord>();
  FakeIngestServer server(record);
  auto exporter = MakeExporter(FastOptions(server.url()));
  ASSERT_NE(exporter, nullptr);
  EXPECT_EQ(exporter->name(), "server");

  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  }
  exporter->Shutdown(kWait);

  EXPECT_EQ(record->Stored(), Range(kStartNs, 5));
  auto requests = record->Requests();
  ASSERT_EQ(requests.size(), 5u);
  EXPECT_EQ(requests[0].path, "/api/v1/ingest/batch");
  EXPECT_EQ(requests[0].content_type, "application/x-protobuf");
  EXPECT_EQ(requests[0].user_agent, "warpscope-agent/9.9.9");
  EXPECT_EQ(requests[0].agent_id, "test-agent");
  EXPECT_EQ(requests[0].authorization, "");
  Stats s = exporter->stats();
  EXPECT_EQ(s.sent, 5u);
  EXPECT_EQ(s.retries, 0u);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.queued_bytes, 0u);
  EXPECT_EQ(s.next_sequence, static_cast<uint64_t>(kStartNs) + 5);
}

TEST(ServerExporterTest, KeepsAPathPrefixFromTheServerUrl) {
  auto record = std::make_shared<IngestRecord>();
  FakeIngestServer server(record);
  auto exporter = MakeExporter(FastOptions(server.url() + "/warpscope/"));
  ASSERT_NE(exporter, nullptr);
  ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  exporter->Shutdown(kWait);
  ASSERT_EQ(record->Requests().size(), 1u);
  EXPECT_EQ(record->Requests()[0].path, "/warpscope/api/v1/ingest/batch");
}

TEST(ServerExporterTest, SendsTheTrimmedTokenFromTheTokenFileAsBearer) {
  TempDir tmp;
  const std::string token_file = tmp.path() + "/token";
  ASSERT_TRUE(base::WriteFile(token_file, "  s3cret-token\n").ok());
  ASSERT_EQ(chmod(token_file.c_str(), 0600), 0);
  auto record = std::make_shared<IngestRecord>();
  FakeIngestServer server(record);
  auto o = FastOptions(server.url());
  o.auth_token_file = token_file;
  auto exporter = MakeExporter(o);
  ASSERT_NE(exporter, nullptr);

  ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  exporter->Shutdown(kWait);

  ASSERT_EQ(record->Requests().size(), 1u);
  EXPECT_EQ(record->Requests()[0].authorization, "Bearer s3cret-token");
}

TEST(ServerExporterTest, Retries503ThenSucceeds) {
  auto record = std::make_shared<IngestRecord>();
  record->statuses = {503, 503, 200};
  FakeIngestServer server(record);
  auto exporter = MakeExporter(FastOptions(server.url()));
  ASSERT_NE(exporter, nullptr);

  ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  exporter->Shutdown(kWait);

  EXPECT_EQ(record->Requests().size(), 3u);
  EXPECT_EQ(record->Stored(), Range(kStartNs, 1));
  Stats s = exporter->stats();
  EXPECT_EQ(s.sent, 1u);
  EXPECT_EQ(s.retries, 2u);
  EXPECT_EQ(s.dropped_rejected, 0u);
  EXPECT_NE(s.last_error.find("HTTP 503"), std::string::npos) << s.last_error;
}

TEST(ServerExporterTest, Retries429) {
  auto record = std::make_shared<IngestRecord>();
  record->statuses = {429, 200};
  FakeIngestServer server(record);
  auto exporter = MakeExporter(FastOptions(server.url()));
  ASSERT_NE(exporter, nullptr);
  ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  exporter->Shutdown(kWait);
  EXPECT_EQ(exporter->stats().sent, 1u);
  EXPECT_EQ(exporter->stats().retries, 1u);
}

TEST(ServerExporterTest, OutageQueuesBatchesThatArriveOnceAndInOrderAfterwards) {
  auto record = std::make_shared<IngestRecord>();
  auto server = std::make_unique<FakeIngestServer>(record);
  const int port = server->port();
  auto exporter = MakeExporter(FastOptions(server->url()));
  ASSERT_NE(exporter, nullptr);
  ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  ASSERT_TRUE(exporter->WaitForStatsForTesting([](const Stats& s) { return s.sent == 1; }, kWait));

  server.reset();  // outage
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  }
  ASSERT_TRUE(
      exporter->WaitForStatsForTesting([](const Stats& s) { return s.retries >= 3; }, kWait));
  EXPECT_EQ(exporter->stats().queued, 4u);

  server = std::make_unique<FakeIngestServer>(record, port);  // back, same port
  ASSERT_EQ(server->port(), port);
  ASSERT_TRUE(exporter->WaitForStatsForTesting([](const Stats& s) { return s.sent == 5; }, kWait));
  exporter->Shutdown(kWait);

  EXPECT_EQ(record->Stored(), Range(kStartNs, 5));
  std::vector<uint64_t> arrived;
  for (const auto& r : record->Requests()) {
    arrived.push_back(r.sequence);
  }
  EXPECT_EQ(arrived, Range(kStartNs, 5));  // none sent twice, none out of order
  Stats s = exporter->stats();
  EXPECT_EQ(s.duplicates, 0u);
  EXPECT_EQ(s.dropped_full, 0u);
  EXPECT_NE(s.last_error.find("127.0.0.1"), std::string::npos) << s.last_error;
}

TEST(ServerExporterTest, DuplicateAnswerCountsAsDelivered) {
  auto record = std::make_shared<IngestRecord>();
  record->seen.insert({"test-agent", kStartNs});  // stored by an earlier attempt
  FakeIngestServer server(record);
  auto exporter = MakeExporter(FastOptions(server.url()));
  ASSERT_NE(exporter, nullptr);
  ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  exporter->Shutdown(kWait);
  Stats s = exporter->stats();
  EXPECT_EQ(s.sent, 1u);
  EXPECT_EQ(s.duplicates, 1u);
  EXPECT_EQ(s.retries, 0u);
  EXPECT_EQ(s.queued, 0u);
}

TEST(ServerExporterTest, FullMemoryQueueDropsTheOldestAndCounts) {
  auto record = std::make_shared<IngestRecord>();
  record->Block();
  FakeIngestServer server(record);
  auto o = FastOptions(server.url());
  o.max_queue_bytes = BatchSize() * 3 + BatchSize() / 2;  // the one in flight + 2 waiting
  auto exporter = MakeExporter(o);
  ASSERT_NE(exporter, nullptr);

  ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  ASSERT_TRUE(record->WaitForRequests(1));  // the sender is stuck in its POST
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);  // never blocks
  }
  Stats held = exporter->stats();
  EXPECT_EQ(held.dropped_full, 3u);
  EXPECT_EQ(held.queued, 3u);
  EXPECT_LE(held.queued_bytes, o.max_queue_bytes);

  record->Release();
  exporter->Shutdown(kWait);
  EXPECT_EQ(record->Stored(), (std::vector<uint64_t>{kStartNs, kStartNs + 4, kStartNs + 5}));
  EXPECT_EQ(exporter->stats().sent, 3u);
}

TEST(ServerExporterTest, RejectedBatchesAreDroppedAndCountedWithoutRetrying) {
  auto record = std::make_shared<IngestRecord>();
  record->statuses = {400, 401, 413, 200};
  FakeIngestServer server(record);
  auto exporter = MakeExporter(FastOptions(server.url()));
  ASSERT_NE(exporter, nullptr);

  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  }
  exporter->Shutdown(kWait);

  EXPECT_EQ(record->Requests().size(), 4u);  // one attempt each
  EXPECT_EQ(record->Stored(), Range(kStartNs + 3, 1));
  Stats s = exporter->stats();
  EXPECT_EQ(s.dropped_rejected, 3u);
  EXPECT_EQ(s.retries, 0u);
  EXPECT_EQ(s.sent, 1u);
  EXPECT_NE(s.last_error.find("HTTP 413"), std::string::npos) << s.last_error;
}

TEST(ServerExporterTest, SpoolSurvivesARestartAndIsSentFirst) {
  TempDir tmp;
  const std::string down_url = UrlForPort(RefusingPort());
  std::vector<uint64_t> first_run;
  {
    auto o = FastOptions(down_url);
    o.buffer_dir = tmp.path();
    auto exporter = MakeExporter(o);
    ASSERT_NE(exporter, nullptr);
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
    }
    const uint64_t three = 3 * BatchSize();
    ASSERT_TRUE(exporter->WaitForStatsForTesting(
        [&](const Stats& s) { return s.spooled_bytes == three && s.retries >= 1; }, kWait));
    exporter->Shutdown(milliseconds(20));
    EXPECT_EQ(exporter->stats().dropped_shutdown, 0u);
    first_run = Range(kStartNs, 3);
  }
  ASSERT_EQ(tmp.Files(".batch").size(), 3u);

  auto record = std::make_shared<IngestRecord>();
  FakeIngestServer server(record);
  auto o = FastOptions(server.url());
  o.buffer_dir = tmp.path();  // same start time: the persisted mark must still move us on
  auto exporter = MakeExporter(o);
  ASSERT_NE(exporter, nullptr);
  const uint64_t next = exporter->stats().next_sequence;
  EXPECT_GT(next, first_run.back());
  ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  exporter->Shutdown(kWait);

  std::vector<uint64_t> want = first_run;
  want.push_back(next);
  EXPECT_EQ(record->Stored(), want);
  EXPECT_EQ(exporter->stats().sent, 4u);
  EXPECT_EQ(exporter->stats().spooled_bytes, 0u);
  EXPECT_TRUE(tmp.Files(".batch").empty());  // deleted after the 2xx
}

TEST(ServerExporterTest, ShutdownRightAfterExportStillPutsTheBatchesOnDisk) {
  TempDir tmp;
  auto o = FastOptions(UrlForPort(RefusingPort()));
  o.buffer_dir = tmp.path();
  auto exporter = MakeExporter(o);
  ASSERT_NE(exporter, nullptr);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  }
  exporter->Shutdown(base::Duration::zero());

  EXPECT_EQ(exporter->stats().dropped_shutdown, 0u);
  EXPECT_EQ(tmp.Files(".batch").size(), 3u);
}

TEST(ServerExporterTest, SpoolByteBoundDeletesTheOldestFilesAndCounts) {
  TempDir tmp;
  auto o = FastOptions(UrlForPort(RefusingPort()));
  o.buffer_dir = tmp.path();
  o.buffer_max_bytes = BatchSize() * 3 + BatchSize() / 2;
  auto exporter = MakeExporter(o);
  ASSERT_NE(exporter, nullptr);

  // The first batch is in flight (retrying) before the others arrive: it is never dropped.
  ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  ASSERT_TRUE(
      exporter->WaitForStatsForTesting([](const Stats& s) { return s.retries >= 1; }, kWait));
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  }
  ASSERT_TRUE(exporter->WaitForStatsForTesting(
      [](const Stats& s) { return s.dropped_full == 3 && s.queued == 3; }, kWait));
  EXPECT_LE(exporter->stats().spooled_bytes, o.buffer_max_bytes);
  exporter->Shutdown(milliseconds(20));

  auto name = [](uint64_t seq) { return fmt::format("{:020d}.batch", seq); };
  EXPECT_EQ(tmp.Files(".batch"),
            (std::vector<std::string>{name(kStartNs), name(kStartNs + 4), name(kStartNs + 5)}));
}

TEST(ServerExporterTest, WithASpoolTheMemoryBoundMovesBatchesToDiskInsteadOfDropping) {
  TempDir tmp;
  auto record = std::make_shared<IngestRecord>();
  record->Block();
  FakeIngestServer server(record);
  auto o = FastOptions(server.url());
  o.buffer_dir = tmp.path();
  o.max_queue_bytes = BatchSize() * 2 + BatchSize() / 2;
  auto exporter = MakeExporter(o);
  ASSERT_NE(exporter, nullptr);

  ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  ASSERT_TRUE(record->WaitForRequests(1));
  // Windows arrive far apart compared with a file write: each is on disk before the next.
  for (uint64_t n = 2; n <= 6; ++n) {
    ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
    const uint64_t on_disk = n * BatchSize();
    ASSERT_TRUE(exporter->WaitForStatsForTesting(
        [&](const Stats& s) { return s.spooled_bytes == on_disk; }, kWait));
  }
  Stats held = exporter->stats();
  EXPECT_EQ(held.dropped_full, 0u);
  EXPECT_EQ(held.queued, 6u);
  EXPECT_LE(held.queued_bytes, o.max_queue_bytes);

  record->Release();
  exporter->Shutdown(kWait);
  EXPECT_EQ(record->Stored(), Range(kStartNs, 6));
  EXPECT_TRUE(tmp.Files(".batch").empty());
}

TEST(ServerExporterTest, ShutdownIsBoundedByItsTimeoutWhileTheServerIsDown) {
  auto exporter = MakeExporter(FastOptions(UrlForPort(RefusingPort())));
  ASSERT_NE(exporter, nullptr);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  }
  const auto begin = std::chrono::steady_clock::now();
  exporter->Shutdown(milliseconds(100));
  EXPECT_LT(std::chrono::steady_clock::now() - begin, seconds(5));

  Stats s = exporter->stats();
  EXPECT_EQ(s.dropped_shutdown, 3u);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(exporter->Export(TestFrame()), ExportResult::kDropped);
  exporter->Shutdown(milliseconds(100));  // twice is harmless
}

TEST(ServerExporterTest, ShutdownAbortsARequestTheServerNeverAnswers) {
  auto record = std::make_shared<IngestRecord>();
  record->Block();
  FakeIngestServer server(record);
  auto exporter = MakeExporter(FastOptions(server.url()));
  ASSERT_NE(exporter, nullptr);
  ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  ASSERT_TRUE(record->WaitForRequests(1));

  const auto begin = std::chrono::steady_clock::now();
  exporter->Shutdown(milliseconds(50));
  EXPECT_LT(std::chrono::steady_clock::now() - begin, seconds(4));  // request_timeout is 5 s
  EXPECT_EQ(exporter->stats().dropped_shutdown, 1u);
}

TEST(ServerExporterTest, SequencesStartAtTheStartTimeWithoutASpool) {
  auto record = std::make_shared<IngestRecord>();
  FakeIngestServer server(record);
  auto o = FastOptions(server.url());
  o.start_time = base::FromUnixNanos(1'700'000'000'123'456'789);
  auto exporter = MakeExporter(o);
  ASSERT_NE(exporter, nullptr);
  ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  ASSERT_EQ(exporter->Export(TestFrame()), ExportResult::kSuccess);
  exporter->Shutdown(kWait);
  EXPECT_EQ(record->Stored(), Range(1'700'000'000'123'456'789, 2));
}

TEST(ServerExporterCreateTest, RejectsOptionsThatCannotWork) {
  TempDir tmp;
  const std::string empty_token = tmp.path() + "/empty";
  ASSERT_TRUE(base::WriteFile(empty_token, " \n").ok());
  const std::string two_lines = tmp.path() + "/two";
  ASSERT_TRUE(base::WriteFile(two_lines, "abc\ndef\n").ok());
  const std::string shared_token = tmp.path() + "/shared";
  ASSERT_TRUE(base::WriteFile(shared_token, "s3cret\n").ok());
  ASSERT_EQ(chmod(shared_token.c_str(), 0644), 0);

  struct Case {
    const char* what;
    std::function<void(ServerExporter::Options&)> edit;
    const char* names;  // expected in the message
  };
  const Case cases[] = {
      {"no url", [](auto& o) { o.server_url = ""; }, "--server"},
      {"bad scheme", [](auto& o) { o.server_url = "ftp://h:1"; }, "--server"},
      {"query", [](auto& o) { o.server_url = "http://h:1/?x=1"; }, "--server"},
      {"no agent id", [](auto& o) { o.agent_id = ""; }, "agent id"},
      {"missing token file", [&](auto& o) { o.auth_token_file = tmp.path() + "/nope"; },
       "--auth-token-file"},
      {"empty token", [&](auto& o) { o.auth_token_file = empty_token; }, "empty"},
      {"two-line token", [&](auto& o) { o.auth_token_file = two_lines; }, "--auth-token-file"},
      {"token readable by others", [&](auto& o) { o.auth_token_file = shared_token; },
       "chmod 600"},
      {"ca file over http", [&](auto& o) { o.tls_ca_file = empty_token; }, "https"},
      {"missing ca file",
       [&](auto& o) {
         o.server_url = "https://h:1";
         o.tls_ca_file = tmp.path() + "/nope.pem";
       },
       "--tls-ca-file"},
      {"zero buffer bound",
       [&](auto& o) {
         o.buffer_dir = tmp.path() + "/spool";
         o.buffer_max_bytes = 0;
       },
       "--buffer-max-bytes"},
      {"unwritable buffer dir", [&](auto& o) { o.buffer_dir = empty_token + "/spool"; },
       "--buffer-dir"},
  };
  for (const Case& c : cases) {
    auto o = FastOptions("http://127.0.0.1:1");
    c.edit(o);
    auto e = ServerExporter::Create(o);
    ASSERT_FALSE(e.has_value()) << c.what;
    EXPECT_NE(e.error().message().find(c.names), std::string::npos)
        << c.what << ": " << e.error().message();
  }
}

TEST(ServerExporterCreateTest, TwoExportersCannotShareABufferDir) {
  TempDir tmp;
  auto o = FastOptions(UrlForPort(RefusingPort()));
  o.buffer_dir = tmp.path();
  auto first = MakeExporter(o);
  ASSERT_NE(first, nullptr);
  auto second = ServerExporter::Create(o);
  ASSERT_FALSE(second.has_value());
  EXPECT_NE(second.error().message().find("in use"), std::string::npos);
  first->Shutdown(milliseconds(10));
  EXPECT_TRUE(ServerExporter::Create(o).has_value());  // released by Shutdown
}

}  // namespace
}  // namespace warpscope::exporters
