// SPDX-License-Identifier: Apache-2.0
// The pod directory against a fake Kubernetes API server on loopback: a LIST, chunked WATCH
// streams, a bearer token check, 410 Gone, a malformed and an oversized event line.
#include "agent/kubernetes/pod_directory.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/file_util.h"
#include "base/testing/temp_dir.h"

namespace warpscope::agent::kubernetes {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

json PodJson(const std::string& uid, const std::string& name,
             std::vector<std::pair<std::string, std::string>> containers = {}) {
  json statuses = json::array();
  for (const auto& [id, cname] : containers) {
    statuses.push_back({{"name", cname}, {"containerID", "containerd://" + id}});
  }
  return {{"metadata", {{"uid", uid}, {"namespace", "ml"}, {"name", name}}},
          {"status", {{"containerStatuses", statuses}}}};
}

std::string Event(const std::string& type, json object) {
  return json{{"type", type}, {"object", std::move(object)}}.dump() + "\n";
}

// What one watch request gets: an HTTP status, chunks of the stream, then the end of the stream
// or (hold) an open stream until the client goes or the server stops.
struct WatchPlan {
  int status = 200;
  std::vector<std::string> chunks;
  bool hold = false;
};

class FakeApiServer {
 public:
  FakeApiServer() {
    server_.Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) {
      Handle(req, res);
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeApiServer() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    server_.stop();
    thread_.join();
  }

  int port() const { return port_; }
  // The body of the n-th LIST (1-based); the last one repeats.
  void AddList(json items, std::string resource_version) {
    std::lock_guard lock(mu_);
    lists_.push_back({{"kind", "PodList"},
                      {"metadata", {{"resourceVersion", std::move(resource_version)}}},
                      {"items", std::move(items)}});
  }
  void AddWatch(WatchPlan plan) {
    std::lock_guard lock(mu_);
    watches_.push_back(std::move(plan));
  }
  void set_token(std::string token) {
    std::lock_guard lock(mu_);
    token_ = std::move(token);
  }
  int lists_served() const {
    std::lock_guard lock(mu_);
    return lists_served_;
  }
  int unauthorized() const {
    std::lock_guard lock(mu_);
    return unauthorized_;
  }
  std::vector<std::string> watch_versions() const {
    std::lock_guard lock(mu_);
    return watch_versions_;
  }
  std::vector<std::string> bad_selectors() const {
    std::lock_guard lock(mu_);
    return bad_selectors_;
  }

 private:
  void Handle(const httplib::Request& req, httplib::Response& res) {
    std::unique_lock lock(mu_);
    if (req.get_header_value("Authorization") != "Bearer " + token_) {
      ++unauthorized_;
      res.status = 401;
      return;
    }
    if (req.get_param_value("fieldSelector") != "spec.nodeName=node-a") {
      bad_selectors_.push_back(req.get_param_value("fieldSelector"));
    }
    if (req.get_param_value("watch") != "1") {
      const json& body = lists_[std::min<size_t>(lists_served_, lists_.size() - 1)];
      ++lists_served_;
      res.set_content(body.dump(), "application/json");
      return;
    }
    watch_versions_.push_back(req.get_param_value("resourceVersion"));
    if (watches_.empty()) {
      res.status = 500;
      return;
    }
    auto plan = std::make_shared<WatchPlan>(std::move(watches_.front()));
    watches_.pop_front();
    if (plan->status != 200) {
      res.status = plan->status;
      res.set_content(R"({"kind":"Status","code":410})", "application/json");
      return;
    }
    auto next = std::make_shared<size_t>(0);
    res.set_chunked_content_provider(
        "application/json", [this, plan, next](size_t, httplib::DataSink& sink) {
          if (*next < plan->chunks.size()) {
            const std::string& c = plan->chunks[(*next)++];
            sink.write(c.data(), c.size());
            return true;
          }
          if (!plan->hold) {
            sink.done();
            return true;
          }
          std::unique_lock wait(mu_);
          cv_.wait_for(wait, 50ms, [this] { return stopping_; });
          return !stopping_ && sink.is_writable();
        });
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::string token_ = "test-token";
  std::vector<json> lists_;
  std::deque<WatchPlan> watches_;
  int lists_served_ = 0;
  int unauthorized_ = 0;
  std::vector<std::string> watch_versions_;
  std::vector<std::string> bad_selectors_;
};

// Polls `done` until it holds or 10 s pass.
bool PollUntil(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return done();
}

void Rewrite(const std::string& path, const std::string& text, time_t mtime) {
  ASSERT_TRUE(base::WriteFile(path, text).ok());
  struct timespec times[2] = {{0, UTIME_OMIT}, {mtime, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST(PodDirectoryTest, ListsWatchesAndRecoversFromEveryFailure) {
  FakeApiServer api;
  const json pod1 = PodJson("u1", "trainer-0", {{"c1", "trainer"}});
  const json pod1b = PodJson("u1", "trainer-0", {{"c1", "trainer"}, {"c2", "sidecar"}});
  const json pod2 = PodJson("u2", "loader-0", {{"d1", "loader"}});
  const json pod3 = PodJson("u3", "finished-0");
  const json pod4 = PodJson("u4", "eval-0", {{"e1", "eval"}});
  api.AddList(json::array({pod1, pod3}), "100");
  api.AddList(json::array({pod1, pod3}), "101");
  api.AddList(json::array({pod1, pod2, pod3}), "102");
  api.AddList(json::array({pod1b, pod2, pod3}), "103");
  // 1: the version is gone: re-list.
  api.AddWatch({.status = 410});
  // 2: an event, then a line that is not JSON: re-list.
  api.AddWatch({.chunks = {Event("ADDED", pod2), "{oops\n"}});
  // 3: an event, then a line over the bound: re-list.
  api.AddWatch({.chunks = {Event("MODIFIED", pod1b), std::string(4096, 'x') + "\n"}});
  // 4: a bookmark, a deletion and an addition split across chunks; then the stream stays open.
  const std::string added = Event("ADDED", pod4);
  api.AddWatch({.chunks = {Event("BOOKMARK", {{"metadata", {{"resourceVersion", "104"}}}}) +
                               Event("DELETED", pod3) + added.substr(0, 20),
                           added.substr(20)},
                .hold = true});

  base::TempDir tmp;
  const std::string token = tmp.path() + "/token";
  Rewrite(token, "stale-token", 1000);
  const std::string kubeconfig = tmp.path() + "/kubeconfig";
  ASSERT_TRUE(base::WriteFile(kubeconfig, fmt::format(R"(
current-context: test
contexts: [{{name: test, context: {{cluster: fake, user: agent}}}}]
clusters: [{{name: fake, cluster: {{server: "http://127.0.0.1:{}"}}}}]
users: [{{name: agent, user: {{tokenFile: token}}}}]
)",
                                                      api.port()))
                  .ok());
  auto config = LoadKubeconfig(kubeconfig);
  ASSERT_TRUE(config) << config.error().message();

  PodDirectory::Options options;
  options.node_name = "node-a";
  options.cache.deleted_grace = 0s;
  options.initial_backoff = 5ms;
  options.max_backoff = 50ms;
  options.max_event_bytes = 1024;
  std::mutex reasons_mu;
  std::map<std::string, int> reasons;
  auto directory = PodDirectory::Create(*config, options, base::RealClock::Get(),
                                        [&](std::string_view reason) {
                                          std::lock_guard lock(reasons_mu);
                                          ++reasons[std::string(reason)];
                                        });
  ASSERT_TRUE(directory) << directory.error().message();
  (*directory)->Start();

  // The stale token is refused; the rotated one is read again from its file.
  ASSERT_TRUE(PollUntil([&] { return api.unauthorized() >= 1; }));
  EXPECT_FALSE((*directory)->stats().synced);
  Rewrite(token, "test-token", 2000);

  std::shared_ptr<const PodCache> cache = (*directory)->cache();
  ASSERT_TRUE(PollUntil([&] { return cache->Lookup("u4", "e1").has_value(); }))
      << "lists " << api.lists_served();
  EXPECT_TRUE(PollUntil([&] { return !cache->Lookup("u3", "").has_value(); }));

  auto trainer = cache->Lookup("u1", "c2");
  ASSERT_TRUE(trainer);
  EXPECT_EQ(trainer->pod_namespace, "ml");
  EXPECT_EQ(trainer->pod_name, "trainer-0");
  EXPECT_EQ(trainer->container_name, "sidecar");
  EXPECT_EQ(cache->Lookup("u2", "d1")->container_name, "loader");
  EXPECT_EQ(cache->Lookup("u4", "e1")->pod_name, "eval-0");
  EXPECT_EQ(cache->live_pods(), 3u);

  PodDirectory::Stats stats = (*directory)->stats();
  EXPECT_EQ(stats.lists, 4u);
  EXPECT_EQ(stats.watch_restarts, 3u);
  EXPECT_TRUE(stats.synced);
  EXPECT_EQ(api.lists_served(), 4);
  // Each watch starts from its list's version.
  EXPECT_EQ(api.watch_versions(), (std::vector<std::string>{"100", "101", "102", "103"}));
  EXPECT_TRUE(api.bad_selectors().empty());
  {
    std::lock_guard lock(reasons_mu);
    EXPECT_GE(reasons["list_failed"], 1);
    EXPECT_EQ(reasons["watch_gone"], 1);
    EXPECT_EQ(reasons["bad_event"], 1);
    EXPECT_EQ(reasons["event_too_large"], 1);
  }

  // Stop() ends the open watch promptly.
  const auto before = std::chrono::steady_clock::now();
  (*directory)->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, 2s);
}

TEST(PodDirectoryTest, RefusedListIsRetriedWithBackoff) {
  FakeApiServer api;
  api.set_token("other");
  base::TempDir tmp;
  ApiServerConfig config;
  config.server = fmt::format("http://127.0.0.1:{}", api.port());
  config.token = "test-token";
  config.origin = "test";
  PodDirectory::Options options;
  options.node_name = "node-a";
  options.initial_backoff = 5ms;
  options.max_backoff = 20ms;
  std::atomic<int> failures{0};
  auto directory = PodDirectory::Create(config, options, base::RealClock::Get(),
                                        [&](std::string_view reason) {
                                          if (reason == "list_failed") ++failures;
                                        });
  ASSERT_TRUE(directory);
  (*directory)->Start();
  ASSERT_TRUE(PollUntil([&] { return failures >= 3; }));  // retried, with backoff
  EXPECT_FALSE((*directory)->stats().synced);
  EXPECT_GE((*directory)->stats().errors, 3u);
  (*directory)->Stop();
}

TEST(PodDirectoryTest, BadConfigurationFailsAtCreate) {
  ApiServerConfig config;
  config.server = "https://127.0.0.1:6443";
  config.origin = "test";
  PodDirectory::Options options;
  auto no_node = PodDirectory::Create(config, options, base::RealClock::Get());
  ASSERT_FALSE(no_node);
  EXPECT_NE(no_node.error().message().find("--kubernetes-node"), std::string::npos);
  options.node_name = "n";
  config.ca_pem = "not a certificate";
  auto bad_ca = PodDirectory::Create(config, options, base::RealClock::Get());
  ASSERT_FALSE(bad_ca);
  EXPECT_NE(bad_ca.error().message().find("no PEM certificate"), std::string::npos);
  config.ca_pem.clear();
  config.server = "https://host:notaport";
  auto bad_url = PodDirectory::Create(config, options, base::RealClock::Get());
  ASSERT_FALSE(bad_url);
  EXPECT_NE(bad_url.error().message().find("bad port"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::agent::kubernetes
