// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/profile_listener.h"

#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>

#include "agent/sources/cuda_profiler/listen_socket.h"
#include "agent/sources/cuda_profiler/profile_listener_connection.h"
#include "base/logging.h"

namespace warpscope::agent::cuda_profiler {
namespace {

bool IsNcclHello(const wire::Message& message) {
  const auto* hello = std::get_if<wire::Hello>(&message);
  return hello != nullptr && hello->component == wire::Component::kNccl;
}

int64_t RealtimeNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// Forwards to the builder, and gives the step tracker the kernels and NVTX ranges of each pid
// and its process (once per pid).
class ListenerInputSink final : public ProfileInputSink {
 public:
  ListenerInputSink(ProfileBuilder* builder, StepTracker* steps,
                    std::function<void(const ProcessDesc&)> track)
      : builder_(builder), steps_(steps), track_(std::move(track)) {}
  void AddProcess(const ProcessDesc& process) override {
    builder_.AddProcess(process);
    track_(process);
  }
  void AddStack(int32_t pid, InternedStack stack) override {
    builder_.AddStack(pid, std::move(stack));
  }
  void AddKernel(int32_t pid, KernelActivity kernel) override {
    steps_->AddKernel(pid, kernel.name, kernel.start_ns, kernel.end_ns);
    builder_.AddKernel(pid, std::move(kernel));
  }
  void AddKernelAggregate(int32_t pid, const KernelAggregate& aggregate) override {
    builder_.AddKernelAggregate(pid, aggregate);
  }
  void AddPcSample(int32_t pid, const PcSample& sample) override {
    builder_.AddPcSample(pid, sample);
  }
  void AddMemoryActivity(int32_t pid, MemoryActivity activity) override {
    builder_.AddMemoryActivity(pid, std::move(activity));
  }
  void AddNvtxRange(int32_t pid, NvtxRange range) override {
    steps_->AddNvtxRange(pid, range.name, range.start_ns, range.end_ns);
    builder_.AddNvtxRange(pid, std::move(range));
  }
  void UpdateCounters(int32_t pid, const ProcessCounters& counters) override {
    builder_.UpdateCounters(pid, counters);
  }
  void UpdateDeviceMemory(int32_t pid, std::vector<DeviceMemoryTotals> totals) override {
    builder_.UpdateDeviceMemory(pid, std::move(totals));
  }

 private:
  BuilderInputSink builder_;
  StepTracker* steps_;
  std::function<void(const ProcessDesc&)> track_;
};

void RecordedSamples::ReplayInto(model::SampleSink& out) const {
  for (const auto& e : entities_) {
    out.AddEntity(e);
  }
  for (const auto& v : values_) {
    out.AddValue(*v.metric, v.entity_id, v.labels, v.value);
  }
  for (const auto& e : events_) {
    out.AddEvent(e);
  }
}

struct ProfileListener::Request {
  bool window = false;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::promise<std::vector<profiling::WindowProfile>> promise;
  std::optional<int32_t> pid;
  wire::Control control;
};

ProfileListener::ProfileListener(Options options)
    : options_(std::move(options)), nccl_(options_.nccl), steps_(options_.steps) {}

base::Result<std::unique_ptr<ProfileListener>> ProfileListener::Start(Options options) {
  const std::string path = options.socket_path;
  if (path.empty()) {
    return base::Error(base::InvalidArgument("the CUDA profiler socket path is empty"));
  }
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return base::Error(base::InvalidArgument(
        "--cuda-profiler-socket {}: a unix socket path must be shorter than {} bytes; choose a "
        "shorter path",
        path, sizeof(sockaddr_un::sun_path)));
  }
  WARPSCOPE_RETURN_IF_ERROR(PrepareSocketPath(path));

  std::unique_ptr<ProfileListener> l(new ProfileListener(std::move(options)));
  l->listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (l->listen_fd_ < 0) {
    return base::Error(base::Unavailable("socket(AF_UNIX): {}", base::ErrnoString(errno)));
  }
  sockaddr_un addr = SocketAddress(path);
  if (bind(l->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return base::Error(base::Unavailable(
        "cannot bind the CUDA profiler socket {}: {}; choose another --cuda-profiler-socket", path,
        base::ErrnoString(errno)));
  }
  // Applications of every local user connect to it.
  chmod(path.c_str(), 0666);
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    l->socket_inode_ = st.st_ino;
  }
  if (listen(l->listen_fd_, 128) != 0) {
    return base::Error(base::Unavailable("listen on {}: {}", path, base::ErrnoString(errno)));
  }
  l->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (l->wake_fd_ < 0) {
    return base::Error(base::Unavailable("eventfd: {}", base::ErrnoString(errno)));
  }

  if (!l->options_.converter.start_ticks_of) {
    std::string host_root = l->options_.symbolizer.host_root;
    l->options_.converter.start_ticks_of = [host_root](int32_t pid) {
      return ReadStartTicks(host_root, pid);
    };
  }
  l->symbolizer_ = std::make_unique<profiling::Symbolizer>(l->options_.symbolizer);
  l->builder_ = std::make_unique<ProfileBuilder>(l->symbolizer_.get(), l->options_.builder);
  if (l->options_.disassemble) {
    const std::string tool = profiling::SassDisassembler(l->options_.sass).ToolPath();
    l->sass_available_ = !tool.empty();
    if (l->sass_available_) {
      WARPSCOPE_LOG(INFO, "CUDA profiler: PC samples will show SASS from {}", tool);
    }
  }
  l->metrics_ = std::make_shared<RecordedSamples>();
  l->thread_ = std::thread([p = l.get()] { p->Loop(); });
  if (l->sass_available_) {
    l->sass_thread_ = std::thread([p = l.get()] { p->SassWorker(); });
  }
  WARPSCOPE_LOG(INFO, "CUDA profiler: listening on {}", path);
  return l;
}

ProfileListener::~ProfileListener() { Stop(); }

void ProfileListener::Stop() {
  std::call_once(stop_once_, [this] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    sass_cv_.notify_all();
    if (wake_fd_ >= 0) {
      uint64_t one = 1;
      (void)!write(wake_fd_, &one, sizeof(one));
    }
    if (thread_.joinable()) {
      thread_.join();
    }
    if (sass_thread_.joinable()) {
      sass_thread_.join();
    }
    // The listener thread has exited: its state is ours now.
    if (builder_ != nullptr) {
      ListenerInputSink sink = InputSink();
      for (auto& c : connections_) {
        if (!c->closed) {
          c->converter.OnClose(sink);
          close(c->fd);
          c->closed = true;
        }
      }
    }
    connections_.clear();
    std::vector<std::unique_ptr<Request>> left;
    {
      std::lock_guard<std::mutex> lock(mu_);
      left.swap(requests_);
    }
    for (auto& r : left) {
      if (r->window) {
        r->promise.set_value({});
      }
    }
    if (listen_fd_ >= 0) {
      close(listen_fd_);
      listen_fd_ = -1;
      struct stat st {};
      if (socket_inode_ != 0 && stat(options_.socket_path.c_str(), &st) == 0 &&
          st.st_ino == socket_inode_) {
        unlink(options_.socket_path.c_str());
      }
    }
    if (wake_fd_ >= 0) {
      close(wake_fd_);
      wake_fd_ = -1;
    }
  });
}

std::future<std::vector<profiling::WindowProfile>> ProfileListener::FinishWindow(int64_t start_ns,
                                                                                 int64_t end_ns) {
  auto r = std::make_unique<Request>();
  r->window = true;
  r->start_ns = start_ns;
  r->end_ns = end_ns;
  auto future = r->promise.get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      r->promise.set_value({});
      return future;
    }
    requests_.push_back(std::move(r));
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  return future;
}

void ProfileListener::SendControl(std::optional<int32_t> pid, const wire::Control& control) {
  auto r = std::make_unique<Request>();
  r->pid = pid;
  r->control = control;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      return;
    }
    requests_.push_back(std::move(r));
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

void ProfileListener::EmitSelfMetrics(model::SampleSink& out) const {
  std::shared_ptr<const RecordedSamples> metrics;
  {
    std::lock_guard<std::mutex> lock(mu_);
    metrics = metrics_;
  }
  if (metrics != nullptr) {
    metrics->ReplayInto(out);
  }
}

ProfileListener::Stats ProfileListener::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return published_;
}

std::vector<int32_t> ProfileListener::connected_pids() const {
  std::lock_guard<std::mutex> lock(mu_);
  return published_pids_;
}

bool ProfileListener::WaitUntil(const std::function<bool(const Stats&)>& done,
                                std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_for(lock, timeout, [&] { return done(published_); });
}

bool ProfileListener::WaitUntilAllClosed(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  uint64_t turn = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    turn = published_.loops;
  }
  // The turn running now may have polled before this call; the one after it polls the
  // listening socket after it, so it accepts every connection made before. Each wake-up
  // keeps a turn from sleeping in poll().
  for (const uint64_t target : {turn + 1, turn + 2}) {
    uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof(one));
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!WaitUntil([target](const Stats& s) { return s.loops >= target; }, left)) {
      return false;
    }
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return WaitUntil([](const Stats& s) { return s.open == 0; }, left);
}

void ProfileListener::Loop() {
  std::vector<pollfd> fds;
  std::vector<Connection*> polled;
  while (true) {
    fds.clear();
    polled.clear();
    fds.push_back(pollfd{wake_fd_, POLLIN, 0});
    fds.push_back(pollfd{listen_fd_, POLLIN, 0});
    for (auto& c : connections_) {
      short events = POLLIN;
      if (c->out_pos < c->out.size()) {
        events |= POLLOUT;
      }
      fds.push_back(pollfd{c->fd, events, 0});
      polled.push_back(c.get());
    }
    const int n = poll(fds.data(), fds.size(), 1000);
    if (n < 0 && errno != EINTR) {
      WARPSCOPE_PLOG(ERROR, "CUDA profiler: poll");
    }
    if (n > 0 && (fds[0].revents & POLLIN) != 0) {
      uint64_t value = 0;
      (void)!read(wake_fd_, &value, sizeof(value));
    }
    HandleSass();
    HandleRequests();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) {
        break;
      }
    }
    if (n > 0) {
      for (size_t i = 0; i < polled.size(); ++i) {
        const short revents = fds[i + 2].revents;
        Connection& c = *polled[i];
        if (c.closed || revents == 0) {
          continue;
        }
        if ((revents & POLLOUT) != 0) {
          WriteTo(c);
        }
        if (!c.closed && (revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
          ReadFrom(c);
        }
      }
      if ((fds[1].revents & POLLIN) != 0) {
        Accept();
      }
    }
    std::erase_if(connections_, [](const std::unique_ptr<Connection>& c) { return c->closed; });
    if (std::chrono::steady_clock::now() - last_snapshot_ >= std::chrono::seconds(1)) {
      SnapshotMetrics();
    }
    ++stats_.loops;
    Publish();
  }
  // FinishWindow refuses new requests once stopping_ is set: this serves the last ones (the
  // source's final window) while the thread still owns the builder.
  HandleRequests();
  Publish();
}

void ProfileListener::Accept() {
  while (true) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) {
        continue;
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        WARPSCOPE_PLOG(WARNING, "CUDA profiler: accept");
      }
      return;
    }
    if (connections_.size() >= options_.max_connections) {
      ++stats_.refused_over_cap;
      WARPSCOPE_LOG_FIRST_N(WARNING, 1,
                            "CUDA profiler: more than {} processes connected; refusing more",
                            options_.max_connections);
      close(fd);
      continue;
    }
    int32_t peer_pid = 0;
    if (options_.use_peer_pid) {
      ucred cred{};
      socklen_t len = sizeof(cred);
      if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
        peer_pid = cred.pid;
      }
    }
    ++stats_.accepted;
    if (peer_pid > 0) {
      WarmSymbolizer(peer_pid);
    }
    connections_.push_back(std::make_unique<Connection>(fd, peer_pid, options_.converter));
  }
}

void ProfileListener::ReadFrom(Connection& c) {
  ListenerInputSink sink = InputSink();
  std::string& buf = read_buffer_;
  buf.resize(std::max<size_t>(options_.read_chunk, 4096));
  for (int round = 0; round < options_.max_reads_per_wakeup; ++round) {
    const ssize_t n = recv(c.fd, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n == 0) {
      Close(c);
      return;
    }
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        Close(c);
      }
      return;
    }
    stats_.bytes += static_cast<uint64_t>(n);
    c.decoder.Append(std::string_view(buf.data(), static_cast<size_t>(n)));
    wire::Message message;
    while (true) {
      const wire::DecodeStatus status = c.decoder.Next(&message);
      if (status == wire::DecodeStatus::kNeedMore) {
        break;
      }
      if (status == wire::DecodeStatus::kError) {
        ++stats_.closed_corrupt;
        WARPSCOPE_LOG_FIRST_N(WARNING, 10, "CUDA profiler: closing pid {}: corrupt stream ({})",
                              c.converter.pid(), c.decoder.error());
        Close(c);
        return;
      }
      ++stats_.messages;
      if (c.nccl || IsNcclHello(message)) {
        HandleNccl(c, message);
        if (options_.observer) {
          options_.observer(c.live_pid, message);
        }
        continue;
      }
      std::vector<uint64_t> pcs;
      if (options_.symbolize_on_arrival) {
        if (auto* stack = std::get_if<wire::Stack>(&message)) {
          pcs = stack->native;
        }
      }
      std::optional<wire::Message> observed;
      if (options_.observer) {
        observed = message;
      }
      ConnectionConverter::Events events;
      c.converter.Handle(std::move(message), sink, events);
      if (!pcs.empty() && c.converter.pid() > 0) {
        SymbolizeOnArrival(c.converter.pid(), pcs);
      }
      if (observed) {
        options_.observer(c.converter.pid(), *observed);
      }
      if (events.hello && c.live_pid == 0 && c.converter.pid() > 0) {
        if (!options_.use_peer_pid) {
          WarmSymbolizer(c.converter.pid());
        }
        ++stats_.hellos;
        c.live_pid = c.converter.pid();
        ++live_by_pid_[c.live_pid];
        for (const auto& control : options_.controls_on_connect) {
          if (ControlApplies(false, control.op)) {
            Queue(c, control);
          }
        }
      }
      for (const auto& notice : events.notices) {
        ++stats_.notices;
        auto& logged = notices_logged_[c.converter.pid()];
        if (std::find(logged.begin(), logged.end(), notice.message) == logged.end() &&
            logged.size() < 16) {
          logged.push_back(notice.message);
          WARPSCOPE_LOG(WARNING, "CUDA profiler: pid {} ({}): {} (code {})", c.converter.pid(),
                        c.converter.executable(), notice.message, notice.code);
        }
      }
      for (auto& [crc, bytes] : events.cubins) {
        ++stats_.cubins;
        if (!sass_available_ || cubins_seen_.contains(crc)) {
          continue;
        }
        std::lock_guard<std::mutex> lock(mu_);
        if (sass_queue_.size() >= options_.max_sass_queue) {
          ++stats_.sass_failed;
          continue;
        }
        if (cubins_seen_.size() >= 4096) {
          cubins_seen_.clear();  // bound; a cubin seen again is disassembled again
        }
        cubins_seen_.insert(crc);
        sass_queue_.emplace_back(crc, std::move(bytes));
        sass_cv_.notify_one();
      }
      if (c.closed) {
        return;
      }
    }
    if (c.decoder.buffered() > options_.max_buffered_bytes) {
      ++stats_.closed_overflow;
      WARPSCOPE_LOG_FIRST_N(WARNING, 10,
                            "CUDA profiler: closing pid {}: {} undecoded bytes exceed the {} "
                            "byte bound",
                            c.converter.pid(), c.decoder.buffered(), options_.max_buffered_bytes);
      Close(c);
      return;
    }
    if (static_cast<size_t>(n) < buf.size()) {
      return;  // drained for now
    }
  }
}

void ProfileListener::WarmSymbolizer(int32_t pid) {
  if (!options_.symbolize_on_arrival) {
    return;
  }
  // A process that connects is alive: read its maps now, so that stacks it sends just before
  // exiting still resolve (the symbolizer keeps an exited process's last maps).
  symbolizer_->InvalidateProcess(pid);
  (void)symbolizer_->Symbolize(pid, {});
}

void ProfileListener::SymbolizeOnArrival(int32_t pid, const std::vector<uint64_t>& pcs) {
  std::vector<uint64_t> lookups;
  lookups.reserve(pcs.size());
  for (uint64_t pc : pcs) {
    lookups.push_back(pc > 0 ? pc - 1 : pc);
  }
  (void)symbolizer_->Symbolize(pid, lookups);
}

void ProfileListener::Queue(Connection& c, const wire::Control& control) {
  std::string frame;
  wire::Encode(control, &frame);
  if (c.out.size() - c.out_pos + frame.size() > options_.max_output_bytes) {
    ++stats_.controls_dropped;
    return;
  }
  if (c.out_pos > 0) {
    c.out.erase(0, c.out_pos);
    c.out_pos = 0;
  }
  c.out += frame;
  ++stats_.controls_sent;
  WriteTo(c);
}

void ProfileListener::WriteTo(Connection& c) {
  while (c.out_pos < c.out.size()) {
    const ssize_t n =
        send(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      c.out_pos += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return;
    }
    // The peer no longer reads (gone, or shut its side): drop what is queued so that POLLOUT is
    // not asked for again; the read side sees the end and closes.
    ++stats_.controls_dropped;
    break;
  }
  c.out.clear();
  c.out_pos = 0;
}

void ProfileListener::Close(Connection& c) {
  if (c.closed) {
    return;
  }
  ListenerInputSink sink = InputSink();
  c.converter.OnClose(sink);
  closed_unnamed_ += c.converter.stats().unnamed_kernels;
  closed_cubins_dropped_ += c.converter.stats().cubins_dropped;
  if (c.live_pid > 0) {
    auto& live = c.nccl ? nccl_live_by_pid_ : live_by_pid_;
    auto it = live.find(c.live_pid);
    if (it != live.end() && --it->second <= 0) {
      live.erase(it);
      (c.nccl ? nccl_closed_pids_ : closed_pids_).push_back(c.live_pid);
    }
    c.live_pid = 0;
  }
  close(c.fd);
  c.closed = true;
  ++stats_.closed;
}

void ProfileListener::HandleRequests() {
  std::vector<std::unique_ptr<Request>> requests;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests.swap(requests_);
  }
  for (auto& r : requests) {
    if (!r->window) {
      bool matched = false;
      for (auto& c : connections_) {
        if (c->closed || c->live_pid == 0 || (r->pid && *r->pid != c->live_pid) ||
            !ControlApplies(c->nccl, r->control.op)) {
          continue;
        }
        matched = true;
        Queue(*c, r->control);
      }
      if (!matched) {
        ++stats_.controls_dropped;
      }
      continue;
    }
    ListenerInputSink sink = InputSink();
    for (auto& c : connections_) {
      if (!c->closed) {
        c->converter.OnWindowBoundary(sink);
      }
    }
    std::vector<profiling::WindowProfile> profiles = builder_->FinishWindow(r->start_ns, r->end_ns);
    nccl_.FinishWindow(r->start_ns, r->end_ns);
    CollectSteps(r->end_ns);
    steps_.FinishWindow();
    ++stats_.windows;
    SnapshotMetrics();
    for (int32_t pid : nccl_closed_pids_) {
      if (!nccl_live_by_pid_.contains(pid)) {
        nccl_.ForgetProcess(pid);
      }
      if (!nccl_live_by_pid_.contains(pid) && !live_by_pid_.contains(pid)) {
        ForgetSteps(pid);
      }
    }
    nccl_closed_pids_.clear();
    for (int32_t pid : closed_pids_) {
      if (!live_by_pid_.contains(pid)) {
        if (!nccl_live_by_pid_.contains(pid)) {
          ForgetSteps(pid);
        }
        builder_->ForgetProcess(pid);
        notices_logged_.erase(pid);
        ++stats_.processes_forgotten;
      }
    }
    closed_pids_.clear();
    Publish();  // stats include this window when the caller sees it
    r->promise.set_value(std::move(profiles));
  }
}

void ProfileListener::HandleSass() {
  if (!sass_available_) {
    return;
  }
  std::vector<std::pair<uint64_t, base::Result<profiling::FunctionSass>>> results;
  {
    std::lock_guard<std::mutex> lock(mu_);
    results.swap(sass_results_);
  }
  for (auto& [crc, listing] : results) {
    if (listing) {
      builder_->AddSass(profiling::ToSassMap(crc, *listing));
      ++stats_.sass_done;
    } else {
      ++stats_.sass_failed;
      WARPSCOPE_LOG_FIRST_N(WARNING, 5, "CUDA profiler: cannot disassemble cubin {:016x}: {}", crc,
                            listing.error().message());
    }
  }
}

void ProfileListener::SassWorker() {
  profiling::SassDisassembler disassembler(options_.sass);
  while (true) {
    std::pair<uint64_t, std::string> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      sass_cv_.wait(lock, [&] { return stopping_ || !sass_queue_.empty(); });
      if (stopping_) {
        return;
      }
      job = std::move(sass_queue_.front());
      sass_queue_.erase(sass_queue_.begin());
    }
    auto listing = disassembler.DisassembleBytes(job.second);
    {
      std::lock_guard<std::mutex> lock(mu_);
      sass_results_.emplace_back(job.first, std::move(listing));
    }
    uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof(one));
  }
}

ListenerInputSink ProfileListener::InputSink() {
  return ListenerInputSink(builder_.get(), &steps_, [this](const ProcessDesc& process) {
    if (steps_.HasProcess(process.pid)) {
      return;  // its environment was read once, at its first Hello
    }
    model::ProcessInfo info;
    info.pid = process.pid;
    info.container_pid = process.pid;
    info.start_ticks = process.start_ticks;
    info.executable = process.executable.substr(process.executable.rfind('/') + 1);
    info.executable_path = process.executable;
    ProcessEnviron environ = ReadProcessEnviron(options_.symbolizer.host_root, process.pid);
    info.job = std::move(environ.job);
    steps_.AddProcess(info, std::move(environ.step_range));
  });
}

void ProfileListener::SnapshotMetrics() {
  last_snapshot_ = std::chrono::steady_clock::now();
  CollectSteps(RealtimeNowNs());
  auto recorded = std::make_shared<RecordedSamples>();
  builder_->EmitSelfMetrics(*recorded);
  nccl_.EmitMetrics(*recorded);
  steps_.EmitMetrics(*recorded);
  std::lock_guard<std::mutex> lock(mu_);
  metrics_ = std::move(recorded);
}

void ProfileListener::Publish() {
  Stats s = stats_;
  s.open = 0;
  s.unnamed_kernels = closed_unnamed_;
  s.cubins_dropped += closed_cubins_dropped_;
  std::vector<int32_t> pids;
  for (const auto& c : connections_) {
    if (c->closed) {
      continue;
    }
    ++s.open;
    s.unnamed_kernels += c->converter.stats().unnamed_kernels;
    s.cubins_dropped += c->converter.stats().cubins_dropped;
    if (c->live_pid > 0) {
      pids.push_back(c->live_pid);
    }
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  {
    std::lock_guard<std::mutex> lock(mu_);
    published_ = s;
    published_pids_ = std::move(pids);
  }
  changed_.notify_all();
}

}  // namespace warpscope::agent::cuda_profiler
