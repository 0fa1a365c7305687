// SPDX-License-Identifier: Apache-2.0
#include "server/ingest/remote_write.h"

#include <gtest/gtest.h>
#include <snappy.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "prometheus/remote.pb.h"

namespace warpscope::server {
namespace {

constexpr int64_t kT0Ms = 1'700'000'000'000;

prometheus::TimeSeries* AddSeries(prometheus::WriteRequest& req,
                                  std::vector<std::pair<std::string, std::string>> labels) {
  auto* ts = req.add_timeseries();
  for (const auto& [k, v] : labels) {
    auto* l = ts->add_labels();
    l->set_name(k);
    l->set_value(v);
  }
  return ts;
}

void AddSample(prometheus::TimeSeries* ts, double value, int64_t ms) {
  auto* s = ts->add_samples();
  s->set_value(value);
  s->set_timestamp(ms);
}

std::string Compress(const prometheus::WriteRequest& req) {
  std::string out;
  snappy::Compress(req.SerializeAsString().data(), req.ByteSizeLong(), &out);
  return out;
}

double StaleMarker() {
  double v = 0;
  uint64_t bits = kStaleMarkerBits;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

TEST(RemoteWriteTest, GroupsSamplesByHostAndTimestamp) {
  prometheus::WriteRequest req;
  auto* up = AddSeries(req, {{"__name__", "up"}, {"instance", "node1:9100"}, {"job", "node"}});
  AddSample(up, 1, kT0Ms);
  AddSample(up, 1, kT0Ms + 15000);
  auto* total = AddSeries(req, {{"__name__", "node_cpu_seconds_total"},
                                {"cpu", "0"},
                                {"instance", "node1:9100"},
                                {"mode", "idle"}});
  AddSample(total, 123.5, kT0Ms);
  auto* other = AddSeries(req, {{"__name__", "up"}, {"instance", "node2:9100"}});
  AddSample(other, 0, kT0Ms);

  auto decoded = DecodeRemoteWrite(Compress(req), {});
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(decoded->samples, 4u);
  ASSERT_EQ(decoded->batches.size(), 3u);
  const IngestBatch& b = decoded->batches[0];
  EXPECT_EQ(b.host, "node1:9100");
  EXPECT_EQ(b.agent_id, "remote-write/node1:9100");
  EXPECT_EQ(base::ToUnixMillis(b.start), kT0Ms);
  EXPECT_EQ(b.start, b.end);
  ASSERT_EQ(b.series.size(), 2u);
  EXPECT_EQ(b.series[0].metric, "up");
  EXPECT_EQ(b.series[0].entity, "node1:9100");
  EXPECT_EQ(b.series[0].labels, (model::Labels{{"job", "node"}}));
  EXPECT_EQ(b.series[1].labels, (model::Labels{{"cpu", "0"}, {"mode", "idle"}}));
  EXPECT_DOUBLE_EQ(b.series[1].avg, 123.5);
  EXPECT_DOUBLE_EQ(b.series[1].max, 123.5);
  EXPECT_EQ(b.series[1].count, 1u);
  ASSERT_EQ(b.metrics.size(), 2u);
  EXPECT_EQ(b.metrics[0].kind, model::MetricKind::kGauge);
  EXPECT_EQ(b.metrics[1].key, "node_cpu_seconds_total");
  EXPECT_EQ(b.metrics[1].kind, model::MetricKind::kCounter);
  EXPECT_EQ(b.metrics[1].prom_name, "node_cpu_seconds_total");
  EXPECT_EQ(base::ToUnixMillis(decoded->batches[1].start), kT0Ms + 15000);
  EXPECT_EQ(decoded->batches[2].host, "node2:9100");
}

TEST(RemoteWriteTest, HostLabelPreferenceAndDefaultHost) {
  prometheus::WriteRequest req;
  AddSample(
      AddSeries(req,
                {{"Hostname", "gpu-node"}, {"__name__", "DCGM_FI_DEV_GPU_UTIL"}, {"gpu", "0"}}),
      50, kT0Ms);
  AddSample(AddSeries(req, {{"__name__", "a"}, {"host", "h"}, {"instance", "i:1"}}), 1, kT0Ms);
  AddSample(AddSeries(req, {{"__name__", "b"}, {"job", "j"}}), 2, kT0Ms);
  RemoteWriteOptions options;
  options.default_host = "fallback";
  auto decoded = DecodeRemoteWrite(Compress(req), options);
  ASSERT_TRUE(decoded) << decoded.error().message();
  ASSERT_EQ(decoded->batches.size(), 3u);
  EXPECT_EQ(decoded->batches[0].host, "fallback");
  EXPECT_EQ(decoded->batches[1].host, "gpu-node");
  EXPECT_EQ(decoded->batches[1].series[0].labels, (model::Labels{{"gpu", "0"}}));
  EXPECT_EQ(decoded->batches[2].host, "i:1");
  EXPECT_EQ(decoded->batches[2].series[0].labels, (model::Labels{{"host", "h"}}));
}

TEST(RemoteWriteTest, MissingNameIsAnErrorNamingTheSeries) {
  prometheus::WriteRequest req;
  AddSample(AddSeries(req, {{"instance", "n:1"}, {"job", "x"}}), 1, kT0Ms);
  auto decoded = DecodeRemoteWrite(Compress(req), {});
  ASSERT_FALSE(decoded);
  EXPECT_EQ(decoded.error().code(), base::StatusCode::kInvalidArgument);
  EXPECT_NE(decoded.error().message().find("__name__"), std::string::npos);
  EXPECT_NE(decoded.error().message().find("job=\"x\""), std::string::npos);
}

TEST(RemoteWriteTest, UnsortedOrRepeatedLabelsAreErrors) {
  prometheus::WriteRequest unsorted;
  AddSample(AddSeries(unsorted, {{"__name__", "up"}, {"job", "x"}, {"instance", "n:1"}}), 1, kT0Ms);
  auto a = DecodeRemoteWrite(Compress(unsorted), {});
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message().find("up{"), std::string::npos) << a.error().message();
  EXPECT_NE(a.error().message().find("sorted"), std::string::npos);

  prometheus::WriteRequest repeated;
  AddSample(AddSeries(repeated, {{"__name__", "up"}, {"job", "x"}, {"job", "y"}}), 1, kT0Ms);
  auto b = DecodeRemoteWrite(Compress(repeated), {});
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message().find("repeats"), std::string::npos) << b.error().message();

  prometheus::WriteRequest empty_name;
  AddSample(AddSeries(empty_name, {{"", "v"}, {"__name__", "up"}}), 1, kT0Ms);
  EXPECT_FALSE(DecodeRemoteWrite(Compress(empty_name), {}));
}

TEST(RemoteWriteTest, StaleMarkersAndNonFiniteValuesAreSkippedAndCounted) {
  prometheus::WriteRequest req;
  auto* ts = AddSeries(req, {{"__name__", "up"}, {"instance", "n:1"}});
  AddSample(ts, 1, kT0Ms);
  AddSample(ts, StaleMarker(), kT0Ms + 1000);
  AddSample(ts, std::numeric_limits<double>::quiet_NaN(), kT0Ms + 2000);
  AddSample(ts, std::numeric_limits<double>::infinity(), kT0Ms + 3000);
  AddSample(ts, 5, kT0Ms);  // repeated timestamp
  AddSample(ts, 5, -1);     // before 1970
  auto decoded = DecodeRemoteWrite(Compress(req), {});
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(decoded->stale_markers, 1u);
  EXPECT_EQ(decoded->rejected_samples, 4u);
  EXPECT_NE(decoded->first_rejection.find("up{"), std::string::npos);
  EXPECT_EQ(decoded->samples, 1u);
  ASSERT_EQ(decoded->batches.size(), 1u);
}

TEST(RemoteWriteTest, BadCompressionAndBadProtobufAreInvalidArgument) {
  auto not_snappy = DecodeRemoteWrite("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", {});
  ASSERT_FALSE(not_snappy);
  EXPECT_EQ(not_snappy.error().code(), base::StatusCode::kInvalidArgument);
  EXPECT_NE(not_snappy.error().message().find("snappy"), std::string::npos);

  std::string garbage;
  std::string raw = "\xff\xff\xff not a protobuf";
  snappy::Compress(raw.data(), raw.size(), &garbage);
  auto not_proto = DecodeRemoteWrite(garbage, {});
  ASSERT_FALSE(not_proto);
  EXPECT_NE(not_proto.error().message().find("WriteRequest"), std::string::npos);
}

TEST(RemoteWriteTest, TooLargeAfterDecompressionIsResourceExhausted) {
  prometheus::WriteRequest req;
  auto* ts = AddSeries(req, {{"__name__", "up"}});
  for (int i = 0; i < 1000; ++i) AddSample(ts, i, kT0Ms + i);
  RemoteWriteOptions options;
  options.max_uncompressed_bytes = 1000;
  auto decoded = DecodeRemoteWrite(Compress(req), options);
  ASSERT_FALSE(decoded);
  EXPECT_EQ(decoded.error().code(), base::StatusCode::kResourceExhausted);
}

TEST(RemoteWriteTest, RetriedRequestHasTheSameSequences) {
  prometheus::WriteRequest req;
  AddSample(AddSeries(req, {{"__name__", "up"}, {"instance", "n:1"}}), 1, kT0Ms);
  auto first = DecodeRemoteWrite(Compress(req), {});
  auto retry = DecodeRemoteWriteProto(req.SerializeAsString(), {});
  req.mutable_timeseries(0)->mutable_samples(0)->set_value(2);
  auto changed = DecodeRemoteWrite(Compress(req), {});
  ASSERT_TRUE(first && retry && changed);
  EXPECT_EQ(first->batches[0].sequence, retry->batches[0].sequence);
  EXPECT_NE(first->batches[0].sequence, changed->batches[0].sequence);
}

// Two series entries with the same labels (senders merge nothing): a batch holds each series
// once, so the second sample of a (series, timestamp) is rejected as a repeat, as one repeated
// inside a series is.
TEST(RemoteWriteTest, ASampleRepeatedInAnotherEntryOfTheSameSeriesIsRejected) {
  prometheus::WriteRequest req;
  const std::vector<std::pair<std::string, std::string>> labels = {
      {"__name__", "up"}, {"instance", "n:1"}, {"job", "x"}};
  AddSample(AddSeries(req, labels), 1, kT0Ms);
  AddSample(AddSeries(req, labels), 2, kT0Ms);
  AddSample(AddSeries(req, labels), 3, kT0Ms + 15'000);
  AddSample(AddSeries(req, {{"__name__", "up"}, {"instance", "n:1"}, {"job", "y"}}), 4, kT0Ms);
  auto decoded = DecodeRemoteWriteProto(req.SerializeAsString(), {});
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(decoded->samples, 3u);
  EXPECT_EQ(decoded->rejected_samples, 1u);
  EXPECT_NE(decoded->first_rejection.find("repeats"), std::string::npos)
      << decoded->first_rejection;
  ASSERT_EQ(decoded->batches.size(), 2u);
  ASSERT_EQ(decoded->batches[0].series.size(), 2u);
  EXPECT_EQ(decoded->batches[0].series[0].last, 1) << "the first sample is kept";
  EXPECT_EQ(decoded->batches[0].series[1].labels.Get("job"), "y");
}

// A length-delimited field of a message, for payloads under 128 bytes.
std::string Field(int number, std::string_view payload) {
  std::string out;
  out += static_cast<char>(number << 3 | 2);
  out += static_cast<char>(payload.size());
  out += payload;
  return out;
}

// A varint field with a value under 128.
std::string VarintField(int number, int value) {
  return std::string{static_cast<char>(number << 3), static_cast<char>(value)};
}

TEST(RemoteWriteTest, FieldsItDoesNotReadAreSkippedAtEveryLevel) {
  prometheus::Sample sample;
  sample.set_value(2.5);
  sample.set_timestamp(kT0Ms);
  // Fields 3 and 4 of TimeSeries are exemplars and native histograms, field 3 of WriteRequest
  // is metadata; 7 and 9 are numbers no version of the format uses.
  const std::string series = Field(1, Field(1, "__name__") + Field(2, "up") + VarintField(7, 1)) +
                             Field(3, Field(1, Field(1, "trace_id") + Field(2, "abc"))) +
                             Field(1, Field(1, "instance") + Field(2, "n:1")) +
                             Field(2, sample.SerializeAsString() + VarintField(9, 3)) +
                             Field(4, VarintField(1, 5));
  const std::string request =
      Field(3, VarintField(1, 1) + Field(2, "up")) + Field(1, series) + VarintField(9, 4);
  prometheus::WriteRequest check;
  ASSERT_TRUE(check.ParseFromString(request)) << "the test's bytes are a WriteRequest";

  auto decoded = DecodeRemoteWriteProto(request, {});
  ASSERT_TRUE(decoded) << decoded.error().message();
  ASSERT_EQ(decoded->batches.size(), 1u);
  EXPECT_EQ(decoded->batches[0].host, "n:1");
  ASSERT_EQ(decoded->batches[0].series.size(), 1u);
  EXPECT_EQ(decoded->batches[0].series[0].metric, "up");
  EXPECT_EQ(decoded->batches[0].series[0].last, 2.5);
  EXPECT_TRUE(decoded->batches[0].series[0].labels.empty());
}

TEST(RemoteWriteTest, TruncatedBytesAndLabelsThatAreNotUtf8AreNotAWriteRequest) {
  prometheus::WriteRequest req;
  AddSample(AddSeries(req, {{"__name__", "up"}, {"instance", "n:1"}}), 1, kT0Ms);
  const std::string bytes = req.SerializeAsString();
  for (size_t cut : {size_t{1}, size_t{5}, bytes.size() - 3}) {
    auto truncated =
        DecodeRemoteWriteProto(std::string_view(bytes).substr(0, bytes.size() - cut), {});
    ASSERT_FALSE(truncated) << "cut " << cut;
    EXPECT_NE(truncated.error().message().find("is not a valid protobuf prometheus.WriteRequest"),
              std::string::npos)
        << truncated.error().message();
  }
  const std::string not_utf8 =
      Field(1, Field(1, Field(1, "__name__") + Field(2, "up\xff")) + Field(2, ""));
  auto refused = DecodeRemoteWriteProto(not_utf8, {});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("not valid UTF-8"), std::string::npos);
}

// Malformed bytes after a series without a name: the request is reported as not a WriteRequest,
// as it was when the whole request was parsed before any series was looked at.
TEST(RemoteWriteTest, MalformedBytesAnywhereWinOverASeriesError) {
  prometheus::WriteRequest req;
  AddSample(AddSeries(req, {{"job", "x"}}), 1, kT0Ms);
  const std::string bytes = req.SerializeAsString() + "\x0a\x7f";  // a series past the end
  auto decoded = DecodeRemoteWriteProto(bytes, {});
  ASSERT_FALSE(decoded);
  EXPECT_NE(decoded.error().message().find("is not a valid protobuf"), std::string::npos)
      << decoded.error().message();
}

TEST(RemoteWriteTest, VersionHeader) {
  EXPECT_TRUE(CheckRemoteWriteVersion("").ok());
  EXPECT_TRUE(CheckRemoteWriteVersion("0.1.0").ok());
  base::Status v2 = CheckRemoteWriteVersion("2.0.0");
  EXPECT_FALSE(v2.ok());
  EXPECT_NE(v2.message().find("2.0.0"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::server
