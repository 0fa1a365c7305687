// SPDX-License-Identifier: Apache-2.0
#include "server/query/profiles.h"

#include <fmt/format.h>

#include <vector>

#include "base/logging.h"
#include "profiling/pprof.h"

namespace warpscope::server::query {

base::Result<MergedProfiles> MergeStoredProfiles(Storage& storage, const ProfileQuery& query) {
  WARPSCOPE_ASSIGN_OR_RETURN(auto list, storage.ListProfiles(query));
  if (list.empty()) {
    return base::Error(
        base::NotFound("no profile for this window: run the CPU or CUDA profiler, see docs "
                       "(docs/api.md, POST /api/v1/ingest/profile)"));
  }
  MergedProfiles out;
  std::vector<profiling::Profile> decoded;
  for (const ProfileMeta& m : list) {
    WARPSCOPE_ASSIGN_OR_RETURN(auto blob, storage.ReadProfile(m.id));
    // Labels are not kept: the tree and the merged download sum samples by stack.
    auto p = profiling::DecodePprof(blob.data, {.keep_labels = false});
    if (!p) {
      ++out.skipped;
      if (out.first_error.empty()) {
        out.first_error = fmt::format("profile {}: {}", m.id, p.error().message());
      }
      WARPSCOPE_LOG_EVERY_N(WARNING, 100, "merged profile: profile {} left out: {}", m.id,
                            p.error().message());
      continue;
    }
    decoded.push_back(std::move(*p));
  }
  out.profiles = decoded.size();
  if (decoded.empty()) {
    return out;
  }
  WARPSCOPE_ASSIGN_OR_RETURN(out.profile, profiling::Merge(decoded));
  return out;
}

nlohmann::json MergedProfileTreeJson(const MergedProfiles& merged,
                                     const profiling::FlameTreeOptions& options) {
  nlohmann::json types = nlohmann::json::array();
  for (const auto& t : merged.profile.sample_types) {
    types.push_back({{"type", t.type}, {"unit", t.unit}});
  }
  return {{"sample_types", types},
          {"value", options.sort_value},
          {"profiles", merged.profiles},
          {"skipped_profiles", merged.skipped},
          {"root", profiling::FlameNodeJson(profiling::FlameTree(merged.profile, options))}};
}

}  // namespace warpscope::server::query
