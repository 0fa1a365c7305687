// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_AGENT_KUBERNETES_POD_CACHE_H_
#define WARPSCOPE_AGENT_KUBERNETES_POD_CACHE_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/time.h"

namespace warpscope::agent::kubernetes {

// One pod as the agent keeps it: what names its processes.
struct PodRecord {
  std::string uid;
  std::string pod_namespace;
  std::string name;
  // container id (runtime prefix such as "containerd://" stripped) -> container name, from
  // status.containerStatuses and status.initContainerStatuses.
  std::vector<std::pair<std::string, std::string>> containers;
};

// What a process's pod UID and container id name.
struct PodAttribution {
  std::string pod_namespace;
  std::string pod_name;
  std::string container_name;  // "" when the container id is not (yet) in the pod's status
};

// Pod UID -> pod, fed by the watcher (LIST replaces, watch events update) and read by the
// process resolvers. Thread-safe. Bounded: at most `max_pods` pods; a new pod beyond it is not
// kept (and counted). A deleted pod is kept `deleted_grace` longer, since its processes may be
// seen for a few seconds after the API server forgets it.
class PodCache {
 public:
  struct Options {
    size_t max_pods = 2000;  // a node runs at most 110 pods by default, 250 or so when raised
    base::Duration deleted_grace = std::chrono::seconds(60);
  };
  PodCache(Options options, const base::Clock& clock) : options_(options), clock_(clock) {}

  // After a LIST: these are all the pods; the others count as deleted now.
  void Replace(std::vector<PodRecord> pods);
  // ADDED or MODIFIED.
  void Upsert(PodRecord pod);
  // DELETED: kept for the grace period.
  void Remove(std::string_view uid);

  // The pod's names; nullopt when the UID is unknown or was deleted longer ago than the grace.
  std::optional<PodAttribution> Lookup(std::string_view pod_uid,
                                       std::string_view container_id) const;
  // Pods kept that are not deleted.
  size_t live_pods() const;
  // New pods that were not kept because the cache was full.
  uint64_t dropped_pods() const;

 private:
  struct Entry {
    PodRecord pod;
    std::optional<base::Duration> deleted_at;  // monotonic
  };
  void SweepLocked();
  bool InsertLocked(PodRecord pod);

  const Options options_;
  const base::Clock& clock_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> pods_;  // guarded by mu_
  uint64_t dropped_ = 0;                         // guarded by mu_
};

}  // namespace warpscope::agent::kubernetes

#endif  // WARPSCOPE_AGENT_KUBERNETES_POD_CACHE_H_
