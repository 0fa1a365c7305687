// SPDX-License-Identifier: Apache-2.0
// The profiles stored for a window, decoded and merged into one: what
// GET /api/v1/profiles/merged answers, as a flame tree or a pprof download, for the UI's profile
// panel and for any other reader (insights, MCP).
#ifndef WARPSCOPE_SERVER_QUERY_PROFILES_H_
#define WARPSCOPE_SERVER_QUERY_PROFILES_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "profiling/flame_tree.h"
#include "profiling/profile.h"
#include "server/query/profile_labels.h"
#include "server/storage/storage.h"

namespace warpscope::server::query {

// The host metric the CPU share of all cores divides by: the agent's count of online logical
// CPUs (procfs source, /proc/stat "cpuN" lines).
inline constexpr std::string_view kHostCpuCountMetric = "host.cpu.logical_count";

struct MergeRequest {
  ProfileQuery query;  // query.kind is ignored when `kinds` has more than one kind
  // Several kinds ("cpu", "gpu") merge under the union of their sample types, in this order,
  // each stack carrying zeros for the types its profile lacks. Empty or one: query.kind only.
  std::vector<std::string> kinds;
  // Only the samples of this thread: a tid ("4242") or a thread name ("DataLoader"), matched
  // against the samples' tid and thread_name labels (the CPU profiler's). Empty: every sample.
  std::string thread;
  // Only the samples whose labels pass these filters (label=KEY:VALUE; profile_labels.h).
  std::vector<LabelFilter> labels;
  // Keep the samples' labels (sorted within each sample), so that the merge sums samples by
  // stack and labels, at most `max_label_sets` distinct label sets (CapLabelSets): what the pprof
  // download needs. false: labels are dropped after filtering and the merge sums by stack.
  bool keep_labels = false;
  size_t max_label_sets = 4096;
  // Count the label keys and values of the window (MergedProfiles::labels), for a filter menu.
  bool label_totals = false;
};

// One thread of the window: its samples' labels and totals (one per sample type).
struct ThreadTotal {
  int64_t tid = 0;
  std::string name;  // "" when the samples carry no thread_name
  std::vector<int64_t> total;
};

// What a frame's share of all the host's cores over the window needs: the frame's CPU
// nanoseconds (sample type `value`) / (window_ns * cores).
struct CpuCapacity {
  size_t value = 0;             // index of cpu/nanoseconds in the merged sample types
  int64_t window_ns = 0;        // from the earliest start to the latest end of the CPU profiles
  std::optional<double> cores;  // the host's logical CPUs; nullopt when unknown
  std::string unknown_reason;   // why `cores` is unknown
};

struct MergedProfiles {
  profiling::Profile profile;      // the merged profile (labels only with keep_labels)
  size_t profiles = 0;             // stored profiles decoded and merged
  size_t skipped = 0;              // stored profiles left out because they do not decode
  std::string first_error;         // why the first of those was left out
  std::vector<std::string> kinds;  // the kinds of the profiles merged, in request order
  // The threads of every decoded profile (after the label filters, before the thread filter),
  // largest total first by sample type 0; samples without a tid label belong to none.
  std::vector<ThreadTotal> threads;
  // With label_totals: every label key of the decoded profiles and its values' totals, each key
  // faceted as LabelKeyTotals says (after the thread filter and the other keys' filters).
  std::vector<LabelKeyTotals> labels;
  std::vector<LabelFilter> label_filters;  // the request's, grouped by key
  LabelSetStats label_sets;                // with keep_labels: what the cap did
  std::optional<CpuCapacity> cpu;          // when the merged profile has cpu/nanoseconds
};

// Every profile the request selects, decoded, filtered by thread and labels and merged (by
// stack, or by stack and labels with keep_labels). A stored profile that does not decode is left
// out and counted rather than failing the window: when none decodes, `profiles` is 0 and
// `first_error` says why. NotFound (saying how to get profiles) when the query selects none;
// InvalidArgument when their sample types differ and one kind was asked for (merge profiles of
// one kind, or ask for several). Other errors are the storage's.
[[nodiscard]] base::Result<MergedProfiles> MergeStoredProfiles(Storage& storage,
                                                               const MergeRequest& request);
[[nodiscard]] base::Result<MergedProfiles> MergeStoredProfiles(Storage& storage,
                                                               const ProfileQuery& query);

struct TreeJsonOptions {
  profiling::FlameTreeOptions tree;
  size_t max_threads = 200;      // threads listed; the rest are counted in "threads_omitted"
  size_t max_label_keys = 32;    // label keys listed; the rest in "label_keys_omitted"
  size_t max_label_values = 20;  // values listed per label key
};

// {"sample_types", "value", "profiles", "skipped_profiles", "kinds", "threads",
// "threads_omitted", "label_filters", "labels", "label_keys_omitted", "cpu", "root"}: the flame
// tree answer (docs/api.md).
nlohmann::json MergedProfileTreeJson(const MergedProfiles& merged, const TreeJsonOptions& options);
nlohmann::json MergedProfileTreeJson(const MergedProfiles& merged,
                                     const profiling::FlameTreeOptions& options);

}  // namespace warpscope::server::query

#endif  // WARPSCOPE_SERVER_QUERY_PROFILES_H_
