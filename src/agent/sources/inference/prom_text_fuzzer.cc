// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the Prometheus text-format parser (prom_text.h; docs/design/fuzzing.md).
//
// Invariants, beyond "no crash, leak, overflow or exception":
//   - A rejection is InvalidArgument or ResourceExhausted with a message that starts with
//     "line N: " (N within the input's lines) or, for max_bytes, "the exposition has".
//   - An accepted exposition has unique, valid family names; every sample's name is its
//     family's name or that name plus a suffix its type allows; labels are valid names, sorted,
//     unique and within max_labels_per_sample; the sample count is within max_samples; sample
//     lines are increasing.
//   - Rendering the exposition back to text (escaping HELP and label values) and parsing that
//     gives the same exposition.
//   - Parsed again under small limits (from the first input byte), an accepted input stays
//     within them.
//   - AssembleHistograms / AssembleSummaries on each histogram / summary family: series sorted
//     and unique by labels, without `le` / `quantile`; buckets strictly increasing with +Inf
//     last; quantiles strictly increasing within [0, 1].
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "agent/sources/inference/prom_text.h"
#include "fuzz/fuzz_check.h"

namespace {

namespace inference = ::warpscope::agent::inference;
using inference::Exposition;
using inference::Family;
using inference::Label;
using inference::MetricType;
using inference::ParseLimits;
using inference::Sample;
using warpscope::base::StatusCode;
using warpscope::fuzz::Quote;

bool IsLabelStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsLabelChar(char c) { return IsLabelStart(c) || (c >= '0' && c <= '9'); }

bool IsName(std::string_view s, bool metric) {
  auto start = [&](char c) { return IsLabelStart(c) || (metric && c == ':'); };
  auto rest = [&](char c) { return IsLabelChar(c) || (metric && c == ':'); };
  return !s.empty() && start(s[0]) && std::all_of(s.begin() + 1, s.end(), rest);
}

bool SuffixAllowed(MetricType type, std::string_view suffix) {
  if (suffix.empty()) {
    return true;
  }
  switch (type) {
    case MetricType::kHistogram:
      return suffix == "_bucket" || suffix == "_sum" || suffix == "_count" || suffix == "_created";
    case MetricType::kSummary:
      return suffix == "_sum" || suffix == "_count" || suffix == "_created";
    case MetricType::kCounter:
      return suffix == "_total" || suffix == "_created";
    default:
      return false;
  }
}

std::string Escape(std::string_view s, bool quote) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RenderSample(const Sample& s) {
  std::string out = s.name + "{";
  for (const Label& l : s.labels) {
    out += fmt::format("{}=\"{}\",", l.name, Escape(l.value, true));
  }
  out += std::isnan(s.value) ? std::string("} NaN") : fmt::format("}} {}", s.value);
  return out + (s.timestamp_ms ? fmt::format(" {}\n", *s.timestamp_ms) : std::string("\n"));
}

// The exposition as text, its lines in the order of the input: each family's HELP and TYPE where
// its first line was, each sample at its line. A TYPE line that came later in the input moves up
// to the family's first line; the parser only accepts an input where that changes nothing (no
// sample its type would claim came before it).
std::string Render(const Exposition& e) {
  struct Event {
    size_t line;
    size_t sample;  // 0: the family's header, k: its sample k - 1
    const Family* family;
  };
  std::vector<Event> events;
  for (const Family& f : e.families) {
    events.push_back(Event{f.line, 0, &f});
    for (size_t k = 0; k < f.samples.size(); ++k) {
      events.push_back(Event{f.samples[k].line, k + 1, &f});
    }
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.line != b.line ? a.line < b.line : (a.sample == 0) > (b.sample == 0);
  });
  std::string out;
  for (const Event& ev : events) {
    const Family& f = *ev.family;
    if (ev.sample > 0) {
      out += RenderSample(f.samples[ev.sample - 1]);
      continue;
    }
    out += fmt::format("# HELP {} {}\n", f.name, Escape(f.help, false));
    if (f.type != MetricType::kUntyped) {
      out += fmt::format("# TYPE {} {}\n", f.name, inference::MetricTypeName(f.type));
    }
  }
  return out;
}

bool SameValue(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

void CheckSame(const Exposition& a, const Exposition& b, std::string_view text) {
  WARPSCOPE_FUZZ_CHECK(a.families.size() == b.families.size(), "{} families, {} rendered, in {}",
                       a.families.size(), b.families.size(), Quote(text));
  for (size_t i = 0; i < a.families.size(); ++i) {
    const Family& x = a.families[i];
    const Family& y = b.families[i];
    WARPSCOPE_FUZZ_CHECK(x.name == y.name && x.type == y.type && x.help == y.help &&
                             x.samples.size() == y.samples.size(),
                         "family {} ({} samples) rendered as {} ({} samples) in {}", x.name,
                         x.samples.size(), y.name, y.samples.size(), Quote(text));
    for (size_t k = 0; k < x.samples.size(); ++k) {
      const Sample& s = x.samples[k];
      const Sample& t = y.samples[k];
      WARPSCOPE_FUZZ_CHECK(s.name == t.name && s.labels == t.labels &&
                               SameValue(s.value, t.value) && s.timestamp_ms == t.timestamp_ms,
                           "sample {} {} of line {} rendered as {} {} in {}", s.name, s.value,
                           s.line, t.name, t.value, Quote(text));
    }
  }
}

void CheckError(const warpscope::base::Status& status, std::string_view text) {
  WARPSCOPE_FUZZ_CHECK(status.code() == StatusCode::kInvalidArgument ||
                           status.code() == StatusCode::kResourceExhausted,
                       "code {} for {}", static_cast<int>(status.code()), Quote(text));
  const std::string& m = status.message();
  if (m.starts_with("the exposition has ")) {
    WARPSCOPE_FUZZ_CHECK(status.code() == StatusCode::kResourceExhausted, "{}", m);
    return;
  }
  size_t line = 0;
  WARPSCOPE_FUZZ_CHECK(std::sscanf(m.c_str(), "line %zu: ", &line) == 1 && line >= 1,
                       "message without a line: {}", Quote(m));
  size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  WARPSCOPE_FUZZ_CHECK(line <= lines, "line {} of {} in {}", line, lines, Quote(m));
}

void CheckAccepted(const Exposition& e, const ParseLimits& limits, std::string_view text) {
  size_t samples = 0;
  std::vector<std::string_view> names;
  for (const Family& f : e.families) {
    WARPSCOPE_FUZZ_CHECK(IsName(f.name, true), "family name {}", Quote(f.name));
    WARPSCOPE_FUZZ_CHECK(f.line >= 1 && (f.samples.empty() || f.line <= f.samples[0].line),
                         "family {} on line {}, first sample on line {}", f.name, f.line,
                         f.samples.empty() ? 0 : f.samples[0].line);
    names.push_back(f.name);
    for (const Sample& s : f.samples) {
      ++samples;
      WARPSCOPE_FUZZ_CHECK(
          IsName(s.name, true) && s.name.starts_with(f.name) &&
              SuffixAllowed(f.type, std::string_view(s.name).substr(f.name.size())),
          "sample {} in {} family {}", s.name, inference::MetricTypeName(f.type), f.name);
      WARPSCOPE_FUZZ_CHECK(s.labels.size() <= limits.max_labels_per_sample, "{} labels",
                           s.labels.size());
      for (size_t i = 0; i < s.labels.size(); ++i) {
        WARPSCOPE_FUZZ_CHECK(IsName(s.labels[i].name, false), "label name {}",
                             Quote(s.labels[i].name));
        WARPSCOPE_FUZZ_CHECK(i == 0 || s.labels[i - 1].name < s.labels[i].name,
                             "labels of {} not sorted or not unique", s.name);
      }
      WARPSCOPE_FUZZ_CHECK(s.line >= 1, "sample line {}", s.line);
    }
    for (size_t k = 1; k < f.samples.size(); ++k) {
      WARPSCOPE_FUZZ_CHECK(f.samples[k - 1].line < f.samples[k].line, "sample lines of {}", f.name);
    }
  }
  WARPSCOPE_FUZZ_CHECK(samples <= limits.max_samples, "{} samples, limit {}", samples,
                       limits.max_samples);
  for (size_t i = 1; i < e.families.size(); ++i) {
    WARPSCOPE_FUZZ_CHECK(e.families[i - 1].line < e.families[i].line, "families out of order");
  }
  std::sort(names.begin(), names.end());
  WARPSCOPE_FUZZ_CHECK(std::adjacent_find(names.begin(), names.end()) == names.end(),
                       "a family name twice in {}", Quote(text));
}

template <typename Series>
void CheckSeriesLabels(const std::vector<Series>& series, std::string_view removed) {
  for (size_t i = 0; i < series.size(); ++i) {
    WARPSCOPE_FUZZ_CHECK(i == 0 || series[i - 1].labels < series[i].labels,
                         "series not sorted or not unique");
    for (const Label& l : series[i].labels) {
      WARPSCOPE_FUZZ_CHECK(l.name != removed, "series keeps its {} label", removed);
    }
  }
}

void CheckAssembled(const Exposition& e) {
  for (const Family& f : e.families) {
    if (f.type == MetricType::kHistogram) {
      auto h = inference::AssembleHistograms(f);
      if (!h) {
        WARPSCOPE_FUZZ_CHECK(!h.error().message().empty(), "empty message");
        continue;
      }
      CheckSeriesLabels(*h, "le");
      for (const inference::HistogramSeries& s : *h) {
        WARPSCOPE_FUZZ_CHECK(
            !s.buckets.empty() && s.buckets.back().le == std::numeric_limits<double>::infinity(),
            "histogram {} without +Inf last", f.name);
        for (size_t i = 1; i < s.buckets.size(); ++i) {
          WARPSCOPE_FUZZ_CHECK(s.buckets[i - 1].le < s.buckets[i].le, "buckets of {} at {}", f.name,
                               s.buckets[i].le);
        }
      }
    } else if (f.type == MetricType::kSummary) {
      auto q = inference::AssembleSummaries(f);
      if (!q) {
        WARPSCOPE_FUZZ_CHECK(!q.error().message().empty(), "empty message");
        continue;
      }
      CheckSeriesLabels(*q, "quantile");
      for (const inference::SummarySeries& s : *q) {
        for (size_t i = 0; i < s.quantiles.size(); ++i) {
          double v = s.quantiles[i].quantile;
          WARPSCOPE_FUZZ_CHECK(v >= 0 && v <= 1, "quantile {} of {}", v, f.name);
          WARPSCOPE_FUZZ_CHECK(i == 0 || s.quantiles[i - 1].quantile < v, "quantiles of {}",
                               f.name);
        }
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = warpscope::fuzz::AsText(data, size);
  const ParseLimits defaults;
  auto parsed = inference::ParsePromText(text, defaults);
  if (!parsed) {
    CheckError(parsed.error(), text);
  } else {
    CheckAccepted(*parsed, defaults, text);
    CheckAssembled(*parsed);
    // A HELP text ending in '\r' cannot be written back (a line's last '\r' is its ending).
    bool renderable = std::none_of(parsed->families.begin(), parsed->families.end(),
                                   [](const Family& f) { return f.help.ends_with('\r'); });
    if (renderable) {
      const std::string rendered = Render(*parsed);
      ParseLimits unlimited;
      unlimited.max_bytes = unlimited.max_line_length = std::numeric_limits<size_t>::max();
      auto again = inference::ParsePromText(rendered, unlimited);
      WARPSCOPE_FUZZ_CHECK(again.has_value(), "rendered text rejected: {} for {}",
                           again ? "" : again.error().message(), Quote(rendered));
      CheckSame(*parsed, *again, text);
    }
  }
  // Small limits from the first byte.
  ParseLimits small;
  const uint8_t b = size > 0 ? data[0] : 0;
  small.max_bytes = size - (b & 1);
  small.max_samples = b % 7;
  small.max_labels_per_sample = (b >> 3) % 4;
  small.max_line_length = 16 + b;
  auto limited = inference::ParsePromText(text, small);
  if (!limited) {
    CheckError(limited.error(), text);
  } else {
    CheckAccepted(*limited, small, text);
  }
  return 0;
}
