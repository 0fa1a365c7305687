// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/inference/discovery.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/testing/temp_dir.h"

namespace warpscope::agent::inference {
namespace {

namespace fs = std::filesystem;

// A fake /proc in a temp dir: stat, cmdline, fd links to "socket:[N]", net/tcp and tcp6.
class FakeProc {
 public:
  explicit FakeProc(const std::string& root) : root_(root) {}

  void Process(int pid, int ppid, std::initializer_list<std::string> argv,
               std::initializer_list<uint64_t> sockets = {}) {
    const std::string dir = root_ + "/" + std::to_string(pid);
    fs::create_directories(dir + "/fd");
    std::string comm = fs::path(*argv.begin()).filename().string().substr(0, 15);
    std::ofstream(dir + "/stat") << pid << " (" << comm << ") S " << ppid
                                 << " 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 " << 1000 + pid
                                 << " 0 0\n";
    std::string cmdline;
    for (const std::string& a : argv) cmdline += a + '\0';
    std::ofstream(dir + "/cmdline", std::ios::binary) << cmdline;
    int fd = 3;
    for (uint64_t inode : sockets) {
      fs::create_symlink("socket:[" + std::to_string(inode) + "]",
                         dir + "/fd/" + std::to_string(fd++));
    }
    fs::create_symlink("/dev/null", dir + "/fd/0");
  }

  // net/tcp (or tcp6 when `v6`) of `pid`: rows of (port, state, inode).
  void Tcp(int pid, bool v6, std::initializer_list<std::tuple<int, const char*, uint64_t>> rows) {
    const std::string dir = root_ + "/" + std::to_string(pid) + "/net";
    fs::create_directories(dir);
    std::ofstream out(dir + (v6 ? "/tcp6" : "/tcp"));
    out << "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
           "timeout inode\n";
    int sl = 0;
    for (const auto& [port, state, inode] : rows) {
      char local[64];
      std::snprintf(local, sizeof(local),
                    v6 ? "00000000000000000000000000000000:%04X" : "00000000:%04X", port);
      out << "   " << sl++ << ": " << local << " " << (v6 ? std::string(32, '0') : "00000000")
          << ":0000 " << state << " 00000000:00000000 00:00000000 00000000  1000        0 " << inode
          << " 1 0000000000000000 100 0 0 10 0\n";
    }
  }

 private:
  std::string root_;
};

const ServingProcess* Find(const std::vector<ServingProcess>& found, int pid) {
  for (const auto& p : found) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}

TEST(ParseServerCommandTest, ReadsEachEngine) {
  const std::vector<std::string> vllm = {
      "/usr/bin/python3", "/usr/local/bin/vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct",
      "--port=8100",      "--max_num_seqs",      "64"};
  auto c = ParseServerCommand(vllm);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->engine, Engine::kVllm);
  EXPECT_EQ(c->port, 8100);
  EXPECT_EQ(c->model, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(c->limits.max_num_seqs, 64);
  EXPECT_EQ(c->limits.max_num_batched_tokens, 2048);  // the documented default
  EXPECT_EQ(c->metrics_path, "/metrics");

  const std::vector<std::string> api = {"python",  "-m", "vllm.entrypoints.openai.api_server",
                                        "--model", "m1", "--served-model-name",
                                        "chat"};
  EXPECT_EQ(ParseServerCommand(api)->model, "chat");

  const std::vector<std::string> trt = {
      "trtllm-serve", "serve", "/models/llama", "--port", "8080", "--max_batch_size", "512"};
  c = ParseServerCommand(trt);
  EXPECT_EQ(c->engine, Engine::kTrtllm);
  EXPECT_EQ(c->model, "/models/llama");
  EXPECT_EQ(c->limits.max_num_seqs, 512);
  EXPECT_EQ(c->metrics_path, "/prometheus/metrics");

  const std::vector<std::string> tgi = {"text-generation-launcher", "--model-id",
                                        "bigscience/bloom-560m", "--max-batch-size", "32"};
  c = ParseServerCommand(tgi);
  EXPECT_EQ(c->engine, Engine::kTgi);
  EXPECT_EQ(c->model, "bigscience/bloom-560m");
  EXPECT_EQ(c->port, 3000);

  const std::vector<std::string> other = {"python", "-m", "http.server", "--port", "8000"};
  EXPECT_FALSE(ParseServerCommand(other).has_value());
}

TEST(DiscoveryTest, FindsServersAndTheirListeningPorts) {
  base::TempDir tmp("inference_discovery_");
  FakeProc proc(tmp.path());
  // vLLM: the API server listens on 8000 (tcp6); its engine core child holds a socket of its
  // own; a forked worker repeats the command line.
  proc.Process(100, 1, {"/usr/bin/python3", "/usr/bin/vllm", "serve", "Qwen/Qwen2-7B"},
               {7777, 9999});
  proc.Process(101, 100, {"VLLM::EngineCore"}, {5555});
  proc.Process(102, 100, {"/usr/bin/python3", "/usr/bin/vllm", "serve", "Qwen/Qwen2-7B"});
  proc.Tcp(100, true, {{8000, "0A", 7777}, {8000, "01", 9999}});
  proc.Tcp(100, false, {{5557, "0A", 5555}, {22, "0A", 4242}});
  // SGLang on 30001 (its --port).
  proc.Process(200, 1,
               {"python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen2-7B", "--port",
                "30001", "--enable-metrics"},
               {3333});
  proc.Tcp(200, false, {{30001, "0A", 3333}});
  // TGI: the launcher's router child listens; the Python shard is part of the launcher.
  proc.Process(400, 1, {"text-generation-launcher", "--model-id", "bigscience/bloom-560m"});
  proc.Process(401, 400, {"text-generation-router", "--port", "3000"}, {4444});
  proc.Process(
      402, 400,
      {"/usr/bin/python3", "/usr/bin/text-generation-server", "serve", "bigscience/bloom-560m"});
  proc.Tcp(400, false, {{3000, "0A", 4444}});
  // Not listening yet: found, without a URL.
  proc.Process(500, 1, {"trtllm-serve", "/models/llama"});
  proc.Process(600, 1, {"/bin/bash"});

  const auto found = DiscoverServingProcesses(tmp.path());
  ASSERT_EQ(found.size(), 4u);
  const ServingProcess* vllm = Find(found, 100);
  ASSERT_NE(vllm, nullptr);
  EXPECT_EQ(vllm->start_ticks, 1100u);
  EXPECT_EQ(vllm->descendants, (std::vector<int>{101, 102}));
  EXPECT_EQ(vllm->listen_ports, (std::vector<int>{5557, 8000}));
  EXPECT_EQ(vllm->url, "http://127.0.0.1:8000/metrics");
  EXPECT_EQ(vllm->command.model, "Qwen/Qwen2-7B");
  EXPECT_EQ(Find(found, 200)->url, "http://127.0.0.1:30001/metrics");
  EXPECT_EQ(Find(found, 400)->url, "http://127.0.0.1:3000/metrics");
  EXPECT_EQ(Find(found, 400)->command.engine, Engine::kTgi);
  EXPECT_EQ(Find(found, 402), nullptr);
  EXPECT_EQ(Find(found, 500)->url, "");
}

TEST(DiscoveryTest, ReadsAProcessByPidWhateverItsCommandLine) {
  base::TempDir tmp("inference_discovery_");
  FakeProc proc(tmp.path());
  proc.Process(300, 1, {"vllm", "serve", "m", "--max-num-seqs", "16"}, {3131});
  proc.Process(301, 300, {"python3", "worker.py"});
  proc.Process(302, 301, {"python3", "worker.py"});
  proc.Tcp(300, false, {{41000, "0A", 3131}});
  proc.Process(310, 1, {"/opt/serve.sh"});

  auto vllm = ReadServingProcess(tmp.path(), 300);
  ASSERT_TRUE(vllm.has_value());
  EXPECT_TRUE(vllm->serving_command);
  EXPECT_EQ(vllm->start_ticks, 1300u);
  EXPECT_EQ(vllm->descendants, (std::vector<int>{301, 302}));
  EXPECT_EQ(vllm->command.limits.max_num_seqs, 16);
  EXPECT_EQ(vllm->url, "http://127.0.0.1:41000/metrics");

  auto wrapper = ReadServingProcess(tmp.path(), 310);
  ASSERT_TRUE(wrapper.has_value());
  EXPECT_FALSE(wrapper->serving_command);
  EXPECT_EQ(wrapper->comm, "serve.sh");
  EXPECT_FALSE(ReadServingProcess(tmp.path(), 999).has_value());
}

TEST(DiscoveryTest, MissingProcIsEmpty) {
  EXPECT_TRUE(DiscoverServingProcesses("/nonexistent/proc").empty());
}

}  // namespace
}  // namespace warpscope::agent::inference
