// SPDX-License-Identifier: Apache-2.0
#include "test_agent.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace warpscope::cupti::testing {

TestAgent::TestAgent(std::string socket_path, bool reading)
    : path_(std::move(socket_path)), reading_(reading) {
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
  unlink(path_.c_str());
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd_, 16) != 0) {
    close(listen_fd_);
    listen_fd_ = -1;
  }
  if (pipe2(wake_pipe_, O_CLOEXEC) != 0) {
    wake_pipe_[0] = wake_pipe_[1] = -1;
  }
  thread_ = std::thread([this] { Loop(); });
}

TestAgent::~TestAgent() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  if (wake_pipe_[1] >= 0) {
    (void)!write(wake_pipe_[1], "x", 1);
  }
  thread_.join();
  for (int fd : fds_) {
    close(fd);
  }
  if (listen_fd_ >= 0) {
    close(listen_fd_);
  }
  close(wake_pipe_[0]);
  close(wake_pipe_[1]);
  unlink(path_.c_str());
}

void TestAgent::StartReading() {
  {
    std::lock_guard lock(mu_);
    reading_ = true;
  }
  (void)!write(wake_pipe_[1], "x", 1);
}

void TestAgent::SendControl(const wire::Control& control) {
  std::string bytes;
  wire::Encode(control, &bytes);
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < fds_.size(); ++i) {
    if (!connections_[i].closed) {
      (void)!send(fds_[i], bytes.data(), bytes.size(), MSG_NOSIGNAL);
    }
  }
}

bool TestAgent::WaitUntil(const std::function<bool(const std::vector<AgentConnection>&)>& done,
                          std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return done(connections_); });
}

std::vector<AgentConnection> TestAgent::Snapshot() {
  std::lock_guard lock(mu_);
  return connections_;
}

void TestAgent::Loop() {
  while (true) {
    std::vector<pollfd> pfds;
    bool reading;
    {
      std::lock_guard lock(mu_);
      if (stop_) {
        return;
      }
      reading = reading_;
      pfds.push_back({wake_pipe_[0], POLLIN, 0});
      pfds.push_back({listen_fd_, POLLIN, 0});
      if (reading) {
        for (size_t i = 0; i < fds_.size(); ++i) {
          if (!connections_[i].closed) {
            pfds.push_back({fds_[i], POLLIN, 0});
          }
        }
      }
    }
    if (poll(pfds.data(), pfds.size(), 1000) <= 0) {
      continue;
    }
    if (pfds[0].revents & POLLIN) {
      char c[16];
      (void)!read(wake_pipe_[0], c, sizeof(c));
    }
    if (pfds[1].revents & POLLIN) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        std::lock_guard lock(mu_);
        fds_.push_back(fd);
        decoders_.emplace_back();
        connections_.emplace_back();
        cv_.notify_all();
      }
    }
    for (size_t p = 2; p < pfds.size(); ++p) {
      if (!(pfds[p].revents & (POLLIN | POLLHUP | POLLERR))) {
        continue;
      }
      char buf[65536];
      const ssize_t n = recv(pfds[p].fd, buf, sizeof(buf), 0);
      std::lock_guard lock(mu_);
      size_t i = 0;
      while (fds_[i] != pfds[p].fd) {
        ++i;
      }
      auto& conn = connections_[i];
      if (n <= 0) {
        conn.closed = true;
      } else {
        decoders_[i].Append(std::string_view(buf, static_cast<size_t>(n)));
        wire::Message m;
        wire::DecodeStatus s;
        while ((s = decoders_[i].Next(&m)) == wire::DecodeStatus::kOk) {
          if (const auto* h = std::get_if<wire::Hello>(&m)) {
            conn.pid = h->pid;
          }
          conn.messages.push_back(std::move(m));
        }
        if (s == wire::DecodeStatus::kError) {
          conn.error = decoders_[i].error();
          conn.closed = true;
        }
      }
      cv_.notify_all();
    }
  }
}

}  // namespace warpscope::cupti::testing
