// SPDX-License-Identifier: Apache-2.0
// `warpscope mcp` with the real binaries: an MCP client talks JSON-RPC over the bridge's stdin
// and stdout to a `warpscope server` with a token, in both protocol eras; bad lines get errors
// and the bridge stays up; an unreachable server is an error reply, not an exit.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/token_file.h"
#include "child_process.h"
#include "scrape.h"

namespace warpscope::test {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

// One GPU, GPU-a on host h1, at 0.5 utilization over [1700000000, +10 s).
constexpr char kBatch[] = R"({"version": 1, "agentId": "agent-1", "sequence": "1",
 "startUnixNano": "1700000000000000000", "endUnixNano": "1700000010000000000", "host": "h1",
 "entities": [{"kind": "ENTITY_KIND_GPU", "id": "GPU-a",
               "attributes": [{"key": "gpu.index", "value": "0"}]}],
 "metrics": [{"key": "gpu.utilization", "kind": "METRIC_KIND_GAUGE", "unit": "1",
              "entityKind": "ENTITY_KIND_GPU"}],
 "series": [{"metric": 0, "entity": "GPU-a", "avg": 0.5, "min": 0.4, "max": 0.6, "last": 0.5,
             "count": 10}]})";

// A child with its stdin and stdout on pipes (stderr to a file): what an MCP client runs.
class PipedChild {
 public:
  static std::unique_ptr<PipedChild> Start(const std::vector<std::string>& argv,
                                           const std::string& stderr_path) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return nullptr;
    pid_t pid = fork();
    if (pid < 0) return nullptr;
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(in[0], 0);
      dup2(out[1], 1);
      if (err >= 0) dup2(err, 2);
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    auto child = std::unique_ptr<PipedChild>(new PipedChild());
    child->pid_ = pid;
    child->stdin_ = in[1];
    child->stdout_ = out[0];
    return child;
  }
  ~PipedChild() {
    CloseStdin();
    if (stdout_ >= 0) close(stdout_);
    if (!exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  bool WriteLine(const std::string& line) {
    std::string data = line + "\n";
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = write(stdin_, data.data() + done, data.size() - done);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  // The next line of stdout, or nullopt after `timeout` or at EOF.
  std::optional<std::string> ReadLine(milliseconds timeout = seconds(20)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (size_t nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      auto left =
          std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{stdout_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[4096];
      ssize_t n = read(stdout_, chunk, sizeof(chunk));
      if (n <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }
  void CloseStdin() {
    if (stdin_ >= 0) close(stdin_);
    stdin_ = -1;
  }
  // The exit status (waitpid's) within `timeout`, or -1.
  int Wait(milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return status;
      }
      std::this_thread::sleep_for(milliseconds(10));  // bounded polling of the exit
    }
    return -1;
  }
  bool Running() {
    int status = 0;
    return !exited_ && waitpid(pid_, &status, WNOHANG) == 0;
  }

 private:
  PipedChild() = default;
  pid_t pid_ = -1;
  int stdin_ = -1;
  int stdout_ = -1;
  bool exited_ = false;
  std::string buffer_;
};

class McpE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    files_ = PrepareAgentAndServer(tmp_, "name: unused\n");
    ASSERT_TRUE(files_.ok);
    server_ =
        *ChildProcess::Start({WarpscopeBinary(), "server", "--data-dir=" + tmp_.path() + "/data",
                              "--listen-address=127.0.0.1:" + std::to_string(files_.server_port),
                              "--auth-token-file=" + files_.token},
                             tmp_.path());
    WaitForHttp(files_.server_port, "/healthz", [](const std::string&) { return true; });
    httplib::Client c("127.0.0.1", files_.server_port);
    auto token = base::ReadTokenFile("--auth-token-file", files_.token);
    ASSERT_TRUE(token);
    httplib::Headers auth{{"Authorization", "Bearer " + *token}};
    auto r = c.Post("/api/v1/ingest/batch", auth, kBatch, "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
  }

  std::unique_ptr<PipedChild> StartBridge(const std::string& url, bool with_token = true) {
    std::vector<std::string> argv = {WarpscopeBinary(), "mcp", "--server", url};
    if (with_token) argv.push_back("--auth-token-file=" + files_.token);
    return PipedChild::Start(argv, tmp_.path() + "/mcp-" + std::to_string(++bridges_) + ".err");
  }

  // Sends `message` and reads the reply.
  static json Ask(PipedChild& bridge, const json& message) {
    EXPECT_TRUE(bridge.WriteLine(message.dump()));
    std::optional<std::string> line = bridge.ReadLine();
    EXPECT_TRUE(line) << "no reply to " << message.dump();
    return line ? json::parse(*line, nullptr, false) : json();
  }

  std::string Url() const { return "http://127.0.0.1:" + std::to_string(files_.server_port); }

  TempDir tmp_;
  AgentServerFiles files_;
  std::unique_ptr<ChildProcess> server_;
  int bridges_ = 0;
};

TEST_F(McpE2ETest, A2025SessionOverStdio) {
  auto bridge = StartBridge(Url());
  ASSERT_TRUE(bridge);
  json init = Ask(*bridge, {{"jsonrpc", "2.0"},
                            {"id", 1},
                            {"method", "initialize"},
                            {"params",
                             {{"protocolVersion", "2025-11-25"},
                              {"capabilities", json::object()},
                              {"clientInfo", {{"name", "e2e"}, {"version", "1"}}}}}});
  EXPECT_EQ(init["id"], 1);
  EXPECT_EQ(init["result"]["protocolVersion"], "2025-11-25") << init.dump();
  EXPECT_EQ(init["result"]["serverInfo"]["name"], "warpscope");
  // A notification has no reply: the next line is the tools/list answer.
  ASSERT_TRUE(bridge->WriteLine(R"({"jsonrpc": "2.0", "method": "notifications/initialized"})"));
  json tools = Ask(*bridge, {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}});
  EXPECT_EQ(tools["id"], 2);
  EXPECT_EQ(tools["result"]["tools"].size(), 5u) << tools.dump();

  json top = Ask(*bridge, {{"jsonrpc", "2.0"},
                           {"id", "top"},
                           {"method", "tools/call"},
                           {"params",
                            {{"name", "top_entities"},
                             {"arguments",
                              {{"metric", "gpu.utilization"},
                               {"start", "2023-11-14T22:13:00Z"},
                               {"end", 1700000060000}}}}}});
  EXPECT_EQ(top["id"], "top");
  ASSERT_FALSE(top["result"]["isError"].get<bool>()) << top.dump();
  ASSERT_EQ(top["result"]["structuredContent"]["entities"].size(), 1u) << top.dump();
  EXPECT_EQ(top["result"]["structuredContent"]["entities"][0]["entity"], "GPU-a");

  bridge->CloseStdin();
  int status = bridge->Wait(seconds(10));
  ASSERT_NE(status, -1) << "EOF ends the bridge";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_F(McpE2ETest, A2026SessionNeedsNoHandshake) {
  auto bridge = StartBridge(Url() + "/mcp");
  ASSERT_TRUE(bridge);
  json meta = {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}}}};
  json discover = Ask(
      *bridge, {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "server/discover"}, {"params", meta}});
  EXPECT_EQ(discover["result"]["supportedVersions"][0], "2026-07-28") << discover.dump();
  json params = meta;
  params["name"] = "explain_gpu";
  params["arguments"] = {{"gpu", "GPU-a"}, {"start", 1700000000000}, {"end", 1700000060000}};
  json explain =
      Ask(*bridge, {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/call"}, {"params", params}});
  ASSERT_FALSE(explain["result"]["isError"].get<bool>()) << explain.dump();
  EXPECT_EQ(explain["result"]["structuredContent"]["host"], "h1");
  json old = meta;
  old["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2001-01-01";
  json refused =
      Ask(*bridge, {{"jsonrpc", "2.0"}, {"id", 3}, {"method", "tools/list"}, {"params", old}});
  EXPECT_EQ(refused["id"], 3);
  EXPECT_EQ(refused["error"]["code"], -32602) << refused.dump();
}

TEST_F(McpE2ETest, BadLinesGetErrorsAndTheBridgeStaysUp) {
  auto bridge = StartBridge(Url());
  ASSERT_TRUE(bridge);
  ASSERT_TRUE(bridge->WriteLine("this is not json"));
  json parse = json::parse(bridge->ReadLine().value_or(""), nullptr, false);
  EXPECT_EQ(parse["error"]["code"], -32700) << parse.dump();
  json wrong = Ask(*bridge, {{"jsonrpc", "1.0"}, {"id", 7}, {"method", "ping"}});
  EXPECT_EQ(wrong["id"], 7);
  EXPECT_EQ(wrong["error"]["code"], -32600) << wrong.dump();
  json unknown = Ask(*bridge, {{"jsonrpc", "2.0"}, {"id", 8}, {"method", "resources/list"}});
  EXPECT_EQ(unknown["error"]["code"], -32601);
  ASSERT_TRUE(bridge->WriteLine(""));  // blank lines are skipped
  json ping = Ask(*bridge, {{"jsonrpc", "2.0"}, {"id", 9}, {"method", "ping"}});
  EXPECT_EQ(ping["id"], 9);
  EXPECT_EQ(ping["result"], json::object());
  EXPECT_TRUE(bridge->Running());
}

TEST_F(McpE2ETest, AMissingTokenOrAnUnreachableServerIsAnErrorReplyWithTheFix) {
  auto no_token = StartBridge(Url(), /*with_token=*/false);
  ASSERT_TRUE(no_token);
  json refused = Ask(*no_token, {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}});
  EXPECT_EQ(refused["id"], 1);
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("--auth-token-file"),
            std::string::npos)
      << refused.dump();

  const std::string dead = "http://127.0.0.1:" + std::to_string(PickFreePort());
  auto bridge = StartBridge(dead);
  ASSERT_TRUE(bridge);
  for (int id = 1; id <= 2; ++id) {
    json r = Ask(*bridge, {{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/list"}});
    EXPECT_EQ(r["id"], id);
    std::string message = r["error"]["message"].get<std::string>();
    EXPECT_NE(message.find(dead), std::string::npos) << message;
    EXPECT_NE(message.find("--server"), std::string::npos) << message;
  }
  bridge->CloseStdin();
  int status = bridge->Wait(seconds(10));
  ASSERT_NE(status, -1);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace warpscope::test
