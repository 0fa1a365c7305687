// SPDX-License-Identifier: Apache-2.0
// TraceStore keeps the request spans of inference servers (docs/design/inference.md, "Request
// traces") in their own SQLite file beside the metrics database (`<data dir>/traces.db`), so a
// slow trace write never holds the metrics' write lock. It is bounded in time (retention) and in
// size (max_spans): near the bound, each model keeps at most its fair share of the budget, whole
// traces at a time (a hash of the trace id decides); past the bound the oldest spans go. Every
// span left out is counted.
//
// Thread-safe: writes serialise on one connection, reads run concurrently on pooled ones (WAL).
#ifndef WARPSCOPE_SERVER_TRACES_TRACE_STORE_H_
#define WARPSCOPE_SERVER_TRACES_TRACE_STORE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "server/traces/trace_span.h"

namespace warpscope::server::sqlite {
class Connection;
class ReaderPool;
}  // namespace warpscope::server::sqlite

namespace warpscope::server::traces {

struct TraceStoreOptions {
  // The database file; created with its directory's permission when missing.
  std::string path;
  // Spans that started longer ago than this are deleted by Prune().
  base::Duration retention = std::chrono::hours(24);
  // At most this many spans (requests and phases) are kept.
  uint64_t max_spans = 1'000'000;
};

// What one Write did with its spans.
struct TraceWriteResult {
  uint64_t stored = 0;       // new spans (a span stored before is replaced, not counted)
  uint64_t sampled_out = 0;  // left out by the per-model sampling near the bound
  uint64_t evicted = 0;      // older spans deleted to stay under max_spans
};

// The store's counters since it was opened (the server's warpscope_server_trace_* metrics).
struct TraceStoreStats {
  uint64_t stored = 0;
  uint64_t sampled_out = 0;
  uint64_t evicted = 0;
  uint64_t expired = 0;  // deleted by retention
  uint64_t spans = 0;    // held now
};

// One model's requests in a time range.
struct ModelSummary {
  std::string model;
  uint64_t requests = 0;
  uint64_t errors = 0;
  std::vector<SpanOrigin> processes;  // the serving processes that sent them
};

// Which requests a query wants.
struct RequestQuery {
  std::string model;  // empty: every model
  std::string host;   // empty: every host
  base::TimePoint start;
  base::TimePoint end;  // requests that started in [start, end)
  enum class Order { kRecent, kSlowest } order = Order::kRecent;
  size_t limit = 100;
  bool with_phases = true;
};

class TraceStore {
 public:
  // Opens (creating) the database. Errors name the path and the remedy.
  [[nodiscard]] static base::Result<std::unique_ptr<TraceStore>> Open(TraceStoreOptions options);
  ~TraceStore();
  TraceStore(const TraceStore&) = delete;
  TraceStore& operator=(const TraceStore&) = delete;

  // Stores spans (a span with the same trace and span id is replaced). `now` is not used for
  // retention here; spans older than the retention at `now` are left out as expired.
  [[nodiscard]] base::Result<TraceWriteResult> Write(const std::vector<TraceSpan>& spans,
                                                     base::TimePoint now);
  // Deletes spans that started before now - retention; returns how many.
  [[nodiscard]] base::Result<uint64_t> Prune(base::TimePoint now);

  // The models with requests that started in [start, end), most requests first.
  [[nodiscard]] base::Result<std::vector<ModelSummary>> Models(base::TimePoint start,
                                                               base::TimePoint end);
  // Requests as `query` asks, each with its phases when `with_phases`.
  [[nodiscard]] base::Result<std::vector<RequestTrace>> Requests(const RequestQuery& query);
  // The requests of one trace (usually one), with their phases; empty when unknown.
  [[nodiscard]] base::Result<std::vector<RequestTrace>> Trace(const std::string& trace_id);

  TraceStoreStats stats() const;

 private:
  TraceStore(TraceStoreOptions options, std::unique_ptr<sqlite::Connection> writer);
  // The fraction of `model`'s new traces to keep now (1 below the high-water mark).
  double KeepFraction(const std::string& model) const;
  [[nodiscard]] base::Status RecountModels();
  [[nodiscard]] base::Result<uint64_t> EvictOldest(uint64_t count);
  [[nodiscard]] base::Status LoadPhases(sqlite::Connection& db, RequestTrace& trace);

  const TraceStoreOptions options_;
  std::mutex write_mu_;
  std::unique_ptr<sqlite::Connection> writer_;  // guarded by write_mu_
  std::unique_ptr<sqlite::ReaderPool> readers_;
  std::map<std::string, uint64_t> model_spans_;  // guarded by write_mu_: request spans per model
  std::atomic<uint64_t> spans_{0};
  std::atomic<uint64_t> stored_{0};
  std::atomic<uint64_t> sampled_out_{0};
  std::atomic<uint64_t> evicted_{0};
  std::atomic<uint64_t> expired_{0};
};

}  // namespace warpscope::server::traces

#endif  // WARPSCOPE_SERVER_TRACES_TRACE_STORE_H_
