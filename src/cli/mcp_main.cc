// SPDX-License-Identifier: Apache-2.0
// `warpscope mcp`: the stdio transport of MCP, forwarding each line to the server's /mcp.
#include "cli/mcp_main.h"

#include <fmt/format.h>
#include <httplib.h>
#include <signal.h>

#include <cstdio>
#include <istream>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "base/logging.h"
#include "base/token_file.h"
#include "exporters/http_push.h"
#include "server/mcp/json_rpc.h"
#include "server/mcp/mcp_server.h"

namespace warpscope::cli {
namespace {

using nlohmann::json;
namespace mcp = server::mcp;

// The JSON-RPC code of errors this bridge reports itself (the server's range, -32000 to -32099).
constexpr int kBridgeError = -32000;

// What the bridge knows of the conversation: the session id and the protocol version the
// server gave at initialize, sent back on every later request as Streamable HTTP asks.
struct Session {
  std::string id;
  std::string protocol_version;
};

// The ids of the requests in `message` (one, or each of a batch's); none for notifications.
std::vector<json> RequestIds(const json& message) {
  std::vector<json> ids;
  auto add = [&ids](const json& m) {
    if (m.is_object() && m.contains("method") && m.contains("id") && mcp::IsValidId(m["id"])) {
      ids.push_back(m["id"]);
    }
  };
  if (message.is_array()) {
    for (const json& m : message) add(m);
  } else {
    add(message);
  }
  return ids;
}

// The same error for every request of `message`: one reply, or an array for a batch; nullopt
// when it holds only notifications.
std::optional<json> ErrorFor(const json& message, int code, const std::string& text) {
  std::vector<json> ids = RequestIds(message);
  if (ids.empty()) return std::nullopt;
  if (!message.is_array()) return mcp::RpcError(ids[0], code, text);
  json replies = json::array();
  for (const json& id : ids) replies.push_back(mcp::RpcError(id, code, text));
  return replies;
}

// The version a message names in its _meta (2026 era), or "".
std::string MetaVersion(const json& message) {
  if (!message.is_object()) return "";
  auto params = message.find("params");
  if (params == message.end() || !params->is_object()) return "";
  auto meta = params->find("_meta");
  if (meta == params->end() || !meta->is_object()) return "";
  auto v = meta->find(mcp::kProtocolVersionMetaKey);
  return v != meta->end() && v->is_string() ? v->get<std::string>() : "";
}

std::string MethodOf(const json& message) {
  if (!message.is_object()) return "";
  auto m = message.find("method");
  return m != message.end() && m->is_string() ? m->get<std::string>() : "";
}

class Bridge {
 public:
  Bridge(const McpOptions& options, exporters::HttpEndpoint endpoint, std::string token)
      : endpoint_(std::move(endpoint)), token_(std::move(token)) {
    exporters::HttpClientOptions client_options;
    client_options.timeout = options.timeout;
    client_options.tls_ca_file = options.tls_ca_file;
    client_ = exporters::MakeHttpClient(endpoint_, client_options);
    url_ = endpoint_.scheme_host_port + endpoint_.path;
  }

  // The reply to one line; nullopt when there is nothing to write.
  std::optional<json> Forward(const std::string& line) {
    std::optional<json> message = mcp::ParseJson(line);
    if (!message) {
      return mcp::ParseErrorReply();
    }
    httplib::Headers headers = {{"Accept", "application/json, text/event-stream"}};
    if (!token_.empty()) headers.emplace("Authorization", "Bearer " + token_);
    const std::string method = MethodOf(*message);
    std::string version = MetaVersion(*message);
    if (version.empty() && method != "initialize") version = session_.protocol_version;
    if (!version.empty() && exporters::IsValidHeaderValue(version)) {
      headers.emplace("MCP-Protocol-Version", version);
    }
    if (!method.empty() && exporters::IsValidHeaderValue(method)) {
      headers.emplace("Mcp-Method", method);
    }
    if (!session_.id.empty()) headers.emplace("Mcp-Session-Id", session_.id);

    httplib::Result r = client_->Post(endpoint_.path.c_str(), headers, line, "application/json");
    if (!r) {
      WARPSCOPE_LOG_EVERY_N(WARNING, 20, "mcp: cannot reach {}: {}", url_,
                            httplib::to_string(r.error()));
      return ErrorFor(*message, kBridgeError,
                      fmt::format("cannot reach the warpscope server at {} ({}): start it with "
                                  "'warpscope server' (or 'warpscope up'), or point "
                                  "'warpscope mcp --server URL' at a running one",
                                  url_, httplib::to_string(r.error())));
    }
    if (std::string id = r->get_header_value("Mcp-Session-Id"); !id.empty()) {
      session_.id = id;
    }
    if (r->status == 202) {
      return std::nullopt;
    }
    if (r->status == 401) {
      return ErrorFor(*message, kBridgeError,
                      fmt::format("the warpscope server at {} refused the request (HTTP 401): "
                                  "pass --auth-token-file with the server's token",
                                  url_));
    }
    std::optional<json> reply = mcp::ParseJson(r->body);
    if (!reply || !(reply->is_array() || (reply->is_object() && reply->contains("jsonrpc")))) {
      std::string why =
          reply && reply->is_object() && reply->contains("error") && (*reply)["error"].is_string()
              ? (*reply)["error"].get<std::string>()
              : exporters::BodySnippet(r->body);
      return ErrorFor(*message, kBridgeError,
                      fmt::format("the warpscope server at {} answered HTTP {}: {} (is it a "
                                  "warpscope server with /mcp?)",
                                  url_, r->status, why));
    }
    // An error the server gave before reading the message (HTTP 400) has no id: give it the
    // request's, so that the client can match it.
    std::vector<json> ids = RequestIds(*message);
    if (reply->is_object() && reply->value("id", json()).is_null() && ids.size() == 1 &&
        !message->is_array()) {
      (*reply)["id"] = ids[0];
    }
    if (method == "initialize" && reply->is_object() && reply->contains("result") &&
        (*reply)["result"].is_object()) {
      session_.protocol_version = (*reply)["result"].value("protocolVersion", "");
    }
    return reply;
  }

 private:
  exporters::HttpEndpoint endpoint_;
  std::string token_;
  std::string url_;
  std::unique_ptr<httplib::Client> client_;
  Session session_;
};

}  // namespace

int RunMcp(const McpOptions& options, std::istream& in, std::ostream& out) {
  base::Result<exporters::HttpEndpoint> endpoint =
      exporters::ParseHttpEndpoint(options.server, "--server", "http://127.0.0.1:9410");
  if (!endpoint) {
    std::fprintf(stderr, "warpscope mcp: %s\n", endpoint.error().message().c_str());
    return 2;
  }
  // --server names the server; its /mcp is where messages go (a URL ending in /mcp is kept).
  std::string& path = endpoint->path;
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (path.size() < 4 || path.compare(path.size() - 4, 4, "/mcp") != 0) path += "/mcp";
  std::string token;
  if (!options.auth_token_file.empty()) {
    base::Result<std::string> read =
        base::ReadTokenFile("--auth-token-file", options.auth_token_file);
    if (!read) {
      std::fprintf(stderr, "warpscope mcp: %s\n", read.error().message().c_str());
      return 2;
    }
    token = std::move(*read);
  }
  // A client that closes our stdout ends the bridge at the next write, not by a signal.
  signal(SIGPIPE, SIG_IGN);
  Bridge bridge(options, std::move(*endpoint), std::move(token));
  WARPSCOPE_LOG(INFO, "mcp: forwarding stdin to {}{}", options.server,
                options.auth_token_file.empty() ? "" : " with a bearer token");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    std::optional<json> reply = bridge.Forward(line);
    if (!reply) continue;
    out << mcp::DumpJson(*reply) << '\n';
    out.flush();
    if (!out) {
      WARPSCOPE_LOG(INFO, "mcp: stdout is closed; stopping");
      return 0;
    }
  }
  return 0;
}

}  // namespace warpscope::cli
