// SPDX-License-Identifier: Apache-2.0
// The Beast/Asio side of HttpServer: the acceptor with its connection limits, one Session per
// connection (plain or TLS) reading requests under their deadlines, and the hand-off of each
// complete request to a worker queue and of its answer back to the connection's strand. The
// only translation unit of the server that includes Beast or Asio (they compile slowly).
//
// Nothing here throws out: Beast and Asio calls use their error_code overloads, and the few
// that can throw (building an answer) are caught where they run.
#include "server/http/http_server.h"

#include <fmt/format.h>
#include <pthread.h>

#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <exception>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "base/gzip.h"
#include "base/logging.h"
#include "server/http/work_queue.h"

namespace warpscope::server::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using BeastResponse = bhttp::response<bhttp::string_body>;

void SetJsonError(httplib::Response& res, int status, std::string_view message) {
  res.status = status;
  const nlohmann::json body{{"error", message}};
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/json");
}

bool IsTimeout(const beast::error_code& ec) { return ec == beast::error::timeout; }

// Beast 1.74 speaks boost::string_view.
std::string_view Sv(beast::string_view s) { return {s.data(), s.size()}; }
std::string Str(beast::string_view s) { return {s.data(), s.size()}; }

// One request and its answer, alive from the parse until the answer is built.
struct Exchange {
  httplib::Request req;
  httplib::Response res;
  bool head = false;
  bool keep_alive = true;
  bool gzip_ok = false;
};

// The wire form of an answer: status, the handler's headers, the body (gzip when the client
// accepts it and the type is worth it), Content-Length and Connection.
std::shared_ptr<BeastResponse> ToBeast(Exchange& ex) noexcept {
  auto out = std::make_shared<BeastResponse>();
  try {
    httplib::Response& res = ex.res;
    out->version(11);
    out->result(static_cast<unsigned>(res.status <= 0 ? 200 : res.status));
    std::string content_type;
    bool encoded = false;
    for (const auto& [name, value] : res.headers) {
      if (beast::iequals(name, "Connection")) {
        if (beast::iequals(value, "close")) ex.keep_alive = false;
        continue;
      }
      if (beast::iequals(name, "Content-Length") || beast::iequals(name, "Transfer-Encoding")) {
        continue;
      }
      if (beast::iequals(name, "Content-Type")) content_type = value;
      if (beast::iequals(name, "Content-Encoding")) encoded = true;
      out->insert(name, value);
    }
    std::string body = std::move(res.body);
    if (ex.gzip_ok && !encoded && !body.empty() && CompressibleType(content_type)) {
      base::Result<std::string> zipped = base::GzipCompress(body);
      if (zipped) {
        body = std::move(*zipped);
        out->set(bhttp::field::content_encoding, "gzip");
        out->set(bhttp::field::vary, "Accept-Encoding");
      }
    }
    const unsigned status = out->result_int();
    const bool no_body = status < 200 || status == 204 || status == 304;
    if (no_body) body.clear();
    out->keep_alive(ex.keep_alive);
    if (ex.head) {
      out->content_length(body.size());
    } else {
      out->body() = std::move(body);
      if (!no_body) out->prepare_payload();
    }
  } catch (const std::exception& e) {
    WARPSCOPE_LOG_EVERY_N(ERROR, 100, "building the answer to {} {}: {}", ex.req.method,
                          ex.req.path, e.what());
    out = std::make_shared<BeastResponse>(bhttp::status::internal_server_error, 11);
    out->set(bhttp::field::content_type, "application/json");
    out->body() = R"({"error":"internal error"})";
    out->keep_alive(false);
    out->prepare_payload();
    ex.keep_alive = false;
  }
  return out;
}

}  // namespace

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, const Router& router)
      : options_(std::move(options)), router_(router) {}
  ~Impl() { Stop(); }

  base::Result<int> Start();
  void Stop();
  HttpServerStats stats() const;

  // What every session shares.
  const HttpServerOptions options_;
  const Router& router_;
  // Created by Start, cleared by Stop (under queues_mu_, for stats()).
  std::vector<std::unique_ptr<WorkQueue>> queues_;
  mutable std::mutex queues_mu_;
  std::optional<asio::ssl::context> ssl_;

  std::atomic<uint64_t> open_{0};
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> refused_total_{0};
  std::atomic<uint64_t> refused_per_client_{0};
  std::atomic<uint64_t> deadline_closed_{0};
  std::atomic<uint64_t> idle_closed_{0};
  std::atomic<uint64_t> queue_full_{0};
  std::atomic<uint64_t> too_large_{0};
  std::atomic<uint64_t> bad_requests_{0};

  // Counts the connection of `ip`; false (not counted) when a limit refuses it.
  bool Admit(const std::string& ip);
  void Release(const std::string& ip);

 private:
  void Accept();
  void OnAccept(const beast::error_code& ec, tcp::socket socket);

  std::unique_ptr<asio::io_context> ioc_;
  std::unique_ptr<tcp::acceptor> acceptor_;
  std::unique_ptr<asio::steady_timer> retry_timer_;
  std::vector<std::thread> io_threads_;
  std::mutex clients_mu_;
  std::map<std::string, int> clients_;  // open connections per remote address
};

namespace {

// One connection. Every member function runs on the connection's strand (the tcp_stream's
// executor), but for ToBeast and the handler, which run on a worker with the Exchange alone.
template <bool kTls>
class Session : public std::enable_shared_from_this<Session<kTls>> {
 public:
  using Stream = std::conditional_t<kTls, beast::ssl_stream<beast::tcp_stream>, beast::tcp_stream>;

  Session(HttpServer::Impl& server, tcp::socket&& socket, std::string ip)
      : server_(server), stream_(MakeStream(server, std::move(socket))), ip_(std::move(ip)) {}
  ~Session() {
    server_.Release(ip_);
    --server_.open_;
  }

  void Run() {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] { self->Begin(); });
  }

 private:
  static Stream MakeStream(HttpServer::Impl& server, tcp::socket&& socket) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *server.ssl_);
    } else {
      return Stream(std::move(socket));
    }
  }
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void Begin() {
    if constexpr (kTls) {
      lowest().expires_after(server_.options_.request_deadline);
      stream_.async_handshake(asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](const beast::error_code& ec) {
                                if (ec) {
                                  if (IsTimeout(ec)) ++self->server_.deadline_closed_;
                                  return;  // dropped: the socket closes with the session
                                }
                                self->WaitForRequest();
                              });
    } else {
      WaitForRequest();
    }
  }

  // Idle until a request's first byte (keep_alive_timeout), then the request deadline runs.
  void WaitForRequest() {
    const int max = server_.options_.max_requests_per_connection;
    if (max > 0 && served_ >= max) return Close();
    if (buffer_.size() > 0) return ReadHeader();
    lowest().expires_after(server_.options_.keep_alive_timeout);
    stream_.async_read_some(buffer_.prepare(4096), [self = this->shared_from_this()](
                                                       const beast::error_code& ec, size_t n) {
      if (ec) {
        if (IsTimeout(ec)) ++self->server_.idle_closed_;
        return;
      }
      self->buffer_.commit(n);
      self->ReadHeader();
    });
  }

  void ReadHeader() {
    lowest().expires_after(server_.options_.request_deadline);
    parser_.emplace();
    parser_->header_limit(64u << 10);
    parser_->body_limit(server_.options_.max_body_bytes);
    bhttp::async_read_header(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](const beast::error_code& ec, size_t) {
          if (ec) return self->OnReadError(ec);
          self->OnHeader();
        });
  }

  void OnHeader() {
    auto& msg = parser_->get();
    if (beast::iequals(msg[bhttp::field::expect], "100-continue") && !parser_->is_done()) {
      auto cont = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::continue_,
                                                                       msg.version());
      bhttp::async_write(
          stream_, *cont,
          [self = this->shared_from_this(), cont](const beast::error_code& ec, size_t) {
            if (ec) return;
            self->ReadBody();
          });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = this->shared_from_this()](const beast::error_code& ec, size_t) {
                        if (ec) return self->OnReadError(ec);
                        self->Dispatch();
                      });
  }

  void OnReadError(const beast::error_code& ec) {
    if (IsTimeout(ec)) {
      ++server_.deadline_closed_;
      return;  // the stream closed the socket
    }
    if (ec == bhttp::error::body_limit) {
      ++server_.too_large_;
      const auto declared = parser_->content_length();
      return Refuse(413, declared ? fmt::format("request body too large: {} bytes, the limit is "
                                                "{}; send smaller batches or raise "
                                                "--max-body-bytes",
                                                *declared, server_.options_.max_body_bytes)
                                  : fmt::format("request body too large: more than {} bytes; "
                                                "send smaller batches or raise --max-body-bytes",
                                                server_.options_.max_body_bytes));
    }
    if (ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted ||
        ec == asio::ssl::error::stream_truncated) {
      return;
    }
    ++server_.bad_requests_;
    Refuse(400, fmt::format("malformed HTTP request: {}", ec.message()));
  }

  // An error answer written from the I/O thread, closing the connection after it.
  void Refuse(int status, std::string_view message, int retry_after = 0) {
    auto ex = std::make_shared<Exchange>();
    SetJsonError(ex->res, status, message);
    if (retry_after > 0) ex->res.set_header("Retry-After", std::to_string(retry_after));
    ex->keep_alive = false;
    Write(ToBeast(*ex), false);
  }

  // Fills httplib's Request from the parsed message, then routes it.
  void Dispatch() {
    lowest().expires_never();  // a slow handler is not the client's fault; the write re-arms it
    bhttp::request<bhttp::string_body> msg = parser_->release();
    parser_.reset();
    auto ex = std::make_shared<Exchange>();
    httplib::Request& req = ex->req;
    req.method = Str(msg.method_string());
    req.version = msg.version() == 10 ? "HTTP/1.0" : "HTTP/1.1";
    req.target = Str(msg.target());
    const std::string_view target = req.target;
    const size_t q = target.find('?');
    req.path = DecodeUrl(target.substr(0, q), false);
    if (q != std::string_view::npos) ParseQuery(target.substr(q + 1), req.params);
    for (const auto& field : msg) {
      req.headers.emplace(Str(field.name_string()), Str(field.value()));
    }
    req.remote_addr = ip_;
    req.remote_port = remote_port_;
    ex->head = req.method == "HEAD";
    ex->keep_alive = msg.keep_alive();
    ex->gzip_ok = AcceptsGzip(Sv(msg[bhttp::field::accept_encoding]));
    const beast::string_view encoding = msg[bhttp::field::content_encoding];
    const bool brotli = beast::iequals(encoding, "br");
    if (brotli || beast::iequals(encoding, "gzip") || beast::iequals(encoding, "x-gzip") ||
        beast::iequals(encoding, "deflate")) {
      const size_t limit = server_.options_.max_body_bytes;
      base::Result<std::string> body =
          brotli ? BrotliDecodeBounded(msg.body(), limit) : InflateBounded(msg.body(), limit);
      if (!body) {
        if (body.error().code() == base::StatusCode::kResourceExhausted) {
          ++server_.too_large_;
          return Refuse(413, fmt::format("request body too large: more than {} bytes after "
                                         "decompression; send smaller batches or raise "
                                         "--max-body-bytes",
                                         server_.options_.max_body_bytes));
        }
        return Refuse(400, "the request body could not be read: " + body.error().message());
      }
      req.body = std::move(*body);
    } else {
      req.body = std::move(msg.body());
    }
    const Route* route = server_.router_.Match(req);
    if (route == nullptr) {
      SetJsonError(ex->res, 404, "no such endpoint: " + req.path + " (see docs/api.md)");
      return Write(ToBeast(*ex), ex->keep_alive);
    }
    if (route->queue == kInline) {
      RunHandler(*route, *ex);
      return Write(ToBeast(*ex), ex->keep_alive);
    }
    WorkQueue& queue = *server_.queues_.at(static_cast<size_t>(route->queue));
    const bool posted = queue.TryPost([self = this->shared_from_this(), ex, route] {
      RunHandler(*route, *ex);
      std::shared_ptr<BeastResponse> out = ToBeast(*ex);
      asio::post(self->stream_.get_executor(),
                 [self, out, keep = ex->keep_alive] { self->Write(out, keep); });
    });
    if (!posted) {
      ++server_.queue_full_;
      Refuse(503,
             fmt::format("the server is busy: its {} queue is full; retry in {} s", queue.name(),
                         server_.options_.retry_after_seconds),
             server_.options_.retry_after_seconds);
    }
  }

  static void RunHandler(const Route& route, Exchange& ex) noexcept {
    try {
      route.handler(ex.req, ex.res);
    } catch (const std::exception& e) {
      WARPSCOPE_LOG_EVERY_N(ERROR, 100, "{} {}: {}", ex.req.method, ex.req.path, e.what());
      ex.res = httplib::Response();
      SetJsonError(ex.res, 500, "internal error");
    } catch (...) {
      ex.res = httplib::Response();
      SetJsonError(ex.res, 500, "internal error");
    }
  }

  void Write(std::shared_ptr<BeastResponse> out, bool keep_alive) {
    ++served_;
    ++server_.requests_;
    const int max = server_.options_.max_requests_per_connection;
    if (max > 0 && served_ >= max && keep_alive) {
      keep_alive = false;
      out->keep_alive(false);
    }
    // A client that does not read its answer is cut like one that does not send.
    lowest().expires_after(server_.options_.request_deadline);
    bhttp::async_write(
        stream_, *out,
        [self = this->shared_from_this(), out, keep_alive](const beast::error_code& ec, size_t) {
          if (ec) return;
          if (!keep_alive) return self->Close();
          self->WaitForRequest();
        });
  }

  void Close() {
    if constexpr (kTls) {
      lowest().expires_after(std::chrono::seconds(1));
      stream_.async_shutdown([self = this->shared_from_this()](const beast::error_code&) {});
    } else {
      beast::error_code ec;
      lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
      // Read what the client still sends (the rest of a refused body) until it closes, so
      // that closing with unread data does not reset the connection before it reads the answer.
      lowest().expires_after(std::chrono::seconds(2));
      Drain();
    }
  }

  void Drain() {
    buffer_.clear();
    stream_.async_read_some(buffer_.prepare(16u << 10),
                            [self = this->shared_from_this()](const beast::error_code& ec, size_t) {
                              if (!ec) self->Drain();
                            });
  }

 public:
  unsigned short remote_port_ = 0;

 private:
  HttpServer::Impl& server_;
  Stream stream_;
  std::string ip_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  int served_ = 0;
};

}  // namespace

bool HttpServer::Impl::Admit(const std::string& ip) {
  std::lock_guard<std::mutex> lock(clients_mu_);
  if (open_.load() >= static_cast<uint64_t>(std::max(0, options_.max_connections))) {
    ++refused_total_;
    return false;
  }
  int& n = clients_[ip];
  if (n >= options_.max_connections_per_client) {
    if (n == 0) clients_.erase(ip);
    ++refused_per_client_;
    return false;
  }
  ++n;
  ++open_;
  return true;
}

void HttpServer::Impl::Release(const std::string& ip) {
  std::lock_guard<std::mutex> lock(clients_mu_);
  auto it = clients_.find(ip);
  if (it != clients_.end() && --it->second <= 0) clients_.erase(it);
}

void HttpServer::Impl::Accept() {
  acceptor_->async_accept(
      asio::make_strand(*ioc_),
      [this](const beast::error_code& ec, tcp::socket socket) { OnAccept(ec, std::move(socket)); });
}

void HttpServer::Impl::OnAccept(const beast::error_code& ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted || !acceptor_->is_open()) return;
  if (ec) {
    // Out of descriptors (EMFILE) or memory: retry shortly instead of spinning.
    WARPSCOPE_LOG_EVERY_N(WARNING, 100,
                          "http accept: {}; raise the descriptor limit (LimitNOFILE) or lower "
                          "--max-connections",
                          ec.message());
    retry_timer_->expires_after(std::chrono::milliseconds(100));
    retry_timer_->async_wait([this](const beast::error_code& wait_ec) {
      if (!wait_ec) Accept();
    });
    return;
  }
  ++accepted_;
  beast::error_code peer_ec;
  const tcp::endpoint peer = socket.remote_endpoint(peer_ec);
  std::string ip = peer_ec ? std::string() : peer.address().to_string();
  if (!Admit(ip)) {
    beast::error_code close_ec;
    socket.close(close_ec);  // accepted and closed: cheaper than an answer
  } else {
    socket.set_option(tcp::no_delay(true), peer_ec);
    if (ssl_) {
      auto s = std::make_shared<Session<true>>(*this, std::move(socket), std::move(ip));
      s->remote_port_ = peer.port();
      s->Run();
    } else {
      auto s = std::make_shared<Session<false>>(*this, std::move(socket), std::move(ip));
      s->remote_port_ = peer.port();
      s->Run();
    }
  }
  Accept();
}

base::Result<int> HttpServer::Impl::Start() {
  if (!options_.tls_cert_file.empty() || !options_.tls_key_file.empty()) {
    ssl_.emplace(asio::ssl::context::tls_server);
    beast::error_code ec;
    ssl_->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                          asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                          asio::ssl::context::no_tlsv1_1,
                      ec);
    if (!ec) ssl_->use_certificate_chain_file(options_.tls_cert_file, ec);
    if (!ec) ssl_->use_private_key_file(options_.tls_key_file, asio::ssl::context::pem, ec);
    if (ec) {
      ssl_.reset();
      return base::Error(base::InvalidArgument(
          "cannot load --tls-cert {} / --tls-key {} ({}): check that both are readable PEM "
          "files and that the key matches the certificate",
          options_.tls_cert_file, options_.tls_key_file, ec.message()));
    }
  }
  ioc_ = std::make_unique<asio::io_context>(std::max(1, options_.io_threads));
  acceptor_ = std::make_unique<tcp::acceptor>(asio::make_strand(*ioc_));
  retry_timer_ = std::make_unique<asio::steady_timer>(acceptor_->get_executor());
  beast::error_code ec;
  tcp::resolver resolver(*ioc_);
  const auto endpoints =
      resolver.resolve(options_.host, std::to_string(options_.port), tcp::resolver::passive, ec);
  if (ec || endpoints.empty()) {
    return base::Error(
        base::Unavailable("cannot resolve the listen host '{}': {}", options_.host, ec.message()));
  }
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  acceptor_->open(endpoint.protocol(), ec);
  if (!ec) acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_->bind(endpoint, ec);
  if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    acceptor_.reset();
    return base::Error(base::Unavailable("cannot listen on {}:{}: {}", options_.host, options_.port,
                                         ec.message()));
  }
  const int port = acceptor_->local_endpoint(ec).port();
  {
    std::lock_guard<std::mutex> lock(queues_mu_);
    for (const QueueOptions& q : options_.queues) {
      queues_.push_back(std::make_unique<WorkQueue>(q.name, q.threads, q.capacity, q.nice));
    }
  }
  Accept();
  for (int i = 0; i < std::max(1, options_.io_threads); ++i) {
    io_threads_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "http-io");
      for (;;) {
        try {
          ioc_->run();
          return;
        } catch (const std::exception& e) {
          WARPSCOPE_LOG_EVERY_N(ERROR, 100, "http I/O thread: {}", e.what());
        } catch (...) {
          WARPSCOPE_LOG_EVERY_N(ERROR, 100, "http I/O thread: unknown exception");
        }
      }
    });
  }
  return port;
}

void HttpServer::Impl::Stop() {
  if (ioc_ == nullptr) return;
  ioc_->stop();
  for (std::thread& t : io_threads_) {
    if (t.joinable()) t.join();
  }
  io_threads_.clear();
  // Running handlers finish; their answers are posted to the stopped loop and dropped with it.
  std::vector<std::unique_ptr<WorkQueue>> queues;
  {
    std::lock_guard<std::mutex> lock(queues_mu_);
    queues.swap(queues_);
  }
  for (auto& q : queues) q->Stop();
  queues.clear();
  retry_timer_.reset();
  acceptor_.reset();
  ioc_.reset();  // destroys every session (closing its socket) with the handlers holding it
}

HttpServerStats HttpServer::Impl::stats() const {
  HttpServerStats s;
  s.open_connections = open_.load();
  s.accepted_connections = accepted_.load();
  s.requests = requests_.load();
  {
    std::lock_guard<std::mutex> lock(queues_mu_);
    for (const auto& q : queues_) s.queued_requests += q->waiting();
  }
  s.refused_max_connections = refused_total_.load();
  s.refused_per_client = refused_per_client_.load();
  s.request_deadline_closed = deadline_closed_.load();
  s.idle_closed = idle_closed_.load();
  s.queue_full = queue_full_.load();
  s.body_too_large = too_large_.load();
  s.bad_requests = bad_requests_.load();
  return s;
}

HttpServer::HttpServer(HttpServerOptions options, const Router& router)
    : impl_(std::make_unique<Impl>(std::move(options), router)) {}

HttpServer::~HttpServer() = default;

base::Result<int> HttpServer::Start() { return impl_->Start(); }

void HttpServer::Stop() { impl_->Stop(); }

HttpServerStats HttpServer::stats() const { return impl_->stats(); }

}  // namespace warpscope::server::http
