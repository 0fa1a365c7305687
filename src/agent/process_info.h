// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_AGENT_PROCESS_INFO_H_
#define WARPSCOPE_AGENT_PROCESS_INFO_H_

#include <cstdint>
#include <map>
#include <string>

#include "model/entity.h"

namespace warpscope::agent {

// What the agent knows about one host process, for attribution of GPU and CPU use.
struct ProcessInfo {
  int pid = 0;                // host pid (what NVML reports)
  int container_pid = 0;      // innermost NSpid; equals pid outside containers
  uint64_t start_ticks = 0;   // /proc/<pid>/stat field 22; with pid, a unique identity
  std::string executable;     // main executable's base name: "python3"
  std::string executable_path;  // "/usr/bin/python3.11"
  std::string command_line;   // space-joined argv, at most 256 bytes
  std::string user;           // user name, or the numeric uid when unknown
  std::string container_id;   // 64-hex id from the cgroup path, "" on the host
  std::string pod_uid;        // Kubernetes pod UID from the cgroup path
  std::string pod_namespace;  // when it can be known (kubelet checkpoint); often ""
  std::string slurm_job;      // "1234" from a slurm cgroup path
};

// Entity ids and entities for processes, executables and containers (docs/design/data-model.md).
std::string ProcessEntityId(const ProcessInfo& info);
std::string ExecutableEntityId(const ProcessInfo& info);
std::string ContainerEntityId(const ProcessInfo& info);
model::Entity MakeProcessEntity(const ProcessInfo& info);
model::Entity MakeExecutableEntity(const ProcessInfo& info);
model::Entity MakeContainerEntity(const ProcessInfo& info);

// Looks processes up by host pid. Runs on the agent main sequence.
class ProcessResolver {
 public:
  virtual ~ProcessResolver() = default;
  // nullptr when the process is gone or unreadable. The pointer is valid until the next call to
  // BeginCycle().
  virtual const ProcessInfo* Resolve(int pid) = 0;
  // Called once per collection cycle; implementations may drop cache entries of dead processes.
  virtual void BeginCycle() {}
};

// Test double: a fixed table of processes.
class FakeProcessResolver : public ProcessResolver {
 public:
  void Add(ProcessInfo info) { table_[info.pid] = std::move(info); }
  const ProcessInfo* Resolve(int pid) override {
    auto it = table_.find(pid);
    return it == table_.end() ? nullptr : &it->second;
  }

 private:
  std::map<int, ProcessInfo> table_;
};

}  // namespace warpscope::agent

#endif  // WARPSCOPE_AGENT_PROCESS_INFO_H_
