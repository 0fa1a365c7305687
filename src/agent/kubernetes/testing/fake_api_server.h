// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_AGENT_KUBERNETES_TESTING_FAKE_API_SERVER_H_
#define WARPSCOPE_AGENT_KUBERNETES_TESTING_FAKE_API_SERVER_H_

#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace warpscope::agent::kubernetes::testing {

// Tests only: a Kubernetes API server that knows GET /api/v1/pods, on 127.0.0.1 (port 0). It
// checks the bearer token (401 otherwise), serves scripted PodLists and, for each watch request,
// the next scripted WatchPlan as a chunked stream. Thread-safe.

// A pod object with containerd container ids: {id, name} pairs.
nlohmann::json PodJson(const std::string& uid, const std::string& name,
                       std::vector<std::pair<std::string, std::string>> containers = {},
                       const std::string& pod_namespace = "ml");
// One watch line: {"type": type, "object": object} and a newline.
std::string Event(const std::string& type, nlohmann::json object);

// What one watch request gets: an HTTP status, chunks of the stream, then the end of the stream
// or (hold) an open stream until the client goes or the server stops. With no plan left, a
// watch is held open.
struct WatchPlan {
  int status = 200;
  std::vector<std::string> chunks;
  bool hold = false;
};

class FakeApiServer {
 public:
  // Plain HTTP; with `cert_pem_path` and `key_pem_path`, HTTPS with that certificate.
  FakeApiServer();
  FakeApiServer(const std::string& cert_pem_path, const std::string& key_pem_path);
  ~FakeApiServer();

  int port() const { return port_; }
  // The body of the next LIST; the last one repeats.
  void AddList(nlohmann::json items, std::string resource_version);
  void AddWatch(WatchPlan plan);
  void set_token(std::string token);
  int lists_served() const;
  int unauthorized() const;
  // The resourceVersion parameter of each watch request, in order.
  std::vector<std::string> watch_versions() const;
  // fieldSelector parameters other than spec.nodeName=<node> (set_node, default node-a).
  std::vector<std::string> bad_selectors() const;
  void set_node(std::string node);

 private:
  void Handle(const httplib::Request& req, httplib::Response& res);

  void Listen();

  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::string token_ = "test-token";
  std::string node_ = "node-a";
  std::vector<nlohmann::json> lists_;
  std::deque<WatchPlan> watches_;
  int lists_served_ = 0;
  int unauthorized_ = 0;
  std::vector<std::string> watch_versions_;
  std::vector<std::string> bad_selectors_;
};

}  // namespace warpscope::agent::kubernetes::testing

#endif  // WARPSCOPE_AGENT_KUBERNETES_TESTING_FAKE_API_SERVER_H_
