// SPDX-License-Identifier: Apache-2.0
#include "model/process.h"

#include <fmt/format.h>

#include <time.h>

#include <charconv>

namespace warpscope::model {
namespace {

// "2026-12-02T07:39:10.120Z" for a Unix time in milliseconds.
std::string FormatUtcMillis(int64_t unix_ms) {
  const time_t seconds = static_cast<time_t>(unix_ms / 1000);
  tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900,
                     utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                     unix_ms % 1000);
}

}  // namespace

std::string ProcessEntityId(const ProcessInfo& info) {
  return fmt::format("pid/{}/{}", info.pid, info.start_ticks);
}

std::optional<ProcessIdentity> ParseProcessEntityId(std::string_view id) {
  constexpr std::string_view kPrefix = "pid/";
  if (id.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  const char* p = id.data() + kPrefix.size();
  const char* end = id.data() + id.size();
  ProcessIdentity identity;
  auto pid = std::from_chars(p, end, identity.pid);
  if (pid.ec != std::errc() || identity.pid <= 0 || pid.ptr == end || *pid.ptr != '/') {
    return std::nullopt;
  }
  auto ticks = std::from_chars(pid.ptr + 1, end, identity.start_ticks);
  if (ticks.ec != std::errc() || ticks.ptr != end || ticks.ptr == pid.ptr + 1) {
    return std::nullopt;
  }
  return identity;
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
  if (info.start_time_ms > 0) {
    e.attributes.Set(attr::kCreationTime, FormatUtcMillis(info.start_time_ms));
  }
  if (!info.container_id.empty()) e.attributes.Set(attr::kContainerId, info.container_id);
  if (!info.pod_uid.empty()) e.attributes.Set(attr::kPodUid, info.pod_uid);
  if (!info.pod_namespace.empty()) e.attributes.Set(attr::kPodNamespace, info.pod_namespace);
  if (!info.pod_name.empty()) e.attributes.Set(attr::kPodName, info.pod_name);
  if (!info.container_name.empty()) e.attributes.Set(attr::kContainerName, info.container_name);
  if (!info.slurm_job.empty()) e.attributes.Set(attr::kSlurmJob, info.slurm_job);
  SetJobAttributes(info.job, e.attributes);
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
  if (!info.pod_name.empty()) e.attributes.Set(attr::kPodName, info.pod_name);
  if (!info.container_name.empty()) e.attributes.Set(attr::kContainerName, info.container_name);
  return e;
}

}  // namespace warpscope::model
