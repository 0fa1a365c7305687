// SPDX-License-Identifier: Apache-2.0
// list_insights and explain_gpu: the insights engine's findings, and one GPU's state from the
// host summary, its findings and the processes on it.
#include <fmt/format.h>

#include <algorithm>

#include "server/insights/insight_engine.h"
#include "server/mcp/tools.h"
#include "server/query/json_format.h"
#include "server/query/range.h"
#include "server/query/summary.h"

namespace warpscope::server::mcp {
namespace {

using nlohmann::json;

constexpr size_t kDefaultFindings = 20;
constexpr size_t kMaxFindings = 100;
constexpr size_t kGpuFindings = 20;
constexpr size_t kGpuProcesses = 10;
// GPUs looked at when resolving a GPU given by UUID without a host.
constexpr size_t kMaxGpuMatches = 50;

constexpr std::string_view kInsightsOff =
    "insights are off on this server: start it without --insights-interval=0s (docs/insights.md)";

// A finding as the list shows it: its figures without the series (bounded size).
json ListedFinding(const insights::Finding& f) {
  json j = insights::FindingJson(f);
  if (j.contains("evidence") && j["evidence"].is_object()) {
    j["evidence"].erase("series");
  }
  return j;
}

std::string FindingLine(const insights::Finding& f) {
  std::string line = fmt::format("[{} {}] {} on {} {} since {}: {}", FindingStateName(f.state),
                                 SeverityName(f.severity), f.title, f.host, f.entity,
                                 FormatTime(f.start), f.summary);
  if (!f.suggestion.empty()) {
    line += " Suggestion: " + f.suggestion;
  }
  return line;
}

base::Result<insights::FindingQuery> ReadFindingQuery(const ToolArgs& args, base::TimePoint now) {
  insights::FindingQuery q;
  WARPSCOPE_ASSIGN_OR_RETURN(std::optional<std::string> host, args.String("host"));
  WARPSCOPE_ASSIGN_OR_RETURN(std::optional<std::string> entity, args.String("entity"));
  WARPSCOPE_ASSIGN_OR_RETURN(std::optional<std::string> rule, args.String("rule"));
  WARPSCOPE_ASSIGN_OR_RETURN(std::optional<std::string> severity, args.String("severity"));
  WARPSCOPE_ASSIGN_OR_RETURN(std::optional<std::string> state, args.String("state"));
  q.host = host.value_or("");
  q.entity = entity.value_or("");
  q.rule = rule.value_or("");
  if (severity) {
    base::Result<insights::Severity> s = insights::ParseSeverity(*severity);
    if (!s) return base::Error(s.error().WithContext("argument \"severity\""));
    q.severity = *s;
  }
  if (state) {
    base::Result<insights::FindingState> s = insights::ParseFindingState(*state);
    if (!s) return base::Error(s.error().WithContext("argument \"state\""));
    q.state = *s;
  }
  if (args.Has("start") || args.Has("end")) {
    WARPSCOPE_ASSIGN_OR_RETURN(TimeRange range, args.Range(now));
    q.start = range.start;
    q.end = range.end;
  }
  WARPSCOPE_ASSIGN_OR_RETURN(q.limit, args.Count("limit", kDefaultFindings, kMaxFindings));
  return q;
}

// The metric line of explain_gpu: "utilization 0.9 (avg 0.85, max 0.95)".
std::string MetricLine(std::string_view key, const query::MetricSummary& m) {
  if (!m.latest && !m.avg && !m.max) return "";
  std::string line = fmt::format("{} {}", key, m.latest ? FormatNumber(*m.latest) : "n/a");
  std::string extra;
  if (m.avg) extra += "avg " + FormatNumber(*m.avg);
  if (m.max) extra += (extra.empty() ? "" : ", ") + ("max " + FormatNumber(*m.max));
  return extra.empty() ? line : fmt::format("{} ({})", line, extra);
}

json SummaryJson(const query::MetricSummary& m) {
  return json{{"latest", query::Number(m.latest)},
              {"avg", query::Number(m.avg)},
              {"max", query::Number(m.max)}};
}

// The host and entity id of the GPU `gpu` (a UUID, or an index on `host`).
struct GpuRef {
  std::string host;
  std::string id;
};

base::Result<GpuRef> ResolveGpu(Storage& storage, const std::string& gpu, const std::string& host) {
  EntityQuery q;
  q.kind = model::EntityKind::kGpu;
  q.host = host;
  q.limit = kMaxGpuMatches;
  bool by_index = gpu.find_first_not_of("0123456789") == std::string::npos;
  if (by_index) {
    if (host.empty()) {
      return base::Error(base::InvalidArgument(
          "GPU \"{}\" is an index: give its host too, or the GPU's UUID (GPU-...)", gpu));
    }
    q.attributes.Set(model::attr::kGpuIndex, gpu);
  } else {
    q.id_prefix = gpu;
  }
  WARPSCOPE_ASSIGN_OR_RETURN(std::vector<EntityRecord> found, storage.ListEntities(q));
  std::vector<GpuRef> matches;
  for (const EntityRecord& e : found) {
    if (by_index || e.entity.id == gpu) matches.push_back({e.host, e.entity.id});
  }
  if (matches.empty()) {
    return base::Error(base::NotFound(
        "no GPU \"{}\"{}: top_entities with kind \"gpu\" and metric gpu.utilization lists the "
        "GPUs with their UUIDs and hosts",
        gpu, host.empty() ? "" : " on host " + host));
  }
  if (matches.size() > 1) {
    std::string hosts;
    for (const GpuRef& m : matches) hosts += (hosts.empty() ? "" : ", ") + m.host;
    return base::Error(base::InvalidArgument(
        "GPU \"{}\" is on several hosts ({}): give the host argument", gpu, hosts));
  }
  return matches[0];
}

}  // namespace

json ListInsightsSchema() {
  auto str = [](std::string_view d) { return json{{"type", "string"}, {"description", d}}; };
  return json{{"type", "object"},
              {"properties",
               {{"host", str("Only findings on this host")},
                {"entity", str("Only findings on this entity (a GPU UUID, pid/..., or the host)")},
                {"rule", str("Only this rule, e.g. idle_gpu_memory, cooling_failure, xid_error")},
                {"state",
                 {{"type", "string"},
                  {"enum", json::array({"pending", "firing", "resolved"})},
                  {"description", "Only findings in this state"}}},
                {"severity",
                 {{"type", "string"},
                  {"enum", json::array({"info", "ticket", "page"})},
                  {"description", "Only findings of this severity"}}},
                {"limit", CountSchema("Findings to return", kDefaultFindings, kMaxFindings)},
                {"start", TimeArgumentSchema("Only findings that held after this time")},
                {"end", TimeArgumentSchema("Only findings that started before this time")}}},
              {"additionalProperties", false}};
}

base::Result<ToolResult> ListInsights(const ToolContext& ctx, const ToolArgs& args) {
  WARPSCOPE_RETURN_IF_ERROR(
      args.CheckKnown({"host", "entity", "rule", "state", "severity", "limit", "start", "end"}));
  if (ctx.insight_engine == nullptr) {
    return base::Error(base::NotFound("{}", kInsightsOff));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(insights::FindingQuery q, ReadFindingQuery(args, ctx.now));
  std::vector<insights::RuleInfo> rules = ctx.insight_engine->Rules();
  if (!q.rule.empty() &&
      std::none_of(rules.begin(), rules.end(), [&](const auto& r) { return r.name == q.rule; })) {
    std::string names;
    for (const insights::RuleInfo& r : rules) {
      names += names.empty() ? "" : ", ";
      names += r.name;
    }
    return base::Error(base::InvalidArgument(
        "argument \"rule\": unknown rule \"{}\"; the rules are {}", q.rule.substr(0, 64), names));
  }
  std::vector<insights::Finding> findings = ctx.insight_engine->Findings(q);
  ToolResult r;
  json list = json::array();
  size_t firing = 0, pending = 0;
  for (const insights::Finding& f : findings) {
    firing += f.state == insights::FindingState::kFiring;
    pending += f.state == insights::FindingState::kPending;
    r.text += "\n- " + FindingLine(f);
    list.push_back(ListedFinding(f));
  }
  r.text = fmt::format("{} findings ({} firing, {} pending){}", findings.size(), firing, pending,
                       findings.empty() ? ": nothing matched these filters." : ":") +
           r.text;
  r.structured =
      json{{"findings", std::move(list)}, {"totals", {{"firing", firing}, {"pending", pending}}}};
  return r;
}

json ExplainGpuSchema() {
  return json{
      {"type", "object"},
      {"properties",
       {{"gpu",
         {{"type", "string"},
          {"description", "The GPU: its UUID (GPU-...), or its index (\"0\") with host"}}},
        {"host", {{"type", "string"}, {"description", "The GPU's host (needed with an index)"}}},
        {"start", TimeArgumentSchema("Start of the window (default: 15 minutes before end)")},
        {"end", TimeArgumentSchema("End of the window (default: now)")}}},
      {"required", json::array({"gpu"})},
      {"additionalProperties", false}};
}

base::Result<ToolResult> ExplainGpu(const ToolContext& ctx, const ToolArgs& args) {
  WARPSCOPE_RETURN_IF_ERROR(args.CheckKnown({"gpu", "host", "start", "end"}));
  WARPSCOPE_ASSIGN_OR_RETURN(std::string gpu,
                             args.RequiredString("gpu", "a GPU UUID (GPU-...) or an index"));
  WARPSCOPE_ASSIGN_OR_RETURN(std::optional<std::string> host_arg, args.String("host"));
  WARPSCOPE_ASSIGN_OR_RETURN(TimeRange range, args.Range(ctx.now));
  WARPSCOPE_ASSIGN_OR_RETURN(GpuRef ref, ResolveGpu(ctx.storage, gpu, host_arg.value_or("")));
  WARPSCOPE_ASSIGN_OR_RETURN(query::HostSummary summary,
                             query::SummarizeHost(ctx.storage, ref.host, range.start, range.end));

  ToolResult r;
  json metrics = json::object();
  model::Labels attributes;
  std::string metric_text;
  if (auto it = summary.gpus.find(ref.id); it != summary.gpus.end()) {
    attributes = it->second.attributes;
    for (const auto& [key, m] : it->second.metrics) {
      metrics[key] = SummaryJson(m);
      std::string line = MetricLine(key, m);
      if (!line.empty()) metric_text += "\n- " + line;
    }
  }
  std::string_view index = attributes.Get(model::attr::kGpuIndex);
  std::string_view model_name = attributes.Get(model::attr::kGpuModel);
  r.text = fmt::format("GPU {}{}{} on host {}, {} to {}.", ref.id,
                       index.empty() ? "" : fmt::format(" (index {})", index),
                       model_name.empty() ? "" : fmt::format(", {}", model_name), ref.host,
                       FormatTime(range.start), FormatTime(range.end));
  r.text += metric_text.empty()
                ? "\nNo metrics of this GPU in the window: is its agent pushing?"
                : "\nMetrics (latest, with the window's average and maximum):" + metric_text;

  json findings = json::array();
  if (ctx.insight_engine != nullptr) {
    insights::FindingQuery fq;
    fq.host = ref.host;
    fq.entity = ref.id;
    fq.limit = kGpuFindings;
    std::string lines;
    for (const insights::Finding& f : ctx.insight_engine->Findings(fq)) {
      if (f.state == insights::FindingState::kResolved) continue;
      lines += "\n- " + FindingLine(f);
      findings.push_back(ListedFinding(f));
    }
    r.text += lines.empty() ? "\nNo open findings." : "\nOpen findings:" + lines;
  } else {
    r.text += "\nFindings: insights are off on this server.";
  }

  TopQuery pq;
  pq.metric = "gpu.process.memory.used";
  pq.match.host = ref.host;
  pq.match.entity_kind = model::EntityKind::kProcess;
  std::string_view uuid = attributes.Get(model::attr::kGpuUuid);
  pq.match.labels.Set(model::attr::kGpuUuid, uuid.empty() ? std::string_view(ref.id) : uuid);
  pq.start = range.start;
  pq.end = range.end;
  pq.aggregation = Aggregation::kMax;
  pq.limit = kGpuProcesses;
  json processes = json::array();
  base::Result<std::vector<query::TopRow>> rows = query::QueryTop(ctx.storage, pq, 0);
  std::string lines;
  if (rows) {
    for (const query::TopRow& row : *rows) {
      const TopEntry& e = row.entry;
      std::string_view exe = e.entity_attributes.Get("process.executable.name");
      std::string_view pid = e.entity_attributes.Get(model::attr::kPid);
      lines +=
          fmt::format("\n- {} (pid {}): {} bytes of GPU memory at most",
                      exe.empty() ? e.entity : exe, pid.empty() ? "?" : pid, FormatNumber(e.value));
      processes.push_back(json{{"entity", e.entity},
                               {"attributes", query::LabelsJson(e.entity_attributes)},
                               {"memory_used_max_bytes", query::Number(e.value)},
                               {"memory_used_latest_bytes", query::Number(e.latest)}});
    }
  }
  r.text += lines.empty() ? "\nNo processes with GPU memory on it in the window."
                          : "\nProcesses:" + lines;
  r.structured = json{{"host", ref.host},
                      {"gpu", ref.id},
                      {"attributes", query::LabelsJson(attributes)},
                      {"start", FormatTime(range.start)},
                      {"end", FormatTime(range.end)},
                      {"metrics", std::move(metrics)},
                      {"open_findings", std::move(findings)},
                      {"processes", std::move(processes)}};
  return r;
}

}  // namespace warpscope::server::mcp
