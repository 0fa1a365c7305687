// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_EXPORTERS_PROMETHEUS_PROMETHEUS_EXPORTER_H_
#define WARPSCOPE_EXPORTERS_PROMETHEUS_PROMETHEUS_EXPORTER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "base/time.h"
#include "exporters/exporter.h"
#include "exporters/prometheus/text_renderer.h"

namespace warpscope::exporters {

class FrameRenderer;

// One frame in both exposition formats. A snapshot either holds bodies rendered already (the
// empty exposition) or a copy of the frame, rendered on the first request for each format (at
// most once per format, thread-safe, on the requesting thread) so that a frame nobody scrapes
// costs no rendering. gzip bodies are computed the same way, on the first gzip request.
class MetricsSnapshot {
 public:
  // Bodies rendered already.
  MetricsSnapshot(std::string text, std::string openmetrics, uint64_t sequence,
                  base::TimePoint time, int gzip_level);
  // `frame`, rendered by `renderer` when asked; the frame goes back to the renderer's spares
  // when the snapshot is destroyed.
  MetricsSnapshot(std::unique_ptr<model::Frame> frame, std::shared_ptr<FrameRenderer> renderer,
                  int gzip_level);
  ~MetricsSnapshot();
  MetricsSnapshot(const MetricsSnapshot&) = delete;
  MetricsSnapshot& operator=(const MetricsSnapshot&) = delete;

  // The exposition in `format`; renders it on the first call for that format.
  const std::string& body(ExpositionFormat format) const;
  // The gzip of body(format), or nullptr when compression failed (serve it uncompressed).
  const std::string* gzipped(ExpositionFormat format) const;
  // Whether body(format) is rendered already (always true for given bodies).
  bool rendered(ExpositionFormat format) const {
    return BodyFor(format).done.load(std::memory_order_acquire);
  }
  uint64_t sequence() const { return sequence_; }
  base::TimePoint time() const { return time_; }  // the frame's end

 private:
  struct Body {
    std::once_flag rendered;
    std::atomic<bool> done{false};
    std::string text;
    std::once_flag compressed;
    std::string gzip;
    bool gzip_ok = false;
  };
  Body& BodyFor(ExpositionFormat format) const {
    return bodies_[format == ExpositionFormat::kOpenMetrics1 ? 1 : 0];
  }

  std::unique_ptr<model::Frame> frame_;      // null when the bodies were given
  std::shared_ptr<FrameRenderer> renderer_;  // null when the bodies were given
  uint64_t sequence_;
  base::TimePoint time_;
  int gzip_level_;
  mutable Body bodies_[2];
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

// Publishes each frame (the latest collection cycle) to a MetricsSnapshotStore, from which
// MetricsHttpServer serves /metrics; the snapshot renders each format when it is first asked
// for. Export() runs on the agent main sequence, does no I/O and no rendering: it copies the
// frame into one that no snapshot uses any more, so steady-state cycles do not allocate for it.
class PrometheusExporter : public Exporter {
 public:
  struct Options {
    TextRenderer::Options render;
    int gzip_level = 1;  // zlib level for gzip bodies; 1: repetitive text compresses well anyway
  };

  PrometheusExporter(Options options, std::shared_ptr<MetricsSnapshotStore> store);

  ExportResult Export(const model::Frame& frame) noexcept override;
  // Stops publishing; the last snapshot stays in the store (and can still be rendered).
  void Shutdown(base::Duration timeout) override;
  std::string_view name() const override { return "prometheus"; }

  const std::shared_ptr<MetricsSnapshotStore>& store() const { return store_; }

 private:
  Options options_;
  std::shared_ptr<MetricsSnapshotStore> store_;
  std::shared_ptr<FrameRenderer> renderer_;  // shared with the snapshots, which may outlive us
  bool shut_down_ = false;
};

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_PROMETHEUS_PROMETHEUS_EXPORTER_H_
