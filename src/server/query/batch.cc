// SPDX-License-Identifier: Apache-2.0
#include "server/query/batch.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace warpscope::server::query {

void RunConcurrently(size_t count, size_t threads, const std::function<void(size_t)>& run) {
  size_t workers = std::min(threads, count);
  std::atomic<size_t> next{0};
  auto drain = [&] {
    for (size_t i = next++; i < count; i = next++) {
      run(i);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < workers; ++t) {
    pool.emplace_back(drain);
  }
  drain();
  for (auto& t : pool) {
    t.join();
  }
}

}  // namespace warpscope::server::query
