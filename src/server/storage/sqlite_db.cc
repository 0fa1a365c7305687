// SPDX-License-Identifier: Apache-2.0
#include "server/storage/sqlite_db.h"

#include <sqlite3.h>

#include <limits>

#include "base/logging.h"

namespace warpscope::server::sqlite {

base::Status SqliteError(int code, std::string_view what, std::string_view message) {
  base::StatusCode status_code = base::StatusCode::kInternal;
  switch (code & 0xff) {
    case SQLITE_FULL:
      return base::ErrStatus(base::StatusCode::kResourceExhausted,
                             "{}: {}: the disk is full; free space or move --data-dir", what,
                             message);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
      status_code = base::StatusCode::kUnavailable;
      break;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
    case SQLITE_AUTH:
      status_code = base::StatusCode::kPermissionDenied;
      break;
    default:
      break;
  }
  return base::Status(status_code, fmt::format("{}: {}", what, message));
}

Statement::~Statement() {
  if (stmt_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

Statement& Statement::BindInt(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Statement& Statement::BindDouble(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}

Statement& Statement::BindText(int index, std::string_view value) {
  sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}

Statement& Statement::BindBlob(int index, std::string_view value) {
  // A zero-length blob must not bind as NULL (a null data pointer does that).
  static const char kEmpty = 0;
  sqlite3_bind_blob64(stmt_, index, value.empty() ? &kEmpty : value.data(), value.size(),
                      SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::BindNull(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

base::Result<bool> Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) {
    return true;
  }
  if (rc == SQLITE_DONE) {
    return false;
  }
  return base::Error(SqliteError(rc, sqlite3_sql(stmt_), sqlite3_errmsg(db_)));
}

base::Status Statement::Run() {
  while (true) {
    auto row = Step();
    if (!row) {
      return row.error();
    }
    if (!*row) {
      return base::OkStatus();
    }
  }
}

int64_t Statement::ColumnInt(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::ColumnDouble(int column) const { return sqlite3_column_double(stmt_, column); }

std::string_view Statement::ColumnText(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) {
    return {};
  }
  return std::string_view(reinterpret_cast<const char*>(text),
                          static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::string_view Statement::ColumnBlob(int column) const {
  const void* blob = sqlite3_column_blob(stmt_, column);
  if (blob == nullptr) {
    return {};
  }
  return std::string_view(static_cast<const char*>(blob),
                          static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

bool Statement::ColumnIsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

base::Result<std::unique_ptr<Connection>> Connection::Open(const std::string& path, bool create) {
  sqlite3* db = nullptr;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return base::Error(SqliteError(rc, path, message));
  }
  sqlite3_extended_result_codes(db, 1);
  // Readers never wait for writers in WAL mode; this only covers checkpoints and recovery.
  sqlite3_busy_timeout(db, 5000);
  return std::unique_ptr<Connection>(new Connection(db, path));
}

Connection::~Connection() {
  for (auto& [sql, stmt] : cache_) {
    sqlite3_finalize(stmt);
  }
  if (sqlite3_close(db_) != SQLITE_OK) {
    WARPSCOPE_LOG(WARNING, "{}: close: {}", path_, sqlite3_errmsg(db_));
    sqlite3_close_v2(db_);
  }
}

base::Status Connection::Exec(std::string_view sql) {
  std::string copy(sql);
  char* error = nullptr;
  int rc = sqlite3_exec(db_, copy.c_str(), nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    std::string message = error != nullptr ? error : sqlite3_errstr(rc);
    sqlite3_free(error);
    return SqliteError(rc, path_, message);
  }
  return base::OkStatus();
}

base::Result<Statement> Connection::Prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) {
      return base::Error(
          SqliteError(rc, fmt::format("{}: prepare \"{}\"", path_, sql), sqlite3_errmsg(db_)));
    }
    it = cache_.emplace(sql, stmt).first;
  }
  return Statement(it->second, db_);
}

base::Result<int64_t> Connection::QueryInt(const std::string& sql, int64_t fallback) {
  WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt, Prepare(sql));
  WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row || stmt.ColumnIsNull(0)) {
    return fallback;
  }
  return stmt.ColumnInt(0);
}

int64_t Connection::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

int64_t Connection::changes() const { return sqlite3_changes64(db_); }

base::Result<Transaction> Transaction::Begin(Connection& db, bool immediate) {
  base::Status status = db.Exec(immediate ? "BEGIN IMMEDIATE" : "BEGIN");
  if (!status.ok()) {
    return base::Error(std::move(status));
  }
  return Transaction(&db);
}

Transaction::~Transaction() {
  if (db_ != nullptr) {
    base::Status status = db_->Exec("ROLLBACK");
    if (!status.ok()) {
      WARPSCOPE_LOG(WARNING, "rollback: {}", status.ToString());
    }
  }
}

base::Status Transaction::Commit() {
  base::Status status = db_->Exec("COMMIT");
  if (status.ok()) {
    db_ = nullptr;
  }
  return status;
}

ReaderPool::Lease::~Lease() {
  if (db_ == nullptr) {
    return;
  }
  std::lock_guard lock(pool_->mu_);
  if (pool_->idle_.size() < pool_->max_idle_) {
    pool_->idle_.push_back(std::move(db_));
  }
}

ReaderPool::~ReaderPool() {
  std::lock_guard lock(mu_);
  idle_.clear();
}

base::Result<ReaderPool::Lease> ReaderPool::Acquire() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<Connection> db = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(db));
    }
  }
  WARPSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<Connection> db, Connection::Open(path_, false));
  WARPSCOPE_RETURN_IF_ERROR(db->Exec("PRAGMA query_only = ON; PRAGMA cache_size = -16000;"));
  return Lease(this, std::move(db));
}

}  // namespace warpscope::server::sqlite
