// SPDX-License-Identifier: Apache-2.0
// A byte-counting stand-in for the agent, for bench/cupti_overhead.sh: listens on a unix socket,
// reads every injected process that connects as fast as it can, walks the frames by their
// headers only (cheap enough not to slow the process it measures), and decodes just the
// Counters frames. When every accepted connection has closed it prints one line and exits:
//
//   wire bytes=<all> frames=<n> kernel_activity=<frames> kernel_activity_bytes=<bytes>
//        launch=<frames> stack_bytes=<bytes> aggregate_bytes=<bytes> kernels_seen=<counter>
//        cupti_dropped=<counter> pool_exhausted=<counter> bytes_dropped=<counter>
//
// Usage: cupti_wire_counter <socket path> [timeout seconds, default 120]
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cupti/wire.h"

namespace {

namespace wire = ::warpscope::cupti::wire;

struct Totals {
  uint64_t bytes = 0;
  uint64_t frames = 0;
  std::map<uint8_t, uint64_t> frames_by_type;
  std::map<uint8_t, uint64_t> bytes_by_type;
  std::map<wire::CounterId, uint64_t> counters;  // the last Counters frame
};

// Consumes the whole frames at the front of `buf`.
void Walk(std::string* buf, Totals* t) {
  size_t pos = 0;
  while (buf->size() - pos >= wire::kHeaderSize) {
    const auto* p = reinterpret_cast<const uint8_t*>(buf->data() + pos);
    const uint32_t size = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                          (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
    if (buf->size() - pos - wire::kHeaderSize < size) {
      break;
    }
    const uint8_t type = p[4];
    ++t->frames;
    ++t->frames_by_type[type];
    t->bytes_by_type[type] += wire::kHeaderSize + size;
    if (type == static_cast<uint8_t>(wire::MessageType::kCounters)) {
      wire::Message m;
      std::string error;
      if (wire::DecodePayload(wire::MessageType::kCounters,
                              std::span<const uint8_t>(p + wire::kHeaderSize, size), &m, &error)) {
        for (const auto& c : std::get<wire::Counters>(m).counters) {
          t->counters[c.id] = c.value;
        }
      }
    }
    pos += wire::kHeaderSize + size;
  }
  buf->erase(0, pos);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cupti_wire_counter <socket path> [timeout seconds]\n");
    return 2;
  }
  const int timeout_s = argc > 2 ? std::atoi(argv[2]) : 120;
  const int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (lfd < 0 || std::strlen(argv[1]) >= sizeof(addr.sun_path)) {
    std::fprintf(stderr, "cupti_wire_counter: bad socket path %s\n", argv[1]);
    return 2;
  }
  std::strcpy(addr.sun_path, argv[1]);
  unlink(argv[1]);
  if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(lfd, 16) != 0) {
    std::perror("cupti_wire_counter: bind/listen");
    return 2;
  }
  Totals t;
  std::vector<int> fds;
  std::vector<std::string> bufs;
  size_t accepted = 0;
  size_t open = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::vector<char> chunk(1 << 20);
  while (accepted == 0 || open > 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "cupti_wire_counter: timed out\n");
      break;
    }
    std::vector<pollfd> pfds;
    pfds.push_back({lfd, POLLIN, 0});
    for (int fd : fds) {
      pfds.push_back({fd, static_cast<short>(fd >= 0 ? POLLIN : 0), 0});
    }
    if (poll(pfds.data(), pfds.size(), 500) <= 0) {
      continue;
    }
    if (pfds[0].revents & POLLIN) {
      const int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        fds.push_back(fd);
        bufs.emplace_back();
        ++accepted;
        ++open;
      }
    }
    for (size_t i = 0; i + 1 < pfds.size(); ++i) {
      if (fds[i] < 0 || (pfds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
        continue;
      }
      const ssize_t n = recv(fds[i], chunk.data(), chunk.size(), MSG_DONTWAIT);
      if (n > 0) {
        t.bytes += static_cast<uint64_t>(n);
        bufs[i].append(chunk.data(), static_cast<size_t>(n));
        Walk(&bufs[i], &t);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(fds[i]);
        fds[i] = -1;
        --open;
      }
    }
  }
  using M = wire::MessageType;
  auto frames = [&](M m) { return t.frames_by_type[static_cast<uint8_t>(m)]; };
  auto bytes = [&](M m) { return t.bytes_by_type[static_cast<uint8_t>(m)]; };
  using C = wire::CounterId;
  std::printf(
      "wire bytes=%lu frames=%lu kernel_activity=%lu kernel_activity_bytes=%lu launch=%lu "
      "stack_bytes=%lu aggregate_bytes=%lu kernels_seen=%lu cupti_dropped=%lu pool_exhausted=%lu "
      "bytes_dropped=%lu\n",
      static_cast<unsigned long>(t.bytes), static_cast<unsigned long>(t.frames),
      static_cast<unsigned long>(frames(M::kKernelActivity)),
      static_cast<unsigned long>(bytes(M::kKernelActivity)),
      static_cast<unsigned long>(frames(M::kLaunch)), static_cast<unsigned long>(bytes(M::kStack)),
      static_cast<unsigned long>(bytes(M::kKernelAggregate)),
      static_cast<unsigned long>(t.counters[C::kKernelsSeen]),
      static_cast<unsigned long>(t.counters[C::kCuptiDroppedRecords]),
      static_cast<unsigned long>(t.counters[C::kBufferPoolExhausted]),
      static_cast<unsigned long>(t.counters[C::kBytesDropped]));
  unlink(argv[1]);
  return 0;
}
