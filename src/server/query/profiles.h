// SPDX-License-Identifier: Apache-2.0
// The profiles stored for a window, decoded and merged into one: what
// GET /api/v1/profiles/merged answers, as a flame tree or a pprof download, for the UI's profile
// panel and for any other reader (insights, MCP).
#ifndef WARPSCOPE_SERVER_QUERY_PROFILES_H_
#define WARPSCOPE_SERVER_QUERY_PROFILES_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"
#include "profiling/flame_tree.h"
#include "profiling/profile.h"
#include "server/storage/storage.h"

namespace warpscope::server::query {

struct MergedProfiles {
  profiling::Profile profile;  // the merged profile (stacks only: labels are not kept)
  size_t profiles = 0;         // stored profiles decoded and merged
  size_t skipped = 0;          // stored profiles left out because they do not decode
  std::string first_error;     // why the first of those was left out
};

// Every profile `query` selects, decoded without labels (so samples are summed by stack) and
// merged. A stored profile that does not decode is left out and counted rather than failing
// the window: when none decodes, `profiles` is 0 and `first_error` says why. NotFound (saying
// how to get profiles) when the query selects none; InvalidArgument when their sample types
// differ (merge profiles of one kind). Other errors are the storage's.
[[nodiscard]] base::Result<MergedProfiles> MergeStoredProfiles(Storage& storage,
                                                               const ProfileQuery& query);

// {"sample_types", "value", "profiles", "skipped_profiles", "root"}: the flame tree answer.
nlohmann::json MergedProfileTreeJson(const MergedProfiles& merged,
                                     const profiling::FlameTreeOptions& options);

}  // namespace warpscope::server::query

#endif  // WARPSCOPE_SERVER_QUERY_PROFILES_H_
