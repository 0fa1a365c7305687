// SPDX-License-Identifier: Apache-2.0
// profile_top: the merged profile of a window (server/query/profiles.h) as the functions and
// kernels with the largest self and total shares.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "profiling/frame_kind.h"
#include "server/mcp/tools.h"
#include "server/query/profiles.h"

namespace warpscope::server::mcp {
namespace {

using nlohmann::json;

constexpr size_t kDefaultTop = 10;
constexpr size_t kMaxTop = 50;
// Stored profiles merged: the newest of the window.
constexpr size_t kMaxProfiles = 200;

// One function's figures (functions are named by name and module, so that two libraries'
// "init" stay apart).
struct FunctionTotals {
  std::string name;
  std::string module;
  profiling::FrameKind kind = profiling::FrameKind::kUnknown;
  int64_t self = 0;
  int64_t total = 0;
};

struct Ranking {
  int64_t total = 0;
  std::vector<FunctionTotals> functions;
};

profiling::FrameKind KindOf(const profiling::Frame& f) {
  return f.kind != profiling::FrameKind::kUnknown ? f.kind : profiling::InferFrameKind(f);
}

// Self (the leaf) and total (anywhere on the stack, once per sample) of every function, by
// sample type `value`.
Ranking Rank(const profiling::Profile& profile, size_t value) {
  std::vector<size_t> function_of(profile.frames.size());
  std::map<std::pair<std::string, std::string>, size_t> index;
  Ranking out;
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    const profiling::Frame& f = profile.frames[i];
    auto [it, added] = index.try_emplace({f.function, f.module}, out.functions.size());
    if (added) out.functions.push_back({f.function, f.module, KindOf(f), 0, 0});
    function_of[i] = it->second;
  }
  std::vector<size_t> seen(out.functions.size(), SIZE_MAX);
  for (size_t s = 0; s < profile.samples.size(); ++s) {
    const profiling::Sample& sample = profile.samples[s];
    if (value >= sample.values.size()) continue;
    int64_t v = sample.values[value];
    out.total = profiling::WrappingAdd(out.total, v);
    for (uint32_t frame : sample.stack) {
      if (frame >= function_of.size()) continue;
      size_t fn = function_of[frame];
      if (seen[fn] == s) continue;  // recursion counts once
      seen[fn] = s;
      out.functions[fn].total = profiling::WrappingAdd(out.functions[fn].total, v);
    }
    if (!sample.stack.empty() && sample.stack.back() < function_of.size()) {
      FunctionTotals& leaf = out.functions[function_of[sample.stack.back()]];
      leaf.self = profiling::WrappingAdd(leaf.self, v);
    }
  }
  return out;
}

double Share(int64_t v, int64_t total) {
  return total > 0 ? static_cast<double>(v) / static_cast<double>(total) : 0.0;
}

// The top `n` of `functions` that `keep` accepts, by `by` (self or total), as JSON rows and
// text lines.
template <typename Keep>
json TopRows(const Ranking& ranking, int64_t FunctionTotals::*by, size_t n, Keep keep,
             std::string& text) {
  std::vector<const FunctionTotals*> order;
  for (const FunctionTotals& f : ranking.functions) {
    if (f.*by > 0 && keep(f)) order.push_back(&f);
  }
  std::sort(order.begin(), order.end(), [by](const FunctionTotals* a, const FunctionTotals* b) {
    return a->*by != b->*by ? a->*by > b->*by : a->name < b->name;
  });
  json rows = json::array();
  for (size_t i = 0; i < order.size() && i < n; ++i) {
    const FunctionTotals& f = *order[i];
    double share = Share(f.*by, ranking.total);
    text += fmt::format("\n{}. {:.1f}% {}{} [{}]", i + 1, share * 100, f.name,
                        f.module.empty() ? "" : " (" + f.module + ")",
                        profiling::FrameKindName(f.kind));
    rows.push_back(json{{"function", f.name},
                        {"module", f.module},
                        {"kind", profiling::FrameKindName(f.kind)},
                        {"self", f.self},
                        {"total", f.total},
                        {"share", share}});
  }
  return rows;
}

}  // namespace

json ProfileTopSchema() {
  return json{
      {"type", "object"},
      {"properties",
       {{"host", {{"type", "string"}, {"description", "The host whose profiles to read"}}},
        {"pid", {{"type", "integer"}, {"minimum", 1}, {"description", "Only this process"}}},
        {"kind",
         {{"type", "string"},
          {"enum", json::array({"gpu", "cpu"})},
          {"description",
           "gpu (default): CUDA kernels and their launch stacks; cpu: sampled "
           "CPU stacks"}}},
        {"sample_type",
         {{"type", "string"},
          {"description",
           "The value to rank by, as a type name (\"cpu\", \"gpu\", "
           "\"samples\") or an index; default: the profile's own default"}}},
        {"limit", CountSchema("Functions per list", kDefaultTop, kMaxTop)},
        {"start", TimeArgumentSchema("Start of the window (default: 15 minutes before end)")},
        {"end", TimeArgumentSchema("End of the window (default: now)")}}},
      {"required", json::array({"host"})},
      {"additionalProperties", false}};
}

base::Result<ToolResult> ProfileTop(const ToolContext& ctx, const ToolArgs& args) {
  WARPSCOPE_RETURN_IF_ERROR(
      args.CheckKnown({"host", "pid", "kind", "sample_type", "limit", "start", "end"}));
  query::MergeRequest request;
  ProfileQuery& q = request.query;
  WARPSCOPE_ASSIGN_OR_RETURN(q.host,
                             args.RequiredString("host", "the host whose profiles to read"));
  WARPSCOPE_ASSIGN_OR_RETURN(std::optional<int64_t> pid, args.Id("pid"));
  q.pid = pid.value_or(0);
  WARPSCOPE_ASSIGN_OR_RETURN(std::optional<std::string> kind, args.String("kind"));
  q.kind = kind.value_or("gpu");
  if (q.kind != "gpu" && q.kind != "cpu") {
    return base::Error(base::InvalidArgument("argument \"kind\" must be \"gpu\" or \"cpu\""));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(size_t limit, args.Count("limit", kDefaultTop, kMaxTop));
  WARPSCOPE_ASSIGN_OR_RETURN(std::optional<std::string> sample_type, args.String("sample_type"));
  WARPSCOPE_ASSIGN_OR_RETURN(TimeRange range, args.Range(ctx.now));
  q.start = range.start;
  q.end = range.end;
  q.limit = kMaxProfiles;
  WARPSCOPE_ASSIGN_OR_RETURN(query::MergedProfiles merged,
                             query::MergeStoredProfiles(ctx.storage, request));
  const profiling::Profile& profile = merged.profile;
  if (merged.profiles == 0 || profile.sample_types.empty()) {
    return base::Error(
        base::NotFound("no {} profile of this window decodes: {}", q.kind, merged.first_error));
  }
  std::string type = sample_type.value_or(profile.default_sample_type);
  size_t value = 0;
  if (!type.empty()) {
    base::Result<size_t> found = profiling::FindSampleType(profile.sample_types, type);
    if (!found) return base::Error(found.error().WithContext("argument \"sample_type\""));
    value = *found;
  }
  const profiling::ValueType& vt = profile.sample_types[value];
  Ranking ranking = Rank(profile, value);

  ToolResult r;
  r.text = fmt::format("{} profile of {}{} from {} to {} ({} profiles merged), by {}/{}: total {}",
                       q.kind, q.host, q.pid ? fmt::format(" pid {}", q.pid) : "",
                       FormatTime(q.start), FormatTime(q.end), merged.profiles, vt.type, vt.unit,
                       FormatNumber(static_cast<double>(ranking.total)));
  auto any = [](const FunctionTotals&) { return true; };
  auto kernels_only = [](const FunctionTotals& f) {
    return f.kind == profiling::FrameKind::kKernel;
  };
  std::string self_text, total_text, kernel_text;
  json top_self = TopRows(ranking, &FunctionTotals::self, limit, any, self_text);
  json top_total = TopRows(ranking, &FunctionTotals::total, limit, any, total_text);
  json kernels = TopRows(ranking, &FunctionTotals::total, limit, kernels_only, kernel_text);
  r.text += "\nTop by self (the function itself):" + (self_text.empty() ? " none" : self_text);
  r.text += "\nTop by total (with its callees):" + (total_text.empty() ? " none" : total_text);
  if (!kernel_text.empty()) r.text += "\nGPU kernels:" + kernel_text;
  if (merged.skipped > 0) {
    r.text += fmt::format("\n({} stored profiles did not decode and were left out: {})",
                          merged.skipped, merged.first_error);
  }
  r.structured = json{{"host", q.host},
                      {"kind", q.kind},
                      {"start", FormatTime(q.start)},
                      {"end", FormatTime(q.end)},
                      {"sample_type", {{"type", vt.type}, {"unit", vt.unit}}},
                      {"total", ranking.total},
                      {"profiles", merged.profiles},
                      {"skipped_profiles", merged.skipped},
                      {"top_self", std::move(top_self)},
                      {"top_total", std::move(top_total)},
                      {"kernels", std::move(kernels)}};
  if (q.pid != 0) r.structured["pid"] = q.pid;
  return r;
}

}  // namespace warpscope::server::mcp
