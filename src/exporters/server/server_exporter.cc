// SPDX-License-Identifier: Apache-2.0
#include "exporters/server/server_exporter.h"

#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "base/logging.h"
#include "base/token_file.h"

namespace warpscope::exporters {

namespace {

// Sequences are persisted this far ahead of use, so the spool's "sequence" file is rewritten
// once per 4096 batches (about 3 days at one window a minute), not once per batch.
constexpr uint64_t kReserveAhead = 4096;

// "512 bytes", "64.0 MiB": for log lines.
std::string FormatBytes(uint64_t n) {
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  return n < kMiB ? fmt::format("{} bytes", n)
                  : fmt::format("{:.1f} MiB", static_cast<double>(n) / static_cast<double>(kMiB));
}

// Why a request got no response, with a remedy where one is likely.
std::string DescribeError(httplib::Error err) {
  switch (err) {
    case httplib::Error::Connection:
      return "cannot connect (is the server running and reachable?)";
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLServerVerification:
      return fmt::format(
          "TLS failed ({}); check the server certificate, its host name and "
          "--tls-ca-file",
          httplib::to_string(err));
    default:
      return fmt::format("request failed ({})", httplib::to_string(err));
  }
}

// Statuses where a retry cannot help: the request itself is wrong. 408 (the server timed out
// reading the request) and 429 (rate limited) are 4xx but transient.
bool IsRejected(int status) {
  return status >= 400 && status < 500 && status != 408 && status != 429;
}

// The remedy for a rejected batch, by status.
std::string RejectionHint(int status, uint64_t size, std::string_view setting_url) {
  switch (status) {
    case 400:
      return "the server could not read the batch; check that the agent and server versions "
             "are compatible";
    case 401:
      return "the token is missing or wrong; put the server's ingest token in --auth-token-file";
    case 403:
      return "the token may not ingest; use a token with ingest permission in --auth-token-file";
    case 404:
      return fmt::format("no ingest endpoint there; check that --server {} is a warpscope server",
                         setting_url);
    case 413:
      return fmt::format(
          "the batch ({} bytes) is over the server's request size limit; raise the limit on the "
          "server or shorten the export interval",
          size);
    default:
      return "the server refused the batch; see its message";
  }
}

bool ParseDuplicate(const httplib::Response& res) {
  if (res.get_header_value("Content-Type").find("json") != std::string::npos) {
    auto j = nlohmann::json::parse(res.body, nullptr, /*allow_exceptions=*/false);
    return j.is_object() && j.contains("duplicate") && j["duplicate"].is_boolean() &&
           j["duplicate"].get<bool>();
  }
  v1::BatchResponse reply;
  return reply.ParseFromString(res.body) && reply.duplicate();
}

}  // namespace

base::Result<std::unique_ptr<ServerExporter>> ServerExporter::Create(Options options) {
  constexpr std::string_view kExample = "http://warpscope-server:7070";
  if (options.server_url.empty()) {
    return base::Error(base::InvalidArgument("--server: empty URL, e.g. {}", kExample));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(HttpEndpoint endpoint,
                             ParseHttpEndpoint(options.server_url, "--server", kExample));
  if (endpoint.path.find_first_of("?#") != std::string::npos) {
    return base::Error(base::InvalidArgument(
        "--server '{}': a query or fragment is not allowed; give the base URL, e.g. {}",
        options.server_url, kExample));
  }
  while (endpoint.path.ends_with('/')) {
    endpoint.path.pop_back();
  }
  endpoint.path += kIngestPath;
  const bool https = endpoint.scheme_host_port.starts_with("https://");

  if (options.agent_id.empty() || !IsValidHeaderValue(options.agent_id)) {
    return base::Error(base::InvalidArgument(
        "server exporter: the agent id is empty or has line breaks; use the host name"));
  }
  if (options.max_queue_bytes == 0) {
    return base::Error(base::InvalidArgument("server exporter: max_queue_bytes must be > 0"));
  }
  if (!options.buffer_dir.empty() && options.buffer_max_bytes == 0) {
    return base::Error(base::InvalidArgument(
        "--buffer-max-bytes=0: must be > 0 with --buffer-dir (default 256 MiB)"));
  }
  if (options.request_timeout <= base::Duration::zero() ||
      options.initial_backoff <= base::Duration::zero() ||
      options.max_backoff < options.initial_backoff) {
    return base::Error(base::InvalidArgument(
        "server exporter: the request timeout and initial backoff must be > 0 and the maximum "
        "backoff at least the initial one"));
  }

  if (!options.tls_ca_file.empty()) {
    if (!https) {
      return base::Error(base::InvalidArgument(
          "--tls-ca-file is set but --server '{}' is not https://; use an https:// URL or drop "
          "--tls-ca-file",
          options.server_url));
    }
    if (access(options.tls_ca_file.c_str(), R_OK) != 0) {
      return base::Error(base::NotFound("--tls-ca-file {}: cannot read it: {}", options.tls_ca_file,
                                        base::ErrnoString(errno)));
    }
  }

  std::string token;
  if (!options.auth_token_file.empty()) {
    WARPSCOPE_ASSIGN_OR_RETURN(token,
                               base::ReadTokenFile("--auth-token-file", options.auth_token_file));
    const std::string& url = options.server_url;
    const bool loopback = url.rfind("http://127.", 0) == 0 ||
                          url.rfind("http://localhost", 0) == 0 ||
                          url.rfind("http://[::1]", 0) == 0;
    if (!https && !loopback) {
      WARPSCOPE_LOG(WARNING,
                    "--server {} is plain http: the ingest token travels unencrypted; use https "
                    "outside a trusted network",
                    options.server_url);
    }
  }

  std::unique_ptr<BatchSpool> spool;
  std::vector<BatchSpool::File> spooled;
  uint64_t next = static_cast<uint64_t>(std::max<int64_t>(
      0, base::ToUnixNanos(options.start_time == base::TimePoint{} ? base::RealClock::Get().Now()
                                                                   : options.start_time)));
  if (!options.buffer_dir.empty()) {
    WARPSCOPE_ASSIGN_OR_RETURN(spool, BatchSpool::Open(options.buffer_dir));
    WARPSCOPE_ASSIGN_OR_RETURN(spooled, spool->List());
    next = std::max(next, spool->reserved_sequence());
    if (!spooled.empty()) {
      next = std::max(next, spooled.back().sequence + 1);
    }
    if (base::Status st = spool->ReserveSequences(next + kReserveAhead); !st.ok()) {
      return base::Error(base::ErrStatus(st.code(),
                                         "--buffer-dir {}: {}; the directory must be writable",
                                         options.buffer_dir, st.message()));
    }
  }

  auto exporter = std::unique_ptr<ServerExporter>(new ServerExporter(
      std::move(options), std::move(endpoint), std::move(token), std::move(spool)));
  exporter->Start(spooled, next);
  return exporter;
}

ServerExporter::ServerExporter(Options options, HttpEndpoint endpoint, std::string token,
                               std::unique_ptr<BatchSpool> spool)
    : options_(std::move(options)),
      endpoint_(std::move(endpoint)),
      token_(std::move(token)),
      encoder_({.agent_id = options_.agent_id, .host = options_.host, .tags = options_.tags}),
      client_(MakeHttpClient(
          endpoint_, {.timeout = options_.request_timeout, .tls_ca_file = options_.tls_ca_file})),
      spool_(std::move(spool)),
      retry_({.backoff = {.initial = options_.initial_backoff,
                          .max = options_.max_backoff,
                          .full_jitter = true,
                          .seed = options_.jitter_seed},
              .retry_after = RetryPolicy::RetryAfter::kExtendsBackoff}) {}

void ServerExporter::Start(const std::vector<BatchSpool::File>& spooled, uint64_t next_sequence) {
  {
    std::lock_guard<std::mutex> lock(monitor_.mu);
    next_sequence_ = next_sequence;
    if (spool_ != nullptr) {
      reserved_ = spool_->reserved_sequence();
    }
    for (const BatchSpool::File& f : spooled) {
      queue_.push_back({.sequence = f.sequence, .size = f.size, .on_disk = true});
      spool_bytes_ += f.size;
    }
    EnforceSpoolBoundLocked();
    if (!queue_.empty()) {
      WARPSCOPE_LOG(INFO,
                    "--buffer-dir {}: {} batch(es) ({}) left from an earlier run; sending them "
                    "first",
                    options_.buffer_dir, queue_.size(), FormatBytes(spool_bytes_));
    }
  }
  if (spool_ != nullptr) {
    spooler_.Start([this](std::stop_token stop) { RunSpool(stop); });
  }
  sender_.Start([this](std::stop_token stop) { RunSender(std::move(stop)); });
}

ServerExporter::~ServerExporter() { Shutdown(base::Duration::zero()); }

ExportResult ServerExporter::Export(const model::Frame& frame) noexcept {
  try {
    uint64_t sequence = 0;
    {
      std::lock_guard<std::mutex> lock(monitor_.mu);
      if (!sender_.accepting()) {
        return ExportResult::kDropped;
      }
      sequence = next_sequence_++;
    }
    // Encoding outside the lock keeps the sender and spool threads unblocked; Export() is
    // never called concurrently, so batches still enter the queue in sequence order.
    auto bytes = std::make_shared<const std::string>(encoder_.Encode(frame, sequence));
    const uint64_t size = bytes->size();
    {
      std::lock_guard<std::mutex> lock(monitor_.mu);
      if (size > options_.max_queue_bytes ||
          (spool_ != nullptr && size > options_.buffer_max_bytes)) {
        ++counters_.dropped_full;
        WARPSCOPE_LOG_EVERY_N(
            WARNING, 100,
            "server exporter: batch {} is {} bytes, more than the queue bound ({} bytes in "
            "memory{}); dropped. Raise the bound or export fewer series per window",
            sequence, size, options_.max_queue_bytes,
            spool_ != nullptr ? fmt::format(", {} on disk", options_.buffer_max_bytes) : "");
        monitor_.cv.notify_all();
        return ExportResult::kDropped;
      }
      queue_.push_back({.sequence = sequence,
                        .size = size,
                        .bytes = std::move(bytes),
                        .spool_pending = spool_ != nullptr});
      memory_bytes_ += size;
      EnforceMemoryBoundLocked();
    }
    monitor_.cv.notify_all();
    return ExportResult::kSuccess;
  } catch (...) {
    WARPSCOPE_LOG_FIRST_N(ERROR, 1, "server exporter: out of memory encoding a window");
    return ExportResult::kFailure;
  }
}

ServerExporter::Entry* ServerExporter::FindLocked(uint64_t sequence) {
  auto it = std::lower_bound(queue_.begin(), queue_.end(), sequence,
                             [](const Entry& e, uint64_t s) { return e.sequence < s; });
  return it != queue_.end() && it->sequence == sequence ? &*it : nullptr;
}

bool ServerExporter::SpoolPendingLocked() const {
  // Batches are spooled in order, so the pending ones are a suffix of the queue.
  return !queue_.empty() && queue_.back().spool_pending;
}

void ServerExporter::EnforceMemoryBoundLocked() {
  const size_t first = sender_.busy() ? 1 : 0;  // the batch being sent keeps its bytes
  // First release the bytes of batches that are safe on disk (read back when their turn
  // comes), oldest first; only then drop batches that exist nowhere else.
  for (size_t i = first; memory_bytes_ > options_.max_queue_bytes && i < queue_.size(); ++i) {
    Entry& e = queue_[i];
    if (e.on_disk && e.bytes != nullptr) {
      memory_bytes_ -= e.size;
      e.bytes.reset();
    }
  }
  size_t i = first;
  while (memory_bytes_ > options_.max_queue_bytes && i < queue_.size()) {
    Entry& e = queue_[i];
    if (e.bytes == nullptr) {
      ++i;
      continue;
    }
    memory_bytes_ -= e.size;
    ++counters_.dropped_full;
    if (!full_logged_) {
      full_logged_ = true;
      WARPSCOPE_LOG(WARNING,
                    "server exporter: the memory queue ({}) is full while {} is slow or down; "
                    "dropping the oldest batches (counted).{}",
                    FormatBytes(options_.max_queue_bytes), options_.server_url,
                    spool_ != nullptr ? " The spool in --buffer-dir cannot keep up"
                                      : " Set --buffer-dir to keep more on disk");
    }
    queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void ServerExporter::EnforceSpoolBoundLocked() {
  size_t i = (sender_.busy() ? 1 : 0);
  while (spool_bytes_ > options_.buffer_max_bytes && i < queue_.size()) {
    Entry& e = queue_[i];
    if (!e.on_disk) {
      ++i;
      continue;
    }
    if (base::Status st = spool_->Remove(e.sequence); !st.ok()) {
      WARPSCOPE_LOG_EVERY_N(WARNING, 100, "--buffer-dir: {}", st.message());
    }
    spool_bytes_ -= e.size;
    if (e.bytes != nullptr) {
      memory_bytes_ -= e.size;
    }
    ++counters_.dropped_full;
    if (!full_logged_) {
      full_logged_ = true;
      WARPSCOPE_LOG(WARNING,
                    "--buffer-dir {}: over --buffer-max-bytes ({}) while {} is slow or down; "
                    "deleting the oldest batches (counted)",
                    options_.buffer_dir, FormatBytes(options_.buffer_max_bytes),
                    options_.server_url);
    }
    queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void ServerExporter::RunSpool(const std::stop_token& stop) {
  while (true) {
    uint64_t sequence = 0;
    std::shared_ptr<const std::string> bytes;
    {
      SendLoop::Lock lock(monitor_.mu);
      if (!spooler_.WaitForWork(lock, stop, [&] { return SpoolPendingLocked(); })) {
        break;
      }
      auto it = queue_.end();
      while (it != queue_.begin() && std::prev(it)->spool_pending) {
        --it;
      }
      sequence = it->sequence;
      bytes = it->bytes;
    }
    base::Status st = base::OkStatus();
    if (sequence >= reserved_) {
      st = spool_->ReserveSequences(sequence + kReserveAhead);
      if (st.ok()) {
        reserved_ = sequence + kReserveAhead;
      }
    }
    if (st.ok()) {
      st = spool_->Write(sequence, *bytes);
    }
    bytes.reset();
    {
      SendLoop::Lock lock(monitor_.mu);
      spooler_.FinishItem(lock);
      Entry* e = FindLocked(sequence);
      if (e == nullptr) {
        // Dropped by the memory bound while being written.
        if (st.ok()) {
          (void)spool_->Remove(sequence);
        }
      } else {
        e->spool_pending = false;
        if (st.ok()) {
          e->on_disk = true;
          spool_bytes_ += e->size;
          EnforceSpoolBoundLocked();
          EnforceMemoryBoundLocked();
        }
      }
      if (!st.ok()) {
        counters_.last_error = st.message();
      }
    }
    if (!st.ok()) {
      WARPSCOPE_LOG_EVERY_N(WARNING, 100,
                            "--buffer-dir {}: cannot write batch {}: {}; it is kept in memory "
                            "only and lost if the agent stops before it is delivered",
                            options_.buffer_dir, sequence, st.message());
    }
    monitor_.cv.notify_all();
  }
}

void ServerExporter::RunSender(std::stop_token stop) {
  while (true) {
    Entry head;
    {
      SendLoop::Lock lock(monitor_.mu);
      if (!sender_.WaitForWork(lock, stop,
                               [&] { return !queue_.empty() && !queue_.front().spool_pending; })) {
        break;
      }
      head = queue_.front();
    }
    std::shared_ptr<const std::string> body = head.bytes;
    Outcome outcome = Outcome::kRejected;
    if (body == nullptr) {
      auto read = spool_->Read(head.sequence);
      if (read) {
        body = std::make_shared<const std::string>(std::move(*read));
      } else {
        WARPSCOPE_LOG(ERROR, "--buffer-dir: cannot read batch {}: {}; dropping it", head.sequence,
                      read.error().message());
        SetLastError(read.error().message());
      }
    }
    if (body != nullptr) {
      outcome = Deliver(*body, head.sequence, stop);
    }
    body.reset();
    bool remove_file = false;
    {
      SendLoop::Lock lock(monitor_.mu);
      sender_.FinishItem(lock);
      if (outcome == Outcome::kAbandoned) {
        break;  // the loop counts as exited: Shutdown need not wait for its deadline
      }
      WARPSCOPE_CHECK(!queue_.empty() && queue_.front().sequence == head.sequence);
      const Entry& done = queue_.front();
      remove_file = done.on_disk;
      if (done.on_disk) {
        spool_bytes_ -= done.size;
      }
      if (done.bytes != nullptr) {
        memory_bytes_ -= done.size;
      }
      queue_.pop_front();
      switch (outcome) {
        case Outcome::kDuplicate:
          ++counters_.duplicates;
          [[fallthrough]];
        case Outcome::kDelivered:
          ++counters_.sent;
          full_logged_ = false;
          break;
        case Outcome::kRejected:
        case Outcome::kAbandoned:
          ++counters_.dropped_rejected;
          break;
      }
    }
    if (remove_file) {
      if (base::Status st = spool_->Remove(head.sequence); !st.ok()) {
        WARPSCOPE_LOG_EVERY_N(WARNING, 100, "--buffer-dir: {}", st.message());
      }
    }
    monitor_.cv.notify_all();
  }
}

void ServerExporter::SetLastError(std::string error) {
  {
    std::lock_guard<std::mutex> lock(monitor_.mu);
    counters_.last_error = std::move(error);
  }
  monitor_.cv.notify_all();
}

ServerExporter::Outcome ServerExporter::Deliver(const std::string& body, uint64_t sequence,
                                                std::stop_token& stop) {
  httplib::Headers headers;
  headers.emplace("User-Agent", "warpscope-agent/" + options_.agent_version);
  headers.emplace("Accept", std::string(kContentType));
  if (!token_.empty()) {
    headers.emplace("Authorization", "Bearer " + token_);
  }
  const std::string url = endpoint_.scheme_host_port + endpoint_.path;
  retry_.Reset();
  while (true) {
    if (stop.stop_requested()) {
      return Outcome::kAbandoned;
    }
    auto res = client_->Post(endpoint_.path, headers, body, std::string(kContentType));
    if (res && res->status >= 200 && res->status < 300) {
      const bool duplicate = ParseDuplicate(*res);
      bool recovered = false;
      {
        std::lock_guard<std::mutex> lock(monitor_.mu);
        recovered = outage_logged_;
        outage_logged_ = false;
      }
      if (recovered) {
        WARPSCOPE_LOG(INFO, "server exporter: {} accepts batches again (batch {} delivered)", url,
                      sequence);
      }
      return duplicate ? Outcome::kDuplicate : Outcome::kDelivered;
    }
    if (res && IsRejected(res->status)) {
      std::string error = fmt::format("HTTP {} from {} for batch {}: {}", res->status, url,
                                      sequence, BodySnippet(res->body));
      if (logged_statuses_.insert(res->status).second) {
        WARPSCOPE_LOG(ERROR,
                      "server exporter: {}; dropping the batch ({}). Further batches "
                      "refused with {} are dropped without this message; see the "
                      "dropped_rejected count",
                      error, RejectionHint(res->status, body.size(), options_.server_url),
                      res->status);
      }
      SetLastError(std::move(error));
      return Outcome::kRejected;
    }
    std::string error =
        res ? fmt::format("HTTP {} from {}: {}", res->status, url, BodySnippet(res->body))
            : fmt::format("{}: {}", url, DescribeError(res.error()));
    if (stop.stop_requested()) {
      return Outcome::kAbandoned;
    }
    // Retry-After raises the jittered wait, within max_backoff; no attempt limit.
    const base::Duration wait =
        retry_.NextWait(res ? RetryAfter(*res) : std::nullopt).value_or(options_.max_backoff);
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(monitor_.mu);
      ++counters_.retries;
      first = !outage_logged_;
      outage_logged_ = true;
      counters_.last_error = error;
    }
    monitor_.cv.notify_all();
    if (first) {
      WARPSCOPE_LOG(WARNING,
                    "server exporter: cannot deliver batch {}: {}; retrying with backoff up to "
                    "{}. Batches queue meanwhile (up to {} in memory{})",
                    sequence, error, base::FormatDuration(options_.max_backoff),
                    FormatBytes(options_.max_queue_bytes),
                    spool_ != nullptr
                        ? fmt::format(", {} in {}", FormatBytes(options_.buffer_max_bytes),
                                      options_.buffer_dir)
                        : std::string());
    } else {
      WARPSCOPE_LOG_EVERY_N(WARNING, 50, "server exporter: still retrying batch {}: {}", sequence,
                            error);
    }
    if (!sender_.WaitBeforeRetry(wait, stop)) {
      return Outcome::kAbandoned;
    }
  }
}

void ServerExporter::Shutdown(base::Duration timeout) {
  if (!sender_.Shutdown(
          timeout, [&] { return queue_.empty(); }, [&] { client_->stop(); })) {
    return;
  }
  if (spool_ != nullptr) {
    // Pending batches get until the shutdown deadline (if still ahead) plus
    // spool_flush_timeout to reach the disk.
    base::Duration flush = options_.spool_flush_timeout;
    {
      std::lock_guard<std::mutex> lock(monitor_.mu);
      const auto ahead = std::chrono::duration_cast<base::Duration>(
          std::max(sender_.deadline() - std::chrono::steady_clock::now(),
                   std::chrono::steady_clock::duration::zero()));
      flush = ahead > base::Duration::max() - flush ? base::Duration::max() : ahead + flush;
    }
    spooler_.Shutdown(
        flush, [&] { return !SpoolPendingLocked(); }, nullptr);
  }
  uint64_t kept = 0;
  uint64_t lost = 0;
  {
    std::lock_guard<std::mutex> lock(monitor_.mu);
    for (const Entry& e : queue_) {
      ++(e.on_disk ? kept : lost);
    }
    counters_.dropped_shutdown += lost;
    queue_.clear();
    memory_bytes_ = 0;
  }
  if (kept > 0) {
    WARPSCOPE_LOG(INFO, "server exporter: {} unsent batch(es) ({}) stay in {} for the next start",
                  kept, FormatBytes(spool_bytes_), options_.buffer_dir);
  }
  if (lost > 0) {
    WARPSCOPE_LOG(WARNING,
                  "server exporter: {} unsent batch(es) dropped at shutdown ({} unreachable; "
                  "set --buffer-dir to keep them across restarts)",
                  lost, options_.server_url);
  }
  spool_.reset();  // releases the directory lock
  monitor_.cv.notify_all();
}

ServerExporter::Stats ServerExporter::StatsLocked() const {
  Stats s = counters_;
  s.queued = queue_.size();
  s.queued_bytes = memory_bytes_;
  s.spooled_bytes = spool_bytes_;
  s.next_sequence = next_sequence_;
  return s;
}

ServerExporter::Stats ServerExporter::stats() const {
  std::lock_guard<std::mutex> lock(monitor_.mu);
  return StatsLocked();
}

bool ServerExporter::WaitForStatsForTesting(const std::function<bool(const Stats&)>& done,
                                            base::Duration timeout) const {
  std::unique_lock<std::mutex> lock(monitor_.mu);
  return monitor_.cv.wait_for(lock, timeout, [&] { return done(StatsLocked()); });
}

}  // namespace warpscope::exporters
