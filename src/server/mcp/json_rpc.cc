// SPDX-License-Identifier: Apache-2.0
#include "server/mcp/json_rpc.h"

#include <utility>

namespace warpscope::server::mcp {

using nlohmann::json;

json RpcError(const json& id, int code, std::string_view message, json data) {
  json error = {{"code", code}, {"message", std::string(message)}};
  if (!data.is_null()) {
    error["data"] = std::move(data);
  }
  return json{{"jsonrpc", "2.0"}, {"id", IsValidId(id) ? id : json(nullptr)}, {"error", error}};
}

json RpcResult(const json& id, json result) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

bool IsValidId(const json& id) { return id.is_string() || id.is_number_integer(); }

std::optional<json> ParseJson(std::string_view text) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return std::nullopt;
  }
  return doc;
}

json ParseErrorReply() {
  return RpcError(nullptr, kParseError,
                  "parse error: the message is not JSON; send one JSON-RPC 2.0 object such as "
                  "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/list\"}");
}

std::string DumpJson(const json& reply) {
  return reply.dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace);
}

}  // namespace warpscope::server::mcp
