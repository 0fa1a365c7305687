// SPDX-License-Identifier: Apache-2.0
// The host side of a scenario as a synthetic /proc tree: the directory a host-metrics reader
// takes as its root (the agent's procfs source and process resolver read it as they read
// /host/proc in a container). It holds only the simulated host: its CPUs, memory and the
// scenario processes that have a `host` map, never a process of the machine it runs on.
//
//   <root>/proc/stat, meminfo, loadavg, diskstats (empty), net/dev (headers only)
//   <root>/proc/<pid>/stat, status, cmdline, comm, cgroup, exe (a symbolic link)
//   <root>/etc/passwd
//
// Every file is replaced atomically (written beside, then renamed) and a process directory
// appears and disappears in one rename, so a concurrent reader sees either the old or the new
// state of a file and never a half-built process. Values are functions of (scenario, t): CPU
// times are integrals of the processes' cpu signals, in USER_HZ ticks (100 per second).
// Not thread-safe: NvmlSim serialises Update() with the simulation it reads.
#ifndef WARPSCOPE_SIM_NVML_HOST_TREE_H_
#define WARPSCOPE_SIM_NVML_HOST_TREE_H_

#include <map>
#include <set>
#include <string>

#include "base/status.h"
#include "sim/nvml/simulation.h"

namespace warpscope::sim {

// The simulated host booted this long before simulated time 0, so a process present from t = 0
// still has a start time (field 22 of its stat) above zero.
inline constexpr double kHostBootLeadSeconds = 600;
// USER_HZ of /proc/stat and /proc/<pid>/stat.
inline constexpr double kHostTicksPerSecond = 100;
// btime of /proc/stat: the wall-clock base of NVML timestamps (kEpochBaseUs) minus the lead.
inline constexpr long long kHostBootTimeSeconds = 1'700'000'000LL - 600;

class HostTree {
 public:
  explicit HostTree(std::string root);

  // Brings the tree to simulated time t: host files, a directory for every host process running
  // at t; the directories of processes no longer running are removed. Creates <root>/proc and
  // <root>/etc when needed. Fails (naming the path) when a file cannot be written.
  base::Status Update(Simulation& sim, double t);

  const std::string& root() const { return root_; }

 private:
  base::Status WriteHost(Simulation& sim, double t);
  base::Status AddProcess(Simulation& sim, size_t i, double t);
  // stat and status, written in `dir` and remembered as those of `live_dir` (its final place).
  base::Status WriteProcessState(Simulation& sim, size_t i, double t, const std::string& dir,
                                 const std::string& live_dir);
  // Writes `data` to `path` (default: `key`) unless `key` was last written with the same data:
  // most files do not change between two refreshes, and every write costs a rename.
  base::Status WriteIfChanged(const std::string& key, std::string data,
                              const std::string& path = "");
  // Drops what was remembered of the files under `dir` (a process directory that goes or comes).
  void Forget(const std::string& dir);

  std::string root_;
  std::set<unsigned> present_;                               // pids whose directory exists
  std::map<std::string, std::string, std::less<>> written_;  // path -> content last written
  bool passwd_written_ = false;
  bool dirs_made_ = false;
  long page_size_ = 4096;
};

}  // namespace warpscope::sim

#endif  // WARPSCOPE_SIM_NVML_HOST_TREE_H_
