// SPDX-License-Identifier: Apache-2.0
// ApiServer's ingest endpoints: native agent batches, profiles, OTLP/HTTP metrics (and the
// store of OTLP metrics decoded by the gRPC receiver) and Prometheus remote write. Each checks the token and the request's headers, decodes the body
// with server/ingest and writes the result to the Storage.
#include <fmt/format.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>

#include "base/logging.h"
#include "server/api/api_server.h"
#include "server/api/http_reply.h"
#include "server/ingest/native_batch.h"
#include "server/ingest/otlp_metrics.h"
#include "server/ingest/remote_write.h"
#include "server/ingest/request_body.h"
#include "server/query/query_params.h"
#include "warpscope/v1/batch.pb.h"

namespace warpscope::server {

using api_internal::HttpStatusFor;
using api_internal::ParamsOf;
using api_internal::SendError;
using api_internal::SendJson;
using nlohmann::json;

void ApiServer::Reject(httplib::Response& res, int status, std::string_view message) {
  ++rejected_;
  SendError(res, status, message);
}

void ApiServer::RejectWrite(httplib::Response& res, const base::Status& error) {
  int status = HttpStatusFor(error);
  if (status < 500) {
    ++rejected_;
  }
  SendError(res, status, error.message());
}

base::Status ApiServer::WriteBatches(const std::vector<server::IngestBatch>& batches) {
  server::BatchesWritten written = storage_.WriteBatches(batches);
  for (const server::WriteResult& r : written.results) {
    if (r.duplicate) {
      ++duplicate_batches_;
    }
    series_windows_ += r.stored;
    dropped_series_ += r.dropped_series;
  }
  if (!written.status.ok() && HttpStatusFor(written.status) < 500) {
    ++rejected_;
  }
  return written.status;
}

bool ApiServer::StoreBatches(const std::vector<server::IngestBatch>& batches,
                             httplib::Response& res) {
  base::Status st = WriteBatches(batches);
  if (!st.ok()) {
    SendError(res, HttpStatusFor(st), st.message());
    return false;
  }
  return true;
}

base::Status ApiServer::StoreOtlpMetrics(const DecodedOtlpMetrics& decoded) {
  if (decoded.rejected_points > 0) {
    skipped_points_ += decoded.rejected_points;
    WARPSCOPE_LOG_EVERY_N(WARNING, 100, "OTLP metrics: {} data points left out: {}",
                          decoded.rejected_points, decoded.first_rejection);
  }
  WARPSCOPE_RETURN_IF_ERROR(WriteBatches(decoded.batches));
  ++otlp_requests_;
  return base::OkStatus();
}

void ApiServer::IngestBatch(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, /*ingest=*/true)) {
    return;
  }
  auto encoding = BodyEncodingOf(req.get_header_value("Content-Type"));
  if (!encoding) {
    return Reject(res, 415, encoding.error().message());
  }
  const bool is_json = *encoding == BodyEncoding::kJson;
  auto decoded = is_json ? DecodeNativeBatchJson(req.body) : DecodeNativeBatchProto(req.body);
  if (!decoded) {
    return Reject(res, 400, decoded.error().message());
  }
  if (decoded->rejected_series > 0) {
    WARPSCOPE_LOG_EVERY_N(WARNING, 100, "batch from {}: {} series left out: {}",
                          decoded->batch.agent_id, decoded->rejected_series,
                          decoded->first_rejection);
  }
  const server::IngestBatch& batch = decoded->batch;
  auto written = storage_.WriteBatch(batch);
  if (!written) {
    return RejectWrite(res, written.error());
  }
  if (written->duplicate) {
    ++duplicate_batches_;
  } else {
    ++batches_;
  }
  series_windows_ += written->stored;
  dropped_series_ += written->dropped_series;
  if (is_json || req.get_header_value("Accept").find("application/json") != std::string::npos) {
    SendJson(res, 200,
             json{{"accepted_sequence", batch.sequence},
                  {"duplicate", written->duplicate},
                  {"dropped_series", written->dropped_series}});
    return;
  }
  warpscope::v1::BatchResponse reply;
  reply.set_accepted_sequence(batch.sequence);
  reply.set_duplicate(written->duplicate);
  reply.set_dropped_series(written->dropped_series);
  res.status = 200;
  res.set_content(reply.SerializeAsString(), "application/x-protobuf");
}

void ApiServer::IngestProfile(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, /*ingest=*/true)) {
    return;
  }
  Params params = ParamsOf(req);
  ProfileMeta meta;
  auto host = Param(params, "host");
  auto kind = Param(params, "kind");
  if (!host || host->empty() || !kind || kind->empty()) {
    return Reject(res, 400, "host= and kind= are required (e.g. ?host=node1&kind=cpu)");
  }
  // pprof is gzip-compressed protobuf; accept uncompressed protobuf too.
  if (req.body.empty()) {
    return Reject(res, 400, "empty profile body: send a pprof file (.pb.gz)");
  }
  meta.host = std::string(*host);
  meta.kind = std::string(*kind);
  if (auto e = Param(params, "entity")) {
    meta.entity = std::string(*e);
  }
  if (auto x = Param(params, "executable")) {
    meta.executable = std::string(*x);
  }
  if (auto p = Param(params, "pid")) {
    try {
      meta.pid = std::stoll(std::string(*p));
    } catch (...) {
      return Reject(res, 400, "pid= must be a number");
    }
  }
  auto range = ParseRange(params, clock_.Now(), std::chrono::minutes(1));
  if (!range) {
    return Reject(res, 400, range.error().message());
  }
  meta.start = range->start;
  meta.end = range->end;
  for (const auto& [k, v] : params) {
    if (k.rfind("label.", 0) == 0) {
      meta.labels.Set(k.substr(6), v);
    }
  }
  auto id = storage_.WriteProfile(meta, req.body);
  if (!id) {
    return RejectWrite(res, id.error());
  }
  ++profiles_;
  SendJson(res, 200, json{{"id", *id}});
}

std::optional<BodyEncoding> ApiServer::OtlpBodyEncoding(const httplib::Request& req,
                                                        httplib::Response& res) {
  auto encoding = BodyEncodingOf(req.get_header_value("Content-Type"), " (OTLP/HTTP)");
  if (!encoding) {
    Reject(res, 415, encoding.error().message());
    return std::nullopt;
  }
  // httplib has inflated gzip bodies; check the limit on what was inflated.
  if (req.body.size() > options_.max_body_bytes) {
    Reject(res, 413,
           fmt::format("request body too large: {} bytes after decompression, the limit is "
                       "{}; export smaller batches or raise --max-body-bytes",
                       req.body.size(), options_.max_body_bytes));
    return std::nullopt;
  }
  return *encoding;
}

void ApiServer::OtlpMetrics(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, /*ingest=*/true)) {
    return;
  }
  const std::optional<BodyEncoding> encoding = OtlpBodyEncoding(req, res);
  if (!encoding) return;
  const bool is_json = *encoding == BodyEncoding::kJson;
  auto decoded = is_json ? DecodeOtlpMetricsJson(req.body) : DecodeOtlpMetricsProto(req.body);
  if (!decoded) {
    return Reject(res, 400, decoded.error().message());
  }
  if (base::Status st = StoreOtlpMetrics(*decoded); !st.ok()) {
    return SendError(res, HttpStatusFor(st), st.message());
  }
  res.status = 200;
  res.set_content(EncodeOtlpMetricsResponse(*decoded, is_json),
                  is_json ? "application/json" : "application/x-protobuf");
}

void ApiServer::RemoteWrite(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, /*ingest=*/true)) {
    return;
  }
  std::string type = req.get_header_value("Content-Type");
  if (type.rfind("application/x-protobuf", 0) != 0 ||
      (type.find("proto=") != std::string::npos &&
       type.find("proto=prometheus.WriteRequest") == std::string::npos)) {
    return Reject(res, 415,
                  "Content-Type must be application/x-protobuf with a prometheus.WriteRequest "
                  "(remote write 1.0), got '" +
                      type + "'; remote write 2.0 is not supported");
  }
  if (base::Status v =
          CheckRemoteWriteVersion(req.get_header_value("X-Prometheus-Remote-Write-Version"));
      !v.ok()) {
    return Reject(res, 400, v.message());
  }
  RemoteWriteOptions options;
  options.default_host = options_.remote_write_default_host;
  options.max_uncompressed_bytes = options_.max_body_bytes;
  std::string encoding = req.get_header_value("Content-Encoding");
  base::Result<DecodedRemoteWrite> decoded;
  if (encoding.empty() || encoding == "snappy") {
    decoded = DecodeRemoteWrite(req.body, options);
  } else if (encoding == "identity") {
    decoded = DecodeRemoteWriteProto(req.body, options);
  } else {
    return Reject(res, 415,
                  "Content-Encoding must be snappy (remote write 1.0), got '" + encoding + "'");
  }
  if (!decoded) {
    return Reject(res, HttpStatusFor(decoded.error()), decoded.error().message());
  }
  uint64_t skipped = decoded->stale_markers + decoded->rejected_samples;
  skipped_points_ += skipped;
  if (decoded->rejected_samples > 0) {
    WARPSCOPE_LOG_EVERY_N(WARNING, 100, "remote write: {} samples left out: {}",
                          decoded->rejected_samples, decoded->first_rejection);
  }
  if (!StoreBatches(decoded->batches, res)) {
    return;
  }
  ++remote_write_requests_;
  res.status = 204;
}

}  // namespace warpscope::server
