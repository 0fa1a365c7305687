// SPDX-License-Identifier: Apache-2.0
#include "server/query/profiles.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "profiling/pprof.h"
#include "server/query/storage_reads.h"

namespace warpscope::server::query {
namespace {

using nlohmann::json;

struct Decoded {
  ProfileMeta meta;
  profiling::Profile profile;
};

// The stored profiles of each kind asked for, in that order.
base::Result<std::vector<ProfileMeta>> ListRequested(Storage& storage,
                                                     const MergeRequest& request) {
  if (request.kinds.size() <= 1) {
    ProfileQuery q = request.query;
    if (request.kinds.size() == 1) {
      q.kind = request.kinds[0];
    }
    return storage.ListProfiles(q);
  }
  std::vector<ProfileMeta> out;
  for (const std::string& kind : request.kinds) {
    ProfileQuery q = request.query;
    q.kind = kind;
    WARPSCOPE_ASSIGN_OR_RETURN(auto list, storage.ListProfiles(q));
    out.insert(out.end(), std::make_move_iterator(list.begin()),
               std::make_move_iterator(list.end()));
  }
  return out;
}

// The thread of a sample: its tid and thread_name labels; nullopt without a tid.
std::optional<std::pair<int64_t, std::string>> ThreadOf(const profiling::Sample& s) {
  std::optional<int64_t> tid;
  std::string name;
  for (const profiling::Label& l : s.labels) {
    if (l.key == "tid" && l.str.empty()) {
      tid = l.num;
    } else if (l.key == "thread_name") {
      name = l.str;
    }
  }
  if (!tid) {
    return std::nullopt;
  }
  return std::make_pair(*tid, std::move(name));
}

// Whether the thread filter `thread` (a tid, or else a thread name) selects the thread.
bool ThreadMatches(std::string_view thread, int64_t tid, std::string_view name) {
  int64_t n = 0;
  const char* end = thread.data() + thread.size();
  auto [ptr, ec] = std::from_chars(thread.data(), end, n);
  if (ec == std::errc() && ptr == end) {
    return n == tid;
  }
  return thread == name;
}

// What FilterSamples sums and filters by.
struct SampleFilter {
  std::string_view thread;
  const LabelSelector& selector;
  LabelCounter* counter;  // null: label totals are not asked for
  bool keep_labels = false;
};

// Sums each sample passing the label filters into its thread's totals and, when it passes the
// thread filter too (or fails one label key only, for that key's menu), into the label totals;
// then keeps only the samples passing every filter, without their labels unless asked to keep
// them (so that the merge sums samples by stack).
void FilterSamples(profiling::Profile& p, const SampleFilter& filter,
                   std::map<std::pair<int64_t, std::string>, std::vector<int64_t>>& totals) {
  std::vector<profiling::Sample> kept;
  kept.reserve(p.samples.size());
  for (profiling::Sample& s : p.samples) {
    const LabelSelector::Verdict verdict = filter.selector.Check(s.labels);
    auto t = ThreadOf(s);
    if (t && verdict.failed == 0) {
      std::vector<int64_t>& sums = totals[*t];
      sums.resize(std::max(sums.size(), s.values.size()), 0);
      for (size_t v = 0; v < s.values.size(); ++v) {
        sums[v] = profiling::WrappingAdd(sums[v], s.values[v]);
      }
    }
    if (!filter.thread.empty() && (!t || !ThreadMatches(filter.thread, t->first, t->second))) {
      continue;
    }
    if (filter.counter) {
      filter.counter->Add(verdict, s);
    }
    if (verdict.failed != 0) {
      continue;
    }
    if (!filter.keep_labels) {
      s.labels.clear();
    }
    kept.push_back(std::move(s));
  }
  p.samples = std::move(kept);
}

// The host's logical CPUs over [start, end): the largest `last` it reported in the window.
base::Result<std::optional<double>> HostCores(Storage& storage, const std::string& host,
                                              base::TimePoint start, base::TimePoint end) {
  TopQuery q =
      RankQuery(kHostCpuCountMetric, model::EntityKind::kHost, start, end, Aggregation::kMax, 10);
  q.match.host = host;
  WARPSCOPE_ASSIGN_OR_RETURN(std::vector<TopEntry> top, TopEntitiesIfKnown(storage, q));
  std::optional<double> cores;
  for (const TopEntry& e : top) {
    if (e.latest > 0) {
      cores = std::max(cores.value_or(0), e.latest);
    }
  }
  return cores;
}

// What the CPU share of all cores needs, for the decoded profiles that have CPU time.
base::Result<std::optional<CpuCapacity>> Capacity(Storage& storage,
                                                  const std::vector<Decoded>& decoded,
                                                  const std::vector<profiling::ValueType>& types) {
  const profiling::ValueType cpu{"cpu", "nanoseconds"};
  auto it = std::find(types.begin(), types.end(), cpu);
  if (it == types.end()) {
    return std::optional<CpuCapacity>();
  }
  CpuCapacity out;
  out.value = static_cast<size_t>(it - types.begin());
  std::set<std::string> hosts;
  std::optional<base::TimePoint> start;
  std::optional<base::TimePoint> end;
  for (const Decoded& d : decoded) {
    const auto& t = d.profile.sample_types;
    if (std::find(t.begin(), t.end(), cpu) == t.end()) {
      continue;
    }
    hosts.insert(d.meta.host);
    start = start ? std::min(*start, d.meta.start) : d.meta.start;
    end = end ? std::max(*end, d.meta.end) : d.meta.end;
  }
  if (!start || *end <= *start) {
    out.unknown_reason = "the CPU profiles of this window have no time span";
    return std::optional<CpuCapacity>(std::move(out));
  }
  out.window_ns = base::ToUnixNanos(*end) - base::ToUnixNanos(*start);
  if (hosts.size() > 1) {
    out.unknown_reason = fmt::format(
        "the CPU profiles come from {} hosts: filter with host= for the share of one host's cores",
        hosts.size());
    return std::optional<CpuCapacity>(std::move(out));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(out.cores, HostCores(storage, *hosts.begin(), *start, *end));
  if (!out.cores) {
    out.unknown_reason = fmt::format(
        "host {} reported no {} in this window (the agent's host metrics, "
        "--enable-host-metrics)",
        *hosts.begin(), kHostCpuCountMetric);
  }
  return std::optional<CpuCapacity>(std::move(out));
}

}  // namespace

base::Result<MergedProfiles> MergeStoredProfiles(Storage& storage, const MergeRequest& request) {
  WARPSCOPE_ASSIGN_OR_RETURN(auto list, ListRequested(storage, request));
  if (list.empty()) {
    return base::Error(
        base::NotFound("no profile for this window: run the CPU or CUDA profiler, see docs "
                       "(docs/api.md, POST /api/v1/ingest/profile)"));
  }
  MergedProfiles out;
  std::vector<Decoded> decoded;
  for (ProfileMeta& m : list) {
    WARPSCOPE_ASSIGN_OR_RETURN(auto blob, storage.ReadProfile(m.id));
    // Labels are read for the filters and lists, then dropped unless the request keeps them.
    auto p = profiling::DecodePprof(blob.data);
    if (!p) {
      ++out.skipped;
      if (out.first_error.empty()) {
        out.first_error = fmt::format("profile {}: {}", m.id, p.error().message());
      }
      WARPSCOPE_LOG_EVERY_N(WARNING, 100, "merged profile: profile {} left out: {}", m.id,
                            p.error().message());
      continue;
    }
    if (std::find(out.kinds.begin(), out.kinds.end(), m.kind) == out.kinds.end()) {
      out.kinds.push_back(m.kind);
    }
    decoded.push_back({std::move(m), std::move(*p)});
  }
  out.profiles = decoded.size();
  if (decoded.empty()) {
    return out;
  }
  std::vector<profiling::Profile> profiles;
  profiles.reserve(decoded.size());
  for (const Decoded& d : decoded) {
    profiles.push_back(d.profile);
  }
  if (request.kinds.size() > 1) {
    const std::vector<profiling::ValueType> types = profiling::UnionSampleTypes(profiles);
    for (profiling::Profile& p : profiles) {
      p = profiling::WidenSampleTypes(std::move(p), types);
    }
  }
  std::map<std::pair<int64_t, std::string>, std::vector<int64_t>> threads;
  const LabelSelector selector(request.labels);
  LabelCounter counter(selector);
  const SampleFilter filter{request.thread, selector, request.label_totals ? &counter : nullptr,
                            request.keep_labels};
  for (profiling::Profile& p : profiles) {
    FilterSamples(p, filter, threads);
  }
  if (request.keep_labels) {
    out.label_sets = CapLabelSets(profiles, request.max_label_sets);
  }
  out.label_filters = selector.filters();
  WARPSCOPE_ASSIGN_OR_RETURN(out.profile, profiling::Merge(profiles));
  if (request.label_totals) {
    out.labels = counter.Totals(out.profile.sample_types.size());
  }
  for (auto& [key, total] : threads) {
    total.resize(out.profile.sample_types.size(), 0);
    out.threads.push_back({key.first, key.second, std::move(total)});
  }
  WARPSCOPE_ASSIGN_OR_RETURN(out.cpu, Capacity(storage, decoded, out.profile.sample_types));
  return out;
}

base::Result<MergedProfiles> MergeStoredProfiles(Storage& storage, const ProfileQuery& query) {
  MergeRequest request;
  request.query = query;
  return MergeStoredProfiles(storage, request);
}

json MergedProfileTreeJson(const MergedProfiles& merged, const TreeJsonOptions& options) {
  json types = json::array();
  for (const auto& t : merged.profile.sample_types) {
    types.push_back({{"type", t.type}, {"unit", t.unit}});
  }
  const size_t key = options.tree.sort_value;
  std::vector<const ThreadTotal*> threads;
  for (const ThreadTotal& t : merged.threads) {
    threads.push_back(&t);
  }
  auto value = [&](const ThreadTotal* t) { return key < t->total.size() ? t->total[key] : 0; };
  std::stable_sort(threads.begin(), threads.end(),
                   [&](const ThreadTotal* a, const ThreadTotal* b) { return value(a) > value(b); });
  json thread_list = json::array();
  for (size_t i = 0; i < threads.size() && i < options.max_threads; ++i) {
    thread_list.push_back(
        {{"tid", threads[i]->tid}, {"name", threads[i]->name}, {"total", threads[i]->total}});
  }
  json filters = json::array();
  for (const LabelFilter& f : merged.label_filters) {
    filters.push_back(LabelFilterText(f));
  }
  json cpu = nullptr;
  if (merged.cpu) {
    const CpuCapacity& c = *merged.cpu;
    cpu = {{"value", c.value},
           {"window_seconds", static_cast<double>(c.window_ns) / 1e9},
           {"cores", c.cores ? json(*c.cores) : json(nullptr)},
           {"capacity_ns",
            c.cores ? json(static_cast<double>(c.window_ns) * *c.cores) : json(nullptr)},
           {"cores_metric", kHostCpuCountMetric}};
    if (!c.cores) {
      cpu["unknown_reason"] = c.unknown_reason;
    }
  }
  return {{"sample_types", types},
          {"value", key},
          {"profiles", merged.profiles},
          {"skipped_profiles", merged.skipped},
          {"kinds", merged.kinds},
          {"threads", std::move(thread_list)},
          {"threads_omitted", threads.size() - std::min(threads.size(), options.max_threads)},
          {"label_filters", std::move(filters)},
          {"labels", LabelTotalsJson(merged.labels, {.max_keys = options.max_label_keys,
                                                     .max_values = options.max_label_values,
                                                     .value = key})},
          {"label_keys_omitted",
           merged.labels.size() - std::min(merged.labels.size(), options.max_label_keys)},
          {"cpu", std::move(cpu)},
          {"root", profiling::FlameNodeJson(profiling::FlameTree(merged.profile, options.tree))}};
}

json MergedProfileTreeJson(const MergedProfiles& merged,
                           const profiling::FlameTreeOptions& options) {
  return MergedProfileTreeJson(merged, TreeJsonOptions{options});
}

}  // namespace warpscope::server::query
