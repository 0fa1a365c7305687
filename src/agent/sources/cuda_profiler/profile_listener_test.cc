// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/profile_listener.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "agent/sources/cuda_profiler/cuda_profiler_metrics.h"
#include "agent/sources/cuda_profiler/cuda_profiler_source.h"
#include "base/testing/temp_dir.h"
#include "model/testing/collecting_sink.h"

namespace warpscope::agent::cuda_profiler {
namespace {

namespace w = ::warpscope::cupti::wire;
using base::TempDir;
using namespace std::chrono_literals;

// A process speaking the wire over a real unix socket.
class TestClient {
 public:
  explicit TestClient(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.data(), path.size());
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~TestClient() { Close(); }
  bool connected() const { return connected_; }

  void Send(const w::Message& m) {
    std::string bytes;
    w::Encode(m, &bytes);
    SendRaw(bytes);
  }
  bool SendRaw(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        return false;
      }
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Waits for the next message from the agent (a Control).
  std::optional<w::Message> Receive(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      w::Message m;
      if (decoder_.Next(&m) == w::DecodeStatus::kOk) {
        return m;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return std::nullopt;
      }
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        return std::nullopt;
      }
      char buf[4096];
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) {
        return std::nullopt;
      }
      decoder_.Append(std::string_view(buf, static_cast<size_t>(n)));
    }
  }
  // True once the agent closed the connection.
  bool WaitClosedByPeer(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0) {
      return false;
    }
    char buf[256];
    return recv(fd_, buf, sizeof(buf), MSG_DONTWAIT) <= 0;
  }
  void Close() {
    if (fd_ >= 0) {
      close(fd_);
      fd_ = -1;
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  w::StreamDecoder decoder_;
};

w::Hello Hello(uint32_t pid, std::string exe = "/usr/bin/fake_app") {
  w::Hello h;
  h.pid = pid;
  h.exe = std::move(exe);
  return h;
}

w::KernelActivity Kernel(uint32_t name_id, uint64_t start, uint64_t duration) {
  w::KernelActivity k;
  k.correlation_id = 1;
  k.name_id = name_id;
  k.stream = 7;
  k.start_ns = start;
  k.end_ns = start + duration;
  return k;
}

w::KernelAggregate Aggregate(uint32_t name_id, uint64_t count, uint64_t total) {
  w::KernelAggregate a;
  a.entries.push_back(w::KernelAggregateEntry{name_id, 0, 7, count, total, 0, 0});
  return a;
}

class ProfileListenerTest : public ::testing::Test {
 protected:
  ProfileListener::Options Options() {
    ProfileListener::Options o;
    o.socket_path = dir_.path() + "/run/cupti.sock";
    o.use_peer_pid = false;  // every client is this process
    o.disassemble = false;
    o.symbolize_on_arrival = false;
    o.builder.formats.trace = false;
    return o;
  }
  std::unique_ptr<ProfileListener> StartListener(ProfileListener::Options o) {
    auto l = ProfileListener::Start(std::move(o));
    EXPECT_TRUE(l.has_value()) << (l ? "" : l.error().message());
    return l ? std::move(*l) : nullptr;
  }
  static bool Messages(ProfileListener& l, uint64_t n) {
    return l.WaitUntil([n](const ProfileListener::Stats& s) { return s.messages >= n; }, 10s);
  }
  static std::map<int32_t, profiling::WindowProfile> Window(ProfileListener& l) {
    auto future = l.FinishWindow(1'000, 2'000);
    EXPECT_EQ(future.wait_for(10s), std::future_status::ready);
    std::map<int32_t, profiling::WindowProfile> by_pid;
    for (auto& p : future.get()) {
      by_pid[p.pid] = std::move(p);
    }
    return by_pid;
  }

  TempDir dir_;
};

TEST_F(ProfileListenerTest, CreatesTheDirectoryAndASocketEveryUserCanConnectTo) {
  auto l = StartListener(Options());
  ASSERT_NE(l, nullptr);
  struct stat st {};
  ASSERT_EQ(stat((dir_.path() + "/run").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  ASSERT_EQ(stat(l->socket_path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0666u);
  l->Stop();
  EXPECT_NE(stat(Options().socket_path.c_str(), &st), 0) << "Stop removes the socket";
}

TEST_F(ProfileListenerTest, ReplacesAStaleSocketFile) {
  const std::string path = Options().socket_path;
  std::filesystem::create_directories(dir_.path() + "/run");
  {
    // Bound and closed without listening: a socket file nobody accepts on.
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.data(), path.size());
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    close(fd);
  }
  auto l = StartListener(Options());
  ASSERT_NE(l, nullptr);
  TestClient client(path);
  EXPECT_TRUE(client.connected());
}

TEST_F(ProfileListenerTest, RefusesWhenAnotherAgentIsListening) {
  auto first = StartListener(Options());
  ASSERT_NE(first, nullptr);
  auto second = ProfileListener::Start(Options());
  ASSERT_FALSE(second.has_value());
  EXPECT_NE(second.error().message().find("already listening"), std::string::npos)
      << second.error().message();
  TestClient client(first->socket_path());
  EXPECT_TRUE(client.connected()) << "the first agent's socket is untouched";
}

TEST_F(ProfileListenerTest, RefusesAPathThatIsNotASocket) {
  std::filesystem::create_directories(dir_.path() + "/run");
  { std::ofstream(Options().socket_path) << "x"; }
  auto l = ProfileListener::Start(Options());
  ASSERT_FALSE(l.has_value());
  EXPECT_EQ(l.error().code(), base::StatusCode::kInvalidArgument);
}

TEST_F(ProfileListenerTest, RefusesAPathTooLongForAUnixSocket) {
  ProfileListener::Options o = Options();
  o.socket_path = dir_.path() + "/" + std::string(120, 'a');
  auto l = ProfileListener::Start(o);
  ASSERT_FALSE(l.has_value());
  EXPECT_EQ(l.error().code(), base::StatusCode::kInvalidArgument);
}

TEST_F(ProfileListenerTest, ServesSeveralProcessesAtOnce) {
  auto l = StartListener(Options());
  ASSERT_NE(l, nullptr);
  TestClient a(l->socket_path());
  TestClient b(l->socket_path());
  a.Send(Hello(100, "/usr/bin/app_a"));
  b.Send(Hello(200, "/usr/bin/app_b"));
  a.Send(w::KernelName{1, "_Z4gemmv"});
  b.Send(w::KernelName{1, "softmax"});  // same id, another connection
  a.Send(Aggregate(1, 3, 15000));
  b.Send(Aggregate(1, 2, 2000));
  ASSERT_TRUE(Messages(*l, 6));
  EXPECT_EQ(l->connected_pids(), (std::vector<int32_t>{100, 200}));
  auto window = Window(*l);
  ASSERT_EQ(window.size(), 2u);
  EXPECT_EQ(window[100].executable, "/usr/bin/app_a");
  EXPECT_EQ(window[100].gpu_time_ns, 15000u);
  EXPECT_EQ(window[100].kernels, 3u);
  EXPECT_NE(window[100].folded.find("gemm()"), std::string::npos) << window[100].folded;
  EXPECT_EQ(window[200].gpu_time_ns, 2000u);
  EXPECT_NE(window[200].folded.find("softmax"), std::string::npos) << window[200].folded;
  EXPECT_EQ(window[200].start_ns, 1000);
  EXPECT_EQ(window[200].end_ns, 2000);
}

TEST_F(ProfileListenerTest, SampledKernelsAreCountedOnceWithTheirAggregate) {
  auto l = StartListener(Options());
  ASSERT_NE(l, nullptr);
  TestClient a(l->socket_path());
  a.Send(Hello(100));
  a.Send(w::KernelName{1, "_Z4gemmv"});
  w::KernelActivity k = Kernel(1, 10'000, 5000);
  k.stack_hash = 0x55;
  a.Send(k);
  a.Send(Aggregate(1, 3, 15000));  // counts the sampled kernel too
  ASSERT_TRUE(Messages(*l, 4));
  auto window = Window(*l);
  EXPECT_EQ(window[100].gpu_time_ns, 15000u);
  EXPECT_NE(window[100].folded.find("[stack not received]"), std::string::npos);
  // The two launches only the aggregate counted are estimated at the sampled site.
  EXPECT_EQ(window[100].folded.find("[unsampled launch site]"), std::string::npos)
      << window[100].folded;
}

TEST_F(ProfileListenerTest, ACorruptStreamClosesOnlyThatConnection) {
  auto l = StartListener(Options());
  ASSERT_NE(l, nullptr);
  TestClient bad(l->socket_path());
  TestClient good(l->socket_path());
  bad.Send(Hello(100));
  good.Send(Hello(200));
  ASSERT_TRUE(Messages(*l, 2));
  // A frame header with a version from the future ends a stream.
  const char header[8] = {4, 0, 0, 0, static_cast<char>(w::MessageType::kKernelName), 99, 0, 0};
  bad.SendRaw(std::string(header, sizeof(header)) + std::string(4, '\0'));
  ASSERT_TRUE(l->WaitUntil([](const auto& s) { return s.closed_corrupt == 1; }, 10s));
  EXPECT_TRUE(bad.WaitClosedByPeer(10s));
  good.Send(w::KernelName{1, "k"});
  good.Send(Aggregate(1, 1, 700));
  ASSERT_TRUE(Messages(*l, 4));
  EXPECT_EQ(l->connected_pids(), (std::vector<int32_t>{200}));
  auto window = Window(*l);
  EXPECT_EQ(window[200].gpu_time_ns, 700u);
  EXPECT_EQ(l->stats().closed, 1u);
}

TEST_F(ProfileListenerTest, AConnectionThatOverflowsItsBufferIsClosed) {
  ProfileListener::Options o = Options();
  o.max_buffered_bytes = 16 << 10;
  auto l = StartListener(o);
  ASSERT_NE(l, nullptr);
  TestClient big(l->socket_path());
  TestClient other(l->socket_path());
  big.Send(Hello(100));
  other.Send(Hello(200));
  ASSERT_TRUE(Messages(*l, 2));
  // A valid 200 KiB cubin chunk, sent without its last byte: the agent holds it undecoded.
  std::string frame;
  w::Encode(w::CubinChunk{1, 200 << 10, 0, std::string(200 << 10, 'c')}, &frame);
  frame.pop_back();
  big.SendRaw(frame);
  ASSERT_TRUE(l->WaitUntil([](const auto& s) { return s.closed_overflow == 1; }, 10s));
  EXPECT_EQ(l->connected_pids(), (std::vector<int32_t>{200}));
}

TEST_F(ProfileListenerTest, SendsControlsOnConnectAndOnRequest) {
  ProfileListener::Options o = Options();
  o.controls_on_connect = {w::Control{w::ControlOp::kSetRate, 50},
                           w::Control{w::ControlOp::kEnablePcSampling, 0}};
  auto l = StartListener(o);
  ASSERT_NE(l, nullptr);
  TestClient a(l->socket_path());
  TestClient b(l->socket_path());
  a.Send(Hello(100));
  b.Send(Hello(200));
  for (TestClient* c : {&a, &b}) {
    auto first = c->Receive(10s);
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(std::get<w::Control>(*first).op, w::ControlOp::kSetRate);
    EXPECT_EQ(std::get<w::Control>(*first).value, 50u);
    auto second = c->Receive(10s);
    ASSERT_TRUE(second.has_value());
    EXPECT_EQ(std::get<w::Control>(*second).op, w::ControlOp::kEnablePcSampling);
  }
  l->SendControl(200, w::Control{w::ControlOp::kDisableCollection, 0});
  auto to_b = b.Receive(10s);
  ASSERT_TRUE(to_b.has_value());
  EXPECT_EQ(std::get<w::Control>(*to_b).op, w::ControlOp::kDisableCollection);
  l->SendControl(std::nullopt, w::Control{w::ControlOp::kEnableCollection, 0});
  for (TestClient* c : {&a, &b}) {
    auto m = c->Receive(10s);
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(std::get<w::Control>(*m).op, w::ControlOp::kEnableCollection);
  }
  EXPECT_TRUE(l->WaitUntil([](const auto& s) { return s.controls_sent == 7; }, 10s));
}

TEST_F(ProfileListenerTest, AProcessIsForgottenAfterTheWindowHoldingItsLastData) {
  auto l = StartListener(Options());
  ASSERT_NE(l, nullptr);
  {
    TestClient a(l->socket_path());
    a.Send(Hello(100));
    a.Send(w::KernelName{1, "k"});
    a.Send(Aggregate(1, 2, 900));
    w::Counters counters;
    counters.counters = {{w::CounterId::kLaunchesSeen, 2}};
    a.Send(counters);
  }
  ASSERT_TRUE(l->WaitUntil([](const auto& s) { return s.closed == 1; }, 10s));
  auto window = Window(*l);
  ASSERT_EQ(window.count(100), 1u) << "the exited process's last window is emitted";
  EXPECT_EQ(window[100].gpu_time_ns, 900u);
  EXPECT_EQ(l->stats().processes_forgotten, 1u);
  model::CollectingSink sink;
  Window(*l);  // a new snapshot without the process
  l->EmitSelfMetrics(sink);
  EXPECT_TRUE(sink.values.empty());
}

// `warpscope profile` waits for this after its command exits: processes that connected,
// sent everything and exited before the listener accepted them are read to the end too.
TEST_F(ProfileListenerTest, WaitUntilAllClosedReadsConnectionsNotYetAccepted) {
  auto l = StartListener(Options());
  ASSERT_NE(l, nullptr);
  constexpr uint32_t kProcesses = 8;
  for (uint32_t pid = 100; pid < 100 + kProcesses; ++pid) {
    TestClient c(l->socket_path());
    ASSERT_TRUE(c.connected());
    c.Send(Hello(pid));
    c.Send(w::KernelName{1, "k"});
    c.Send(Aggregate(1, 1, 500));
  }  // each closes here, very likely before the listener thread accepted it
  ASSERT_TRUE(l->WaitUntilAllClosed(10s));
  const ProfileListener::Stats s = l->stats();
  EXPECT_EQ(s.hellos, kProcesses);
  EXPECT_EQ(s.closed, kProcesses);
  EXPECT_EQ(s.open, 0u);
  auto window = Window(*l);
  EXPECT_EQ(window.size(), kProcesses);
}

TEST_F(ProfileListenerTest, WaitUntilAllClosedWaitsForAnOpenConnection) {
  auto l = StartListener(Options());
  ASSERT_NE(l, nullptr);
  TestClient a(l->socket_path());
  a.Send(Hello(100));
  EXPECT_FALSE(l->WaitUntilAllClosed(50ms));
  a.Close();
  EXPECT_TRUE(l->WaitUntilAllClosed(10s));
  EXPECT_EQ(l->stats().hellos, 1u);
}

TEST_F(ProfileListenerTest, SelfMetricsCarryTheProcessCounters) {
  auto l = StartListener(Options());
  ASSERT_NE(l, nullptr);
  TestClient a(l->socket_path());
  a.Send(Hello(100));
  w::Counters counters;
  counters.counters = {{w::CounterId::kLaunchesSeen, 1234}};
  a.Send(counters);
  ASSERT_TRUE(Messages(*l, 2));
  Window(*l);  // takes a snapshot
  model::CollectingSink sink;
  l->EmitSelfMetrics(sink);
  bool found = false;
  for (const auto& v : sink.values) {
    if (v.metric == &cuda_profiler_metrics::kLaunchesSeen) {
      found = true;
      EXPECT_EQ(v.value, 1234);
    }
  }
  EXPECT_TRUE(found);
}

TEST(DefaultListenSocketTest, FallsBackToTheUserRuntimeDirectory) {
  const std::string path = DefaultListenSocket([](const char* name) -> const char* {
    return std::string_view(name) == "XDG_RUNTIME_DIR" ? "/run/user/1000" : nullptr;
  });
  if (geteuid() == 0 || access("/run/warpscope", W_OK) == 0) {
    EXPECT_EQ(path, "/run/warpscope/cupti.sock");
  } else {
    EXPECT_EQ(path, "/run/user/1000/warpscope/cupti.sock");
  }
}

w::Hello NcclHello(uint32_t pid) {
  w::Hello h = Hello(pid, "/usr/bin/python3");
  h.component = w::Component::kNccl;
  return h;
}

w::NcclCollective AllReduce(uint64_t gpu_ns) {
  w::NcclCollective c;
  c.comm_id = 0xabc;
  c.rank = 1;
  c.func = "AllReduce";
  c.bytes = 1024;
  c.bus_bytes = 1024;
  c.enqueue_ns = 10;
  c.complete_ns = 10 + gpu_ns;
  c.gpu_exec_ns = gpu_ns;
  return c;
}

class NcclListenerTest : public ProfileListenerTest {
 protected:
  // Processes 100 and 300 under a root of their own: stat gives start ticks 55, 300's environ
  // names a torchrun job.
  ProfileListener::Options NcclOptions() {
    ProfileListener::Options o = Options();
    o.symbolizer.host_root = dir_.path() + "/host";
    for (const char* pid : {"100", "300"}) {
      const std::string proc = dir_.path() + "/host/proc/" + pid;
      std::filesystem::create_directories(proc);
      std::ofstream(proc + "/stat") << pid << " (python3) S " << std::string(18 * 2, ' ')
                                    << "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 55 1\n";
    }
    std::ofstream(dir_.path() + "/host/proc/300/environ")
        << std::string("TORCHELASTIC_RUN_ID=job-9\0RANK=1\0WORLD_SIZE=2\0", 45);
    return o;
  }
};

TEST_F(NcclListenerTest, AnNcclConnectionFeedsNcclMetricsAndNoCudaProfile) {
  auto l = StartListener(NcclOptions());
  ASSERT_NE(l, nullptr);
  TestClient cuda(l->socket_path());
  TestClient nccl(l->socket_path());
  cuda.Send(Hello(100));
  cuda.Send(w::KernelName{1, "gemm"});
  cuda.Send(Aggregate(1, 1, 500));
  nccl.Send(NcclHello(300));
  nccl.Send(w::NcclComm{0xabc, "dp", 2, 1, 1, 6, 0});
  nccl.Send(AllReduce(100'000));
  nccl.Send(AllReduce(300'000));
  // The plugin's ring drops are not launch drops.
  nccl.Send(w::Counters{{{w::CounterId::kRingDrops, 4}}});
  ASSERT_TRUE(Messages(*l, 8));
  const ProfileListener::Stats stats = l->stats();
  EXPECT_EQ(stats.hellos, 1u);
  EXPECT_EQ(stats.nccl_hellos, 1u);
  EXPECT_EQ(stats.nccl_records, 2u);

  auto window = Window(*l);
  ASSERT_EQ(window.size(), 1u) << "no CUDA profile for the NCCL plugin's process";
  EXPECT_TRUE(window.contains(100));

  model::CollectingSink sink;
  l->EmitSelfMetrics(sink);
  const std::string nccl_entity = "pid/300/55";
  EXPECT_FALSE(sink.Find("profiler.cuda.launches.dropped", nccl_entity).has_value());
  EXPECT_TRUE(sink.Find("profiler.cuda.launches.dropped", "pid/100/55").has_value());
  const model::Labels op{{"comm", "0000000000000abc"}, {"comm_name", "dp"}, {"rank", "1"},
                         {"nranks", "2"},              {"collective", "AllReduce"}};
  EXPECT_EQ(sink.Find("nccl.collectives", nccl_entity, op), 2.0);
  EXPECT_DOUBLE_EQ(*sink.Find("nccl.collective.gpu_time", nccl_entity, op), 400e-6);
  EXPECT_EQ(sink.Find("nccl.records.dropped", nccl_entity, {{"reason", "ring_full"}}), 4.0);
  // The window [1000, 2000) ns closed: 400 us of NCCL in 1 us is a share of 400.
  EXPECT_DOUBLE_EQ(*sink.Find("nccl.time.share", nccl_entity,
                              {{"comm", "0000000000000abc"},
                               {"comm_name", "dp"},
                               {"rank", "1"},
                               {"nranks", "2"}}),
                   400.0);
  const model::Entity* e = sink.FindEntity(nccl_entity);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->attributes.Get(model::attr::kJobId), "job-9");
  EXPECT_EQ(e->attributes.Get(model::attr::kJobRank), "1");
  EXPECT_EQ(e->attributes.Get(model::attr::kJobWorldSize), "2");
  EXPECT_EQ(e->attributes.Get(model::attr::kExecutable), "python3");
}

TEST_F(NcclListenerTest, ControlsReachOnlyTheLibraryTheyAreFor) {
  ProfileListener::Options o = NcclOptions();
  o.controls_on_connect = {w::Control{w::ControlOp::kSetRate, 50},
                           w::Control{w::ControlOp::kSetNcclProxyDetail, 1}};
  auto l = StartListener(o);
  ASSERT_NE(l, nullptr);
  TestClient cuda(l->socket_path());
  TestClient nccl(l->socket_path());
  cuda.Send(Hello(100));
  nccl.Send(NcclHello(300));
  auto to_cuda = cuda.Receive(10s);
  ASSERT_TRUE(to_cuda.has_value());
  EXPECT_EQ(std::get<w::Control>(*to_cuda).op, w::ControlOp::kSetRate);
  auto to_nccl = nccl.Receive(10s);
  ASSERT_TRUE(to_nccl.has_value());
  EXPECT_EQ(std::get<w::Control>(*to_nccl).op, w::ControlOp::kSetNcclProxyDetail);

  l->SendControl(std::nullopt, w::Control{w::ControlOp::kDisableCollection, 0});
  EXPECT_EQ(std::get<w::Control>(*cuda.Receive(10s)).op, w::ControlOp::kDisableCollection);
  EXPECT_EQ(std::get<w::Control>(*nccl.Receive(10s)).op, w::ControlOp::kDisableCollection);
  l->SendControl(300, w::Control{w::ControlOp::kSetNcclProxyDetail, 0});
  auto detail = nccl.Receive(10s);
  ASSERT_TRUE(detail.has_value());
  EXPECT_EQ(std::get<w::Control>(*detail).value, 0u);
  EXPECT_FALSE(cuda.Receive(100ms).has_value()) << "nothing more for the CUDA library";
}


}  // namespace
}  // namespace warpscope::agent::cuda_profiler
