// SPDX-License-Identifier: Apache-2.0
#include "server/ingest/remote_write.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/stubs/common.h>
#include <google/protobuf/wire_format_lite.h>
#include <snappy.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "server/ingest/content_sequence.h"

namespace warpscope::server {
namespace {

using base::Error;
using base::InvalidArgument;
using base::Result;
using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;
using ingest_internal::Hasher;

// Labels that name the host of a series, in order of preference.
constexpr std::string_view kHostLabels[] = {"instance", "host", "Hostname"};
constexpr std::string_view kNameLabel = "__name__";
// |ms| above this overflows nanoseconds in int64.
constexpr int64_t kMaxTimestampMs = INT64_MAX / 1'000'000;

// A label or sample of one series, read in place from the request's bytes.
struct LabelView {
  std::string_view name;
  std::string_view value;
};
struct SampleView {
  double value = 0;
  int64_t timestamp = 0;
};

// Reads prometheus.WriteRequest (proto/prometheus/remote.proto) with protobuf's wire reader
// rather than generated messages: labels stay views into the request and a series' vectors are
// reused, where a parsed message allocated every label string and message (a third of the
// server's CPU under remote-write load). Unknown fields (metadata, exemplars, histograms) are
// skipped as protobuf skips them; strings must be UTF-8, as proto3 requires.
class WriteRequestReader {
 public:
  explicit WriteRequestReader(std::string_view bytes)
      : in_(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size())),
        size_(bytes.size()) {}

  // Reads the next TimeSeries into labels() and samples(); false at the end of the request or
  // on malformed bytes (then ok() is false).
  bool Next() {
    labels_.clear();
    samples_.clear();
    while (true) {
      const uint32_t tag = ReadTag();
      if (tag == 0) {
        ok_ = Ended();  // the end, not a zero or overlong tag
        return false;
      }
      if (tag == Tag(1, WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
        ok_ = Message([this] { return TimeSeries(); });
        return ok_;
      }
      if (!WireFormatLite::SkipField(&in_, tag)) {
        ok_ = false;
        return false;
      }
    }
  }
  bool ok() const { return ok_; }
  const std::vector<LabelView>& labels() const { return labels_; }
  const std::vector<SampleView>& samples() const { return samples_; }

 private:
  static constexpr uint32_t Tag(int field, WireFormatLite::WireType type) {
    return static_cast<uint32_t>(field << 3) | static_cast<uint32_t>(type);
  }

  // CodedInputStream::ReadTag() reads a tag of up to 10 bytes; protobuf's parser refuses one
  // of more than 5 (and keeps the low 32 bits of a 5-byte one), and so does this: it returns 0,
  // malformed.
  uint32_t ReadTag() {
    const void* data = nullptr;
    int size = 0;
    in_.GetDirectBufferPointerInline(&data, &size);
    const auto* p = static_cast<const uint8_t*>(data);
    int continued = 0;
    while (continued < std::min(size, 5) && (p[continued] & 0x80) != 0) {
      ++continued;
    }
    if (continued == 5) {
      bad_tag_ = true;
      return 0;
    }
    return in_.ReadTag();
  }
  bool Ended() { return !bad_tag_ && in_.ConsumedEntireMessage(); }

  // Bytes left in the enclosing message, or in the request at the top level.
  int Left() {
    const int in_request = static_cast<int>(size_) - in_.CurrentPosition();
    const int in_message = in_.BytesUntilLimit();
    return in_message >= 0 ? std::min(in_message, in_request) : in_request;
  }

  // Reads one length-delimited message with `body`, which reads fields until ReadTag() returns 0
  // (at the limit when Ended(), else at a zero or overlong tag: malformed). The
  // length is checked against what is left: PushLimit clamps a limit past the enclosing one.
  template <typename Body>
  bool Message(const Body& body) {
    int length = 0;
    if (!in_.ReadVarintSizeAsInt(&length) || length > Left()) {
      return false;
    }
    const CodedInputStream::Limit limit = in_.PushLimit(length);
    const bool read = body() && Ended();
    in_.PopLimit(limit);
    return read;
  }

  // Reads fields until ReadTag() returns 0: `known(tag)` reads a field it knows and says
  // whether that worked, or returns nullopt for a field to skip.
  template <typename Known>
  bool Fields(const Known& known) {
    while (const uint32_t tag = ReadTag()) {
      const std::optional<bool> read = known(tag);
      if (!(read.has_value() ? *read : WireFormatLite::SkipField(&in_, tag))) {
        return false;
      }
    }
    return true;
  }

  bool TimeSeries() {
    return Fields([this](uint32_t tag) -> std::optional<bool> {
      if (tag == Tag(1, WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
        return Message([this] { return Label(labels_.emplace_back()); });
      }
      if (tag == Tag(2, WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
        return Message([this] { return Sample(samples_.emplace_back()); });
      }
      return std::nullopt;
    });
  }

  bool Label(LabelView& label) {
    return Fields([&](uint32_t tag) -> std::optional<bool> {
      if (tag == Tag(1, WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
        return Utf8String(label.name);
      }
      if (tag == Tag(2, WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
        return Utf8String(label.value);
      }
      return std::nullopt;
    });
  }

  bool Sample(SampleView& sample) {
    return Fields([&](uint32_t tag) -> std::optional<bool> {
      if (tag == Tag(1, WireFormatLite::WIRETYPE_FIXED64)) {
        uint64_t bits = 0;
        const bool read = in_.ReadLittleEndian64(&bits);
        std::memcpy(&sample.value, &bits, sizeof(bits));
        return read;
      }
      if (tag == Tag(2, WireFormatLite::WIRETYPE_VARINT)) {
        uint64_t v = 0;
        const bool read = in_.ReadVarint64(&v);
        sample.timestamp = static_cast<int64_t>(v);
        return read;
      }
      return std::nullopt;
    });
  }

  // A string field's bytes, in place (the stream reads from one flat array).
  bool Utf8String(std::string_view& out) {
    int length = 0;
    if (!in_.ReadVarintSizeAsInt(&length)) {
      return false;
    }
    const void* data = nullptr;
    int available = 0;
    if (length > 0 && (!in_.GetDirectBufferPointer(&data, &available) || available < length)) {
      return false;
    }
    out = std::string_view(static_cast<const char*>(data), static_cast<size_t>(length));
    return in_.Skip(length) && google::protobuf::internal::IsStructurallyValidUTF8(
                                   out.data(), static_cast<int>(out.size()));
  }

  CodedInputStream in_;
  const size_t size_;
  bool ok_ = true;
  bool bad_tag_ = false;
  std::vector<LabelView> labels_;
  std::vector<SampleView> samples_;
};

// `name{k="v", ...}` for messages, at most ~200 bytes.
std::string SeriesName(const std::vector<LabelView>& series) {
  std::string_view name;
  std::string labels;
  for (const LabelView& l : series) {
    if (l.name == kNameLabel) {
      name = l.value;
      continue;
    }
    if (!labels.empty()) {
      labels += ", ";
    }
    labels += fmt::format("{}=\"{}\"", l.name, l.value);
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

// The samples of one (host, timestamp): one batch.
struct Group {
  std::vector<MetricInfo> metrics;
  std::unordered_set<std::string_view> metric_keys;  // views into the request or `metrics`
  std::vector<IngestSeries> series;
  std::unordered_map<uint64_t, size_t> by_identity;  // series identity hash -> index in series
  Hasher content;  // the series' identities and values, in order: the batch's sequence

  // True when the group holds the series (metric `name`, `labels`) already: a repeated sample.
  bool Holds(uint64_t identity, std::string_view name, const model::Labels& labels) const {
    auto same = [&](const IngestSeries& s) { return s.metric == name && s.labels == labels; };
    auto it = by_identity.find(identity);
    if (it == by_identity.end()) {
      return false;
    }
    // Equal hashes of different series (unlikely) are told apart by a full scan.
    return same(series[it->second]) || std::any_of(series.begin(), series.end(), same);
  }
};

// The hash of a series' metric name and labels (not its host: a group has one).
uint64_t SeriesIdentity(std::string_view name, const model::Labels& labels) {
  Hasher h;
  h.Add(name);
  h.AddLabels(labels);
  return h.value();
}

// A group's sequence: the content hash of its batch (content_sequence.h), built from the series
// hashes computed once while converting rather than from the batch's strings again.
uint64_t GroupSequence(const IngestBatch& b, const Group& g) {
  Hasher h;
  h.Add(b.agent_id);
  h.Add(b.host);
  h.AddU64(static_cast<uint64_t>(base::ToUnixNanos(b.start)));
  h.AddU64(b.metrics.size());
  for (const MetricInfo& m : b.metrics) {
    h.Add(m.key);
    h.AddU64(static_cast<uint64_t>(m.kind));
  }
  h.AddU64(b.series.size());
  h.AddU64(g.content.value());
  return h.value();
}

// A series' metric name and host label, after checking its labels; `index` numbers the series
// in the request for messages.
struct SeriesNames {
  std::string_view name;
  int host_label = -1;  // index into the labels, -1 for none
};

Result<SeriesNames> CheckLabels(const std::vector<LabelView>& labels, uint64_t index) {
  SeriesNames out;
  size_t host_rank = std::size(kHostLabels);
  bool named = false;
  for (size_t j = 0; j < labels.size(); ++j) {
    const LabelView& l = labels[j];
    if (l.name.empty()) {
      return Error(InvalidArgument(
          "remote write: series {} ({}) has a label with an empty name; fix the sender's "
          "relabeling",
          index, SeriesName(labels)));
    }
    if (j > 0 && l.name <= labels[j - 1].name) {
      const std::string_view previous = labels[j - 1].name;
      return Error(InvalidArgument(
          "remote write: series {} ({}): label \"{}\" {} \"{}\"; labels must be sorted by name "
          "and unique",
          index, SeriesName(labels), l.name, l.name == previous ? "repeats" : "comes after",
          previous));
    }
    if (l.name == kNameLabel) {
      out.name = l.value;
      named = true;
    } else if (!l.value.empty()) {
      for (size_t r = 0; r < host_rank; ++r) {
        if (l.name == kHostLabels[r]) {
          host_rank = r;
          out.host_label = static_cast<int>(j);
          break;
        }
      }
    }
  }
  if (!named || out.name.empty()) {
    return Error(InvalidArgument(
        "remote write: series {} ({}) has no __name__ label; every series needs a metric name",
        index, SeriesName(labels)));
  }
  return out;
}

base::Status NotAWriteRequest(std::string_view bytes) {
  return InvalidArgument(
      "remote write: the body ({} bytes uncompressed) is not a valid protobuf "
      "prometheus.WriteRequest (remote write 1.0), or a label in it is not valid UTF-8",
      bytes.size());
}

Result<DecodedRemoteWrite> Convert(std::string_view bytes, const RemoteWriteOptions& options) {
  DecodedRemoteWrite out;
  auto reject = [&out](const std::vector<LabelView>& series, std::string_view why) {
    if (out.rejected_samples == 0) {
      out.first_rejection = fmt::format("remote write: series {}: {}", SeriesName(series), why);
    }
    ++out.rejected_samples;
  };
  // By (host, timestamp ms); the hosts are views into the request or into `options`.
  std::map<std::pair<std::string_view, int64_t>, Group> groups;
  // Consecutive series mostly share host and timestamp: remember the last group.
  Group* last_group = nullptr;
  std::pair<std::string_view, int64_t> last_key;
  WriteRequestReader reader(bytes);
  for (uint64_t index = 0; reader.Next(); ++index) {
    const std::vector<LabelView>& labels_in = reader.labels();
    const std::vector<SampleView>& samples = reader.samples();
    Result<SeriesNames> checked = CheckLabels(labels_in, index);
    if (!checked) {
      // Bytes that are not a WriteRequest at all are reported as such, wherever they are.
      while (reader.Next()) {
      }
      return reader.ok() ? Error(checked.error()) : Error(NotAWriteRequest(bytes));
    }
    const SeriesNames names = *checked;
    const std::string_view name = names.name;
    const std::string_view host = names.host_label >= 0
                                      ? labels_in[static_cast<size_t>(names.host_label)].value
                                      : std::string_view(options.default_host);
    model::Labels labels;
    labels.Reserve(labels_in.size());
    for (size_t j = 0; j < labels_in.size(); ++j) {
      const LabelView& l = labels_in[j];
      if (static_cast<int>(j) != names.host_label && !l.value.empty() && l.name != kNameLabel) {
        labels.Set(l.name, l.value);  // sorted input: appends
      }
    }
    const uint64_t identity = SeriesIdentity(name, labels);

    for (size_t k = 0; k < samples.size(); ++k) {
      const SampleView& sample = samples[k];
      if (IsStaleMarker(sample.value)) {
        ++out.stale_markers;
        continue;
      }
      if (!std::isfinite(sample.value)) {
        reject(labels_in, "a value is not a finite number");
        continue;
      }
      if (sample.timestamp <= 0 || sample.timestamp > kMaxTimestampMs) {
        reject(labels_in, fmt::format("timestamp {} ms is out of range", sample.timestamp));
        continue;
      }
      if (last_group == nullptr || last_key.second != sample.timestamp || last_key.first != host) {
        last_key = {host, sample.timestamp};
        last_group = &groups[last_key];
      }
      Group& g = *last_group;
      // In one series or in a later one with the same labels: the first sample is kept.
      if (g.Holds(identity, name, labels)) {
        reject(labels_in, fmt::format("timestamp {} ms repeats", sample.timestamp));
        continue;
      }
      if (g.metric_keys.insert(name).second) {
        MetricInfo info;
        info.key = std::string(name);
        info.kind = name.ends_with("_total") && name.size() > 6 ? model::MetricKind::kCounter
                                                                : model::MetricKind::kGauge;
        info.prom_name = info.key;
        info.entity_kind = model::EntityKind::kHost;
        g.metrics.push_back(std::move(info));
      }
      IngestSeries s;
      s.metric = std::string(name);
      s.entity = std::string(host);
      // The last sample of a series takes the labels; earlier ones copy them.
      s.labels = k + 1 == samples.size() ? std::move(labels) : labels;
      s.avg = s.min = s.max = s.last = sample.value;
      s.count = 1;
      g.by_identity.emplace(identity, g.series.size());
      g.content.AddU64(identity);
      g.content.AddDouble(sample.value);
      g.series.push_back(std::move(s));
      ++out.samples;
    }
  }
  if (!reader.ok()) {
    return Error(NotAWriteRequest(bytes));
  }
  out.batches.reserve(groups.size());
  for (auto& [key, g] : groups) {
    IngestBatch b;
    b.host = std::string(key.first);
    b.agent_id = "remote-write/" + b.host;
    b.start = b.end = base::FromUnixNanos(key.second * 1'000'000);
    b.metrics = std::move(g.metrics);
    b.series = std::move(g.series);
    b.sequence = GroupSequence(b, g);
    out.batches.push_back(std::move(b));
  }
  return out;
}

}  // namespace

Result<DecodedRemoteWrite> DecodeRemoteWriteProto(std::string_view bytes,
                                                  const RemoteWriteOptions& options) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    return Error(InvalidArgument("remote write: {} bytes is too large to decode", bytes.size()));
  }
  return Convert(bytes, options);
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
  // Not zero-filled first, as std::string::resize would (5 % of the server's CPU under load).
  std::unique_ptr<char[]> raw(new char[std::max<size_t>(length, 1)]);
  if (!snappy::RawUncompress(snappy_body.data(), snappy_body.size(), raw.get())) {
    return Error(
        InvalidArgument("remote write: the body ({} bytes) is corrupt snappy block-compressed data",
                        snappy_body.size()));
  }
  return DecodeRemoteWriteProto(std::string_view(raw.get(), length), options);
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
