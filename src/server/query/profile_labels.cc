// SPDX-License-Identifier: Apache-2.0
#include "server/query/profile_labels.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstddef>

namespace warpscope::server::query {
namespace {

using nlohmann::json;

// The label keys the agent's profilers write as numbers (process_window.cc, cpu_window.cc): a
// filter of one of them with a value that is not a number can never match.
constexpr std::string_view kNumericKeys[] = {"device", "stream", "pid", "tid"};

std::optional<int64_t> ParseNumber(std::string_view text) {
  int64_t n = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, n);
  if (ec != std::errc() || ptr != end) {
    return std::nullopt;
  }
  return n;
}

void AddValues(std::vector<int64_t>& sums, std::span<const int64_t> values) {
  sums.resize(std::max(sums.size(), values.size()), 0);
  for (size_t v = 0; v < values.size(); ++v) {
    sums[v] = profiling::WrappingAdd(sums[v], values[v]);
  }
}

std::vector<int64_t> Widened(std::vector<int64_t> v, size_t types) {
  v.resize(std::max(v.size(), types), 0);
  return v;
}

int64_t At(const std::vector<int64_t>& v, size_t i) { return i < v.size() ? v[i] : 0; }

double Share(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

}  // namespace

base::Result<LabelFilter> ParseLabelFilter(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return base::Error(base::InvalidArgument(
        "label={}: expected KEY:VALUE, e.g. label=device:0, label=stream:7 or "
        "label=nvtx:forward (the answer's \"labels\" lists the keys and values seen)",
        text));
  }
  LabelFilter f;
  f.key = std::string(text.substr(0, colon));
  std::string_view value = text.substr(colon + 1);
  if (value.back() == '*') {
    f.prefix = true;
    value.remove_suffix(1);
  } else {
    f.num = ParseNumber(value);
  }
  f.value = std::string(value);
  const bool numeric_key =
      std::find(std::begin(kNumericKeys), std::end(kNumericKeys), f.key) != std::end(kNumericKeys);
  if (numeric_key && !f.num) {
    return base::Error(base::InvalidArgument(
        "label={}: {} is a number in the profiles; give one, e.g. label={}:0", text, f.key, f.key));
  }
  return f;
}

std::string LabelFilterText(const LabelFilter& filter) {
  return fmt::format("{}:{}{}", filter.key, filter.value, filter.prefix ? "*" : "");
}

bool LabelMatches(const LabelFilter& filter, const profiling::Label& label) {
  if (label.key != filter.key) {
    return false;
  }
  if (label.str.empty()) {
    return filter.num && *filter.num == label.num;
  }
  return filter.prefix ? label.str.starts_with(filter.value) : label.str == filter.value;
}

LabelSelector::LabelSelector(std::span<const LabelFilter> filters) {
  for (const LabelFilter& f : filters) {
    auto it = std::find(keys_.begin(), keys_.end(), f.key);
    if (it == keys_.end()) {
      keys_.push_back(f.key);
      filters_.emplace_back();
      it = keys_.end() - 1;
    }
    filters_[static_cast<size_t>(it - keys_.begin())].push_back(f);
  }
}

LabelSelector::Verdict LabelSelector::Check(std::span<const profiling::Label> labels) const {
  Verdict v;
  for (size_t k = 0; k < keys_.size(); ++k) {
    const bool ok = std::any_of(labels.begin(), labels.end(), [&](const profiling::Label& l) {
      return std::any_of(filters_[k].begin(), filters_[k].end(),
                         [&](const LabelFilter& f) { return LabelMatches(f, l); });
    });
    if (!ok) {
      if (v.failed == 0) {
        v.key = k;
      }
      ++v.failed;
    }
  }
  return v;
}

std::vector<LabelFilter> LabelSelector::filters() const {
  std::vector<LabelFilter> out;
  for (const auto& per_key : filters_) {
    out.insert(out.end(), per_key.begin(), per_key.end());
  }
  return out;
}

LabelCounter::LabelCounter(const LabelSelector& selector)
    : selector_(selector), failed_(selector.keys().size()) {}

void LabelCounter::Add(const LabelSelector::Verdict& verdict, const profiling::Sample& sample) {
  if (verdict.failed > 1) {
    return;
  }
  const std::string* only = nullptr;  // the one key whose menu alone this sample is in
  if (verdict.failed == 1) {
    only = &selector_.keys()[verdict.key];
    AddValues(failed_[verdict.key], sample.values);
  } else {
    AddValues(passed_, sample.values);
  }
  const std::vector<profiling::Label>& labels = sample.labels;
  for (size_t i = 0; i < labels.size(); ++i) {
    const profiling::Label& l = labels[i];
    if (only && l.key != *only) {
      continue;
    }
    KeySums& sums = keys_[l.key];
    // A sample counts once per key and once per value, however often a label repeats.
    auto earlier = [&](auto same) {
      return std::any_of(labels.begin(), labels.begin() + static_cast<ptrdiff_t>(i), same);
    };
    if (!earlier([&](const profiling::Label& e) { return e.key == l.key; })) {
      AddValues(sums.labelled, sample.values);
    }
    if (!earlier([&](const profiling::Label& e) { return e == l; })) {
      AddValues(sums.values[{l.str, l.str.empty() ? l.num : 0}], sample.values);
    }
  }
}

std::vector<LabelKeyTotals> LabelCounter::Totals(size_t types) const {
  std::vector<LabelKeyTotals> out;
  for (const auto& [key, sums] : keys_) {
    LabelKeyTotals k;
    k.key = key;
    k.total = Widened(passed_, types);
    const auto& keys = selector_.keys();
    if (auto it = std::find(keys.begin(), keys.end(), key); it != keys.end()) {
      AddValues(k.total, failed_[static_cast<size_t>(it - keys.begin())]);
    }
    k.unlabelled = k.total;
    const std::vector<int64_t> labelled = Widened(sums.labelled, types);
    for (size_t v = 0; v < k.unlabelled.size(); ++v) {
      k.unlabelled[v] = profiling::WrappingAdd(k.unlabelled[v], -At(labelled, v));
    }
    for (const auto& [value, total] : sums.values) {
      k.values.push_back({{key, value.first, value.second}, Widened(total, types)});
    }
    out.push_back(std::move(k));
  }
  return out;
}

LabelSetStats CapLabelSets(std::span<profiling::Profile> profiles, size_t max_sets) {
  struct SetWeight {
    size_t first_seen = 0;
    double weight = 0;
    bool kept = true;
  };
  std::vector<int64_t> type_totals;
  for (profiling::Profile& p : profiles) {
    for (profiling::Sample& s : p.samples) {
      std::sort(s.labels.begin(), s.labels.end());
      AddValues(type_totals, s.values);
    }
  }
  std::map<std::vector<profiling::Label>, SetWeight> sets;
  for (const profiling::Profile& p : profiles) {
    for (const profiling::Sample& s : p.samples) {
      if (s.labels.empty()) {
        continue;
      }
      auto [it, added] = sets.try_emplace(s.labels, SetWeight{sets.size()});
      for (size_t v = 0; v < s.values.size(); ++v) {
        it->second.weight += Share(s.values[v], At(type_totals, v));
      }
    }
  }
  LabelSetStats stats;
  stats.kept = sets.size();
  if (sets.size() <= max_sets) {
    return stats;
  }
  std::vector<SetWeight*> order;
  order.reserve(sets.size());
  for (auto& [labels, w] : sets) {
    order.push_back(&w);
  }
  std::sort(order.begin(), order.end(), [](const SetWeight* a, const SetWeight* b) {
    return a->weight != b->weight ? a->weight > b->weight : a->first_seen < b->first_seen;
  });
  for (size_t i = max_sets; i < order.size(); ++i) {
    order[i]->kept = false;
  }
  stats.kept = max_sets;
  stats.over_cap = sets.size() - max_sets;
  const profiling::Label over{std::string(kOverCapLabelKey),
                              fmt::format("over the cap of {} label sets", max_sets), 0};
  for (profiling::Profile& p : profiles) {
    for (profiling::Sample& s : p.samples) {
      if (!s.labels.empty() && !sets.find(s.labels)->second.kept) {
        s.labels = {over};
      }
    }
  }
  return stats;
}

json LabelTotalsJson(const std::vector<LabelKeyTotals>& keys, const LabelJsonOptions& options) {
  const size_t v = options.value;
  auto labelled = [&](const LabelKeyTotals& k) { return At(k.total, v) - At(k.unlabelled, v); };
  std::vector<const LabelKeyTotals*> order;
  for (const LabelKeyTotals& k : keys) {
    order.push_back(&k);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](const LabelKeyTotals* a, const LabelKeyTotals* b) {
                     return labelled(*a) > labelled(*b);
                   });
  json out = json::array();
  for (size_t i = 0; i < order.size() && i < options.max_keys; ++i) {
    const LabelKeyTotals& k = *order[i];
    std::vector<const LabelValueTotal*> values;
    for (const LabelValueTotal& value : k.values) {
      values.push_back(&value);
    }
    std::stable_sort(values.begin(), values.end(),
                     [&](const LabelValueTotal* a, const LabelValueTotal* b) {
                       return At(a->total, v) > At(b->total, v);
                     });
    json list = json::array();
    std::vector<int64_t> omitted(k.total.size(), 0);
    for (size_t j = 0; j < values.size(); ++j) {
      const profiling::Label& l = values[j]->label;
      if (j >= options.max_values) {
        AddValues(omitted, values[j]->total);
        continue;
      }
      const std::string text = l.str.empty() ? std::to_string(l.num) : l.str;
      list.push_back({{"value", l.str.empty() ? json(l.num) : json(l.str)},
                      {"filter", fmt::format("{}:{}", k.key, text)},
                      {"total", values[j]->total},
                      {"share", Share(At(values[j]->total, v), At(k.total, v))}});
    }
    out.push_back({{"key", k.key},
                   {"total", k.total},
                   {"unlabelled", k.unlabelled},
                   {"values", std::move(list)},
                   {"values_omitted", values.size() - std::min(values.size(), options.max_values)},
                   {"omitted_total", std::move(omitted)}});
  }
  return out;
}

}  // namespace warpscope::server::query
