// SPDX-License-Identifier: Apache-2.0
#include "server/mcp/mcp_server.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "server/mcp/json_rpc.h"
#include "server/mcp/testing/mcp_fixture.h"

namespace warpscope::server::mcp {
namespace {

using nlohmann::json;

class McpServerTest : public McpFixture {
 protected:
  // The error code of `reply` (0 when it is not an error).
  static int Code(const json& reply) {
    if (!reply.contains("error")) return 0;
    return reply["error"].value("code", 0);
  }
  static std::string Message(const json& reply) {
    return reply.contains("error") ? reply["error"].value("message", "") : "";
  }
  std::optional<json> HandleText(std::string_view text, const McpRequestContext& context = {}) {
    return server_->HandleText(text, context);
  }
  static json Meta(std::string_view version) {
    return json{{"_meta", {{std::string(kProtocolVersionMetaKey), version}}}};
  }
};

TEST_F(McpServerTest, InitializeAnswersTheClientsVersionCapabilitiesAndServerInfo) {
  json reply = Request("initialize", {{"protocolVersion", "2025-11-25"},
                                      {"capabilities", json::object()},
                                      {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
  ASSERT_TRUE(reply.contains("result")) << reply.dump();
  EXPECT_EQ(reply["jsonrpc"], "2.0");
  EXPECT_EQ(reply["id"], 1);
  const json& r = reply["result"];
  EXPECT_EQ(r["protocolVersion"], "2025-11-25");
  EXPECT_TRUE(r["capabilities"]["tools"].is_object());
  EXPECT_EQ(r["serverInfo"]["name"], "warpscope");
  EXPECT_FALSE(r["serverInfo"]["version"].get<std::string>().empty());
  EXPECT_TRUE(r["instructions"].is_string());

  json older = Request("initialize", {{"protocolVersion", "2025-06-18"}});
  EXPECT_EQ(older["result"]["protocolVersion"], "2025-06-18");
}

TEST_F(McpServerTest, InitializeWithAnUnknownVersionAnswersTheNewestHandshakeVersion) {
  json reply = Request("initialize", {{"protocolVersion", "2024-01-01"}});
  EXPECT_EQ(reply["result"]["protocolVersion"], kNewestHandshakeVersion);
}

TEST_F(McpServerTest, InitializeChecksItsParams) {
  EXPECT_EQ(Code(Request("initialize", json::object())), kInvalidParams);
  EXPECT_EQ(Code(Request("initialize", {{"protocolVersion", 20251125}})), kInvalidParams);
  EXPECT_EQ(Code(Request("initialize", {{"protocolVersion", "2025-11-25"}, {"clientInfo", 1}})),
            kInvalidParams);
}

TEST_F(McpServerTest, NotificationsAndResponsesGetNoReply) {
  EXPECT_FALSE(server_->Handle({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, {}));
  EXPECT_FALSE(server_->Handle(
      {{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 3}}}},
      {}));
  EXPECT_FALSE(server_->Handle({{"jsonrpc", "2.0"}, {"method", "no/such/notification"}}, {}));
  EXPECT_FALSE(server_->Handle({{"jsonrpc", "2.0"}, {"id", 9}, {"result", json::object()}}, {}));
}

TEST_F(McpServerTest, PingAnswersAnEmptyResult) {
  json reply = Request("ping");
  EXPECT_EQ(reply["result"], json::object());
}

TEST_F(McpServerTest, ToolsListNamesEveryToolWithADescriptionAndAnObjectSchema) {
  json reply = Request("tools/list");
  ASSERT_TRUE(reply["result"]["tools"].is_array());
  std::set<std::string> names;
  for (const json& t : reply["result"]["tools"]) {
    names.insert(t["name"].get<std::string>());
    EXPECT_GT(t["description"].get<std::string>().size(), 40u) << t["name"];
    EXPECT_EQ(t["inputSchema"]["type"], "object") << t["name"];
    EXPECT_TRUE(t["inputSchema"]["properties"].is_object()) << t["name"];
  }
  EXPECT_EQ(names, (std::set<std::string>{"top_entities", "query_metric", "list_insights",
                                          "profile_top", "explain_gpu"}));
}

TEST_F(McpServerTest, ToolsAreAnsweredWithoutInitialize) {
  // Stateless and lenient: a 2025-era client that skipped the handshake is still answered.
  json reply = Request("tools/list");
  EXPECT_TRUE(reply.contains("result"));
}

TEST_F(McpServerTest, The2026EraNeedsNoHandshakeAndDiscoverListsTheVersions) {
  json discover = Request("server/discover", Meta("2026-07-28"));
  ASSERT_TRUE(discover.contains("result")) << discover.dump();
  const json& r = discover["result"];
  ASSERT_TRUE(r["supportedVersions"].is_array());
  EXPECT_EQ(r["supportedVersions"][0], "2026-07-28");
  EXPECT_EQ(r["supportedVersions"].size(), kProtocolVersions.size());
  EXPECT_EQ(r["serverInfo"]["name"], "warpscope");
  EXPECT_TRUE(r["capabilities"]["tools"].is_object());

  json params = Meta("2026-07-28");
  params["name"] = "list_insights";
  params["arguments"] = json::object();
  json call = Request("tools/call", params);
  ASSERT_TRUE(call.contains("result")) << call.dump();
  EXPECT_FALSE(call["result"]["isError"].get<bool>()) << call.dump();
}

TEST_F(McpServerTest, AnUnsupportedVersionInMetaIsRefusedNamingTheSupportedOnes) {
  json reply = Request("tools/list", Meta("2099-01-01"));
  EXPECT_EQ(Code(reply), kInvalidParams);
  EXPECT_NE(Message(reply).find("2099-01-01"), std::string::npos);
  EXPECT_NE(Message(reply).find("2026-07-28"), std::string::npos);
  EXPECT_EQ(reply["error"]["data"]["supported"].size(), kProtocolVersions.size());

  EXPECT_EQ(Code(Request("tools/list", Meta(""))), kInvalidParams);
  EXPECT_EQ(Code(Request("tools/list", {{"_meta", {{std::string(kProtocolVersionMetaKey), 5}}}})),
            kInvalidParams);
  EXPECT_EQ(Code(Request("tools/list", {{"_meta", "2026-07-28"}})), kInvalidParams);
}

TEST_F(McpServerTest, TheTransportsVersionMustBeServedAndAgreeWithMeta) {
  McpRequestContext bad{.protocol_version = "1999-01-01"};
  EXPECT_EQ(Code(Request("ping", nullptr, bad)), kInvalidParams);
  McpRequestContext ok{.protocol_version = "2026-07-28"};
  EXPECT_TRUE(Request("ping", Meta("2026-07-28"), ok).contains("result"));
  EXPECT_EQ(Code(Request("ping", Meta("2025-11-25"), ok)), kInvalidRequest);
}

TEST_F(McpServerTest, TextThatIsNotJsonIsAParseError) {
  for (std::string_view bad : {"", "{", "not json", "{\"jsonrpc\": \"2.0\",}", "[1, 2", "\xff"}) {
    std::optional<json> reply = HandleText(bad);
    ASSERT_TRUE(reply) << bad;
    EXPECT_EQ(Code(*reply), kParseError) << bad;
    EXPECT_TRUE((*reply)["id"].is_null());
  }
}

TEST_F(McpServerTest, DeeplyNestedInputIsAnsweredWithoutRecursingIntoIt) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::optional<json> reply = HandleText(deep);
  ASSERT_TRUE(reply);
  ASSERT_TRUE(reply->is_array());
  EXPECT_EQ(Code((*reply)[0]), kInvalidRequest);
  std::optional<json> params = HandleText(R"({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
      "params": {"name": "top_entities", "arguments": {"metric": )" +
                                          deep + "}}}");
  ASSERT_TRUE(params);
  EXPECT_TRUE((*params)["result"]["isError"].get<bool>()) << "metric must be a string";
}

TEST_F(McpServerTest, MalformedRequestsAreInvalidRequests) {
  const char* cases[] = {
      "42",
      "\"tools/list\"",
      "null",
      R"({"id": 1, "method": "ping"})",                           // no jsonrpc
      R"({"jsonrpc": "1.0", "id": 1, "method": "ping"})",         // wrong version
      R"({"jsonrpc": 2.0, "id": 1, "method": "ping"})",           // version as a number
      R"({"jsonrpc": "2.0", "id": 1})",                           // no method
      R"({"jsonrpc": "2.0", "id": 1, "method": 7})",              // method not a string
      R"({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"})",  // id an object
      R"({"jsonrpc": "2.0", "id": [1], "method": "ping"})",
      R"({"jsonrpc": "2.0", "id": 1.5, "method": "ping"})",
      R"({"jsonrpc": "2.0", "id": true, "method": "ping"})",
      R"({"jsonrpc": "2.0", "id": null, "method": "ping"})",
  };
  for (const char* text : cases) {
    std::optional<json> reply = HandleText(text);
    ASSERT_TRUE(reply) << text;
    EXPECT_EQ(Code(*reply), kInvalidRequest) << text << " -> " << reply->dump();
  }
}

TEST_F(McpServerTest, AnInvalidRequestKeepsAValidId) {
  std::optional<json> reply = HandleText(R"({"jsonrpc": "1.0", "id": "abc", "method": "ping"})");
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["id"], "abc");
}

TEST_F(McpServerTest, UnknownMethodsAreMethodNotFound) {
  for (const char* method : {"resources/list", "prompts/get", "tools/run", ""}) {
    json reply = Request(method);
    EXPECT_EQ(Code(reply), kMethodNotFound) << method;
  }
  EXPECT_NE(Message(Request("resources/list")).find("tools/call"), std::string::npos);
}

TEST_F(McpServerTest, ParamsOfTheWrongTypeAreInvalidParams) {
  for (json params : {json(3), json("x"), json::array({1}), json(true)}) {
    EXPECT_EQ(Code(Request("tools/list", params)), kInvalidParams) << params.dump();
  }
  EXPECT_EQ(Code(Request("tools/call", {{"name", 3}})), kInvalidParams);
  EXPECT_EQ(Code(Request("tools/call", json::object())), kInvalidParams);
  EXPECT_EQ(Code(Request("tools/call", {{"name", "top_entities"}, {"arguments", "metric"}})),
            kInvalidParams);
  json unknown = Request("tools/call", {{"name", "drop_tables"}});
  EXPECT_EQ(Code(unknown), kInvalidParams);
  EXPECT_NE(Message(unknown).find("top_entities"), std::string::npos) << "names the tools";
}

TEST_F(McpServerTest, ABatchIsAnsweredInOrderWithoutItsNotifications) {
  std::optional<json> reply = HandleText(R"([
    {"jsonrpc": "2.0", "id": 1, "method": "ping"},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": "two", "method": "nope"},
    7,
    [{"jsonrpc": "2.0", "id": 3, "method": "ping"}]
  ])");
  ASSERT_TRUE(reply);
  ASSERT_TRUE(reply->is_array());
  ASSERT_EQ(reply->size(), 4u) << reply->dump();
  EXPECT_EQ((*reply)[0]["id"], 1);
  EXPECT_TRUE((*reply)[0].contains("result"));
  EXPECT_EQ((*reply)[1]["id"], "two");
  EXPECT_EQ(Code((*reply)[1]), kMethodNotFound);
  EXPECT_EQ(Code((*reply)[2]), kInvalidRequest);
  EXPECT_EQ(Code((*reply)[3]), kInvalidRequest) << "no nested batches";
}

TEST_F(McpServerTest, BatchesOfOnlyNotificationsGetNoReplyAndEmptyOrHugeOnesAnError) {
  EXPECT_FALSE(HandleText(R"([{"jsonrpc": "2.0", "method": "notifications/initialized"}])"));
  std::optional<json> empty = HandleText("[]");
  ASSERT_TRUE(empty);
  EXPECT_EQ(Code(*empty), kInvalidRequest);
  json big = json::array();
  for (size_t i = 0; i <= kMaxBatchMessages; ++i) {
    big.push_back({{"jsonrpc", "2.0"}, {"id", i}, {"method", "ping"}});
  }
  std::optional<json> too_many = server_->Handle(big, {});
  ASSERT_TRUE(too_many);
  EXPECT_EQ(Code(*too_many), kInvalidRequest);
}

TEST_F(McpServerTest, DumpJsonReplacesInvalidUtf8) {
  json j = {{"name", std::string("bad\xff")}};
  EXPECT_NE(DumpJson(j).find("bad"), std::string::npos);
  EXPECT_EQ(DumpJson(j).find('\n'), std::string::npos);
}

}  // namespace
}  // namespace warpscope::server::mcp
