// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/cpu_sampler.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <filesystem>

#include "agent/sources/cpu_profiler/cpu_window.h"
#include "agent/sources/cpu_profiler/kernel_symbols.h"
#include "agent/sources/cpu_profiler/perf_records.h"
#include "agent/sources/cpu_profiler/process_table.h"
#include "agent/sources/cpu_profiler/unwinder.h"
#include "base/file_util.h"
#include "base/logging.h"
#include "profiling/symbolizer.h"

namespace warpscope::agent::cpu_profiler {
namespace {

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

struct Event {
  std::unique_ptr<PerfRing> ring;
  int pid = -1;  // -1 for a per-CPU event
};

// The numeric directory names of `dir` (pids under /proc, tids under /proc/<pid>/task).
std::vector<uint32_t> NumericEntries(const std::string& dir) {
  std::vector<uint32_t> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    char* stop = nullptr;
    const unsigned long n = std::strtoul(name.c_str(), &stop, 10);
    if (!name.empty() && stop != nullptr && *stop == '\0') {
      out.push_back(static_cast<uint32_t>(n));
    }
  }
  return out;
}

}  // namespace

struct CpuSampler::State {
  Options options;
  PerfEventApi& api;
  PythonStackSource& python;
  int wake_fd = -1;
  std::vector<Event> events;
  std::set<uint32_t> fallback_pids;  // processes with per-thread events
  std::set<uint32_t> fallback_tids;  // threads with an event
  perf_event_attr fallback_attr{};

  // Owned by the sampler thread once it runs.
  ProcessTable table;
  Unwinder unwinder;
  profiling::Symbolizer symbolizer;
  PerfMaps perf_maps;
  KernelSymbols kernel;
  CpuWindow window;
  std::vector<SampleRecord> pending;  // samples of the current wakeup, after its records
  std::vector<TaskRecord> exits;      // exits of the current wakeup, after its samples
  Stats local;

  struct Request {
    int64_t start_ns = 0;
    int64_t end_ns = 0;
    std::promise<std::vector<profiling::WindowProfile>> promise;
  };
  mutable std::mutex mu;
  std::deque<Request> requests;              // guarded by mu
  std::optional<std::set<uint32_t>> filter;  // guarded by mu
  Stats published;                           // guarded by mu
  bool stop = false;                         // guarded by mu

  State(Options o, PerfEventApi& a, PythonStackSource& p)
      : options(std::move(o)),
        api(a),
        python(p),
        table(options.host_root, options.max_processes, options.identities.get()),
        unwinder({options.host_root, options.max_unwind_processes, 256,
                  [this](uint32_t pid, uint64_t address) { return perf_maps.Find(pid, address); }}),
        // Perf maps are read by `perf_maps`, bounded and once per window.
        symbolizer(profiling::Symbolizer::Options{options.host_root, "", 512, 1024, false}),
        perf_maps(PerfMaps::Options{options.host_root}),
        window(options.formats),
        filter(options.pids) {}
  // Late symbolization: the symbolizer parses the binaries a process's samples run in while the
  // process runs (through /proc/<pid>/root, which is gone once it exited), and keeps them until
  // the process is dropped after the window holding its samples was built. Only the mappings
  // the sample's pcs fall in, each once per mapping generation: the same files the window's
  // build would parse (cached by file and build id, shared across processes), parsed earlier.
  void ParseBinaries(ProcessInfo& process, const std::vector<uint64_t>& pcs) {
    if (process.maps.empty() || pcs.empty()) {
      return;
    }
    if (process.symbols_generation != process.maps_generation) {
      process.symbols_generation = process.maps_generation;
      process.symbols_parsed.assign(process.maps.size(), false);
      symbolizer.SetProcessMaps(static_cast<pid_t>(process.pid), process.maps);
    }
    std::vector<uint64_t> fresh;
    for (uint64_t pc : pcs) {
      auto it =
          std::upper_bound(process.maps.begin(), process.maps.end(), pc,
                           [](uint64_t a, const profiling::MapEntry& m) { return a < m.start; });
      if (it == process.maps.begin() || pc >= (it - 1)->end) {
        continue;
      }
      const size_t i = static_cast<size_t>(it - 1 - process.maps.begin());
      const std::string& path = process.maps[i].path;
      if (!process.symbols_parsed[i] && !path.empty() && path[0] == '/') {
        process.symbols_parsed[i] = true;
        fresh.push_back(pc);
      }
    }
    if (!fresh.empty()) {
      symbolizer.Symbolize(static_cast<pid_t>(process.pid), fresh);
    }
  }

  ~State() {
    if (wake_fd >= 0) {
      close(wake_fd);
    }
  }

  // Per-thread events for the threads of `pid` that have none yet. The kernel refuses to map
  // the ring of an inherited per-task event (perf_mmap: cpu == -1 with inherit), so threads
  // started later are picked up here at the next window instead.
  void OpenProcess(uint32_t pid) {
    fallback_pids.insert(pid);
    for (uint32_t tid : NumericEntries(fmt::format("{}/proc/{}/task", options.host_root, pid))) {
      if (!fallback_tids.insert(tid).second) {
        continue;
      }
      if (events.size() >= options.max_fallback_events) {
        WARPSCOPE_LOG_FIRST_N(WARNING, 1,
                              "CPU profiler: {} per-thread events open (the bound); further "
                              "threads are not sampled",
                              events.size());
        return;
      }
      auto ring = api.Open(fallback_attr, static_cast<int>(tid), -1, options.ring_pages);
      if (ring) {
        events.push_back({std::move(*ring), static_cast<int>(tid)});
      } else if (ring.error().code() != base::StatusCode::kNotFound) {
        WARPSCOPE_LOG_FIRST_N(WARNING, 5, "CPU profiler: pid {} is not sampled: {}", pid,
                              ring.error().message());
      }
    }
  }

  // The processes the fallback samples: the selected ones, else those of our effective uid.
  std::vector<uint32_t> FallbackCandidates() {
    std::optional<std::set<uint32_t>> selected;
    {
      std::lock_guard lock(mu);
      selected = filter;
    }
    if (selected) {
      return {selected->begin(), selected->end()};
    }
    std::vector<uint32_t> mine;
    const uid_t uid = geteuid();
    for (uint32_t pid : NumericEntries(options.host_root + "/proc")) {
      struct stat st;
      const std::string dir = fmt::format("{}/proc/{}", options.host_root, pid);
      if (stat(dir.c_str(), &st) == 0 && st.st_uid == uid) {
        mine.push_back(pid);
      }
    }
    return mine;
  }
};

std::string CpuSampler::PrivilegeMessage(const std::string& host_root,
                                         const base::Status& refused) {
  std::string paranoid = "unknown";
  if (auto text = base::ReadFile(host_root + "/proc/sys/kernel/perf_event_paranoid")) {
    paranoid = *text;
    while (!paranoid.empty() && (paranoid.back() == '\n' || paranoid.back() == ' ')) {
      paranoid.pop_back();
    }
  }
  return fmt::format(
      "CPU profiler: the kernel refused system-wide sampling ({}; kernel.perf_event_paranoid={}, "
      "agent euid {}). Profiling only the processes this agent may profile (its own user's, "
      "or --cpu-profile-pids). To profile every process: run the agent as root or grant it "
      "CAP_PERFMON (Linux 5.8+; CAP_SYS_ADMIN before), or `sysctl kernel.perf_event_paranoid=0` "
      "(-1 also lifts the mlock limit)",
      refused.message(), paranoid, geteuid());
}

base::Result<std::unique_ptr<CpuSampler>> CpuSampler::Start(Options options, PerfEventApi& api,
                                                            PythonStackSource& python) {
  auto state = std::make_unique<State>(std::move(options), api, python);
  State& s = *state;
  s.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s.wake_fd < 0) {
    return base::Error(base::Internal("CPU profiler: eventfd: {}", std::strerror(errno)));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(std::vector<int> cpus, api.OnlineCpus());
  const perf_event_attr attr = BuildSamplingAttr(s.options.sampling);
  std::optional<base::Status> refused;
  for (int cpu : cpus) {
    auto ring = api.Open(attr, -1, cpu, s.options.ring_pages);
    if (ring) {
      s.events.push_back({std::move(*ring), -1});
      continue;
    }
    if (ring.error().code() == base::StatusCode::kPermissionDenied) {
      refused = ring.error();
      break;
    }
    WARPSCOPE_LOG(WARNING, "CPU profiler: CPU {} is not sampled: {}", cpu, ring.error().message());
  }
  s.local.system_wide = !refused.has_value();
  if (refused) {
    s.events.clear();
    WARPSCOPE_LOG(WARNING, "{}", PrivilegeMessage(s.options.host_root, *refused));
    s.fallback_attr = BuildSamplingAttr(s.options.sampling);
    // Probe kernel frames on our own process first: perf_event_paranoid >= 2 forbids them.
    auto probe = api.Open(s.fallback_attr, static_cast<int>(getpid()), -1, 1);
    if (!probe && probe.error().code() == base::StatusCode::kPermissionDenied) {
      s.fallback_attr.exclude_kernel = 1;
      s.fallback_attr.exclude_callchain_kernel = 1;
      s.local.kernel_frames = false;
      WARPSCOPE_LOG(WARNING,
                    "CPU profiler: kernel frames are not sampled (perf_event_paranoid >= 2 "
                    "without CAP_PERFMON); `sysctl kernel.perf_event_paranoid=1` allows them");
    }
    for (uint32_t pid : s.FallbackCandidates()) {
      s.OpenProcess(pid);
    }
  }
  s.local.events = s.events.size();
  if (s.events.empty()) {
    return base::Error(
        base::PermissionDenied("CPU profiler: no sampling event could be opened{}",
                               refused ? fmt::format(" ({})", refused->message()) : std::string()));
  }
  std::string warning;
  s.kernel = KernelSymbols::Load(s.options.host_root, &warning);
  if (!warning.empty()) {
    WARPSCOPE_LOG(WARNING, "CPU profiler: {}", warning);
  }
  s.published = s.local;
  WARPSCOPE_LOG(INFO, "CPU profiler: {} events ({}), {} Hz, {} bytes of stack per sample",
                s.events.size(), s.local.system_wide ? "one per CPU" : "per thread",
                s.options.sampling.frequency_hz, s.options.sampling.stack_bytes);
  std::unique_ptr<CpuSampler> sampler(new CpuSampler(std::move(state)));
  sampler->thread_ = std::thread([p = sampler.get()] { p->Loop(); });
  return sampler;
}

CpuSampler::CpuSampler(std::unique_ptr<State> state) : state_(std::move(state)) {}

CpuSampler::~CpuSampler() { Stop(); }

void CpuSampler::Wake() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(state_->wake_fd, &one, sizeof(one));
}

std::future<std::vector<profiling::WindowProfile>> CpuSampler::FinishWindow(int64_t start_ns,
                                                                            int64_t end_ns) {
  State::Request request;
  request.start_ns = start_ns;
  request.end_ns = end_ns;
  auto future = request.promise.get_future();
  {
    std::lock_guard lock(state_->mu);
    if (state_->stop) {
      request.promise.set_value({});
      return future;
    }
    state_->requests.push_back(std::move(request));
  }
  Wake();
  return future;
}

void CpuSampler::SetPidFilter(std::optional<std::set<uint32_t>> pids) {
  std::lock_guard lock(state_->mu);
  state_->filter = std::move(pids);
}

CpuSampler::Stats CpuSampler::stats() const {
  std::lock_guard lock(state_->mu);
  return state_->published;
}

void CpuSampler::Stop() {
  {
    std::lock_guard lock(state_->mu);
    if (state_->stop && !thread_.joinable()) {
      return;
    }
    state_->stop = true;
  }
  Wake();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void CpuSampler::Loop() {
  pthread_setname_np(pthread_self(), "ws-cpu-sampler");
  State& s = *state_;
  std::vector<pollfd> fds;
  // The selection as of this wakeup: records of processes not selected are not tracked (a
  // process selected later is read from /proc at its first sample).
  std::optional<std::set<uint32_t>> filter;
  auto selected = [&](uint32_t pid) { return !filter || filter->count(pid) > 0; };
  auto handle_record = [&](std::span<const uint8_t> bytes) {
    auto record = ParseRecord(bytes);
    if (!record) {
      ++s.local.bad_records;
      WARPSCOPE_LOG_FIRST_N(WARNING, 3, "CPU profiler: {}", record.error().message());
      return;
    }
    if (auto* sample = std::get_if<SampleRecord>(&*record)) {
      s.pending.push_back(std::move(*sample));
    } else if (auto* mmap = std::get_if<MmapRecord>(&*record)) {
      if (selected(mmap->pid)) {
        s.table.Apply(*mmap);
      }
    } else if (auto* comm = std::get_if<CommRecord>(&*record)) {
      if (selected(comm->pid)) {
        s.table.Apply(*comm);
      }
      if (comm->exec) {
        s.python.ForgetProcess(comm->pid);  // another image: its interpreter, if any, is new
      }
    } else if (auto* task = std::get_if<TaskRecord>(&*record)) {
      if (!task->exit && s.options.follow_children && filter && task->pid != task->ppid &&
          filter->count(task->ppid) > 0 && filter->insert(task->pid).second) {
        std::lock_guard lock(s.mu);
        if (s.filter) {
          s.filter->insert(task->pid);  // kept at the next wakeup's copy, and by the fallback
        }
      }
      if (task->exit) {
        // After the samples read with it: a process first sampled in the wakeup that saw it
        // exit is then known to the table, and marked exited.
        s.exits.push_back(*task);
      } else if (selected(task->pid)) {
        s.table.Apply(*task);
      }
    } else if (auto* lost = std::get_if<LostRecord>(&*record)) {
      s.local.lost += lost->lost;
    }
  };
  auto handle_sample = [&](SampleRecord& r) {
    if (r.pid == 0) {
      return;  // the idle task
    }
    if (!selected(r.pid)) {
      ++s.local.filtered;
      return;
    }
    UnwoundSample u;
    u.pid = r.pid;
    u.tid = r.tid;
    u.period_ns = r.period;
    u.kernel_ips = std::move(r.kernel_ips);
    ProcessInfo& process = s.table.Get(r.pid);
    if (r.has_user_regs) {
      const auto t0 = std::chrono::steady_clock::now();
      UnwindResult unwound = s.unwinder.Unwind(process, r.tid, r.regs, r.stack);
      s.local.unwind_ns +=
          static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::steady_clock::now() - t0)
                                    .count());
      s.ParseBinaries(process, unwound.pcs);
      u.user_pcs = std::move(unwound.pcs);
      u.truncated = !unwound.complete;
      if (u.truncated) {
        ++s.local.truncated;
        ++s.local.truncated_by_binary[unwound.stopped_in.empty()
                                          ? std::string("[unknown]")
                                          : std::string(Basename(unwound.stopped_in))];
        u.stopped_in = std::move(unwound.stopped_in);
      }
    }
    u.python = s.python.ReadFrames(r.pid, r.tid);
    ++s.local.samples;
    s.window.Add(std::move(u));
  };

  while (true) {
    fds.clear();
    fds.push_back({s.wake_fd, POLLIN, 0});
    for (const Event& e : s.events) {
      fds.push_back({e.ring->fd(), POLLIN, 0});
    }
    poll(fds.data(), fds.size(), 250);
    {
      std::lock_guard lock(s.mu);
      filter = s.filter;
    }
    uint64_t drained = 0;
    [[maybe_unused]] ssize_t n = read(s.wake_fd, &drained, sizeof(drained));
    for (size_t i = 0; i < s.events.size(); ++i) {
      s.events[i].ring->Drain(handle_record);
    }
    // Per-thread events of exited threads hang up: close them (their records were read).
    for (size_t i = s.events.size(); i-- > 0;) {
      if (fds[i + 1].fd >= 0 && (fds[i + 1].revents & POLLHUP) != 0 && s.events[i].pid != -1) {
        s.events.erase(s.events.begin() + static_cast<long>(i));
      }
    }
    std::deque<State::Request> requests;
    bool stop = false;
    {
      std::lock_guard lock(s.mu);
      requests.swap(s.requests);
      stop = s.stop;
    }
    for (SampleRecord& r : s.pending) {
      handle_sample(r);
    }
    s.pending.clear();
    for (const TaskRecord& exit : s.exits) {
      if (selected(exit.pid)) {
        s.table.Apply(exit);
      }
      s.fallback_tids.erase(exit.tid);
      if (exit.tid == exit.pid) {
        s.python.ForgetProcess(exit.pid);  // its samples hold their Python frames already
      }
    }
    s.exits.clear();
    auto publish = [&] {
      s.local.events = s.events.size();
      s.local.python = s.python.stats();
      std::lock_guard lock(s.mu);
      s.published = s.local;
    };
    for (State::Request& request : requests) {
      SymbolSources sources{
          s.table, s.symbolizer, s.kernel, s.python, s.options.host_root, &s.perf_maps};
      std::vector<profiling::WindowProfile> profiles =
          s.window.Build(request.start_ns, request.end_ns, sources);
      ++s.local.windows;
      publish();  // what the window holds is counted once its future is ready
      request.promise.set_value(std::move(profiles));
      if (s.options.identities != nullptr) {
        s.options.identities->BeginCycle();  // forgets the processes that are gone
      }
      // Exited processes were symbolized with the window: now they can go.
      for (uint32_t pid : s.table.Collect({})) {
        s.unwinder.Forget(pid);
        s.symbolizer.ForgetProcess(static_cast<pid_t>(pid));
        s.perf_maps.Forget(pid);
        s.python.ForgetProcess(pid);
        s.fallback_pids.erase(pid);
      }
      if (!s.local.system_wide) {
        for (uint32_t pid : s.FallbackCandidates()) {
          s.OpenProcess(pid);  // processes that started since
        }
      }
    }
    publish();
    if (stop) {
      return;
    }
  }
}

}  // namespace warpscope::agent::cpu_profiler
