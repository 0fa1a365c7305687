// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_AGENT_SOURCES_PROCFS_PROCFS_PROCESS_RESOLVER_H_
#define WARPSCOPE_AGENT_SOURCES_PROCFS_PROCFS_PROCESS_RESOLVER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "model/process.h"

namespace warpscope::agent {

// Resolves host pids to model::ProcessInfo from <root>/proc and <root>/etc/passwd:
//   executable       basename of the /proc/<pid>/exe link target (" (deleted)" stripped), or
//                    the stat comm when the link cannot be read (kernel threads, EACCES)
//   executable_path  the link target; "" when unreadable. Under a root other than "/" the target
//                    is returned as recorded, i.e. as a path inside the host's filesystem
//   command_line     /proc/<pid>/cmdline, NUL-separated argv joined by spaces, <= 256 bytes
//   user             effective uid of "Uid:" in /proc/<pid>/status mapped through
//                    <root>/etc/passwd, or the decimal uid when it has no entry
//   start_ticks      field 22 of /proc/<pid>/stat
//   start_time_ms    the start as a wall-clock time: <root>/proc/stat's btime plus start_ticks
//                    in clock ticks (USER_HZ); 0 when btime cannot be read
//   container_pid    last value of "NSpid:" in status (the pid inside the innermost pid
//                    namespace); the host pid when the line is absent
//   container_id, pod_uid, slurm_job  from /proc/<pid>/cgroup (procfs::ParseCgroupFile)
//   pod_namespace    always "": the cgroup path does not carry it
//   job              the launcher's variables in /proc/<pid>/environ (model::ParseJobEnviron;
//                    first 256 KiB); empty when unreadable (another user's process, no root)
//
// Entries are cached per (pid, start_ticks): the first Resolve of a pid in a cycle reads its stat
// file to confirm the identity; a reused pid is re-read. BeginCycle() drops entries whose
// /proc/<pid> is gone. Runs on the agent main sequence; not thread-safe.
class ProcfsProcessResolver : public model::ProcessResolver {
 public:
  // `root` is the directory holding proc/ and etc/ ("/" on a host, "/host" in a container that
  // mounts the host's root there, a snapshot in tests).
  // `ticks_per_second` is USER_HZ, the unit of start_ticks (0: sysconf(_SC_CLK_TCK)).
  explicit ProcfsProcessResolver(std::string_view root = "/", long ticks_per_second = 0);

  // nullptr when /proc/<pid>/stat cannot be read or parsed (the process exited).
  const model::ProcessInfo* Resolve(int pid) override;
  void BeginCycle() override;

  size_t cached_processes_for_testing() const { return cache_.size(); }

 private:
  struct Entry {
    model::ProcessInfo info;
    uint64_t checked_cycle = 0;  // the cycle in which the identity was last confirmed
  };

  void Fill(int pid, model::ProcessInfo& info);
  std::string UserName(uint32_t uid);
  int64_t StartTimeMs(uint64_t start_ticks);
  std::string PidPath(int pid, const char* file) const;

  std::string root_;  // normalized: "" for "/"
  std::unordered_map<int, Entry> cache_;
  uint64_t cycle_ = 1;
  std::unordered_map<uint32_t, std::string> users_;
  uint64_t passwd_read_cycle_ = 0;  // 0: never read
  long ticks_per_second_;
  int64_t boot_time_s_ = 0;         // btime; 0: not read yet, or unreadable
  uint64_t boot_read_cycle_ = 0;    // the cycle of the last attempt (at most one per cycle)
  std::string buf_;
};

}  // namespace warpscope::agent

#endif  // WARPSCOPE_AGENT_SOURCES_PROCFS_PROCFS_PROCESS_RESOLVER_H_
