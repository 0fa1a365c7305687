// SPDX-License-Identifier: Apache-2.0
#include "sim/nvml/host_tree.h"

#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <vector>

namespace warpscope::sim {
namespace {

namespace fs = std::filesystem;

constexpr size_t kCommBytes = 15;  // TASK_COMM_LEN - 1

base::Status WriteFailed(const std::string& path, int err) {
  return base::Unavailable("cannot write the simulated host's {}: {}", path, strerror(err));
}

// Writes `data` beside `path` and renames it over `path`, so readers see the old or new file.
base::Status WriteAtomically(const std::string& path, std::string_view data) {
  const fs::path target(path);
  const std::string tmp = (target.parent_path() / ("." + target.filename().string() + ".tmp"));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return WriteFailed(tmp, errno);
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      return WriteFailed(tmp, err);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return WriteFailed(tmp, errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return WriteFailed(path, errno);
  return base::OkStatus();
}

base::Status MakeDirs(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return base::Unavailable("cannot create {}: {}", path, ec.message());
  return base::OkStatus();
}

uint64_t Ticks(double seconds) {
  return static_cast<uint64_t>(std::floor(std::max(seconds, 0.0) * kHostTicksPerSecond));
}

uint64_t KiB(double bytes) { return static_cast<uint64_t>(std::max(bytes, 0.0) / 1024); }

// Splits `total` over `parts` so that the parts sum to it exactly.
uint64_t Share(uint64_t total, size_t parts, size_t k) {
  const auto wide = static_cast<unsigned __int128>(total);
  return static_cast<uint64_t>(wide * (k + 1) / parts - wide * k / parts);
}

std::string Comm(const ProcessSpec& proc) { return proc.name.substr(0, kCommBytes); }

// The cgroup path the agent's resolver reads a container and pod from, as the systemd cgroup
// driver names them (containerd under Kubernetes, Docker otherwise).
std::string CgroupPath(const HostProcessSpec& host) {
  if (!host.pod_uid.empty()) {
    std::string pod = host.pod_uid;
    std::replace(pod.begin(), pod.end(), '-', '_');
    return fmt::format("/kubepods.slice/kubepods-pod{}.slice/cri-containerd-{}.scope", pod,
                       host.container_id);
  }
  if (!host.container_id.empty()) {
    return fmt::format("/system.slice/docker-{}.scope", host.container_id);
  }
  return host.uid == 0 ? "/system.slice" : fmt::format("/user.slice/user-{}.slice", host.uid);
}

}  // namespace

HostTree::HostTree(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  const long page = sysconf(_SC_PAGESIZE);
  if (page > 0) page_size_ = page;
}

base::Status HostTree::Update(Simulation& sim, double t) {
  if (!dirs_made_) {
    WARPSCOPE_RETURN_IF_ERROR(MakeDirs(root_ + "/proc/net"));
    WARPSCOPE_RETURN_IF_ERROR(MakeDirs(root_ + "/etc"));
    dirs_made_ = true;
  }
  WARPSCOPE_RETURN_IF_ERROR(WriteHost(sim, t));
  std::set<unsigned> running;
  for (size_t i = 0; i < sim.host_processes().size(); ++i) {
    const ProcessSpec& proc = sim.host_process(i);
    if (t < proc.start_s || t >= proc.stop_s) continue;
    running.insert(proc.pid);
    if (present_.contains(proc.pid)) {
      const std::string dir = fmt::format("{}/proc/{}", root_, proc.pid);
      WARPSCOPE_RETURN_IF_ERROR(WriteProcessState(sim, i, t, dir, dir));
    } else {
      WARPSCOPE_RETURN_IF_ERROR(AddProcess(sim, i, t));
    }
  }
  for (unsigned pid : present_) {
    if (running.contains(pid)) continue;
    // Renamed away first: the pid is gone in one step, then its files are deleted.
    const std::string dir = fmt::format("{}/proc/{}", root_, pid);
    const std::string gone = fmt::format("{}/proc/.exited-{}", root_, pid);
    std::error_code ec;
    fs::remove_all(gone, ec);
    if (::rename(dir.c_str(), gone.c_str()) != 0) return WriteFailed(dir, errno);
    fs::remove_all(gone, ec);
    Forget(dir);
  }
  present_ = std::move(running);
  return base::OkStatus();
}

base::Status HostTree::WriteHost(Simulation& sim, double t) {
  const HostSpec& host = sim.scenario().host;
  const size_t n = sim.host_processes().size();
  double busy_s = 0;
  double cores_now = 0;
  double rss = 0;
  size_t running = 0;
  size_t runnable = 0;
  unsigned last_pid = 1;
  for (size_t i = 0; i < n; ++i) {
    busy_s += sim.HostCpuSeconds(i, t);
    const ProcessSpec& proc = sim.host_process(i);
    if (t < proc.start_s || t >= proc.stop_s) continue;
    const double cores = sim.HostCpu(i, t);
    cores_now += cores;
    rss += sim.HostRss(i, t);
    ++running;
    runnable += cores >= 0.5 ? 1 : 0;
    last_pid = std::max(last_pid, proc.pid);
  }

  // All process time is user time; the rest of the CPUs' time since boot is idle.
  const uint64_t total = Ticks(host.cpus * (kHostBootLeadSeconds + std::max(t, 0.0)));
  const uint64_t user = std::min(Ticks(busy_s), total);
  const uint64_t idle = total - user;
  std::string stat = fmt::format("cpu  {} 0 0 {} 0 0 0 0 0 0\n", user, idle);
  for (size_t k = 0; k < host.cpus; ++k) {
    stat += fmt::format("cpu{} {} 0 0 {} 0 0 0 0 0 0\n", k, Share(user, host.cpus, k),
                        Share(idle, host.cpus, k));
  }
  stat += fmt::format("intr 0\nctxt 0\nbtime {}\nprocesses {}\nprocs_running {}\nprocs_blocked 0\n",
                      kHostBootTimeSeconds, n, runnable);
  WARPSCOPE_RETURN_IF_ERROR(WriteIfChanged(root_ + "/proc/stat", std::move(stat)));

  const double used = std::min(host.memory_base + rss, host.memory_total);
  const uint64_t total_kib = KiB(host.memory_total);
  const uint64_t free_kib = total_kib - std::min(total_kib, KiB(used));
  WARPSCOPE_RETURN_IF_ERROR(WriteIfChanged(
      root_ + "/proc/meminfo",
      fmt::format("MemTotal:       {} kB\nMemFree:        {} kB\nMemAvailable:   {} kB\n"
                  "Buffers:        0 kB\nCached:         0 kB\nSwapCached:     0 kB\n"
                  "SwapTotal:      0 kB\nSwapFree:       0 kB\n",
                  total_kib, free_kib, free_kib)));
  // The load is the cores in use now (no kernel averaging), the same in all three columns.
  WARPSCOPE_RETURN_IF_ERROR(WriteIfChanged(
      root_ + "/proc/loadavg", fmt::format("{:.2f} {:.2f} {:.2f} {}/{} {}\n", cores_now, cores_now,
                                           cores_now, runnable, running, last_pid)));
  WARPSCOPE_RETURN_IF_ERROR(WriteIfChanged(root_ + "/proc/diskstats", ""));
  WARPSCOPE_RETURN_IF_ERROR(WriteIfChanged(
      root_ + "/proc/net/dev",
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
      "drop fifo colls carrier compressed\n"));

  if (!passwd_written_) {
    std::map<unsigned, std::string> users = {{0, "root"}};
    for (size_t i = 0; i < n; ++i) {
      const HostProcessSpec& h = *sim.host_process(i).host;
      users.emplace(h.uid, h.user);
    }
    std::string passwd;
    for (const auto& [uid, user] : users) {
      passwd += uid == 0 ? "root:x:0:0:root:/root:/bin/bash\n"
                         : fmt::format("{}:x:{}:{}::/home/{}:/bin/bash\n", user, uid, uid, user);
    }
    WARPSCOPE_RETURN_IF_ERROR(WriteAtomically(root_ + "/etc/passwd", passwd));
    passwd_written_ = true;
  }
  return base::OkStatus();
}

// Builds the directory under a name that is not a pid, then renames it into place.
base::Status HostTree::AddProcess(Simulation& sim, size_t i, double t) {
  const ProcessSpec& proc = sim.host_process(i);
  const HostProcessSpec& host = *proc.host;
  const std::string staging = fmt::format("{}/proc/.new-{}", root_, proc.pid);
  std::error_code ec;
  fs::remove_all(staging, ec);
  WARPSCOPE_RETURN_IF_ERROR(MakeDirs(staging));
  std::string cmdline;
  for (const std::string& arg : host.cmdline) {
    cmdline += arg;
    cmdline += '\0';
  }
  WARPSCOPE_RETURN_IF_ERROR(WriteAtomically(staging + "/cmdline", cmdline));
  WARPSCOPE_RETURN_IF_ERROR(WriteAtomically(staging + "/comm", Comm(proc) + "\n"));
  WARPSCOPE_RETURN_IF_ERROR(WriteAtomically(staging + "/cgroup", "0::" + CgroupPath(host) + "\n"));
  if (::symlink(host.exe.c_str(), (staging + "/exe").c_str()) != 0) {
    return WriteFailed(staging + "/exe", errno);
  }
  const std::string dir = fmt::format("{}/proc/{}", root_, proc.pid);
  Forget(dir);
  WARPSCOPE_RETURN_IF_ERROR(WriteProcessState(sim, i, t, staging, dir));
  fs::remove_all(dir, ec);  // left over from an earlier run in the same directory
  if (::rename(staging.c_str(), dir.c_str()) != 0) return WriteFailed(dir, errno);
  return base::OkStatus();
}

// stat and status: the parts that change over time.
base::Status HostTree::WriteProcessState(Simulation& sim, size_t i, double t,
                                         const std::string& dir, const std::string& live_dir) {
  const ProcessSpec& proc = sim.host_process(i);
  const HostProcessSpec& host = *proc.host;
  const uint64_t cpu_ticks = Ticks(sim.HostCpuSeconds(i, t));
  const uint64_t stime = cpu_ticks / 20;  // 5% in the kernel
  const uint64_t utime = cpu_ticks - stime;
  const double rss = sim.HostRss(i, t);
  const auto rss_pages = static_cast<uint64_t>(rss / static_cast<double>(page_size_));
  const uint64_t vsize = static_cast<uint64_t>(rss) + (uint64_t{4} << 30);
  const uint64_t start = Ticks(kHostBootLeadSeconds + proc.start_s);
  const bool running = sim.HostCpu(i, t) >= 0.5;
  const std::string comm = Comm(proc);
  // Fields 1-44 of proc(5); those the kernel zeroes or the agent ignores are 0.
  WARPSCOPE_RETURN_IF_ERROR(WriteIfChanged(
      live_dir + "/stat",
      fmt::format("{} ({}) {} 1 {} {} 0 -1 4194560 0 0 0 0 {} {} 0 0 20 0 {} 0 {} {} {} "
                  "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
                  proc.pid, comm, running ? 'R' : 'S', proc.pid, proc.pid, utime, stime,
                  host.threads, start, vsize, rss_pages),
      dir + "/stat"));
  return WriteIfChanged(
      live_dir + "/status",
      fmt::format("Name:\t{}\nUmask:\t0022\nState:\t{}\nTgid:\t{}\nNgid:\t0\nPid:\t{}\n"
                  "PPid:\t1\nUid:\t{}\t{}\t{}\t{}\nGid:\t{}\t{}\t{}\t{}\nNSpid:\t{}\n"
                  "VmRSS:\t{} kB\nThreads:\t{}\n",
                  comm, running ? "R (running)" : "S (sleeping)", proc.pid, proc.pid, host.uid,
                  host.uid, host.uid, host.uid, host.uid, host.uid, host.uid, host.uid, proc.pid,
                  KiB(rss), host.threads),
      dir + "/status");
}

base::Status HostTree::WriteIfChanged(const std::string& key, std::string data,
                                      const std::string& path) {
  auto it = written_.find(key);
  if (it != written_.end() && it->second == data) return base::OkStatus();
  WARPSCOPE_RETURN_IF_ERROR(WriteAtomically(path.empty() ? key : path, data));
  written_[key] = std::move(data);
  return base::OkStatus();
}

void HostTree::Forget(const std::string& dir) {
  const std::string prefix = dir + "/";
  for (auto it = written_.lower_bound(prefix);
       it != written_.end() && it->first.starts_with(prefix);) {
    it = written_.erase(it);
  }
}

}  // namespace warpscope::sim
