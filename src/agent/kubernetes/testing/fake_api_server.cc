// SPDX-License-Identifier: Apache-2.0
#include "agent/kubernetes/testing/fake_api_server.h"

#include <algorithm>
#include <chrono>
#include <memory>

namespace warpscope::agent::kubernetes::testing {

using nlohmann::json;

json PodJson(const std::string& uid, const std::string& name,
             std::vector<std::pair<std::string, std::string>> containers,
             const std::string& pod_namespace) {
  json statuses = json::array();
  for (const auto& [id, cname] : containers) {
    statuses.push_back({{"name", cname}, {"containerID", "containerd://" + id}});
  }
  return {{"metadata", {{"uid", uid}, {"namespace", pod_namespace}, {"name", name}}},
          {"status", {{"containerStatuses", statuses}}}};
}

std::string Event(const std::string& type, json object) {
  return json{{"type", type}, {"object", std::move(object)}}.dump() + "\n";
}

FakeApiServer::FakeApiServer() : server_(std::make_unique<httplib::Server>()) { Listen(); }

FakeApiServer::FakeApiServer(const std::string& cert_pem_path, const std::string& key_pem_path)
    : server_(std::make_unique<httplib::SSLServer>(cert_pem_path.c_str(), key_pem_path.c_str())) {
  Listen();
}

void FakeApiServer::Listen() {
  server_->Get("/api/v1/pods",
               [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); });
  port_ = server_->bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
}

FakeApiServer::~FakeApiServer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  server_->stop();
  thread_.join();
}

void FakeApiServer::AddList(json items, std::string resource_version) {
  std::lock_guard lock(mu_);
  lists_.push_back({{"kind", "PodList"},
                    {"metadata", {{"resourceVersion", std::move(resource_version)}}},
                    {"items", std::move(items)}});
}

void FakeApiServer::AddWatch(WatchPlan plan) {
  std::lock_guard lock(mu_);
  watches_.push_back(std::move(plan));
}

void FakeApiServer::set_token(std::string token) {
  std::lock_guard lock(mu_);
  token_ = std::move(token);
}

void FakeApiServer::set_node(std::string node) {
  std::lock_guard lock(mu_);
  node_ = std::move(node);
}

int FakeApiServer::lists_served() const {
  std::lock_guard lock(mu_);
  return lists_served_;
}

int FakeApiServer::unauthorized() const {
  std::lock_guard lock(mu_);
  return unauthorized_;
}

std::vector<std::string> FakeApiServer::watch_versions() const {
  std::lock_guard lock(mu_);
  return watch_versions_;
}

std::vector<std::string> FakeApiServer::bad_selectors() const {
  std::lock_guard lock(mu_);
  return bad_selectors_;
}

void FakeApiServer::Handle(const httplib::Request& req, httplib::Response& res) {
  std::unique_lock lock(mu_);
  if (req.get_header_value("Authorization") != "Bearer " + token_) {
    ++unauthorized_;
    res.status = 401;
    return;
  }
  if (req.get_param_value("fieldSelector") != "spec.nodeName=" + node_) {
    bad_selectors_.push_back(req.get_param_value("fieldSelector"));
  }
  if (req.get_param_value("watch") != "1") {
    if (lists_.empty()) {
      res.status = 500;
      return;
    }
    const json& body = lists_[std::min<size_t>(lists_served_, lists_.size() - 1)];
    ++lists_served_;
    res.set_content(body.dump(), "application/json");
    return;
  }
  watch_versions_.push_back(req.get_param_value("resourceVersion"));
  auto plan = std::make_shared<WatchPlan>();
  plan->hold = true;
  if (!watches_.empty()) {
    *plan = std::move(watches_.front());
    watches_.pop_front();
  }
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
        // Held open: wake now and then to notice the client leaving or the server stopping.
        std::unique_lock wait(mu_);
        cv_.wait_for(wait, std::chrono::milliseconds(50), [this] { return stopping_; });
        return !stopping_ && sink.is_writable();
      });
}

}  // namespace warpscope::agent::kubernetes::testing
