// SPDX-License-Identifier: Apache-2.0
// `warpscope mcp`: MCP over stdio for AI agents (Claude Desktop, IDEs), bridged to a warpscope
// server's POST /mcp (docs/mcp.md).
#ifndef WARPSCOPE_CLI_MCP_MAIN_H_
#define WARPSCOPE_CLI_MCP_MAIN_H_

#include <chrono>
#include <iosfwd>
#include <string>

#include "base/time.h"

namespace warpscope::cli {

struct McpOptions {
  std::string server = "http://127.0.0.1:9410";  // --server: the server's base URL (or its /mcp)
  std::string auth_token_file;                   // --auth-token-file: the server's bearer token
  std::string tls_ca_file;                       // --tls-ca-file: CAs for an https server
  base::Duration timeout = std::chrono::seconds(60);  // per request: a tool may read a day
};

// Reads one JSON-RPC message per line from `in` until EOF, forwards each to the server's /mcp
// and writes each reply as one line to `out` (flushed); logs go to stderr only. A message the
// server cannot answer (unreachable, refused token, not JSON) gets a JSON-RPC error reply with
// its id that names the URL and the fix; nothing ends the loop but EOF. Returns the exit code:
// 0 at EOF, 2 for bad options (a bad URL, an unreadable token file).
int RunMcp(const McpOptions& options, std::istream& in, std::ostream& out);

}  // namespace warpscope::cli

#endif  // WARPSCOPE_CLI_MCP_MAIN_H_
