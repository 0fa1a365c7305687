// SPDX-License-Identifier: Apache-2.0
#include "ipc/agent_connection.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "base/testing/temp_dir.h"

namespace warpscope::ipc {
namespace {

constexpr uint64_t kMs = 1'000'000;

TEST(ReconnectBackoffTest, FailedAttemptsWaitFrom100MsDoublingTo5s) {
  ReconnectBackoff b;
  EXPECT_TRUE(b.Due(0));
  const uint64_t expected_waits[] = {100, 200, 400, 800, 1600, 3200, 5000, 5000};
  uint64_t now = 1000 * kMs;
  for (uint64_t wait : expected_waits) {
    b.Failed(now);
    EXPECT_EQ(b.next_attempt_ns(), now + wait * kMs);
    EXPECT_FALSE(b.Due(now + wait * kMs - 1));
    EXPECT_TRUE(b.Due(now + wait * kMs));
    now += wait * kMs;
  }
}

TEST(ReconnectBackoffTest, ConnectingResetsTheWaitAndADisconnectDoesNotDoubleIt) {
  ReconnectBackoff b;
  b.Failed(0);
  b.Failed(100 * kMs);
  b.Failed(300 * kMs);
  EXPECT_EQ(b.wait_ns(), 800 * kMs);
  b.Connected();
  EXPECT_EQ(b.wait_ns(), 100 * kMs);
  b.Disconnected(2000 * kMs);
  EXPECT_EQ(b.next_attempt_ns(), 2100 * kMs);
  EXPECT_EQ(b.wait_ns(), 100 * kMs);
}

TEST(ReconnectBackoffTest, UnusablePathWaits5sAndRetryNowOverridesTheWait) {
  ReconnectBackoff b;
  b.Failed(0);
  b.Unusable(1000 * kMs);
  EXPECT_EQ(b.next_attempt_ns(), 6000 * kMs);
  EXPECT_EQ(b.wait_ns(), 200 * kMs);  // unchanged by an unusable path
  b.RetryNow();
  EXPECT_TRUE(b.Due(0));
}

uint64_t g_now = 0;
uint64_t FakeNow() { return g_now; }

// A listening unix socket in a temporary directory standing in for the agent.
class Listener {
 public:
  explicit Listener(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(fd_, 8), 0);
  }
  ~Listener() {
    if (peer_ >= 0) {
      close(peer_);
    }
    close(fd_);
  }
  // The connection the library made (it connected already: the backlog holds it).
  int Accept() {
    peer_ = accept(fd_, nullptr, nullptr);
    return peer_;
  }
  void ClosePeer() {
    close(peer_);
    peer_ = -1;
  }
  // Everything the library sent up to its ShutdownWrite, decoded.
  std::vector<wire::Message> ReadAll(std::string* error) {
    wire::StreamDecoder in;
    char buf[4096];
    ssize_t n;
    while ((n = recv(peer_, buf, sizeof(buf), 0)) > 0) {
      in.Append(std::string_view(buf, static_cast<size_t>(n)));
    }
    std::vector<wire::Message> out;
    wire::Message m;
    wire::DecodeStatus s;
    while ((s = in.Next(&m)) == wire::DecodeStatus::kOk) {
      out.push_back(m);
    }
    if (s == wire::DecodeStatus::kError || in.buffered() != 0) {
      *error = s == wire::DecodeStatus::kError ? in.error() : "a partial frame at the end";
    }
    return out;
  }
  void Send(const std::string& bytes) {
    ASSERT_EQ(send(peer_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }

 private:
  int fd_ = -1;
  int peer_ = -1;
};

wire::Launch MakeLaunch(uint32_t id) {
  wire::Launch l;
  l.correlation_id = id;
  l.symbol = std::string(40, 'k');
  return l;
}

size_t EncodedSize(const wire::Message& m) {
  std::string s;
  wire::Encode(m, &s);
  return s.size();
}

class AgentConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override { g_now = 1000 * kMs; }
  std::string SocketPath() const { return dir_.path() + "/agent.sock"; }
  // An agent listening on SocketPath() and a connection to it, accepted.
  void Connect(size_t out_cap_bytes = 64 * 1024) {
    agent_ = std::make_unique<Listener>(SocketPath());
    conn_ = std::make_unique<AgentConnection>(SocketPath(), out_cap_bytes, &FakeNow);
    ASSERT_TRUE(conn_->MaybeConnect(g_now));
    ASSERT_GE(agent_->Accept(), 0);
  }

  base::TempDir dir_;
  std::unique_ptr<Listener> agent_;
  std::unique_ptr<AgentConnection> conn_;
};

TEST_F(AgentConnectionTest, AbsentAgentIsRetriedOnlyWhenTheBackoffAllows) {
  AgentConnection conn(SocketPath(), 64 * 1024, &FakeNow);
  EXPECT_FALSE(conn.MaybeConnect(g_now));
  EXPECT_FALSE(conn.connected());
  Listener agent(SocketPath());
  EXPECT_FALSE(conn.MaybeConnect(g_now + 99 * kMs));  // the first retry is 100 ms later
  EXPECT_EQ(conn.connects(), 0u);
  EXPECT_TRUE(conn.MaybeConnect(g_now + 100 * kMs));
  EXPECT_TRUE(conn.connected());
  EXPECT_EQ(conn.connects(), 1u);
  EXPECT_FALSE(conn.MaybeConnect(g_now + 200 * kMs));  // connected already: nothing to do
  EXPECT_EQ(conn.backoff().wait_ns(), ReconnectBackoff::kInitialNs);
}

TEST_F(AgentConnectionTest, PathLongerThanSunPathIsRetriedAfter5s) {
  const std::string path = dir_.path() + "/" + std::string(sizeof(sockaddr_un::sun_path), 'x');
  AgentConnection conn(path, 64 * 1024, &FakeNow);
  EXPECT_FALSE(conn.MaybeConnect(g_now));
  EXPECT_EQ(conn.backoff().next_attempt_ns(), g_now + ReconnectBackoff::kMaxNs);
}

TEST_F(AgentConnectionTest, WhileDisconnectedEveryMessageIsDroppedAndCounted) {
  AgentConnection conn(SocketPath(), 64 * 1024, &FakeNow);
  const wire::Message launch = MakeLaunch(1);
  EXPECT_FALSE(conn.Emit(launch));
  const uint8_t frame[24] = {};
  EXPECT_FALSE(conn.EmitRaw(frame));
  EXPECT_EQ(conn.bytes_dropped(), EncodedSize(launch) + sizeof(frame));
  EXPECT_EQ(conn.pending_bytes(), 0u);
}

TEST_F(AgentConnectionTest, MessagesBeyondTheCapAreDroppedWholeAndTheStreamDecodes) {
  const size_t launch_bytes = EncodedSize(MakeLaunch(1));
  ASSERT_NO_FATAL_FAILURE(Connect(launch_bytes * 3 + launch_bytes / 2));
  Listener& agent = *agent_;
  AgentConnection& conn = *conn_;
  std::vector<bool> accepted;
  for (uint32_t id = 1; id <= 5; ++id) {
    accepted.push_back(conn.Emit(MakeLaunch(id)));
  }
  EXPECT_EQ(accepted, (std::vector<bool>{true, true, true, false, false}));
  EXPECT_EQ(conn.bytes_dropped(), 2 * launch_bytes);
  EXPECT_EQ(conn.pending_bytes(), 3 * launch_bytes);
  conn.WriteOut(0);
  EXPECT_EQ(conn.pending_bytes(), 0u);
  EXPECT_TRUE(conn.Emit(MakeLaunch(6)));  // room again once the socket took the output
  conn.WriteOut(0);
  conn.ShutdownWrite();
  std::string error;
  const auto got = agent.ReadAll(&error);
  EXPECT_EQ(error, "");
  ASSERT_EQ(got.size(), 4u);
  const uint32_t expected_ids[] = {1, 2, 3, 6};
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(std::holds_alternative<wire::Launch>(got[i]));
    EXPECT_EQ(std::get<wire::Launch>(got[i]).correlation_id, expected_ids[i]);
  }
}

TEST_F(AgentConnectionTest, ControlsAreReadInOrderAndOtherMessagesSkipped) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  Listener& agent = *agent_;
  AgentConnection& conn = *conn_;
  std::string bytes;
  wire::Encode(wire::Control{wire::ControlOp::kSetRate, 7}, &bytes);
  wire::Encode(MakeLaunch(1), &bytes);
  wire::Encode(wire::Control{wire::ControlOp::kDisableCollection, 0}, &bytes);
  // The last control arrives in two pieces: only its first half is there for the first read.
  std::string last;
  wire::Encode(wire::Control{wire::ControlOp::kEnableCollection, 0}, &last);
  agent.Send(bytes + last.substr(0, 5));
  std::vector<wire::Control> controls;
  conn.ReadControls(&controls);
  ASSERT_EQ(controls.size(), 2u);
  EXPECT_EQ(controls[0].op, wire::ControlOp::kSetRate);
  EXPECT_EQ(controls[0].value, 7u);
  EXPECT_EQ(controls[1].op, wire::ControlOp::kDisableCollection);
  agent.Send(last.substr(5));
  controls.clear();
  conn.ReadControls(&controls);
  ASSERT_EQ(controls.size(), 1u);
  EXPECT_EQ(controls[0].op, wire::ControlOp::kEnableCollection);
  EXPECT_TRUE(conn.connected());
}

TEST_F(AgentConnectionTest, AgentClosingDisconnectsCountsUnsentBytesAndRetriesAfterTheWait) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  Listener& agent = *agent_;
  AgentConnection& conn = *conn_;
  ASSERT_TRUE(conn.Emit(MakeLaunch(1)));
  const size_t unsent = conn.pending_bytes();
  agent.ClosePeer();
  g_now += 7 * kMs;
  std::vector<wire::Control> controls;
  conn.ReadControls(&controls);
  EXPECT_FALSE(conn.connected());
  EXPECT_EQ(conn.bytes_dropped(), unsent);
  EXPECT_EQ(conn.pending_bytes(), 0u);
  EXPECT_EQ(conn.backoff().next_attempt_ns(), g_now + ReconnectBackoff::kInitialNs);
  // A new agent on the same path: the next attempt connects with an empty output.
  EXPECT_FALSE(conn.MaybeConnect(g_now + 50 * kMs));
  EXPECT_TRUE(conn.MaybeConnect(g_now + 100 * kMs));
  EXPECT_EQ(conn.connects(), 2u);
  EXPECT_EQ(conn.pending_bytes(), 0u);
}

TEST_F(AgentConnectionTest, UndecodableInputDisconnects) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  Listener& agent = *agent_;
  AgentConnection& conn = *conn_;
  std::string bytes;
  wire::Encode(wire::Control{wire::ControlOp::kSetRate, 3}, &bytes);
  std::string bad;
  wire::Encode(wire::Control{wire::ControlOp::kSetRate, 4}, &bad);
  bad[5] = static_cast<char>(0xff);  // a frame version from the future ends the stream
  agent.Send(bytes + bad);
  std::vector<wire::Control> controls;
  conn.ReadControls(&controls);
  EXPECT_FALSE(conn.connected());
  ASSERT_EQ(controls.size(), 1u);  // what was decoded before the bad frame still counts
  EXPECT_EQ(controls[0].value, 3u);
}

}  // namespace
}  // namespace warpscope::ipc
