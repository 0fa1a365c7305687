// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_MODEL_ENTITY_H_
#define WARPSCOPE_MODEL_ENTITY_H_

#include <string>
#include <string_view>

#include "model/labels.h"

namespace warpscope::model {

// What a series describes. See docs/design/data-model.md for the id scheme and the attributes
// each kind carries.
enum class EntityKind : uint8_t {
  kHost,         // id: host name
  kGpu,          // id: GPU UUID ("GPU-...")
  kMigInstance,  // id: MIG device UUID ("MIG-...") or "<gpu uuid>/gi<N>"; parent: the GPU
  kProcess,      // id: "pid/<host pid>/<start time ticks>" (pids are reused; start time is not)
  kExecutable,   // id: "exe/<absolute path of the main executable>"
  kContainer,    // id: "ctr/<container id>"
  // id: "cluster/<the hosts' cluster tag>", or "fleet" for the hosts without one. Insight
  // findings only (fleet_regression): no series is ever stored for a cluster.
  kCluster,
};

std::string_view EntityKindName(EntityKind kind);  // "host", "gpu", "mig", "process", ...

// Well-known attribute keys. Exporters map them to their dialect (DCGM labels, OTel attributes).
namespace attr {
inline constexpr std::string_view kHostName = "host.name";
inline constexpr std::string_view kGpuIndex = "gpu.index";          // NVML index, "0"
inline constexpr std::string_view kGpuUuid = "gpu.uuid";
inline constexpr std::string_view kGpuPciBusId = "gpu.pci_bus_id";  // "00000000:17:00.0"
inline constexpr std::string_view kGpuModel = "gpu.model";          // "NVIDIA H100 80GB HBM3"
inline constexpr std::string_view kGpuSerial = "gpu.serial";
inline constexpr std::string_view kGpuMinor = "gpu.minor_number";
inline constexpr std::string_view kGpuArchitecture = "gpu.architecture";  // "hopper"
inline constexpr std::string_view kGpuComputeCapability = "gpu.compute_capability";  // "9.0"
inline constexpr std::string_view kDriverVersion = "gpu.driver_version";
inline constexpr std::string_view kCudaVersion = "gpu.cuda_driver_version";  // "12.4"
inline constexpr std::string_view kMigGpuInstanceId = "mig.gpu_instance_id";
inline constexpr std::string_view kMigComputeInstanceId = "mig.compute_instance_id";
inline constexpr std::string_view kMigProfile = "mig.profile";  // "1g.10gb"
inline constexpr std::string_view kPid = "process.pid";
inline constexpr std::string_view kNsPid = "process.container_pid";  // innermost NSpid
inline constexpr std::string_view kExecutable = "process.executable.name";  // "python3"
inline constexpr std::string_view kExecutablePath = "process.executable.path";
inline constexpr std::string_view kCommandLine = "process.command_line";  // bounded
inline constexpr std::string_view kUser = "process.owner";
// When the process started, ISO 8601 in UTC with milliseconds: "2026-12-02T07:39:10.120Z".
inline constexpr std::string_view kCreationTime = "process.creation.time";
inline constexpr std::string_view kContainerId = "container.id";
inline constexpr std::string_view kPodUid = "k8s.pod.uid";
inline constexpr std::string_view kPodNamespace = "k8s.namespace.name";
inline constexpr std::string_view kPodName = "k8s.pod.name";
inline constexpr std::string_view kContainerName = "k8s.container.name";
inline constexpr std::string_view kSlurmJob = "slurm.job_id";
// The distributed job of a process, from its launcher's environment (model/job.h).
inline constexpr std::string_view kJobId = "job.id";
inline constexpr std::string_view kJobRank = "job.rank";
inline constexpr std::string_view kJobLocalRank = "job.local_rank";
inline constexpr std::string_view kJobWorldSize = "job.world_size";
inline constexpr std::string_view kJobLauncher = "job.launcher";  // "torchelastic", "slurm"
inline constexpr std::string_view kJobMasterAddr = "job.master_addr";
}  // namespace attr

struct Entity {
  EntityKind kind = EntityKind::kHost;
  std::string id;
  std::string parent;  // id of the enclosing entity ("" for the host)
  Labels attributes;
};

}  // namespace warpscope::model

#endif  // WARPSCOPE_MODEL_ENTITY_H_
