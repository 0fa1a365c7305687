// SPDX-License-Identifier: Apache-2.0
#include "ipc/agent_connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace warpscope::ipc {

AgentConnection::AgentConnection(std::string socket_path, size_t out_cap_bytes, Clock monotonic_ns,
                                 DefaultPath default_path, LogFn log)
    : configured_path_(std::move(socket_path)),
      out_cap_(out_cap_bytes),
      now_(monotonic_ns),
      default_path_(default_path),
      log_(log) {}

AgentConnection::~AgentConnection() {
  if (fd_ >= 0) {
    close(fd_);
  }
}

bool AgentConnection::MaybeConnect(uint64_t now_ns) {
  if (fd_ >= 0 || !backoff_.Due(now_ns)) {
    return false;
  }
  if (path_.empty()) {
    path_ = !configured_path_.empty() ? configured_path_
            : default_path_ != nullptr ? default_path_()
                                       : std::string();
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (fd < 0 || path_.size() >= sizeof(addr.sun_path)) {
    if (fd >= 0) {
      close(fd);
    }
    backoff_.Unusable(now_ns);
    return false;
  }
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    backoff_.Failed(now_ns);
    return false;
  }
  fd_ = fd;
  backoff_.Connected();
  ++connects_;
  out_.clear();
  out_sent_ = 0;
  in_ = wire::StreamDecoder();
  return true;
}

void AgentConnection::Disconnect(const char* why) {
  if (fd_ >= 0) {
    if (log_ != nullptr) {
      log_("agent connection closed: %s", why);
    }
    close(fd_);
  }
  fd_ = -1;
  bytes_dropped_ += out_.size() - out_sent_;
  out_.clear();
  out_sent_ = 0;
  backoff_.Disconnected(now_());
}

void AgentConnection::ShutdownWrite() {
  if (fd_ >= 0) {
    shutdown(fd_, SHUT_WR);
  }
}

bool AgentConnection::EmitRaw(std::span<const uint8_t> frame) {
  if (fd_ < 0 || out_.size() - out_sent_ + frame.size() > out_cap_) {
    bytes_dropped_ += frame.size();
    return false;
  }
  // The bytes already sent leave before the new ones would take the buffer past the cap, so it
  // never holds more than out_cap_ bytes (and its capacity stays within 2 x out_cap_).
  if (out_sent_ > 0 && out_.size() + frame.size() > out_cap_) {
    out_.erase(0, out_sent_);
    out_sent_ = 0;
  }
  out_.append(reinterpret_cast<const char*>(frame.data()), frame.size());
  return true;
}

bool AgentConnection::Emit(const wire::Message& m) {
  scratch_.clear();
  wire::Encode(m, &scratch_);
  return EmitRaw({reinterpret_cast<const uint8_t*>(scratch_.data()), scratch_.size()});
}

void AgentConnection::WriteOut(int timeout_ms) {
  if (fd_ < 0) {
    return;
  }
  const uint64_t deadline = now_() + static_cast<uint64_t>(timeout_ms) * 1'000'000;
  while (out_sent_ < out_.size()) {
    const ssize_t n =
        send(fd_, out_.data() + out_sent_, out_.size() - out_sent_, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      out_sent_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      const uint64_t now = now_();
      if (now >= deadline) {
        break;
      }
      pollfd pfd{fd_, POLLOUT, 0};
      poll(&pfd, 1, static_cast<int>((deadline - now) / 1'000'000) + 1);
      continue;
    }
    Disconnect("send failed");
    return;
  }
  if (out_sent_ == out_.size()) {
    out_.clear();
    out_sent_ = 0;
    if (out_.capacity() > out_cap_ * 2) {
      out_.shrink_to_fit();
    }
  } else if (out_sent_ > out_.size() / 2) {
    out_.erase(0, out_sent_);
    out_sent_ = 0;
  }
}

void AgentConnection::ReadControls(std::vector<wire::Control>* controls) {
  if (fd_ < 0) {
    return;
  }
  char buf[4096];
  while (true) {
    const ssize_t n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      in_.Append(std::string_view(buf, static_cast<size_t>(n)));
      continue;
    }
    if (n == 0) {
      Disconnect("agent closed the socket");
      return;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      break;
    }
    Disconnect("recv failed");
    return;
  }
  wire::Message m;
  wire::DecodeStatus s;
  while ((s = in_.Next(&m)) == wire::DecodeStatus::kOk) {
    if (const auto* c = std::get_if<wire::Control>(&m)) {
      controls->push_back(*c);
    }
  }
  if (s == wire::DecodeStatus::kError) {
    Disconnect(in_.error().c_str());
  }
}

}  // namespace warpscope::ipc
