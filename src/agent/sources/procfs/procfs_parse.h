// SPDX-License-Identifier: Apache-2.0
// Pure parsers for the /proc, /sys and /etc files the host metrics source and the process
// resolver read. No I/O, no allocation on the hot paths (results hold string_views into the
// input; output vectors are cleared and refilled so callers can reuse their capacity). Each
// parser states what it does with malformed input; none of them throws.
#ifndef WARPSCOPE_AGENT_SOURCES_PROCFS_PROCFS_PARSE_H_
#define WARPSCOPE_AGENT_SOURCES_PROCFS_PROCFS_PARSE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace warpscope::agent::procfs {

// ---- /proc/<pid>/stat -------------------------------------------------------------------------

// The fields of /proc/<pid>/stat that we use. `comm` views the input.
struct ProcStat {
  int pid = 0;
  std::string_view comm;     // field 2 without the parentheses; may contain spaces and ')'
  char state = '?';          // field 3
  int ppid = 0;              // field 4
  uint64_t utime_ticks = 0;  // field 14, USER_HZ ticks
  uint64_t stime_ticks = 0;  // field 15
  int64_t num_threads = 0;   // field 20
  uint64_t start_ticks = 0;  // field 22, ticks after boot
  uint64_t vsize_bytes = 0;  // field 23
  int64_t rss_pages = 0;     // field 24
};

// Parses one stat line. comm is everything between the first '(' and the LAST ')', since a
// process may name itself "a) (b". Returns nullopt when the line is truncated before field 24 or
// a numeric field does not parse.
std::optional<ProcStat> ParseProcStat(std::string_view text);

// ---- /proc/stat -------------------------------------------------------------------------------

inline constexpr size_t kCpuModeCount = 8;
// Column order of the cpu lines: user nice system idle iowait irq softirq steal. The guest
// columns that follow are already included in user and nice, so they are not read.
std::string_view CpuModeName(size_t mode);

// Logical CPU numbers are below this: the largest CONFIG_NR_CPUS of any Linux architecture.
// Callers index per-CPU state by the number, so a larger one is treated as malformed.
inline constexpr int kMaxCpus = 8192;

struct CpuTimes {
  int cpu = -1;  // logical CPU number in [0, kMaxCpus); -1 for the aggregate "cpu" line
  std::array<uint64_t, kCpuModeCount> ticks{};
};

// Parses the "cpu" and "cpuN" lines of /proc/stat into `total` and `per_cpu` (cleared first, in
// file order). Columns missing on old kernels read as 0. Returns false when the aggregate line is
// absent, a cpu number is not in [0, kMaxCpus) or any cpu line has fewer than 4 numbers; the
// well-formed lines are still filled in.
[[nodiscard]] bool ParseCpuStat(std::string_view text, CpuTimes& total,
                                std::vector<CpuTimes>& per_cpu);

// The boot time of /proc/stat's "btime" line, in seconds since the Unix epoch; nullopt when the
// line is absent or its value is not a positive number.
std::optional<int64_t> ParseBootTime(std::string_view text);

// ---- /proc/meminfo ----------------------------------------------------------------------------

// Values in bytes (the file's kB are KiB). Absent lines, and values whose size in bytes would not
// fit in 64 bits, stay nullopt.
struct MemInfo {
  std::optional<uint64_t> mem_total;
  std::optional<uint64_t> mem_free;
  std::optional<uint64_t> mem_available;  // absent before Linux 3.14
  std::optional<uint64_t> buffers;
  std::optional<uint64_t> cached;
  std::optional<uint64_t> swap_total;
  std::optional<uint64_t> swap_free;
};

// Returns nullopt when MemTotal or MemFree is missing or unparsable.
std::optional<MemInfo> ParseMeminfo(std::string_view text);

// ---- /proc/loadavg ----------------------------------------------------------------------------

struct LoadAvg {
  double load1 = 0;
  double load5 = 0;
  double load15 = 0;
};
// "0.52 0.58 0.59 2/613 12345". Returns nullopt unless the first three fields are finite,
// non-negative numbers.
std::optional<LoadAvg> ParseLoadavg(std::string_view text);

// ---- /proc/diskstats --------------------------------------------------------------------------

struct DiskStats {
  std::string_view device;
  uint64_t reads_completed = 0;   // field 4
  uint64_t sectors_read = 0;      // field 6, 512-byte units
  uint64_t writes_completed = 0;  // field 8
  uint64_t sectors_written = 0;   // field 10, 512-byte units
  uint64_t io_time_ms = 0;        // field 13
};

// Fills `out` (cleared first) with one entry per device line. Returns false when some line has
// fewer than 13 fields or a non-numeric counter; those lines are skipped, the others kept.
[[nodiscard]] bool ParseDiskstats(std::string_view text, std::vector<DiskStats>& out);

// ---- /proc/net/dev ----------------------------------------------------------------------------

struct NetDevStats {
  std::string_view interface;
  uint64_t rx_bytes = 0;
  uint64_t rx_packets = 0;
  uint64_t rx_errors = 0;
  uint64_t rx_dropped = 0;
  uint64_t tx_bytes = 0;
  uint64_t tx_packets = 0;
  uint64_t tx_errors = 0;
  uint64_t tx_dropped = 0;
};

// Skips the two header lines. "name: 16 numbers" per line; the name may touch the colon
// ("docker0:123"). Returns false when some line is malformed (skipped, others kept).
[[nodiscard]] bool ParseNetDev(std::string_view text, std::vector<NetDevStats>& out);

// ---- /proc/<pid>/status -----------------------------------------------------------------------

struct ProcStatus {
  std::optional<uint32_t> real_uid;       // first value of "Uid:"
  std::optional<uint32_t> effective_uid;  // second value of "Uid:" (what ps shows as USER)
  int innermost_nspid = 0;                // last value of "NSpid:"; 0 when the line is absent
};
ProcStatus ParseProcStatus(std::string_view text);

// ---- /proc/<pid>/cgroup -----------------------------------------------------------------------

// Identities found in a cgroup path; empty strings when absent.
struct CgroupIds {
  std::string container_id;  // 64 lowercase hex
  std::string pod_uid;       // Kubernetes pod UID, '-' separated (or the 32-hex static pod hash)
  std::string slurm_job;     // decimal job id
};

// Recognizes, in any path component (the innermost match wins for the container id):
//   docker-<64hex>.scope, cri-containerd-<64hex>.scope, crio-<64hex>.scope, libpod-<64hex>.scope
//   (systemd cgroup driver); a bare <64hex> component, as in /docker/<id> and
//   /kubepods/<qos>/pod<uid>/<id> (cgroupfs driver); "...:cri-containerd:<64hex>";
//   pod<uid> / *-pod<uid>.slice under a kubepods path, '_' normalized to '-';
//   job_<id> under a slurm path (/slurm/uid_<u>/job_<id>/..., /system.slice/slurmstepd.scope/
//   job_<id>/...). conmon scopes (crio-conmon-<id>, libpod-conmon-<id>) are not containers.
CgroupIds ParseCgroupPath(std::string_view path);

// Parses a whole /proc/<pid>/cgroup file, v1 ("4:memory:/path") and v2 ("0::/path") lines alike;
// each id is taken from the first line that has it.
CgroupIds ParseCgroupFile(std::string_view text);

// ---- /proc/<pid>/cmdline, exe -----------------------------------------------------------------

// NUL-separated argv -> space-joined, trailing separators trimmed, cut to at most `max_bytes`
// without splitting a UTF-8 sequence.
std::string JoinCmdline(std::string_view raw, size_t max_bytes = 256);

// The target of a /proc/<pid>/exe link without the " (deleted)" suffix the kernel appends when
// the file was replaced or removed (common after package upgrades).
std::string_view StripDeletedSuffix(std::string_view link_target);
// "/usr/bin/python3.11" -> "python3.11".
std::string_view BaseName(std::string_view path);

// ---- /etc/passwd ------------------------------------------------------------------------------

// uid -> user name. Comment, blank and malformed lines are skipped; the first entry for a uid
// wins, as getpwuid() does.
std::unordered_map<uint32_t, std::string> ParsePasswd(std::string_view text);

// ---- device filters ---------------------------------------------------------------------------

// True when `name` matches one of `patterns`: "veth*" matches by prefix, anything else exactly.
bool MatchesAnyPattern(std::string_view name, const std::vector<std::string>& patterns);

// Name-based guess used when /sys/block is not readable: sda1, vdb2, xvda1, hda3, nvme0n1p2,
// mmcblk0p1 are partitions; sda, nvme0n1, mmcblk0, md0 are not.
bool LooksLikePartition(std::string_view device);

}  // namespace warpscope::agent::procfs

#endif  // WARPSCOPE_AGENT_SOURCES_PROCFS_PROCFS_PARSE_H_
