// SPDX-License-Identifier: Apache-2.0
#include "exporters/prometheus/text_renderer.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/logging.h"
#include "model/entity.h"
#include "model/xid.h"

namespace warpscope::exporters {

namespace {

namespace attr = model::attr;

constexpr std::string_view kXidFamily = "DCGM_FI_DEV_XID_ERRORS";

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

// Label keys: [a-zA-Z_][a-zA-Z0-9_]*, and not the reserved "__" prefix. Invalid characters
// become '_', a leading digit gets a '_' in front, a leading "__" is stripped.
void AppendSanitizedLabelKey(std::string_view key, std::string* out) {
  if (key.size() >= 2 && key[0] == '_' && key[1] == '_') {
    key.remove_prefix(key.find_first_not_of('_') == std::string_view::npos
                          ? key.size()
                          : key.find_first_not_of('_'));
  }
  if (key.empty()) {
    return;
  }
  if (!IsNameStart(key[0])) {
    out->push_back('_');
  }
  for (char c : key) {
    out->push_back(IsNameChar(c) ? c : '_');
  }
}

// Metric names: [a-zA-Z_:][a-zA-Z0-9_:]*.
std::string SanitizeMetricName(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 1);
  if (!name.empty() && !(IsNameStart(name[0]) || name[0] == ':')) {
    out.push_back('_');
  }
  for (char c : name) {
    out.push_back(IsNameChar(c) || c == ':' ? c : '_');
  }
  return out;
}

bool NeedsEscape(std::string_view v) {
  for (char c : v) {
    if (c == '\\' || c == '"' || c == '\n') {
      return true;
    }
  }
  return false;
}

void AppendEscapedLabelValue(std::string_view v, std::string* out) {
  if (!NeedsEscape(v)) {
    out->append(v);
    return;
  }
  for (char c : v) {
    switch (c) {
      case '\\':
        out->append("\\\\");
        break;
      case '"':
        out->append("\\\"");
        break;
      case '\n':
        out->append("\\n");
        break;
      default:
        out->push_back(c);
    }
  }
}

void AppendEscapedHelp(std::string_view v, bool escape_quote, std::string* out) {
  for (char c : v) {
    switch (c) {
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '"':
        if (escape_quote) {
          out->append("\\\"");
        } else {
          out->push_back(c);
        }
        break;
      default:
        out->push_back(c);
    }
  }
}

void AppendDouble(double v, std::string* out) {
  if (std::isnan(v)) {
    out->append("NaN");
    return;
  }
  if (std::isinf(v)) {
    out->append(v > 0 ? "+Inf" : "-Inf");
    return;
  }
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

// Appends `key="value"` (with a leading comma unless first). Empty values are left out: to
// Prometheus an empty label is the same as an absent one.
bool AppendLabel(std::string_view key, std::string_view value, std::string* out) {
  if (value.empty()) {
    return false;
  }
  if (!out->empty() && out->back() != '{') {
    out->push_back(',');
  }
  out->append(key);
  out->append("=\"");
  AppendEscapedLabelValue(value, out);
  out->push_back('"');
  return true;
}

// The OpenMetrics unit of a family whose name ends in a base-unit word, else "".
std::string_view UnitFromName(std::string_view family) {
  static constexpr std::string_view kUnits[] = {"seconds", "bytes",  "joules", "watts",
                                                "celsius", "ratio",  "hertz",  "volts",
                                                "amperes", "meters", "grams"};
  for (std::string_view u : kUnits) {
    if (family.size() > u.size() + 1 && family.ends_with(u) &&
        family[family.size() - u.size() - 1] == '_') {
      return u;
    }
  }
  return {};
}

const model::MetricDesc kTargetInfo{"target_info",
                                    model::EntityKind::kHost,
                                    model::MetricKind::kGauge,
                                    "1",
                                    "Target metadata.",
                                    "target_info",
                                    1.0,
                                    "target_info"};

}  // namespace

std::string_view ExpositionContentType(ExpositionFormat format) {
  return format == ExpositionFormat::kOpenMetrics1
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

struct TextRenderer::Family {
  enum class Type { kGauge, kCounter, kInfo };
  const model::MetricDesc* desc = nullptr;
  std::string name;          // sample name in both formats
  size_t om_family_len = 0;  // OpenMetrics family name = name.substr(0, om_family_len)
  Type type = Type::kGauge;
  std::string_view om_type;  // "gauge", "counter", "unknown", "info"
  std::string_view unit;     // OpenMetrics UNIT, may be empty
  double scale = 1.0;        // multiply by scale, or divide by divisor when it is set
  double divisor = 0;
  bool xid = false;
  uint32_t rank = 0;  // by name, within one render
};

struct TextRenderer::EntityCache {
  bool built = false;
  uint32_t rank = 0;                   // position of `prefix` among the frame's prefixes
  std::string prefix;                  // label text of the entity and the tags
  std::vector<std::string_view> keys;  // label keys in `prefix` (literals or tags_ keys)
};

// One sample. Its labels are the entity's prefix followed by its own labels, kept in labels_.
struct TextRenderer::Row {
  uint32_t family = 0;
  uint32_t family_rank = 0;  // families sorted by name; families sharing a name share a rank
  int32_t slot = -1;         // entity cache; -1: no entity prefix
  uint32_t entity_rank = 0;
  uint32_t label_offset = 0;  // the row's own labels in labels_
  uint32_t label_len = 0;
  double value = 0;
};

TextRenderer::TextRenderer(Options options) : options_(std::move(options)) {
  for (const auto& [k, v] : options_.constant_labels) {
    std::string key;
    AppendSanitizedLabelKey(k, &key);
    if (key.empty()) {
      WARPSCOPE_LOG(WARNING, "tag key '{}' has no valid label characters; tag ignored", k);
      continue;
    }
    tags_.emplace_back(std::move(key), v);
  }
}

TextRenderer::~TextRenderer() = default;

uint32_t TextRenderer::FamilyFor(const model::MetricDesc* desc) {
  auto [it, inserted] = family_index_.try_emplace(desc, static_cast<uint32_t>(families_.size()));
  if (!inserted) {
    return it->second;
  }
  Family f;
  f.desc = desc;
  f.name = SanitizeMetricName(desc->prom_name);
  if (f.name != desc->prom_name) {
    WARPSCOPE_LOG_FIRST_N(WARNING, 5,
                          "metric {}: Prometheus name '{}' is not valid; exported as '{}'",
                          desc->key, desc->prom_name, f.name);
  }
  f.om_family_len = f.name.size();
  if (desc == &kTargetInfo) {
    f.type = Family::Type::kInfo;
    f.om_type = "info";
    f.om_family_len = f.name.size() - 5;  // "target"
  } else if (desc->kind == model::MetricKind::kCounter) {
    f.type = Family::Type::kCounter;
    if (f.name.size() > 6 && f.name.ends_with("_total")) {
      f.om_type = "counter";
      f.om_family_len = f.name.size() - 6;
    } else {
      // OpenMetrics requires counter samples to be named <family>_total. dcgm-exporter's
      // counters lack the suffix; renaming them would break dashboards, so in OpenMetrics they
      // are typed unknown (a sample named exactly like its family).
      f.om_type = "unknown";
    }
  } else {
    f.om_type = "gauge";
  }
  if (f.type != Family::Type::kInfo) {
    f.unit = UnitFromName(std::string_view(f.name).substr(0, f.om_family_len));
  }
  f.scale = desc->prom_scale;
  // 1e-6 is not exact in binary: x * 1e-6 can print as 1979.9999999999998 where x / 1e6 prints
  // 1980. Divide when the scale is the reciprocal of an integer.
  if (f.scale > 0 && f.scale < 1) {
    double inv = 1.0 / f.scale;
    double r = std::round(inv);
    if (std::abs(inv - r) <= 1e-9 * r) {
      f.divisor = r;
    }
  }
  f.xid = f.name == kXidFamily;
  families_.push_back(std::move(f));
  return it->second;
}

void TextRenderer::BuildPrefix(const model::Frame& frame, const model::Entity* e,
                               EntityCache* cache) {
  std::string& p = cache->prefix;
  auto& keys = cache->keys;
  p.clear();
  keys.clear();
  auto add = [&](std::string_view key, std::string_view value) {
    if (AppendLabel(key, value, &p)) {
      keys.push_back(key);
    }
  };
  if (e != nullptr) {
    switch (e->kind) {
      case model::EntityKind::kGpu:
      case model::EntityKind::kMigInstance: {
        const model::Entity* gpu = e;
        if (e->kind == model::EntityKind::kMigInstance && !e->parent.empty()) {
          auto it = entity_index_.find(e->parent);
          if (it != entity_index_.end() && it->second < frame.entities.size()) {
            gpu = &frame.entities[it->second];
          }
        }
        auto gpu_attr = [&](std::string_view key) {
          std::string_view v = gpu->attributes.Get(key);
          return v.empty() ? e->attributes.Get(key) : v;
        };
        std::string_view index = gpu_attr(attr::kGpuIndex);
        std::string_view uuid = gpu_attr(attr::kGpuUuid);
        if (uuid.empty() && gpu->kind == model::EntityKind::kGpu) {
          uuid = gpu->id;
        }
        add("gpu", index);
        add("UUID", uuid);
        add("pci_bus_id", gpu_attr(attr::kGpuPciBusId));
        if (!index.empty()) {
          std::string device = "nvidia";
          device.append(index);
          add("device", device);
        }
        add("modelName", gpu_attr(attr::kGpuModel));
        if (e->kind == model::EntityKind::kMigInstance) {
          add("GPU_I_PROFILE", e->attributes.Get(attr::kMigProfile));
          add("GPU_I_ID", e->attributes.Get(attr::kMigGpuInstanceId));
        }
        add("Hostname", hostname_);
        add("DCGM_FI_DRIVER_VERSION", gpu_attr(attr::kDriverVersion));
        break;
      }
      case model::EntityKind::kProcess:
        add("pid", e->attributes.Get(attr::kPid));
        add("executable", e->attributes.Get(attr::kExecutable));
        add("container_id", e->attributes.Get(attr::kContainerId));
        add("pod_uid", e->attributes.Get(attr::kPodUid));
        // --kubernetes: dcgm-exporter's names for the pod attribution.
        add("namespace", e->attributes.Get(attr::kPodNamespace));
        add("pod", e->attributes.Get(attr::kPodName));
        add("container", e->attributes.Get(attr::kContainerName));
        add("Hostname", hostname_);
        break;
      case model::EntityKind::kExecutable:
        add("executable", e->attributes.Get(attr::kExecutable));
        add("executable_path", e->attributes.Get(attr::kExecutablePath));
        add("Hostname", hostname_);
        break;
      case model::EntityKind::kContainer:
        add("container_id", e->attributes.Get(attr::kContainerId));
        add("pod_uid", e->attributes.Get(attr::kPodUid));
        // --kubernetes: dcgm-exporter's names for the pod attribution.
        add("namespace", e->attributes.Get(attr::kPodNamespace));
        add("pod", e->attributes.Get(attr::kPodName));
        add("container", e->attributes.Get(attr::kContainerName));
        add("Hostname", hostname_);
        break;
      case model::EntityKind::kHost:
      case model::EntityKind::kCluster:  // never a series; findings only
        add("Hostname", hostname_);
        break;
    }
  } else {
    add("Hostname", hostname_);
  }
  for (const auto& [k, v] : tags_) {
    if (std::find(keys.begin(), keys.end(), std::string_view(k)) == keys.end()) {
      add(k, v);
    }
  }
  cache->built = true;
}

uint32_t TextRenderer::EntityFor(const model::Frame& frame, std::string_view id,
                                 const model::MetricDesc& m) {
  auto it = entity_index_.find(id);
  uint32_t slot;
  if (it != entity_index_.end()) {
    slot = it->second;
  } else {
    // A series whose entity is not in the frame: render it with the host-level labels only.
    WARPSCOPE_LOG_FIRST_N(WARNING, 5, "metric {}: entity '{}' is not in the frame", m.key, id);
    slot = static_cast<uint32_t>(entity_caches_used_++);
    if (entity_caches_.size() < entity_caches_used_) {
      entity_caches_.resize(entity_caches_used_);
    }
    entity_caches_[slot].built = false;
    entity_index_.emplace(id, slot);
  }
  EntityCache& cache = entity_caches_[slot];
  if (!cache.built) {
    BuildPrefix(frame, slot < frame.entities.size() ? &frame.entities[slot] : nullptr, &cache);
  }
  return slot;
}

void TextRenderer::AppendSeriesLabels(const model::Frame& frame, const model::SeriesPoint& point,
                                      const Family& family, const EntityCache& cache, Row* row) {
  const size_t start = labels_.size();
  size_t extras = 0;
  auto add_extra = [&](std::string_view key, std::string_view value) {
    if (value.empty() || std::find(cache.keys.begin(), cache.keys.end(), key) != cache.keys.end()) {
      return;
    }
    for (size_t i = 0; i < extras; ++i) {
      if (extra_keys_[i] == key) {
        return;
      }
    }
    if (extra_keys_.size() <= extras) {
      extra_keys_.emplace_back();
    }
    extra_keys_[extras++].assign(key);
    if (labels_.size() > start) {
      labels_.push_back(',');
    }
    labels_.append(key);
    labels_.append("=\"");
    AppendEscapedLabelValue(value, &labels_);
    labels_.push_back('"');
  };
  if (family.xid) {
    // dcgm-exporter labels the last XID with its code and description.
    const int64_t code = std::llround(point.last);
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof(buf), code);
    std::string_view msg;
    for (const auto& ev : frame.events) {
      if (ev.kind == "xid" && ev.code == code && ev.entity == point.entity) {
        msg = ev.message;
      }
    }
    if (msg.empty()) {
      msg = model::XidDescription(static_cast<uint64_t>(code));
    }
    add_extra("err_code", std::string_view(buf, r.ptr - buf));
    add_extra("err_msg", msg);
  }
  for (const auto& [k, v] : point.labels) {
    if (k == attr::kGpuIndex) {
      add_extra("gpu", v);
    } else if (k == attr::kGpuUuid) {
      add_extra("UUID", v);
    } else {
      key_buf_.clear();
      AppendSanitizedLabelKey(k, &key_buf_);
      if (!key_buf_.empty()) {
        add_extra(key_buf_, v);
      }
    }
  }
  row->label_offset = static_cast<uint32_t>(start);
  row->label_len = static_cast<uint32_t>(labels_.size() - start);
}

void TextRenderer::Prepare(const model::Frame& frame) {
  families_.clear();
  family_index_.clear();
  entity_index_.clear();
  rows_.clear();
  labels_.clear();

  hostname_ = options_.hostname;
  if (hostname_.empty()) {
    for (const auto& e : frame.entities) {
      if (e.kind == model::EntityKind::kHost) {
        std::string_view h = e.attributes.Get(attr::kHostName);
        hostname_ = h.empty() ? e.id : std::string(h);
        break;
      }
    }
  }

  entity_caches_used_ = frame.entities.size();
  if (entity_caches_.size() < entity_caches_used_) {
    entity_caches_.resize(entity_caches_used_);
  }
  for (size_t i = 0; i < frame.entities.size(); ++i) {
    entity_caches_[i].built = false;
    entity_index_.emplace(frame.entities[i].id, static_cast<uint32_t>(i));  // first id wins
  }

  rows_.reserve(frame.series.size() + 1);
  std::string_view last_entity;
  uint32_t last_slot = 0;
  bool have_last = false;
  for (const auto& point : frame.series) {
    if (point.metric == nullptr) {
      continue;
    }
    const uint32_t fam = FamilyFor(point.metric);
    const Family& f = families_[fam];
    if (f.name.empty()) {
      continue;  // no Prometheus name: not exported here
    }
    // Series of one entity usually come together; skip the hash lookup for them.
    uint32_t slot;
    if (have_last && point.entity == last_entity) {
      slot = last_slot;
    } else {
      slot = EntityFor(frame, point.entity, *point.metric);
      last_entity = point.entity;
      last_slot = slot;
      have_last = true;
    }
    Row row;
    row.family = fam;
    row.slot = static_cast<int32_t>(slot);
    row.value = f.divisor != 0 ? point.last / f.divisor : point.last * f.scale;
    AppendSeriesLabels(frame, point, f, entity_caches_[slot], &row);
    rows_.push_back(row);
  }

  if (options_.target_info) {
    Row row;
    row.family = FamilyFor(&kTargetInfo);
    row.value = 1;
    std::string& l = labels_;
    const size_t start = l.size();
    auto add = [&](std::string_view k, std::string_view v) {
      if (v.empty()) {
        return;
      }
      if (l.size() > start) {
        l.push_back(',');
      }
      l.append(k);
      l.append("=\"");
      AppendEscapedLabelValue(v, &l);
      l.push_back('"');
    };
    add("service_name", "warpscope-agent");
    add("service_version", options_.service_version);
    add("Hostname", hostname_);
    for (const auto& [k, v] : tags_) {
      if (k != "service_name" && k != "service_version" && k != "Hostname") {
        add(k, v);
      }
    }
    row.label_offset = static_cast<uint32_t>(start);
    row.label_len = static_cast<uint32_t>(l.size() - start);
    rows_.push_back(row);
  }

  // Rank families by name and entities by their label text, so that sorting compares small
  // integers first and only a row's own labels as text.
  rank_scratch_.clear();
  for (uint32_t i = 0; i < families_.size(); ++i) {
    rank_scratch_.push_back(i);
  }
  std::sort(rank_scratch_.begin(), rank_scratch_.end(),
            [this](uint32_t a, uint32_t b) { return families_[a].name < families_[b].name; });
  for (size_t i = 0; i < rank_scratch_.size(); ++i) {
    const bool same =
        i > 0 && families_[rank_scratch_[i]].name == families_[rank_scratch_[i - 1]].name;
    families_[rank_scratch_[i]].rank =
        same ? families_[rank_scratch_[i - 1]].rank : static_cast<uint32_t>(i);
  }
  rank_scratch_.clear();
  for (uint32_t i = 0; i < entity_caches_used_; ++i) {
    if (entity_caches_[i].built) {
      rank_scratch_.push_back(i);
    }
  }
  std::sort(rank_scratch_.begin(), rank_scratch_.end(), [this](uint32_t a, uint32_t b) {
    return entity_caches_[a].prefix < entity_caches_[b].prefix;
  });
  for (size_t i = 0; i < rank_scratch_.size(); ++i) {
    const bool same = i > 0 && entity_caches_[rank_scratch_[i]].prefix ==
                                   entity_caches_[rank_scratch_[i - 1]].prefix;
    entity_caches_[rank_scratch_[i]].rank =
        same ? entity_caches_[rank_scratch_[i - 1]].rank : static_cast<uint32_t>(i);
  }

  for (auto& row : rows_) {
    row.family_rank = families_[row.family].rank;
    row.entity_rank = row.slot >= 0 ? entity_caches_[row.slot].rank : 0;
  }
  std::string_view all(labels_);
  std::sort(rows_.begin(), rows_.end(), [all](const Row& a, const Row& b) {
    if (a.family_rank != b.family_rank) {
      return a.family_rank < b.family_rank;
    }
    if (a.entity_rank != b.entity_rank) {
      return a.entity_rank < b.entity_rank;
    }
    return all.substr(a.label_offset, a.label_len) < all.substr(b.label_offset, b.label_len);
  });
}

void TextRenderer::Emit(ExpositionFormat format, std::string* out) const {
  const bool om = format == ExpositionFormat::kOpenMetrics1;
  out->clear();
  size_t estimate = labels_.size() + families_.size() * 160 + 16;
  for (const Row& row : rows_) {
    estimate += 48 + (row.slot >= 0 ? entity_caches_[row.slot].prefix.size() : 0);
  }
  out->reserve(estimate);
  std::string_view all(labels_);
  const Row* prev = nullptr;
  for (const Row& row : rows_) {
    const Family& f = families_[row.family];
    std::string_view own = all.substr(row.label_offset, row.label_len);
    if (prev == nullptr || row.family_rank != prev->family_rank) {
      std::string_view family =
          om ? std::string_view(f.name).substr(0, f.om_family_len) : std::string_view(f.name);
      std::string_view help = f.desc->help.empty() ? f.desc->key : f.desc->help;
      if (om) {
        out->append("# TYPE ").append(family).push_back(' ');
        out->append(f.om_type).push_back('\n');
        if (!f.unit.empty()) {
          out->append("# UNIT ").append(family).push_back(' ');
          out->append(f.unit).push_back('\n');
        }
        out->append("# HELP ").append(family).push_back(' ');
        AppendEscapedHelp(help, true, out);
        out->push_back('\n');
      } else {
        out->append("# HELP ").append(family).push_back(' ');
        AppendEscapedHelp(help, false, out);
        out->append("\n# TYPE ").append(family).push_back(' ');
        out->append(f.type == Family::Type::kCounter ? "counter" : "gauge").push_back('\n');
      }
    } else if (row.entity_rank == prev->entity_rank && (row.slot < 0) == (prev->slot < 0) &&
               own == all.substr(prev->label_offset, prev->label_len)) {
      continue;  // the same series twice (e.g. a reused pid within one window): keep the first
    }
    prev = &row;
    out->append(f.name);
    std::string_view prefix =
        row.slot >= 0 ? std::string_view(entity_caches_[row.slot].prefix) : std::string_view();
    if (!prefix.empty() || !own.empty()) {
      out->push_back('{');
      out->append(prefix);
      if (!prefix.empty() && !own.empty()) {
        out->push_back(',');
      }
      out->append(own);
      out->push_back('}');
    }
    out->push_back(' ');
    AppendDouble(row.value, out);
    out->push_back('\n');
  }
  if (om) {
    out->append("# EOF\n");
  }
}

void TextRenderer::Render(const model::Frame& frame, ExpositionFormat format, std::string* out) {
  Prepare(frame);
  Emit(format, out);
}

void TextRenderer::RenderBoth(const model::Frame& frame, std::string* text,
                              std::string* openmetrics) {
  Prepare(frame);
  Emit(ExpositionFormat::kText004, text);
  Emit(ExpositionFormat::kOpenMetrics1, openmetrics);
}

}  // namespace warpscope::exporters
