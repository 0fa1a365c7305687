// SPDX-License-Identifier: Apache-2.0
// An injected library's connection to the agent, shared by libwarpscope_cupti.so and
// libwarpscope_nccl.so: a non-blocking unix stream socket, the buffer of encoded frames waiting for
// it, the decoder of what the agent sends back, and the reconnect backoff
// (docs/design/cuda-profiler.md, "Rings and the flusher"; docs/design/nccl.md).
//
// Threads: the flusher thread only (not thread-safe). Nothing here blocks except WriteOut, and
// that for at most its timeout (0 on every pass but the final one at exit).
//
// Output: a frame is appended whole while the unsent bytes stay under the cap
// (WARPSCOPE_CUPTI_OUT_KB, WARPSCOPE_NCCL_OUT_KB); a frame that does not fit, and every frame while disconnected, is
// dropped and its bytes counted (bytes_dropped()), so that the stream stays decodable.
// Disconnecting drops, and counts, what was still unsent.
#ifndef WARPSCOPE_IPC_AGENT_CONNECTION_H_
#define WARPSCOPE_IPC_AGENT_CONNECTION_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cupti/wire.h"

namespace warpscope::ipc {

namespace wire = ::warpscope::cupti::wire;

// Where encoded messages go. Implemented by AgentConnection; fakes collect them in tests.
class MessageSink {
 public:
  virtual ~MessageSink() = default;
  // False when the message was dropped (counted by the sink).
  virtual bool Emit(const wire::Message& m) = 0;
};

// When to try connecting again: 100 ms after a failed attempt, doubling up to 5 s; a connection
// resets the wait to 100 ms; a closed connection is retried after the current wait; a path that
// cannot be used (no socket, longer than sun_path) after 5 s, without changing the wait.
class ReconnectBackoff {
 public:
  static constexpr uint64_t kInitialNs = 100'000'000;
  static constexpr uint64_t kMaxNs = 5'000'000'000;

  bool Due(uint64_t now_ns) const { return now_ns >= next_ns_; }
  void Failed(uint64_t now_ns) {
    next_ns_ = now_ns + wait_ns_;
    wait_ns_ = std::min(wait_ns_ * 2, kMaxNs);
  }
  void Unusable(uint64_t now_ns) { next_ns_ = now_ns + kMaxNs; }
  void Connected() { wait_ns_ = kInitialNs; }
  void Disconnected(uint64_t now_ns) { next_ns_ = now_ns + wait_ns_; }
  void RetryNow() { next_ns_ = 0; }

  uint64_t next_attempt_ns() const { return next_ns_; }
  uint64_t wait_ns() const { return wait_ns_; }

 private:
  uint64_t next_ns_ = 0;
  uint64_t wait_ns_ = kInitialNs;
};

class AgentConnection final : public MessageSink {
 public:
  using Clock = uint64_t (*)();  // CLOCK_MONOTONIC ns; a seam for tests
  using DefaultPath = std::string (*)();
  // printf-like; the library's own logger (silent unless its user asked for logs).
  using LogFn = void (*)(const char* fmt, ...);

  // `socket_path` empty: `default_path()`, resolved at the first attempt (no path when null).
  // `out_cap_bytes`: unsent bytes kept. `log` may be null.
  AgentConnection(std::string socket_path, size_t out_cap_bytes, Clock monotonic_ns,
                  DefaultPath default_path = nullptr, LogFn log = nullptr);
  ~AgentConnection() override;
  AgentConnection(const AgentConnection&) = delete;
  AgentConnection& operator=(const AgentConnection&) = delete;

  bool connected() const { return fd_ >= 0; }

  // Connects when disconnected and the backoff allows it. True when a connection was just made:
  // the output and the decoder start empty, and the caller sends its Hello first.
  bool MaybeConnect(uint64_t now_ns);
  // The next MaybeConnect tries at once, whatever the backoff (the final pass at exit).
  void RetryNow() { backoff_.RetryNow(); }
  // Closes the socket (logging `why`), drops the unsent bytes and schedules a reconnect.
  void Disconnect(const char* why);
  // Ends our side of the stream (shutdown SHUT_WR) so the agent reads everything up to here.
  void ShutdownWrite();

  bool Emit(const wire::Message& m) override;
  // Appends a frame that is already encoded (a stack record from a ring).
  bool EmitRaw(std::span<const uint8_t> frame);
  // Counts bytes the caller dropped without encoding them.
  void CountDropped(uint64_t bytes) { bytes_dropped_ += bytes; }

  // Sends what the socket takes, waiting at most `timeout_ms` for room; a send error disconnects.
  void WriteOut(int timeout_ms);
  // Reads what the agent sent, without waiting, and appends its Control messages to `controls`
  // (other messages are skipped). The agent closing the socket, a read error or an undecodable
  // stream disconnects; controls decoded before that are still returned.
  void ReadControls(std::vector<wire::Control>* controls);

  size_t pending_bytes() const { return out_.size() - out_sent_; }
  size_t out_cap_bytes() const { return out_cap_; }
  size_t buffer_capacity() const { return out_.capacity(); }
  uint64_t bytes_dropped() const { return bytes_dropped_; }
  uint64_t connects() const { return connects_; }  // successful connections (kReconnects)
  const ReconnectBackoff& backoff() const { return backoff_; }

 private:
  const std::string configured_path_;
  const size_t out_cap_;
  const Clock now_;
  const DefaultPath default_path_;
  const LogFn log_;
  std::string path_;  // resolved at the first attempt
  int fd_ = -1;
  ReconnectBackoff backoff_;
  std::string out_;
  size_t out_sent_ = 0;
  std::string scratch_;
  wire::StreamDecoder in_;
  uint64_t bytes_dropped_ = 0;
  uint64_t connects_ = 0;
};

}  // namespace warpscope::ipc

#endif  // WARPSCOPE_IPC_AGENT_CONNECTION_H_
