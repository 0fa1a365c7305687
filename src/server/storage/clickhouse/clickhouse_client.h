// SPDX-License-Identifier: Apache-2.0
// A small client of ClickHouse's HTTP interface (port 8123): the query in the URL, data in the
// body, TabSeparated answers. Debian has no ClickHouse C++ client; cpp-httplib is enough.
#ifndef WARPSCOPE_SERVER_STORAGE_CLICKHOUSE_CLICKHOUSE_CLIENT_H_
#define WARPSCOPE_SERVER_STORAGE_CLICKHOUSE_CLICKHOUSE_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warpscope::server::clickhouse {

// Where the store lives: clickhouse://HOST[:PORT]/DATABASE (PORT defaults to 8123).
struct Endpoint {
  std::string host;
  int port = 8123;
  std::string database;
  std::string user = "default";
  std::string password;
};

// Parses `url` ("clickhouse://db.internal:8123/warpscope"). InvalidArgument naming the expected
// form on anything else; the database name must be [A-Za-z0-9_]+ (it is spliced into SQL).
[[nodiscard]] base::Result<Endpoint> ParseUrl(std::string_view url);

// One row of a TabSeparated answer, its fields unescaped.
using TsvRow = std::vector<std::string>;

// Splits a TabSeparated body into rows of unescaped fields.
std::vector<TsvRow> ParseTsv(std::string_view body);

// `s` as a TabSeparated field: backslash, tab, newline, carriage return and NUL escaped.
std::string EscapeTsv(std::string_view s);

// `s` as a single-quoted ClickHouse string literal.
std::string Quote(std::string_view s);

// Thread-safe: each call uses its own connection.
class Client {
 public:
  explicit Client(Endpoint endpoint, std::chrono::milliseconds timeout = std::chrono::seconds(30));

  const Endpoint& endpoint() const { return endpoint_; }

  // Runs `sql` (no database: the default one) with `body` as data (INSERT ... FORMAT ...) and
  // returns the answer. Errors: Unavailable when the server cannot be reached or answers 5xx for
  // a transient reason, PermissionDenied for refused credentials, InvalidArgument/Internal with
  // ClickHouse's message otherwise. Every message names the server and the remedy.
  [[nodiscard]] base::Result<std::string> Run(std::string_view sql, std::string_view body = {},
                                              bool in_database = true) const;

  // Run() for statements whose answer does not matter (DDL, INSERT, ALTER).
  [[nodiscard]] base::Status Exec(std::string_view sql, std::string_view body = {},
                                  bool in_database = true) const;

  // Run() for a SELECT ... FORMAT TabSeparated, parsed.
  [[nodiscard]] base::Result<std::vector<TsvRow>> Select(std::string_view sql) const;

 private:
  Endpoint endpoint_;
  std::chrono::milliseconds timeout_;
};

}  // namespace warpscope::server::clickhouse

#endif  // WARPSCOPE_SERVER_STORAGE_CLICKHOUSE_CLICKHOUSE_CLIENT_H_
