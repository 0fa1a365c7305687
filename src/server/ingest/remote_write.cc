// SPDX-License-Identifier: Apache-2.0
#include "server/ingest/remote_write.h"

#include <fmt/format.h>
#include <google/protobuf/arena.h>
#include <snappy.h>

#include <climits>
#include <iterator>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "prometheus/remote.pb.h"
#include "server/ingest/content_sequence.h"
#include "server/ingest/request_body.h"

namespace warpscope::server {
namespace {

using base::Error;
using base::InvalidArgument;
using base::Result;
using ingest_internal::ContentSequence;

// Labels that name the host of a series, in order of preference.
constexpr std::string_view kHostLabels[] = {"instance", "host", "Hostname"};
constexpr std::string_view kNameLabel = "__name__";
constexpr BodyMessage kRequestBody{
    .what = "remote write",
    .size_note = " uncompressed",
    .protobuf = "protobuf prometheus.WriteRequest (remote write 1.0), or a label in it is not "
                "valid UTF-8",
    .json = ""};
// |ms| above this overflows nanoseconds in int64.
constexpr int64_t kMaxTimestampMs = INT64_MAX / 1'000'000;

// `name{k="v", ...}` for messages, at most ~200 bytes.
std::string SeriesName(const prometheus::TimeSeries& ts) {
  std::string name;
  std::string labels;
  for (const prometheus::Label& l : ts.labels()) {
    if (l.name() == kNameLabel) {
      name = l.value();
      continue;
    }
    if (!labels.empty()) {
      labels += ", ";
    }
    labels += fmt::format("{}=\"{}\"", l.name(), l.value());
  }
  std::string out = fmt::format("{}{{{}}}", name, labels);
  if (out.size() > 200) {
    out.resize(200);
    out += "...";
  }
  return out;
}

bool IsStaleMarker(double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits == kStaleMarkerBits;
}

struct Group {
  std::vector<MetricInfo> metrics;
  std::set<std::string> metric_keys;
  std::vector<IngestSeries> series;
};

Result<DecodedRemoteWrite> Convert(const prometheus::WriteRequest& req,
                                   const RemoteWriteOptions& options) {
  DecodedRemoteWrite out;
  auto reject = [&out](const std::string& series, std::string_view why) {
    if (out.rejected_samples == 0) {
      out.first_rejection = fmt::format("remote write: series {}: {}", series, why);
    }
    ++out.rejected_samples;
  };
  std::map<std::pair<std::string, int64_t>, Group> groups;  // by (host, timestamp ms)
  // Consecutive series mostly share host and timestamp: remember the last group.
  Group* last_group = nullptr;
  std::pair<std::string, int64_t> last_key;
  std::set<int64_t> seen;
  for (int i = 0; i < req.timeseries_size(); ++i) {
    const prometheus::TimeSeries& ts = req.timeseries(i);
    // Validate the labels and find the metric name and the host label first, so that the series'
    // labels are built once, in order, without the host label.
    const std::string* name = nullptr;
    int host_label = -1;
    size_t host_rank = std::size(kHostLabels);
    for (int j = 0; j < ts.labels_size(); ++j) {
      const prometheus::Label& l = ts.labels(j);
      if (l.name().empty()) {
        return Error(InvalidArgument(
            "remote write: series {} ({}) has a label with an empty name; fix the sender's "
            "relabeling",
            i, SeriesName(ts)));
      }
      if (j > 0 && l.name() <= ts.labels(j - 1).name()) {
        const std::string& previous = ts.labels(j - 1).name();
        return Error(InvalidArgument(
            "remote write: series {} ({}): label \"{}\" {} \"{}\"; labels must be sorted by name "
            "and unique",
            i, SeriesName(ts), l.name(), l.name() == previous ? "repeats" : "comes after",
            previous));
      }
      if (l.name() == kNameLabel) {
        name = &l.value();
      } else if (!l.value().empty()) {
        for (size_t r = 0; r < host_rank; ++r) {
          if (l.name() == kHostLabels[r]) {
            host_rank = r;
            host_label = j;
            break;
          }
        }
      }
    }
    if (name == nullptr || name->empty()) {
      return Error(InvalidArgument(
          "remote write: series {} ({}) has no __name__ label; every series needs a metric name", i,
          SeriesName(ts)));
    }
    const std::string& host =
        host_label >= 0 ? ts.labels(host_label).value() : options.default_host;
    model::Labels labels;
    for (int j = 0; j < ts.labels_size(); ++j) {
      const prometheus::Label& l = ts.labels(j);
      if (j != host_label && !l.value().empty() && l.name() != kNameLabel) {
        labels.Set(l.name(), l.value());  // sorted input: appends
      }
    }

    seen.clear();
    for (int k = 0; k < ts.samples_size(); ++k) {
      const prometheus::Sample& sample = ts.samples(k);
      if (IsStaleMarker(sample.value())) {
        ++out.stale_markers;
        continue;
      }
      if (!std::isfinite(sample.value())) {
        reject(SeriesName(ts), "a value is not a finite number");
        continue;
      }
      if (sample.timestamp() <= 0 || sample.timestamp() > kMaxTimestampMs) {
        reject(SeriesName(ts), fmt::format("timestamp {} ms is out of range", sample.timestamp()));
        continue;
      }
      if (ts.samples_size() > 1 && !seen.insert(sample.timestamp()).second) {
        reject(SeriesName(ts), fmt::format("timestamp {} ms repeats", sample.timestamp()));
        continue;
      }
      if (last_group == nullptr || last_key.second != sample.timestamp() ||
          last_key.first != host) {
        last_key = {host, sample.timestamp()};
        last_group = &groups[last_key];
      }
      Group& g = *last_group;
      if (g.metric_keys.insert(*name).second) {
        MetricInfo info;
        info.key = *name;
        info.kind = name->size() > 6 && name->compare(name->size() - 6, 6, "_total") == 0
                        ? model::MetricKind::kCounter
                        : model::MetricKind::kGauge;
        info.prom_name = *name;
        info.entity_kind = model::EntityKind::kHost;
        g.metrics.push_back(std::move(info));
      }
      IngestSeries s;
      s.metric = *name;
      s.entity = host;
      // The last sample of a series takes the labels; earlier ones copy them.
      s.labels = k + 1 == ts.samples_size() ? std::move(labels) : labels;
      s.avg = s.min = s.max = s.last = sample.value();
      s.count = 1;
      g.series.push_back(std::move(s));
      ++out.samples;
    }
  }
  out.batches.reserve(groups.size());
  for (auto& [key, g] : groups) {
    IngestBatch b;
    b.agent_id = "remote-write/" + key.first;
    b.host = key.first;
    b.start = b.end = base::FromUnixNanos(key.second * 1'000'000);
    b.metrics = std::move(g.metrics);
    b.series = std::move(g.series);
    b.sequence = ContentSequence(b);
    out.batches.push_back(std::move(b));
  }
  return out;
}

}  // namespace

Result<DecodedRemoteWrite> DecodeRemoteWriteProto(std::string_view bytes,
                                                  const RemoteWriteOptions& options) {
  // An arena frees the request's thousands of small messages at once.
  google::protobuf::Arena arena;
  auto* req = google::protobuf::Arena::CreateMessage<prometheus::WriteRequest>(&arena);
  WARPSCOPE_RETURN_IF_ERROR(ParseProtobufBody(bytes, *req, kRequestBody));
  return Convert(*req, options);
}

Result<DecodedRemoteWrite> DecodeRemoteWrite(std::string_view snappy_body,
                                             const RemoteWriteOptions& options) {
  size_t length = 0;
  if (!snappy::GetUncompressedLength(snappy_body.data(), snappy_body.size(), &length)) {
    return Error(InvalidArgument(
        "remote write: the body ({} bytes) is not snappy block-compressed data; send "
        "Content-Encoding: snappy with the snappy block format (not the framed/stream format)",
        snappy_body.size()));
  }
  if (length > options.max_uncompressed_bytes) {
    return Error(base::ErrStatus(
        base::StatusCode::kResourceExhausted,
        "remote write: the body decompresses to {} bytes, more than the limit of {}; lower the "
        "sender's queue_config.max_samples_per_send or raise --max-body-bytes",
        length, options.max_uncompressed_bytes));
  }
  std::string raw;
  if (!snappy::Uncompress(snappy_body.data(), snappy_body.size(), &raw)) {
    return Error(
        InvalidArgument("remote write: the body ({} bytes) is corrupt snappy block-compressed data",
                        snappy_body.size()));
  }
  return DecodeRemoteWriteProto(raw, options);
}

base::Status CheckRemoteWriteVersion(std::string_view header) {
  if (header.empty() || header.substr(0, 2) == "0." || header.substr(0, 2) == "1.") {
    return base::OkStatus();
  }
  return InvalidArgument(
      "remote write version \"{}\" is not supported: this server receives remote write 1.0 "
      "(X-Prometheus-Remote-Write-Version: 0.1.0, prometheus.WriteRequest); configure the sender "
      "for remote write 1.0",
      header);
}

}  // namespace warpscope::server
