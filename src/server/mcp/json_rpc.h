// SPDX-License-Identifier: Apache-2.0
// JSON-RPC 2.0 as MCP uses it: error codes, reply objects, the non-throwing parse of a message's
// text and the safe serialisation of a reply. Pure functions; no I/O.
#ifndef WARPSCOPE_SERVER_MCP_JSON_RPC_H_
#define WARPSCOPE_SERVER_MCP_JSON_RPC_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace warpscope::server::mcp {

// The error codes JSON-RPC 2.0 reserves.
inline constexpr int kParseError = -32700;      // the text is not JSON
inline constexpr int kInvalidRequest = -32600;  // JSON, but not a request
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;

// {"jsonrpc": "2.0", "id": id, "error": {"code", "message"[, "data"]}}.
nlohmann::json RpcError(const nlohmann::json& id, int code, std::string_view message,
                        nlohmann::json data = nullptr);
// {"jsonrpc": "2.0", "id": id, "result": result}.
nlohmann::json RpcResult(const nlohmann::json& id, nlohmann::json result);

// True for an id a request may carry: a string or an integer.
bool IsValidId(const nlohmann::json& id);

// `text` parsed without exceptions; nullopt when it is not one complete JSON value.
std::optional<nlohmann::json> ParseJson(std::string_view text);

// The reply that a text which is not JSON gets: a parse error with a null id.
nlohmann::json ParseErrorReply();

// `reply` as compact JSON text on one line. Strings that are not valid UTF-8 (names read from
// profiles) are written with U+FFFD in place of the bad bytes rather than failing.
std::string DumpJson(const nlohmann::json& reply);

}  // namespace warpscope::server::mcp

#endif  // WARPSCOPE_SERVER_MCP_JSON_RPC_H_
