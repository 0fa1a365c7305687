// SPDX-License-Identifier: Apache-2.0
// ApiServer's MCP endpoint (docs/mcp.md): Streamable HTTP without streams. POST /mcp carries one
// JSON-RPC message or a batch and gets application/json back (202 and no body when there is
// nothing to answer); GET and DELETE get 405, as no SSE stream and no session state are kept.
// The protocol itself is server/mcp's.
#include <fmt/format.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "server/api/api_server.h"
#include "server/api/http_reply.h"
#include "server/mcp/json_rpc.h"
#include "server/mcp/mcp_server.h"

namespace warpscope::server {
namespace {

using api_internal::SendError;
using api_internal::SendJson;
using nlohmann::json;

constexpr size_t kMaxSessionIdBytes = 128;

// The Accept header, leniently: absent, or naming JSON (or anything) is fine; a client that
// takes only SSE or HTML is told what this endpoint answers.
bool AcceptsJson(std::string_view accept) {
  return accept.empty() || accept.find("application/json") != std::string_view::npos ||
         accept.find("application/*") != std::string_view::npos ||
         accept.find("*/*") != std::string_view::npos;
}

// A session id may hold visible ASCII only (0x21 to 0x7E).
bool IsValidSessionId(std::string_view id) {
  if (id.empty() || id.size() > kMaxSessionIdBytes) return false;
  for (char c : id) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

// 128 random bits in hex. Sessions are stateless: the id only lets a client tell its sessions
// apart; nothing is kept per id.
std::string NewSessionId() {
  std::random_device random;
  return fmt::format("{:08x}{:08x}{:08x}{:08x}", random(), random(), random(), random());
}

void SendRpc(httplib::Response& res, int status, const json& reply) {
  res.status = status;
  res.set_content(mcp::DumpJson(reply), "application/json");
}

}  // namespace

void ApiServer::Mcp(const httplib::Request& req, httplib::Response& res) {
  // Tools read everything the server holds: the token is required whenever one is set, as on
  // the ingest endpoints, whatever --auth-read says.
  if (!Authorized(req, res, /*ingest=*/true)) return;
  ++queries_;
  if (!AcceptsJson(req.get_header_value("Accept"))) {
    return SendError(res, 406,
                     "/mcp answers application/json: send 'Accept: application/json, "
                     "text/event-stream'");
  }
  std::string content_type = req.get_header_value("Content-Type");
  if (!content_type.empty() && content_type.find("json") == std::string::npos) {
    return SendError(res, 415,
                     "/mcp takes a JSON-RPC message: send 'Content-Type: application/json'");
  }
  mcp::McpRequestContext context;
  context.protocol_version = req.get_header_value("MCP-Protocol-Version");
  if (!context.protocol_version.empty() &&
      !mcp::IsSupportedProtocolVersion(context.protocol_version)) {
    return SendRpc(res, 400,
                   mcp::UnsupportedVersionReply(nullptr, "the MCP-Protocol-Version header",
                                                context.protocol_version));
  }
  std::optional<json> message = mcp::ParseJson(req.body);
  if (!message) {
    return SendRpc(res, 400, mcp::ParseErrorReply());
  }
  const bool single = message->is_object();
  const json* method = nullptr;
  if (single) {
    auto it = message->find("method");
    method = it != message->end() && it->is_string() ? &*it : nullptr;
  }
  std::string method_header = req.get_header_value("Mcp-Method");
  if (!method_header.empty() && method != nullptr && *method != method_header) {
    return SendRpc(
        res, 400,
        mcp::RpcError(single ? message->value("id", json()) : json(), mcp::kInvalidRequest,
                      fmt::format("the Mcp-Method header says \"{}\" but the body's method is "
                                  "\"{}\": send the same method in both",
                                  method_header.substr(0, 64),
                                  method->get_ref<const std::string&>().substr(0, 64))));
  }
  mcp::McpServer server(storage_, options_.insight_engine, clock_);
  std::optional<json> reply = server.Handle(*message, context);
  std::string session = req.get_header_value("Mcp-Session-Id");
  if (method != nullptr && *method == "initialize" && reply && reply->contains("result")) {
    session = NewSessionId();
  }
  if (IsValidSessionId(session)) {
    res.set_header("Mcp-Session-Id", session);
  }
  if (!reply) {
    res.status = 202;  // notifications and responses: accepted, nothing to answer
    return;
  }
  SendRpc(res, 200, *reply);
}

void ApiServer::McpNotAllowed(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, /*ingest=*/true)) return;
  res.set_header("Allow", "POST");
  SendError(res, 405,
            fmt::format("{} /mcp: this server offers no SSE stream and keeps no sessions; POST "
                        "each JSON-RPC message to /mcp",
                        req.method));
}

}  // namespace warpscope::server
