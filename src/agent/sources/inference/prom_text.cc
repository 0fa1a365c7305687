// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/inference/prom_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <system_error>
#include <utility>

namespace warpscope::agent::inference {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLabelStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsLabelChar(char c) { return IsLabelStart(c) || IsDigit(c); }
bool IsMetricStart(char c) { return IsLabelStart(c) || c == ':'; }
bool IsMetricChar(char c) { return IsLabelChar(c) || c == ':'; }

bool IsMetricName(std::string_view s) {
  return !s.empty() && IsMetricStart(s[0]) && std::all_of(s.begin(), s.end(), IsMetricChar);
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; };
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) { return lower(x) == y; });
}

// Well-formed UTF-8: no overlong forms, surrogates or code points above U+10FFFF.
bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      lo = c == 0xe0 ? 0xa0 : 0x80;
      hi = c == 0xed ? 0x9f : 0xbf;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      lo = c == 0xf0 ? 0x90 : 0x80;
      hi = c == 0xf4 ? 0x8f : 0xbf;
    } else {
      return false;
    }
    if (s.size() - i <= n) {
      return false;
    }
    for (size_t k = 1; k <= n; ++k) {
      auto d = static_cast<unsigned char>(s[i + k]);
      if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xbf)) {
        return false;
      }
    }
    i += n + 1;
  }
  return true;
}

// Quoted for a message, at most 64 bytes of it.
std::string Q(std::string_view s) {
  return s.size() <= 64 ? fmt::format("\"{}\"", s) : fmt::format("\"{}...\"", s.substr(0, 64));
}

std::string FormatLabels(const std::vector<Label>& labels) {
  std::string out = "{";
  for (const Label& l : labels) {
    out += fmt::format("{}{}={}", out.size() > 1 ? "," : "", l.name, Q(l.value));
  }
  return out + "}";
}

// The text format's floats: decimal or exponent notation, NaN, [+-]Inf and [+-]Infinity in any
// case. std::from_chars knows no leading '+' and would take "nan(...)", so signs and the words
// are handled here.
enum class FloatError { kNone, kSyntax, kRange };
FloatError ParseFloat(std::string_view token, double& out) {
  std::string_view body = token;
  bool negative = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (EqualsIgnoreCase(body, "inf") || EqualsIgnoreCase(body, "infinity")) {
    out = negative ? -std::numeric_limits<double>::infinity()
                   : std::numeric_limits<double>::infinity();
    return FloatError::kNone;
  }
  if (body.size() == token.size() && EqualsIgnoreCase(body, "nan")) {
    out = std::numeric_limits<double>::quiet_NaN();
    return FloatError::kNone;
  }
  if (body.empty() || !(IsDigit(body[0]) || body[0] == '.')) {
    return FloatError::kSyntax;
  }
  double v = 0;
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
  if (ec == std::errc::result_out_of_range) {
    return FloatError::kRange;
  }
  if (ec != std::errc() || end != body.data() + body.size()) {
    return FloatError::kSyntax;
  }
  out = negative ? -v : v;
  return FloatError::kNone;
}

std::optional<int64_t> ParseInt64(std::string_view token) {
  if (!token.empty() && token[0] == '+') {
    token.remove_prefix(1);
  }
  int64_t v = 0;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  if (token.empty() || ec != std::errc() || end != token.data() + token.size()) {
    return std::nullopt;
  }
  return v;
}

// One line, read left to right.
struct Cursor {
  std::string_view s;
  size_t pos = 0;

  bool AtEnd() const { return pos >= s.size(); }
  char Peek() const { return AtEnd() ? '\0' : s[pos]; }
  void SkipBlanks() {
    while (!AtEnd() && IsBlank(s[pos])) {
      ++pos;
    }
  }
  std::string_view Token() {  // up to the next blank
    size_t start = pos;
    while (!AtEnd() && !IsBlank(s[pos])) {
      ++pos;
    }
    return s.substr(start, pos - start);
  }
  std::string_view While(bool (*first)(char), bool (*rest)(char)) {
    size_t start = pos;
    if (!AtEnd() && first(s[pos])) {
      ++pos;
      while (!AtEnd() && rest(s[pos])) {
        ++pos;
      }
    }
    return s.substr(start, pos - start);
  }
  std::string_view Rest() const { return AtEnd() ? std::string_view() : s.substr(pos); }
  // What comes next, for a message.
  std::string Next() const { return AtEnd() ? "the end of the line" : Q(Rest().substr(0, 16)); }
};

// The suffixes by which a sample joins the family of a histogram, summary or counter.
struct Suffix {
  std::string_view text;
  bool histogram, summary, counter;
  bool Allows(MetricType t) const {
    return (t == MetricType::kHistogram && histogram) || (t == MetricType::kSummary && summary) ||
           (t == MetricType::kCounter && counter);
  }
};
constexpr Suffix kSuffixes[] = {{"_bucket", true, false, false},
                                {"_sum", true, true, false},
                                {"_count", true, true, false},
                                {"_total", false, false, true},
                                {"_created", true, true, true}};

struct FamilyState {
  size_t type_line = 0;  // 0: no TYPE line yet
  size_t help_line = 0;
};

class Parser {
 public:
  explicit Parser(const ParseLimits& limits) : limits_(limits) {}

  base::Result<Exposition> Run(std::string_view text);

 private:
  template <typename... Args>
  base::Status Err(fmt::format_string<Args...> f, Args&&... args) const {
    return base::InvalidArgument("line {}: {}", line_, fmt::format(f, std::forward<Args>(args)...));
  }
  base::Status ParseComment(Cursor c);
  base::Status ParseSample(Cursor c);
  base::Status ParseLabels(Cursor& c, std::string_view metric, std::vector<Label>& labels);
  size_t NewFamily(std::string_view name);
  size_t FamilyOf(std::string_view sample_name);

  const ParseLimits& limits_;
  Exposition out_;
  std::vector<FamilyState> state_;                    // parallel to out_.families
  std::map<std::string, size_t, std::less<>> index_;  // family name -> position
  size_t line_ = 0;
  size_t samples_ = 0;
  bool eof_ = false;
};

base::Result<Exposition> Parser::Run(std::string_view text) {
  if (text.size() > limits_.max_bytes) {
    return base::Error(base::ErrStatus(base::StatusCode::kResourceExhausted,
                                       "the exposition has {} bytes, more than max_bytes={}",
                                       text.size(), limits_.max_bytes));
  }
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    size_t end = nl == text.npos ? text.size() : nl;
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_;
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.size() > limits_.max_line_length) {
      return base::Error(base::ErrStatus(base::StatusCode::kResourceExhausted,
                                         "line {}: {} bytes, more than max_line_length={}", line_,
                                         line.size(), limits_.max_line_length));
    }
    Cursor c{line};
    c.SkipBlanks();
    if (c.AtEnd()) {
      continue;
    }
    if (eof_) {
      return base::Error(Err("text after # EOF"));
    }
    if (c.Peek() == '#') {
      ++c.pos;
      WARPSCOPE_RETURN_IF_ERROR(ParseComment(c));
    } else {
      WARPSCOPE_RETURN_IF_ERROR(ParseSample(c));
    }
  }
  return std::move(out_);
}

size_t Parser::NewFamily(std::string_view name) {
  size_t i = out_.families.size();
  out_.families.push_back(Family{.name = std::string(name), .line = line_});
  state_.emplace_back();
  index_.emplace(std::string(name), i);
  return i;
}

base::Status Parser::ParseComment(Cursor c) {
  c.SkipBlanks();
  std::string_view keyword = c.Token();
  c.SkipBlanks();
  if (keyword == "EOF" && c.AtEnd()) {
    eof_ = true;
    return base::OkStatus();
  }
  if (keyword != "HELP" && keyword != "TYPE") {
    return base::OkStatus();  // a comment
  }
  std::string_view name = c.Token();
  if (name.empty()) {
    return base::OkStatus();  // "# HELP" alone is a comment, as in Prometheus
  }
  if (!IsMetricName(name)) {
    return Err("{} names an invalid metric name {}", keyword, Q(name));
  }
  auto it = index_.find(name);
  size_t i = it == index_.end() ? NewFamily(name) : it->second;
  Family& family = out_.families[i];
  FamilyState& state = state_[i];
  c.SkipBlanks();
  if (keyword == "HELP") {
    if (state.help_line != 0) {
      return Err("second HELP for {} (the first is on line {})", name, state.help_line);
    }
    state.help_line = line_;
    std::string_view text = c.Rest();
    while (!text.empty() && IsBlank(text.back())) {
      text.remove_suffix(1);
    }
    for (size_t k = 0; k < text.size(); ++k) {
      if (text[k] == '\\' && k + 1 < text.size() && (text[k + 1] == '\\' || text[k + 1] == 'n')) {
        family.help += text[++k] == 'n' ? '\n' : '\\';
      } else {
        family.help += text[k];
      }
    }
    if (!IsValidUtf8(family.help)) {
      return Err("HELP of {} is not valid UTF-8", name);
    }
    return base::OkStatus();
  }
  if (state.type_line != 0) {
    return Err("second TYPE for {} (the first is on line {})", name, state.type_line);
  }
  std::string_view type = c.Token();
  c.SkipBlanks();
  if (type.empty()) {
    return Err("TYPE for {} has no type", name);
  }
  if (!c.AtEnd()) {
    return Err("TYPE for {} has text after the type: {}", name, c.Next());
  }
  constexpr MetricType kTypes[] = {MetricType::kCounter, MetricType::kGauge, MetricType::kHistogram,
                                   MetricType::kSummary, MetricType::kUntyped};
  auto found = std::find_if(std::begin(kTypes), std::end(kTypes), [&](MetricType t) {
    return EqualsIgnoreCase(type, MetricTypeName(t));
  });
  if (found == std::end(kTypes)) {
    return Err("unknown type {} for {} (counter, gauge, histogram, summary or untyped)", Q(type),
               name);
  }
  if (!family.samples.empty()) {
    return Err("TYPE for {} comes after its samples (line {})", name, family.samples.front().line);
  }
  // Samples that this type would have claimed by their suffix came first, too.
  for (const Suffix& s : kSuffixes) {
    auto it = index_.find(std::string(name) + std::string(s.text));
    if (s.Allows(*found) && it != index_.end() && !out_.families[it->second].samples.empty()) {
      return Err("TYPE for {} comes after its samples (line {})", name,
                 out_.families[it->second].samples.front().line);
    }
  }
  state.type_line = line_;
  family.type = *found;
  return base::OkStatus();
}

size_t Parser::FamilyOf(std::string_view sample_name) {
  if (auto it = index_.find(sample_name); it != index_.end()) {
    return it->second;
  }
  for (const Suffix& s : kSuffixes) {
    if (!sample_name.ends_with(s.text)) {
      continue;
    }
    auto it = index_.find(sample_name.substr(0, sample_name.size() - s.text.size()));
    if (it == index_.end()) {
      continue;
    }
    if (s.Allows(out_.families[it->second].type)) {
      return it->second;
    }
  }
  return NewFamily(sample_name);
}

base::Status Parser::ParseLabels(Cursor& c, std::string_view metric, std::vector<Label>& labels) {
  ++c.pos;  // '{'
  while (true) {
    c.SkipBlanks();
    if (c.Peek() == '}') {
      ++c.pos;
      break;
    }
    std::string_view name = c.While(IsLabelStart, IsLabelChar);
    if (name.empty()) {
      return Err("expected a label name or }} in the labels of {}, found {}", metric, c.Next());
    }
    if (labels.size() == limits_.max_labels_per_sample) {
      return base::ErrStatus(base::StatusCode::kResourceExhausted,
                             "line {}: {} has more than max_labels_per_sample={} labels", line_,
                             metric, limits_.max_labels_per_sample);
    }
    c.SkipBlanks();
    if (c.Peek() != '=') {
      return Err("expected = after label name {} of {}, found {}", name, metric, c.Next());
    }
    ++c.pos;
    c.SkipBlanks();
    if (c.Peek() != '"') {
      return Err("value of label {} of {} does not start with \"", name, metric);
    }
    ++c.pos;
    Label& label = labels.emplace_back(Label{.name = std::string(name)});
    while (true) {
      if (c.AtEnd()) {
        return Err("label value not closed with \" (label {} of {})", name, metric);
      }
      char ch = c.s[c.pos++];
      if (ch == '"') {
        break;
      }
      if (ch != '\\') {
        label.value += ch;
        continue;
      }
      if (c.AtEnd()) {
        return Err("label value not closed with \" (label {} of {})", name, metric);
      }
      char esc = c.s[c.pos++];
      if (esc == '\\' || esc == '"') {
        label.value += esc;
      } else if (esc == 'n') {
        label.value += '\n';
      } else {
        return Err("invalid escape \\{} in the value of label {} of {} (\\\\, \\\" or \\n)", esc,
                   name, metric);
      }
    }
    if (!IsValidUtf8(label.value)) {
      return Err("value of label {} of {} is not valid UTF-8", name, metric);
    }
    c.SkipBlanks();
    if (c.Peek() == ',') {
      ++c.pos;
    } else if (c.Peek() != '}') {
      return Err("expected , or }} after the value of label {} of {}, found {}", name, metric,
                 c.Next());
    }
  }
  std::sort(labels.begin(), labels.end());
  auto dup = std::adjacent_find(labels.begin(), labels.end(),
                                [](const Label& a, const Label& b) { return a.name == b.name; });
  if (dup != labels.end()) {
    return Err("label {} appears twice in {}", dup->name, metric);
  }
  return base::OkStatus();
}

base::Status Parser::ParseSample(Cursor c) {
  std::string_view name = c.While(IsMetricStart, IsMetricChar);
  if (name.empty()) {
    return Err("expected a metric name, found {}", c.Next());
  }
  Sample sample{.name = std::string(name), .line = line_};
  c.SkipBlanks();
  if (c.Peek() == '{') {
    WARPSCOPE_RETURN_IF_ERROR(ParseLabels(c, name, sample.labels));
    c.SkipBlanks();
  }
  std::string_view value = c.Token();
  if (value.empty()) {
    return Err("{} has no value", name);
  }
  switch (ParseFloat(value, sample.value)) {
    case FloatError::kNone:
      break;
    case FloatError::kSyntax:
      return Err("value {} of {} is not a number", Q(value), name);
    case FloatError::kRange:
      return Err("value {} of {} is out of the range of a double", Q(value), name);
  }
  c.SkipBlanks();
  if (!c.AtEnd() && c.Peek() != '#') {
    std::string_view ts = c.Token();
    sample.timestamp_ms = ParseInt64(ts);
    if (!sample.timestamp_ms) {
      return Err("timestamp {} of {} is not an integer (milliseconds)", Q(ts), name);
    }
    c.SkipBlanks();
  }
  if (!c.AtEnd() && c.Peek() != '#') {  // '#': an exemplar, ignored
    return Err("unexpected text after the sample of {}: {}", name, c.Next());
  }
  if (samples_ == limits_.max_samples) {
    return base::ErrStatus(base::StatusCode::kResourceExhausted,
                           "line {}: more than max_samples={} samples", line_, limits_.max_samples);
  }
  ++samples_;
  out_.families[FamilyOf(name)].samples.push_back(std::move(sample));
  return base::OkStatus();
}

// The sample's suffix after its family's name ("" for the bare name).
std::string_view SuffixOf(const Family& family, const Sample& sample) {
  return std::string_view(sample.name).substr(family.name.size());
}

// Moves the label `name` out of `labels`; false when there is none.
bool TakeLabel(std::vector<Label>& labels, std::string_view name, std::string& value) {
  auto it =
      std::find_if(labels.begin(), labels.end(), [&](const Label& l) { return l.name == name; });
  if (it == labels.end()) {
    return false;
  }
  value = std::move(it->value);
  labels.erase(it);
  return true;
}

struct Point {
  double key;  // le or quantile
  double value;
  size_t line;
};

// The sum and count of a series and its points (buckets or quantiles) while assembling.
struct Partial {
  std::vector<Point> points;
  std::optional<double> sum;
  std::optional<double> count;
};

// Sets `slot` from a `_sum` or `_count` sample; a second one is an error.
base::Status SetOnce(std::optional<double>& slot, const Sample& sample) {
  if (slot) {
    return base::InvalidArgument("line {}: second {}{}", sample.line, sample.name,
                                 FormatLabels(sample.labels));
  }
  slot = sample.value;
  return base::OkStatus();
}

// Sorts the points by key and checks what every series needs.
base::Status Finish(const Family& family, const std::vector<Label>& labels, Partial& p,
                    std::string_view key) {
  std::sort(p.points.begin(), p.points.end(),
            [](const Point& a, const Point& b) { return a.key < b.key; });
  auto dup = std::adjacent_find(p.points.begin(), p.points.end(),
                                [](const Point& a, const Point& b) { return a.key == b.key; });
  if (dup != p.points.end()) {
    return base::InvalidArgument("line {}: {} {} of {}{} seen twice (also line {})",
                                 std::max(dup->line, (dup + 1)->line), key, dup->key, family.name,
                                 FormatLabels(labels), std::min(dup->line, (dup + 1)->line));
  }
  if (!p.sum || !p.count) {
    return base::InvalidArgument("{} {}{} has no {}_{} sample", MetricTypeName(family.type),
                                 family.name, FormatLabels(labels), family.name,
                                 p.sum ? "count" : "sum");
  }
  return base::OkStatus();
}

}  // namespace

std::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kSummary:
      return "summary";
    case MetricType::kUntyped:
      break;
  }
  return "untyped";
}

base::Result<Exposition> ParsePromText(std::string_view text, const ParseLimits& limits) {
  return Parser(limits).Run(text);
}

base::Result<std::vector<HistogramSeries>> AssembleHistograms(const Family& family) {
  if (family.type != MetricType::kHistogram) {
    return base::Error(base::InvalidArgument("{} is a {}, not a histogram", family.name,
                                             MetricTypeName(family.type)));
  }
  std::map<std::vector<Label>, Partial> series;
  for (const Sample& s : family.samples) {
    std::string_view suffix = SuffixOf(family, s);
    if (suffix == "_created") {
      continue;
    }
    std::vector<Label> labels = s.labels;
    if (suffix == "_bucket") {
      std::string le;
      if (!TakeLabel(labels, "le", le)) {
        return base::Error(
            base::InvalidArgument("line {}: bucket of {} has no le label", s.line, family.name));
      }
      double bound = 0;
      if (ParseFloat(le, bound) != FloatError::kNone || std::isnan(bound)) {
        return base::Error(base::InvalidArgument("line {}: le {} of {} is not a number", s.line,
                                                 Q(le), family.name));
      }
      series[std::move(labels)].points.push_back(Point{bound, s.value, s.line});
    } else if (suffix == "_sum") {
      WARPSCOPE_RETURN_IF_ERROR(SetOnce(series[std::move(labels)].sum, s));
    } else if (suffix == "_count") {
      WARPSCOPE_RETURN_IF_ERROR(SetOnce(series[std::move(labels)].count, s));
    } else {
      return base::Error(
          base::InvalidArgument("line {}: {} in histogram {} is not a _bucket, _sum or _count",
                                s.line, s.name, family.name));
    }
  }
  std::vector<HistogramSeries> out;
  out.reserve(series.size());
  for (auto& [labels, p] : series) {
    WARPSCOPE_RETURN_IF_ERROR(Finish(family, labels, p, "le"));
    if (p.points.empty() || p.points.back().key != std::numeric_limits<double>::infinity()) {
      return base::Error(base::InvalidArgument("histogram {}{} has no le=\"+Inf\" bucket",
                                               family.name, FormatLabels(labels)));
    }
    HistogramSeries& h =
        out.emplace_back(HistogramSeries{.labels = labels, .sum = *p.sum, .count = *p.count});
    h.buckets.reserve(p.points.size());
    for (const Point& pt : p.points) {
      h.buckets.push_back(HistogramBucket{pt.key, pt.value});
    }
  }
  return out;
}

base::Result<std::vector<SummarySeries>> AssembleSummaries(const Family& family) {
  if (family.type != MetricType::kSummary) {
    return base::Error(base::InvalidArgument("{} is a {}, not a summary", family.name,
                                             MetricTypeName(family.type)));
  }
  std::map<std::vector<Label>, Partial> series;
  for (const Sample& s : family.samples) {
    std::string_view suffix = SuffixOf(family, s);
    std::vector<Label> labels = s.labels;
    if (suffix.empty()) {
      std::string text;
      double q = 0;
      if (!TakeLabel(labels, "quantile", text)) {
        return base::Error(base::InvalidArgument(
            "line {}: sample of summary {} has no quantile label", s.line, family.name));
      }
      if (ParseFloat(text, q) != FloatError::kNone || !(q >= 0 && q <= 1)) {
        return base::Error(base::InvalidArgument(
            "line {}: quantile {} of {} is not a number in [0, 1]", s.line, Q(text), family.name));
      }
      series[std::move(labels)].points.push_back(Point{q, s.value, s.line});
    } else if (suffix == "_sum") {
      WARPSCOPE_RETURN_IF_ERROR(SetOnce(series[std::move(labels)].sum, s));
    } else if (suffix == "_count") {
      WARPSCOPE_RETURN_IF_ERROR(SetOnce(series[std::move(labels)].count, s));
    }  // _created: skipped
  }
  std::vector<SummarySeries> out;
  out.reserve(series.size());
  for (auto& [labels, p] : series) {
    WARPSCOPE_RETURN_IF_ERROR(Finish(family, labels, p, "quantile"));
    SummarySeries& s =
        out.emplace_back(SummarySeries{.labels = labels, .sum = *p.sum, .count = *p.count});
    s.quantiles.reserve(p.points.size());
    for (const Point& pt : p.points) {
      s.quantiles.push_back(SummaryQuantile{pt.key, pt.value});
    }
  }
  return out;
}

}  // namespace warpscope::agent::inference
