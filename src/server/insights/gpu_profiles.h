// SPDX-License-Identifier: Apache-2.0
// GPU (CUDA kernel) profiles as insight evidence: which kernels are matrix multiplications, a
// process's stored GPU profiles reduced to its kernel and matmul time (a digest), and the
// engine's cache of digests, so a rule that needs profiles costs a few profile reads per
// evaluation however large the fleet.
#ifndef WARPSCOPE_SERVER_INSIGHTS_GPU_PROFILES_H_
#define WARPSCOPE_SERVER_INSIGHTS_GPU_PROFILES_H_

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "profiling/profile.h"
#include "server/insights/insight_inputs.h"
#include "server/storage/storage.h"

namespace warpscope::server::insights {

// Whether the kernel `name` (demangled) is a dense matrix multiplication: a GEMM of cuBLAS,
// cuBLASLt (xmma, nvjet), CUTLASS or cuDNN (implicit-GEMM convolutions), a tensor-core MMA
// kernel (hmma, imma), or a Triton/Inductor matmul ("mm", "bmm", "addmm" as a name part).
// Attention kernels (flash, fmha) and matrix-vector products (gemv) are not: autocast or TF32
// do not move them to tensor cores. Case-insensitive; docs/insights.md lists the patterns.
bool IsMatmulKernel(std::string_view name);

// The kernels of a GPU profile (sample type gpu_time, the frame of kind kernel in each stack):
// their total and matmul GPU time and the largest matmul kernels. `profiles` is left 0.
GpuProfileDigest DigestGpuProfile(const profiling::Profile& profile, size_t top = 5);

// A process whose GPU profiles a rule wants.
struct ProfileTarget {
  std::string host;
  std::string entity;  // its entity id
  int64_t pid = 0;     // what its GPU profiles are stored under
};

struct GpuProfileCacheOptions {
  base::Duration window = std::chrono::minutes(10);  // profiles overlapping [now - window, now)
  base::Duration refresh = std::chrono::minutes(5);  // a digest is read again after this long
  size_t max_reads_per_update = 8;                   // processes read from storage per Update
  size_t max_profiles_per_read = 6;                  // the newest stored profiles of a process
};

// Digests of the processes the rules want, each read from storage at most every `refresh`;
// processes no longer wanted are forgotten. Reads go to the targets never read first, then to
// the oldest digests, at most `max_reads_per_update` per call, so a fleet whose every GPU wants
// profiles is read over several evaluations. One sequence only (the engine's).
class GpuProfileCache {
 public:
  explicit GpuProfileCache(GpuProfileCacheOptions options = {}) : options_(options) {}

  // The digests of `targets` that have been read, ordered by (host, entity). A process without
  // GPU profiles in the window has a digest with `profiles` 0. A storage error stops the reads
  // of this call and is returned with the digests read so far (the cache keeps them).
  [[nodiscard]] base::Status Update(Storage& storage, const std::vector<ProfileTarget>& targets,
                                    base::TimePoint now, std::vector<GpuProfileDigest>& out);

  size_t reads() const { return reads_; }  // processes read from storage so far

 private:
  GpuProfileCacheOptions options_;
  std::map<std::pair<std::string, std::string>, GpuProfileDigest> digests_;
  size_t reads_ = 0;
};

}  // namespace warpscope::server::insights

#endif  // WARPSCOPE_SERVER_INSIGHTS_GPU_PROFILES_H_
