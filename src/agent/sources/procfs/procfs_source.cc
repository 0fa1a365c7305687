// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/procfs/procfs_source.h"

#include <dirent.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

#include "agent/sources/procfs/host_metrics.h"
#include "agent/sources/procfs/procfs_read.h"
#include "base/file_util.h"
#include "base/logging.h"

namespace warpscope::agent {
namespace hm = host_metrics;

namespace {

// /proc/stat is ~100 bytes per CPU plus the interrupt line (a few KB on large hosts); meminfo,
// diskstats and net/dev are a few KB. 4 MiB leaves room for thousands of CPUs and devices.
constexpr size_t kMaxProcFileBytes = 4 << 20;
// A stat line is ~300 bytes (comm is at most 15 bytes in the kernel); fields past 24 may be cut.
constexpr size_t kStatBufferBytes = 1024;
// Distinct device names remembered with their filter decision before the cache starts over.
constexpr size_t kMaxCachedDevices = 4096;

constexpr std::string_view kErrorNames[kProcfsErrorCount] = {
    "stat_unreadable",        "stat_malformed",       "meminfo_unreadable",
    "meminfo_malformed",      "loadavg_unreadable",   "loadavg_malformed",
    "diskstats_unreadable",   "diskstats_malformed",  "net_dev_unreadable",
    "net_dev_malformed",      "proc_list_unreadable", "process_stat_unreadable",
    "process_stat_malformed",
};

bool ParsePid(const char* name, int& pid) {
  if (name[0] < '1' || name[0] > '9') return false;
  const char* end = name;
  while (*end != '\0') ++end;
  auto [ptr, ec] = std::from_chars(name, end, pid);
  return ec == std::errc() && ptr == end;
}

std::string ReadHostName(const std::string& root) {
  std::string text;
  if (procfs::ReadFileBounded((root + "/proc/sys/kernel/hostname").c_str(), 256, text) == 0) {
    std::string_view name = base::TrimWhitespace(text);
    if (!name.empty()) return std::string(name);
  }
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof(buf) - 1) == 0 && buf[0] != '\0') return buf;
  return "localhost";
}

}  // namespace

std::string_view ProcfsErrorName(ProcfsError error) {
  size_t i = static_cast<size_t>(error);
  return i < kProcfsErrorCount ? kErrorNames[i] : std::string_view("unknown");
}

ProcfsSource::ProcfsSource(ProcfsSourceOptions options, const base::Clock& clock,
                           model::ProcessResolver& resolver, SourceErrorHook on_error)
    : options_(std::move(options)),
      clock_(clock),
      resolver_(resolver),
      on_error_(std::move(on_error)) {
  root_ = procfs::NormalizeRoot(options_.root);
  stat_path_ = root_ + "/proc/stat";
  meminfo_path_ = root_ + "/proc/meminfo";
  loadavg_path_ = root_ + "/proc/loadavg";
  diskstats_path_ = root_ + "/proc/diskstats";
  netdev_path_ = root_ + "/proc/net/dev";
  proc_dir_ = root_ + "/proc";
  long hz = options_.ticks_per_second > 0 ? options_.ticks_per_second : sysconf(_SC_CLK_TCK);
  ticks_per_second_ = hz > 0 ? static_cast<double>(hz) : 100.0;
  long page = options_.page_size > 0 ? options_.page_size : sysconf(_SC_PAGESIZE);
  page_size_ = page > 0 ? static_cast<double>(page) : 4096.0;
  for (size_t m = 0; m < procfs::kCpuModeCount; ++m) {
    mode_labels_[m].Set("mode", procfs::CpuModeName(m));
  }
}

ProcfsSource::~ProcfsSource() = default;

base::Status ProcfsSource::Start() {
  int err = procfs::ReadFileBounded(stat_path_.c_str(), kMaxProcFileBytes, text_);
  if (err != 0) {
    return base::Unavailable(
        "host metrics: cannot read {}: {}; mount the host's /proc under the host root directory "
        "(now '{}'), or turn host metrics off with --enable-host-metrics=false",
        stat_path_, base::ErrnoString(err), options_.root);
  }
  EnsureStarted();
  return base::OkStatus();
}

void ProcfsSource::EnsureStarted() {
  if (started_) return;
  started_ = true;
  host_id_ = options_.host_id.empty() ? ReadHostName(root_) : options_.host_id;
  host_entity_ = model::Entity();
  host_entity_.kind = model::EntityKind::kHost;
  host_entity_.id = host_id_;
  host_entity_.attributes.Set(model::attr::kHostName, host_id_);
  sys_block_available_ = access((root_ + "/sys/block").c_str(), F_OK) == 0;
}

void ProcfsSource::Stop() {
  started_ = false;
  have_prev_cpu_total_ = false;
  prev_cpu_cores_.clear();
  have_prev_scan_ = false;
  prev_procs_.clear();
}

void ProcfsSource::SetProcessesOfInterest(std::vector<model::ProcessIdentity> processes) {
  std::erase_if(processes, [](const model::ProcessIdentity& p) { return !p.known(); });
  std::sort(processes.begin(), processes.end());
  processes.erase(std::unique(processes.begin(), processes.end()), processes.end());
  of_interest_ = std::move(processes);
}

void ProcfsSource::Poll(base::TimePoint now, model::SampleSink& out) {
  EnsureStarted();
  out.AddEntity(host_entity_);
  PollCpu(out);
  PollLoad(out);
  PollMemory(out);
  PollDisks(out);
  PollNetwork(out);
  PollProcesses(out);
}

void ProcfsSource::CountError(ProcfsError error, std::string_view path, int err) {
  size_t i = static_cast<size_t>(error);
  ++errors_[i];
  if (on_error_) on_error_(ProcfsErrorName(error));
  if (error_logged_[i]) return;
  error_logged_[i] = true;
  if (err != 0) {
    WARPSCOPE_LOG(WARNING,
                  "host metrics: cannot read {}: {}; the metrics from it are skipped while it "
                  "stays unreadable (check that the host's /proc is mounted and readable by the "
                  "agent)",
                  path, base::ErrnoString(err));
  } else {
    WARPSCOPE_LOG(WARNING,
                  "host metrics: cannot parse {}; the metrics from it are skipped (unexpected "
                  "kernel format: please report it with the file's content)",
                  path);
  }
}

bool ProcfsSource::ReadProcFile(const std::string& path, ProcfsError error) {
  int err = procfs::ReadFileBounded(path.c_str(), kMaxProcFileBytes, text_);
  if (err != 0) {
    CountError(error, path, err);
    return false;
  }
  return true;
}

// ---- CPU --------------------------------------------------------------------------------------

const ProcfsSource::ModeLabels& ProcfsSource::CoreLabels(int cpu) {
  size_t index = static_cast<size_t>(cpu);
  while (core_labels_.size() <= index) {
    std::string number = std::to_string(core_labels_.size());
    ModeLabels& labels = core_labels_.emplace_back();
    for (size_t m = 0; m < procfs::kCpuModeCount; ++m) {
      labels[m].Set("cpu", number);
      labels[m].Set("mode", procfs::CpuModeName(m));
    }
  }
  return core_labels_[index];
}

void ProcfsSource::EmitUtilization(model::SampleSink& out, const model::MetricDesc& metric,
                                   const procfs::CpuTimes& before, const procfs::CpuTimes& after,
                                   const ModeLabels& labels) {
  std::array<double, procfs::kCpuModeCount> delta{};
  double sum = 0;
  for (size_t m = 0; m < procfs::kCpuModeCount; ++m) {
    // iowait (and on some kernels idle) can step backwards on NO_HZ systems; a negative step is
    // read as no time in that mode rather than as a huge unsigned delta.
    if (after.ticks[m] > before.ticks[m]) {
      delta[m] = static_cast<double>(after.ticks[m] - before.ticks[m]);
    }
    sum += delta[m];
  }
  if (sum <= 0) return;  // no tick elapsed (two polls within 1/USER_HZ): nothing to report
  for (size_t m = 0; m < procfs::kCpuModeCount; ++m) {
    out.AddValue(metric, host_id_, labels[m], delta[m] / sum);
  }
}

void ProcfsSource::PollCpu(model::SampleSink& out) {
  if (!ReadProcFile(stat_path_, ProcfsError::kStatUnreadable)) {
    have_prev_cpu_total_ = false;
    return;
  }
  if (!procfs::ParseCpuStat(text_, cpu_total_, cpu_cores_)) {
    CountError(ProcfsError::kStatMalformed, stat_path_, 0);
    have_prev_cpu_total_ = false;
    return;
  }
  logical_cpus_ = cpu_cores_.size();
  out.AddValue(hm::kCpuLogicalCount, host_id_, static_cast<double>(logical_cpus_));
  for (size_t m = 0; m < procfs::kCpuModeCount; ++m) {
    out.AddValue(hm::kCpuTime, host_id_, mode_labels_[m],
                 static_cast<double>(cpu_total_.ticks[m]) / ticks_per_second_);
  }
  if (have_prev_cpu_total_) {
    EmitUtilization(out, hm::kCpuUtilization, prev_cpu_total_, cpu_total_, mode_labels_);
  }
  prev_cpu_total_ = cpu_total_;
  have_prev_cpu_total_ = true;

  if (!options_.per_core_cpu) return;
  for (const procfs::CpuTimes& core : cpu_cores_) {
    const ModeLabels& labels = CoreLabels(core.cpu);
    for (size_t m = 0; m < procfs::kCpuModeCount; ++m) {
      out.AddValue(hm::kCpuCoreTime, host_id_, labels[m],
                   static_cast<double>(core.ticks[m]) / ticks_per_second_);
    }
    size_t index = static_cast<size_t>(core.cpu);
    if (index < prev_cpu_cores_.size() && prev_cpu_cores_[index].cpu == core.cpu) {
      EmitUtilization(out, hm::kCpuCoreUtilization, prev_cpu_cores_[index], core, labels);
    }
  }
  // Remember by cpu number: with CPU hotplug the line order and count change.
  for (procfs::CpuTimes& slot : prev_cpu_cores_) slot.cpu = -1;
  for (const procfs::CpuTimes& core : cpu_cores_) {
    size_t index = static_cast<size_t>(core.cpu);
    if (index >= prev_cpu_cores_.size()) prev_cpu_cores_.resize(index + 1);
    prev_cpu_cores_[index] = core;
  }
}

// ---- load, memory -----------------------------------------------------------------------------

void ProcfsSource::PollLoad(model::SampleSink& out) {
  if (!ReadProcFile(loadavg_path_, ProcfsError::kLoadavgUnreadable)) return;
  std::optional<procfs::LoadAvg> load = procfs::ParseLoadavg(text_);
  if (!load) {
    CountError(ProcfsError::kLoadavgMalformed, loadavg_path_, 0);
    return;
  }
  out.AddValue(hm::kLoad1m, host_id_, load->load1);
  out.AddValue(hm::kLoad5m, host_id_, load->load5);
  out.AddValue(hm::kLoad15m, host_id_, load->load15);
}

void ProcfsSource::PollMemory(model::SampleSink& out) {
  if (!ReadProcFile(meminfo_path_, ProcfsError::kMeminfoUnreadable)) return;
  std::optional<procfs::MemInfo> mem = procfs::ParseMeminfo(text_);
  if (!mem) {
    CountError(ProcfsError::kMeminfoMalformed, meminfo_path_, 0);
    return;
  }
  uint64_t total = *mem->mem_total;
  // Kernels before 3.14 lack MemAvailable; free + buffers + page cache is the classic estimate
  // (it overstates a little: not all cache is reclaimable).
  uint64_t available = mem->mem_available.value_or(*mem->mem_free + mem->buffers.value_or(0) +
                                                   mem->cached.value_or(0));
  uint64_t used = total > available ? total - available : 0;
  out.AddValue(hm::kMemoryTotal, host_id_, static_cast<double>(total));
  out.AddValue(hm::kMemoryAvailable, host_id_, static_cast<double>(available));
  out.AddValue(hm::kMemoryUsed, host_id_, static_cast<double>(used));
  out.AddValue(hm::kMemoryFree, host_id_, static_cast<double>(*mem->mem_free));
  if (mem->cached) out.AddValue(hm::kMemoryCached, host_id_, static_cast<double>(*mem->cached));
  if (mem->buffers) {
    out.AddValue(hm::kMemoryBuffers, host_id_, static_cast<double>(*mem->buffers));
  }
  if (total > 0) {
    out.AddValue(hm::kMemoryUtilization, host_id_,
                 static_cast<double>(used) / static_cast<double>(total));
  }
  if (mem->swap_total && mem->swap_free) {
    uint64_t swap_total = *mem->swap_total;
    uint64_t swap_free = std::min(*mem->swap_free, swap_total);
    out.AddValue(hm::kSwapTotal, host_id_, static_cast<double>(swap_total));
    out.AddValue(hm::kSwapFree, host_id_, static_cast<double>(swap_free));
    out.AddValue(hm::kSwapUsed, host_id_, static_cast<double>(swap_total - swap_free));
  }
}

// ---- disks, network ---------------------------------------------------------------------------

const ProcfsSource::DiskEntry& ProcfsSource::Disk(std::string_view device) {
  auto it = disk_entries_.find(device);
  if (it != disk_entries_.end()) return it->second;
  if (disk_entries_.size() >= kMaxCachedDevices) disk_entries_.clear();
  DiskEntry entry;
  entry.include = !procfs::MatchesAnyPattern(device, options_.disk_exclude);
  if (entry.include && !options_.disk_partitions) {
    // /sys/block lists whole disks only; partitions live below their disk.
    bool whole_disk = sys_block_available_
                          ? access((root_ + "/sys/block/" + std::string(device)).c_str(), F_OK) == 0
                          : !procfs::LooksLikePartition(device);
    entry.include = whole_disk;
  }
  entry.device.Set("device", device);
  entry.read = entry.device;
  entry.read.Set("direction", "read");
  entry.write = entry.device;
  entry.write.Set("direction", "write");
  return disk_entries_.emplace(std::string(device), std::move(entry)).first->second;
}

void ProcfsSource::PollDisks(model::SampleSink& out) {
  if (!ReadProcFile(diskstats_path_, ProcfsError::kDiskstatsUnreadable)) return;
  if (!procfs::ParseDiskstats(text_, disks_)) {
    CountError(ProcfsError::kDiskstatsMalformed, diskstats_path_, 0);
  }
  // diskstats counts in 512-byte sectors whatever the device's logical block size.
  constexpr double kSectorBytes = 512;
  for (const procfs::DiskStats& d : disks_) {
    const DiskEntry& entry = Disk(d.device);
    if (!entry.include) continue;
    out.AddValue(hm::kDiskIo, host_id_, entry.read,
                 static_cast<double>(d.sectors_read) * kSectorBytes);
    out.AddValue(hm::kDiskIo, host_id_, entry.write,
                 static_cast<double>(d.sectors_written) * kSectorBytes);
    out.AddValue(hm::kDiskOperations, host_id_, entry.read, static_cast<double>(d.reads_completed));
    out.AddValue(hm::kDiskOperations, host_id_, entry.write,
                 static_cast<double>(d.writes_completed));
    out.AddValue(hm::kDiskIoTime, host_id_, entry.device, static_cast<double>(d.io_time_ms) / 1000);
  }
}

const ProcfsSource::InterfaceEntry& ProcfsSource::Interface(std::string_view interface) {
  auto it = interface_entries_.find(interface);
  if (it != interface_entries_.end()) return it->second;
  if (interface_entries_.size() >= kMaxCachedDevices) interface_entries_.clear();
  InterfaceEntry entry;
  entry.include = !procfs::MatchesAnyPattern(interface, options_.interface_exclude);
  entry.receive.Set("interface", interface);
  entry.receive.Set("direction", "receive");
  entry.transmit.Set("interface", interface);
  entry.transmit.Set("direction", "transmit");
  return interface_entries_.emplace(std::string(interface), std::move(entry)).first->second;
}

void ProcfsSource::PollNetwork(model::SampleSink& out) {
  if (!ReadProcFile(netdev_path_, ProcfsError::kNetDevUnreadable)) return;
  if (!procfs::ParseNetDev(text_, interfaces_)) {
    CountError(ProcfsError::kNetDevMalformed, netdev_path_, 0);
  }
  for (const procfs::NetDevStats& s : interfaces_) {
    const InterfaceEntry& entry = Interface(s.interface);
    if (!entry.include) continue;
    const model::Labels& rx = entry.receive;
    const model::Labels& tx = entry.transmit;
    out.AddValue(hm::kNetworkIo, host_id_, rx, static_cast<double>(s.rx_bytes));
    out.AddValue(hm::kNetworkIo, host_id_, tx, static_cast<double>(s.tx_bytes));
    out.AddValue(hm::kNetworkPackets, host_id_, rx, static_cast<double>(s.rx_packets));
    out.AddValue(hm::kNetworkPackets, host_id_, tx, static_cast<double>(s.tx_packets));
    out.AddValue(hm::kNetworkErrors, host_id_, rx, static_cast<double>(s.rx_errors));
    out.AddValue(hm::kNetworkErrors, host_id_, tx, static_cast<double>(s.tx_errors));
    out.AddValue(hm::kNetworkDropped, host_id_, rx, static_cast<double>(s.rx_dropped));
    out.AddValue(hm::kNetworkDropped, host_id_, tx, static_cast<double>(s.tx_dropped));
  }
}

// ---- processes --------------------------------------------------------------------------------

bool ProcfsSource::ScanProcesses(bool want_stats, size_t& count) {
  count = 0;
  procs_.clear();
  DIR* dir = opendir(proc_dir_.c_str());
  if (dir == nullptr) {
    CountError(ProcfsError::kProcListUnreadable, proc_dir_, errno);
    return false;
  }
  int dir_fd = dirfd(dir);
  char path[32];
  char buf[kStatBufferBytes];
  while (dirent* ent = readdir(dir)) {
    int pid = 0;
    if (!ParsePid(ent->d_name, pid)) continue;  // ".", "self", "net", "sys", ...
    ++count;
    if (!want_stats) continue;
    // "<pid>/stat" relative to the open /proc: no path building from the root per process.
    auto [end, ec] = std::to_chars(path, path + sizeof(path) - 6, pid);
    std::memcpy(end, "/stat", 6);
    size_t length = 0;
    int err = procfs::ReadFileAt(dir_fd, path, buf, sizeof(buf), length);
    if (err != 0 || length == 0) {
      // ENOENT/ESRCH or an empty read: the process exited after readdir. Normal.
      if (err != 0 && !procfs::IsVanishedErrno(err)) {
        CountError(ProcfsError::kProcessStatUnreadable, proc_dir_ + "/" + path, err);
      }
      continue;
    }
    std::optional<procfs::ProcStat> st = procfs::ParseProcStat(std::string_view(buf, length));
    if (!st) {
      CountError(ProcfsError::kProcessStatMalformed, proc_dir_ + "/" + path, 0);
      continue;
    }
    ProcSample& s = procs_.emplace_back();
    s.pid = pid;
    s.start_ticks = st->start_ticks;
    s.cpu_ticks = st->utime_ticks + st->stime_ticks;
    s.rss_pages = st->rss_pages;
    s.vsize_bytes = st->vsize_bytes;
    s.threads = st->num_threads;
  }
  closedir(dir);
  // procfs lists pids in ascending order; snapshots on ordinary filesystems do not.
  auto by_pid = [](const ProcSample& a, const ProcSample& b) { return a.pid < b.pid; };
  if (!std::is_sorted(procs_.begin(), procs_.end(), by_pid)) {
    std::sort(procs_.begin(), procs_.end(), by_pid);
  }
  return true;
}

void ProcfsSource::SelectProcesses() {
  // Interval CPU per process: a merge walk over the two pid-sorted scans. A process absent from
  // the previous scan (or a reused pid) started within the interval: all its time counts.
  size_t j = 0;
  for (ProcSample& s : procs_) {
    while (j < prev_procs_.size() && prev_procs_[j].pid < s.pid) ++j;
    bool same = j < prev_procs_.size() && prev_procs_[j].pid == s.pid &&
                prev_procs_[j].start_ticks == s.start_ticks;
    s.interval_ticks = same && s.cpu_ticks >= prev_procs_[j].cpu_ticks
                           ? s.cpu_ticks - prev_procs_[j].cpu_ticks
                           : s.cpu_ticks;
  }

  selected_.clear();
  for (size_t i = 0; i < procs_.size(); ++i) selected_.push_back(i);
  size_t top = std::min(options_.top_processes, procs_.size());
  auto busier = [this](size_t a, size_t b) {
    if (procs_[a].interval_ticks != procs_[b].interval_ticks) {
      return procs_[a].interval_ticks > procs_[b].interval_ticks;
    }
    return procs_[a].pid < procs_[b].pid;
  };
  if (top < selected_.size()) {
    std::nth_element(selected_.begin(), selected_.begin() + static_cast<ptrdiff_t>(top),
                     selected_.end(), busier);
    selected_.resize(top);
  }
  for (const model::ProcessIdentity& p : of_interest_) {
    auto it = std::lower_bound(procs_.begin(), procs_.end(), p.pid,
                               [](const ProcSample& s, int pid) { return s.pid < pid; });
    if (it != procs_.end() && it->pid == p.pid && it->start_ticks == p.start_ticks) {
      selected_.push_back(static_cast<size_t>(it - procs_.begin()));
    }
  }
  std::sort(selected_.begin(), selected_.end());  // pid order: deterministic output
  selected_.erase(std::unique(selected_.begin(), selected_.end()), selected_.end());
}

void ProcfsSource::PollProcesses(model::SampleSink& out) {
  bool want_stats = options_.top_processes > 0 || !of_interest_.empty();
  base::Duration scan_time = clock_.Monotonic();
  size_t count = 0;
  if (!ScanProcesses(want_stats, count)) return;
  out.AddValue(hm::kProcessCount, host_id_, static_cast<double>(count));
  if (!want_stats) {
    have_prev_scan_ = false;
    prev_procs_.clear();
    return;
  }
  SelectProcesses();

  double elapsed = have_prev_scan_ ? base::ToSeconds(scan_time - prev_scan_time_) : 0;
  double capacity_ticks = elapsed * ticks_per_second_ * static_cast<double>(logical_cpus_);
  for (size_t index : selected_) {
    const ProcSample& s = procs_[index];
    const model::ProcessInfo* info = resolver_.Resolve(s.pid);
    // Gone since the scan, or the pid was reused in between: its numbers are not this process's.
    if (info == nullptr || info->start_ticks != s.start_ticks) continue;
    std::string id = model::ProcessEntityId(*info);
    out.AddEntity(model::MakeProcessEntity(*info));
    if (!info->container_id.empty()) out.AddEntity(model::MakeContainerEntity(*info));
    out.AddValue(hm::kProcessCpuTime, id, static_cast<double>(s.cpu_ticks) / ticks_per_second_);
    if (capacity_ticks > 0) {
      out.AddValue(hm::kProcessCpuUtilization, id,
                   static_cast<double>(s.interval_ticks) / capacity_ticks);
    }
    out.AddValue(hm::kProcessMemoryRss, id,
                 static_cast<double>(std::max<int64_t>(s.rss_pages, 0)) * page_size_);
    out.AddValue(hm::kProcessMemoryVirtual, id, static_cast<double>(s.vsize_bytes));
    out.AddValue(hm::kProcessThreads, id, static_cast<double>(s.threads));
  }
  std::swap(prev_procs_, procs_);
  prev_scan_time_ = scan_time;
  have_prev_scan_ = true;
}

}  // namespace warpscope::agent
