// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/inference/prom_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace warpscope::agent::inference {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr double kInf = std::numeric_limits<double>::infinity();

// What vLLM's /metrics looks like (prometheus_client, text format 0.0.4), cut down.
constexpr std::string_view kVllm =
    R"(# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 18342.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.02",model_name="meta-llama/Llama-3.1-8B-Instruct"} 12.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 40.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 42.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 42.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.875
# HELP vllm:time_to_first_token_seconds_created Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds_created gauge
vllm:time_to_first_token_seconds_created{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.7333e+09
)";

std::vector<Label> L(std::vector<std::pair<std::string, std::string>> pairs) {
  std::vector<Label> out;
  for (auto& [n, v] : pairs) {
    out.push_back(Label{n, v});
  }
  return out;
}

Exposition ParseOk(std::string_view text, const ParseLimits& limits = {}) {
  base::Result<Exposition> e = ParsePromText(text, limits);
  EXPECT_TRUE(e.has_value()) << e.error().ToString();
  return e.has_value() ? std::move(*e) : Exposition{};
}

// The message of a rejection; fails the test when the text parses.
std::string ParseError(std::string_view text, const ParseLimits& limits = {},
                       base::StatusCode code = base::StatusCode::kInvalidArgument) {
  base::Result<Exposition> e = ParsePromText(text, limits);
  if (e.has_value()) {
    ADD_FAILURE() << "parsed: " << text;
    return "";
  }
  EXPECT_EQ(e.error().code(), code) << e.error().ToString();
  return e.error().message();
}

TEST(ParsePromTextTest, VllmExposition) {
  Exposition e = ParseOk(kVllm);
  ASSERT_EQ(e.families.size(), 4u);
  const std::vector<Label> model =
      L({{"engine", "0"}, {"model_name", "meta-llama/Llama-3.1-8B-Instruct"}});

  const Family& running = e.families[0];
  EXPECT_EQ(running.name, "vllm:num_requests_running");
  EXPECT_EQ(running.type, MetricType::kGauge);
  EXPECT_EQ(running.help, "Number of requests in model execution batches.");
  ASSERT_EQ(running.samples.size(), 1u);
  EXPECT_EQ(running.samples[0].name, "vllm:num_requests_running");
  EXPECT_EQ(running.samples[0].labels, model);
  EXPECT_EQ(running.samples[0].value, 3.0);
  EXPECT_FALSE(running.samples[0].timestamp_ms.has_value());
  EXPECT_EQ(running.samples[0].line, 3u);
  EXPECT_EQ(running.line, 1u);

  EXPECT_EQ(e.families[1].name, "vllm:prompt_tokens_total");
  EXPECT_EQ(e.families[1].type, MetricType::kCounter);
  EXPECT_EQ(e.families[1].samples.at(0).value, 18342.0);

  const Family& ttft = e.families[2];
  EXPECT_EQ(ttft.name, "vllm:time_to_first_token_seconds");
  EXPECT_EQ(ttft.type, MetricType::kHistogram);
  EXPECT_EQ(ttft.line, 7u);
  ASSERT_EQ(ttft.samples.size(), 6u);
  EXPECT_EQ(ttft.samples[0].name, "vllm:time_to_first_token_seconds_bucket");
  EXPECT_EQ(
      ttft.samples[0].labels,
      L({{"engine", "0"}, {"le", "0.001"}, {"model_name", "meta-llama/Llama-3.1-8B-Instruct"}}));
  EXPECT_EQ(ttft.samples[4].name, "vllm:time_to_first_token_seconds_count");
  EXPECT_EQ(ttft.samples[5].name, "vllm:time_to_first_token_seconds_sum");

  // prometheus_client gives _created its own gauge family in the 0.0.4 format.
  EXPECT_EQ(e.families[3].name, "vllm:time_to_first_token_seconds_created");
  EXPECT_EQ(e.families[3].type, MetricType::kGauge);
  EXPECT_EQ(e.families[3].line, 15u);
  EXPECT_EQ(e.families[3].samples.at(0).value, 1.7333e9);

  base::Result<std::vector<HistogramSeries>> h = AssembleHistograms(ttft);
  ASSERT_TRUE(h.has_value()) << h.error().ToString();
  ASSERT_EQ(h->size(), 1u);
  EXPECT_EQ((*h)[0].labels, model);
  ASSERT_EQ((*h)[0].buckets.size(), 4u);
  std::vector<std::pair<double, double>> buckets;
  for (const HistogramBucket& b : (*h)[0].buckets) {
    buckets.emplace_back(b.le, b.count);
  }
  EXPECT_THAT(buckets, ElementsAre(std::pair(0.001, 0.0), std::pair(0.02, 12.0),
                                   std::pair(0.1, 40.0), std::pair(kInf, 42.0)));
  EXPECT_EQ((*h)[0].sum, 1.875);
  EXPECT_EQ((*h)[0].count, 42.0);
}

TEST(ParsePromTextTest, HistogramSeriesAreGroupedAndBucketsSortedWithInfLast) {
  Exposition e = ParseOk(
      "# TYPE lat histogram\n"
      "lat_bucket{le=\"+Inf\",model=\"b\"} 5\n"
      "lat_bucket{model=\"b\",le=\"1\"} 2\n"
      "lat_bucket{le=\"0.5\",model=\"b\"} 1\n"
      "lat_bucket{le=\"+Inf\",model=\"a\"} 7\n"
      "lat_sum{model=\"b\"} 3.5\n"
      "lat_count{model=\"b\"} 5\n"
      "lat_sum{model=\"a\"} 9\n"
      "lat_count{model=\"a\"} 7\n"
      "lat_created{model=\"a\"} 1700000000\n");
  ASSERT_EQ(e.families.size(), 1u);
  auto h = AssembleHistograms(e.families[0]);
  ASSERT_TRUE(h.has_value()) << h.error().ToString();
  ASSERT_EQ(h->size(), 2u);
  EXPECT_EQ((*h)[0].labels, L({{"model", "a"}}));
  ASSERT_EQ((*h)[0].buckets.size(), 1u);
  EXPECT_EQ((*h)[0].buckets[0].le, kInf);
  EXPECT_EQ((*h)[0].count, 7);
  EXPECT_EQ((*h)[1].labels, L({{"model", "b"}}));
  ASSERT_EQ((*h)[1].buckets.size(), 3u);
  EXPECT_EQ((*h)[1].buckets[0].le, 0.5);
  EXPECT_EQ((*h)[1].buckets[1].le, 1);
  EXPECT_EQ((*h)[1].buckets[1].count, 2);
  EXPECT_EQ((*h)[1].buckets[2].le, kInf);
  EXPECT_EQ((*h)[1].sum, 3.5);
}

TEST(ParsePromTextTest, Summary) {
  Exposition e = ParseOk(
      "# HELP rpc_seconds RPC latency.\n"
      "# TYPE rpc_seconds summary\n"
      "rpc_seconds{service=\"gen\",quantile=\"0.99\"} 0.25\n"
      "rpc_seconds{service=\"gen\",quantile=\"0.5\"} 0.05\n"
      "rpc_seconds{service=\"gen\",quantile=\"0.9\"} NaN\n"
      "rpc_seconds_sum{service=\"gen\"} 12.5\n"
      "rpc_seconds_count{service=\"gen\"} 200\n");
  ASSERT_EQ(e.families.size(), 1u);
  EXPECT_EQ(e.families[0].type, MetricType::kSummary);
  auto s = AssembleSummaries(e.families[0]);
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  ASSERT_EQ(s->size(), 1u);
  EXPECT_EQ((*s)[0].labels, L({{"service", "gen"}}));
  ASSERT_EQ((*s)[0].quantiles.size(), 3u);
  EXPECT_EQ((*s)[0].quantiles[0].quantile, 0.5);
  EXPECT_EQ((*s)[0].quantiles[0].value, 0.05);
  EXPECT_EQ((*s)[0].quantiles[1].quantile, 0.9);
  EXPECT_TRUE(std::isnan((*s)[0].quantiles[1].value));
  EXPECT_EQ((*s)[0].quantiles[2].quantile, 0.99);
  EXPECT_EQ((*s)[0].sum, 12.5);
  EXPECT_EQ((*s)[0].count, 200);
}

TEST(ParsePromTextTest, EscapesInHelpAndLabelValues) {
  Exposition e = ParseOk(
      "# HELP m A \\\\ backslash,\\na newline and \\t kept as written.\n"
      "m{path=\"C:\\\\tmp\\\\x\",quote=\"say "
      "\\\"hi\\\"\",nl=\"a\\nb\",utf8=\"p\xc3\xa9\",empty=\"\"} 1\n");
  ASSERT_EQ(e.families.size(), 1u);
  EXPECT_EQ(e.families[0].help, "A \\ backslash,\na newline and \\t kept as written.");
  EXPECT_EQ(e.families[0].samples.at(0).labels, L({{"empty", ""},
                                                   {"nl", "a\nb"},
                                                   {"path", "C:\\tmp\\x"},
                                                   {"quote", "say \"hi\""},
                                                   {"utf8", "p\xc3\xa9"}}));
}

TEST(ParsePromTextTest, ValuesAndTimestamps) {
  Exposition e = ParseOk(
      "a 1.5e3 1700000000123\n"
      "b +Inf\n"
      "c -Inf -5\n"
      "d NaN\n"
      "e -0.25\n"
      "f .5\n"
      "g +7 +12\n"
      "h inf\n"
      "i -Infinity\n"
      "j 1E-3\n");
  ASSERT_EQ(e.families.size(), 10u);
  auto v = [&](size_t i) { return e.families[i].samples.at(0).value; };
  auto ts = [&](size_t i) { return e.families[i].samples.at(0).timestamp_ms; };
  EXPECT_EQ(v(0), 1500);
  EXPECT_EQ(ts(0), 1700000000123);
  EXPECT_EQ(v(1), kInf);
  EXPECT_EQ(v(2), -kInf);
  EXPECT_EQ(ts(2), -5);
  EXPECT_TRUE(std::isnan(v(3)));
  EXPECT_EQ(v(4), -0.25);
  EXPECT_EQ(v(5), 0.5);
  EXPECT_EQ(v(6), 7);
  EXPECT_EQ(ts(6), 12);
  EXPECT_EQ(v(7), kInf);
  EXPECT_EQ(v(8), -kInf);
  EXPECT_EQ(v(9), 0.001);
  for (size_t i : {1, 3, 4, 5, 7, 8, 9}) {
    EXPECT_FALSE(ts(i).has_value()) << i;
  }
  for (const Family& f : e.families) {
    EXPECT_EQ(f.type, MetricType::kUntyped) << f.name;
  }
}

TEST(ParsePromTextTest, BlanksTabsCrlfTrailingCommaExemplarsCommentsAndEof) {
  Exposition e = ParseOk(
      "# a comment\r\n"
      "\r\n"
      "#   TYPE   tok_total   counter  \r\n"
      "  \t\r\n"
      "  tok_total \t{ a = \"1\" ,\tb=\"2\", }  \t 10   1234  \r\n"
      "# another comment: # TYPE tok_total gauge is not read here\r\n"
      "lat_bucket{le=\"0.1\"} 3 # {trace_id=\"abc\"} 0.05 1700000000.5\r\n"
      "lat_bucket{le=\"+Inf\"} 4 1000 # {trace_id=\"def\"} 2\r\n"
      "# EOF\r\n"
      "\r\n");
  ASSERT_EQ(e.families.size(), 2u);
  EXPECT_EQ(e.families[0].name, "tok_total");
  EXPECT_EQ(e.families[0].type, MetricType::kCounter);
  ASSERT_EQ(e.families[0].samples.size(), 1u);
  EXPECT_EQ(e.families[0].samples[0].labels, L({{"a", "1"}, {"b", "2"}}));
  EXPECT_EQ(e.families[0].samples[0].value, 10);
  EXPECT_EQ(e.families[0].samples[0].timestamp_ms, 1234);
  EXPECT_EQ(e.families[0].samples[0].line, 5u);
  // Without TYPE, lat_bucket is an untyped family of its own.
  EXPECT_EQ(e.families[1].name, "lat_bucket");
  EXPECT_EQ(e.families[1].type, MetricType::kUntyped);
  ASSERT_EQ(e.families[1].samples.size(), 2u);
  EXPECT_EQ(e.families[1].samples[0].value, 3);
  EXPECT_FALSE(e.families[1].samples[0].timestamp_ms.has_value());
  EXPECT_EQ(e.families[1].samples[1].timestamp_ms, 1000);
}

TEST(ParsePromTextTest, SuffixesJoinTheirTypedFamilyOnly) {
  Exposition e = ParseOk(
      "# TYPE req counter\n"
      "req_total 5\n"
      "req_created 1.7e9\n"
      "# TYPE g gauge\n"
      "g_total 1\n"
      "# TYPE s summary\n"
      "s_bucket 1\n"
      "s_count 2\n"
      "untyped_sum 3\n");
  ASSERT_EQ(e.families.size(), 6u);
  EXPECT_EQ(e.families[0].name, "req");
  ASSERT_EQ(e.families[0].samples.size(), 2u);
  EXPECT_EQ(e.families[0].samples[0].name, "req_total");
  EXPECT_EQ(e.families[0].samples[1].name, "req_created");
  EXPECT_EQ(e.families[1].name, "g");
  EXPECT_TRUE(e.families[1].samples.empty());
  EXPECT_EQ(e.families[2].name, "g_total");  // a gauge has no _total
  EXPECT_EQ(e.families[3].name, "s");
  ASSERT_EQ(e.families[3].samples.size(), 1u);  // s_count; a summary has no _bucket
  EXPECT_EQ(e.families[3].samples[0].name, "s_count");
  EXPECT_EQ(e.families[4].name, "s_bucket");
  EXPECT_EQ(e.families[5].name, "untyped_sum");  // no family "untyped" to join
}

TEST(ParsePromTextTest, HelpBeforeOrWithoutTypeAndEmptyInput) {
  Exposition e = ParseOk("# HELP x Some x.\nx 1\n# HELP y\n# HELP\n");
  ASSERT_EQ(e.families.size(), 2u);
  EXPECT_EQ(e.families[0].help, "Some x.");
  EXPECT_EQ(e.families[0].type, MetricType::kUntyped);
  EXPECT_EQ(e.families[1].name, "y");
  EXPECT_EQ(e.families[1].help, "");
  EXPECT_TRUE(ParseOk("").families.empty());
  EXPECT_TRUE(ParseOk("\n\n# only comments\n").families.empty());
  // The last line without a newline.
  EXPECT_EQ(ParseOk("x 2").families.at(0).samples.at(0).value, 2);
}

TEST(ParsePromTextTest, SyntaxErrorsNameTheLineAndTheProblem) {
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {"ok 1\nm{a=\"x} 1\n", "line 2: label value not closed with \" (label a of m)"},
      {"m{a=\"x\\\n", "line 1: label value not closed with \" (label a of m)"},
      {"m{a=\"\\t\"} 1\n", "line 1: invalid escape \\t in the value of label a of m"},
      {"m{a=x} 1\n", "line 1: value of label a of m does not start with \""},
      {"m{a \"x\"} 1\n", "line 1: expected = after label name a of m, found \"\"x\"} 1\""},
      {"m{1a=\"x\"} 1\n", "line 1: expected a label name or } in the labels of m, found \"1a"},
      {"m{,} 1\n", "line 1: expected a label name or } in the labels of m"},
      {"m{a=\"x\" b=\"y\"} 1\n", "line 1: expected , or } after the value of label a of m"},
      {"m{a=\"x\"",
       "line 1: expected , or } after the value of label a of m, found the end of the"},
      {"m{a=\"x\",", "line 1: expected a label name or } in the labels of m, found the end of the"},
      {"m{a=\"1\",a=\"2\"} 1\n", "line 1: label a appears twice in m"},
      {"m{a=\"\xff\"} 1\n", "line 1: value of label a of m is not valid UTF-8"},
      {"1m 1\n", "line 1: expected a metric name, found \"1m 1\""},
      {"m-x 1\n", "line 1: value \"-x\" of m is not a number"},
      {"m\n", "line 1: m has no value"},
      {"m{a=\"b\"}\n", "line 1: m has no value"},
      {"m abc\n", "line 1: value \"abc\" of m is not a number"},
      {"m 1.5.5\n", "line 1: value \"1.5.5\" of m is not a number"},
      {"m 0x10\n", "line 1: value \"0x10\" of m is not a number"},
      {"m -NaN\n", "line 1: value \"-NaN\" of m is not a number"},
      {"m nan(1)\n", "line 1: value \"nan(1)\" of m is not a number"},
      {"m 1e999\n", "line 1: value \"1e999\" of m is out of the range of a double"},
      {"m 1 1.5\n", "line 1: timestamp \"1.5\" of m is not an integer (milliseconds)"},
      {"m 1 99999999999999999999\n", "line 1: timestamp \"99999999999999999999\" of m is not"},
      {"m 1 2 3\n", "line 1: unexpected text after the sample of m: \"3\""},
      {"# TYPE m gauge\n# TYPE m counter\n", "line 2: second TYPE for m (the first is on line 1)"},
      {"# HELP m a\n# HELP m b\n", "line 2: second HELP for m (the first is on line 1)"},
      {"m 1\n# TYPE m gauge\n", "line 2: TYPE for m comes after its samples (line 1)"},
      {"# HELP h x\nh_sum 1\nh_count 2\n# TYPE h histogram\n",
       "line 4: TYPE for h comes after its samples (line 2)"},
      {"c_total 1\n# TYPE c counter\n", "line 2: TYPE for c comes after its samples (line 1)"},
      {"# TYPE m\n", "line 1: TYPE for m has no type"},
      {"# TYPE m gauge extra\n", "line 1: TYPE for m has text after the type: \"extra\""},
      {"# TYPE m timer\n", "line 1: unknown type \"timer\" for m"},
      {"# TYPE 1m gauge\n", "line 1: TYPE names an invalid metric name \"1m\""},
      {"# HELP m-x y\n", "line 1: HELP names an invalid metric name \"m-x\""},
      {"# HELP m \xc3\n", "line 1: HELP of m is not valid UTF-8"},
      {"m 1\n# EOF\nn 2\n", "line 3: text after # EOF"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseError(c.text), HasSubstr(c.message)) << c.text;
  }
}

TEST(ParsePromTextTest, Limits) {
  constexpr auto kExhausted = base::StatusCode::kResourceExhausted;
  EXPECT_EQ(ParseLimits().max_bytes, 4u << 20);
  EXPECT_EQ(ParseLimits().max_samples, 100'000u);
  EXPECT_EQ(ParseLimits().max_labels_per_sample, 64u);
  EXPECT_EQ(ParseLimits().max_line_length, 64u << 10);

  ParseLimits bytes;
  bytes.max_bytes = 11;
  EXPECT_EQ(ParseOk("m 1\nn 2\nx 3", bytes).families.size(), 3u);  // exactly 11 bytes
  EXPECT_EQ(ParseError("m 1\nn 2\nx 3\n", bytes, kExhausted),
            "the exposition has 12 bytes, more than max_bytes=11");

  ParseLimits samples;
  samples.max_samples = 2;
  EXPECT_EQ(ParseOk("a 1\n# TYPE b gauge\nb 2\n", samples).families.size(), 2u);
  EXPECT_EQ(ParseError("a 1\nb 2\nc 3\n", samples, kExhausted),
            "line 3: more than max_samples=2 samples");

  ParseLimits labels;
  labels.max_labels_per_sample = 2;
  EXPECT_EQ(ParseOk("m{a=\"1\",b=\"2\"} 1\n", labels).families.at(0).samples.at(0).labels.size(),
            2u);
  EXPECT_EQ(ParseError("m 0\nm{a=\"1\",b=\"2\",c=\"3\"} 1\n", labels, kExhausted),
            "line 2: m has more than max_labels_per_sample=2 labels");

  ParseLimits line;
  line.max_line_length = 8;
  EXPECT_EQ(ParseOk("mmmmmm 1\r\n", line).families.size(), 1u);  // 8 bytes without the CRLF
  EXPECT_EQ(ParseError("m 1\n# 4567890\n", line, kExhausted),
            "line 2: 9 bytes, more than max_line_length=8");
  EXPECT_EQ(ParseError("mmmmmmm 1", line, kExhausted),
            "line 1: 9 bytes, more than max_line_length=8");
}

TEST(ParsePromTextTest, DefaultLimitsHoldRealisticSizes) {
  std::string text = "# TYPE lat histogram\n";
  for (int i = 0; i < 1000; ++i) {
    text += "lat_bucket{model=\"m" + std::to_string(i) + "\",le=\"+Inf\"} 1\n";
    text += "lat_sum{model=\"m" + std::to_string(i) + "\"} 0.5\n";
    text += "lat_count{model=\"m" + std::to_string(i) + "\"} 1\n";
  }
  Exposition e = ParseOk(text);
  ASSERT_EQ(e.families.size(), 1u);
  EXPECT_EQ(e.families[0].samples.size(), 3000u);
  auto h = AssembleHistograms(e.families[0]);
  ASSERT_TRUE(h.has_value()) << h.error().ToString();
  EXPECT_EQ(h->size(), 1000u);
}

std::string HistogramError(std::string_view text) {
  Exposition e = ParseOk(text);
  if (e.families.empty()) {
    return "no family";
  }
  auto h = AssembleHistograms(e.families[0]);
  if (h.has_value()) {
    return "assembled";
  }
  EXPECT_EQ(h.error().code(), base::StatusCode::kInvalidArgument);
  return h.error().message();
}

TEST(AssembleHistogramsTest, Errors) {
  const std::string head = "# TYPE h histogram\n";
  const std::string tail = "h_sum 1\nh_count 2\n";
  EXPECT_EQ(HistogramError(head + "h_bucket{le=\"+Inf\"} 2\n" + tail), "assembled");
  EXPECT_EQ(HistogramError(head + "h_bucket 2\n" + tail), "line 2: bucket of h has no le label");
  EXPECT_EQ(HistogramError(head + "h_bucket{le=\"x\"} 2\n" + tail),
            "line 2: le \"x\" of h is not a number");
  EXPECT_EQ(HistogramError(head + "h_bucket{le=\"NaN\"} 2\n" + tail),
            "line 2: le \"NaN\" of h is not a number");
  EXPECT_EQ(HistogramError(head +
                           "h_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 2\n"
                           "h_bucket{le=\"1.0\"} 2\n" +
                           tail),
            "line 4: le 1 of h{} seen twice (also line 2)");
  EXPECT_EQ(HistogramError(head + "h_bucket{le=\"1\",x=\"a\"} 2\nh_sum{x=\"a\"} 1\n"
                                  "h_count{x=\"a\"} 2\n"),
            "histogram h{x=\"a\"} has no le=\"+Inf\" bucket");
  EXPECT_EQ(HistogramError(head + "h_bucket{le=\"+Inf\"} 2\nh_count 2\n"),
            "histogram h{} has no h_sum sample");
  EXPECT_EQ(HistogramError(head + "h_bucket{le=\"+Inf\"} 2\nh_sum 2\n"),
            "histogram h{} has no h_count sample");
  EXPECT_EQ(HistogramError(head + "h_bucket{le=\"+Inf\"} 2\n" + tail + "h_sum 3\n"),
            "line 5: second h_sum{}");
  EXPECT_EQ(HistogramError(head + "h 2\n"),
            "line 2: h in histogram h is not a _bucket, _sum or _count");

  Exposition gauge = ParseOk("# TYPE g gauge\ng 1\n");
  auto h = AssembleHistograms(gauge.families.at(0));
  ASSERT_FALSE(h.has_value());
  EXPECT_EQ(h.error().message(), "g is a gauge, not a histogram");
}

TEST(AssembleSummariesTest, Errors) {
  auto error = [](std::string_view text) -> std::string {
    Exposition e = ParseOk(text);
    auto s = AssembleSummaries(e.families.at(0));
    return s.has_value() ? "assembled" : s.error().message();
  };
  const std::string head = "# TYPE s summary\n";
  const std::string tail = "s_sum 1\ns_count 2\n";
  EXPECT_EQ(error(head + tail), "assembled");  // no quantiles: allowed
  EXPECT_EQ(error(head + "s 1\n" + tail), "line 2: sample of summary s has no quantile label");
  EXPECT_EQ(error(head + "s{quantile=\"1.5\"} 1\n" + tail),
            "line 2: quantile \"1.5\" of s is not a number in [0, 1]");
  EXPECT_EQ(error(head + "s{quantile=\"NaN\"} 1\n" + tail),
            "line 2: quantile \"NaN\" of s is not a number in [0, 1]");
  EXPECT_EQ(error(head + "s{quantile=\"0.5\"} 1\ns{quantile=\"0.50\"} 1\n" + tail),
            "line 3: quantile 0.5 of s{} seen twice (also line 2)");
  EXPECT_EQ(error(head + "s_sum{a=\"1\"} 1\n"), "summary s{a=\"1\"} has no s_count sample");
  EXPECT_EQ(error("# TYPE h histogram\n"), "h is a histogram, not a summary");
}

}  // namespace
}  // namespace warpscope::agent::inference
