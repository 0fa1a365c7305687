// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/procfs/procfs_process_resolver.h"

#include <limits.h>
#include <unistd.h>

#include <utility>

#include "agent/sources/procfs/procfs_parse.h"
#include "agent/sources/procfs/procfs_read.h"

namespace warpscope::agent {
namespace {

// stat lines are ~300 bytes; status ~1.5 KB; cgroup can be a few hundred bytes per v1 hierarchy.
constexpr size_t kMaxStatBytes = 4096;
constexpr size_t kMaxStatusBytes = 16384;
constexpr size_t kMaxCgroupBytes = 16384;
constexpr size_t kMaxCommandLineBytes = 256;
// Enough cmdline to fill 256 output bytes even after a few leading separators.
constexpr size_t kMaxCmdlineReadBytes = 1024;
// The launcher's variables come first in practice, but a shell's environment can be large.
constexpr size_t kMaxEnvironBytes = 256 << 10;
constexpr size_t kMaxPasswdBytes = 8 << 20;
// /proc/stat has a line per CPU: ~150 bytes each, 1 MiB covers any machine.
constexpr size_t kMaxProcStatBytes = 1 << 20;

}  // namespace

ProcfsProcessResolver::ProcfsProcessResolver(std::string_view root, long ticks_per_second)
    : root_(procfs::NormalizeRoot(root)),
      ticks_per_second_(ticks_per_second > 0 ? ticks_per_second : sysconf(_SC_CLK_TCK)) {}

std::string ProcfsProcessResolver::PidPath(int pid, const char* file) const {
  std::string path = root_;
  path += "/proc/";
  path += std::to_string(pid);
  if (file[0] != '\0') {
    path += '/';
    path += file;
  }
  return path;
}

const model::ProcessInfo* ProcfsProcessResolver::Resolve(int pid) {
  if (pid <= 0) return nullptr;
  auto it = cache_.find(pid);
  if (it != cache_.end() && it->second.checked_cycle == cycle_) return &it->second.info;

  std::optional<procfs::ProcStat> stat;
  if (procfs::ReadFileBounded(PidPath(pid, "stat").c_str(), kMaxStatBytes, buf_) == 0) {
    stat = procfs::ParseProcStat(buf_);
  }
  if (!stat) {
    // Erasing is safe: an entry checked in this cycle returned above, so no pointer to it was
    // handed out since the last BeginCycle().
    if (it != cache_.end()) cache_.erase(it);
    return nullptr;
  }
  if (it != cache_.end() && it->second.info.start_ticks == stat->start_ticks) {
    it->second.checked_cycle = cycle_;
    return &it->second.info;
  }

  model::ProcessInfo info;
  info.pid = pid;
  info.container_pid = pid;
  info.start_ticks = stat->start_ticks;
  info.start_time_ms = StartTimeMs(stat->start_ticks);
  info.executable.assign(stat->comm);
  Fill(pid, info);
  Entry& entry = cache_[pid];
  entry.info = std::move(info);
  entry.checked_cycle = cycle_;
  return &entry.info;
}

void ProcfsProcessResolver::Fill(int pid, model::ProcessInfo& info) {
  char target[PATH_MAX];
  ssize_t n = readlink(PidPath(pid, "exe").c_str(), target, sizeof(target));
  if (n > 0 && static_cast<size_t>(n) < sizeof(target)) {
    std::string_view path = procfs::StripDeletedSuffix(std::string_view(target, n));
    std::string_view base = procfs::BaseName(path);
    if (!base.empty()) {
      info.executable_path.assign(path);
      info.executable.assign(base);
    }
  }

  if (procfs::ReadFileBounded(PidPath(pid, "cmdline").c_str(), kMaxCmdlineReadBytes, buf_) == 0) {
    info.command_line = procfs::JoinCmdline(buf_, kMaxCommandLineBytes);
  }

  if (procfs::ReadFileBounded(PidPath(pid, "status").c_str(), kMaxStatusBytes, buf_) == 0) {
    procfs::ProcStatus status = procfs::ParseProcStatus(buf_);
    std::optional<uint32_t> uid = status.effective_uid ? status.effective_uid : status.real_uid;
    if (uid) info.user = UserName(*uid);
    if (status.innermost_nspid > 0) info.container_pid = status.innermost_nspid;
  }

  if (procfs::ReadFileBounded(PidPath(pid, "cgroup").c_str(), kMaxCgroupBytes, buf_) == 0) {
    procfs::CgroupIds ids = procfs::ParseCgroupFile(buf_);
    info.container_id = std::move(ids.container_id);
    info.pod_uid = std::move(ids.pod_uid);
    info.slurm_job = std::move(ids.slurm_job);
  }

  // Readable by the process's owner and root only: an agent without them finds no job (EACCES).
  if (procfs::ReadFileBounded(PidPath(pid, "environ").c_str(), kMaxEnvironBytes, buf_) == 0) {
    info.job = model::ParseJobEnviron(buf_);
  }
}

int64_t ProcfsProcessResolver::StartTimeMs(uint64_t start_ticks) {
  // The boot time does not change while the host runs: one read, retried at most once a cycle
  // while it fails.
  if (boot_time_s_ == 0 && boot_read_cycle_ != cycle_) {
    boot_read_cycle_ = cycle_;
    std::string text;
    if (procfs::ReadFileBounded((root_ + "/proc/stat").c_str(), kMaxProcStatBytes, text) == 0) {
      boot_time_s_ = procfs::ParseBootTime(text).value_or(0);
    }
  }
  if (boot_time_s_ == 0 || ticks_per_second_ <= 0) return 0;
  return boot_time_s_ * 1000 +
         static_cast<int64_t>(start_ticks * 1000 / static_cast<uint64_t>(ticks_per_second_));
}

std::string ProcfsProcessResolver::UserName(uint32_t uid) {
  auto it = users_.find(uid);
  // A miss re-reads passwd at most once per cycle, so users created after start are found
  // without re-reading the file for every process that has no entry.
  if (it == users_.end() && passwd_read_cycle_ != cycle_) {
    passwd_read_cycle_ = cycle_;
    std::string text;
    if (procfs::ReadFileBounded((root_ + "/etc/passwd").c_str(), kMaxPasswdBytes, text) == 0) {
      users_ = procfs::ParsePasswd(text);
    }
    it = users_.find(uid);
  }
  return it != users_.end() ? it->second : std::to_string(uid);
}

void ProcfsProcessResolver::BeginCycle() {
  ++cycle_;
  for (auto it = cache_.begin(); it != cache_.end();) {
    if (access(PidPath(it->first, "").c_str(), F_OK) != 0) {
      it = cache_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace warpscope::agent
