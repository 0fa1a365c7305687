// SPDX-License-Identifier: Apache-2.0
// The MCP tools: each reads its arguments (tool_args.h), asks server/query or the insights
// engine, and answers a text for a reader with the same facts as JSON. One table, AllTools().
// Tools run on their caller's thread and keep no state.
#ifndef WARPSCOPE_SERVER_MCP_TOOLS_H_
#define WARPSCOPE_SERVER_MCP_TOOLS_H_

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/time.h"
#include "server/mcp/tool_args.h"
#include "server/storage/storage.h"

namespace warpscope::server {
namespace insights {
class InsightEngine;
}  // namespace insights

namespace mcp {

// What a tool answers: `text` for a reader and `structured` (an object) with the same facts;
// or, when it failed on its input, is_error with a text saying what was wrong and how to fix it.
struct ToolResult {
  std::string text;
  nlohmann::json structured;  // null with is_error
  bool is_error = false;
};

// A failed call: the status's message (and its code's meaning).
ToolResult ToolFailure(const base::Status& status);

struct ToolContext {
  Storage& storage;
  const insights::InsightEngine* insight_engine;  // null when insights are off
  base::TimePoint now;
};

struct ToolSpec {
  std::string_view name;
  std::string_view description;
  nlohmann::json (*input_schema)();  // a JSON Schema object
  base::Result<ToolResult> (*run)(const ToolContext& context, const ToolArgs& args);
};

// Every tool, in the order tools/list gives them.
std::span<const ToolSpec> AllTools();

// The tools, one file each group (tools_metrics.cc, tools_insights.cc, tools_profiles.cc).
// A returned error is the caller's input (InvalidArgument, NotFound) or the storage's; McpServer
// answers either as an isError result.
base::Result<ToolResult> TopEntities(const ToolContext& context, const ToolArgs& args);
nlohmann::json TopEntitiesSchema();
base::Result<ToolResult> QueryMetric(const ToolContext& context, const ToolArgs& args);
nlohmann::json QueryMetricSchema();
base::Result<ToolResult> ListInsights(const ToolContext& context, const ToolArgs& args);
nlohmann::json ListInsightsSchema();
base::Result<ToolResult> ExplainGpu(const ToolContext& context, const ToolArgs& args);
nlohmann::json ExplainGpuSchema();
base::Result<ToolResult> ProfileTop(const ToolContext& context, const ToolArgs& args);
nlohmann::json ProfileTopSchema();

// Schema pieces the tools share: the time arguments and a bounded count.
nlohmann::json TimeArgumentSchema(std::string_view what);
nlohmann::json CountSchema(std::string_view what, size_t fallback, size_t max);
// A number for text: "0.93", "612", "1.2e+09" (up to 3 significant decimals).
std::string FormatNumber(double v);

}  // namespace mcp
}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_MCP_TOOLS_H_
