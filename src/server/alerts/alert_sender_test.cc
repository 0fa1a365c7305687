// SPDX-License-Identifier: Apache-2.0
#include "server/alerts/alert_sender.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace warpscope::server::alerts {
namespace {

using std::chrono::seconds;

Alert MakeAlert(std::string gpu, std::string summary) {
  Alert a;
  a.labels = {{"alertname", "CoolingFailure"}, {"gpu", std::move(gpu)}};
  a.annotations = {{"summary", std::move(summary)}};
  return a;
}

// Answers each Post with the next scripted result (delivered once the script is used up) and
// records the bodies. Post blocks while the test holds it (Hold/Release), so a test can queue
// newer alerts while a POST is in flight.
class ScriptedTransport final : public AlertTransport {
 public:
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<PostResult> script;
    std::vector<nlohmann::json> bodies;
    bool hold = false;
    bool aborted = false;
  };
  explicit ScriptedTransport(std::shared_ptr<Shared> s) : s_(std::move(s)) {}
  PostResult Post(const std::string& body) override {
    std::unique_lock<std::mutex> lock(s_->mu);
    s_->bodies.push_back(nlohmann::json::parse(body));
    s_->cv.notify_all();
    s_->cv.wait(lock, [&] { return !s_->hold || s_->aborted; });
    if (s_->aborted) return {.retryable = true, .error = "aborted"};
    if (s_->script.empty()) return {.delivered = true};
    PostResult r = s_->script.front();
    s_->script.pop_front();
    return r;
  }
  void Abort() override {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->aborted = true;
    s_->cv.notify_all();
  }

 private:
  std::shared_ptr<Shared> s_;
};

struct Fixture {
  std::shared_ptr<ScriptedTransport::Shared> shared = std::make_shared<ScriptedTransport::Shared>();
  std::unique_ptr<AlertSender> sender;

  explicit Fixture(size_t max_pending = 100) {
    auto created = AlertSender::Create(
        {.urls = {"http://127.0.0.1:9093"},
         .max_pending = max_pending,
         .initial_backoff = std::chrono::milliseconds(1),
         .max_backoff = std::chrono::milliseconds(5)},
        [s = shared](std::string_view) -> base::Result<std::unique_ptr<AlertTransport>> {
          return std::unique_ptr<AlertTransport>(new ScriptedTransport(s));
        });
    EXPECT_TRUE(created) << created.error().message();
    sender = std::move(*created);
  }
  // Waits (bounded) until `n` bodies were posted.
  std::vector<nlohmann::json> WaitForBodies(size_t n) {
    std::unique_lock<std::mutex> lock(shared->mu);
    shared->cv.wait_for(lock, seconds(10), [&] { return shared->bodies.size() >= n; });
    return shared->bodies;
  }
  AlertSender::TargetStats WaitForStats(
      const std::function<bool(const AlertSender::TargetStats&)>& done) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(10);
    AlertSender::TargetStats s = sender->stats()[0];
    while (!done(s) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
      s = sender->stats()[0];
    }
    return s;
  }
};

TEST(AlertSenderTest, OfferedAlertsArePostedAsOneBatch) {
  Fixture fx;
  fx.sender->Offer({MakeAlert("1", "a"), MakeAlert("2", "b")});
  std::vector<nlohmann::json> bodies = fx.WaitForBodies(1);
  ASSERT_EQ(bodies.size(), 1u);
  ASSERT_EQ(bodies[0].size(), 2u);
  EXPECT_EQ(bodies[0][0]["labels"]["gpu"], "1");
  AlertSender::TargetStats s = fx.WaitForStats([](const auto& s) { return s.sent == 2; });
  EXPECT_EQ(s.sent, 2u);
  EXPECT_EQ(s.url, "http://127.0.0.1:9093");
}

TEST(AlertSenderTest, AFailedPostIsRetriedWithTheNewestCopyOfEachAlert) {
  Fixture fx;
  {
    std::lock_guard<std::mutex> lock(fx.shared->mu);
    fx.shared->script.push_back({.retryable = true, .error = "connection refused"});
    fx.shared->hold = true;
  }
  fx.sender->Offer({MakeAlert("1", "old"), MakeAlert("2", "only")});
  fx.WaitForBodies(1);
  // While the first POST is in flight (and then fails), a newer copy of GPU 1's alert comes.
  fx.sender->Offer({MakeAlert("1", "new")});
  {
    std::lock_guard<std::mutex> lock(fx.shared->mu);
    fx.shared->hold = false;
    fx.shared->cv.notify_all();
  }
  std::vector<nlohmann::json> bodies = fx.WaitForBodies(2);
  ASSERT_EQ(bodies.size(), 2u);
  ASSERT_EQ(bodies[1].size(), 2u);
  EXPECT_EQ(bodies[1][0]["annotations"]["summary"], "new");
  EXPECT_EQ(bodies[1][1]["annotations"]["summary"], "only");
  AlertSender::TargetStats s = fx.WaitForStats([](const auto& s) { return s.sent == 2; });
  EXPECT_EQ(s.failed_posts, 1u);
  EXPECT_EQ(s.sent, 2u);
  EXPECT_EQ(s.pending, 0u);
}

TEST(AlertSenderTest, ARefusedBatchIsCountedAndNotRetried) {
  Fixture fx;
  {
    std::lock_guard<std::mutex> lock(fx.shared->mu);
    fx.shared->script.push_back({.retryable = false, .error = "HTTP 400 bad alert"});
  }
  fx.sender->Offer({MakeAlert("1", "a")});
  AlertSender::TargetStats s = fx.WaitForStats([](const auto& s) { return s.rejected == 1; });
  EXPECT_EQ(s.rejected, 1u);
  EXPECT_EQ(s.sent, 0u);
  fx.sender->Offer({MakeAlert("2", "b")});
  s = fx.WaitForStats([](const auto& s) { return s.sent == 1; });
  EXPECT_EQ(s.sent, 1u);
  EXPECT_EQ(fx.WaitForBodies(2).size(), 2u);
}

TEST(AlertSenderTest, PendingAlertsAreBoundedWhileAlertmanagerIsDown) {
  Fixture fx(/*max_pending=*/3);
  {
    std::lock_guard<std::mutex> lock(fx.shared->mu);
    fx.shared->hold = true;
  }
  fx.sender->Offer({MakeAlert("0", "first")});
  fx.WaitForBodies(1);  // in flight: no longer pending
  fx.sender->Offer({MakeAlert("1", "a"), MakeAlert("2", "b"), MakeAlert("3", "c"),
                    MakeAlert("4", "d"), MakeAlert("5", "e")});
  AlertSender::TargetStats s = fx.sender->stats()[0];
  EXPECT_EQ(s.pending, 3u);
  EXPECT_EQ(s.dropped, 2u);
  // A copy of a pending alert replaces it, even when full.
  fx.sender->Offer({MakeAlert("1", "a2")});
  EXPECT_EQ(fx.sender->stats()[0].dropped, 2u);
  // Shutdown aborts the POST in flight and drops what still waits.
  fx.sender->Shutdown(std::chrono::milliseconds(50));
  s = fx.sender->stats()[0];
  EXPECT_EQ(s.pending, 0u);
  EXPECT_GE(s.dropped, 5u);
}

TEST(AlertSenderTest, BadUrlsAreRefusedNamingTheFlag) {
  auto created = AlertSender::Create({.urls = {"ftp://x"}});
  ASSERT_FALSE(created);
  EXPECT_NE(created.error().message().find("--alertmanager-url"), std::string::npos)
      << created.error().message();
  EXPECT_FALSE(ValidateAlertmanagerUrl("not a url").ok());
  EXPECT_TRUE(ValidateAlertmanagerUrl("http://127.0.0.1:9093/am").ok());
}

TEST(AlertSenderTest, TheHttpTransportPostsToTheV2ApiUnderTheUrlsPrefix) {
  httplib::Server server;
  std::mutex mu;
  std::string path, type, body;
  server.Post(R"(/.*)", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu);
    path = req.path;
    type = req.get_header_value("Content-Type");
    body = req.body;
    // /bad/...: alerts it will never take; /busy/...: try later.
    res.status = req.path.starts_with("/bad/") ? 400 : req.path.starts_with("/busy/") ? 503 : 200;
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  auto transport = MakeHttpAlertTransport(base + "/am/");
  ASSERT_TRUE(transport);
  PostResult r = (*transport)->Post(R"([{"labels":{"alertname":"X"}}])");
  EXPECT_TRUE(r.delivered) << r.error;
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(path, "/am/api/v2/alerts");
    EXPECT_EQ(type, "application/json");
    EXPECT_EQ(body, R"([{"labels":{"alertname":"X"}}])");
  }
  PostResult bad = (*MakeHttpAlertTransport(base + "/bad"))->Post("[]");
  EXPECT_FALSE(bad.delivered);
  EXPECT_FALSE(bad.retryable);
  EXPECT_NE(bad.error.find("400"), std::string::npos) << bad.error;
  PostResult busy = (*MakeHttpAlertTransport(base + "/busy"))->Post("[]");
  EXPECT_FALSE(busy.delivered);
  EXPECT_TRUE(busy.retryable);
  server.stop();
  t.join();
  // Nobody listens any more: retryable.
  PostResult down = (*transport)->Post("[]");
  EXPECT_FALSE(down.delivered);
  EXPECT_TRUE(down.retryable);
}

}  // namespace
}  // namespace warpscope::server::alerts
