// SPDX-License-Identifier: Apache-2.0
#include "integrations/grafana_dashboards.h"

#include <fmt/format.h>

#include <utility>

namespace warpscope::integrations {
namespace {

using nlohmann::json;

constexpr int kColumns = 24;  // Grafana's grid width

// The selector of the fleet's hosts, of one host, and of one GPU of it.
constexpr std::string_view kFleetSel = R"(Hostname=~"$Hostname")";
constexpr std::string_view kHostSel = R"(Hostname="$Hostname")";
constexpr std::string_view kHostGpusSel = R"(Hostname="$Hostname", gpu=~"$gpu")";
constexpr std::string_view kGpuSel = R"(Hostname="$Hostname", gpu="$gpu")";

json Datasource() { return {{"type", "prometheus"}, {"uid", "${datasource}"}}; }

// The URL of dashboard `uid` carrying the given variables, the time range and the datasource.
std::string DashboardUrl(std::string_view uid, std::string_view vars) {
  return fmt::format("/d/{}?{}${{__url_time_range}}&${{datasource:queryparam}}", uid,
                     vars.empty() ? "" : fmt::format("{}&", vars));
}

struct Query {
  std::string expr;
  std::string legend;
};

enum class Link { kNone, kHost, kGpu };

struct PanelSpec {
  std::string type;  // timeseries, stat, table
  std::string title;
  std::string unit;
  std::vector<Query> queries;
  int w = 12;
  int h = 8;
  Link link = Link::kNone;
  std::string description;
};

// Places panels left to right, rows of up to 24 columns; a row is as tall as its tallest panel.
class Dashboard {
 public:
  Dashboard(std::string_view uid, std::string_view title, std::string_view description)
      : json_({{"uid", uid},
               {"title", title},
               {"description", description},
               {"tags", {"warpscope", "gpu"}},
               {"editable", true},
               {"graphTooltip", 1},
               {"schemaVersion", 39},
               {"version", 1},
               {"timezone", "browser"},
               {"time", {{"from", "now-1h"}, {"to", "now"}}},
               {"refresh", "30s"},
               {"annotations", {{"list", json::array()}}},
               {"links", json::array()},
               {"panels", json::array()},
               {"templating", {{"list", json::array()}}}}) {
    json_["templating"]["list"].push_back({{"name", "datasource"},
                                           {"label", "Data source"},
                                           {"type", "datasource"},
                                           {"query", "prometheus"},
                                           {"current", json::object()},
                                           {"hide", 0},
                                           {"refresh", 1},
                                           {"regex", ""},
                                           {"includeAll", false},
                                           {"multi", false}});
  }

  void Variable(std::string_view name, std::string_view label, std::string_view query, bool multi) {
    json v = {{"name", name},
              {"label", label},
              {"type", "query"},
              {"datasource", Datasource()},
              {"query", query},
              {"definition", query},
              {"refresh", 2},
              {"sort", 3},
              {"multi", multi},
              {"includeAll", multi},
              {"current", json::object()},
              {"hide", 0},
              {"regex", ""}};
    json_["templating"]["list"].push_back(std::move(v));
  }

  void DashboardLink(std::string_view title, std::string_view uid, std::string_view vars) {
    json_["links"].push_back({{"title", title},
                              {"type", "link"},
                              {"url", DashboardUrl(uid, vars)},
                              {"icon", "dashboard"},
                              {"tooltip", ""},
                              {"tags", json::array()},
                              {"asDropdown", false},
                              {"includeVars", false},
                              {"keepTime", false},
                              {"targetBlank", false}});
  }

  void Add(const PanelSpec& spec) {
    if (x_ + spec.w > kColumns) {
      x_ = 0;
      y_ += row_h_;
      row_h_ = 0;
    }
    json targets = json::array();
    for (size_t i = 0; i < spec.queries.size(); ++i) {
      json t = {{"refId", std::string(1, static_cast<char>('A' + i))},
                {"datasource", Datasource()},
                {"expr", spec.queries[i].expr},
                {"legendFormat", spec.queries[i].legend},
                {"range", spec.type == "timeseries"},
                {"instant", spec.type != "timeseries"}};
      if (spec.type == "table") t["format"] = "table";
      targets.push_back(std::move(t));
    }
    json defaults = {{"unit", spec.unit}};
    if (spec.link != Link::kNone) defaults["links"] = json::array({LinkOf(spec)});
    json panel = {
        {"id", next_id_++},
        {"type", spec.type},
        {"title", spec.title},
        {"description", spec.description},
        {"datasource", Datasource()},
        {"gridPos", {{"x", x_}, {"y", y_}, {"w", spec.w}, {"h", spec.h}}},
        {"targets", std::move(targets)},
        {"fieldConfig", {{"defaults", std::move(defaults)}, {"overrides", json::array()}}},
        {"options", OptionsOf(spec.type)}};
    if (spec.type == "table") {
      // One row per series: the instant queries' labels as columns, the value last.
      panel["transformations"] =
          json::array({{{"id", "organize"},
                        {"options", {{"excludeByName", {{"Time", true}, {"__name__", true}}}}}}});
    }
    json_["panels"].push_back(std::move(panel));
    x_ += spec.w;
    row_h_ = std::max(row_h_, spec.h);
  }

  GrafanaDashboard Finish(std::string file_name) && {
    return {std::move(file_name), std::move(json_)};
  }

 private:
  static json LinkOf(const PanelSpec& spec) {
    // Tables carry the labels as fields, time series as the series' labels.
    const bool table = spec.type == "table";
    const std::string host = table ? "${__data.fields.Hostname}" : "${__field.labels.Hostname}";
    const std::string gpu = table ? "${__data.fields.gpu}" : "${__field.labels.gpu}";
    if (spec.link == Link::kHost) {
      return {{"title", "This host"},
              {"url", DashboardUrl(kHostDashboardUid, "var-Hostname=" + host)}};
    }
    return {{"title", "This GPU"},
            {"url",
             DashboardUrl(kGpuDashboardUid, fmt::format("var-Hostname={}&var-gpu={}", host, gpu))}};
  }

  static json OptionsOf(const std::string& type) {
    if (type == "timeseries") {
      return {{"legend", {{"displayMode", "list"}, {"placement", "bottom"}, {"showLegend", true}}},
              {"tooltip", {{"mode", "multi"}, {"sort", "desc"}}}};
    }
    if (type == "stat") {
      return {{"reduceOptions", {{"calcs", {"lastNotNull"}}, {"fields", ""}, {"values", false}}},
              {"colorMode", "value"},
              {"graphMode", "area"},
              {"textMode", "auto"}};
    }
    return {{"showHeader", true}, {"cellHeight", "sm"}};
  }

  json json_;
  int next_id_ = 1;
  int x_ = 0;
  int y_ = 0;
  int row_h_ = 0;
};

std::string Sel(std::string_view metric, std::string_view selector) {
  return fmt::format("{}{{{}}}", metric, selector);
}

// The XIDs of `counter` (warpscope_gpu_xid_errors_total with a selector) within `range`, per
// series. A series is born with its first XID, which increase() cannot see: one absent `range`
// ago counts with its whole value.
std::string XidsWithin(const std::string& counter, std::string_view range) {
  return fmt::format("(increase({0}[{1}]) > 0 or ({0} unless {0} offset {1}))", counter, range);
}

GrafanaDashboard Fleet() {
  Dashboard d(kFleetDashboardUid, "warpscope / Fleet",
              "Every host and GPU: where to look first. Click a host or a GPU to open it.");
  d.Variable("Hostname", "Host", "label_values(DCGM_FI_DEV_GPU_UTIL, Hostname)", true);
  d.DashboardLink("Host", kHostDashboardUid, "");
  d.DashboardLink("GPU", kGpuDashboardUid, "");
  const auto s = [](std::string_view m) { return Sel(m, kFleetSel); };
  d.Add(
      {"stat", "GPUs", "none", {{fmt::format("count({})", s("DCGM_FI_DEV_GPU_UTIL")), ""}}, 4, 4});
  d.Add({"stat",
         "Mean utilization",
         "percent",
         {{fmt::format("avg({})", s("DCGM_FI_DEV_GPU_UTIL")), ""}},
         5,
         4});
  d.Add({"stat",
         "Power",
         "watt",
         {{fmt::format("sum({})", s("DCGM_FI_DEV_POWER_USAGE")), ""}},
         5,
         4});
  d.Add({"stat",
         "Hottest GPU",
         "celsius",
         {{fmt::format("max({})", s("DCGM_FI_DEV_GPU_TEMP")), ""}},
         5,
         4});
  d.Add({"stat",
         "XID errors in range",
         "none",
         {{fmt::format("sum({}) or vector(0)",
                       XidsWithin(s("warpscope_gpu_xid_errors_total"), "$__range")),
           ""}},
         5,
         4});
  d.Add({"timeseries",
         "GPU utilization by host",
         "percent",
         {{fmt::format("avg by (Hostname) ({})", s("DCGM_FI_DEV_GPU_UTIL")), "{{Hostname}}"}},
         12,
         8,
         Link::kHost});
  d.Add({"timeseries",
         "Power vs limit by host",
         "watt",
         {{fmt::format("sum by (Hostname) ({})", s("DCGM_FI_DEV_POWER_USAGE")), "{{Hostname}}"},
          {fmt::format("sum by (Hostname) ({})", s("DCGM_FI_DEV_POWER_MGMT_LIMIT")),
           "{{Hostname}} limit"}},
         12,
         8,
         Link::kHost});
  d.Add({"timeseries",
         "Hottest GPU by host",
         "celsius",
         {{fmt::format("max by (Hostname) ({})", s("DCGM_FI_DEV_GPU_TEMP")), "{{Hostname}}"}},
         12,
         8,
         Link::kHost});
  d.Add({"timeseries",
         "GPU memory used by host",
         "bytes",
         {{fmt::format("sum by (Hostname) ({}) * 1048576", s("DCGM_FI_DEV_FB_USED")),
           "{{Hostname}}"}},
         12,
         8,
         Link::kHost});
  d.Add({"table",
         "Top hosts by utilization",
         "percent",
         {{fmt::format("topk(10, avg by (Hostname) ({}))", s("DCGM_FI_DEV_GPU_UTIL")), ""}},
         8,
         8,
         Link::kHost});
  d.Add(
      {"table",
       "Hottest GPUs",
       "celsius",
       {{fmt::format("topk(10, max by (Hostname, gpu, modelName) ({}))", s("DCGM_FI_DEV_GPU_TEMP")),
         ""}},
       8,
       8,
       Link::kGpu});
  d.Add({"table",
         "GPUs with XID errors in range",
         "none",
         {{fmt::format("sum by (Hostname, gpu, xid) ({})",
                       XidsWithin(s("warpscope_gpu_xid_errors_total"), "$__range")),
           ""}},
         8,
         8,
         Link::kGpu});
  return std::move(d).Finish("warpscope-fleet.json");
}

GrafanaDashboard Host() {
  Dashboard d(kHostDashboardUid, "warpscope / Host",
              "One host: its GPUs, the processes holding GPU memory, its CPUs, memory and links. "
              "Click a GPU to open it.");
  d.Variable("Hostname", "Host", "label_values(DCGM_FI_DEV_GPU_UTIL, Hostname)", false);
  d.Variable("gpu", "GPU", R"(label_values(DCGM_FI_DEV_GPU_UTIL{Hostname="$Hostname"}, gpu))",
             true);
  d.DashboardLink("Fleet", kFleetDashboardUid, "");
  d.DashboardLink("GPU", kGpuDashboardUid, "var-Hostname=${Hostname}");
  const auto g = [](std::string_view m) { return Sel(m, kHostGpusSel); };
  const auto h = [](std::string_view m) { return Sel(m, kHostSel); };
  d.Add({"timeseries",
         "GPU utilization",
         "percent",
         {{g("DCGM_FI_DEV_GPU_UTIL"), "GPU {{gpu}}"}},
         12,
         8,
         Link::kGpu});
  d.Add({"timeseries",
         "Power",
         "watt",
         {{g("DCGM_FI_DEV_POWER_USAGE"), "GPU {{gpu}}"},
          {fmt::format("max({})", g("DCGM_FI_DEV_POWER_MGMT_LIMIT")), "limit"}},
         12,
         8,
         Link::kGpu});
  d.Add({"timeseries",
         "Temperature",
         "celsius",
         {{g("DCGM_FI_DEV_GPU_TEMP"), "GPU {{gpu}}"},
          {fmt::format("min({})", g("DCGM_FI_DEV_SLOWDOWN_TEMP")), "slowdown"}},
         12,
         8,
         Link::kGpu});
  d.Add({"timeseries",
         "GPU memory used",
         "bytes",
         {{g("DCGM_FI_DEV_FB_USED") + " * 1048576", "GPU {{gpu}}"}},
         12,
         8,
         Link::kGpu});
  d.Add({"table",
         "Processes' GPU memory",
         "bytes",
         {{fmt::format("sum by (gpu, pid, executable) ({})",
                       h("warpscope_gpu_process_memory_used_bytes")),
           ""}},
         12,
         8});
  d.Add({"timeseries",
         "XID errors since the agent started",
         "none",
         {{fmt::format("sum by (gpu, xid) ({})", g("warpscope_gpu_xid_errors_total")),
           "GPU {{gpu}} XID {{xid}}"}},
         12,
         8,
         Link::kGpu});
  d.Add({"timeseries",
         "Host CPU busy",
         "percentunit",
         {{fmt::format("1 - {}", Sel("warpscope_host_cpu_utilization_ratio",
                                     R"(Hostname="$Hostname", mode="idle")")),
           "busy"}},
         12,
         8});
  d.Add({"timeseries",
         "Host memory",
         "bytes",
         {{h("warpscope_host_memory_used_bytes"), "used"},
          {h("warpscope_host_memory_total_bytes"), "total"}},
         12,
         8});
  d.Add({"timeseries",
         "NVLink throughput",
         "Bps",
         {{fmt::format("sum by (gpu) ({})", g("warpscope_gpu_nvlink_transmit_bytes_per_second")),
           "GPU {{gpu}} transmit"},
          {fmt::format("sum by (gpu) ({})", g("warpscope_gpu_nvlink_receive_bytes_per_second")),
           "GPU {{gpu}} receive"}},
         12,
         8,
         Link::kGpu});
  d.Add({"timeseries",
         "PCIe throughput",
         "Bps",
         {{g("warpscope_gpu_pcie_transmit_bytes_per_second"), "GPU {{gpu}} transmit"},
          {g("warpscope_gpu_pcie_receive_bytes_per_second"), "GPU {{gpu}} receive"}},
         12,
         8,
         Link::kGpu});
  return std::move(d).Finish("warpscope-host.json");
}

GrafanaDashboard Gpu() {
  Dashboard d(kGpuDashboardUid, "warpscope / GPU",
              "One GPU: utilization, power, temperatures with their thresholds, memory, clocks "
              "and their throttle reasons, errors, links and its processes.");
  d.Variable("Hostname", "Host", "label_values(DCGM_FI_DEV_GPU_UTIL, Hostname)", false);
  d.Variable("gpu", "GPU", R"(label_values(DCGM_FI_DEV_GPU_UTIL{Hostname="$Hostname"}, gpu))",
             false);
  d.DashboardLink("Fleet", kFleetDashboardUid, "");
  d.DashboardLink("Host", kHostDashboardUid, "var-Hostname=${Hostname}");
  const auto s = [](std::string_view m) { return Sel(m, kGpuSel); };
  d.Add({"stat", "Utilization", "percent", {{s("DCGM_FI_DEV_GPU_UTIL"), ""}}, 6, 4});
  d.Add({"stat", "Power", "watt", {{s("DCGM_FI_DEV_POWER_USAGE"), ""}}, 6, 4});
  d.Add({"stat", "Temperature", "celsius", {{s("DCGM_FI_DEV_GPU_TEMP"), ""}}, 6, 4});
  d.Add({"stat", "Memory used", "bytes", {{s("DCGM_FI_DEV_FB_USED") + " * 1048576", ""}}, 6, 4});
  d.Add({"timeseries",
         "Utilization",
         "percent",
         {{s("DCGM_FI_DEV_GPU_UTIL"), "GPU"}, {s("DCGM_FI_DEV_MEM_COPY_UTIL"), "memory copy"}}});
  d.Add({"timeseries",
         "Power vs limits",
         "watt",
         {{s("DCGM_FI_DEV_POWER_USAGE"), "power"},
          {s("DCGM_FI_DEV_POWER_MGMT_LIMIT"), "limit"},
          {s("DCGM_FI_DEV_ENFORCED_POWER_LIMIT"), "enforced limit"}}});
  d.Add({"timeseries",
         "Temperatures and thresholds",
         "celsius",
         {{s("DCGM_FI_DEV_GPU_TEMP"), "GPU"},
          {s("DCGM_FI_DEV_MEMORY_TEMP"), "memory"},
          {s("DCGM_FI_DEV_GPU_MAX_OP_TEMP"), "max operating"},
          {s("DCGM_FI_DEV_SLOWDOWN_TEMP"), "slowdown"},
          {s("DCGM_FI_DEV_SHUTDOWN_TEMP"), "shutdown"}}});
  d.Add({"timeseries",
         "Memory",
         "bytes",
         {{s("DCGM_FI_DEV_FB_USED") + " * 1048576", "used"},
          {s("DCGM_FI_DEV_FB_TOTAL") + " * 1048576", "total"}}});
  d.Add({"timeseries",
         "Clocks",
         "hertz",
         {{s("DCGM_FI_DEV_SM_CLOCK") + " * 1e6", "SM"},
          {s("DCGM_FI_DEV_MAX_SM_CLOCK") + " * 1e6", "SM max"},
          {s("DCGM_FI_DEV_MEM_CLOCK") + " * 1e6", "memory"}}});
  d.Add({"timeseries",
         "Clock throttle reasons",
         "none",
         {{s("warpscope_gpu_clock_event_reason_active"), "{{reason}}"}}});
  d.Add({"timeseries",
         "Profiling (GPM)",
         "percentunit",
         {{s("DCGM_FI_PROF_SM_ACTIVE"), "SM active"},
          {s("DCGM_FI_PROF_SM_OCCUPANCY"), "SM occupancy"},
          {s("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"), "tensor"},
          {s("DCGM_FI_PROF_DRAM_ACTIVE"), "DRAM"}}});
  d.Add({"timeseries",
         "Errors",
         "none",
         {{fmt::format("increase({}[$__rate_interval])", s("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL")),
           "corrected ECC"},
          {fmt::format("increase({}[$__rate_interval])", s("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")),
           "uncorrected ECC"},
          {s("warpscope_gpu_xid_errors_total"), "XID {{xid}} since the agent started"},
          {s("DCGM_FI_DEV_ROW_REMAP_FAILURE"), "row remap failure"}}});
  d.Add({"timeseries",
         "NVLink and PCIe throughput",
         "Bps",
         {{fmt::format("sum({})", s("warpscope_gpu_nvlink_transmit_bytes_per_second")),
           "NVLink transmit"},
          {fmt::format("sum({})", s("warpscope_gpu_nvlink_receive_bytes_per_second")),
           "NVLink receive"},
          {s("warpscope_gpu_pcie_transmit_bytes_per_second"), "PCIe transmit"},
          {s("warpscope_gpu_pcie_receive_bytes_per_second"), "PCIe receive"}}});
  d.Add({"table",
         "Processes",
         "bytes",
         {{Sel("warpscope_gpu_process_memory_used_bytes", kGpuSel), ""}},
         24,
         8});
  return std::move(d).Finish("warpscope-gpu.json");
}

}  // namespace

std::vector<GrafanaDashboard> GrafanaDashboards() { return {Fleet(), Host(), Gpu()}; }

}  // namespace warpscope::integrations
