// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_EXPORTERS_SERVER_SERVER_EXPORTER_H_
#define WARPSCOPE_EXPORTERS_SERVER_SERVER_EXPORTER_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "exporters/delivery.h"
#include "exporters/exporter.h"
#include "exporters/http_push.h"
#include "exporters/server/batch_encoder.h"
#include "exporters/server/batch_spool.h"

namespace warpscope::exporters {

// Pushes every export window to the warpscope server (`warpscope agent --server URL`), losing
// nothing that fits in its bounds. docs/design/exporters.md, "Pushing to the server".
//
// Export() encodes the frame as a warpscope.v1.Batch numbered with the next sequence, appends
// it to an in-memory queue and returns (kSuccess; kDropped after Shutdown or for a batch larger
// than a bound). It never blocks on I/O.
//
// Threads:
// - "server-send" POSTs the oldest batch to <URL>/api/v1/ingest/batch, one at a time, in
//   sequence order. A batch leaves the queue only after a 2xx (a BatchResponse with
//   duplicate=true is a success: the server already had it). 5xx, 429, 408, other non-4xx
//   statuses and connection/TLS errors are retried forever with exponential backoff and full
//   jitter (initial_backoff doubling to max_backoff; Retry-After raises the wait, within the
//   cap). Other 4xx (400, 401, 403, 413, ...) cannot succeed on retry: the batch is dropped,
//   counted in dropped_rejected and the status logged once per code with a remedy.
// - "server-spool" (only with buffer_dir) writes each new batch to its own file before the
//   sender may send it (BatchSpool: temp file, fsync, rename). Files are removed after a 2xx or
//   a rejection. On Create() the files already present are queued first, oldest first.
//
// Bounds (nothing else is ever dropped):
// - memory (max_queue_bytes, encoded bytes): over it, the oldest batches that are already on
//   disk release their bytes (re-read from the file when their turn comes); batches only in
//   memory are dropped, oldest first, counted in dropped_full.
// - disk (buffer_max_bytes): over it, the oldest files are deleted and their batches dropped,
//   counted in dropped_full.
// The batch being sent is never dropped by either bound.
//
// Sequence numbers: the first batch of a run gets max(start time in Unix ns, the spool's
// persisted mark, the newest spooled sequence + 1), then +1 per batch. They are unique and
// increasing per agent_id across restarts (the server stores a retried batch once), not dense.
// The mark is persisted in blocks ahead of use, so it also survives the wall clock stepping
// back.
//
// Shutdown(timeout): stops accepting, keeps sending until the queue is empty or the deadline,
// aborts the request in flight, and gives the spool writer up to spool_flush_timeout more to
// put pending batches on disk. With a spool, what was not sent stays on disk for the next
// start; without one it is counted in dropped_shutdown.
class ServerExporter : public Exporter {
 public:
  // The path appended to the server URL.
  static constexpr std::string_view kIngestPath = "/api/v1/ingest/batch";
  static constexpr std::string_view kContentType = "application/x-protobuf";

  struct Options {
    // --server: base URL of the server, "http://warpscope:7070" or "https://..."; a path in it
    // is kept as a prefix ("https://gw/warpscope" -> https://gw/warpscope/api/v1/ingest/batch).
    std::string server_url;
    // Identifies this agent to the server (with `sequence`, the dedup key). Must be stable
    // across restarts of the agent on one host, e.g. the host name.
    std::string agent_id;
    std::string host;  // Batch.host; empty: the frame's host entity id
    std::vector<std::pair<std::string, std::string>> tags;  // --tags
    std::string agent_version = "0.1.0";                    // User-Agent: warpscope-agent/<v>
    // --auth-token-file: its content, trimmed, is sent as "Authorization: Bearer <token>".
    // Empty: no Authorization header. Read once by Create().
    std::string auth_token_file;
    // --tls-ca-file: PEM CAs that verify an https server instead of the system CAs.
    std::string tls_ca_file;
    base::Duration request_timeout = std::chrono::seconds(10);  // connect, read, write each
    size_t max_queue_bytes = size_t{64} << 20;                  // in-memory encoded batches
    // --buffer-dir: the disk spool; empty: memory only (batches queued at exit are lost).
    std::string buffer_dir;
    uint64_t buffer_max_bytes = uint64_t{256} << 20;  // --buffer-max-bytes
    base::Duration initial_backoff = std::chrono::seconds(1);
    base::Duration max_backoff = std::chrono::seconds(60);
    // Shutdown(): how long, past its timeout, pending batches may take to reach the spool.
    base::Duration spool_flush_timeout = std::chrono::seconds(5);
    // Floor of the first sequence (see above); the epoch (default) means "now".
    base::TimePoint start_time{};
    uint64_t jitter_seed = 0;  // 0: random; tests fix it
  };

  struct Stats {
    uint64_t sent = 0;              // batches acknowledged with a 2xx (duplicates included)
    uint64_t duplicates = 0;        // of those, answered duplicate=true (stored earlier)
    uint64_t dropped_full = 0;      // dropped by the memory or disk bound (oldest first)
    uint64_t dropped_rejected = 0;  // refused with a 4xx other than 408/429, or unreadable file
    uint64_t dropped_shutdown = 0;  // still queued at Shutdown without a spool to keep them
    uint64_t retries = 0;           // attempts after a failed one
    uint64_t queued = 0;            // batches waiting, the one in flight included
    uint64_t queued_bytes = 0;      // encoded bytes held in memory
    uint64_t spooled_bytes = 0;     // bytes of batch files in buffer_dir
    uint64_t next_sequence = 0;     // the sequence the next Export() gets
    std::string last_error;         // the latest failed attempt, "" if none yet
  };

  // Validates the options, reads the token file, opens the spool and queues what it holds,
  // and starts the threads. Errors name the flag at fault and the remedy.
  [[nodiscard]] static base::Result<std::unique_ptr<ServerExporter>> Create(Options options);
  ~ServerExporter() override;  // Shutdown(0) if not shut down yet

  ExportResult Export(const model::Frame& frame) noexcept override;
  void Shutdown(base::Duration timeout) override;
  std::string_view name() const override { return "server"; }

  // Thread-safe.
  Stats stats() const;

  // Blocks until `done(stats())` holds or `timeout` passes; returns the last value of `done`.
  // Wakes on every state change, so tests wait on conditions instead of sleeping.
  bool WaitForStatsForTesting(const std::function<bool(const Stats&)>& done,
                              base::Duration timeout) const;

 private:
  struct Entry {
    uint64_t sequence = 0;
    uint64_t size = 0;                         // encoded bytes
    std::shared_ptr<const std::string> bytes;  // null: only in the spool file
    bool on_disk = false;                      // its spool file exists
    bool spool_pending = false;                // waiting for the spool writer
  };
  enum class Outcome { kDelivered, kDuplicate, kRejected, kAbandoned };

  ServerExporter(Options options, HttpEndpoint endpoint, std::string token,
                 std::unique_ptr<BatchSpool> spool);
  void Start(const std::vector<BatchSpool::File>& spooled, uint64_t next_sequence);

  void RunSender(std::stop_token stop);
  void RunSpool(const std::stop_token& stop);
  // Sends one batch until it is delivered or rejected (kAbandoned: stopped or past the
  // shutdown deadline). Sender thread.
  Outcome Deliver(const std::string& body, uint64_t sequence, std::stop_token& stop);
  void SetLastError(std::string error);

  // All below with monitor_.mu held.
  Stats StatsLocked() const;
  Entry* FindLocked(uint64_t sequence);
  void EnforceMemoryBoundLocked();
  void EnforceSpoolBoundLocked();
  bool SpoolPendingLocked() const;

  const Options options_;
  const HttpEndpoint endpoint_;
  const std::string token_;
  const BatchEncoder encoder_;
  std::unique_ptr<httplib::Client> client_;  // sender thread (stop() from Shutdown)
  std::unique_ptr<BatchSpool> spool_;        // null without buffer_dir
  std::set<int> logged_statuses_;            // sender thread: 4xx codes logged once
  RetryPolicy retry_;                        // sender thread
  uint64_t reserved_ = 0;                    // spool thread: the spool's persisted mark

  // Guards the state below and announces every change of it (both loops wait on it).
  mutable LoopMonitor monitor_;
  std::deque<Entry> queue_;  // ascending sequence; front() is in flight while sender_.busy()
  bool outage_logged_ = false;
  bool full_logged_ = false;
  uint64_t next_sequence_ = 0;
  uint64_t memory_bytes_ = 0;
  uint64_t spool_bytes_ = 0;
  Stats counters_;  // the monotonic counters and last_error; gauges come from the state

  // Last: their threads use everything above. The spool writer is busy while it holds a
  // batch; the sender's loop also holds accepting and the shutdown deadline.
  SendLoop spooler_{"server-spool", monitor_};
  SendLoop sender_{"server-send", monitor_};
};

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_SERVER_SERVER_EXPORTER_H_
