// SPDX-License-Identifier: Apache-2.0
#include "server/insights/series_math.h"

#include <algorithm>
#include <cmath>

namespace warpscope::server::insights {

std::span<const double> Slice(std::span<const double> s, size_t from, size_t to) {
  to = std::min(to, s.size());
  from = std::min(from, to);
  return s.subspan(from, to - from);
}

size_t CountValues(std::span<const double> s) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](double v) { return std::isfinite(v); }));
}

std::optional<double> Mean(std::span<const double> s) {
  double sum = 0;
  size_t n = 0;
  for (double v : s) {
    if (!std::isfinite(v)) continue;
    sum += v;
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / static_cast<double>(n);
}

std::optional<double> Max(std::span<const double> s) {
  std::optional<double> m;
  for (double v : s) {
    if (std::isfinite(v) && (!m || v > *m)) m = v;
  }
  return m;
}

std::optional<double> Min(std::span<const double> s) {
  std::optional<double> m;
  for (double v : s) {
    if (std::isfinite(v) && (!m || v < *m)) m = v;
  }
  return m;
}

std::optional<double> Median(std::vector<double> values) {
  std::erase_if(values, [](double v) { return !std::isfinite(v); });
  if (values.empty()) return std::nullopt;
  size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(mid), values.end());
  double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  double lower = *std::max_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

std::optional<std::pair<size_t, double>> Last(std::span<const double> s) {
  for (size_t i = s.size(); i > 0; --i) {
    if (std::isfinite(s[i - 1])) return std::make_pair(i - 1, s[i - 1]);
  }
  return std::nullopt;
}

std::optional<double> SlopePerBucket(std::span<const double> s) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!std::isfinite(s[i])) continue;
    double x = static_cast<double>(i);
    n += 1;
    sx += x;
    sy += s[i];
    sxx += x * x;
    sxy += x * s[i];
  }
  double denominator = n * sxx - sx * sx;
  if (n < 2 || denominator <= 0) return std::nullopt;
  return (n * sxy - sx * sy) / denominator;
}

double LargestFall(std::span<const double> s) {
  std::optional<double> peak;
  double fall = 0;
  for (double v : s) {
    if (!std::isfinite(v)) continue;
    if (!peak || v > *peak) peak = v;
    fall = std::max(fall, *peak - v);
  }
  return fall;
}

}  // namespace warpscope::server::insights
