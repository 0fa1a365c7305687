// SPDX-License-Identifier: Apache-2.0
// The pod directory against a fake Kubernetes API server on loopback: a LIST, chunked WATCH
// streams, a bearer token check, 410 Gone, a malformed and an oversized event line.
#include "agent/kubernetes/pod_directory.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/kubernetes/testing/fake_api_server.h"
#include "base/file_util.h"
#include "base/testing/temp_dir.h"
#include "support/self_signed_cert.h"

namespace warpscope::agent::kubernetes {
namespace {

using nlohmann::json;
using testing::Event;
using testing::FakeApiServer;
using testing::PodJson;
using namespace std::chrono_literals;

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
  auto directory =
      PodDirectory::Create(*config, options, base::RealClock::Get(), [&](std::string_view reason) {
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
  auto directory =
      PodDirectory::Create(config, options, base::RealClock::Get(), [&](std::string_view reason) {
        if (reason == "list_failed") ++failures;
      });
  ASSERT_TRUE(directory);
  (*directory)->Start();
  ASSERT_TRUE(PollUntil([&] { return failures >= 3; }));  // retried, with backoff
  EXPECT_FALSE((*directory)->stats().synced);
  EXPECT_GE((*directory)->stats().errors, 3u);
  (*directory)->Stop();
}

std::string Base64(const std::string& data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(data.data()),
                                static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// A kubeconfig for an https server whose CA is given inline (certificate-authority-data), or not.
std::string HttpsKubeconfig(int port, const std::string& ca_pem) {
  return fmt::format(R"(
current-context: tls
contexts: [{{name: tls, context: {{cluster: fake, user: agent}}}}]
clusters: [{{name: fake, cluster: {{server: "https://127.0.0.1:{}"{}}}}}]
users: [{{name: agent, user: {{token: test-token}}}}]
)",
                     port, ca_pem.empty() ? "" : ", certificate-authority-data: " + Base64(ca_pem));
}

TEST(PodDirectoryTest, VerifiesTheServerWithTheKubeconfigsCertificateAuthority) {
  base::TempDir tmp;
  const std::string cert = tmp.path() + "/cert.pem";
  ASSERT_TRUE(test::MakeSelfSignedCert(cert, tmp.path() + "/key.pem"));
  FakeApiServer api(cert, tmp.path() + "/key.pem");
  api.AddList(json::array({PodJson("u1", "trainer-0", {{"c1", "trainer"}})}), "7");
  auto ca = base::ReadFile(cert);
  ASSERT_TRUE(ca);
  PodDirectory::Options options;
  options.node_name = "node-a";
  options.initial_backoff = 5ms;
  options.max_backoff = 20ms;

  // Trusted through certificate-authority-data: the pods are listed over TLS.
  ASSERT_TRUE(base::WriteFile(tmp.path() + "/trusted", HttpsKubeconfig(api.port(), *ca)).ok());
  auto trusted_config = LoadKubeconfig(tmp.path() + "/trusted");
  ASSERT_TRUE(trusted_config) << trusted_config.error().message();
  auto trusted = PodDirectory::Create(*trusted_config, options, base::RealClock::Get());
  ASSERT_TRUE(trusted) << trusted.error().message();
  (*trusted)->Start();
  ASSERT_TRUE(PollUntil([&] { return (*trusted)->cache()->Lookup("u1", "c1").has_value(); }));
  EXPECT_EQ((*trusted)->cache()->Lookup("u1", "c1")->container_name, "trainer");
  (*trusted)->Stop();

  // Without the CA the self-signed server is refused: errors, nothing listed.
  ASSERT_TRUE(base::WriteFile(tmp.path() + "/untrusted", HttpsKubeconfig(api.port(), "")).ok());
  auto untrusted_config = LoadKubeconfig(tmp.path() + "/untrusted");
  ASSERT_TRUE(untrusted_config);
  const int lists_before = api.lists_served();
  auto untrusted = PodDirectory::Create(*untrusted_config, options, base::RealClock::Get());
  ASSERT_TRUE(untrusted);
  (*untrusted)->Start();
  ASSERT_TRUE(PollUntil([&] { return (*untrusted)->stats().errors >= 2; }));
  EXPECT_FALSE((*untrusted)->stats().synced);
  EXPECT_FALSE((*untrusted)->cache()->Lookup("u1", "c1"));
  EXPECT_EQ(api.lists_served(), lists_before);
  (*untrusted)->Stop();
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
