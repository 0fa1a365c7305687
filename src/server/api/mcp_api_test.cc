// SPDX-License-Identifier: Apache-2.0
// POST /mcp through httplib: auth, both protocol eras, the headers and the HTTP statuses.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "server/api/api_server.h"
#include "server/mcp/json_rpc.h"
#include "server/mcp/testing/mcp_fixture.h"

namespace warpscope::server {
namespace {

using nlohmann::json;

constexpr char kToken[] = "mcp-secret";

class McpApiTest : public mcp::McpFixture {
 protected:
  void TearDown() override {
    api_.reset();
    McpFixture::TearDown();
  }

  void Serve(std::string token = kToken) {
    ApiServer::Options opts;
    opts.listen_address = "127.0.0.1:0";
    opts.serve_ui = true;  // GET /mcp must not fall through to the UI
    opts.auth_token = std::move(token);
    opts.insight_engine = engine_.get();
    api_ = std::make_unique<ApiServer>(opts, *storage_, clock_);
    auto port = api_->Start();
    ASSERT_TRUE(port) << port.error().message();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
  }

  httplib::Result Post(const json& body, httplib::Headers headers = {}, bool with_token = true) {
    if (with_token) headers.emplace("Authorization", std::string("Bearer ") + kToken);
    headers.emplace("Accept", "application/json, text/event-stream");
    return client_->Post("/mcp", headers, body.dump(), "application/json");
  }

  static json Body(const httplib::Result& r) { return json::parse(r->body, nullptr, false); }

  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(McpApiTest, RequiresTheBearerTokenWhenTheServerHasOne) {
  Serve();
  json ping = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}};
  auto r = Post(ping, {}, /*with_token=*/false);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  EXPECT_TRUE(Body(r)["error"].is_string());
  auto wrong = Post(ping, {{"Authorization", "Bearer nope"}}, /*with_token=*/false);
  EXPECT_EQ(wrong->status, 401);
  auto ok = Post(ping);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(Body(ok)["result"], json::object());
}

TEST_F(McpApiTest, WithoutATokenConfiguredNoneIsNeeded) {
  Serve("");
  auto r = Post({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}}, {}, /*with_token=*/false);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(McpApiTest, The2025EraHandshakeIssuesASessionIdThenToolsAnswer) {
  RunNode();
  Serve();
  auto init = Post({{"jsonrpc", "2.0"},
                    {"id", 1},
                    {"method", "initialize"},
                    {"params",
                     {{"protocolVersion", "2025-11-25"},
                      {"capabilities", json::object()},
                      {"clientInfo", {{"name", "test"}, {"version", "1"}}}}}});
  ASSERT_TRUE(init);
  ASSERT_EQ(init->status, 200) << init->body;
  EXPECT_EQ(init->get_header_value("Content-Type"), "application/json");
  std::string session = init->get_header_value("Mcp-Session-Id");
  EXPECT_EQ(session.size(), 32u);
  EXPECT_EQ(Body(init)["result"]["protocolVersion"], "2025-11-25");

  httplib::Headers headers{{"Mcp-Session-Id", session}, {"MCP-Protocol-Version", "2025-11-25"}};
  auto initialized = Post({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, headers);
  ASSERT_TRUE(initialized);
  EXPECT_EQ(initialized->status, 202);
  EXPECT_TRUE(initialized->body.empty());

  auto call = Post({{"jsonrpc", "2.0"},
                    {"id", 2},
                    {"method", "tools/call"},
                    {"params", {{"name", "explain_gpu"}, {"arguments", {{"gpu", "GPU-3"}}}}}},
                   headers);
  ASSERT_TRUE(call);
  ASSERT_EQ(call->status, 200) << call->body;
  EXPECT_EQ(call->get_header_value("Mcp-Session-Id"), session) << "echoed";
  json result = Body(call)["result"];
  EXPECT_FALSE(result["isError"].get<bool>());
  EXPECT_EQ(result["structuredContent"]["open_findings"][0]["rule"], "idle_allocated");
}

TEST_F(McpApiTest, The2026EraNeedsNoHandshake) {
  Serve();
  json meta = {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}}}};
  auto discover =
      Post({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "server/discover"}, {"params", meta}},
           {{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "server/discover"}});
  ASSERT_TRUE(discover);
  ASSERT_EQ(discover->status, 200) << discover->body;
  EXPECT_EQ(Body(discover)["result"]["supportedVersions"][0], "2026-07-28");

  json params = meta;
  params["name"] = "top_entities";
  params["arguments"] = {{"metric", "gpu.utilization"}};
  auto call = Post({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/call"}, {"params", params}},
                   {{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "tools/call"}});
  ASSERT_TRUE(call);
  EXPECT_EQ(call->status, 200);
  EXPECT_TRUE(Body(call)["result"].contains("isError"));
}

TEST_F(McpApiTest, AnUnsupportedProtocolVersionHeaderIs400) {
  Serve();
  auto r = Post({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}},
                {{"MCP-Protocol-Version", "1999-01-01"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  EXPECT_NE(Body(r)["error"]["message"].get<std::string>().find("2025-11-25"), std::string::npos);
}

TEST_F(McpApiTest, AMethodHeaderThatDisagreesWithTheBodyIs400) {
  Serve();
  auto r =
      Post({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}}, {{"Mcp-Method", "tools/list"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Body(r)["error"]["code"], mcp::kInvalidRequest);
}

TEST_F(McpApiTest, GetAndDeleteAre405WithAJsonError) {
  Serve();
  httplib::Headers auth{{"Authorization", std::string("Bearer ") + kToken}};
  auto get = client_->Get("/mcp", auth);
  auto del = client_->Delete("/mcp", auth);
  for (const httplib::Result* r : {&get, &del}) {
    ASSERT_TRUE(*r);
    EXPECT_EQ((*r)->status, 405);
    EXPECT_EQ((*r)->get_header_value("Content-Type"), "application/json");
    EXPECT_TRUE(Body(*r)["error"].is_string());
  }
  EXPECT_EQ(client_->Get("/mcp")->status, 401);
}

TEST_F(McpApiTest, BadBodiesAndHeadersGetJsonErrors) {
  Serve();
  httplib::Headers auth{{"Authorization", std::string("Bearer ") + kToken}};
  auto not_json = client_->Post("/mcp", auth, "{nope", "application/json");
  ASSERT_TRUE(not_json);
  EXPECT_EQ(not_json->status, 400);
  EXPECT_EQ(Body(not_json)["error"]["code"], mcp::kParseError);

  auto form = client_->Post("/mcp", auth, "a=b", "application/x-www-form-urlencoded");
  EXPECT_EQ(form->status, 415);

  httplib::Headers html = auth;
  html.emplace("Accept", "text/html");
  auto wrong_accept = client_->Post("/mcp", html, "{}", "application/json");
  EXPECT_EQ(wrong_accept->status, 406);

  auto invalid = Post(json{{"jsonrpc", "2.0"}, {"id", 1}});
  ASSERT_TRUE(invalid);
  EXPECT_EQ(invalid->status, 200);
  EXPECT_EQ(Body(invalid)["error"]["code"], mcp::kInvalidRequest);
}

TEST_F(McpApiTest, ABatchIsAnsweredAsAnArray) {
  Serve();
  auto r = Post(json::array({{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}},
                             {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}}}));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  json body = Body(r);
  ASSERT_TRUE(body.is_array());
  EXPECT_EQ(body.size(), 2u);
  auto only_notes = Post(json::array({{{"jsonrpc", "2.0"}, {"method", "notifications/x"}}}));
  EXPECT_EQ(only_notes->status, 202);
}

}  // namespace
}  // namespace warpscope::server
