// SPDX-License-Identifier: Apache-2.0
// The server's event-driven HTTP/1.1 front end (Boost.Beast over Asio;
// docs/design/http_front_end.md): a few I/O threads hold every connection, read requests under a
// whole-request deadline, and hand complete requests to bounded worker queues; the handlers'
// answers go back on the I/O threads. No Beast or Asio type appears in this header (the Impl is in
// http_server.cc, the one file that compiles them).
//
// Requests and answers are cpp-httplib's plain Request/Response structs: the ApiServer's
// handlers and their tests were written against them, and keeping the types keeps those
// handlers unchanged. Only the structs are used, never httplib's server or its threads.
#ifndef WARPSCOPE_SERVER_HTTP_HTTP_SERVER_H_
#define WARPSCOPE_SERVER_HTTP_HTTP_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "server/http/router.h"

namespace warpscope::server::http {

// A worker queue: its threads run the handlers of the routes that name it.
struct QueueOptions {
  std::string name;  // thread names "http-<name>", and the 503 message
  int threads = 4;
  // Requests waiting beyond the running ones; a request over it is answered 503 (JSON, with
  // Retry-After) at once.
  size_t capacity = 1024;
  // Added to the threads' nice value (0..19; raising it needs no privilege): a queue whose
  // jobs mostly wait for another thread (ingest, for the storage's writer) yields the CPU to
  // it on a busy machine.
  int nice = 0;
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port (Start returns it)
  // https when both are set (PEM files).
  std::string tls_cert_file;
  std::string tls_key_file;
  // Request bodies larger than this, as sent or after gzip/deflate inflation, get 413.
  size_t max_body_bytes = 32u << 20;
  // Headers and body must arrive within this from the request's first byte (also bounds the
  // TLS handshake). Not a per-read timeout: a client dripping a byte a second is still cut.
  std::chrono::milliseconds request_deadline{30'000};
  // A connection with no request in progress is closed after this (also before the first).
  std::chrono::milliseconds keep_alive_timeout{60'000};
  // A connection is closed after answering this many requests (0: no limit).
  int max_requests_per_connection = 1000;
  // Connections over these limits are accepted and closed at once, and counted.
  int max_connections = 10'000;
  int max_connections_per_client = 512;  // per remote IP address
  // Threads running the Asio event loop (accept, TLS, parse, write).
  int io_threads = 2;
  // Worker queues; Route::queue indexes this vector.
  std::vector<QueueOptions> queues = {QueueOptions{.name = "work"}};
  // 503 answers of a full queue carry this Retry-After (seconds).
  int retry_after_seconds = 1;
};

// The front end's own counters, for the server's /metrics.
struct HttpServerStats {
  uint64_t open_connections = 0;         // gauge
  uint64_t accepted_connections = 0;     // since start
  uint64_t requests = 0;                 // answered
  uint64_t queued_requests = 0;          // gauge: waiting in the worker queues
  uint64_t refused_max_connections = 0;  // closed at accept: over max_connections
  uint64_t refused_per_client = 0;       // closed at accept: over max_connections_per_client
  uint64_t request_deadline_closed = 0;  // closed: a request did not arrive within the deadline
  uint64_t idle_closed = 0;              // closed: idle for keep_alive_timeout
  uint64_t queue_full = 0;               // answered 503: a worker queue was full
  uint64_t body_too_large = 0;           // answered 413 (as sent or inflated)
  uint64_t bad_requests = 0;             // unparseable requests answered 400
};

class HttpServer {
 public:
  // `router` must outlive the server; its routes are read by the I/O threads.
  HttpServer(HttpServerOptions options, const Router& router);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, loads the TLS files, and starts the I/O and worker threads; returns the bound port.
  // Errors name the address or file and the remedy.
  [[nodiscard]] base::Result<int> Start();
  // Stops accepting, closes every connection and joins all threads; handlers running finish
  // first. Idempotent.
  void Stop();
  HttpServerStats stats() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace warpscope::server::http

#endif  // WARPSCOPE_SERVER_HTTP_HTTP_SERVER_H_
