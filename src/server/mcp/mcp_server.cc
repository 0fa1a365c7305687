// SPDX-License-Identifier: Apache-2.0
#include "server/mcp/mcp_server.h"

#include <fmt/format.h>

#include <exception>
#include <utility>

#include "base/logging.h"
#include "server/mcp/json_rpc.h"
#include "server/mcp/tools.h"

#ifndef WARPSCOPE_VERSION_STRING
#define WARPSCOPE_VERSION_STRING "0.0.0"
#endif

namespace warpscope::server::mcp {
namespace {

using nlohmann::json;

constexpr std::string_view kMethods = "initialize, ping, server/discover, tools/list, tools/call";

constexpr std::string_view kInstructions =
    "warpscope observes GPUs, their processes and hosts. Start with list_insights for the "
    "problems it found, top_entities to rank GPUs, processes or hosts by a metric, explain_gpu "
    "for one GPU's state, query_metric for a metric over time and profile_top for the hottest "
    "functions and kernels. Times are Unix milliseconds, RFC 3339 or relative (\"-15m\"); the "
    "default range is the last 15 minutes.";

json ServerInfo() { return json{{"name", "warpscope"}, {"version", WARPSCOPE_VERSION_STRING}}; }

json Capabilities() { return json{{"tools", json{{"listChanged", false}}}}; }

json VersionList() {
  json list = json::array();
  for (std::string_view v : kProtocolVersions) {
    list.push_back(v);
  }
  return list;
}

// The protocol version of a request from its _meta, or the reply refusing it.
struct MetaVersion {
  std::string version;  // "" when none
  std::optional<json> error;
};

MetaVersion ReadMetaVersion(const json& id, const json& params) {
  MetaVersion out;
  auto meta = params.find("_meta");
  if (meta == params.end()) {
    return out;
  }
  if (!meta->is_object()) {
    out.error = RpcError(id, kInvalidParams, "params._meta must be an object");
    return out;
  }
  auto v = meta->find(kProtocolVersionMetaKey);
  if (v == meta->end()) {
    return out;
  }
  if (!v->is_string()) {
    out.error = RpcError(id, kInvalidParams,
                         fmt::format("params._meta[\"{}\"] must be a string such as \"{}\"",
                                     kProtocolVersionMetaKey, kProtocolVersions[0]));
    return out;
  }
  out.version = v->get<std::string>();
  if (!IsSupportedProtocolVersion(out.version)) {
    out.error = UnsupportedVersionReply(id, "params._meta", out.version);
  }
  return out;
}

json Initialize(const json& id, const json& params) {
  auto version = params.find("protocolVersion");
  if (version == params.end() || !version->is_string()) {
    return RpcError(id, kInvalidParams,
                    fmt::format("initialize: params.protocolVersion must be a string such as "
                                "\"{}\"",
                                kNewestHandshakeVersion));
  }
  for (std::string_view field : {"capabilities", "clientInfo"}) {
    auto f = params.find(field);
    if (f != params.end() && !f->is_object()) {
      return RpcError(id, kInvalidParams,
                      fmt::format("initialize: params.{} must be an object", field));
    }
  }
  const std::string& asked = version->get_ref<const std::string&>();
  std::string answer =
      IsSupportedProtocolVersion(asked) ? asked : std::string(kNewestHandshakeVersion);
  return RpcResult(id, json{{"protocolVersion", answer},
                            {"capabilities", Capabilities()},
                            {"serverInfo", ServerInfo()},
                            {"instructions", kInstructions}});
}

json ToolList() {
  json tools = json::array();
  for (const ToolSpec& t : AllTools()) {
    tools.push_back(
        json{{"name", t.name}, {"description", t.description}, {"inputSchema", t.input_schema()}});
  }
  return json{{"tools", std::move(tools)}};
}

json ToolReply(const json& id, ToolResult r) {
  json result = {{"content", json::array({json{{"type", "text"}, {"text", std::move(r.text)}}})},
                 {"isError", r.is_error}};
  if (!r.is_error && r.structured.is_object()) {
    result["structuredContent"] = std::move(r.structured);
  }
  return RpcResult(id, std::move(result));
}

}  // namespace

bool IsSupportedProtocolVersion(std::string_view version) {
  for (std::string_view v : kProtocolVersions) {
    if (v == version) return true;
  }
  return false;
}

json UnsupportedVersionReply(const json& id, std::string_view where, std::string_view version) {
  return RpcError(
      id, kInvalidParams,
      fmt::format("unsupported protocol version \"{}\" in {}: this server speaks {}",
                  version.substr(0, 64), where, SupportedProtocolVersionsText()),
      json{{"supported", VersionList()}, {"requested", std::string(version.substr(0, 64))}});
}

std::string SupportedProtocolVersionsText() {
  std::string out;
  for (std::string_view v : kProtocolVersions) {
    out += out.empty() ? "" : ", ";
    out += v;
  }
  return out;
}

McpServer::McpServer(Storage& storage, const insights::InsightEngine* insight_engine,
                     const base::Clock& clock)
    : storage_(storage), insight_engine_(insight_engine), clock_(clock) {}

std::optional<json> McpServer::HandleText(std::string_view text,
                                          const McpRequestContext& context) const {
  std::optional<json> message = ParseJson(text);
  if (!message) {
    return ParseErrorReply();
  }
  return Handle(*message, context);
}

std::optional<json> McpServer::Handle(const json& message, const McpRequestContext& context) const {
  // The last resort: a bug in a tool must cost one reply, never the process or the transport.
  try {
    if (message.is_array()) {
      return HandleBatch(message, context);
    }
    return HandleOne(message, context);
  } catch (const std::exception& e) {
    WARPSCOPE_LOG_EVERY_N(ERROR, 100, "mcp: internal error: {}", e.what());
  } catch (...) {
    WARPSCOPE_LOG_EVERY_N(ERROR, 100, "mcp: internal error");
  }
  json id = message.is_object() && message.contains("id") ? message["id"] : json(nullptr);
  return RpcError(id, kInternalError, "internal error; the server log has the details");
}

std::optional<json> McpServer::HandleBatch(const json& batch,
                                           const McpRequestContext& context) const {
  if (batch.empty()) {
    return RpcError(nullptr, kInvalidRequest,
                    "an empty batch: send one JSON-RPC object, or an array of them");
  }
  if (batch.size() > kMaxBatchMessages) {
    return RpcError(nullptr, kInvalidRequest,
                    fmt::format("a batch of {} messages; at most {}: send fewer at a time",
                                batch.size(), kMaxBatchMessages));
  }
  json replies = json::array();
  for (const json& m : batch) {
    // Nested batches are not requests.
    std::optional<json> reply =
        m.is_array() ? RpcError(nullptr, kInvalidRequest, "a batch cannot hold another batch")
                     : HandleOne(m, context);
    if (reply) {
      replies.push_back(std::move(*reply));
    }
  }
  if (replies.empty()) {
    return std::nullopt;
  }
  return replies;
}

std::optional<json> McpServer::HandleOne(const json& message,
                                         const McpRequestContext& context) const {
  if (!message.is_object()) {
    return RpcError(nullptr, kInvalidRequest,
                    "invalid request: a message is a JSON object {\"jsonrpc\": \"2.0\", \"id\": "
                    "1, \"method\": \"...\", \"params\": {...}}");
  }
  auto id_it = message.find("id");
  const bool has_id = id_it != message.end();
  if (has_id && !IsValidId(*id_it)) {
    return RpcError(nullptr, kInvalidRequest,
                    "invalid request: \"id\" must be a string or an integer");
  }
  const json id = has_id ? *id_it : json(nullptr);
  auto jsonrpc = message.find("jsonrpc");
  if (jsonrpc == message.end() || *jsonrpc != "2.0") {
    return RpcError(id, kInvalidRequest, "invalid request: \"jsonrpc\" must be \"2.0\"");
  }
  auto method_it = message.find("method");
  if (method_it == message.end()) {
    if (has_id && (message.contains("result") || message.contains("error"))) {
      return std::nullopt;  // a response to a request this server never sends: nothing to say
    }
    return RpcError(id, kInvalidRequest, "invalid request: \"method\" is missing");
  }
  if (!method_it->is_string()) {
    return RpcError(id, kInvalidRequest, "invalid request: \"method\" must be a string");
  }
  const std::string& method = method_it->get_ref<const std::string&>();
  static const json kNoParams = json::object();
  auto params_it = message.find("params");
  const json& params = params_it == message.end() || params_it->is_null() ? kNoParams : *params_it;
  if (!has_id) {
    return std::nullopt;  // notifications (initialized, cancelled, ...) need no answer
  }
  if (!params.is_object()) {
    return RpcError(id, kInvalidParams, "invalid params: \"params\" must be an object");
  }
  MetaVersion meta = ReadMetaVersion(id, params);
  if (meta.error) {
    return meta.error;
  }
  if (!context.protocol_version.empty()) {
    if (!IsSupportedProtocolVersion(context.protocol_version)) {
      return UnsupportedVersionReply(id, "the MCP-Protocol-Version header",
                                     context.protocol_version);
    }
    if (!meta.version.empty() && meta.version != context.protocol_version) {
      return RpcError(id, kInvalidRequest,
                      fmt::format("the MCP-Protocol-Version header says \"{}\" but "
                                  "params._meta says \"{}\": send the same version in both",
                                  context.protocol_version.substr(0, 64), meta.version));
    }
  }
  return Dispatch(id, method, params);
}

json McpServer::Dispatch(const json& id, std::string_view method, const json& params) const {
  if (method == "initialize") {
    return Initialize(id, params);
  }
  if (method == "ping") {
    return RpcResult(id, json::object());
  }
  if (method == "server/discover") {
    return RpcResult(id, json{{"supportedVersions", VersionList()},
                              {"capabilities", Capabilities()},
                              {"serverInfo", ServerInfo()},
                              {"instructions", kInstructions}});
  }
  if (method == "tools/list") {
    return RpcResult(id, ToolList());
  }
  if (method == "tools/call") {
    return CallTool(id, params);
  }
  return RpcError(id, kMethodNotFound,
                  fmt::format("method \"{}\" not found: this server implements {}",
                              method.substr(0, 64), kMethods));
}

json McpServer::CallTool(const json& id, const json& params) const {
  auto name = params.find("name");
  if (name == params.end() || !name->is_string()) {
    return RpcError(
        id, kInvalidParams,
        "tools/call: params.name must be a string naming a tool; tools/list lists them");
  }
  static const json kNoArguments = json::object();
  auto args = params.find("arguments");
  const json& arguments = args == params.end() || args->is_null() ? kNoArguments : *args;
  if (!arguments.is_object()) {
    return RpcError(id, kInvalidParams,
                    "tools/call: params.arguments must be an object of argument: value");
  }
  const std::string& tool = name->get_ref<const std::string&>();
  for (const ToolSpec& t : AllTools()) {
    if (t.name != tool) continue;
    ToolContext context{storage_, insight_engine_, clock_.Now()};
    base::Result<ToolResult> result = t.run(context, ToolArgs(arguments));
    return ToolReply(id, result ? std::move(*result) : ToolFailure(result.error()));
  }
  std::string names;
  for (const ToolSpec& t : AllTools()) {
    names += names.empty() ? "" : ", ";
    names += t.name;
  }
  return RpcError(
      id, kInvalidParams,
      fmt::format("tools/call: unknown tool \"{}\"; the tools are {}", tool.substr(0, 64), names));
}

}  // namespace warpscope::server::mcp
