// SPDX-License-Identifier: Apache-2.0
// OtlpGrpcServer on grpc++'s callback API. Each Export arrives as raw bytes, within the size
// limit as sent; the handler checks the token on gRPC's thread and hands the bytes to a worker,
// which inflates a gzip message (itself, bounded by the limit: gRPC's own decompression would
// inflate a gzip bomb whole before checking the size), decodes it with the OTLP/HTTP decoder,
// stores it through OtlpIngest and finishes the call. The workers' queue is bounded: a call that finds it
// full is answered UNAVAILABLE at once.
#include "server/otlp_grpc/otlp_grpc_server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/byte_buffer.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

#include "base/file_util.h"
#include "base/gzip.h"
#include "base/listen_address.h"
#include "base/logging.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.grpc.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"
#include "server/ingest/otlp_metrics.h"
#include "server/ingest/otlp_traces.h"

namespace warpscope::server {
namespace {

namespace metrics_pb = ::opentelemetry::proto::collector::metrics::v1;
namespace trace_pb = ::opentelemetry::proto::collector::trace::v1;

// The gRPC status for an error of the decoders or the store, as OTLP/gRPC senders read it:
// INVALID_ARGUMENT is not retried, UNAVAILABLE is (with backoff).
grpc::Status GrpcStatusFor(const base::Status& s) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (s.code()) {
    case base::StatusCode::kInvalidArgument:
      code = grpc::StatusCode::INVALID_ARGUMENT;
      break;
    case base::StatusCode::kPermissionDenied:
      code = grpc::StatusCode::UNAUTHENTICATED;
      break;
    case base::StatusCode::kResourceExhausted:
      code = grpc::StatusCode::RESOURCE_EXHAUSTED;
      break;
    case base::StatusCode::kUnavailable:
      code = grpc::StatusCode::UNAVAILABLE;
      break;
    case base::StatusCode::kNotFound:
      code = grpc::StatusCode::NOT_FOUND;
      break;
    default:
      break;
  }
  return grpc::Status(code, s.message());
}

std::string BytesOf(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  out.reserve(buffer.Length());
  for (const grpc::Slice& slice : slices) {
    out.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return out;
}

void SetBytes(const std::string& bytes, grpc::ByteBuffer& buffer) {
  grpc::Slice slice(bytes);
  buffer = grpc::ByteBuffer(&slice, 1);
}

// The sender's address without the port, as OTLP/HTTP's remote_addr: "ipv4:10.0.0.5:41234" ->
// "10.0.0.5", "ipv6:[::1]:41234" -> "::1". The host of spans whose resource names none.
std::string PeerHost(const std::string& peer) {
  std::string_view p = peer;
  for (std::string_view scheme : {"ipv4:", "ipv6:"}) {
    if (p.starts_with(scheme)) p.remove_prefix(scheme.size());
  }
  if (p.starts_with('[')) {
    size_t close = p.find(']');
    return std::string(close == std::string_view::npos ? p.substr(1) : p.substr(1, close - 1));
  }
  size_t colon = p.rfind(':');
  return std::string(colon == std::string_view::npos ? p : p.substr(0, colon));
}

// `threads` workers over a queue of at most `capacity` tasks. A task gets `run` = false when
// the queue is stopped before it ran (it must still answer its call).
class WorkQueue {
 public:
  using Task = std::function<void(bool run)>;

  WorkQueue(int threads, int capacity) : capacity_(static_cast<size_t>(std::max(capacity, 1))) {
    for (int i = 0; i < std::max(threads, 1); ++i) {
      workers_.emplace_back([this](std::stop_token stop) { Loop(stop); });
    }
  }
  ~WorkQueue() { Stop(); }

  // False when the queue is full or stopped: the caller answers the call itself.
  bool TryPost(Task task) {
    {
      std::lock_guard lock(mu_);
      if (stopped_ || tasks_.size() >= capacity_) return false;
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
    return true;
  }

  size_t queued() {
    std::lock_guard lock(mu_);
    return tasks_.size();
  }

  // Workers finish the task in hand and exit; queued tasks get run = false. Idempotent.
  void Stop() {
    std::deque<Task> left;
    {
      std::lock_guard lock(mu_);
      stopped_ = true;
      left.swap(tasks_);
    }
    cv_.notify_all();
    for (Task& t : left) t(false);
    for (std::jthread& w : workers_) {
      w.request_stop();
      if (w.joinable()) w.join();
    }
    workers_.clear();
  }

 private:
  void Loop(std::stop_token stop) {
    for (;;) {
      Task task;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopped_ || stop.stop_requested() || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      try {
        task(true);
      } catch (...) {
        WARPSCOPE_LOG_EVERY_N(ERROR, 100, "OTLP/gRPC: a request failed with an exception");
      }
    }
  }

  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> tasks_;  // GUARDED_BY(mu_)
  bool stopped_ = false;    // GUARDED_BY(mu_)
  std::vector<std::jthread> workers_;
};

// What both services share: the token, the hand-off to the workers and the counters.
class Front {
 public:
  explicit Front(OtlpIngest& ingest, WorkQueue& queue, size_t max_message_bytes)
      : ingest_(ingest), queue_(queue), max_message_bytes_(max_message_bytes) {}

  // Checks the token, then runs `handle(bytes, peer)` on a worker; its result is the call's
  // status and (when OK) `response` holds the reply message's bytes.
  grpc::ServerUnaryReactor* Serve(
      grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response,
      std::function<base::Result<std::string>(const std::string& bytes, const std::string& peer)>
          handle) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    ++requests_;
    std::string_view authorization;
    const auto& metadata = ctx->client_metadata();
    if (auto it = metadata.find("authorization"); it != metadata.end()) {
      authorization = std::string_view(it->second.data(), it->second.size());
    }
    if (base::Status auth = ingest_.AuthorizeIngest(authorization); !auth.ok()) {
      reactor->Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                   std::string(auth.message()) +
                                       " (gRPC metadata 'authorization: Bearer <token>')"));
      return reactor;
    }
    std::string peer = PeerHost(ctx->peer());
    bool posted = queue_.TryPost([this, reactor, request, response, peer = std::move(peer),
                                  handle = std::move(handle)](bool run) {
      if (!run) {
        reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is stopping"));
        return;
      }
      base::Result<std::string> reply = Message(*request).and_then(
          [&](const std::string& bytes) { return handle(bytes, peer); });
      if (!reply) {
        if (reply.error().code() == base::StatusCode::kInvalidArgument) {
          ingest_.CountRejected();
        }
        reactor->Finish(GrpcStatusFor(reply.error()));
        return;
      }
      SetBytes(*reply, *response);
      reactor->Finish(grpc::Status::OK);
    });
    if (!posted) {
      ++overloaded_;
      WARPSCOPE_LOG_EVERY_N(WARNING, 100,
                            "OTLP/gRPC: all workers busy and the queue full; answering UNAVAILABLE");
      reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                   "the server is busy: retry with backoff"));
    }
    return reactor;
  }

  OtlpIngest& ingest() { return ingest_; }

  // The request message's bytes: inflated when the sender compressed it with gzip (a message
  // never starts with gzip's magic bytes: 0x1f would be field 3 of wire type 7), within the limit.
  base::Result<std::string> Message(const grpc::ByteBuffer& request) const {
    std::string bytes = BytesOf(request);
    if (!base::IsGzip(bytes)) return bytes;
    auto inflated = base::GzipDecompress(bytes, max_message_bytes_);
    if (!inflated && inflated.error().code() == base::StatusCode::kResourceExhausted) {
      return base::Error(base::ErrStatus(
          base::StatusCode::kResourceExhausted,
          "the message inflates to more than {} bytes; export smaller batches or raise "
          "--max-body-bytes",
          max_message_bytes_));
    }
    if (!inflated) {
      return base::Error(base::InvalidArgument("the gzip message is corrupt: {}",
                                               inflated.error().message()));
    }
    return inflated;
  }
  OtlpGrpcServer::Stats stats() {
    return {.requests = requests_.load(),
            .overloaded = overloaded_.load(),
            .queued = queue_.queued()};
  }

 private:
  OtlpIngest& ingest_;
  WorkQueue& queue_;
  const size_t max_message_bytes_;
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> overloaded_{0};
};

class MetricsService final
    : public metrics_pb::MetricsService::WithRawCallbackMethod_Export<
          metrics_pb::MetricsService::Service> {
 public:
  explicit MetricsService(Front& front) : front_(front) {}
  grpc::ServerUnaryReactor* Export(grpc::CallbackServerContext* ctx,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override {
    return front_.Serve(ctx, request, response,
                        [this](const std::string& bytes,
                               const std::string&) -> base::Result<std::string> {
                          WARPSCOPE_ASSIGN_OR_RETURN(DecodedOtlpMetrics decoded,
                                                     DecodeOtlpMetricsProto(bytes));
                          WARPSCOPE_RETURN_IF_ERROR(front_.ingest().StoreOtlpMetrics(decoded));
                          return EncodeOtlpMetricsResponse(decoded, /*as_json=*/false);
                        });
  }

 private:
  Front& front_;
};

class TraceService final
    : public trace_pb::TraceService::WithRawCallbackMethod_Export<
          trace_pb::TraceService::Service> {
 public:
  explicit TraceService(Front& front) : front_(front) {}
  grpc::ServerUnaryReactor* Export(grpc::CallbackServerContext* ctx,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override {
    return front_.Serve(ctx, request, response,
                        [this](const std::string& bytes,
                               const std::string& peer) -> base::Result<std::string> {
                          OtlpTraceOptions options;
                          if (!peer.empty()) options.default_host = peer;
                          WARPSCOPE_ASSIGN_OR_RETURN(DecodedOtlpTraces decoded,
                                                     DecodeOtlpTracesProto(bytes, options));
                          WARPSCOPE_RETURN_IF_ERROR(front_.ingest().StoreOtlpTraces(decoded));
                          return EncodeOtlpTracesResponse(decoded, /*as_json=*/false);
                        });
  }

 private:
  Front& front_;
};

base::Result<std::shared_ptr<grpc::ServerCredentials>> Credentials(
    const OtlpGrpcServer::Options& options) {
  if (options.tls_cert_file.empty() && options.tls_key_file.empty()) {
    return grpc::InsecureServerCredentials();
  }
  auto cert = base::ReadFile(options.tls_cert_file, 1 << 20);
  if (!cert) return base::Error(cert.error().WithContext("--tls-cert"));
  auto key = base::ReadFile(options.tls_key_file, 1 << 20);
  if (!key) return base::Error(key.error().WithContext("--tls-key"));
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({.private_key = *key, .cert_chain = *cert});
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

class OtlpGrpcServer::Impl {
 public:
  Impl(const Options& options, OtlpIngest& ingest)
      : queue_(options.worker_threads, options.max_queued_requests),
        front_(ingest, queue_, options.max_message_bytes),
        metrics_(front_),
        traces_(front_) {}

  base::Status Start(const Options& options) {
    WARPSCOPE_ASSIGN_OR_RETURN(base::ListenAddress addr,
                               base::ParseListenAddress(options.listen_address));
    const std::string host = addr.host.find(':') != std::string::npos ? "[" + addr.host + "]"
                                                                       : addr.host;
    WARPSCOPE_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                               Credentials(options));
    grpc::ServerBuilder builder;
    builder.AddListeningPort(fmt::format("{}:{}", host, addr.port), credentials, &port_);
    builder.SetMaxReceiveMessageSize(
        static_cast<int>(std::min<size_t>(options.max_message_bytes, INT_MAX)));
    // A second server on a port in use is an error, not a silent share of its calls.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    // gRPC still refuses a compressed message over the limit; Front::Message inflates the rest.
    builder.AddChannelArgument(GRPC_ARG_ENABLE_PER_MESSAGE_DECOMPRESSION, 0);
    builder.RegisterService(&metrics_);
    builder.RegisterService(&traces_);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || port_ == 0) {
      return base::Unavailable(
          "cannot listen on {} for OTLP/gRPC: the port is in use or the address is not this "
          "machine's; choose another --otlp-grpc-listen-address",
          options.listen_address);
    }
    return base::OkStatus();
  }

  void Stop() {
    if (server_ != nullptr) {
      // New calls are refused; calls in the workers' hands get 2 s, then are cancelled.
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
      server_->Wait();
      server_.reset();
    }
    queue_.Stop();
  }

  int port() const { return port_; }
  Stats stats() { return front_.stats(); }

 private:
  WorkQueue queue_;
  Front front_;
  MetricsService metrics_;
  TraceService traces_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

base::Result<std::unique_ptr<OtlpGrpcServer>> OtlpGrpcServer::Start(Options options,
                                                                     OtlpIngest& ingest) {
  auto impl = std::make_unique<Impl>(options, ingest);
  if (base::Status st = impl->Start(options); !st.ok()) {
    impl->Stop();
    return base::Error(std::move(st));
  }
  WARPSCOPE_LOG(INFO, "OTLP/gRPC listening on {} (port {}{})", options.listen_address,
                impl->port(), options.tls_cert_file.empty() ? "" : ", TLS");
  return std::unique_ptr<OtlpGrpcServer>(new OtlpGrpcServer(std::move(impl)));
}

OtlpGrpcServer::OtlpGrpcServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OtlpGrpcServer::~OtlpGrpcServer() { Stop(); }
void OtlpGrpcServer::Stop() { impl_->Stop(); }
int OtlpGrpcServer::port() const { return impl_->port(); }
OtlpGrpcServer::Stats OtlpGrpcServer::stats() const { return impl_->stats(); }

}  // namespace warpscope::server
