// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_MODEL_LABELS_H_
#define WARPSCOPE_MODEL_LABELS_H_

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warpscope::model {

// A small ordered set of key=value pairs, kept sorted by key with unique keys. Used for entity
// attributes and for the extra dimensions of a series (link="3", mode="user").
class Labels {
 public:
  using Pair = std::pair<std::string, std::string>;

  Labels() = default;
  Labels(std::initializer_list<Pair> pairs) {
    for (const auto& p : pairs) Set(p.first, p.second);
  }

  // Inserts or replaces.
  void Set(std::string_view key, std::string_view value) {
    auto it = std::lower_bound(pairs_.begin(), pairs_.end(), key,
                               [](const Pair& p, std::string_view k) { return p.first < k; });
    if (it != pairs_.end() && it->first == key) {
      it->second = std::string(value);
    } else {
      pairs_.emplace(it, std::string(key), std::string(value));
    }
  }
  // Empty string_view when absent.
  std::string_view Get(std::string_view key) const {
    auto it = std::lower_bound(pairs_.begin(), pairs_.end(), key,
                               [](const Pair& p, std::string_view k) { return p.first < k; });
    return (it != pairs_.end() && it->first == key) ? std::string_view(it->second)
                                                    : std::string_view();
  }
  bool Has(std::string_view key) const {
    auto it = std::lower_bound(pairs_.begin(), pairs_.end(), key,
                               [](const Pair& p, std::string_view k) { return p.first < k; });
    return it != pairs_.end() && it->first == key;
  }

  void Reserve(size_t n) { pairs_.reserve(n); }
  bool empty() const { return pairs_.empty(); }
  size_t size() const { return pairs_.size(); }
  auto begin() const { return pairs_.begin(); }
  auto end() const { return pairs_.end(); }
  const std::vector<Pair>& pairs() const { return pairs_; }

  bool operator==(const Labels& o) const { return pairs_ == o.pairs_; }
  bool operator<(const Labels& o) const { return pairs_ < o.pairs_; }

 private:
  std::vector<Pair> pairs_;
};

}  // namespace warpscope::model

#endif  // WARPSCOPE_MODEL_LABELS_H_
