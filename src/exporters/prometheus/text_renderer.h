// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_EXPORTERS_PROMETHEUS_TEXT_RENDERER_H_
#define WARPSCOPE_EXPORTERS_PROMETHEUS_TEXT_RENDERER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/frame.h"

namespace warpscope::exporters {

enum class ExpositionFormat {
  kText004,       // Prometheus text format 0.0.4
  kOpenMetrics1,  // OpenMetrics 1.0.0
};

// The Content-Type header value for `format`.
std::string_view ExpositionContentType(ExpositionFormat format);

// Renders a Frame as a Prometheus exposition (see docs/design/exporters.md for every rule).
//
// - One sample per series: `SeriesPoint::last * MetricDesc::prom_scale`; no timestamps (the
//   scraper stamps samples with the scrape time).
// - Families (by MetricDesc::prom_name; descs sharing a name share a family) are contiguous, each
//   with one HELP and TYPE; families are sorted by name, series by their label text, and
//   duplicate series (same name and labels) are emitted once.
// - Labels follow dcgm-exporter for GPU and MIG series (gpu, UUID, pci_bus_id, device,
//   modelName, [GPU_I_PROFILE, GPU_I_ID], Hostname, DCGM_FI_DRIVER_VERSION, then the series'
//   own labels); processes get pid, executable, container_id, pod_uid, namespace, pod, container
//   (the pod attribution of --kubernetes, dcgm-exporter's names), Hostname; executables executable,
//   executable_path, Hostname; host series Hostname. Constant labels (--tags) come after the entity
//   labels. Label keys are sanitised (dots and other invalid characters become
//   '_'); the first occurrence of a key wins, empty values are left out.
// - OpenMetrics: counters named `*_total` form the family without the suffix; counters without
//   it (dcgm-exporter names such as DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION) are typed `unknown`
//   so the sample keeps its name; a `# UNIT` line is written when the family name ends with a
//   base-unit word; the output ends with `# EOF`.
//
// Not thread-safe: one renderer per thread. It keeps its buffers between calls, so steady-state
// rendering does not allocate beyond the output string's growth.
class TextRenderer {
 public:
  struct Options {
    // The `Hostname` label. Empty: the first host entity's host.name attribute (or its id).
    std::string hostname;
    // Added to every series after the entity labels (from --tags). Keys are sanitised.
    std::vector<std::pair<std::string, std::string>> constant_labels;
    // Emits `target_info{service_name,service_version,Hostname,...tags} 1` (OpenTelemetry
    // convention for resource attributes).
    bool target_info = true;
    std::string service_version = "0.1.0";
  };

  explicit TextRenderer(Options options);
  ~TextRenderer();
  TextRenderer(const TextRenderer&) = delete;
  TextRenderer& operator=(const TextRenderer&) = delete;

  // Replaces *out with the exposition of `frame` in `format`.
  void Render(const model::Frame& frame, ExpositionFormat format, std::string* out);
  // Both formats from one pass over the frame (labels and order are computed once).
  void RenderBoth(const model::Frame& frame, std::string* text, std::string* openmetrics);
  std::string Render(const model::Frame& frame, ExpositionFormat format) {
    std::string out;
    Render(frame, format, &out);
    return out;
  }

 private:
  struct Family;
  struct EntityCache;
  struct Row;

  void Prepare(const model::Frame& frame);
  void Emit(ExpositionFormat format, std::string* out) const;
  uint32_t FamilyFor(const model::MetricDesc* desc);
  uint32_t EntityFor(const model::Frame& frame, std::string_view id, const model::MetricDesc& m);
  void BuildPrefix(const model::Frame& frame, const model::Entity* entity, EntityCache* cache);
  void AppendSeriesLabels(const model::Frame& frame, const model::SeriesPoint& point,
                          const Family& family, const EntityCache& cache, Row* row);

  Options options_;
  std::vector<std::pair<std::string, std::string>> tags_;  // sanitised keys
  std::string hostname_;                                   // for the current frame

  // Per-render state; kept between renders for its capacity.
  std::vector<Family> families_;
  std::unordered_map<const model::MetricDesc*, uint32_t> family_index_;
  std::vector<EntityCache> entity_caches_;
  size_t entity_caches_used_ = 0;
  std::unordered_map<std::string_view, uint32_t> entity_index_;  // entity id -> cache slot
  std::vector<Row> rows_;
  std::string labels_;  // each series' own labels (beyond its entity prefix), back to back
  std::vector<uint32_t> rank_scratch_;
  std::vector<std::string> extra_keys_;  // keys of the current series' own labels
  std::string key_buf_;
};

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_PROMETHEUS_TEXT_RENDERER_H_
