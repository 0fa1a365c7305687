// SPDX-License-Identifier: Apache-2.0
// A parser for the Prometheus text exposition format 0.0.4, which inference servers (vLLM,
// SGLang, TensorRT-LLM, TGI) serve on /metrics. No I/O, no exceptions; memory is linear in the
// input, which ParseLimits bounds.
//
// Accepted: `# HELP name text` (escapes \\ and \n; another backslash is kept as written),
// `# TYPE name counter|gauge|histogram|summary|untyped`, other `#` lines as comments, blank
// lines, samples `name{label="value",...} value [timestamp_ms]` with blanks or tabs between
// tokens, a trailing comma in the label set, label value escapes \\ \" \n, values as decimal or
// exponent numbers and NaN, +Inf, -Inf (also Inf, Infinity, any case), CRLF line endings, a last
// line without a newline, OpenMetrics exemplars (` # {...} v [t]` after the value) ignored, and
// a final `# EOF` after which only blank lines may follow.
//
// A sample belongs to the family of its exact name when there is one; otherwise to the TYPEd
// family `<base>` of its suffix: `_bucket`, `_sum`, `_count`, `_created` for histograms,
// `_sum`, `_count`, `_created` for summaries, `_total`, `_created` for counters. A sample that
// matches no family starts an untyped family of its own name.
//
// Errors are InvalidArgument ("line 12: label value not closed with \"") or, for a limit,
// ResourceExhausted naming the ParseLimits field.
#ifndef WARPSCOPE_AGENT_SOURCES_INFERENCE_PROM_TEXT_H_
#define WARPSCOPE_AGENT_SOURCES_INFERENCE_PROM_TEXT_H_

#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warpscope::agent::inference {

enum class MetricType { kUntyped, kCounter, kGauge, kHistogram, kSummary };
std::string_view MetricTypeName(MetricType type);

struct Label {
  std::string name;
  std::string value;  // unescaped, valid UTF-8
  auto operator<=>(const Label&) const = default;
};

struct Sample {
  std::string name;           // the full metric name, with its suffix (`_bucket`, `_total`, ...)
  std::vector<Label> labels;  // sorted by name, names unique
  double value = 0;           // may be NaN or infinite
  std::optional<int64_t> timestamp_ms;
  size_t line = 0;  // 1-based line of the input, for messages
};

struct Family {
  std::string name;
  MetricType type = MetricType::kUntyped;
  std::string help;             // unescaped; empty without a HELP line
  std::vector<Sample> samples;  // in input order
  size_t line = 0;              // 1-based line of its first HELP, TYPE or sample line
};

struct Exposition {
  std::vector<Family> families;  // in the order of their first line
};

struct ParseLimits {
  size_t max_bytes = 4 << 20;  // the whole input
  size_t max_samples = 100'000;
  size_t max_labels_per_sample = 64;
  size_t max_line_length = 64 << 10;  // bytes, without the line ending
};

[[nodiscard]] base::Result<Exposition> ParsePromText(std::string_view text,
                                                     const ParseLimits& limits = {});

// ---- Histograms and summaries ------------------------------------------------------------------

struct HistogramBucket {
  double le = 0;     // upper bound; +Inf for the last bucket
  double count = 0;  // cumulative, as exposed
};

// One label set of a histogram family (the labels of its samples without `le`).
struct HistogramSeries {
  std::vector<Label> labels;             // sorted, without `le`
  std::vector<HistogramBucket> buckets;  // sorted by le, +Inf last (always present)
  double sum = 0;
  double count = 0;
};

// Groups the `_bucket`, `_sum` and `_count` samples of a histogram family by label set (series
// sorted by labels). `_created` samples are skipped. Errors: the family is not a histogram, a
// bucket without a numeric `le` or with one seen twice, a series without its +Inf bucket,
// `_sum` or `_count`, a sample of the family's bare name. Counts are returned as exposed: that
// they are non-decreasing and that +Inf equals `_count` is not checked.
[[nodiscard]] base::Result<std::vector<HistogramSeries>> AssembleHistograms(const Family& family);

struct SummaryQuantile {
  double quantile = 0;  // in [0, 1]
  double value = 0;     // may be NaN (no observations in the window)
};

struct SummarySeries {
  std::vector<Label> labels;               // sorted, without `quantile`
  std::vector<SummaryQuantile> quantiles;  // sorted by quantile; may be empty
  double sum = 0;
  double count = 0;
};

// Groups a summary family's samples (`quantile` label on the bare name, `_sum`, `_count`) by
// label set. Errors: the family is not a summary, a bare-name sample without a `quantile` in
// [0, 1] or with one seen twice, a series without `_sum` or `_count`.
[[nodiscard]] base::Result<std::vector<SummarySeries>> AssembleSummaries(const Family& family);

}  // namespace warpscope::agent::inference

#endif  // WARPSCOPE_AGENT_SOURCES_INFERENCE_PROM_TEXT_H_
