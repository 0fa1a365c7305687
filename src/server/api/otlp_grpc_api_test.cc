// SPDX-License-Identifier: Apache-2.0
// The OTLP/gRPC receiver with a real grpc++ client on loopback: an ApiServer over SQLite behind
// it, so what arrives over gRPC is read back through the HTTP query API.
#include "server/otlp_grpc/otlp_grpc_server.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/file_util.h"
#include "base/testing/temp_dir.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.grpc.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"
#include "server/api/api_server.h"
#include "server/storage/sqlite_storage.h"
#include "server/traces/trace_store.h"
#include "support/self_signed_cert.h"

namespace warpscope::server {
namespace {

namespace metrics_pb = ::opentelemetry::proto::collector::metrics::v1;
namespace trace_pb = ::opentelemetry::proto::collector::trace::v1;
using nlohmann::json;

constexpr char kToken[] = "grpc-s3cret";
const int64_t kT0 = 1'700'000'000'000'000'000;  // ns

metrics_pb::ExportMetricsServiceRequest MakeRequest(double util, const std::string& host = "g1") {
  metrics_pb::ExportMetricsServiceRequest req;
  auto* rm = req.add_resource_metrics();
  if (!host.empty()) {
    auto* h = rm->mutable_resource()->add_attributes();
    h->set_key("host.name");
    h->mutable_value()->set_string_value(host);
  }
  auto* m = rm->add_scope_metrics()->add_metrics();
  m->set_name("hw.gpu.utilization");
  m->set_unit("1");
  auto* p = m->mutable_gauge()->add_data_points();
  p->set_time_unix_nano(kT0 + 5'000'000'000);
  p->set_as_double(util);
  auto* id = p->add_attributes();
  id->set_key("hw.id");
  id->mutable_value()->set_string_value("GPU-grpc");
  auto* type = p->add_attributes();
  type->set_key("hw.type");
  type->mutable_value()->set_string_value("gpu");
  return req;
}

class OtlpGrpcServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SqliteStorageOptions so;
    so.data_dir = tmp_.path();
    auto storage = SqliteStorage::Open(so);
    ASSERT_TRUE(storage) << storage.error().message();
    storage_ = std::move(*storage);
    auto traces = traces::TraceStore::Open({.path = tmp_.path() + "/traces.db"});
    ASSERT_TRUE(traces) << traces.error().message();
    traces_ = std::move(*traces);
    ApiServer::Options opts;
    opts.listen_address = "127.0.0.1:0";
    opts.auth_token = kToken;
    opts.trace_store = traces_.get();
    api_ = std::make_unique<ApiServer>(opts, *storage_, clock_);
    auto port = api_->Start();
    ASSERT_TRUE(port) << port.error().message();
    http_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
  }

  void StartGrpc(OtlpGrpcServer::Options options = {}) {
    options.listen_address = "127.0.0.1:0";
    if (options.max_message_bytes == OtlpGrpcServer::Options{}.max_message_bytes) {
      options.max_message_bytes = 64 * 1024;
    }
    auto grpc = OtlpGrpcServer::Start(options, *api_);
    ASSERT_TRUE(grpc) << grpc.error().message();
    grpc_ = std::move(*grpc);
    ASSERT_GT(grpc_->port(), 0);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_->port()),
                                   grpc::InsecureChannelCredentials());
  }

  grpc::Status Export(const metrics_pb::ExportMetricsServiceRequest& req,
                      metrics_pb::ExportMetricsServiceResponse* reply,
                      const std::string& token = kToken,
                      grpc_compression_algorithm compression = GRPC_COMPRESS_NONE) {
    auto stub = metrics_pb::MetricsService::NewStub(channel_);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    ctx.set_compression_algorithm(compression);
    return stub->Export(&ctx, req, reply);
  }

  base::FakeClock clock_{base::FromUnixNanos(kT0 + 3'600'000'000'000)};
  base::TempDir tmp_;
  std::unique_ptr<SqliteStorage> storage_;
  std::unique_ptr<traces::TraceStore> traces_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<httplib::Client> http_;
  std::unique_ptr<OtlpGrpcServer> grpc_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(OtlpGrpcServerTest, MetricsAreStoredOnceAndQueryable) {
  StartGrpc();
  metrics_pb::ExportMetricsServiceResponse reply;
  grpc::Status st = Export(MakeRequest(0.75), &reply);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_FALSE(reply.has_partial_success());
  // A retry of the same request is a duplicate for the storage, as over OTLP/HTTP.
  ASSERT_TRUE(Export(MakeRequest(0.75), &reply).ok());
  EXPECT_EQ(api_->stats().otlp_requests, 2u);
  EXPECT_EQ(api_->stats().duplicate_batches, 1u);
  EXPECT_EQ(grpc_->stats().requests, 2u);

  auto range = http_->Get(
      "/api/v1/query_range?metric=hw.gpu.utilization&start=1700000000&end=1700000060&step=60s&"
      "kind=gpu&host=g1");
  ASSERT_TRUE(range);
  ASSERT_EQ(range->status, 200) << range->body;
  json r = json::parse(range->body);
  ASSERT_EQ(r["series"].size(), 1u);
  EXPECT_EQ(r["series"][0]["entity"], "GPU-grpc");
  EXPECT_NEAR(r["series"][0]["points"][0][1].get<double>(), 0.75, 1e-9);
}

TEST_F(OtlpGrpcServerTest, GzipMessagesAreAccepted) {
  StartGrpc();
  metrics_pb::ExportMetricsServiceResponse reply;
  grpc::Status st = Export(MakeRequest(0.5), &reply, kToken, GRPC_COMPRESS_GZIP);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(api_->stats().series_windows, 1u);
}

TEST_F(OtlpGrpcServerTest, RejectedPointsArePartialSuccess) {
  StartGrpc();
  auto req = MakeRequest(0.5);
  auto* bad = req.mutable_resource_metrics(0)->mutable_scope_metrics(0)->add_metrics();
  bad->set_name("hw.gpu.power");
  bad->mutable_gauge()->add_data_points()->set_time_unix_nano(kT0 + 5'000'000'000);  // no value
  metrics_pb::ExportMetricsServiceResponse reply;
  ASSERT_TRUE(Export(req, &reply).ok());
  ASSERT_TRUE(reply.has_partial_success());
  EXPECT_EQ(reply.partial_success().rejected_data_points(), 1);
  EXPECT_FALSE(reply.partial_success().error_message().empty());
}

TEST_F(OtlpGrpcServerTest, TokenIsRequired) {
  StartGrpc();
  metrics_pb::ExportMetricsServiceResponse reply;
  grpc::Status missing = Export(MakeRequest(0.5), &reply, "");
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(missing.error_message().find("missing bearer token"), std::string::npos);
  grpc::Status wrong = Export(MakeRequest(0.5), &reply, "not-it");
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(wrong.error_message().find("invalid bearer token"), std::string::npos);
  EXPECT_EQ(api_->stats().unauthorized, 2u);
  EXPECT_EQ(api_->stats().otlp_requests, 0u);
  // A rotated token (SIGHUP) applies to gRPC too.
  api_->SetAuthToken("rotated");
  EXPECT_TRUE(Export(MakeRequest(0.5), &reply, "rotated").ok());
}

TEST_F(OtlpGrpcServerTest, BadDataIsInvalidArgumentNamingTheProblem) {
  StartGrpc();
  metrics_pb::ExportMetricsServiceResponse reply;
  grpc::Status st = Export(MakeRequest(0.5, /*host=*/""), &reply);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("host.name"), std::string::npos) << st.error_message();

  // Bytes that are not an ExportMetricsServiceRequest at all.
  grpc::GenericStub generic(channel_);
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", std::string("Bearer ") + kToken);
  grpc::Slice slice(std::string("\xff\xff\xff not protobuf"));
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  generic.UnaryCall(&ctx, "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
                    grpc::StubOptions(), &request, &response,
                    [&](grpc::Status s) { done.set_value(std::move(s)); });
  grpc::Status garbage = done.get_future().get();
  EXPECT_EQ(garbage.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(garbage.error_message().find("OTLP metrics"), std::string::npos)
      << garbage.error_message();
  EXPECT_EQ(api_->stats().rejected, 2u);
}

TEST_F(OtlpGrpcServerTest, OversizedMessageIsResourceExhausted) {
  StartGrpc();  // 64 KiB limit
  auto req = MakeRequest(0.5);
  req.mutable_resource_metrics(0)->mutable_scope_metrics(0)->mutable_metrics(0)->set_description(
      std::string(100 * 1024, 'x'));
  metrics_pb::ExportMetricsServiceResponse reply;
  grpc::Status st = Export(req, &reply);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  // Compressed, 16 MiB are some 16 KiB on the wire, under the limit; inflating stops at it.
  req.mutable_resource_metrics(0)->mutable_scope_metrics(0)->mutable_metrics(0)->set_description(
      std::string(16 << 20, 'x'));
  grpc::Status gz = Export(req, &reply, kToken, GRPC_COMPRESS_GZIP);
  EXPECT_EQ(gz.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << gz.error_message();
  EXPECT_NE(gz.error_message().find("--max-body-bytes"), std::string::npos) << gz.error_message();
  EXPECT_EQ(api_->stats().otlp_requests, 0u);
}

TEST_F(OtlpGrpcServerTest, TracesGoToTheTraceStore) {
  StartGrpc();
  auto stub = trace_pb::TraceService::NewStub(channel_);
  trace_pb::ExportTraceServiceRequest req;
  req.add_resource_spans();
  trace_pb::ExportTraceServiceResponse reply;
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", std::string("Bearer ") + kToken);
  grpc::Status st = stub->Export(&ctx, req, &reply);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(api_->stats().trace_requests, 1u);
}

TEST_F(OtlpGrpcServerTest, ServesTls) {
  const std::string cert = tmp_.path() + "/cert.pem";
  const std::string key = tmp_.path() + "/key.pem";
  ASSERT_TRUE(test::MakeSelfSignedCert(cert, key));
  OtlpGrpcServer::Options options;
  options.tls_cert_file = cert;
  options.tls_key_file = key;
  StartGrpc(options);
  auto pem = base::ReadFile(cert);
  ASSERT_TRUE(pem);
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = *pem;
  channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_->port()),
                                 grpc::SslCredentials(ssl));
  metrics_pb::ExportMetricsServiceResponse reply;
  grpc::Status st = Export(MakeRequest(0.25), &reply);
  ASSERT_TRUE(st.ok()) << st.error_message();
  // A plaintext client gets no answer from a TLS listener.
  channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_->port()),
                                 grpc::InsecureChannelCredentials());
  EXPECT_FALSE(Export(MakeRequest(0.25), &reply).ok());
}

TEST_F(OtlpGrpcServerTest, UnreadableCertificateIsAClearError) {
  OtlpGrpcServer::Options options;
  options.listen_address = "127.0.0.1:0";
  options.tls_cert_file = "/nonexistent/cert.pem";
  options.tls_key_file = "/nonexistent/key.pem";
  auto grpc = OtlpGrpcServer::Start(options, *api_);
  ASSERT_FALSE(grpc);
  EXPECT_NE(grpc.error().message().find("--tls-cert"), std::string::npos);
}

TEST_F(OtlpGrpcServerTest, PortInUseIsAClearError) {
  StartGrpc();
  OtlpGrpcServer::Options options;
  options.listen_address = "127.0.0.1:" + std::to_string(grpc_->port());
  auto again = OtlpGrpcServer::Start(options, *api_);
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message().find("--otlp-grpc-listen-address"), std::string::npos);
}

// An OtlpIngest whose store waits until released, to fill the workers and their queue.
class BlockingIngest : public OtlpIngest {
 public:
  base::Status AuthorizeIngest(std::string_view) override { return base::OkStatus(); }
  base::Status StoreOtlpMetrics(const DecodedOtlpMetrics&) override {
    std::unique_lock lock(mu_);
    ++entered_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_; });
    return base::OkStatus();
  }
  base::Status StoreOtlpTraces(const DecodedOtlpTraces&) override { return base::OkStatus(); }
  void CountRejected() override {}
  void WaitEntered(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return entered_ >= n; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int entered_ = 0;
  bool released_ = false;
};

TEST(OtlpGrpcServerLoadTest, AFullQueueAnswersUnavailable) {
  BlockingIngest ingest;
  OtlpGrpcServer::Options options;
  options.listen_address = "127.0.0.1:0";
  options.worker_threads = 1;
  options.max_queued_requests = 1;
  auto server = OtlpGrpcServer::Start(options, ingest);
  ASSERT_TRUE(server) << server.error().message();
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string((*server)->port()),
                                     grpc::InsecureChannelCredentials());
  auto stub = metrics_pb::MetricsService::NewStub(channel);
  const auto req = MakeRequest(0.5);
  auto call = [&] {
    metrics_pb::ExportMetricsServiceResponse reply;
    grpc::ClientContext ctx;
    return stub->Export(&ctx, req, &reply);
  };
  auto first = std::async(std::launch::async, call);
  ingest.WaitEntered(1);  // the only worker is busy
  auto second = std::async(std::launch::async, call);
  while ((*server)->stats().queued < 1) std::this_thread::yield();  // waits in the queue
  grpc::Status third = call();
  EXPECT_EQ(third.error_code(), grpc::StatusCode::UNAVAILABLE) << third.error_message();
  EXPECT_EQ((*server)->stats().overloaded, 1u);
  ingest.Release();
  EXPECT_TRUE(first.get().ok());
  EXPECT_TRUE(second.get().ok());
  (*server)->Stop();
}

}  // namespace
}  // namespace warpscope::server
