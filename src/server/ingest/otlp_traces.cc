// SPDX-License-Identifier: Apache-2.0
#include "server/ingest/otlp_traces.h"

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "server/ingest/otlp_attributes.h"
#include "server/ingest/request_body.h"

namespace warpscope::server {
namespace {

using base::Result;
using ingest_internal::AppendHex;
using ingest_internal::ToLabels;
using traces::SpanRole;
using traces::TraceSpan;

namespace collector = ::opentelemetry::proto::collector::trace::v1;
namespace otlp = ::opentelemetry::proto::trace::v1;

constexpr BodyMessage kRequestBody{
    .what = "OTLP traces",
    .size_note = "",
    .protobuf =
        "protobuf opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest "
        "(or a string in it is not valid UTF-8); send OTLP/HTTP protobuf, or JSON with "
        "Content-Type: application/json",
    .json = "OTLP/JSON for ExportTraceServiceRequest"};

// The lifecycle phases and the span names (normalised) that mean them.
struct PhaseName {
  std::string_view name;
  std::string_view phase;
};
constexpr std::array<PhaseName, 16> kPhaseNames = {{
    {"receive", "receive"},
    {"received", "receive"},
    {"tokenize", "tokenize"},
    {"tokenise", "tokenize"},
    {"tokenization", "tokenize"},
    {"queue", "queue"},
    {"queued", "queue"},
    {"waiting", "queue"},
    {"prefill", "prefill"},
    {"decode", "decode"},
    {"detokenize", "detokenize"},
    {"detokenise", "detokenize"},
    {"detokenization", "detokenize"},
    {"respond", "respond"},
    {"response", "respond"},
    {"send_response", "respond"},
}};

constexpr std::string_view kLlmRequest = "llm_request";
constexpr std::string_view kLatencyPrefix = "gen_ai.latency.";
constexpr std::string_view kQueue = "gen_ai.latency.time_in_queue";
constexpr std::string_view kTtft = "gen_ai.latency.time_to_first_token";
constexpr std::string_view kE2e = "gen_ai.latency.e2e";
constexpr std::string_view kPrefill = "gen_ai.latency.time_in_model_prefill";
constexpr std::string_view kDecode = "gen_ai.latency.time_in_model_decode";

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The phase a span's name stands for, or "" when it is no lifecycle phase.
std::string_view PhaseOf(std::string_view span_name) {
  size_t cut = span_name.find_last_of("./:");
  std::string last = Lower(cut == std::string_view::npos ? span_name : span_name.substr(cut + 1));
  for (const PhaseName& p : kPhaseNames) {
    if (p.name == last) return p.phase;
  }
  return {};
}

std::optional<double> Number(const model::Labels& attrs, std::string_view key) {
  std::string_view text = attrs.Get(key);
  if (text.empty()) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

std::optional<int64_t> Count(const model::Labels& attrs, std::string_view key) {
  std::optional<double> v = Number(attrs, key);
  if (!v || *v < 0 || *v > 9e15) return std::nullopt;
  return static_cast<int64_t>(*v);
}

// Seconds as nanoseconds, for latencies of at most a day (larger ones are not latencies).
std::optional<int64_t> Nanos(const model::Labels& attrs, std::string_view key) {
  std::optional<double> v = Number(attrs, key);
  if (!v || *v < 0 || *v > 86400) return std::nullopt;
  return static_cast<int64_t>(std::llround(*v * 1e9));
}

bool HasLatency(const model::Labels& attrs) {
  for (const auto& [k, v] : attrs) {
    if (k.starts_with(kLatencyPrefix)) return true;
  }
  return false;
}

std::string Hex(std::string_view bytes) {
  std::string out;
  AppendHex(bytes, out);
  return out;
}

// OTLP/JSON writes ids as hex, which the protobuf JSON parser, expecting base64, decoded to
// 3/4 of the text's length (every hex digit is a base64 letter, and 32 or 16 digits need no
// padding). Encoding those bytes as base64 again gives the hex text back.
std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t n = (static_cast<unsigned char>(bytes[i]) << 16) |
                 (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                 static_cast<unsigned char>(bytes[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(n >> shift) & 63];
  }
  if (i < bytes.size()) return {};  // not what 32 or 16 hex digits decode to
  return out;
}

std::string FromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    auto digit = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    int hi = digit(hex[i]);
    int lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return {};
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

// A JSON id back to its bytes: `size` bytes sent as base64 are kept; hex text (decoded by the
// parser as base64 to 3/4 of 2 * size bytes) is recovered and decoded.
void FixJsonId(std::string* id, size_t size) {
  if (id->empty() || id->size() == size) return;
  if (id->size() * 4 == size * 2 * 3) {
    std::string hex = Base64(*id);
    std::string bytes = FromHex(hex);
    if (bytes.size() == size) {
      *id = std::move(bytes);
      return;
    }
  }
  // Leave it: the span is rejected for its id's length, naming it.
}

void FixJsonIds(collector::ExportTraceServiceRequest& req) {
  for (auto& rs : *req.mutable_resource_spans()) {
    for (auto& ss : *rs.mutable_scope_spans()) {
      for (auto& span : *ss.mutable_spans()) {
        FixJsonId(span.mutable_trace_id(), 16);
        FixJsonId(span.mutable_span_id(), 8);
        FixJsonId(span.mutable_parent_span_id(), 8);
      }
    }
  }
}

class Converter {
 public:
  Converter(const OtlpTraceOptions& options, DecodedOtlpTraces& out)
      : options_(options), out_(out) {}

  void AddResource(const otlp::ResourceSpans& rs, int index) {
    model::Labels resource = ToLabels(rs.resource().attributes());
    traces::SpanOrigin origin;
    origin.host = std::string(resource.Get("host.name"));
    if (origin.host.empty()) origin.host = options_.default_host;
    origin.service = std::string(resource.Get("service.name"));
    if (std::optional<int64_t> pid = Count(resource, "process.pid")) origin.pid = *pid;
    std::string service_model = origin.service.starts_with("unknown_service") ? "" : origin.service;
    // Which spans of this resource are the parents of phases: those are requests too.
    std::set<std::pair<std::string, std::string>> phase_parents;
    for (const auto& ss : rs.scope_spans()) {
      for (const otlp::Span& span : ss.spans()) {
        if (!span.parent_span_id().empty() && !PhaseOf(span.name()).empty()) {
          phase_parents.emplace(span.trace_id(), span.parent_span_id());
        }
      }
    }
    for (int s = 0; s < rs.scope_spans_size(); ++s) {
      const auto& spans = rs.scope_spans(s).spans();
      for (int i = 0; i < spans.size(); ++i) {
        const otlp::Span& span = spans[i];
        std::string what = fmt::format("resource_spans[{}].scope_spans[{}].spans[{}] ({})", index,
                                       s, i, span.name().empty() ? "no name" : span.name());
        if (!Valid(span, what)) continue;
        AddSpan(span, origin, service_model,
                phase_parents.contains({span.trace_id(), span.span_id()}));
      }
    }
  }

 private:
  void Reject(const std::string& what, std::string_view why) {
    if (out_.rejected_spans++ == 0) out_.first_rejection = fmt::format("{}: {}", what, why);
  }

  bool Valid(const otlp::Span& span, const std::string& what) {
    if (span.trace_id().size() != 16 || span.trace_id() == std::string(16, '\0')) {
      Reject(what, "the trace id is not 16 bytes (32 hex digits) or is all zero");
      return false;
    }
    if (span.span_id().size() != 8) {
      Reject(what, "the span id is not 8 bytes (16 hex digits)");
      return false;
    }
    if (!span.parent_span_id().empty() && span.parent_span_id().size() != 8) {
      Reject(what, "the parent span id is neither empty nor 8 bytes (16 hex digits)");
      return false;
    }
    if (span.start_time_unix_nano() == 0 ||
        span.start_time_unix_nano() > static_cast<uint64_t>(INT64_MAX) ||
        span.end_time_unix_nano() > static_cast<uint64_t>(INT64_MAX)) {
      Reject(what, "no start time (start_time_unix_nano)");
      return false;
    }
    if (span.end_time_unix_nano() < span.start_time_unix_nano()) {
      Reject(what, "the span ends before it starts");
      return false;
    }
    return true;
  }

  void AddSpan(const otlp::Span& span, const traces::SpanOrigin& origin,
               const std::string& service_model, bool parent_of_phase) {
    TraceSpan t;
    t.trace_id = Hex(span.trace_id());
    t.span_id = Hex(span.span_id());
    t.parent_span_id = Hex(span.parent_span_id());
    t.name = span.name();
    t.start_ns = static_cast<int64_t>(span.start_time_unix_nano());
    t.end_ns = static_cast<int64_t>(span.end_time_unix_nano());
    t.error = span.status().code() == otlp::Status::STATUS_CODE_ERROR;
    t.origin = origin;
    t.attributes = ToLabels(span.attributes());
    std::string_view model = t.attributes.Get("gen_ai.response.model");
    if (model.empty()) model = t.attributes.Get("gen_ai.request.model");
    const bool request = span.kind() != otlp::Span::SPAN_KIND_CLIENT &&
                         (span.name() == kLlmRequest || HasLatency(t.attributes) ||
                          !model.empty() || parent_of_phase);
    std::string_view phase = PhaseOf(span.name());
    if (!request && (phase.empty() || span.parent_span_id().empty())) {
      ++out_.ignored_spans;
      return;
    }
    if (!request) {
      t.role = SpanRole::kPhase;
      t.phase = std::string(phase);
      out_.spans.push_back(std::move(t));
      return;
    }
    t.role = SpanRole::kRequest;
    t.model = !model.empty()           ? std::string(model)
              : !service_model.empty() ? service_model
                                       : "unknown";
    t.request_id = std::string(t.attributes.Get("gen_ai.request.id"));
    t.ttft_ns = Nanos(t.attributes, kTtft);
    t.prompt_tokens = Count(t.attributes, "gen_ai.usage.prompt_tokens");
    if (!t.prompt_tokens) t.prompt_tokens = Count(t.attributes, "gen_ai.usage.input_tokens");
    t.completion_tokens = Count(t.attributes, "gen_ai.usage.completion_tokens");
    if (!t.completion_tokens) {
      t.completion_tokens = Count(t.attributes, "gen_ai.usage.output_tokens");
    }
    t.cached_tokens = Count(t.attributes, "gen_ai.usage.cache_read.input_tokens");
    std::vector<TraceSpan> derived = DerivedPhases(t);
    out_.spans.push_back(std::move(t));
    for (TraceSpan& d : derived) out_.spans.push_back(std::move(d));
  }

  // The phases a request span's latency attributes describe (vLLM's llm_request). vLLM V1
  // reports queue, prefill and decode times that end at the last token, which is the end of
  // e2e: they are laid out backwards from there, and what precedes the queue is `preprocess`.
  // Older vLLM reports only the queue time and the time to first token, from the arrival: laid
  // out forwards (queue, then prefill up to the first token, then decode to the end).
  static std::vector<TraceSpan> DerivedPhases(const TraceSpan& request) {
    const model::Labels& a = request.attributes;
    std::optional<int64_t> queue = Nanos(a, kQueue);
    std::optional<int64_t> prefill = Nanos(a, kPrefill);
    std::optional<int64_t> decode = Nanos(a, kDecode);
    std::optional<int64_t> e2e = Nanos(a, kE2e);
    const int64_t start = request.start_ns;
    const int64_t end = e2e ? start + *e2e : request.end_ns;
    std::vector<TraceSpan> out;
    auto add = [&](std::string_view phase, std::string_view from, int64_t from_ns, int64_t to_ns) {
      from_ns = std::max(from_ns, start);
      if (to_ns <= from_ns) return;
      TraceSpan p;
      p.role = SpanRole::kPhase;
      p.trace_id = request.trace_id;
      p.span_id = request.span_id + "/" + std::string(phase);
      p.parent_span_id = request.span_id;
      p.name = std::string(from);
      p.phase = std::string(phase);
      p.start_ns = from_ns;
      p.end_ns = to_ns;
      p.origin = request.origin;
      p.attributes.Set("warpscope.derived_from", from);
      out.push_back(std::move(p));
    };
    if (prefill || decode) {
      int64_t cursor = end;
      for (auto [phase, key, ns] :
           {std::tuple{"decode", kDecode, decode}, std::tuple{"prefill", kPrefill, prefill},
            std::tuple{"queue", kQueue, queue}}) {
        if (!ns) continue;
        add(phase, key, cursor - *ns, cursor);
        cursor -= *ns;
      }
      add("preprocess", kE2e, start, cursor);
      std::reverse(out.begin(), out.end());
    } else if (queue || request.ttft_ns) {
      const int64_t queued = queue.value_or(0);
      if (queue) add("queue", kQueue, start, start + queued);
      if (request.ttft_ns) {
        add("prefill", kTtft, start + queued, start + *request.ttft_ns);
        add("decode", kE2e, start + *request.ttft_ns, end);
      }
    }
    return out;
  }

  const OtlpTraceOptions& options_;
  DecodedOtlpTraces& out_;
};

DecodedOtlpTraces Convert(const collector::ExportTraceServiceRequest& req,
                          const OtlpTraceOptions& options) {
  DecodedOtlpTraces out;
  Converter converter(options, out);
  for (int r = 0; r < req.resource_spans_size(); ++r) {
    converter.AddResource(req.resource_spans(r), r);
  }
  return out;
}

}  // namespace

Result<DecodedOtlpTraces> DecodeOtlpTracesProto(std::string_view bytes,
                                                const OtlpTraceOptions& options) {
  collector::ExportTraceServiceRequest req;
  WARPSCOPE_RETURN_IF_ERROR(ParseProtobufBody(bytes, req, kRequestBody));
  return Convert(req, options);
}

Result<DecodedOtlpTraces> DecodeOtlpTracesJson(std::string_view json,
                                               const OtlpTraceOptions& options) {
  collector::ExportTraceServiceRequest req;
  WARPSCOPE_RETURN_IF_ERROR(ParseJsonBody(json, req, kRequestBody));
  FixJsonIds(req);
  return Convert(req, options);
}

std::string EncodeOtlpTracesResponse(const DecodedOtlpTraces& decoded, bool as_json) {
  collector::ExportTraceServiceResponse resp;
  if (decoded.rejected_spans > 0) {
    auto* partial = resp.mutable_partial_success();
    partial->set_rejected_spans(static_cast<int64_t>(decoded.rejected_spans));
    partial->set_error_message(decoded.first_rejection);
  }
  if (!as_json) return resp.SerializeAsString();
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_enums_as_ints = true;
  if (!google::protobuf::util::MessageToJsonString(resp, &out, options).ok()) return "{}";
  return out;
}

}  // namespace warpscope::server
