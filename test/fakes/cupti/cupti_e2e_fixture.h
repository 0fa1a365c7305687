// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the end-to-end tests (cupti_e2e_*_test.cc): fake_cuda_app loads
// libwarpscope_cupti.so (CUDA_INJECTION64_PATH) over the fake libcupti, and a test agent decodes
// what arrives on the unix socket. Every test runs twice (CMakeLists.txt): as CuptiE2eTest.* on
// the fake's CUDA 13.0 path and as cuda12.CuptiE2eTest.* under WARPSCOPE_FAKE_CUPTI_PRESET=cuda12.
#ifndef WARPSCOPE_TEST_FAKES_CUPTI_CUPTI_E2E_FIXTURE_H_
#define WARPSCOPE_TEST_FAKES_CUPTI_CUPTI_E2E_FIXTURE_H_

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/testing/peer.h"
#include "cupti/wire.h"
#include "integration/child_process.h"
#include "test_agent.h"

namespace warpscope::cupti::e2e {

using ::warpscope::cupti::testing::AgentConnection;
using ::warpscope::cupti::testing::TestAgent;
using namespace std::chrono_literals;

inline const std::string kBin = std::string(WARPSCOPE_BINARY_DIR) + "/bin/fake_cuda_app";
inline const std::string kInject = std::string(WARPSCOPE_BINARY_DIR) + "/lib/libwarpscope_cupti.so";
inline const std::string kFakeCupti =
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

inline std::vector<std::string> Env(const std::string& socket, std::vector<std::string> extra) {
  std::vector<std::string> env = {"CUDA_INJECTION64_PATH=" + kInject,
                                  "WARPSCOPE_CUPTI_LIBRARY=" + kFakeCupti,
                                  "WARPSCOPE_AGENT_SOCKET=" + socket, "WARPSCOPE_CUPTI_FLUSH_MS=50",
                                  "WARPSCOPE_CUPTI_LOG=stderr"};
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

inline AppRun RunApp(const std::string& dir, std::vector<std::string> args,
                     std::vector<std::string> env, std::chrono::milliseconds timeout = 30s) {
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
inline uint32_t FakeVersion() {
  if (const char* v = std::getenv("WARPSCOPE_FAKE_CUPTI_VERSION")) {
    return static_cast<uint32_t>(std::stoul(v));
  }
  const char* preset = std::getenv("WARPSCOPE_FAKE_CUPTI_PRESET");
  return preset != nullptr && std::string(preset) == "cuda12" ? 21u : 130001u;
}

inline bool ExitedOk(const AppRun& run) {
  return run.status >= 0 && WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0;
}

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

inline Received Index(const AgentConnection& c) {
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

inline bool AllClosed(const std::vector<AgentConnection>& cs, size_t n) {
  if (cs.size() < n) return false;
  for (const auto& c : cs) {
    if (!c.closed) return false;
  }
  return true;
}

inline bool StackHasSite(const wire::Stack& s, const Site& site) {
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

// The agent sends `controls` to a process already running: the app launches, waits until the
// library acknowledged the controls (kControlsApplied), launches again; *out is what it sent.
inline void RunControlled(const std::string& dir, const std::string& socket,
                          std::vector<wire::Control> controls, Received* out,
                          std::vector<std::string> env = {"WARPSCOPE_CUPTI_BURST=1000"},
                          std::vector<std::string> extra_args = {}) {
  TestAgent agent(socket);
  const std::string go = dir + "/go";
  std::vector<std::string> args = {kBin, "--threads", "1", "--launches", "10", "--pause-file", go};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  auto child = test::ChildProcess::Start(args, dir, Env(socket, env));
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

}  // namespace warpscope::cupti::e2e

#endif  // WARPSCOPE_TEST_FAKES_CUPTI_CUPTI_E2E_FIXTURE_H_
