// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_SERVER_QUERY_BATCH_H_
#define WARPSCOPE_SERVER_QUERY_BATCH_H_

#include <cstddef>
#include <functional>

namespace warpscope::server::query {

// Runs `run(0)` .. `run(count - 1)` on up to `threads` threads, the caller's among them, and
// returns when all have returned: a batch of queries answered in the time of its slowest rather
// than the sum of them (the storage's reads are thread-safe). `run` must not throw; it is called
// once per index, concurrently for different indexes.
void RunConcurrently(size_t count, size_t threads, const std::function<void(size_t)>& run);

}  // namespace warpscope::server::query

#endif  // WARPSCOPE_SERVER_QUERY_BATCH_H_
