// SPDX-License-Identifier: Apache-2.0
// The tool table and what the tools share.
#include "server/mcp/tools.h"

#include <fmt/format.h>

#include <cmath>

namespace warpscope::server::mcp {
namespace {

using nlohmann::json;

constexpr ToolSpec kTools[] = {
    {"list_insights",
     "The problems warpscope's insights engine found (idle GPUs holding memory, thermal or power "
     "throttling, XID errors, low tensor use, ...), newest first, each with its evidence, "
     "suggested fix and cost. Filter by host, entity, rule, state (pending, firing, resolved) or "
     "severity (info, ticket, page).",
     ListInsightsSchema, ListInsights},
    {"top_entities",
     "Rank GPUs, processes or hosts by a metric over a time range, e.g. the GPUs with the "
     "highest gpu.utilization or the processes with the most gpu.process.memory.used.",
     TopEntitiesSchema, TopEntities},
    {"explain_gpu",
     "One GPU's recent state in words: its latest key metrics (utilization, SM and tensor "
     "activity, memory, power, temperature), its open findings and the processes on it.",
     ExplainGpuSchema, ExplainGpu},
    {"query_metric",
     "The values of one metric over time for a host, GPU or process: one series per entity and "
     "label set, as [Unix ms, value] points at a step, with min, mean, max and latest.",
     QueryMetricSchema, QueryMetric},
    {"profile_top",
     "The hottest functions and GPU kernels of a host (or one process) over a time window, from "
     "the merged CPU or GPU profiles: the top N by self and by total share.",
     ProfileTopSchema, ProfileTop},
};

}  // namespace

std::span<const ToolSpec> AllTools() { return kTools; }

ToolResult ToolFailure(const base::Status& status) {
  ToolResult r;
  r.is_error = true;
  switch (status.code()) {
    case base::StatusCode::kInvalidArgument:
      r.text = "Invalid arguments: " + status.message();
      break;
    case base::StatusCode::kNotFound:
      r.text = "Not found: " + status.message();
      break;
    default:
      r.text = "The server could not answer: " + status.message() +
               ". Try again; if it persists, the server log has the details.";
  }
  return r;
}

json TimeArgumentSchema(std::string_view what) {
  return json{{"description",
               fmt::format("{}: Unix milliseconds, RFC 3339 in UTC (\"2026-12-05T10:00:00Z\"), "
                           "\"now\" or relative to now (\"-15m\", \"-2h\")",
                           what)},
              {"type", json::array({"string", "integer"})}};
}

json CountSchema(std::string_view what, size_t fallback, size_t max) {
  return json{{"description", fmt::format("{} (default {}, at most {})", what, fallback, max)},
              {"type", "integer"},
              {"minimum", 1},
              {"maximum", max}};
}

std::string FormatNumber(double v) {
  if (!std::isfinite(v)) {
    return "n/a";
  }
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    return fmt::format("{}", static_cast<int64_t>(v));
  }
  return fmt::format("{:.4g}", v);
}

}  // namespace warpscope::server::mcp
