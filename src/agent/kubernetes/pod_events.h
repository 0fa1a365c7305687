// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_AGENT_KUBERNETES_POD_EVENTS_H_
#define WARPSCOPE_AGENT_KUBERNETES_POD_EVENTS_H_

#include <string>
#include <string_view>
#include <vector>

#include "agent/kubernetes/pod_cache.h"
#include "base/status.h"

namespace warpscope::agent::kubernetes {

// The Kubernetes API's JSON as the pod directory reads it: a PodList (GET /api/v1/pods) and the
// lines of a watch stream ({"type": ..., "object": ...}, one JSON object per line).

struct PodList {
  std::vector<PodRecord> pods;
  std::string resource_version;  // metadata.resourceVersion: where the watch starts
};

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kError };
  Type type = Type::kError;
  PodRecord pod;                 // kAdded, kModified, kDeleted
  std::string resource_version;  // the object's metadata.resourceVersion (all but kError)
  int error_code = 0;            // kError: the Status object's code (410: resource version gone)
  std::string error_message;     // kError: its message
};

// "containerd://0123…" -> "0123…" (any "<runtime>://" prefix).
std::string_view StripRuntimePrefix(std::string_view container_id);

// Errors (InvalidArgument) name what is wrong: not JSON, not a PodList, a pod without a UID.
[[nodiscard]] base::Result<PodList> ParsePodList(std::string_view body);
[[nodiscard]] base::Result<WatchEvent> ParseWatchEvent(std::string_view line);

}  // namespace warpscope::agent::kubernetes

#endif  // WARPSCOPE_AGENT_KUBERNETES_POD_EVENTS_H_
