// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_EXPORTERS_PROMETHEUS_PROMETHEUS_EXPORTER_H_
#define WARPSCOPE_EXPORTERS_PROMETHEUS_PROMETHEUS_EXPORTER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "base/time.h"
#include "exporters/exporter.h"
#include "exporters/prometheus/text_renderer.h"

namespace warpscope::exporters {

// One rendered frame in both exposition formats. Immutable once published, except for the gzip
// bodies, which are computed on first request (at most once per format, thread-safe) so that
// frames nobody scrapes with gzip cost no compression.
class MetricsSnapshot {
 public:
  MetricsSnapshot(std::string text, std::string openmetrics, uint64_t sequence,
                  base::TimePoint time, int gzip_level);
  MetricsSnapshot(const MetricsSnapshot&) = delete;
  MetricsSnapshot& operator=(const MetricsSnapshot&) = delete;

  const std::string& body(ExpositionFormat format) const {
    return format == ExpositionFormat::kOpenMetrics1 ? openmetrics_ : text_;
  }
  // The gzip of body(format), or nullptr when compression failed (serve it uncompressed).
  const std::string* gzipped(ExpositionFormat format) const;
  uint64_t sequence() const { return sequence_; }
  base::TimePoint time() const { return time_; }  // the frame's end

 private:
  struct Gzip {
    std::once_flag once;
    std::string data;
    bool ok = false;
  };
  std::string text_;
  std::string openmetrics_;
  uint64_t sequence_;
  base::TimePoint time_;
  int gzip_level_;
  mutable Gzip gzip_[2];
};

// Where the exporter publishes and the HTTP server reads: the latest snapshot. Thread-safe.
// Holds an empty exposition (no series) until the first Publish.
class MetricsSnapshotStore {
 public:
  MetricsSnapshotStore();
  void Publish(std::shared_ptr<const MetricsSnapshot> snapshot);
  std::shared_ptr<const MetricsSnapshot> Get() const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const MetricsSnapshot> current_;  // guarded by mu_, never null
};

// Renders each frame (the latest collection cycle) in both formats and publishes it to a
// MetricsSnapshotStore, from which MetricsHttpServer serves /metrics. Export() runs on the agent
// main sequence and does no I/O.
class PrometheusExporter : public Exporter {
 public:
  struct Options {
    TextRenderer::Options render;
    int gzip_level = 1;  // zlib level for gzip bodies; 1: repetitive text compresses well anyway
  };

  PrometheusExporter(Options options, std::shared_ptr<MetricsSnapshotStore> store);

  ExportResult Export(const model::Frame& frame) noexcept override;
  // Stops publishing; the last snapshot stays in the store.
  void Shutdown(base::Duration timeout) override;
  std::string_view name() const override { return "prometheus"; }

  const std::shared_ptr<MetricsSnapshotStore>& store() const { return store_; }

 private:
  Options options_;
  std::shared_ptr<MetricsSnapshotStore> store_;
  TextRenderer renderer_;
  size_t last_text_size_ = 0;
  size_t last_openmetrics_size_ = 0;
  bool shut_down_ = false;
};

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_PROMETHEUS_PROMETHEUS_EXPORTER_H_
