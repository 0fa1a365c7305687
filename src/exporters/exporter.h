// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_EXPORTERS_EXPORTER_H_
#define WARPSCOPE_EXPORTERS_EXPORTER_H_

#include <string_view>

#include "base/time.h"
#include "model/frame.h"

namespace warpscope::exporters {

enum class ExportResult {
  kSuccess,  // accepted: published, queued for sending or sent
  kFailure,  // not accepted this time; a later frame may succeed (retryable)
  kDropped,  // discarded on purpose (shut down, queue full, invalid); do not retry
};

// "success", "failure", "dropped": the value of the `result` label of self-metrics.
std::string_view ExportResultName(ExportResult result);

// Consumes frames: the latest collection cycle (pull exporters such as Prometheus /metrics) or a
// closed export window (push exporters such as OTLP).
//
// Threading: Export() and Shutdown() are called from one sequence (the agent main sequence) and
// never concurrently on one instance. Export() must not block on I/O: exporters that talk to the
// network own a thread and a bounded queue. Export() does not keep references into `frame` after
// it returns.
class Exporter {
 public:
  virtual ~Exporter() = default;
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  virtual ExportResult Export(const model::Frame& frame) noexcept = 0;
  // Flushes what can be flushed within `timeout`, then releases threads and sockets. Export()
  // after Shutdown() returns kDropped. Calling Shutdown() twice is harmless.
  virtual void Shutdown(base::Duration timeout) = 0;
  // Short stable name for logs and self-metric labels: "prometheus", "otlp".
  virtual std::string_view name() const = 0;

 protected:
  Exporter() = default;
};

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_EXPORTER_H_
