// SPDX-License-Identifier: Apache-2.0
// The arithmetic rules do on per-bucket series: NaN (no data) is skipped everywhere, and a
// statistic over no data is nullopt, never 0.
#ifndef WARPSCOPE_SERVER_INSIGHTS_SERIES_MATH_H_
#define WARPSCOPE_SERVER_INSIGHTS_SERIES_MATH_H_

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace warpscope::server::insights {

// Buckets [from, to) of `s` (clamped to its size).
std::span<const double> Slice(std::span<const double> s, size_t from, size_t to);

size_t CountValues(std::span<const double> s);
std::optional<double> Mean(std::span<const double> s);
std::optional<double> Max(std::span<const double> s);
std::optional<double> Min(std::span<const double> s);
std::optional<double> Median(std::vector<double> values);  // of finite values
// The last finite value and its index.
std::optional<std::pair<size_t, double>> Last(std::span<const double> s);
// Least-squares slope per bucket of the finite values against their bucket index; nullopt with
// fewer than two values.
std::optional<double> SlopePerBucket(std::span<const double> s);
// The largest fall from an earlier value to a later one (peak to trough), >= 0; 0 with fewer
// than two values.
double LargestFall(std::span<const double> s);

}  // namespace warpscope::server::insights

#endif  // WARPSCOPE_SERVER_INSIGHTS_SERIES_MATH_H_
