// SPDX-License-Identifier: Apache-2.0
#include "model/process.h"

#include <fmt/format.h>

namespace warpscope::model {

std::string ProcessEntityId(const ProcessInfo& info) {
  return fmt::format("pid/{}/{}", info.pid, info.start_ticks);
}

std::string ExecutableEntityId(const ProcessInfo& info) {
  return "exe/" + (info.executable_path.empty() ? info.executable : info.executable_path);
}

std::string ContainerEntityId(const ProcessInfo& info) { return "ctr/" + info.container_id; }

Entity MakeProcessEntity(const ProcessInfo& info) {
  Entity e;
  e.kind = EntityKind::kProcess;
  e.id = ProcessEntityId(info);
  e.parent = info.container_id.empty() ? "" : ContainerEntityId(info);
  e.attributes.Set(attr::kPid, std::to_string(info.pid));
  if (info.container_pid != 0 && info.container_pid != info.pid) {
    e.attributes.Set(attr::kNsPid, std::to_string(info.container_pid));
  }
  e.attributes.Set(attr::kExecutable, info.executable);
  if (!info.executable_path.empty()) {
    e.attributes.Set(attr::kExecutablePath, info.executable_path);
  }
  if (!info.command_line.empty()) e.attributes.Set(attr::kCommandLine, info.command_line);
  if (!info.user.empty()) e.attributes.Set(attr::kUser, info.user);
  if (!info.container_id.empty()) e.attributes.Set(attr::kContainerId, info.container_id);
  if (!info.pod_uid.empty()) e.attributes.Set(attr::kPodUid, info.pod_uid);
  if (!info.pod_namespace.empty()) e.attributes.Set(attr::kPodNamespace, info.pod_namespace);
  if (!info.slurm_job.empty()) e.attributes.Set(attr::kSlurmJob, info.slurm_job);
  return e;
}

Entity MakeExecutableEntity(const ProcessInfo& info) {
  Entity e;
  e.kind = EntityKind::kExecutable;
  e.id = ExecutableEntityId(info);
  e.attributes.Set(attr::kExecutable, info.executable);
  if (!info.executable_path.empty()) {
    e.attributes.Set(attr::kExecutablePath, info.executable_path);
  }
  return e;
}

Entity MakeContainerEntity(const ProcessInfo& info) {
  Entity e;
  e.kind = EntityKind::kContainer;
  e.id = ContainerEntityId(info);
  e.attributes.Set(attr::kContainerId, info.container_id);
  if (!info.pod_uid.empty()) e.attributes.Set(attr::kPodUid, info.pod_uid);
  if (!info.pod_namespace.empty()) e.attributes.Set(attr::kPodNamespace, info.pod_namespace);
  return e;
}

}  // namespace warpscope::model
