// SPDX-License-Identifier: Apache-2.0
// Delivery of alerts to one or more Alertmanagers without ever blocking the insights engine:
// Offer() hands the alerts due to each Alertmanager's own sender thread and returns. Each
// thread POSTs what is pending as one `POST /api/v2/alerts`; while an Alertmanager is down or
// answers 5xx it retries with exponential backoff (1 s to 30 s), and newer copies of the same
// alert (same labels) replace older ones meanwhile, so what it finally receives is current.
// At most `max_pending` alerts wait per Alertmanager; beyond that new ones are dropped and
// counted. A 4xx answer (alerts it will never take) drops the batch, counted and logged.
#ifndef WARPSCOPE_SERVER_ALERTS_ALERT_SENDER_H_
#define WARPSCOPE_SERVER_ALERTS_ALERT_SENDER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "server/alerts/alert.h"

namespace warpscope::server::alerts {

// The answer to one POST.
struct PostResult {
  bool delivered = false;
  bool retryable = true;  // when not delivered: try again later (connection error, 429, 5xx)
  std::string error;      // when not delivered, for the log
};

// Sends request bodies to one Alertmanager. Post runs on the sender thread; Abort (from
// another thread) makes a Post in flight return soon.
class AlertTransport {
 public:
  virtual ~AlertTransport() = default;
  virtual PostResult Post(const std::string& json_body) = 0;
  virtual void Abort() = 0;
};

// "http://host:port[/prefix]" of an Alertmanager, checked; the error names --alertmanager-url
// and an example.
[[nodiscard]] base::Status ValidateAlertmanagerUrl(std::string_view url);

// POSTs to `<url>/api/v2/alerts` with cpp-httplib (http or https, 10 s timeouts).
[[nodiscard]] base::Result<std::unique_ptr<AlertTransport>> MakeHttpAlertTransport(
    std::string_view url);

class AlertSender {
 public:
  struct Options {
    std::vector<std::string> urls;  // --alertmanager-url
    size_t max_pending = 10000;     // alerts waiting per Alertmanager
    base::Duration initial_backoff = std::chrono::seconds(1);
    base::Duration max_backoff = std::chrono::seconds(30);
  };
  using TransportFactory =
      std::function<base::Result<std::unique_ptr<AlertTransport>>(std::string_view url)>;

  // InvalidArgument for a malformed URL (naming it). `factory` makes each URL's transport
  // (MakeHttpAlertTransport unless a test passes a fake).
  [[nodiscard]] static base::Result<std::unique_ptr<AlertSender>> Create(
      Options options, TransportFactory factory = MakeHttpAlertTransport);
  ~AlertSender();  // Shutdown(0) if not shut down yet

  // Queues `alerts` for every Alertmanager; returns at once.
  void Offer(const std::vector<Alert>& alerts);

  // Stops the threads: what is pending is tried until `timeout`, then dropped.
  void Shutdown(base::Duration timeout);

  struct TargetStats {
    std::string url;
    uint64_t sent = 0;          // alerts in batches the Alertmanager accepted
    uint64_t failed_posts = 0;  // POSTs that failed and will be retried
    uint64_t rejected = 0;      // alerts in batches answered with a 4xx (not retried)
    uint64_t dropped = 0;       // alerts dropped: too many pending, or at shutdown
    uint64_t pending = 0;       // waiting now
  };
  std::vector<TargetStats> stats() const;

 private:
  class Target;
  explicit AlertSender(std::vector<std::unique_ptr<Target>> targets);
  std::vector<std::unique_ptr<Target>> targets_;
};

}  // namespace warpscope::server::alerts

#endif  // WARPSCOPE_SERVER_ALERTS_ALERT_SENDER_H_
