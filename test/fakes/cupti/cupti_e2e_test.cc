// SPDX-License-Identifier: Apache-2.0
// End to end: fake_cuda_app loads libwarpscope_cupti.so (CUDA_INJECTION64_PATH) over the fake
// libcupti, and a test agent decodes what arrives on the unix socket.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/testing/peer.h"
#include "cupti/wire.h"
#include "integration/child_process.h"
#include "test_agent.h"

namespace warpscope::cupti {
namespace {

using testing::AgentConnection;
using testing::TestAgent;
using namespace std::chrono_literals;

const std::string kBin = std::string(WARPSCOPE_BINARY_DIR) + "/bin/fake_cuda_app";
const std::string kInject = std::string(WARPSCOPE_BINARY_DIR) + "/lib/libwarpscope_cupti.so";
const std::string kFakeCupti =
    std::string(WARPSCOPE_BINARY_DIR) + "/lib/libwarpscope_fake_cupti.so";

struct Site {
  uint64_t start = 0;
  uint64_t size = 0;
  bool Contains(uint64_t pc) const { return pc > start && pc <= start + size; }
};

struct AppRun {
  int status = -1;
  std::string out;
  std::string err;
  std::map<std::string, Site> sites;
  uint32_t pid = 0;
};

std::vector<std::string> Env(const std::string& socket, std::vector<std::string> extra) {
  std::vector<std::string> env = {"CUDA_INJECTION64_PATH=" + kInject,
                                  "WARPSCOPE_CUPTI_LIBRARY=" + kFakeCupti,
                                  "WARPSCOPE_AGENT_SOCKET=" + socket,
                                  "WARPSCOPE_CUPTI_FLUSH_MS=50", "WARPSCOPE_CUPTI_LOG=stderr"};
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

AppRun RunApp(const std::string& dir, std::vector<std::string> args, std::vector<std::string> env,
              std::chrono::milliseconds timeout = 30s) {
  AppRun run;
  args.insert(args.begin(), kBin);
  auto child = test::ChildProcess::Start(args, dir, env);
  if (!child) {
    ADD_FAILURE() << child.error().message();
    return run;
  }
  run.status = (*child)->Wait(timeout);
  run.out = (*child)->Stdout();
  run.err = (*child)->Stderr();
  std::istringstream lines(run.out);
  std::string word;
  while (lines >> word) {
    if (word == "site") {
      std::string name;
      std::string start;
      uint64_t size = 0;
      lines >> name >> start >> size;
      run.sites[name] = Site{std::stoull(start, nullptr, 16), size};
    } else if (word == "pid") {
      lines >> run.pid;
    }
  }
  return run;
}

// What the fake libcupti reports (WARPSCOPE_FAKE_CUPTI_VERSION, or its preset).
uint32_t FakeVersion() {
  if (const char* v = std::getenv("WARPSCOPE_FAKE_CUPTI_VERSION")) {
    return static_cast<uint32_t>(std::stoul(v));
  }
  const char* preset = std::getenv("WARPSCOPE_FAKE_CUPTI_PRESET");
  return preset != nullptr && std::string(preset) == "cuda12" ? 21u : 130001u;
}

bool ExitedOk(const AppRun& run) { return run.status >= 0 && WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0; }

// Everything one process sent, indexed.
struct Received {
  wire::Hello hello;
  std::map<uint64_t, wire::Stack> stacks;
  std::vector<wire::Launch> launches;
  std::map<uint32_t, std::string> names;
  std::vector<wire::KernelActivity> kernels;
  std::map<std::string, uint64_t> gpu_ns;  // from KernelAggregate
  std::map<std::string, uint64_t> gpu_count;
  std::map<wire::CounterId, uint64_t> counters;  // the last Counters message
  std::vector<wire::Notice> notices;
  std::vector<wire::NvtxRange> ranges;
  std::vector<wire::Memcpy> memcpys;
  std::vector<wire::StallReasons> stall_reasons;
  std::vector<wire::PcSample> pc_samples;
  std::map<uint64_t, std::string> cubins;
};

Received Index(const AgentConnection& c) {
  Received r;
  std::vector<wire::KernelAggregate> aggs;
  for (const auto& m : c.messages) {
    if (auto* h = std::get_if<wire::Hello>(&m)) r.hello = *h;
    if (auto* s = std::get_if<wire::Stack>(&m)) r.stacks[s->hash] = *s;
    if (auto* l = std::get_if<wire::Launch>(&m)) r.launches.push_back(*l);
    if (auto* n = std::get_if<wire::KernelName>(&m)) r.names[n->id] = n->name;
    if (auto* k = std::get_if<wire::KernelActivity>(&m)) r.kernels.push_back(*k);
    if (auto* a = std::get_if<wire::KernelAggregate>(&m)) aggs.push_back(*a);
    if (auto* n = std::get_if<wire::Notice>(&m)) r.notices.push_back(*n);
    if (auto* n = std::get_if<wire::NvtxRange>(&m)) r.ranges.push_back(*n);
    if (auto* n = std::get_if<wire::Memcpy>(&m)) r.memcpys.push_back(*n);
    if (auto* n = std::get_if<wire::StallReasons>(&m)) r.stall_reasons.push_back(*n);
    if (auto* p = std::get_if<wire::PcSamples>(&m)) {
      r.pc_samples.insert(r.pc_samples.end(), p->samples.begin(), p->samples.end());
    }
    if (auto* cb = std::get_if<wire::CubinChunk>(&m)) {
      auto& bytes = r.cubins[cb->crc];
      bytes.resize(cb->total_size);
      bytes.replace(cb->offset, cb->bytes.size(), cb->bytes);
    }
    if (auto* cs = std::get_if<wire::Counters>(&m)) {
      r.counters.clear();
      for (const auto& c : cs->counters) r.counters[c.id] = c.value;
    }
  }
  for (const auto& a : aggs) {
    for (const auto& e : a.entries) {
      r.gpu_ns[r.names[e.name_id]] += e.total_ns;
      r.gpu_count[r.names[e.name_id]] += e.count;
    }
  }
  return r;
}

bool AllClosed(const std::vector<AgentConnection>& cs, size_t n) {
  if (cs.size() < n) return false;
  for (const auto& c : cs) {
    if (!c.closed) return false;
  }
  return true;
}

bool StackHasSite(const wire::Stack& s, const Site& site) {
  for (uint64_t pc : s.native) {
    if (site.Contains(pc)) return true;
  }
  return false;
}

class CuptiE2eTest : public ::testing::Test {
 protected:
  std::string SocketPath() const { return dir_.path() + "/cupti.sock"; }
  test::TempDir dir_;
};

TEST_F(CuptiE2eTest, KernelsArriveWithTheirLaunchStacksAndGpuTime) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "3", "--launches", "20", "--graph", "--markers", "--reverse"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_BURST=1000",
                                       "WARPSCOPE_CUPTI_ACTIVITY_BUFFERS=32"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  auto conns = agent.Snapshot();
  ASSERT_EQ(conns.size(), 1u);
  EXPECT_TRUE(conns[0].error.empty()) << conns[0].error;
  Received r = Index(conns[0]);
  EXPECT_EQ(r.hello.pid, run.pid);
  EXPECT_EQ(r.hello.cupti_version, FakeVersion());
  EXPECT_NE(r.hello.exe.find("fake_cuda_app"), std::string::npos);

  // 3 threads x 20 x (gemm + softmax) + 2 graph launches; the nested driver call of each runtime
  // launch is not counted twice.
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesSeen], 122u);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesAdmitted], 122u);
  EXPECT_EQ(r.counters[wire::CounterId::kRingDrops], 0u);
  EXPECT_EQ(r.counters[wire::CounterId::kBufferPoolExhausted], 0u);
  EXPECT_GT(r.counters[wire::CounterId::kOverheadNs], 0u);
  ASSERT_EQ(r.launches.size(), 122u);

  // Every launch names a stack that was sent, and the stack holds the launching function.
  std::map<std::string, std::string> site_of = {{"_Z9fake_gemmv", "FakeAppLaunchGemm"},
                                                {"triton_softmax", "FakeAppLaunchSoftmax"},
                                                {"", "FakeAppLaunchGraph"}};
  for (const auto& l : r.launches) {
    ASSERT_TRUE(r.stacks.contains(l.stack_hash)) << "launch " << l.correlation_id;
    const auto& site = run.sites[site_of[l.symbol]];
    ASSERT_GT(site.size, 0u) << l.symbol;
    EXPECT_TRUE(StackHasSite(r.stacks[l.stack_hash], site)) << l.symbol;
  }

  // Every kernel joined its launch: 120 single kernels + 2 graph launches x 3 nodes.
  ASSERT_EQ(r.kernels.size(), 126u);
  std::map<std::string, int> by_name;
  for (const auto& k : r.kernels) {
    const std::string name = r.names[k.name_id];
    ++by_name[name];
    ASSERT_NE(k.stack_hash, 0u);
    const std::string site = name.starts_with("_Z8graph") ? "FakeAppLaunchGraph" : site_of[name];
    EXPECT_TRUE(StackHasSite(r.stacks[k.stack_hash], run.sites[site])) << name;
    if (name.starts_with("_Z8graph")) {
      EXPECT_EQ(k.graph_id, 42u);
      EXPECT_EQ(k.launch_cbid, 514u);  // cuGraphLaunch
    } else if (name == "_Z9fake_gemmv") {
      EXPECT_EQ(k.launch_domain, 2u);  // the runtime launch, not its nested driver call
      EXPECT_EQ(k.launch_cbid, 211u);
    }
    EXPECT_GT(k.launch_ns, 0u);
  }
  EXPECT_EQ(by_name["_Z9fake_gemmv"], 60);
  EXPECT_EQ(by_name["triton_softmax"], 60);
  EXPECT_EQ(by_name["_Z8graph_k2v"], 2);

  // GPU time per kernel, from the aggregates.
  EXPECT_EQ(r.gpu_ns["_Z9fake_gemmv"], 60u * 5000);
  EXPECT_EQ(r.gpu_ns["triton_softmax"], 60u * 1000);
  EXPECT_EQ(r.gpu_count["_Z8graph_k1v"], 2u);

  ASSERT_EQ(r.ranges.size(), 1u);
  EXPECT_EQ(r.ranges[0].name, "train_step");
  EXPECT_EQ(r.ranges[0].end_ns - r.ranges[0].start_ns, 50u);
  ASSERT_EQ(r.memcpys.size(), 1u);
  EXPECT_EQ(r.memcpys[0].bytes, 4096u);
}

TEST_F(CuptiE2eTest, FramePointerUnwinderSeesTheLaunchSite) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "2", "--launches", "5"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_UNWINDER=fp"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  ASSERT_EQ(r.launches.size(), 20u);
  for (const auto& l : r.launches) {
    const auto& site = run.sites[l.symbol == "triton_softmax" ? "FakeAppLaunchSoftmax" : "FakeAppLaunchGemm"];
    EXPECT_TRUE(StackHasSite(r.stacks[l.stack_hash], site)) << l.symbol;
  }
}

TEST_F(CuptiE2eTest, UnsampledKernelsStillCountGpuTime) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "2", "--launches", "30"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_RATE=0"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesSeen], 120u);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesAdmitted], 0u);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesThrottled], 120u);
  EXPECT_TRUE(r.launches.empty());
  EXPECT_TRUE(r.kernels.empty());
  EXPECT_EQ(r.gpu_ns["_Z9fake_gemmv"], 60u * 5000);
  EXPECT_EQ(r.gpu_count["triton_softmax"], 60u);
  EXPECT_EQ(r.counters[wire::CounterId::kKernelsSeen], 120u);
}

TEST_F(CuptiE2eTest, RateLimiterAdmitsTheBurstPerThread) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "2", "--launches", "50"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_RATE=1", "WARPSCOPE_CUPTI_BURST=5"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  const uint64_t admitted = r.counters[wire::CounterId::kLaunchesAdmitted];
  EXPECT_GE(admitted, 10u);  // 5 per thread, plus at most a token per second of run time
  EXPECT_LE(admitted, 16u);
  EXPECT_EQ(admitted + r.counters[wire::CounterId::kLaunchesThrottled], 200u);
  EXPECT_EQ(r.launches.size(), admitted);
  EXPECT_EQ(r.kernels.size(), admitted);
}

TEST_F(CuptiE2eTest, ThreadsBeyondTheRingPoolAreCountedNotProfiled) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "4", "--launches", "25"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_MAX_THREADS=1", "WARPSCOPE_CUPTI_BURST=1000",
                                       "WARPSCOPE_CUPTI_ACTIVITY_BUFFERS=32"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  // Whether a thread got the one slot depends on scheduling; every launch is accounted for.
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesSeen] + r.counters[wire::CounterId::kThreadsOverCap],
            200u);
  EXPECT_EQ(r.launches.size(), r.counters[wire::CounterId::kLaunchesSeen]);
  EXPECT_EQ(r.gpu_count["_Z9fake_gemmv"], 100u);  // GPU time does not depend on the slots
}

TEST_F(CuptiE2eTest, ExhaustedBufferPoolDropsAndCountsRecords) {
  TestAgent agent(SocketPath());
  // 240 records at 16 per buffer need 15 buffers at the exit flush; the pool holds 2.
  // Buffers are delivered at the exit flush only (synchronously, whatever the fake's preset).
  auto run = RunApp(dir_.path(), {"--threads", "2", "--launches", "60"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_ACTIVITY_BUFFERS=2",
                                       "WARPSCOPE_CUPTI_FLUSH_MS=60000",
                                       "WARPSCOPE_FAKE_CUPTI_BUFFERS=sync"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  EXPECT_GT(r.counters[wire::CounterId::kBufferPoolExhausted], 0u);
  EXPECT_GT(r.counters[wire::CounterId::kCuptiDroppedRecords], 0u);
  EXPECT_EQ(r.counters[wire::CounterId::kKernelsSeen] +
                r.counters[wire::CounterId::kCuptiDroppedRecords],
            240u);
}

TEST_F(CuptiE2eTest, PythonFramesOfTheLaunchingCode) {
  WARPSCOPE_REQUIRE_PEER(FAKE_APP_HAS_PYTHON, "python3-dev (fake_cuda_app was built without Python)",
                         "run scripts/setup.sh --test and rebuild");
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "0", "--python"}, Env(SocketPath(), {}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  ASSERT_EQ(r.launches.size(), 6u);
  const auto& stack = r.stacks[r.launches[0].stack_hash];
  ASSERT_GE(stack.python.size(), 3u);
  EXPECT_EQ(stack.python[0].function, "model_forward");
  EXPECT_EQ(stack.python[0].file, "fake_train.py");
  EXPECT_EQ(stack.python[0].line, 4u);
  EXPECT_EQ(stack.python[1].function, "train_step");
  EXPECT_EQ(stack.python[1].line, 6u);
  EXPECT_EQ(stack.python[2].function, "<module>");
  EXPECT_TRUE(StackHasSite(stack, run.sites["FakeAppLaunchFromPython"]));
  // The launch made with the GIL released has its Python frames too (read from memory).
  const auto& nogil = r.stacks[r.launches[5].stack_hash];
  EXPECT_EQ(r.launches[5].symbol, "_Z10nogil_kernv");
  ASSERT_EQ(nogil.python.size(), 1u);
  EXPECT_EQ(nogil.python[0].function, "<module>");
  EXPECT_EQ(nogil.python[0].file, "fake_train.py");
  EXPECT_EQ(nogil.python[0].line, 8u);
  EXPECT_TRUE(StackHasSite(nogil, run.sites["FakeAppLaunchFromPython"]));
  ASSERT_EQ(r.kernels.size(), 6u);
  EXPECT_EQ(r.names[r.kernels[0].name_id], "_Z9py_kernelv");
  EXPECT_EQ(r.gpu_ns["_Z9py_kernelv"], 5u * 3000);
}

// PyTorch, Triton and vLLM release the GIL before they launch: the stack still names the
// Python code, frame by frame (test/fakes/cupti/fake_cuda_app.cc kNoGilScript).
TEST_F(CuptiE2eTest, PythonFramesOfLaunchesWithTheGilReleased) {
  WARPSCOPE_REQUIRE_PEER(FAKE_APP_HAS_PYTHON, "python3-dev (fake_cuda_app was built without Python)",
                         "run scripts/setup.sh --test and rebuild");
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "0", "--python-nogil"}, Env(SocketPath(), {}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  ASSERT_EQ(r.launches.size(), 6u);
  ASSERT_TRUE(r.notices.empty()) << r.notices[0].message;
  struct Want {
    std::string function;
    std::string file;
    uint32_t line;
  };
  auto python_of = [&](const std::string& symbol) {
    std::vector<Want> out;
    for (const auto& l : r.launches) {
      if (l.symbol == symbol) {
        for (const auto& f : r.stacks[l.stack_hash].python) {
          out.push_back({std::string(f.function), std::string(f.file), f.line});
        }
        EXPECT_TRUE(StackHasSite(r.stacks[l.stack_hash], run.sites["FakeAppLaunchFromPython"]))
            << symbol;
        return out;
      }
    }
    ADD_FAILURE() << "no launch of " << symbol;
    return out;
  };
  auto expect = [](const std::vector<Want>& got, const std::vector<Want>& want,
                   const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].function, want[i].function) << what << " frame " << i;
      EXPECT_EQ(got[i].file, want[i].file) << what << " frame " << i;
      EXPECT_EQ(got[i].line, want[i].line) << what << " frame " << i;
    }
  };
  expect(python_of("_Z13nogil_forwardv"),
         {{"model_forward", "fake_nogil.py", 5}, {"train_step", "fake_nogil.py", 7},
          {"<module>", "fake_nogil.py", 17}},
         "function");
  expect(python_of("_Z12nogil_methodv"),
         {{"Model.forward", "fake_nogil.py", 10}, {"<module>", "fake_nogil.py", 18}}, "method");
  expect(python_of("_Z15nogil_generatorv"),
         {{"batches", "fake_nogil.py", 12}, {"<module>", "fake_nogil.py", 19}}, "generator");
  // The coroutine runs under asyncio's event loop: its own frame first, the script's last.
  const auto coro = python_of("_Z15nogil_coroutinev");
  ASSERT_GE(coro.size(), 3u);
  EXPECT_EQ(coro.front().function, "serve");
  EXPECT_EQ(coro.front().file, "fake_nogil.py");
  EXPECT_EQ(coro.front().line, 16u);
  EXPECT_EQ(coro.back().function, "<module>");
  EXPECT_EQ(coro.back().line, 21u);
  for (size_t i = 1; i + 1 < coro.size(); ++i) {
    EXPECT_NE(coro[i].file.find("asyncio"), std::string::npos) << coro[i].file;
  }
  // A thread that never ran Python: native frames only.
  EXPECT_TRUE(python_of("_Z12native_kernv").empty());
  EXPECT_EQ(r.kernels.size(), 6u);
}

TEST_F(CuptiE2eTest, SecondSubscriberMakesTheLibraryPassiveAndIsReportedOnce) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "2", "--launches", "10", "--second-subscriber"},
                    Env(SocketPath(), {}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_EQ(r.notices[0].code, 39u);
  EXPECT_EQ(r.notices[0].severity, wire::Severity::kError);
  EXPECT_NE(r.notices[0].message.find("another tool"), std::string::npos);
  EXPECT_NE(r.notices[0].message.find("held by \"CUPTI for FakeOtherTool\""), std::string::npos)
      << r.notices[0].message;
  EXPECT_TRUE(r.launches.empty());
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesSeen], 0u);
}

TEST_F(CuptiE2eTest, AppRunsNormallyWithoutAnAgent) {
  auto run = RunApp(dir_.path(), {"--threads", "4", "--launches", "200", "--graph"},
                    Env(dir_.path() + "/nobody-listens.sock", {}), 20s);
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  EXPECT_NE(run.out.find("done ok"), std::string::npos);
}

TEST_F(CuptiE2eTest, AppRunsWithoutTheCuptiLibrary) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "1", "--launches", "5"},
                    {"CUDA_INJECTION64_PATH=" + kInject,
                     "WARPSCOPE_CUPTI_LIBRARY=/nonexistent/libcupti.so.13",
                     "WARPSCOPE_AGENT_SOCKET=" + SocketPath(), "WARPSCOPE_CUPTI_FLUSH_MS=50"});
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_NE(r.notices[0].message.find("WARPSCOPE_CUPTI_LIBRARY"), std::string::npos);
  EXPECT_TRUE(run.err.empty()) << "the library must be silent by default: " << run.err;
}

// With the real libcupti and no GPU driver, cuptiSubscribe fails: the library must go passive,
// say why, and leave the application alone. Runs where a CUDA toolkit is installed.
TEST_F(CuptiE2eTest, RealCuptiWithoutADriverGoesPassive) {
  std::string real;
  for (const char* p : {"/usr/local/cuda/lib64/libcupti.so.13", "/usr/local/cuda-13.0/lib/libcupti.so.13",
                        "/usr/local/cuda-13.0/lib64/libcupti.so.13",
                        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"}) {
    if (access(p, R_OK) == 0) {
      real = p;
      break;
    }
  }
  if (access("/dev/nvidiactl", F_OK) == 0) {
    GTEST_SKIP() << "an NVIDIA driver is loaded: this test needs a machine without one";
  }
  WARPSCOPE_REQUIRE_PEER(!real.empty(), "NVIDIA's libcupti.so.13",
                         "install the CUDA 13 toolkit in /usr/local/cuda (part of the machine image)");
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "2", "--launches", "5"},
                    {"CUDA_INJECTION64_PATH=" + kInject, "WARPSCOPE_CUPTI_LIBRARY=" + real,
                     "WARPSCOPE_AGENT_SOCKET=" + SocketPath()});
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  EXPECT_EQ(r.hello.cupti_version / 10000, 13u);
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_NE(r.notices[0].message.find("cuptiSubscribe failed"), std::string::npos);
  EXPECT_TRUE(r.launches.empty());
}

TEST_F(CuptiE2eTest, InvalidSettingIsReportedAndIgnored) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "1", "--launches", "5"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_RATE=lots"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_EQ(r.notices[0].severity, wire::Severity::kWarning);
  EXPECT_NE(r.notices[0].message.find("WARPSCOPE_CUPTI_RATE"), std::string::npos);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesAdmitted], 10u);  // default burst 20
}

TEST_F(CuptiE2eTest, FloodedAgentNeitherBlocksNorGrowsTheApp) {
  TestAgent agent(SocketPath(), /*reading=*/false);
  auto run = RunApp(dir_.path(), {"--storm-ms", "1500", "--storm-threads", "2"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_RATE=100000", "WARPSCOPE_CUPTI_BURST=100000",
                                       "WARPSCOPE_CUPTI_OUT_KB=256"}),
                    30s);
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  // Peak RSS stays bounded while nothing is read (fixed rings, fixed unsent-bytes cap).
  const auto pos = run.out.find("rss_kb=");
  ASSERT_NE(pos, std::string::npos);
  const uint64_t rss_kb = std::stoull(run.out.substr(pos + 7));
  EXPECT_LT(rss_kb, 96u * 1024) << run.out;
  // What was written is still a valid stream once the agent reads it.
  agent.StartReading();
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  auto conns = agent.Snapshot();
  EXPECT_TRUE(conns[0].error.empty()) << conns[0].error;
  EXPECT_FALSE(conns[0].messages.empty());
}

TEST_F(CuptiE2eTest, MemoryGaugeStaysUnderTheCapInAStorm) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--storm-ms", "1000", "--storm-threads", "2"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_RATE=100000", "WARPSCOPE_CUPTI_BURST=100000"}),
                    30s);
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  // Default cap: 2 used rings x 64 KiB + 8 x 2 MiB activity buffers + 2 x 4 MiB unsent bytes +
  // 512 KiB intern table.
  const uint64_t cap = 2 * 64 * 1024 + 8 * 2048 * 1024 + 2 * 4096 * 1024 + 512 * 1024;
  EXPECT_GT(r.counters[wire::CounterId::kMemoryBytes], 0u);
  EXPECT_LE(r.counters[wire::CounterId::kMemoryBytes], cap);
  EXPECT_GT(r.counters[wire::CounterId::kLaunchesSeen], 1000u);
}

TEST_F(CuptiE2eTest, ForkedChildReportsItsOwnLaunches) {
  TestAgent agent(SocketPath());
  // The child starts the flusher thread again; TSan builds must be told that this is intended.
  auto run = RunApp(dir_.path(), {"--threads", "1", "--launches", "3", "--fork"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_BURST=1000", "TSAN_OPTIONS=die_after_fork=0"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  EXPECT_NE(run.out.find("child ok"), std::string::npos);
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 2); }, 20s));
  auto conns = agent.Snapshot();
  ASSERT_EQ(conns.size(), 2u);
  const AgentConnection* child = nullptr;
  const AgentConnection* parent = nullptr;
  for (const auto& c : conns) {
    (c.pid == run.pid ? parent : child) = &c;
  }
  ASSERT_NE(parent, nullptr);
  ASSERT_NE(child, nullptr);
  Received rc = Index(*child);
  ASSERT_EQ(rc.launches.size(), 1u);
  EXPECT_TRUE(StackHasSite(rc.stacks[rc.launches[0].stack_hash], run.sites["FakeAppLaunchInChild"]));
  Received rp = Index(*parent);
  EXPECT_EQ(rp.counters[wire::CounterId::kLaunchesSeen], 6u + 4u);  // before and after the fork
}

// The agent turns collection off, then retunes the rate, for a process already running: the
// app launches, waits until the library acknowledged the control (kControlsApplied), launches
// again.
void RunControlled(const std::string& dir, const std::string& socket,
                   std::vector<wire::Control> controls, Received* out,
                   std::vector<std::string> env = {"WARPSCOPE_CUPTI_BURST=1000"}) {
  TestAgent agent(socket);
  const std::string go = dir + "/go";
  auto child = test::ChildProcess::Start(
      {kBin, "--threads", "1", "--launches", "10", "--pause-file", go}, dir, Env(socket, env));
  ASSERT_TRUE(child.has_value());
  // Phase 1 done: its 20 launches and their 20 kernel records arrived.
  ASSERT_TRUE(agent.WaitUntil(
      [](const auto& cs) {
        if (cs.empty()) return false;
        auto counters = Index(cs[0]).counters;
        return counters[wire::CounterId::kLaunchesSeen] == 20 &&
               counters[wire::CounterId::kKernelsSeen] == 20;
      },
      20s));
  for (const auto& c : controls) {
    agent.SendControl(c);
  }
  ASSERT_TRUE(agent.WaitUntil(
      [n = controls.size()](const auto& cs) {
        return Index(cs[0]).counters[wire::CounterId::kControlsApplied] == n;
      },
      20s));
  std::ofstream(go) << "go";
  const int status = (*child)->Wait(20s);
  ASSERT_TRUE(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) << (*child)->Stderr();
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  *out = Index(agent.Snapshot()[0]);
}

TEST_F(CuptiE2eTest, AgentTurnsCollectionOffAtRunTime) {
  Received r;
  RunControlled(dir_.path(), SocketPath(), {{wire::ControlOp::kDisableCollection, 0}}, &r);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesSeen], 20u);  // phase 2 not seen
  EXPECT_EQ(r.launches.size(), 20u);
}

TEST_F(CuptiE2eTest, AgentRetunesTheRateAtRunTime) {
  Received r;
  RunControlled(dir_.path(), SocketPath(), {{wire::ControlOp::kSetRate, 0}}, &r);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesSeen], 40u);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesAdmitted], 20u);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesThrottled], 20u);
}

// "All kernels" duty-cycled: a kernel whose launch was not sampled is sent as KernelActivity
// exactly when its GPU start time t satisfies t mod interval < window; sampled kernels always;
// KernelAggregate counts every kernel either way. The fake GPU clock starts at 1 s and advances
// by 1 ms of idle time per kernel, so 160 kernels span four 40 ms intervals.
TEST_F(CuptiE2eTest, AllKernelsWindowsSendEveryKernelInsideAndOnlySampledOutside) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(),
                    {"--threads", "2", "--launches", "40", "--kernel-gap-us", "1000",
                     "--print-kernels"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_RATE=1", "WARPSCOPE_CUPTI_BURST=3",
                                       "WARPSCOPE_CUPTI_ACTIVITY_BUFFERS=32",
                                       "WARPSCOPE_CUPTI_ALL_KERNELS_WINDOW_MS=10",
                                       "WARPSCOPE_CUPTI_ALL_KERNELS_INTERVAL_MS=40"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  EXPECT_TRUE(r.notices.empty());

  std::map<uint32_t, uint64_t> start_of;  // every kernel the app ran
  std::istringstream lines(run.out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string word;
    uint32_t corr = 0;
    uint64_t start = 0;
    if (words >> word && word == "kernel" && words >> corr >> start) {
      start_of[corr] = start;
    }
  }
  ASSERT_EQ(start_of.size(), 160u);
  std::set<uint32_t> sampled;
  for (const auto& l : r.launches) sampled.insert(l.correlation_id);
  EXPECT_GE(sampled.size(), 6u);  // the burst of 3 per thread
  EXPECT_LT(sampled.size(), 20u);
  std::map<uint32_t, wire::KernelActivity> sent;
  for (const auto& k : r.kernels) {
    EXPECT_TRUE(sent.emplace(k.correlation_id, k).second) << "kernel sent twice";
  }

  constexpr uint64_t kIntervalNs = 40'000'000, kWindowNs = 10'000'000;
  int in_window_unsampled = 0, outside_unsampled = 0;
  for (const auto& [corr, start] : start_of) {
    const bool in_window = start % kIntervalNs < kWindowNs;
    const bool was_sampled = sampled.contains(corr);
    auto it = sent.find(corr);
    EXPECT_EQ(it != sent.end(), in_window || was_sampled)
        << "kernel " << corr << " at " << start << (in_window ? " (in a window)" : "")
        << (was_sampled ? " (sampled)" : "");
    if (it == sent.end()) continue;
    EXPECT_EQ(it->second.start_ns, start);
    EXPECT_EQ(it->second.stack_hash != 0, was_sampled) << corr;
    if (!was_sampled) {
      (in_window ? in_window_unsampled : outside_unsampled) += 1;
    }
  }
  EXPECT_GT(in_window_unsampled, 20);  // ~40 kernels start inside windows
  EXPECT_EQ(outside_unsampled, 0);
  EXPECT_LT(r.kernels.size(), 100u);   // most kernels start outside windows

  // GPU time stays exact for every kernel, in windows or not.
  EXPECT_EQ(r.counters[wire::CounterId::kKernelsSeen], 160u);
  EXPECT_EQ(r.gpu_count["_Z9fake_gemmv"], 80u);
  EXPECT_EQ(r.gpu_ns["_Z9fake_gemmv"], 80u * 5000);
  EXPECT_EQ(r.gpu_count["triton_softmax"], 80u);
  EXPECT_EQ(r.gpu_ns["triton_softmax"], 80u * 1000);
}

// The agent switches "all kernels" on for a running process that samples nothing (rate 0): the
// kernels of phase 2 arrive as KernelActivity without a stack, those of phase 1 did not.
TEST_F(CuptiE2eTest, AgentSwitchesAllKernelsOnAtRunTime) {
  Received r;
  RunControlled(dir_.path(), SocketPath(),
                {{wire::ControlOp::kSetAllKernelsDutyCycle, (1000ull << 32) | 1000}}, &r,
                {"WARPSCOPE_CUPTI_RATE=0"});
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesAdmitted], 0u);
  ASSERT_EQ(r.kernels.size(), 20u);
  for (const auto& k : r.kernels) {
    EXPECT_EQ(k.stack_hash, 0u);
  }
  EXPECT_EQ(r.gpu_count["_Z9fake_gemmv"], 20u);  // both phases
  EXPECT_EQ(r.gpu_count["triton_softmax"], 20u);
}

TEST_F(CuptiE2eTest, AgentSwitchesAllKernelsOffAtRunTime) {
  Received r;
  RunControlled(dir_.path(), SocketPath(), {{wire::ControlOp::kSetAllKernelsDutyCycle, 0}}, &r,
                {"WARPSCOPE_CUPTI_RATE=0", "WARPSCOPE_CUPTI_KERNELS=all"});
  EXPECT_EQ(r.kernels.size(), 20u);  // phase 1 only
  EXPECT_EQ(r.gpu_count["_Z9fake_gemmv"], 20u);
}

TEST_F(CuptiE2eTest, AgentRestartIsSurvivedAndReconnected) {
  const std::string go = dir_.path() + "/go";
  auto agent = std::make_unique<TestAgent>(SocketPath());
  auto child = test::ChildProcess::Start(
      {kBin, "--threads", "1", "--launches", "10", "--pause-file", go}, dir_.path(),
      Env(SocketPath(), {"WARPSCOPE_CUPTI_BURST=1000"}));
  ASSERT_TRUE(child.has_value());
  ASSERT_TRUE(agent->WaitUntil(
      [](const auto& cs) {
        return !cs.empty() && Index(cs[0]).counters[wire::CounterId::kLaunchesSeen] == 20;
      },
      20s));
  agent.reset();  // the agent goes away mid-run
  TestAgent restarted(SocketPath());
  ASSERT_TRUE(restarted.WaitUntil(
      [](const auto& cs) { return !cs.empty() && !cs[0].messages.empty(); }, 20s));
  std::ofstream(go) << "go";
  const int status = (*child)->Wait(20s);
  ASSERT_TRUE(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) << (*child)->Stderr();
  ASSERT_TRUE(restarted.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(restarted.Snapshot()[0]);
  EXPECT_EQ(r.hello.pid, static_cast<uint32_t>((*child)->pid()));
  EXPECT_EQ(r.counters[wire::CounterId::kReconnects], 2u);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesSeen], 40u);
  ASSERT_EQ(r.launches.size(), 20u);  // phase 2, with its stacks sent again
  for (const auto& l : r.launches) {
    EXPECT_TRUE(r.stacks.contains(l.stack_hash));
  }
}

TEST_F(CuptiE2eTest, PcSamplesStallReasonsAndCubin) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "1", "--launches", "2", "--pc"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_PC_SAMPLING=1",
                                       "WARPSCOPE_CUPTI_PC_WINDOW_MS=20",
                                       "WARPSCOPE_CUPTI_PC_INTERVAL_MS=40"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  ASSERT_FALSE(r.stall_reasons.empty());
  ASSERT_EQ(r.stall_reasons[0].reasons.size(), 4u);
  EXPECT_EQ(r.stall_reasons[0].reasons[1].index, 7u);
  EXPECT_EQ(r.stall_reasons[0].reasons[1].name, "smsp__pcsamp_warps_issue_stalled_long_scoreboard");
  ASSERT_EQ(r.pc_samples.size(), 2u);
  EXPECT_EQ(r.pc_samples[0].function, "_Z9fake_gemmv");
  // Both records carried one shared name string (freed once, or glibc aborts the app).
  EXPECT_EQ(r.pc_samples[1].function, "_Z9fake_gemmv");
  EXPECT_EQ(r.pc_samples[1].pc_offset, 0x50u);
  EXPECT_EQ(r.pc_samples[0].pc_offset, 0x40u);
  EXPECT_EQ(r.pc_samples[0].stall_reason, 7u);
  EXPECT_EQ(r.pc_samples[0].count, 100u);
  ASSERT_EQ(r.cubins.size(), 1u);
  EXPECT_EQ(r.cubins.begin()->first, r.pc_samples[0].cubin_crc);
  EXPECT_TRUE(r.cubins.begin()->second.starts_with("\x7f" "ELF"));
}

// Launches through a library built like libcuda (no frame pointers, no unwind tables, stripped):
// FakeAppStrippedCaller -> FakeAppLaunchViaDriver -> FakeDriverLaunch (stripped) -> callback.
// What each unwinder keeps (docs/design/cuda-profiler.md, "Past code without unwind tables"):
// both reach the return address inside the stripped library. The frame-pointer walk continues
// through the frame record the stripped code left untouched, and so keeps the application's
// frames above it except the one that called into the library (its return address lies in the
// stripped frame, not in a record). The DWARF unwinder (backtrace, the default) finds no unwind
// entry for the stripped frame and resumes above it: the caller from a scan of the stripped
// frame, the frames above from the frame records, so it keeps every application frame.
struct StrippedStacks {
  size_t launches = 0, with_driver = 0, with_caller = 0, with_direct_caller = 0;
};
StrippedStacks RunThroughStrippedDriver(const std::string& dir, const std::string& socket,
                                        const std::string& unwinder) {
  StrippedStacks out;
  TestAgent agent(socket);
  auto run = RunApp(dir, {"--threads", "1", "--launches", "5", "--stripped-driver"},
                    Env(socket, {"WARPSCOPE_CUPTI_UNWINDER=" + unwinder}));
  EXPECT_TRUE(ExitedOk(run)) << run.err;
  EXPECT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  EXPECT_GT(run.sites["FakeDriverLaunch"].size, 0u) << "the stripped library keeps its dynsym";
  for (const auto& l : r.launches) {
    if (l.symbol != "_Z9fake_gemmv") continue;
    ++out.launches;
    const auto& stack = r.stacks[l.stack_hash];
    out.with_driver += StackHasSite(stack, run.sites["FakeDriverLaunch"]);
    out.with_caller += StackHasSite(stack, run.sites["FakeAppStrippedCaller"]);
    out.with_direct_caller += StackHasSite(stack, run.sites["FakeAppLaunchViaDriver"]);
  }
  return out;
}

TEST_F(CuptiE2eTest, StrippedDriverFramePointerWalkKeepsTheCallersAboveIt) {
  const StrippedStacks s = RunThroughStrippedDriver(dir_.path(), SocketPath(), "fp");
  ASSERT_EQ(s.launches, 5u);
  EXPECT_EQ(s.with_driver, 5u);
  EXPECT_EQ(s.with_caller, 5u);
  EXPECT_EQ(s.with_direct_caller, 0u) << "if this now holds, update the design doc";
}

TEST_F(CuptiE2eTest, StrippedDriverDwarfUnwinderResumesAboveIt) {
  const StrippedStacks s = RunThroughStrippedDriver(dir_.path(), SocketPath(), "backtrace");
  ASSERT_EQ(s.launches, 5u);
  EXPECT_EQ(s.with_driver, 5u);
  EXPECT_EQ(s.with_direct_caller, 5u);
  EXPECT_EQ(s.with_caller, 5u);
}

// The module was loaded before the agent switched PC sampling on: its cubin was kept at the load
// and is sent once sampling runs.
TEST_F(CuptiE2eTest, CubinLoadedBeforePcSamplingWasSwitchedOnIsSent) {
  Received r;
  RunControlled(dir_.path(), SocketPath(), {{wire::ControlOp::kEnablePcSampling, 20}}, &r,
                {"WARPSCOPE_CUPTI_BURST=1000", "WARPSCOPE_CUPTI_PC_INTERVAL_MS=40"});
  ASSERT_FALSE(r.stall_reasons.empty());  // sampling was enabled on the context
  ASSERT_EQ(r.cubins.size(), 1u);
  EXPECT_TRUE(r.cubins.begin()->second.starts_with("\x7f" "ELF"));
  EXPECT_EQ(r.cubins.begin()->second.size(), 24u);
}

// A CUPTI version whose PC record layout the library does not know: PC sampling is refused with
// one notice, everything else works.
TEST_F(CuptiE2eTest, PcSamplingOnAnUnknownCuptiVersionIsRefusedOnce) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "1", "--launches", "5"},
                    Env(SocketPath(), {"WARPSCOPE_FAKE_CUPTI_VERSION=29",
                                       "WARPSCOPE_CUPTI_PC_SAMPLING=1",
                                       "WARPSCOPE_CUPTI_PC_WINDOW_MS=20",
                                       "WARPSCOPE_CUPTI_PC_INTERVAL_MS=40"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  EXPECT_EQ(r.hello.cupti_version, 29u);
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_NE(r.notices[0].message.find("PC record layout"), std::string::npos)
      << r.notices[0].message;
  EXPECT_TRUE(r.stall_reasons.empty());
  EXPECT_TRUE(r.pc_samples.empty());
  EXPECT_EQ(r.counters[wire::CounterId::kKernelsJoined], 10u);
}

// Both numberings of a runtime launch and its nested driver call: one shared id, or an id of the
// driver call's own while the kernel record carries the runtime call's. Either way the kernel
// joins the runtime launch and its stack, and the nested call is not counted as a launch.
void ExpectRuntimeLaunchesJoin(const std::string& dir, const std::string& socket,
                               const std::string& numbering) {
  TestAgent agent(socket);
  auto run = RunApp(dir, {"--threads", "2", "--launches", "10"},
                    Env(socket, {"WARPSCOPE_CUPTI_BURST=1000",
                                 "WARPSCOPE_FAKE_CUPTI_CORRELATION=" + numbering}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesSeen], 40u) << numbering;
  ASSERT_EQ(r.launches.size(), 40u) << numbering;
  ASSERT_EQ(r.kernels.size(), 40u) << numbering;
  std::set<uint32_t> launch_ids;
  for (const auto& l : r.launches) launch_ids.insert(l.correlation_id);
  for (const auto& k : r.kernels) {
    EXPECT_TRUE(launch_ids.contains(k.correlation_id)) << numbering;
    ASSERT_NE(k.stack_hash, 0u) << numbering;
    if (r.names[k.name_id] == "_Z9fake_gemmv") {
      EXPECT_EQ(k.launch_domain, 2u) << numbering;  // the runtime launch
      EXPECT_EQ(k.launch_cbid, 211u) << numbering;
      EXPECT_TRUE(StackHasSite(r.stacks[k.stack_hash], run.sites["FakeAppLaunchGemm"]));
    }
  }
  EXPECT_EQ(r.counters[wire::CounterId::kPendingEvicted], 0u) << numbering;
}

TEST_F(CuptiE2eTest, RuntimeLaunchesJoinWhenTheDriverCallSharesTheirId) {
  ExpectRuntimeLaunchesJoin(dir_.path(), SocketPath(), "shared");
}

TEST_F(CuptiE2eTest, RuntimeLaunchesJoinWhenTheDriverCallHasItsOwnId) {
  ExpectRuntimeLaunchesJoin(dir_.path(), SocketPath(), "distinct");
}

// Buffers completed on the fake's own thread, at its own time (as CUPTI's worker thread does):
// every kernel still arrives and joins.
TEST_F(CuptiE2eTest, BuffersCompletedOnCuptisOwnThreadAllArrive) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "3", "--launches", "20", "--graph"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_BURST=1000",
                                       "WARPSCOPE_CUPTI_ACTIVITY_BUFFERS=32",
                                       "WARPSCOPE_FAKE_CUPTI_BUFFERS=async"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  const auto pos = run.out.find("fake_cupti buffers=");
  ASSERT_NE(pos, std::string::npos) << run.out;
  const auto by_worker = run.out.find("by_worker=", pos);
  ASSERT_NE(by_worker, std::string::npos);
  EXPECT_EQ(std::stoull(run.out.substr(pos + 19)), std::stoull(run.out.substr(by_worker + 10)))
      << "every buffer is completed on the fake's thread";
  EXPECT_GT(std::stoull(run.out.substr(by_worker + 10)), 0u);
  Received r = Index(agent.Snapshot()[0]);
  EXPECT_EQ(r.counters[wire::CounterId::kKernelsSeen], 126u);
  EXPECT_EQ(r.kernels.size(), 126u);
  EXPECT_EQ(r.gpu_ns["_Z9fake_gemmv"], 60u * 5000);
  EXPECT_EQ(r.counters[wire::CounterId::kPendingEvicted], 0u);
}

}  // namespace
}  // namespace warpscope::cupti
