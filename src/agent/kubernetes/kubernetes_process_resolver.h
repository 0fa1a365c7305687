// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_AGENT_KUBERNETES_KUBERNETES_PROCESS_RESOLVER_H_
#define WARPSCOPE_AGENT_KUBERNETES_KUBERNETES_PROCESS_RESOLVER_H_

#include <memory>
#include <unordered_map>

#include "agent/kubernetes/pod_cache.h"
#include "model/process.h"

namespace warpscope::agent::kubernetes {

// Wraps a resolver (the procfs one, which reads a process's pod UID and container id from its
// cgroup) and fills pod_namespace, pod_name and container_name from the pod cache. A process
// whose pod is not (yet) known keeps its pod UID only; the next cycle looks again.
// Like every resolver, it belongs to one sequence; the cache is thread-safe and shared.
class KubernetesProcessResolver final : public model::ProcessResolver {
 public:
  KubernetesProcessResolver(std::shared_ptr<model::ProcessResolver> inner,
                            std::shared_ptr<const PodCache> pods)
      : inner_(std::move(inner)), pods_(std::move(pods)) {}

  // The pointer is the inner resolver's for a process outside a pod, else a copy of its entry
  // with the pod's names; valid until BeginCycle().
  const model::ProcessInfo* Resolve(int pid) override;
  void BeginCycle() override;

 private:
  std::shared_ptr<model::ProcessResolver> inner_;
  std::shared_ptr<const PodCache> pods_;
  std::unordered_map<int, model::ProcessInfo> named_;  // this cycle's copies
};

}  // namespace warpscope::agent::kubernetes

#endif  // WARPSCOPE_AGENT_KUBERNETES_KUBERNETES_PROCESS_RESOLVER_H_
