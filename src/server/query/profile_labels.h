// SPDX-License-Identifier: Apache-2.0
// The sample labels of merged profiles (device, stream, pid and nvtx of GPU profiles; tid and
// thread_name of CPU profiles): the filters of GET /api/v1/profiles/merged (label=KEY:VALUE),
// the totals per label value a filter menu offers, and the cap on the distinct label sets a
// merged profile keeps. Pure functions and plain classes; not thread-safe (one merge each).
#ifndef WARPSCOPE_SERVER_QUERY_PROFILE_LABELS_H_
#define WARPSCOPE_SERVER_QUERY_PROFILE_LABELS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "profiling/profile.h"

namespace warpscope::server::query {

// At most this many label= filters in one request.
inline constexpr size_t kMaxLabelFilters = 64;

// One label=KEY:VALUE filter. A numeric VALUE ("0", "-1") matches numeric labels of that value
// and string labels of that text; any other VALUE matches string labels only. A VALUE ending in
// '*' matches the string labels that start with what comes before it ("nvtx:train_step*";
// "nvtx:*" is any nvtx label).
struct LabelFilter {
  std::string key;
  std::string value;           // as given, without a prefix's trailing '*'
  bool prefix = false;         // VALUE ended in '*'
  std::optional<int64_t> num;  // VALUE as a number, when it is one (and not a prefix)
  bool operator==(const LabelFilter&) const = default;
};

// Parses the text after "label=". InvalidArgument naming the filter and the fix: no ':', an empty
// key or value, or a key that is numeric in the agent's profiles (device, stream, pid, tid) with
// a value that is not a number.
[[nodiscard]] base::Result<LabelFilter> ParseLabelFilter(std::string_view text);

// "device:0", "nvtx:train_step*": what ParseLabelFilter reads back.
std::string LabelFilterText(const LabelFilter& filter);

// Whether a label passes a filter of its key.
bool LabelMatches(const LabelFilter& filter, const profiling::Label& label);

// The filters of one request, grouped by key: a sample passes when, for every key, one of its
// labels of that key matches one of that key's filters (filters of one key OR, keys AND).
class LabelSelector {
 public:
  LabelSelector() = default;
  explicit LabelSelector(std::span<const LabelFilter> filters);

  // Which keys a sample's labels fail: `failed` of them; `key` is the index (into keys()) of the
  // first. A sample failing exactly one key still counts in that key's menu (LabelCounter).
  struct Verdict {
    size_t failed = 0;
    size_t key = 0;
  };
  Verdict Check(std::span<const profiling::Label> labels) const;
  bool Passes(std::span<const profiling::Label> labels) const { return Check(labels).failed == 0; }

  bool empty() const { return keys_.empty(); }
  const std::vector<std::string>& keys() const { return keys_; }
  // Every filter, by key in first-given order, for the answer.
  std::vector<LabelFilter> filters() const;

 private:
  std::vector<std::string> keys_;
  std::vector<std::vector<LabelFilter>> filters_;  // per key
};

// One value of a label key and the totals (one per sample type) of the samples carrying it.
struct LabelValueTotal {
  profiling::Label label;
  std::vector<int64_t> total;
};

// One label key of a merge: its values' totals and what their shares divide. `total` covers the
// samples the key's menu is for: those passing the thread filter and every label filter except
// the key's own (so choosing a device keeps the other devices on offer, and the stream menu shows
// that device's streams); `unlabelled` is the part of it without the key.
struct LabelKeyTotals {
  std::string key;
  std::vector<int64_t> total;
  std::vector<int64_t> unlabelled;
  std::vector<LabelValueTotal> values;  // every value seen, in label order (numbers first)
};

// Sums samples into LabelKeyTotals, per the selector's faceting above.
class LabelCounter {
 public:
  explicit LabelCounter(const LabelSelector& selector);
  // Adds `sample` (whose labels got `verdict` from the selector).
  void Add(const LabelSelector::Verdict& verdict, const profiling::Sample& sample);
  // Every key seen, by name; `types` sample types wide.
  std::vector<LabelKeyTotals> Totals(size_t types) const;

 private:
  struct KeySums {
    std::vector<int64_t> labelled;
    std::map<std::pair<std::string, int64_t>, std::vector<int64_t>> values;  // (str, num)
  };
  const LabelSelector& selector_;
  std::vector<int64_t> passed_;               // samples passing every filter
  std::vector<std::vector<int64_t>> failed_;  // per filter key: samples failing only it
  std::map<std::string, KeySums> keys_;
};

// What LabelSetCap did to a merge.
struct LabelSetStats {
  size_t kept = 0;      // distinct label sets kept
  size_t over_cap = 0;  // distinct label sets past the cap, folded into kOverCapLabelKey
};

// The label samples past the cap carry instead of theirs.
inline constexpr std::string_view kOverCapLabelKey = "labels_dropped";

// Bounds the distinct label sets (each sample's labels, sorted) of `profiles` to `max_sets`: the
// heaviest sets are kept (weight: the sum over sample types of the set's share of that type's
// total, so each type counts alike; ties go to the first seen), and the samples of the others
// lose their labels for one string label kOverCapLabelKey = "over the cap of N label sets",
// so their values still count and `pprof -tags` shows how much was folded.
LabelSetStats CapLabelSets(std::span<profiling::Profile> profiles, size_t max_sets);

struct LabelJsonOptions {
  size_t max_keys = 32;    // keys listed; the rest are counted in "label_keys_omitted"
  size_t max_values = 20;  // values listed per key, largest first
  size_t value = 0;        // the sample type shares and order are by
};

// [{"key", "total", "unlabelled", "values": [{"value", "filter", "total", "share"}],
//   "values_omitted", "omitted_total"}]: the "labels" of the merged-profile answer (docs/api.md).
nlohmann::json LabelTotalsJson(const std::vector<LabelKeyTotals>& keys,
                               const LabelJsonOptions& options);

}  // namespace warpscope::server::query

#endif  // WARPSCOPE_SERVER_QUERY_PROFILE_LABELS_H_
