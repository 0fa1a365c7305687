// SPDX-License-Identifier: Apache-2.0
#include "server/alerts/alert_sender.h"

#include <httplib.h>

#include <optional>

#include "base/logging.h"
#include "exporters/delivery.h"
#include "exporters/http_push.h"

namespace warpscope::server::alerts {
namespace {

constexpr std::string_view kExample = "http://127.0.0.1:9093";

class HttpAlertTransport final : public AlertTransport {
 public:
  explicit HttpAlertTransport(const exporters::HttpEndpoint& endpoint)
      : client_(exporters::MakeHttpClient(endpoint, {.timeout = std::chrono::seconds(10)})) {
    std::string prefix = endpoint.path;
    while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
    path_ = prefix + "/api/v2/alerts";
  }

  PostResult Post(const std::string& json_body) override {
    httplib::Headers headers{{"User-Agent", "warpscope-server"}};
    auto res = client_->Post(path_, headers, json_body, "application/json");
    if (!res) return {.retryable = true, .error = httplib::to_string(res.error())};
    if (res->status >= 200 && res->status < 300) return {.delivered = true};
    const bool retryable = res->status == 429 || res->status >= 500;
    return {
        .retryable = retryable,
        .error = "HTTP " + std::to_string(res->status) + " " + exporters::BodySnippet(res->body)};
  }
  void Abort() override { client_->stop(); }

 private:
  std::unique_ptr<httplib::Client> client_;
  std::string path_;
};

}  // namespace

base::Status ValidateAlertmanagerUrl(std::string_view url) {
  auto endpoint = exporters::ParseHttpEndpoint(url, "--alertmanager-url", kExample);
  if (!endpoint) return endpoint.error();
  return base::OkStatus();
}

base::Result<std::unique_ptr<AlertTransport>> MakeHttpAlertTransport(std::string_view url) {
  WARPSCOPE_ASSIGN_OR_RETURN(exporters::HttpEndpoint endpoint,
                             exporters::ParseHttpEndpoint(url, "--alertmanager-url", kExample));
  return std::unique_ptr<AlertTransport>(new HttpAlertTransport(endpoint));
}

// One Alertmanager: the alerts pending for it and the thread that sends them.
class AlertSender::Target {
 public:
  Target(std::string url, std::unique_ptr<AlertTransport> transport, const Options& options)
      : url_(std::move(url)),
        max_pending_(options.max_pending),
        transport_(std::move(transport)),
        retry_({.backoff = {.initial = options.initial_backoff, .max = options.max_backoff}}) {
    loop_.Start([this](std::stop_token stop) { Run(std::move(stop)); });
  }
  ~Target() { Shutdown(base::Duration::zero()); }

  void Offer(const std::vector<Alert>& alerts) {
    {
      std::lock_guard<std::mutex> lock(monitor_.mu);
      if (!loop_.accepting()) return;
      for (const Alert& a : alerts) Merge(AlertKey(a), a, /*newer=*/true);
    }
    monitor_.cv.notify_all();
  }

  void Shutdown(base::Duration timeout) {
    if (!loop_.Shutdown(
            timeout, [&] { return pending_.empty(); }, [&] { transport_->Abort(); })) {
      return;
    }
    std::lock_guard<std::mutex> lock(monitor_.mu);
    stats_.dropped += pending_.size();
    pending_.clear();
  }

  TargetStats stats() const {
    std::lock_guard<std::mutex> lock(monitor_.mu);
    TargetStats s = stats_;
    s.url = url_;
    s.pending = pending_.size();
    return s;
  }

 private:
  // With monitor_.mu held. A newer copy replaces a pending one; an older (retried) copy only
  // fills a gap.
  void Merge(const std::string& key, const Alert& alert, bool newer) {
    auto it = pending_.find(key);
    if (it != pending_.end()) {
      if (newer) it->second = alert;
      return;
    }
    if (pending_.size() >= max_pending_) {
      ++stats_.dropped;
      WARPSCOPE_LOG_EVERY_N(
          WARNING, 100, "alerts for {}: {} already wait (it is down or slow); dropping new ones",
          url_, max_pending_);
      return;
    }
    pending_.emplace(key, alert);
  }

  void Run(std::stop_token stop) {
    while (true) {
      std::map<std::string, Alert> batch;
      {
        exporters::SendLoop::Lock lock(monitor_.mu);
        if (!loop_.WaitForWork(lock, stop, [&] { return !pending_.empty(); })) break;
        batch.swap(pending_);
      }
      std::vector<Alert> alerts;
      alerts.reserve(batch.size());
      for (auto& [key, a] : batch) alerts.push_back(a);
      PostResult result = transport_->Post(
          AlertsJson(alerts).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      std::optional<base::Duration> wait;
      {
        exporters::SendLoop::Lock lock(monitor_.mu);
        if (result.delivered) {
          stats_.sent += batch.size();
          retry_.Reset();
        } else if (!result.retryable) {
          stats_.rejected += batch.size();
          retry_.Reset();
          WARPSCOPE_LOG_EVERY_N(ERROR, 10, "Alertmanager {} refused {} alert(s): {}", url_,
                                batch.size(), result.error);
        } else {
          ++stats_.failed_posts;
          for (auto& [key, a] : batch) Merge(key, a, /*newer=*/false);
          wait = retry_.NextWait(std::nullopt);
          WARPSCOPE_LOG_EVERY_N(WARNING, 10,
                                "sending {} alert(s) to Alertmanager {} failed ({}); retrying",
                                batch.size(), url_, result.error);
        }
        loop_.FinishItem(lock);
      }
      if (wait && !loop_.WaitBeforeRetry(*wait, stop)) break;
    }
  }

  const std::string url_;
  const size_t max_pending_;
  std::unique_ptr<AlertTransport> transport_;  // the thread's (Abort from Shutdown)
  exporters::RetryPolicy retry_;               // the thread's
  mutable exporters::LoopMonitor monitor_;
  std::map<std::string, Alert> pending_;              // guarded by monitor_.mu
  TargetStats stats_;                                 // guarded by monitor_.mu
  exporters::SendLoop loop_{"alert-send", monitor_};  // last: its thread uses everything above
};

base::Result<std::unique_ptr<AlertSender>> AlertSender::Create(Options options,
                                                               TransportFactory factory) {
  if (options.max_pending == 0) {
    return base::Error(base::InvalidArgument("alert sender: max_pending must be at least 1"));
  }
  std::vector<std::unique_ptr<Target>> targets;
  for (const std::string& url : options.urls) {
    WARPSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<AlertTransport> transport, factory(url));
    targets.push_back(std::make_unique<Target>(url, std::move(transport), options));
  }
  return std::unique_ptr<AlertSender>(new AlertSender(std::move(targets)));
}

AlertSender::AlertSender(std::vector<std::unique_ptr<Target>> targets)
    : targets_(std::move(targets)) {}

AlertSender::~AlertSender() { Shutdown(base::Duration::zero()); }

void AlertSender::Offer(const std::vector<Alert>& alerts) {
  if (alerts.empty()) return;
  for (auto& t : targets_) t->Offer(alerts);
}

void AlertSender::Shutdown(base::Duration timeout) {
  for (auto& t : targets_) t->Shutdown(timeout);
}

std::vector<AlertSender::TargetStats> AlertSender::stats() const {
  std::vector<TargetStats> out;
  for (const auto& t : targets_) out.push_back(t->stats());
  return out;
}

}  // namespace warpscope::server::alerts
