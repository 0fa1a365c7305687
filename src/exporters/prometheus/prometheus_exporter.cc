// SPDX-License-Identifier: Apache-2.0
#include "exporters/prometheus/prometheus_exporter.h"

#include <new>

#include "base/gzip.h"
#include "base/logging.h"

namespace warpscope::exporters {

MetricsSnapshot::MetricsSnapshot(std::string text, std::string openmetrics, uint64_t sequence,
                                 base::TimePoint time, int gzip_level)
    : text_(std::move(text)),
      openmetrics_(std::move(openmetrics)),
      sequence_(sequence),
      time_(time),
      gzip_level_(gzip_level) {}

const std::string* MetricsSnapshot::gzipped(ExpositionFormat format) const {
  Gzip& g = gzip_[format == ExpositionFormat::kOpenMetrics1 ? 1 : 0];
  std::call_once(g.once, [&] {
    auto compressed = base::GzipCompress(body(format), gzip_level_);
    if (compressed) {
      g.data = std::move(*compressed);
      g.ok = true;
    } else {
      WARPSCOPE_LOG_FIRST_N(WARNING, 1, "/metrics: {}; serving uncompressed",
                            compressed.error().ToString());
    }
  });
  return g.ok ? &g.data : nullptr;
}

MetricsSnapshotStore::MetricsSnapshotStore()
    : current_(std::make_shared<MetricsSnapshot>("", "# EOF\n", 0, base::TimePoint(), 1)) {}

void MetricsSnapshotStore::Publish(std::shared_ptr<const MetricsSnapshot> snapshot) {
  if (snapshot == nullptr) {
    return;
  }
  std::shared_ptr<const MetricsSnapshot> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    old = std::move(current_);
    current_ = std::move(snapshot);
  }
  // `old` is released here, outside the lock.
}

std::shared_ptr<const MetricsSnapshot> MetricsSnapshotStore::Get() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

PrometheusExporter::PrometheusExporter(Options options, std::shared_ptr<MetricsSnapshotStore> store)
    : options_(std::move(options)),
      store_(store != nullptr ? std::move(store) : std::make_shared<MetricsSnapshotStore>()),
      renderer_(options_.render) {}

ExportResult PrometheusExporter::Export(const model::Frame& frame) noexcept {
  if (shut_down_) {
    return ExportResult::kDropped;
  }
  try {
    std::string text;
    std::string openmetrics;
    text.reserve(last_text_size_ + last_text_size_ / 8);
    openmetrics.reserve(last_openmetrics_size_ + last_openmetrics_size_ / 8);
    renderer_.RenderBoth(frame, &text, &openmetrics);
    last_text_size_ = text.size();
    last_openmetrics_size_ = openmetrics.size();
    store_->Publish(std::make_shared<MetricsSnapshot>(
        std::move(text), std::move(openmetrics), frame.sequence, frame.end, options_.gzip_level));
    return ExportResult::kSuccess;
  } catch (const std::bad_alloc&) {
    WARPSCOPE_LOG_FIRST_N(ERROR, 1, "prometheus exporter: out of memory rendering /metrics");
    return ExportResult::kFailure;
  } catch (...) {
    WARPSCOPE_LOG_FIRST_N(ERROR, 1, "prometheus exporter: unexpected error rendering /metrics");
    return ExportResult::kFailure;
  }
}

void PrometheusExporter::Shutdown(base::Duration /*timeout*/) { shut_down_ = true; }

}  // namespace warpscope::exporters
