// SPDX-License-Identifier: Apache-2.0
#include "exporters/prometheus/prometheus_exporter.h"

#include <new>

#include "base/gzip.h"
#include "base/logging.h"

namespace warpscope::exporters {

// The text renderer and the spare frames that an exporter shares with its snapshots (which may
// outlive it: the store keeps the last one). Thread-safe: HTTP workers render on demand, one at
// a time; the exporter takes spare frames on the agent main sequence, never waiting for a
// render.
class FrameRenderer {
 public:
  explicit FrameRenderer(TextRenderer::Options options) : renderer_(std::move(options)) {}

  void Render(const model::Frame& frame, ExpositionFormat format, std::string* out) {
    std::lock_guard<std::mutex> lock(render_mu_);
    renderer_.Render(frame, format, out);
  }

  // A frame that no snapshot holds any more (its strings keep their capacity), or a new one.
  std::unique_ptr<model::Frame> TakeFrame() {
    {
      std::lock_guard<std::mutex> lock(spare_mu_);
      if (!spares_.empty()) {
        std::unique_ptr<model::Frame> frame = std::move(spares_.back());
        spares_.pop_back();
        return frame;
      }
    }
    return std::make_unique<model::Frame>();
  }

  void GiveBack(std::unique_ptr<model::Frame> frame) {
    std::lock_guard<std::mutex> lock(spare_mu_);
    // Two suffice: the published snapshot holds one frame, the next Export fills another.
    if (spares_.size() < 2) {
      spares_.push_back(std::move(frame));
    }
  }

 private:
  std::mutex render_mu_;
  TextRenderer renderer_;  // guarded by render_mu_
  std::mutex spare_mu_;
  std::vector<std::unique_ptr<model::Frame>> spares_;  // guarded by spare_mu_
};

MetricsSnapshot::MetricsSnapshot(std::string text, std::string openmetrics, uint64_t sequence,
                                 base::TimePoint time, int gzip_level)
    : sequence_(sequence), time_(time), gzip_level_(gzip_level) {
  BodyFor(ExpositionFormat::kText004).text = std::move(text);
  BodyFor(ExpositionFormat::kOpenMetrics1).text = std::move(openmetrics);
  for (Body& b : bodies_) {
    b.done.store(true, std::memory_order_relaxed);
  }
}

MetricsSnapshot::MetricsSnapshot(std::unique_ptr<model::Frame> frame,
                                 std::shared_ptr<FrameRenderer> renderer, int gzip_level)
    : frame_(std::move(frame)),
      renderer_(std::move(renderer)),
      sequence_(frame_->sequence),
      time_(frame_->end),
      gzip_level_(gzip_level) {}

MetricsSnapshot::~MetricsSnapshot() {
  if (renderer_ != nullptr && frame_ != nullptr) {
    renderer_->GiveBack(std::move(frame_));
  }
}

const std::string& MetricsSnapshot::body(ExpositionFormat format) const {
  Body& b = BodyFor(format);
  if (frame_ != nullptr) {
    std::call_once(b.rendered, [&] {
      try {
        renderer_->Render(*frame_, format, &b.text);
      } catch (...) {
        b.text.clear();
        WARPSCOPE_LOG_FIRST_N(ERROR, 1, "/metrics: out of memory rendering the exposition");
      }
      b.done.store(true, std::memory_order_release);
    });
  }
  return b.text;
}

const std::string* MetricsSnapshot::gzipped(ExpositionFormat format) const {
  Body& b = BodyFor(format);
  const std::string& plain = body(format);
  std::call_once(b.compressed, [&] {
    auto compressed = base::GzipCompress(plain, gzip_level_);
    if (compressed) {
      b.gzip = std::move(*compressed);
      b.gzip_ok = true;
    } else {
      WARPSCOPE_LOG_FIRST_N(WARNING, 1, "/metrics: {}; serving uncompressed",
                            compressed.error().ToString());
    }
  });
  return b.gzip_ok ? &b.gzip : nullptr;
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
      renderer_(std::make_shared<FrameRenderer>(options_.render)) {}

ExportResult PrometheusExporter::Export(const model::Frame& frame) noexcept {
  if (shut_down_) {
    return ExportResult::kDropped;
  }
  try {
    std::unique_ptr<model::Frame> copy = renderer_->TakeFrame();
    *copy = frame;  // element-wise: a spare frame's strings are reused
    store_->Publish(
        std::make_shared<const MetricsSnapshot>(std::move(copy), renderer_, options_.gzip_level));
    return ExportResult::kSuccess;
  } catch (const std::bad_alloc&) {
    WARPSCOPE_LOG_FIRST_N(ERROR, 1, "prometheus exporter: out of memory copying the frame");
    return ExportResult::kFailure;
  } catch (...) {
    WARPSCOPE_LOG_FIRST_N(ERROR, 1, "prometheus exporter: unexpected error publishing a frame");
    return ExportResult::kFailure;
  }
}

void PrometheusExporter::Shutdown(base::Duration /*timeout*/) { shut_down_ = true; }

}  // namespace warpscope::exporters
