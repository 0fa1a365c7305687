// SPDX-License-Identifier: Apache-2.0
// The Model Context Protocol over JSON-RPC 2.0, for AI agents: the protocol's methods
// (initialize, ping, server/discover, tools/list, tools/call) and the tools over the server's
// query layer and insights engine (tools.h). No transport here: the HTTP layer (/mcp) and any
// other caller hand it parsed messages and send back what it answers (docs/mcp.md).
//
// Both protocol eras are accepted. 2025-11-25 (and 2025-06-18, 2025-03-26) have the initialize
// handshake; 2026-07-28 has none and every request names its version in
// params._meta["io.modelcontextprotocol/protocolVersion"]. The server keeps no session state: a
// request without a prior initialize is answered whatever its era (lenient), and a version
// named in _meta (or by the transport, McpRequestContext) must be one of kProtocolVersions.
//
// Thread-safe: Handle keeps no state between calls and may run on many threads at once (the
// Storage and the InsightEngine are thread-safe). Handle never throws: every failure is a
// JSON-RPC error reply, or a tools/call result with isError.
#ifndef WARPSCOPE_SERVER_MCP_MCP_SERVER_H_
#define WARPSCOPE_SERVER_MCP_MCP_SERVER_H_

#include <array>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/time.h"
#include "server/storage/storage.h"

namespace warpscope::server {
namespace insights {
class InsightEngine;
}  // namespace insights

namespace mcp {

// The protocol versions served, newest first.
inline constexpr std::array<std::string_view, 4> kProtocolVersions = {"2026-07-28", "2025-11-25",
                                                                      "2025-06-18", "2025-03-26"};
// What initialize answers a client whose version is not served: the newest with a handshake.
inline constexpr std::string_view kNewestHandshakeVersion = "2025-11-25";
// The _meta key of a 2026-era request's protocol version.
inline constexpr std::string_view kProtocolVersionMetaKey =
    "io.modelcontextprotocol/protocolVersion";
// Messages in one batch.
inline constexpr size_t kMaxBatchMessages = 32;

bool IsSupportedProtocolVersion(std::string_view version);
// "2026-07-28, 2025-11-25, ...": for error messages.
std::string SupportedProtocolVersionsText();

// The error reply (-32602, with the served versions in its data) to a request whose version
// `version`, read from `where` ("params._meta", a header), is not served.
nlohmann::json UnsupportedVersionReply(const nlohmann::json& id, std::string_view where,
                                       std::string_view version);

// What the transport knows of a request.
struct McpRequestContext {
  // The protocol version the transport carried (HTTP: the MCP-Protocol-Version header); empty
  // when none. When set it must be a served version and agree with the message's _meta.
  std::string protocol_version;
};

class McpServer {
 public:
  // `insight_engine` may be null (insights off: list_insights says so). Both must outlive the
  // McpServer.
  McpServer(Storage& storage, const insights::InsightEngine* insight_engine,
            const base::Clock& clock);
  McpServer(const McpServer&) = delete;
  McpServer& operator=(const McpServer&) = delete;

  // One JSON-RPC message (an object) or a batch (an array of them). The reply to a request, the
  // array of replies to a batch; nullopt for a notification, a response, or a batch of only
  // those (nothing to send back).
  std::optional<nlohmann::json> Handle(const nlohmann::json& message,
                                       const McpRequestContext& context) const;
  // The same for the text of a message; text that is not JSON gets a parse error (-32700).
  std::optional<nlohmann::json> HandleText(std::string_view text,
                                           const McpRequestContext& context) const;

 private:
  std::optional<nlohmann::json> HandleOne(const nlohmann::json& message,
                                          const McpRequestContext& context) const;
  std::optional<nlohmann::json> HandleBatch(const nlohmann::json& batch,
                                            const McpRequestContext& context) const;
  nlohmann::json Dispatch(const nlohmann::json& id, std::string_view method,
                          const nlohmann::json& params) const;
  nlohmann::json CallTool(const nlohmann::json& id, const nlohmann::json& params) const;

  Storage& storage_;
  const insights::InsightEngine* const insight_engine_;
  const base::Clock& clock_;
};

}  // namespace mcp
}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_MCP_MCP_SERVER_H_
