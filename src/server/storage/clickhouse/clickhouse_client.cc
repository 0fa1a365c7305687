// SPDX-License-Identifier: Apache-2.0
#include "server/storage/clickhouse/clickhouse_client.h"

#include <httplib.h>

#include <charconv>

namespace warpscope::server::clickhouse {
namespace {

constexpr char kUrlForm[] =
    "clickhouse://HOST[:PORT]/DATABASE, e.g. clickhouse://localhost:8123/warpscope";

bool ValidDatabase(std::string_view db) {
  if (db.empty()) return false;
  for (char c : db) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// ClickHouse's error code in an error body ("Code: 193, e.displayText() = ..."), or -1.
int ErrorCode(std::string_view body) {
  constexpr std::string_view kCode = "Code: ";
  size_t at = body.find(kCode);
  if (at == std::string_view::npos) return -1;
  body.remove_prefix(at + kCode.size());
  int code = -1;
  std::from_chars(body.data(), body.data() + body.size(), code);
  return code;
}

// Codes of ClickHouse errors that go away by themselves: overload, timeouts, too many parts.
bool TransientCode(int code) {
  switch (code) {
    case 159:  // TIMEOUT_EXCEEDED
    case 202:  // TOO_MANY_SIMULTANEOUS_QUERIES
    case 209:  // SOCKET_TIMEOUT
    case 210:  // NETWORK_ERROR
    case 241:  // MEMORY_LIMIT_EXCEEDED
    case 252:  // TOO_MANY_PARTS
    case 319:  // UNKNOWN_STATUS_OF_INSERT
      return true;
    default:
      return false;
  }
}

std::string FirstLine(std::string_view s) {
  size_t nl = s.find('\n');
  std::string out(s.substr(0, nl));
  if (out.size() > 500) out.resize(500);
  return out;
}

}  // namespace

base::Result<Endpoint> ParseUrl(std::string_view url) {
  constexpr std::string_view kScheme = "clickhouse://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return base::Error(base::InvalidArgument(
        "--storage {}: not a ClickHouse URL; expected {} (or \"sqlite\")", url, kUrlForm));
  }
  std::string_view rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) {
    return base::Error(
        base::InvalidArgument("--storage {}: the database is missing; expected {}", url, kUrlForm));
  }
  Endpoint e;
  std::string_view authority = rest.substr(0, slash);
  e.database = std::string(rest.substr(slash + 1));
  while (!e.database.empty() && e.database.back() == '/') e.database.pop_back();
  if (!ValidDatabase(e.database)) {
    return base::Error(base::InvalidArgument(
        "--storage {}: database name \"{}\" must be letters, digits and '_'; expected {}", url,
        e.database, kUrlForm));
  }
  const size_t colon = authority.rfind(':');
  e.host = std::string(authority.substr(0, colon));
  if (colon != std::string_view::npos) {
    std::string_view port = authority.substr(colon + 1);
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), e.port);
    if (ec != std::errc() || end != port.data() + port.size() || e.port <= 0 || e.port > 65535) {
      return base::Error(
          base::InvalidArgument("--storage {}: bad port \"{}\"; expected {}", url, port, kUrlForm));
    }
  }
  if (e.host.empty()) {
    return base::Error(
        base::InvalidArgument("--storage {}: the host is missing; expected {}", url, kUrlForm));
  }
  return e;
}

std::vector<TsvRow> ParseTsv(std::string_view body) {
  std::vector<TsvRow> rows;
  TsvRow row;
  std::string field;
  bool any = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c == '\\' && i + 1 < body.size()) {
      const char n = body[++i];
      switch (n) {
        case 'n':
          field += '\n';
          break;
        case 't':
          field += '\t';
          break;
        case 'r':
          field += '\r';
          break;
        case 'b':
          field += '\b';
          break;
        case 'f':
          field += '\f';
          break;
        case '0':
          field += '\0';
          break;
        default:
          field += n;
          break;
      }
      any = true;
    } else if (c == '\t') {
      row.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n') {
      row.push_back(std::move(field));
      field.clear();
      rows.push_back(std::move(row));
      row.clear();
      any = false;
    } else {
      field += c;
      any = true;
    }
  }
  if (any) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string EscapeTsv(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\0':
        out += "\\0";
        break;
      default:
        out += c;
        break;
    }
  }
  return out;
}

std::string Quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  out += '\'';
  return out;
}

Client::Client(Endpoint endpoint, std::chrono::milliseconds timeout)
    : endpoint_(std::move(endpoint)), timeout_(timeout) {}

base::Result<std::string> Client::Run(std::string_view sql, std::string_view body,
                                      bool in_database) const {
  httplib::Client http(endpoint_.host, endpoint_.port);
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(timeout_);
  http.set_connection_timeout(std::chrono::seconds(5));
  http.set_read_timeout(secs);
  http.set_write_timeout(secs);
  httplib::Headers headers = {{"X-ClickHouse-User", endpoint_.user}};
  if (!endpoint_.password.empty()) headers.emplace("X-ClickHouse-Key", endpoint_.password);
  // A query without data travels in the body (no URL length limit); INSERT data follows its
  // query, which then travels in the URL.
  httplib::Params params;
  if (!body.empty()) params.emplace("query", std::string(sql));
  if (in_database) params.emplace("database", endpoint_.database);
  const std::string path = httplib::append_query_params("/", params);
  if (body.empty()) body = sql;
  const std::string where = fmt::format("ClickHouse at {}:{}", endpoint_.host, endpoint_.port);
  auto res = http.Post(path.c_str(), headers, body.data(), body.size(), "application/octet-stream");
  if (!res) {
    return base::Error(base::Unavailable(
        "{} cannot be reached ({}); start it or fix the host and port in --storage", where,
        httplib::to_string(res.error())));
  }
  if (res->status == 200) return std::move(res->body);
  const int code = ErrorCode(res->body);
  const std::string message = FirstLine(res->body);
  if (code == 192 || code == 193 || code == 516 || res->status == 401 || res->status == 403) {
    return base::Error(base::PermissionDenied(
        "{} refused user \"{}\": {}; check the user and --storage-password-file", where,
        endpoint_.user, message));
  }
  if (code == 81) {
    return base::Error(base::NotFound("{}: {}", where, message));
  }
  if (TransientCode(code) || res->status == 502 || res->status == 503 || res->status == 504) {
    return base::Error(
        base::Unavailable("{} is overloaded or failing: {}; retry later", where, message));
  }
  return base::Error(
      base::Internal("{} failed a query (HTTP {}): {}", where, res->status, message));
}

base::Status Client::Exec(std::string_view sql, std::string_view body, bool in_database) const {
  auto result = Run(sql, body, in_database);
  return result ? base::OkStatus() : result.error();
}

base::Result<std::vector<TsvRow>> Client::Select(std::string_view sql) const {
  WARPSCOPE_ASSIGN_OR_RETURN(std::string body, Run(sql));
  return ParseTsv(body);
}

}  // namespace warpscope::server::clickhouse
