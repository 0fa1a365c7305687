// SPDX-License-Identifier: Apache-2.0
#include "server/traces/trace_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <unordered_map>
#include <utility>

#include "server/storage/label_codec.h"
#include "server/storage/sqlite_db.h"

namespace warpscope::server::traces {
namespace {

using sqlite::Connection;
using sqlite::Statement;

constexpr std::string_view kSchema = R"sql(
CREATE TABLE IF NOT EXISTS spans (
  trace_id TEXT NOT NULL,
  span_id TEXT NOT NULL,
  parent_span_id TEXT NOT NULL,
  role INTEGER NOT NULL,
  name TEXT NOT NULL,
  phase TEXT NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  error INTEGER NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  service TEXT NOT NULL,
  model TEXT NOT NULL,
  request_id TEXT NOT NULL,
  ttft_ns INTEGER,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  cached_tokens INTEGER,
  attributes TEXT NOT NULL,
  PRIMARY KEY (trace_id, span_id)
);
CREATE INDEX IF NOT EXISTS spans_by_start ON spans(start_ns);
CREATE INDEX IF NOT EXISTS requests_by_model ON spans(role, model, start_ns);
CREATE INDEX IF NOT EXISTS spans_by_parent ON spans(trace_id, parent_span_id);
)sql";

// The columns every read selects, in ReadSpan's order.
constexpr std::string_view kColumns =
    "trace_id, span_id, parent_span_id, role, name, phase, start_ns, end_ns, error, host, pid, "
    "service, model, request_id, ttft_ns, prompt_tokens, completion_tokens, cached_tokens, "
    "attributes";

// Near the bound: sampling starts at this share of max_spans.
constexpr double kHighWater = 0.9;
// Eviction frees this share of max_spans beyond what is needed, so that a store at its bound
// does not evict on every write.
constexpr double kEvictionSlack = 0.01;

std::optional<int64_t> OptionalInt(const Statement& s, int column) {
  if (s.ColumnIsNull(column)) return std::nullopt;
  return s.ColumnInt(column);
}

TraceSpan ReadSpan(const Statement& s) {
  TraceSpan span;
  span.trace_id = std::string(s.ColumnText(0));
  span.span_id = std::string(s.ColumnText(1));
  span.parent_span_id = std::string(s.ColumnText(2));
  span.role = s.ColumnInt(3) == 0 ? SpanRole::kRequest : SpanRole::kPhase;
  span.name = std::string(s.ColumnText(4));
  span.phase = std::string(s.ColumnText(5));
  span.start_ns = s.ColumnInt(6);
  span.end_ns = s.ColumnInt(7);
  span.error = s.ColumnInt(8) != 0;
  span.origin.host = std::string(s.ColumnText(9));
  span.origin.pid = s.ColumnInt(10);
  span.origin.service = std::string(s.ColumnText(11));
  span.model = std::string(s.ColumnText(12));
  span.request_id = std::string(s.ColumnText(13));
  span.ttft_ns = OptionalInt(s, 14);
  span.prompt_tokens = OptionalInt(s, 15);
  span.completion_tokens = OptionalInt(s, 16);
  span.cached_tokens = OptionalInt(s, 17);
  span.attributes = DecodeLabels(s.ColumnText(18));
  return span;
}

void BindOptional(Statement& s, int index, const std::optional<int64_t>& v) {
  if (v) {
    s.BindInt(index, *v);
  } else {
    s.BindNull(index);
  }
}

// FNV-1a of the trace id mapped to [0, 1): the same trace is kept or left out as a whole, by
// every server and after a restart.
double TraceHash(std::string_view trace_id) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : trace_id) {
    h ^= c;
    h *= 1099511628211ull;
  }
  // FNV's last bytes barely reach the high bits: mix them (splitmix64's finalizer).
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return static_cast<double>(h >> 11) / static_cast<double>(1ull << 53);
}

}  // namespace

std::optional<int64_t> RequestTrace::Ttft() const {
  if (request.ttft_ns) return request.ttft_ns;
  for (const TraceSpan& p : phases) {
    if (p.phase == "prefill") return p.end_ns - request.start_ns;
  }
  return std::nullopt;
}

base::Result<std::unique_ptr<TraceStore>> TraceStore::Open(TraceStoreOptions options) {
  if (options.max_spans == 0) {
    return base::Error(base::InvalidArgument(
        "trace store: max_spans is 0; give --trace-max-spans a positive number"));
  }
  std::filesystem::path dir = std::filesystem::path(options.path).parent_path();
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  WARPSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<Connection> writer,
                             Connection::Open(options.path, /*create=*/true));
  WARPSCOPE_RETURN_IF_ERROR(
      writer->Exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"));
  WARPSCOPE_RETURN_IF_ERROR(writer->Exec(kSchema));
  std::unique_ptr<TraceStore> store(new TraceStore(std::move(options), std::move(writer)));
  WARPSCOPE_ASSIGN_OR_RETURN(int64_t count,
                             store->writer_->QueryInt("SELECT COUNT(*) FROM spans", 0));
  store->spans_ = static_cast<uint64_t>(count);
  std::lock_guard lock(store->write_mu_);
  WARPSCOPE_RETURN_IF_ERROR(store->RecountModels());
  return store;
}

TraceStore::TraceStore(TraceStoreOptions options, std::unique_ptr<sqlite::Connection> writer)
    : options_(std::move(options)),
      writer_(std::move(writer)),
      readers_(std::make_unique<sqlite::ReaderPool>(options_.path, 4)) {}

TraceStore::~TraceStore() = default;

TraceStoreStats TraceStore::stats() const {
  return TraceStoreStats{.stored = stored_.load(),
                         .sampled_out = sampled_out_.load(),
                         .evicted = evicted_.load(),
                         .expired = expired_.load(),
                         .spans = spans_.load()};
}

base::Status TraceStore::RecountModels() {
  model_spans_.clear();
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement s,
      writer_->Prepare("SELECT model, COUNT(*) FROM spans WHERE role = 0 GROUP BY model"));
  return s.ForEachRow([&](const Statement& row) {
    model_spans_[std::string(row.ColumnText(0))] = static_cast<uint64_t>(row.ColumnInt(1));
  });
}

double TraceStore::KeepFraction(const std::string& model) const {
  if (static_cast<double>(spans_.load()) < kHighWater * static_cast<double>(options_.max_spans)) {
    return 1.0;
  }
  uint64_t requests = 0;
  for (const auto& [m, n] : model_spans_) requests += n;
  if (model_spans_.empty() || requests == 0) return 1.0;
  const size_t models = model_spans_.size() + (model_spans_.contains(model) ? 0 : 1);
  const double share = static_cast<double>(requests) / static_cast<double>(models);
  auto fraction = [&](uint64_t count) {
    return count <= share ? 1.0 : share / static_cast<double>(count);
  };
  if (!model.empty()) {
    auto it = model_spans_.find(model);
    return it == model_spans_.end() ? 1.0 : fraction(it->second);
  }
  // A phase whose request is not known yet: the most restrictive model's fraction.
  double lowest = 1.0;
  for (const auto& [m, n] : model_spans_) lowest = std::min(lowest, fraction(n));
  return lowest;
}

base::Result<TraceWriteResult> TraceStore::Write(const std::vector<TraceSpan>& spans,
                                                 base::TimePoint now) {
  TraceWriteResult result;
  std::lock_guard lock(write_mu_);
  const int64_t oldest = base::ToUnixNanos(now - options_.retention);
  std::unordered_map<std::string, std::string> request_models;  // trace/span -> model
  for (const TraceSpan& s : spans) {
    if (s.role == SpanRole::kRequest) request_models[s.trace_id + "/" + s.span_id] = s.model;
  }
  uint64_t expired = 0;
  base::Status written = sqlite::InWriteTransaction(*writer_, [&]() -> base::Status {
    for (const TraceSpan& s : spans) {
      if (s.start_ns < oldest) {
        ++expired;
        continue;
      }
      std::string model = s.model;
      if (s.role == SpanRole::kPhase) {
        auto it = request_models.find(s.trace_id + "/" + s.parent_span_id);
        if (it != request_models.end()) {
          model = it->second;
        } else {
          WARPSCOPE_ASSIGN_OR_RETURN(Statement q,
                                     writer_->Prepare("SELECT model FROM spans WHERE trace_id = ? "
                                                      "AND span_id = ? AND role = 0"));
          q.Bind(s.trace_id, s.parent_span_id);
          WARPSCOPE_RETURN_IF_ERROR(
              q.ForEachRow([&](const Statement& row) { model = std::string(row.ColumnText(0)); }));
        }
      }
      if (TraceHash(s.trace_id) >= KeepFraction(model)) {
        ++result.sampled_out;
        continue;
      }
      bool known = false;
      {
        WARPSCOPE_ASSIGN_OR_RETURN(
            Statement q,
            writer_->Prepare("SELECT 1 FROM spans WHERE trace_id = ? AND span_id = ?"));
        q.Bind(s.trace_id, s.span_id);
        WARPSCOPE_ASSIGN_OR_RETURN(known, q.Step());
      }
      WARPSCOPE_ASSIGN_OR_RETURN(
          Statement insert, writer_->Prepare(fmt::format("INSERT OR REPLACE INTO spans ({}) VALUES "
                                                         "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                                                         kColumns)));
      insert.Bind(s.trace_id, s.span_id, s.parent_span_id,
                  static_cast<int64_t>(s.role == SpanRole::kRequest ? 0 : 1), s.name, s.phase,
                  s.start_ns, s.end_ns, static_cast<int64_t>(s.error ? 1 : 0), s.origin.host,
                  s.origin.pid, s.origin.service, s.model, s.request_id);
      BindOptional(insert, 15, s.ttft_ns);
      BindOptional(insert, 16, s.prompt_tokens);
      BindOptional(insert, 17, s.completion_tokens);
      BindOptional(insert, 18, s.cached_tokens);
      insert.BindText(19, EncodeLabels(s.attributes));
      WARPSCOPE_RETURN_IF_ERROR(insert.Run());
      if (!known) {
        // Counted at once, so that the rest of this batch is sampled with it.
        ++result.stored;
        ++spans_;
        if (s.role == SpanRole::kRequest) ++model_spans_[s.model];
      }
    }
    return base::OkStatus();
  });
  if (!written.ok()) {
    // Rolled back: count what the database holds again.
    spans_ -= std::min(result.stored, spans_.load());
    if (base::Status recount = RecountModels(); !recount.ok()) return base::Error(recount);
    return base::Error(std::move(written));
  }
  if (spans_.load() > options_.max_spans) {
    const uint64_t excess = spans_.load() - options_.max_spans +
                            static_cast<uint64_t>(kEvictionSlack * options_.max_spans);
    WARPSCOPE_ASSIGN_OR_RETURN(result.evicted, EvictOldest(excess));
  }
  stored_ += result.stored;
  sampled_out_ += result.sampled_out;
  expired_ += expired;
  return result;
}

base::Result<uint64_t> TraceStore::EvictOldest(uint64_t count) {
  WARPSCOPE_RETURN_IF_ERROR(writer_->Run(
      "DELETE FROM spans WHERE rowid IN (SELECT rowid FROM spans ORDER BY start_ns LIMIT ?)",
      static_cast<int64_t>(count)));
  const auto deleted = static_cast<uint64_t>(writer_->changes());
  spans_ -= std::min(deleted, spans_.load());
  evicted_ += deleted;
  WARPSCOPE_RETURN_IF_ERROR(RecountModels());
  return deleted;
}

base::Result<uint64_t> TraceStore::Prune(base::TimePoint now) {
  std::lock_guard lock(write_mu_);
  WARPSCOPE_RETURN_IF_ERROR(writer_->Run("DELETE FROM spans WHERE start_ns < ?",
                                         base::ToUnixNanos(now - options_.retention)));
  const auto deleted = static_cast<uint64_t>(writer_->changes());
  if (deleted > 0) {
    spans_ -= std::min(deleted, spans_.load());
    expired_ += deleted;
    WARPSCOPE_RETURN_IF_ERROR(RecountModels());
  }
  return deleted;
}

base::Result<std::vector<ModelSummary>> TraceStore::Models(base::TimePoint start,
                                                           base::TimePoint end) {
  return sqlite::InReadTransaction(
      *readers_, [&](Connection& db) -> base::Result<std::vector<ModelSummary>> {
        WARPSCOPE_ASSIGN_OR_RETURN(
            Statement s, db.Prepare("SELECT model, host, pid, service, COUNT(*), SUM(error) "
                                    "FROM spans WHERE role = 0 AND start_ns >= ? AND "
                                    "start_ns < ? GROUP BY model, host, pid, service"));
        s.Bind(base::ToUnixNanos(start), base::ToUnixNanos(end));
        std::map<std::string, ModelSummary> by_model;
        WARPSCOPE_RETURN_IF_ERROR(s.ForEachRow([&](const Statement& row) {
          ModelSummary& m = by_model[std::string(row.ColumnText(0))];
          m.model = std::string(row.ColumnText(0));
          m.processes.push_back(SpanOrigin{.host = std::string(row.ColumnText(1)),
                                           .pid = row.ColumnInt(2),
                                           .service = std::string(row.ColumnText(3))});
          m.requests += static_cast<uint64_t>(row.ColumnInt(4));
          m.errors += static_cast<uint64_t>(row.ColumnInt(5));
        }));
        std::vector<ModelSummary> out;
        for (auto& [name, m] : by_model) out.push_back(std::move(m));
        std::stable_sort(out.begin(), out.end(),
                         [](const auto& a, const auto& b) { return a.requests > b.requests; });
        return out;
      });
}

base::Status TraceStore::LoadPhases(sqlite::Connection& db, RequestTrace& trace) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement s, db.Prepare(fmt::format("SELECT {} FROM spans WHERE trace_id = ? AND "
                                          "parent_span_id = ? AND role = 1 ORDER BY start_ns",
                                          kColumns)));
  s.Bind(trace.request.trace_id, trace.request.span_id);
  return s.ForEachRow([&](const Statement& row) { trace.phases.push_back(ReadSpan(row)); });
}

base::Result<std::vector<RequestTrace>> TraceStore::Requests(const RequestQuery& query) {
  return sqlite::InReadTransaction(
      *readers_, [&](Connection& db) -> base::Result<std::vector<RequestTrace>> {
        // A model named: its own index (role, model, start_ns) answers.
        const char* model_match = query.model.empty() ? "?1 = ''" : "model = ?1";
        const char* order = query.order == RequestQuery::Order::kSlowest ? "end_ns - start_ns DESC"
                                                                         : "start_ns DESC";
        WARPSCOPE_ASSIGN_OR_RETURN(
            Statement s,
            db.Prepare(fmt::format("SELECT {} FROM spans WHERE role = 0 AND {} AND (?2 = '' OR "
                                   "host = ?2) AND start_ns >= ?3 AND start_ns < ?4 ORDER BY {} "
                                   "LIMIT ?5",
                                   kColumns, model_match, order)));
        s.Bind(query.model, query.host, base::ToUnixNanos(query.start),
               base::ToUnixNanos(query.end),
               static_cast<int64_t>(
                   std::min<size_t>(query.limit, std::numeric_limits<int64_t>::max())));
        std::vector<RequestTrace> out;
        WARPSCOPE_RETURN_IF_ERROR(s.ForEachRow([&](const Statement& row) {
          out.push_back(RequestTrace{.request = ReadSpan(row), .phases = {}});
        }));
        if (query.with_phases) {
          for (RequestTrace& t : out) WARPSCOPE_RETURN_IF_ERROR(LoadPhases(db, t));
        }
        return out;
      });
}

base::Result<std::vector<RequestTrace>> TraceStore::Trace(const std::string& trace_id) {
  return sqlite::InReadTransaction(
      *readers_, [&](Connection& db) -> base::Result<std::vector<RequestTrace>> {
        WARPSCOPE_ASSIGN_OR_RETURN(
            Statement s,
            db.Prepare(fmt::format(
                "SELECT {} FROM spans WHERE trace_id = ? AND role = 0 ORDER BY start_ns",
                kColumns)));
        s.Bind(trace_id);
        std::vector<RequestTrace> out;
        WARPSCOPE_RETURN_IF_ERROR(s.ForEachRow([&](const Statement& row) {
          out.push_back(RequestTrace{.request = ReadSpan(row), .phases = {}});
        }));
        for (RequestTrace& t : out) WARPSCOPE_RETURN_IF_ERROR(LoadPhases(db, t));
        return out;
      });
}

}  // namespace warpscope::server::traces
