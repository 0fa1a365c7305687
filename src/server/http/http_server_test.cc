// SPDX-License-Identifier: Apache-2.0
// The front end's protections, on loopback with port 0: the whole-request deadline cuts a
// client that drips its headers, the connection limits close what is over them at accept, and
// a slow query neither blocks ingest nor, once its queue is full, anything but itself (503).
// Raw sockets drive the abusive clients; httplib's client the well-behaved ones.
#include "server/http/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/testing/temp_dir.h"
#include "support/self_signed_cert.h"

namespace warpscope::server::http {
namespace {

using Clock = std::chrono::steady_clock;

// A socket closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

Fd Connect(int port) {
  Fd fd(socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Reads until the peer closes, `needle` has arrived, or `timeout`; what arrived, and whether
// the peer closed.
std::pair<std::string, bool> ReadUntil(int fd, std::string_view needle,
                                       std::chrono::milliseconds timeout) {
  std::string got;
  const auto end = Clock::now() + timeout;
  while (Clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
    if (poll(&p, 1, static_cast<int>(std::max<int64_t>(1, left.count()))) <= 0) continue;
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return {got, true};
    got.append(buf, static_cast<size_t>(n));
    if (!needle.empty() && got.find(needle) != std::string::npos) return {got, false};
  }
  return {got, false};
}

// Whether `done` holds within `timeout` (the server counts a close just after making it).
template <typename Pred>
bool Eventually(Pred done, std::chrono::seconds timeout = std::chrono::seconds(5)) {
  for (const auto end = Clock::now() + timeout; Clock::now() < end;) {
    if (done()) return true;
    std::this_thread::yield();
  }
  return done();
}

constexpr std::string_view kHealthRequest = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(HttpServerOptions options) {
    options.host = "127.0.0.1";
    options.port = 0;
    router_.Add("GET", "/healthz", kInline, [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"status":"ok"})", "application/json");
    });
    router_.Add("POST", "/ingest", 0, [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(std::to_string(req.body.size()), "text/plain");
    });
    router_.Add("GET", "/slow", 1, [this](const httplib::Request&, httplib::Response& res) {
      std::unique_lock<std::mutex> lock(mu_);
      ++slow_entered_;
      cv_.notify_all();
      cv_.wait(lock, [this] { return slow_released_; });
      res.set_content("done", "text/plain");
    });
    server_ = std::make_unique<HttpServer>(std::move(options), router_);
    base::Result<int> port = server_->Start();
    ASSERT_TRUE(port) << port.error().message();
    port_ = *port;
  }
  void TearDown() override {
    ReleaseSlow();
    if (server_) server_->Stop();
  }
  void ReleaseSlow() {
    std::lock_guard<std::mutex> lock(mu_);
    slow_released_ = true;
    cv_.notify_all();
  }

  Router router_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  int slow_entered_ = 0;
  bool slow_released_ = false;
};

TEST_F(HttpServerTest, ServesRequestsOnKeepAliveConnections) {
  StartServer(HttpServerOptions{.queues = {{.name = "ingest"}, {.name = "query"}}});
  httplib::Client client("127.0.0.1", port_);
  client.set_keep_alive(true);
  for (int i = 0; i < 3; ++i) {
    auto health = client.Get("/healthz");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    auto ingest = client.Post("/ingest", std::string(1000, 'x'), "application/octet-stream");
    ASSERT_TRUE(ingest);
    EXPECT_EQ(ingest->body, "1000");
  }
  auto missing = client.Get("/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find(R"("error")"), std::string::npos) << missing->body;
  EXPECT_EQ(server_->stats().accepted_connections, 1u);
  EXPECT_EQ(server_->stats().requests, 7u);
}

TEST_F(HttpServerTest, TheRequestDeadlineCutsAClientDrippingItsHeaders) {
  constexpr auto kDeadline = std::chrono::milliseconds(600);
  StartServer(HttpServerOptions{.request_deadline = kDeadline,
                                .keep_alive_timeout = std::chrono::seconds(30),
                                .queues = {{.name = "ingest"}, {.name = "query"}}});
  Fd fd = Connect(port_);
  ASSERT_TRUE(SendAll(fd.get(), "GET /healthz HTTP/1.1\r\n"));
  const auto start = Clock::now();
  // A header line every 50 ms: each read succeeds long before any per-read timeout would fire;
  // only a deadline over the whole request ends it.
  bool closed = false;
  while (!closed && Clock::now() - start < std::chrono::seconds(10)) {
    SendAll(fd.get(), "X-Drip: 1\r\n");
    closed = ReadUntil(fd.get(), "", std::chrono::milliseconds(50)).second;
  }
  const auto elapsed = Clock::now() - start;
  EXPECT_TRUE(closed) << "the server kept a dripping request open for 10 s";
  EXPECT_GE(elapsed, kDeadline - std::chrono::milliseconds(100));
  EXPECT_LT(elapsed, kDeadline + std::chrono::seconds(2));
  EXPECT_TRUE(Eventually([&] { return server_->stats().request_deadline_closed == 1; }));
  // Well-behaved clients are not affected.
  httplib::Client client("127.0.0.1", port_);
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST_F(HttpServerTest, ConnectionsOverThePerClientLimitAreClosedAtAccept) {
  StartServer(HttpServerOptions{.max_connections_per_client = 3,
                                .queues = {{.name = "ingest"}, {.name = "query"}}});
  std::vector<Fd> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(Connect(port_));
    ASSERT_TRUE(SendAll(held.back().get(), kHealthRequest));
    auto [got, closed] = ReadUntil(held.back().get(), "}", std::chrono::seconds(5));
    EXPECT_NE(got.find("200 OK"), std::string::npos) << got;
    EXPECT_FALSE(closed);
  }
  Fd over = Connect(port_);
  SendAll(over.get(), kHealthRequest);
  auto [got, closed] = ReadUntil(over.get(), "}", std::chrono::seconds(5));
  EXPECT_TRUE(closed) << got;
  EXPECT_EQ(got, "");
  EXPECT_TRUE(Eventually([&] { return server_->stats().refused_per_client == 1; }));
  EXPECT_EQ(server_->stats().open_connections, 3u);
  // Once one closes, a new connection is served (after the server has seen the close).
  held.pop_back();
  bool served = false;
  for (const auto end = Clock::now() + std::chrono::seconds(5); !served && Clock::now() < end;) {
    Fd again = Connect(port_);
    SendAll(again.get(), kHealthRequest);
    served = ReadUntil(again.get(), "}", std::chrono::seconds(5)).first.find("200 OK") !=
             std::string::npos;
  }
  EXPECT_TRUE(served);
}

TEST_F(HttpServerTest, ConnectionsOverTheTotalLimitAreClosedAtAccept) {
  StartServer(
      HttpServerOptions{.max_connections = 2, .queues = {{.name = "ingest"}, {.name = "query"}}});
  std::vector<Fd> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(Connect(port_));
    ASSERT_TRUE(SendAll(held.back().get(), kHealthRequest));
    EXPECT_FALSE(ReadUntil(held.back().get(), "}", std::chrono::seconds(5)).second);
  }
  Fd over = Connect(port_);
  SendAll(over.get(), kHealthRequest);
  EXPECT_TRUE(ReadUntil(over.get(), "}", std::chrono::seconds(5)).second);
  EXPECT_TRUE(Eventually([&] { return server_->stats().refused_max_connections == 1; }));
}

TEST_F(HttpServerTest, ASlowQueryDoesNotBlockIngestAndAFullQueueAnswers503) {
  StartServer(HttpServerOptions{.queues = {{.name = "ingest", .threads = 1, .capacity = 4},
                                           {.name = "query", .threads = 1, .capacity = 1}}});
  // One slow query runs, a second waits in the query queue (its capacity).
  auto slow = [this] {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(30, 0);
    auto res = client.Get("/slow");
    return res ? res->status : -1;
  };
  std::future<int> first = std::async(std::launch::async, slow);
  {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(10), [this] { return slow_entered_; }));
  }
  std::future<int> second = std::async(std::launch::async, slow);
  for (const auto end = Clock::now() + std::chrono::seconds(10);
       server_->stats().queued_requests == 0 && Clock::now() < end;) {
    std::this_thread::yield();
  }
  ASSERT_EQ(server_->stats().queued_requests, 1u);

  // Ingest and /healthz answer at once, while the query worker is stuck.
  httplib::Client client("127.0.0.1", port_);
  for (int i = 0; i < 5; ++i) {
    const auto start = Clock::now();
    auto ingest = client.Post("/ingest", "abc", "application/octet-stream");
    ASSERT_TRUE(ingest);
    EXPECT_EQ(ingest->status, 200);
    auto health = client.Get("/healthz");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(1));
  }
  // A third query finds the queue full: 503 at once, JSON, with Retry-After.
  auto busy = client.Get("/slow");
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->status, 503);
  EXPECT_EQ(busy->get_header_value("Retry-After"), "1");
  EXPECT_NE(busy->body.find(R"("error")"), std::string::npos) << busy->body;
  EXPECT_NE(busy->body.find("query"), std::string::npos) << busy->body;
  EXPECT_EQ(server_->stats().queue_full, 1u);

  ReleaseSlow();
  EXPECT_EQ(first.get(), 200);
  EXPECT_EQ(second.get(), 200);
}

TEST_F(HttpServerTest, ABodyOverTheLimitIsRefusedWith413) {
  StartServer(
      HttpServerOptions{.max_body_bytes = 1024, .queues = {{.name = "ingest"}, {.name = "query"}}});
  httplib::Client client("127.0.0.1", port_);
  auto res = client.Post("/ingest", std::string(4096, 'x'), "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  EXPECT_NE(res->body.find("--max-body-bytes"), std::string::npos) << res->body;
  EXPECT_EQ(server_->stats().body_too_large, 1u);
}

TEST_F(HttpServerTest, TlsServesAndItsHandshakeIsUnderTheRequestDeadline) {
  base::TempDir tmp;
  const std::string dir = tmp.path();
  ASSERT_TRUE(test::MakeSelfSignedCert(dir + "/cert.pem", dir + "/key.pem"));
  constexpr auto kDeadline = std::chrono::milliseconds(500);
  StartServer(HttpServerOptions{.tls_cert_file = dir + "/cert.pem",
                                .tls_key_file = dir + "/key.pem",
                                .request_deadline = kDeadline,
                                .keep_alive_timeout = std::chrono::seconds(30),
                                .queues = {{.name = "ingest"}, {.name = "query"}}});
  httplib::SSLClient client("127.0.0.1", port_);
  client.set_ca_cert_path((dir + "/cert.pem").c_str());
  client.enable_server_certificate_verification(true);
  client.set_keep_alive(true);
  for (int i = 0; i < 2; ++i) {
    auto health = client.Get("/healthz");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    auto ingest = client.Post("/ingest", "abcd", "application/octet-stream");
    ASSERT_TRUE(ingest);
    EXPECT_EQ(ingest->body, "4");
  }
  // A client that starts a TLS record and never finishes its ClientHello.
  Fd fd = Connect(port_);
  const auto start = Clock::now();
  ASSERT_TRUE(SendAll(fd.get(), std::string_view("\x16\x03\x01", 3)));
  const bool closed = ReadUntil(fd.get(), "", std::chrono::seconds(10)).second;
  const auto elapsed = Clock::now() - start;
  EXPECT_TRUE(closed);
  EXPECT_GE(elapsed, kDeadline - std::chrono::milliseconds(100));
  EXPECT_LT(elapsed, kDeadline + std::chrono::seconds(2));
  EXPECT_TRUE(Eventually([&] { return server_->stats().request_deadline_closed == 1; }));
}

TEST_F(HttpServerTest, CompressedBodiesAreDecodedAndCorruptOnesGet400) {
  StartServer(
      HttpServerOptions{.max_body_bytes = 1024, .queues = {{.name = "ingest"}, {.name = "query"}}});
  httplib::Client client("127.0.0.1", port_);
  // "hello" as brotli: the handler sees the 5 decoded bytes.
  auto brotli = client.Post("/ingest", {{"Content-Encoding", "br"}},
                            std::string("\x0b\x02\x80\x68\x65\x6c\x6c\x6f\x03", 9),
                            "application/octet-stream");
  ASSERT_TRUE(brotli);
  EXPECT_EQ(brotli->status, 200);
  EXPECT_EQ(brotli->body, "5");
  auto corrupt = client.Post("/ingest", {{"Content-Encoding", "gzip"}}, "not gzip at all",
                             "application/octet-stream");
  ASSERT_TRUE(corrupt);
  EXPECT_EQ(corrupt->status, 400);
  EXPECT_NE(corrupt->body.find("could not be read: not valid gzip"), std::string::npos)
      << corrupt->body;
}

}  // namespace
}  // namespace warpscope::server::http
