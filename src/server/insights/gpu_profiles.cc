// SPDX-License-Identifier: Apache-2.0
#include "server/insights/gpu_profiles.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include "base/logging.h"
#include "server/query/profiles.h"

namespace warpscope::server::insights {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// A Triton kernel (Inductor names its templates "triton_tem_fused_mm_0", "triton_tem_fused_bmm_3";
// hand-written ones are often "matmul_kernel") whose name has a matmul op as one of its parts.
bool IsTritonMatmul(std::string_view lower) {
  if (lower.rfind("triton", 0) != 0) return false;
  constexpr std::array<std::string_view, 4> kOps = {"mm", "bmm", "addmm", "baddbmm"};
  size_t i = 0;
  while (i < lower.size()) {
    size_t j = i;
    while (j < lower.size() && std::isalnum(static_cast<unsigned char>(lower[j]))) ++j;
    std::string_view part = lower.substr(i, j - i);
    if (std::find(kOps.begin(), kOps.end(), part) != kOps.end()) return true;
    i = j + 1;
  }
  return false;
}

}  // namespace

bool IsMatmulKernel(std::string_view name) {
  const std::string lower = Lower(name);
  // Attention and matrix-vector kernels first: "fmha_cutlassF_..." is attention, not a GEMM.
  constexpr std::array<std::string_view, 5> kNot = {"flash", "fmha", "attention", "attn", "gemv"};
  for (std::string_view part : kNot) {
    if (Contains(lower, part)) return false;
  }
  constexpr std::array<std::string_view, 8> kMatmul = {"gemm",  "matmul", "cutlass", "cublas",
                                                       "xmma",  "hmma",   "imma",    "nvjet"};
  for (std::string_view part : kMatmul) {
    if (Contains(lower, part)) return true;
  }
  return IsTritonMatmul(lower);
}

GpuProfileDigest DigestGpuProfile(const profiling::Profile& profile, size_t top) {
  GpuProfileDigest d;
  auto value = std::find(profile.sample_types.begin(), profile.sample_types.end(),
                         profiling::ValueType{"gpu_time", "nanoseconds"});
  if (value == profile.sample_types.end()) return d;
  const size_t v = static_cast<size_t>(value - profile.sample_types.begin());
  std::vector<int64_t> by_frame(profile.frames.size(), 0);
  for (const profiling::Sample& s : profile.samples) {
    if (v >= s.values.size() || s.values[v] <= 0) continue;
    // The kernel is the innermost kernel frame (SASS and stall frames hang below it).
    for (size_t i = s.stack.size(); i-- > 0;) {
      const uint32_t f = s.stack[i];
      if (f < profile.frames.size() && profile.frames[f].kind == profiling::FrameKind::kKernel) {
        by_frame[f] += s.values[v];
        d.kernel_ns += s.values[v];
        break;
      }
    }
  }
  std::map<std::string_view, int64_t> matmuls;  // by name: frames may differ in other fields
  for (size_t f = 0; f < by_frame.size(); ++f) {
    if (by_frame[f] > 0 && IsMatmulKernel(profile.frames[f].function)) {
      matmuls[profile.frames[f].function] += by_frame[f];
      d.matmul_ns += by_frame[f];
    }
  }
  for (const auto& [name, ns] : matmuls) d.matmuls.push_back({std::string(name), ns});
  std::stable_sort(d.matmuls.begin(), d.matmuls.end(),
                   [](const KernelTime& a, const KernelTime& b) { return a.gpu_ns > b.gpu_ns; });
  if (d.matmuls.size() > top) d.matmuls.resize(top);
  return d;
}

base::Status GpuProfileCache::Update(Storage& storage, const std::vector<ProfileTarget>& targets,
                                     base::TimePoint now, std::vector<GpuProfileDigest>& out) {
  using Key = std::pair<std::string, std::string>;
  // Keep the digests still wanted; note those to read: never read first, then the oldest.
  std::map<Key, GpuProfileDigest> kept;
  std::vector<std::pair<base::TimePoint, const ProfileTarget*>> stale;
  std::set<Key> seen;
  for (const ProfileTarget& t : targets) {
    Key key{t.host, t.entity};
    if (t.pid <= 0 || !seen.insert(key).second) continue;  // pid 0 would select every profile
    auto it = digests_.find(key);
    if (it == digests_.end()) {
      stale.push_back({base::TimePoint::min(), &t});
      continue;
    }
    const base::TimePoint read_at = it->second.read_at;
    if (it->second.pid != t.pid || now - read_at >= options_.refresh || now < read_at) {
      stale.push_back({read_at, &t});
    }
    kept.emplace(key, std::move(it->second));
  }
  digests_ = std::move(kept);
  std::stable_sort(stale.begin(), stale.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  base::Status status;
  for (size_t i = 0; i < stale.size() && i < options_.max_reads_per_update; ++i) {
    const ProfileTarget& t = *stale[i].second;
    ProfileQuery q;
    q.host = t.host;
    q.kind = "gpu";
    q.pid = t.pid;
    q.start = now - options_.window;
    q.end = now;
    q.limit = options_.max_profiles_per_read;
    ++reads_;
    base::Result<query::MergedProfiles> merged = query::MergeStoredProfiles(storage, q);
    GpuProfileDigest d;
    if (merged && merged->profiles > 0) {
      d = DigestGpuProfile(merged->profile);
      d.profiles = merged->profiles;
    } else if (!merged && merged.error().code() == base::StatusCode::kInvalidArgument) {
      // Profiles of one kind with different sample types: no usable evidence, not a failure.
      WARPSCOPE_LOG_EVERY_N(WARNING, 100, "insights: GPU profiles of pid {} on {}: {}", t.pid,
                            t.host, merged.error().message());
    } else if (!merged && merged.error().code() != base::StatusCode::kNotFound) {
      status = merged.error();
      break;
    }
    d.host = t.host;
    d.entity = t.entity;
    d.pid = t.pid;
    d.start = q.start;
    d.end = q.end;
    d.read_at = now;
    digests_[{t.host, t.entity}] = std::move(d);
  }
  out.clear();
  out.reserve(digests_.size());
  for (const auto& [key, d] : digests_) out.push_back(d);
  return status;
}

}  // namespace warpscope::server::insights
