// SPDX-License-Identifier: Apache-2.0
// Fuzz target for McpServer::HandleText (docs/design/fuzzing.md): arbitrary bytes as one MCP
// message, answered over an empty SqliteStorage in a temporary directory.
//
// Invariants:
//   - Handling never crashes or throws.
//   - A reply is a JSON-RPC 2.0 reply object (jsonrpc "2.0", an id, exactly one of result and
//     error, an error with an integer code and a message), or an array of them for a batch.
//   - A reply serialises to one line (DumpJson), as stdio transports send it.
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "base/time.h"
#include "fuzz/fuzz_check.h"
#include "server/mcp/json_rpc.h"
#include "server/mcp/mcp_server.h"
#include "server/storage/sqlite_storage.h"

namespace {

using nlohmann::json;
using warpscope::server::mcp::McpServer;

// The storage and server every input shares; the directory is removed at exit.
struct Harness {
  Harness() {
    char dir_template[] = "/tmp/warpscope-mcp-fuzz-XXXXXX";
    const char* made = mkdtemp(dir_template);
    WARPSCOPE_FUZZ_CHECK(made != nullptr, "mkdtemp failed");
    dir = made;
    warpscope::server::SqliteStorageOptions options;
    options.data_dir = dir;
    auto opened = warpscope::server::SqliteStorage::Open(options);
    WARPSCOPE_FUZZ_CHECK(opened.has_value(), "cannot open storage: {}",
                         opened ? "" : opened.error().message());
    storage = std::move(*opened);
    server = std::make_unique<McpServer>(*storage, nullptr, clock);
  }
  ~Harness() {
    server.reset();
    storage.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  std::string dir;
  warpscope::base::FakeClock clock;
  std::unique_ptr<warpscope::server::SqliteStorage> storage;
  std::unique_ptr<McpServer> server;
};

void CheckReply(const json& r) {
  WARPSCOPE_FUZZ_CHECK(r.is_object(), "a reply is not an object: {}", r.dump());
  WARPSCOPE_FUZZ_CHECK(r.contains("jsonrpc") && r["jsonrpc"] == "2.0", "no jsonrpc 2.0");
  WARPSCOPE_FUZZ_CHECK(r.contains("id"), "a reply without an id");
  WARPSCOPE_FUZZ_CHECK(r.contains("result") != r.contains("error"),
                       "a reply needs exactly one of result and error");
  if (r.contains("error")) {
    const json& e = r["error"];
    WARPSCOPE_FUZZ_CHECK(e.is_object() && e.contains("code") && e["code"].is_number_integer() &&
                             e.contains("message") && e["message"].is_string(),
                         "a malformed error: {}", e.dump());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness harness;
  std::optional<json> reply = harness.server->HandleText(warpscope::fuzz::AsText(data, size), {});
  if (!reply) {
    return 0;
  }
  if (reply->is_array()) {
    WARPSCOPE_FUZZ_CHECK(!reply->empty(), "an empty batch reply");
    for (const json& r : *reply) CheckReply(r);
  } else {
    CheckReply(*reply);
  }
  std::string line = warpscope::server::mcp::DumpJson(*reply);
  WARPSCOPE_FUZZ_CHECK(line.find('\n') == std::string::npos, "a reply spans lines");
  return 0;
}
