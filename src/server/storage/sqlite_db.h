// SPDX-License-Identifier: Apache-2.0
// Thin RAII wrappers over the SQLite C API: a connection with a prepared-statement cache, a
// borrowed statement that resets itself, a transaction that rolls back unless committed, and a
// pool of read connections. The helpers at the end run the usual shape of every database call
// (lease a connection, begin a transaction, prepare, bind, step through the rows, commit) so
// that callers write only what differs. Errors become base::Status with the database path and
// SQLite's message.
#ifndef WARPSCOPE_SERVER_STORAGE_SQLITE_DB_H_
#define WARPSCOPE_SERVER_STORAGE_SQLITE_DB_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace warpscope::server::sqlite {

// A value for Statement::Bind() that binds as a BLOB (a string_view alone binds as TEXT).
struct Blob {
  std::string_view bytes;
};

// A prepared statement borrowed from a Connection's cache. Bindings are 1-based. The statement
// is reset and its bindings cleared when this object is destroyed, so it can be reused by the
// next Prepare() of the same SQL. Must not outlive its Connection.
class Statement {
 public:
  Statement(sqlite3_stmt* stmt, sqlite3* db) : stmt_(stmt), db_(db) {}
  Statement(Statement&& other) noexcept : stmt_(other.stmt_), db_(other.db_) {
    other.stmt_ = nullptr;
  }
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  ~Statement();

  Statement& BindInt(int index, int64_t value);
  Statement& BindDouble(int index, double value);
  Statement& BindText(int index, std::string_view value);
  Statement& BindBlob(int index, std::string_view value);
  Statement& BindNull(int index);
  // Binds `values` to ?1, ?2, ... in order: integers (bool, enums excluded) as INTEGER,
  // floating point as REAL, strings as TEXT, Blob as BLOB, nullptr as NULL.
  template <typename... Values>
  Statement& Bind(const Values&... values);

  // Resets the statement and clears its bindings, to run it again with new ones.
  void Reset();

  // Steps once: true when a row is available, false when the statement is done.
  [[nodiscard]] base::Result<bool> Step();
  // Steps to completion, for statements that return no rows.
  [[nodiscard]] base::Status Run();
  // Steps through every row, calling `on_row(const Statement&)` for each. `on_row` returns
  // void, bool (false: stop before the next row) or base::Status (an error stops and is
  // returned).
  template <typename OnRow>
  [[nodiscard]] base::Status ForEachRow(OnRow&& on_row);

  int64_t ColumnInt(int column) const;
  double ColumnDouble(int column) const;
  std::string_view ColumnText(int column) const;
  std::string_view ColumnBlob(int column) const;
  bool ColumnIsNull(int column) const;

 private:
  sqlite3_stmt* stmt_;
  sqlite3* db_;
};

// One SQLite connection. Not thread-safe: one thread at a time (callers hold a lock or own it).
class Connection {
 public:
  // Opens (creating if `create`) the database file and sets a busy timeout.
  [[nodiscard]] static base::Result<std::unique_ptr<Connection>> Open(const std::string& path,
                                                                      bool create);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one or more statements that return no rows.
  [[nodiscard]] base::Status Exec(std::string_view sql);
  // Returns the cached prepared statement for `sql`, preparing it on first use.
  [[nodiscard]] base::Result<Statement> Prepare(const std::string& sql);
  // Prepares `sql` (cached), binds `values` as Statement::Bind does and steps it to completion.
  template <typename... Values>
  [[nodiscard]] base::Status Run(const std::string& sql, const Values&... values);
  // Runs a query that returns one integer (or `fallback` when it returns no row or NULL).
  [[nodiscard]] base::Result<int64_t> QueryInt(const std::string& sql, int64_t fallback);

  int64_t last_insert_rowid() const;
  int64_t changes() const;
  const std::string& path() const { return path_; }
  sqlite3* raw() { return db_; }

 private:
  Connection(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

  sqlite3* db_;
  std::string path_;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
};

// Maps an SQLite result code and message to a Status: SQLITE_FULL -> ResourceExhausted,
// BUSY/LOCKED/IOERR -> Unavailable, READONLY/PERM/CANTOPEN -> PermissionDenied, others Internal.
base::Status SqliteError(int code, std::string_view what, std::string_view message);

// BEGIN on Begin(), ROLLBACK in the destructor unless Commit() succeeded.
class Transaction {
 public:
  // `immediate` takes the write lock at once (writers); otherwise a deferred read transaction.
  [[nodiscard]] static base::Result<Transaction> Begin(Connection& db, bool immediate);
  Transaction(Transaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();
  [[nodiscard]] base::Status Commit();

 private:
  explicit Transaction(Connection* db) : db_(db) {}
  Connection* db_;
};

// Read connections to one database file, opened on demand (query_only, a 16 MB page cache) and
// kept for reuse up to `max_idle`. Thread-safe; must outlive its leases.
class ReaderPool {
 public:
  // A connection borrowed from the pool; returned to it (or closed) when destroyed.
  class Lease {
   public:
    Lease(ReaderPool* pool, std::unique_ptr<Connection> db) : pool_(pool), db_(std::move(db)) {}
    Lease(Lease&& other) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    Connection& db() { return *db_; }

   private:
    ReaderPool* pool_;
    std::unique_ptr<Connection> db_;
  };

  ReaderPool(std::string path, size_t max_idle) : path_(std::move(path)), max_idle_(max_idle) {}
  ~ReaderPool();
  ReaderPool(const ReaderPool&) = delete;
  ReaderPool& operator=(const ReaderPool&) = delete;

  // An idle connection, or a new one; errors name the database path.
  [[nodiscard]] base::Result<Lease> Acquire();

 private:
  const std::string path_;
  const size_t max_idle_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_;  // guarded by mu_
};

// Whether a Status or Result<T> holds no error.
inline bool Succeeded(const base::Status& status) { return status.ok(); }
template <typename T>
bool Succeeded(const base::Result<T>& result) {
  return result.has_value();
}

// Runs `body()` in one write transaction on `db` (BEGIN IMMEDIATE: the write lock is taken at
// once) and commits when it succeeds; on its error, or a failed BEGIN or COMMIT, the transaction
// rolls back and the error is returned. `body` returns base::Status or base::Result<T>, which is
// what this returns. The caller serialises writers on `db`.
template <typename Body>
auto InWriteTransaction(Connection& db, Body&& body) -> std::invoke_result_t<Body&>;

// Leases a connection from `pool` and runs `body(Connection&)` in one read transaction, a
// consistent snapshot of the database. Returns what `body` returns (base::Status or
// base::Result<T>), or the error of the lease or the BEGIN.
template <typename Body>
auto InReadTransaction(ReaderPool& pool, Body&& body) -> std::invoke_result_t<Body&, Connection&>;

// ---------------------------------------------------------------------------------------------
// Template definitions.
// ---------------------------------------------------------------------------------------------

namespace internal {

template <typename Value>
void BindOne(Statement& stmt, int index, const Value& value) {
  if constexpr (std::is_same_v<Value, Blob>) {
    stmt.BindBlob(index, value.bytes);
  } else if constexpr (std::is_same_v<Value, std::nullptr_t>) {
    stmt.BindNull(index);
  } else if constexpr (std::is_floating_point_v<Value>) {
    stmt.BindDouble(index, static_cast<double>(value));
  } else if constexpr (std::is_integral_v<Value>) {
    static_assert(!std::is_same_v<Value, bool>, "bind a bool as an explicit integer");
    stmt.BindInt(index, static_cast<int64_t>(value));
  } else {
    static_assert(std::is_convertible_v<const Value&, std::string_view>,
                  "Bind() takes integers, floating point, strings, Blob or nullptr");
    stmt.BindText(index, std::string_view(value));
  }
}

}  // namespace internal

template <typename... Values>
Statement& Statement::Bind(const Values&... values) {
  int index = 0;
  (internal::BindOne(*this, ++index, values), ...);
  return *this;
}

template <typename OnRow>
base::Status Statement::ForEachRow(OnRow&& on_row) {
  using Returned = std::invoke_result_t<OnRow&, const Statement&>;
  while (true) {
    base::Result<bool> row = Step();
    if (!row) {
      return row.error();
    }
    if (!*row) {
      return base::OkStatus();
    }
    if constexpr (std::is_void_v<Returned>) {
      on_row(static_cast<const Statement&>(*this));
    } else if constexpr (std::is_same_v<Returned, bool>) {
      if (!on_row(static_cast<const Statement&>(*this))) {
        return base::OkStatus();
      }
    } else {
      static_assert(std::is_same_v<Returned, base::Status>,
                    "ForEachRow's callback returns void, bool or base::Status");
      if (base::Status status = on_row(static_cast<const Statement&>(*this)); !status.ok()) {
        return status;
      }
    }
  }
}

template <typename... Values>
base::Status Connection::Run(const std::string& sql, const Values&... values) {
  base::Result<Statement> stmt = Prepare(sql);
  if (!stmt) {
    return stmt.error();
  }
  stmt->Bind(values...);
  return stmt->Run();
}

template <typename Body>
auto InWriteTransaction(Connection& db, Body&& body) -> std::invoke_result_t<Body&> {
  base::Result<Transaction> tx = Transaction::Begin(db, /*immediate=*/true);
  if (!tx) {
    return base::Error(std::move(tx.error()));
  }
  std::invoke_result_t<Body&> result = body();
  if (!Succeeded(result)) {
    return result;
  }
  if (base::Status committed = tx->Commit(); !committed.ok()) {
    return base::Error(std::move(committed));
  }
  return result;
}

template <typename Body>
auto InReadTransaction(ReaderPool& pool, Body&& body) -> std::invoke_result_t<Body&, Connection&> {
  base::Result<ReaderPool::Lease> lease = pool.Acquire();
  if (!lease) {
    return base::Error(std::move(lease.error()));
  }
  base::Result<Transaction> tx = Transaction::Begin(lease->db(), /*immediate=*/false);
  if (!tx) {
    return base::Error(std::move(tx.error()));
  }
  // Nothing to commit: the snapshot ends when `tx` rolls back, before the lease goes back.
  return body(lease->db());
}

}  // namespace warpscope::server::sqlite

#endif  // WARPSCOPE_SERVER_STORAGE_SQLITE_DB_H_
