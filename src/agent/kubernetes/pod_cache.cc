// SPDX-License-Identifier: Apache-2.0
#include "agent/kubernetes/pod_cache.h"

#include <unordered_set>

namespace warpscope::agent::kubernetes {

void PodCache::SweepLocked() {
  const base::Duration now = clock_.Monotonic();
  std::erase_if(pods_, [&](const auto& kv) {
    return kv.second.deleted_at && now - *kv.second.deleted_at > options_.deleted_grace;
  });
}

bool PodCache::InsertLocked(PodRecord pod) {
  auto it = pods_.find(pod.uid);
  if (it != pods_.end()) {
    it->second.pod = std::move(pod);
    it->second.deleted_at.reset();
    return true;
  }
  if (pods_.size() >= options_.max_pods) {
    ++dropped_;
    return false;
  }
  std::string uid = pod.uid;
  pods_.emplace(std::move(uid), Entry{std::move(pod), std::nullopt});
  return true;
}

void PodCache::Replace(std::vector<PodRecord> pods) {
  std::lock_guard lock(mu_);
  SweepLocked();
  std::unordered_set<std::string> listed;
  for (const PodRecord& p : pods) listed.insert(p.uid);
  const base::Duration now = clock_.Monotonic();
  for (auto& [uid, entry] : pods_) {
    if (!listed.contains(uid) && !entry.deleted_at) entry.deleted_at = now;
  }
  for (PodRecord& p : pods) InsertLocked(std::move(p));
}

void PodCache::Upsert(PodRecord pod) {
  std::lock_guard lock(mu_);
  SweepLocked();
  InsertLocked(std::move(pod));
}

void PodCache::Remove(std::string_view uid) {
  std::lock_guard lock(mu_);
  SweepLocked();
  auto it = pods_.find(std::string(uid));
  if (it != pods_.end() && !it->second.deleted_at) it->second.deleted_at = clock_.Monotonic();
}

std::optional<PodAttribution> PodCache::Lookup(std::string_view pod_uid,
                                               std::string_view container_id) const {
  std::lock_guard lock(mu_);
  auto it = pods_.find(std::string(pod_uid));
  if (it == pods_.end()) return std::nullopt;
  const Entry& e = it->second;
  if (e.deleted_at && clock_.Monotonic() - *e.deleted_at > options_.deleted_grace) {
    return std::nullopt;
  }
  PodAttribution out{e.pod.pod_namespace, e.pod.name, ""};
  if (!container_id.empty()) {
    for (const auto& [id, name] : e.pod.containers) {
      if (id == container_id) {
        out.container_name = name;
        break;
      }
    }
  }
  return out;
}

size_t PodCache::live_pods() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& kv : pods_) n += kv.second.deleted_at ? 0 : 1;
  return n;
}

uint64_t PodCache::dropped_pods() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

}  // namespace warpscope::agent::kubernetes
