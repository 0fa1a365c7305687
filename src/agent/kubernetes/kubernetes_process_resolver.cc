// SPDX-License-Identifier: Apache-2.0
#include "agent/kubernetes/kubernetes_process_resolver.h"

namespace warpscope::agent::kubernetes {

const model::ProcessInfo* KubernetesProcessResolver::Resolve(int pid) {
  const model::ProcessInfo* info = inner_->Resolve(pid);
  if (info == nullptr || info->pod_uid.empty()) return info;
  std::optional<PodAttribution> pod = pods_->Lookup(info->pod_uid, info->container_id);
  if (!pod) return info;
  model::ProcessInfo& named = named_[pid];
  named = *info;
  named.pod_namespace = std::move(pod->pod_namespace);
  named.pod_name = std::move(pod->pod_name);
  named.container_name = std::move(pod->container_name);
  return &named;
}

void KubernetesProcessResolver::BeginCycle() {
  named_.clear();
  inner_->BeginCycle();
}

}  // namespace warpscope::agent::kubernetes
