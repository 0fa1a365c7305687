// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/launch_estimator.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace warpscope::agent::cuda_profiler {

std::vector<uint64_t> SplitProportionally(uint64_t count, const std::vector<uint64_t>& weights) {
  std::vector<uint64_t> out(weights.size(), 0);
  unsigned __int128 total = 0;
  for (uint64_t w : weights) {
    total += w;
  }
  if (total == 0 || weights.empty()) {
    return out;
  }
  std::vector<std::pair<unsigned __int128, size_t>> remainders;
  remainders.reserve(weights.size());
  uint64_t given = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    unsigned __int128 scaled = static_cast<unsigned __int128>(count) * weights[i];
    out[i] = static_cast<uint64_t>(scaled / total);
    given += out[i];
    remainders.push_back({scaled % total, i});
  }
  // The leftover (< number of weights) goes to the largest remainders. Only the top `left`
  // entries need ordering: O(weights) per call.
  size_t left = static_cast<size_t>(count - given);
  auto before = [&](const auto& a, const auto& b) {
    if (a.first != b.first) {
      return a.first > b.first;
    }
    if (weights[a.second] != weights[b.second]) {
      return weights[a.second] > weights[b.second];
    }
    return a.second < b.second;
  };
  if (left > 0 && left < remainders.size()) {
    std::nth_element(remainders.begin(), remainders.begin() + static_cast<long>(left),
                     remainders.end(), before);
  }
  for (size_t i = 0; i < left && i < remainders.size(); ++i) {
    ++out[remainders[i].second];
  }
  return out;
}

std::vector<size_t> PreferKind(const std::vector<size_t>& candidates,
                               const std::vector<LaunchKind>& kinds, LaunchKind want) {
  if (want == LaunchKind::kUnknown) {
    return candidates;
  }
  std::vector<size_t> same;
  for (size_t i : candidates) {
    if (kinds[i] == want) {
      same.push_back(i);
    }
  }
  return same.empty() ? candidates : same;
}

void SplitPool(uint64_t launches, uint64_t gpu_ns, const std::vector<uint64_t>& launch_weights,
               const std::vector<uint64_t>& ns_weights, std::vector<uint64_t>* launch_shares,
               std::vector<uint64_t>* ns_shares) {
  *launch_shares = SplitProportionally(launches, launch_weights);
  const bool timed =
      std::any_of(ns_weights.begin(), ns_weights.end(), [](uint64_t w) { return w > 0; });
  *ns_shares = SplitProportionally(gpu_ns, timed ? ns_weights : launch_weights);
}

WindowEstimate EstimateWindow(const std::vector<SampledSite>& sites,
                              const std::vector<UnsampledPool>& pools) {
  WindowEstimate out;
  std::unordered_map<uint32_t, std::vector<size_t>> by_kernel;
  std::vector<LaunchKind> kinds;
  kinds.reserve(sites.size());
  for (size_t i = 0; i < sites.size(); ++i) {
    by_kernel[sites[i].kernel].push_back(i);
    kinds.push_back(sites[i].kind);
  }
  std::vector<size_t> same_stream;
  std::vector<uint64_t> launch_weights;
  std::vector<uint64_t> ns_weights;
  std::vector<uint64_t> launch_shares;
  std::vector<uint64_t> ns_shares;
  for (size_t p = 0; p < pools.size(); ++p) {
    const UnsampledPool& pool = pools[p];
    if (pool.launches == 0 && pool.gpu_ns == 0) {
      continue;
    }
    auto it = by_kernel.find(pool.kernel);
    if (it == by_kernel.end()) {
      out.unmatched.push_back(p);
      continue;
    }
    same_stream.clear();
    for (size_t s : it->second) {
      if (sites[s].device == pool.device && sites[s].stream == pool.stream) {
        same_stream.push_back(s);
      }
    }
    std::vector<size_t> candidates =
        PreferKind(same_stream.empty() ? it->second : same_stream, kinds, pool.kind);
    launch_weights.clear();
    ns_weights.clear();
    for (size_t s : candidates) {
      launch_weights.push_back(sites[s].launches);
      ns_weights.push_back(sites[s].gpu_ns);
    }
    SplitPool(pool.launches, pool.gpu_ns, launch_weights, ns_weights, &launch_shares, &ns_shares);
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (launch_shares[i] > 0 || ns_shares[i] > 0) {
        out.shares.push_back({p, candidates[i], launch_shares[i], ns_shares[i]});
      }
    }
  }
  return out;
}

std::vector<uint64_t> IntegerWeights(const std::vector<double>& weights) {
  double top = 0;
  for (double w : weights) {
    top = std::max(top, w);
  }
  std::vector<uint64_t> out(weights.size(), 0);
  if (!(top > 0)) {
    return out;
  }
  for (size_t i = 0; i < weights.size(); ++i) {
    double scaled = std::ldexp(std::max(weights[i], 0.0) / top, 32);
    out[i] = static_cast<uint64_t>(std::llround(scaled));
  }
  return out;
}

void LaunchHistory::Update(const std::string& kernel, const std::vector<Site>& window_sites,
                           int64_t end_ns, const Limits& limits) {
  Kernel& k = kernels_[kernel];
  if (!k.sites.empty() && limits.half_life_ns > 0 && end_ns > k.updated_ns) {
    const double decay = std::exp2(-static_cast<double>(end_ns - k.updated_ns) /
                                   static_cast<double>(limits.half_life_ns));
    for (Site& s : k.sites) {
      s.launches *= decay;
      s.gpu_ns *= decay;
    }
  }
  for (const Site& w : window_sites) {
    auto same = std::find_if(k.sites.begin(), k.sites.end(), [&](const Site& s) {
      return s.stack_hash == w.stack_hash && s.kind == w.kind && s.launch_api == w.launch_api;
    });
    if (same == k.sites.end()) {
      k.sites.push_back(w);
    } else {
      same->launches += w.launches;
      same->gpu_ns += w.gpu_ns;
    }
  }
  // Heaviest first; equal weights keep their order, so the result is deterministic.
  std::stable_sort(k.sites.begin(), k.sites.end(),
                   [](const Site& a, const Site& b) { return a.launches > b.launches; });
  if (k.sites.size() > limits.max_sites_per_kernel) {
    k.sites.resize(limits.max_sites_per_kernel);
  }
  k.updated_ns = std::max(k.updated_ns, end_ns);
}

void LaunchHistory::Prune(int64_t now_ns, const Limits& limits) {
  std::erase_if(kernels_, [&](const auto& entry) {
    return entry.second.sites.empty() || entry.second.updated_ns < now_ns - limits.history_ns;
  });
  if (kernels_.size() <= limits.max_kernels) {
    return;
  }
  // The oldest beyond the cap; ties by name, so which ones go does not depend on hash order.
  std::vector<std::pair<int64_t, const std::string*>> order;
  order.reserve(kernels_.size());
  for (const auto& [name, k] : kernels_) {
    order.push_back({k.updated_ns, &name});
  }
  const size_t drop = kernels_.size() - limits.max_kernels;
  std::nth_element(order.begin(), order.begin() + static_cast<long>(drop), order.end(),
                   [](const auto& a, const auto& b) {
                     return std::tie(a.first, *a.second) < std::tie(b.first, *b.second);
                   });
  std::vector<std::string> names;
  names.reserve(drop);
  for (size_t i = 0; i < drop; ++i) {
    names.push_back(*order[i].second);
  }
  for (const std::string& name : names) {
    kernels_.erase(name);
  }
}

const std::vector<LaunchHistory::Site>* LaunchHistory::Find(const std::string& kernel,
                                                            int64_t now_ns,
                                                            const Limits& limits) const {
  auto it = kernels_.find(kernel);
  if (it == kernels_.end() || it->second.sites.empty() ||
      it->second.updated_ns < now_ns - limits.history_ns) {
    return nullptr;
  }
  return &it->second.sites;
}

}  // namespace warpscope::agent::cuda_profiler
