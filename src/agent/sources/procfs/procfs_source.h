// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_AGENT_SOURCES_PROCFS_PROCFS_SOURCE_H_
#define WARPSCOPE_AGENT_SOURCES_PROCFS_PROCFS_SOURCE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agent/sources/procfs/procfs_parse.h"
#include "agent/sources/source.h"
#include "base/status.h"
#include "base/time.h"
#include "model/labels.h"
#include "model/process.h"

namespace warpscope::agent {

struct ProcfsSourceOptions {
  // Directory holding proc/ and sys/: "/" on the host; "/host" for an agent in a container
  // that bind-mounts the host's / there; a snapshot in tests.
  std::string root = "/";
  // Entity id (and host.name) of the host series. "" reads <root>/proc/sys/kernel/hostname
  // (the UTS namespace of the agent), falling back to gethostname().
  std::string host_id;
  // Per-process series for the N processes that used the most CPU over the last interval (on
  // the first collection: over their lifetime). 0 keeps only the processes of interest.
  size_t top_processes = 10;
  // Per logical CPU series (host.cpu.core.*): 8 modes x 2 metrics per CPU.
  bool per_core_cpu = true;
  // Block devices to skip, matched against the /proc/diskstats name; "x*" matches a prefix.
  // Loop and RAM disks carry no physical I/O; dm-* (LVM, dm-crypt, multipath) are views of
  // physical disks that are counted already, so summing over devices would count twice.
  std::vector<std::string> disk_exclude = {"loop*", "ram*", "zram*", "dm-*"};
  // Partitions (sda1, nvme0n1p2) repeat their disk's I/O and are skipped unless this is true.
  // A device is a whole disk when <root>/sys/block/<name> exists; without /sys a name rule
  // (procfs::LooksLikePartition) decides.
  bool disk_partitions = false;
  // Network interfaces to skip, same pattern syntax. Loopback traffic never leaves the host and
  // veth* are the host ends of container interfaces whose traffic also crosses a bridge or the
  // physical NIC.
  std::vector<std::string> interface_exclude = {"lo", "veth*"};
  // USER_HZ and the page size; 0 asks sysconf(). Tests over snapshots set them explicitly.
  long ticks_per_second = 0;
  long page_size = 0;
};

// Why a read failed; the reason passed to the error hook (warpscope_agent_source_errors_total).
enum class ProcfsError : uint8_t {
  kStatUnreadable,  // /proc/stat
  kStatMalformed,
  kMeminfoUnreadable,
  kMeminfoMalformed,
  kLoadavgUnreadable,
  kLoadavgMalformed,
  kDiskstatsUnreadable,
  kDiskstatsMalformed,
  kNetDevUnreadable,
  kNetDevMalformed,
  kProcListUnreadable,     // opendir(/proc)
  kProcessStatUnreadable,  // /proc/<pid>/stat failed with something other than ENOENT/ESRCH
  kProcessStatMalformed,
};
inline constexpr size_t kProcfsErrorCount = 13;
// "stat_unreadable", "meminfo_malformed", "process_stat_unreadable", ...
std::string_view ProcfsErrorName(ProcfsError error);

// Host metrics from <root>/proc (catalog: host_metrics.h; design: docs/design/host-metrics.md).
// Each Poll writes the host entity and, from
//   /proc/stat       CPU time by mode (total and per core), utilization from the change since the
//                    previous Poll (absent on the first), logical CPU count
//   /proc/loadavg    load averages
//   /proc/meminfo    memory total/available/used/free/cached/buffers, swap total/used/free
//   /proc/diskstats  bytes, operations and busy time per block device (filters above)
//   /proc/net/dev    bytes, packets, errors, drops per interface (filters above)
//   /proc/[pid]/stat process count; CPU time and utilization, RSS, virtual size and threads of
//                    the top-N processes by CPU plus every process of interest, each with its
//                    process entity (and container entity) from the model::ProcessResolver
// and reports every failure through the error hook. A file that cannot be read or parsed skips
// the metrics that come from it, increments its error counter and logs a WARNING the first time;
// a process that exits between listing /proc and reading its files is skipped silently.
//
// Does not call resolver.BeginCycle(): the agent calls it once per cycle for all sources. All
// methods run on the agent main sequence. `clock` and `resolver` must outlive the source.
class ProcfsSource : public Source {
 public:
  ProcfsSource(ProcfsSourceOptions options, const base::Clock& clock,
               model::ProcessResolver& resolver, SourceErrorHook on_error = {});
  ~ProcfsSource() override;

  std::string_view name() const override { return "procfs"; }
  // Fails (Unavailable) when <root>/proc/stat cannot be read: then nothing works.
  base::Status Start() override;
  void Poll(base::TimePoint now, model::SampleSink& out) override;
  void Stop() override;

  // Processes that get per-process series even outside the top N, e.g. the GPU processes NVML
  // reports. Kept until replaced. A process is reported only while its pid still names it (the
  // start time in /proc/<pid>/stat equals start_ticks): a reused pid is another process, and an
  // identity without a start time (not resolved from this /proc) names no local process.
  void SetProcessesOfInterest(std::vector<model::ProcessIdentity> processes);

  uint64_t error_count(ProcfsError error) const { return errors_[static_cast<size_t>(error)]; }
  const std::string& host_id() const { return host_id_; }

 private:
  // One process seen in a scan of /proc, sorted by pid.
  struct ProcSample {
    int pid = 0;
    uint64_t start_ticks = 0;
    uint64_t cpu_ticks = 0;       // utime + stime
    uint64_t interval_ticks = 0;  // since the previous scan (lifetime on the first scan)
    int64_t rss_pages = 0;
    uint64_t vsize_bytes = 0;
    int64_t threads = 0;
  };
  struct DiskEntry {
    bool include = false;
    model::Labels device;
    model::Labels read;
    model::Labels write;
  };
  struct InterfaceEntry {
    bool include = false;
    model::Labels receive;
    model::Labels transmit;
  };
  using ModeLabels = std::array<model::Labels, procfs::kCpuModeCount>;

  void EnsureStarted();
  // Reads <root>/proc/<name> into text_; on failure counts `error` and returns false.
  bool ReadProcFile(const std::string& path, ProcfsError error);
  void CountError(ProcfsError error, std::string_view path, int err);

  void PollCpu(model::SampleSink& out);
  void EmitUtilization(model::SampleSink& out, const model::MetricDesc& metric,
                       const procfs::CpuTimes& before, const procfs::CpuTimes& after,
                       const ModeLabels& labels);
  void PollLoad(model::SampleSink& out);
  void PollMemory(model::SampleSink& out);
  void PollDisks(model::SampleSink& out);
  void PollNetwork(model::SampleSink& out);
  void PollProcesses(model::SampleSink& out);
  bool ScanProcesses(bool want_stats, size_t& count);
  void SelectProcesses();

  const DiskEntry& Disk(std::string_view device);
  const InterfaceEntry& Interface(std::string_view interface);
  const ModeLabels& CoreLabels(int cpu);

  ProcfsSourceOptions options_;
  const base::Clock& clock_;
  model::ProcessResolver& resolver_;
  std::string root_;  // normalized options_.root
  std::string stat_path_, meminfo_path_, loadavg_path_, diskstats_path_, netdev_path_, proc_dir_;
  double ticks_per_second_ = 100;
  double page_size_ = 4096;
  bool started_ = false;
  bool sys_block_available_ = false;

  std::string host_id_;
  model::Entity host_entity_;
  std::string text_;  // reused read buffer

  // CPU.
  procfs::CpuTimes cpu_total_, prev_cpu_total_;
  bool have_prev_cpu_total_ = false;
  std::vector<procfs::CpuTimes> cpu_cores_;
  std::vector<procfs::CpuTimes> prev_cpu_cores_;  // indexed by cpu number; cpu == -1: absent
  size_t logical_cpus_ = 0;
  ModeLabels mode_labels_;
  std::vector<ModeLabels> core_labels_;

  // Disks and interfaces: parse output and per-name filter decision plus labels.
  std::vector<procfs::DiskStats> disks_;
  std::vector<procfs::NetDevStats> interfaces_;
  std::map<std::string, DiskEntry, std::less<>> disk_entries_;
  std::map<std::string, InterfaceEntry, std::less<>> interface_entries_;

  // Processes.
  std::vector<ProcSample> procs_, prev_procs_;
  bool have_prev_scan_ = false;
  base::Duration prev_scan_time_{0};
  std::vector<size_t> selected_;
  std::vector<model::ProcessIdentity> of_interest_;  // sorted, unique, known start times only

  std::array<uint64_t, kProcfsErrorCount> errors_{};
  std::array<bool, kProcfsErrorCount> error_logged_{};
  SourceErrorHook on_error_;
};

}  // namespace warpscope::agent

#endif  // WARPSCOPE_AGENT_SOURCES_PROCFS_PROCFS_SOURCE_H_
