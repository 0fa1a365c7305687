// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/correlation_join.h"

namespace warpscope::cupti_inject {

void CorrelationJoiner::OnLaunch(uint32_t correlation_id, uint64_t stack_hash, uint32_t tid,
                                 bool multi_kernel, std::vector<wire::KernelActivity>* out,
                                 uint32_t domain, uint32_t cbid, uint64_t launch_ns) {
  if (launches_.contains(correlation_id)) {
    ++stats_.duplicate_launches;
    return;
  }
  const Launch launch{stack_hash, tid, domain, cbid, launch_ns, multi_kernel, tick_};
  auto waiting = kernels_.find(correlation_id);
  if (waiting != kernels_.end()) {
    for (auto& k : waiting->second.kernels) {
      launch.Fill(&k);
      out->push_back(k);
      ++stats_.joined;
    }
    kernel_count_ -= waiting->second.kernels.size();
    kernels_.erase(waiting);
    if (!multi_kernel) {
      return;  // its one kernel has arrived
    }
  }
  launches_[correlation_id] = launch;
  launch_order_.emplace_back(correlation_id, tick_);
  EvictLaunches();
}

void CorrelationJoiner::OnKernel(const wire::KernelActivity& kernel, uint32_t launch_watermark,
                                 std::vector<wire::KernelActivity>* out) {
  if (IsDuplicate(kernel)) {
    ++stats_.duplicate_kernels;
    return;
  }
  auto it = launches_.find(kernel.correlation_id);
  if (it != launches_.end()) {
    wire::KernelActivity k = kernel;
    it->second.Fill(&k);
    out->push_back(k);
    ++stats_.joined;
    if (!it->second.multi_kernel) {
      launches_.erase(it);  // its entry in launch_order_ is skipped when reached
    }
    return;
  }
  if (kernel.correlation_id <= launch_watermark) {
    out->push_back(kernel);
    ++stats_.unjoined;
    return;
  }
  auto& pending = kernels_[kernel.correlation_id];
  if (pending.kernels.empty()) {
    pending.tick = tick_;
    kernel_order_.emplace_back(kernel.correlation_id, tick_);
  }
  pending.kernels.push_back(kernel);
  ++kernel_count_;
  EvictKernels(out);
}

void CorrelationJoiner::Tick(std::vector<wire::KernelActivity>* out) {
  ++tick_;
  while (!launch_order_.empty() && tick_ - launch_order_.front().second > options_.launch_ttl_ticks) {
    auto [corr, tick] = launch_order_.front();
    launch_order_.pop_front();
    auto it = launches_.find(corr);
    if (it != launches_.end() && it->second.tick == tick) {
      launches_.erase(it);
    }
  }
  while (!kernel_order_.empty() && tick_ - kernel_order_.front().second >= options_.kernel_ttl_ticks) {
    auto [corr, tick] = kernel_order_.front();
    kernel_order_.pop_front();
    auto it = kernels_.find(corr);
    if (it != kernels_.end() && it->second.tick == tick) {
      for (auto& k : it->second.kernels) {
        out->push_back(k);
        ++stats_.unjoined;
      }
      kernel_count_ -= it->second.kernels.size();
      kernels_.erase(it);
    }
  }
}

void CorrelationJoiner::Clear() {
  launches_.clear();
  launch_order_.clear();
  kernels_.clear();
  kernel_order_.clear();
  kernel_count_ = 0;
  recent_.clear();
  recent_order_.clear();
}

bool CorrelationJoiner::IsDuplicate(const wire::KernelActivity& k) {
  uint64_t key = k.correlation_id;
  key = (key * 0x9e3779b97f4a7c15ull) ^ k.start_ns;
  key = (key * 0x9e3779b97f4a7c15ull) ^ k.end_ns;
  key = (key * 0x9e3779b97f4a7c15ull) ^ k.graph_node_id;
  if (!recent_.insert(key).second) {
    return true;
  }
  recent_order_.push_back(key);
  if (recent_order_.size() > options_.max_recent_kernels) {
    recent_.erase(recent_order_.front());
    recent_order_.pop_front();
  }
  return false;
}

void CorrelationJoiner::EvictLaunches() {
  while (launches_.size() > options_.max_launches && !launch_order_.empty()) {
    auto [corr, tick] = launch_order_.front();
    launch_order_.pop_front();
    auto it = launches_.find(corr);
    if (it != launches_.end() && it->second.tick == tick) {
      launches_.erase(it);
      ++stats_.evicted_launches;
    }
  }
  // Entries of launches erased on match accumulate in launch_order_; bound it too.
  while (launch_order_.size() > 2 * options_.max_launches) {
    auto [corr, tick] = launch_order_.front();
    launch_order_.pop_front();
    auto it = launches_.find(corr);
    if (it != launches_.end() && it->second.tick == tick) {
      launches_.erase(it);
      ++stats_.evicted_launches;
    }
  }
}

void CorrelationJoiner::EvictKernels(std::vector<wire::KernelActivity>* out) {
  while (kernel_count_ > options_.max_kernels && !kernel_order_.empty()) {
    auto [corr, tick] = kernel_order_.front();
    kernel_order_.pop_front();
    auto it = kernels_.find(corr);
    if (it != kernels_.end() && it->second.tick == tick) {
      for (auto& k : it->second.kernels) {
        out->push_back(k);
        ++stats_.evicted_kernels;
      }
      kernel_count_ -= it->second.kernels.size();
      kernels_.erase(it);
    }
  }
}

}  // namespace warpscope::cupti_inject
