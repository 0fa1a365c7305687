// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_MODEL_PROCESS_H_
#define WARPSCOPE_MODEL_PROCESS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "model/entity.h"
#include "model/job.h"

namespace warpscope::model {

// Processes of a host: what the agent knows about one (for attribution of GPU and CPU use), its
// entities, and the interface sources look processes up through. The procfs source implements
// the resolver from /proc (agent/sources/procfs/procfs_process_resolver.h); a process is a host
// pid and its start time, since pids are reused.

// What the agent knows about one host process, for attribution of GPU and CPU use.
struct ProcessInfo {
  int pid = 0;                  // host pid (what NVML reports)
  int container_pid = 0;        // innermost NSpid; equals pid outside containers
  uint64_t start_ticks = 0;     // /proc/<pid>/stat field 22; with pid, a unique identity
  std::string executable;       // main executable's base name: "python3"
  std::string executable_path;  // "/usr/bin/python3.11"
  std::string command_line;     // space-joined argv, at most 256 bytes
  std::string user;             // user name, or the numeric uid when unknown
  std::string container_id;     // 64-hex id from the cgroup path, "" on the host
  std::string pod_uid;          // Kubernetes pod UID from the cgroup path
  std::string pod_namespace;    // from the Kubernetes API (pod attribution), else ""
  std::string pod_name;         // likewise
  std::string container_name;   // the container's name in its pod spec, likewise
  std::string slurm_job;        // "1234" from a slurm cgroup path
  int64_t start_time_ms = 0;    // wall clock (Unix ms) of the start; 0 when not known
  JobIdentity job;              // from /proc/<pid>/environ; empty when in no known job
};

// Who a process is: its host pid and its start time. Two processes with one pid (the pid was
// reused) differ in start_ticks. start_ticks 0 means the start time is not known: the process
// was not found in this machine's /proc (another pid namespace, exited, a simulated GPU's
// process), so its pid names no local process.
struct ProcessIdentity {
  int pid = 0;
  uint64_t start_ticks = 0;

  bool known() const { return start_ticks != 0; }
  auto operator<=>(const ProcessIdentity&) const = default;
};

// Entity ids and entities for processes, executables and containers (docs/design/data-model.md).
// A process entity id is "pid/<pid>/<start ticks>".
std::string ProcessEntityId(const ProcessInfo& info);
// The identity a process entity id names; nullopt for any other id.
std::optional<ProcessIdentity> ParseProcessEntityId(std::string_view id);
std::string ExecutableEntityId(const ProcessInfo& info);
std::string ContainerEntityId(const ProcessInfo& info);
Entity MakeProcessEntity(const ProcessInfo& info);
Entity MakeExecutableEntity(const ProcessInfo& info);
Entity MakeContainerEntity(const ProcessInfo& info);

// Looks processes up by host pid. Not thread-safe: each instance belongs to one sequence (the
// agent's main sequence, or the one source that owns it).
class ProcessResolver {
 public:
  virtual ~ProcessResolver() = default;
  // nullptr when the process is gone or unreadable. The pointer is valid until the next call to
  // BeginCycle().
  virtual const ProcessInfo* Resolve(int pid) = 0;
  // Called once per collection cycle; implementations may drop cache entries of dead processes.
  virtual void BeginCycle() {}
};

// Resolves nothing, so that processes keep the identity their source reports (NVML's name, pid
// and no start time). For pids that are not this machine's: the processes of a simulated GPU
// must never take the identity of whatever local process has the same pid.
class NoProcessResolver final : public ProcessResolver {
 public:
  const ProcessInfo* Resolve(int /*pid*/) override { return nullptr; }
};

}  // namespace warpscope::model

#endif  // WARPSCOPE_MODEL_PROCESS_H_
