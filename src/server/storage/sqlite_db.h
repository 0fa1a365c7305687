// SPDX-License-Identifier: Apache-2.0
// Thin RAII wrappers over the SQLite C API: a connection with a prepared-statement cache, a
// borrowed statement that resets itself, and a transaction that rolls back unless committed.
// Errors become base::Status with the database path and SQLite's message.
#ifndef WARPSCOPE_SERVER_STORAGE_SQLITE_DB_H_
#define WARPSCOPE_SERVER_STORAGE_SQLITE_DB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace warpscope::server::sqlite {

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

  // Resets the statement and clears its bindings, to run it again with new ones.
  void Reset();

  // Steps once: true when a row is available, false when the statement is done.
  [[nodiscard]] base::Result<bool> Step();
  // Steps to completion, for statements that return no rows.
  [[nodiscard]] base::Status Run();

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

}  // namespace warpscope::server::sqlite

#endif  // WARPSCOPE_SERVER_STORAGE_SQLITE_DB_H_
