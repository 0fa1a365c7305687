// SPDX-License-Identifier: Apache-2.0
// The OTLP exporter over gRPC against a small MetricsService on 127.0.0.1:0 (grpc++'s generated
// service, no exporter code): the request, the metadata, compression and the retry semantics
// shared with OTLP/HTTP.
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>

#include "exporters/otlp/otlp_exporter.h"
#include "exporters/otlp/otlp_json_encoder.h"
#include "exporters/testing/sample_frame.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.grpc.pb.h"

namespace warpscope::exporters {
namespace {

namespace metrics_pb = ::opentelemetry::proto::collector::metrics::v1;
using nlohmann::json;

class FakeMetricsService final : public metrics_pb::MetricsService::Service {
 public:
  // Answers the n-th call with codes[n] (the last one repeats).
  explicit FakeMetricsService(std::vector<grpc::StatusCode> codes) : codes_(std::move(codes)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeMetricsService() override { server_->Shutdown(); }

  grpc::Status Export(grpc::ServerContext* ctx, const metrics_pb::ExportMetricsServiceRequest* req,
                      metrics_pb::ExportMetricsServiceResponse* reply) override {
    std::lock_guard lock(mu_);
    requests_.push_back(*req);
    auto auth = ctx->client_metadata().find("authorization");
    authorization_ = auth == ctx->client_metadata().end()
                         ? ""
                         : std::string(auth->second.data(), auth->second.size());
    grpc::StatusCode code = codes_[std::min(requests_.size() - 1, codes_.size() - 1)];
    return code == grpc::StatusCode::OK ? grpc::Status::OK : grpc::Status(code, "not now");
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<metrics_pb::ExportMetricsServiceRequest> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  std::string authorization() {
    std::lock_guard lock(mu_);
    return authorization_;
  }

 private:
  std::vector<grpc::StatusCode> codes_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<metrics_pb::ExportMetricsServiceRequest> requests_;
  std::string authorization_;
};

// `j` without empty arrays, which protobuf's JSON printer leaves out (an empty repeated field).
json WithoutEmptyArrays(const json& j) {
  if (j.is_array()) {
    json out = json::array();
    for (const json& e : j) out.push_back(WithoutEmptyArrays(e));
    return out;
  }
  if (!j.is_object()) return j;
  json out = json::object();
  for (const auto& [k, v] : j.items()) {
    if (!(v.is_array() && v.empty())) out[k] = WithoutEmptyArrays(v);
  }
  return out;
}

OtlpExporter::Options GrpcOptions(const std::string& url) {
  OtlpExporter::Options o;
  o.endpoint = url;
  o.protocol = OtlpProtocol::kGrpc;
  o.initial_backoff = std::chrono::milliseconds(1);
  o.max_backoff = std::chrono::milliseconds(5);
  o.timeout = std::chrono::seconds(5);
  o.encoder.service_version = "9.9.9";
  o.encoder.service_instance_id = "instance-1";
  return o;
}

TEST(OtlpGrpcExporterTest, SendsTheSameRequestAsOtlpHttp) {
  FakeMetricsService service({grpc::StatusCode::OK});
  auto o = GrpcOptions(service.url());
  o.headers = {{"Authorization", "Bearer s3cret"}};
  o.gzip = true;
  auto exporter = OtlpExporter::Create(o);
  ASSERT_TRUE(exporter) << exporter.error().message();
  model::Frame frame = sample::MakeSampleFrame({.gpus = 2, .processes = 1});
  EXPECT_EQ((*exporter)->Export(frame), ExportResult::kSuccess);
  (*exporter)->Shutdown(std::chrono::seconds(10));
  EXPECT_EQ((*exporter)->stats().sent, 1u);

  auto reqs = service.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(service.authorization(), "Bearer s3cret");
  // What arrived is exactly the JSON request OTLP/HTTP sends, field for field.
  OtlpJsonEncoder encoder(o.encoder);
  std::string arrived;
  google::protobuf::util::JsonPrintOptions print;
  print.always_print_enums_as_ints = true;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(reqs[0], &arrived, print).ok());
  json sent = WithoutEmptyArrays(json::parse(encoder.Encode(frame)));
  json diff = json::diff(sent, json::parse(arrived));
  EXPECT_TRUE(diff.empty()) << diff.dump().substr(0, 2000);
}

TEST(OtlpGrpcExporterTest, RetriesUnavailableThenSucceeds) {
  FakeMetricsService service({grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::OK});
  auto exporter = OtlpExporter::Create(GrpcOptions(service.url()));
  ASSERT_TRUE(exporter);
  EXPECT_EQ((*exporter)->Export(sample::MakeSampleFrame({.gpus = 1, .processes = 0})),
            ExportResult::kSuccess);
  (*exporter)->Shutdown(std::chrono::seconds(10));
  EXPECT_EQ(service.requests().size(), 2u);
  EXPECT_EQ((*exporter)->stats().sent, 1u);
  EXPECT_EQ((*exporter)->stats().retries, 1u);
}

TEST(OtlpGrpcExporterTest, InvalidArgumentIsNotRetried) {
  FakeMetricsService service({grpc::StatusCode::INVALID_ARGUMENT});
  auto exporter = OtlpExporter::Create(GrpcOptions(service.url()));
  ASSERT_TRUE(exporter);
  (*exporter)->Export(sample::MakeSampleFrame({.gpus = 1, .processes = 0}));
  (*exporter)->Shutdown(std::chrono::seconds(10));
  EXPECT_EQ(service.requests().size(), 1u);
  EXPECT_EQ((*exporter)->stats().failed, 1u);
  EXPECT_EQ((*exporter)->stats().retries, 0u);
}

TEST(OtlpGrpcExporterTest, BadEndpointIsAClearError) {
  auto o = GrpcOptions("http://collector/v1/metrics");
  auto exporter = OtlpExporter::Create(o);
  ASSERT_FALSE(exporter);
  EXPECT_NE(exporter.error().message().find("host:port"), std::string::npos);
}

TEST(OtlpProtocolTest, Names) {
  EXPECT_EQ(*ParseOtlpProtocol("grpc"), OtlpProtocol::kGrpc);
  EXPECT_EQ(*ParseOtlpProtocol("http/protobuf"), OtlpProtocol::kHttpProtobuf);
  EXPECT_EQ(*ParseOtlpProtocol("http/json"), OtlpProtocol::kHttpJson);
  EXPECT_FALSE(ParseOtlpProtocol("http"));
}

}  // namespace
}  // namespace warpscope::exporters
