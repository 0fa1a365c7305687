// SPDX-License-Identifier: Apache-2.0
#include "top/remote_snapshot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>

namespace warpscope::top {
namespace {

using nlohmann::json;

constexpr const char* kWindow = "now-2m";
constexpr double kStaleSeconds = 30;
enum Answer : size_t {
  kSummary,
  kProcessMemory,
  kProcessSm,
  kProcessCpu,
  kCpuCount,
  kInsights,
  kPcieTx,
  kPcieRx
};
constexpr size_t kAnswers = 8;
constexpr const char* kAnswerNames[] = {"summary",
                                        "top gpu.process.memory.used",
                                        "top gpu.process.sm.utilization",
                                        "top process.cpu.utilization",
                                        "top host.cpu.logical_count",
                                        "insights",
                                        "top gpu.pcie.transmit.rate",
                                        "top gpu.pcie.receive.rate"};

std::string UrlEncode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::string TopRequest(const std::string& metric, const std::string& host, int limit) {
  return fmt::format("/api/v1/top?metric={}&host={}&start={}&limit={}&agg=last", metric,
                     UrlEncode(host), kWindow, limit);
}

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

std::optional<double> Num(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

int Int(const std::string& text, int fallback) {
  int v = fallback;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() ? v : fallback;
}

std::optional<double> Latest(const json& metrics, const char* key) {
  auto it = metrics.find(key);
  if (it == metrics.end() || !it->is_object()) return std::nullopt;
  return Num(*it, "latest");
}

void ReadGpus(const json& summary, Snapshot& s) {
  for (const json& g : summary.value("gpus", json::array())) {
    GpuRow row;
    row.uuid = Str(g, "entity");
    json attrs = g.value("attributes", json::object());
    row.index = Int(Str(attrs, "gpu.index"), -1);
    row.name = Str(attrs, "gpu.model");
    json m = g.value("metrics", json::object());
    row.utilization = Latest(m, "gpu.utilization");
    row.sm_active = Latest(m, "gpu.sm.active");
    row.memory_used = Latest(m, "gpu.memory.used");
    row.memory_total = Latest(m, "gpu.memory.total");
    row.power = Latest(m, "gpu.power.usage");
    row.power_limit = Latest(m, "gpu.power.limit");
    row.temperature = Latest(m, "gpu.temperature");
    s.gpus.push_back(std::move(row));
  }
  std::sort(s.gpus.begin(), s.gpus.end(),
            [](const GpuRow& a, const GpuRow& b) { return a.index < b.index; });
}

// entity id -> latest value, of the entries of a /top answer.
std::map<std::string, double> LatestByEntity(const json& top) {
  std::map<std::string, double> out;
  for (const json& e : top.value("entries", json::array())) {
    if (auto v = Num(e, "latest")) out[Str(e, "entity")] = *v;
  }
  return out;
}

void ReadProcesses(const std::vector<json>& a, Snapshot& s) {
  const json& memory = a[kProcessMemory];
  double newest = 0;
  for (const json& e : memory.value("entries", json::array())) {
    newest = std::max(newest, Num(e, "latest_time").value_or(0));
  }
  std::map<std::string, double> sm = LatestByEntity(a[kProcessSm]);
  std::map<std::string, double> cpu = LatestByEntity(a[kProcessCpu]);
  double cpus = 0;
  for (const auto& [id, v] : LatestByEntity(a[kCpuCount])) cpus = v;
  for (const json& e : memory.value("entries", json::array())) {
    if (Num(e, "latest_time").value_or(0) < newest - kStaleSeconds) continue;
    std::string entity = Str(e, "entity");
    json attrs = e.value("attributes", json::object());
    ProcessRow row;
    row.pid = Int(Str(attrs, "process.pid"), 0);
    row.gpu_index = Int(Str(attrs, "gpu.index"), -1);
    row.user = Str(attrs, "process.owner");
    row.executable = Str(attrs, "process.executable.name");
    row.command_line = Str(attrs, "process.command_line");
    row.gpu_memory = Num(e, "latest");
    if (auto it = sm.find(entity); it != sm.end()) row.sm = it->second;
    if (auto it = cpu.find(entity); it != cpu.end() && cpus > 0) row.cpu = it->second * cpus;
    s.processes.push_back(std::move(row));
  }
}

void ReadFindings(const json& insights, Snapshot& s) {
  for (const json& f : insights.value("insights", json::array())) {
    std::string state = Str(f, "state");
    if (state == "resolved") continue;
    s.findings.push_back(FindingRow{.severity = Str(f, "severity"),
                                    .state = state,
                                    .rule = Str(f, "rule"),
                                    .entity = Str(f, "entity"),
                                    .summary = Str(f, "summary")});
  }
  std::stable_sort(s.findings.begin(), s.findings.end(),
                   [](const FindingRow& a, const FindingRow& b) {
                     return (a.state == "firing") > (b.state == "firing");
                   });
  s.findings_available = true;
}

}  // namespace

std::vector<std::string> RemoteRequests(const std::string& host) {
  return {fmt::format("/api/v1/summary?host={}&start={}", UrlEncode(host), kWindow),
          TopRequest("gpu.process.memory.used", host, 200),
          TopRequest("gpu.process.sm.utilization", host, 200),
          TopRequest("process.cpu.utilization", host, 200),
          TopRequest("host.cpu.logical_count", host, 1),
          fmt::format("/api/v1/insights?host={}&limit=100", UrlEncode(host)),
          TopRequest("gpu.pcie.transmit.rate", host, 64),
          TopRequest("gpu.pcie.receive.rate", host, 64)};
}

base::Result<Snapshot> SnapshotFromServer(const std::string& host,
                                          const std::vector<std::string>& bodies) {
  if (bodies.size() != kAnswers) {
    return base::Error(
        base::InvalidArgument("{} answers for {} requests", bodies.size(), kAnswers));
  }
  std::vector<json> answers;
  for (size_t i = 0; i < kAnswers; ++i) {
    json j = json::parse(bodies[i], nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) {
      return base::Error(base::InvalidArgument(
          "the server's {} answer is not a JSON object; is --server a warpscope server?",
          kAnswerNames[i]));
    }
    answers.push_back(std::move(j));
  }
  Snapshot s;
  s.host = host;
  try {
    ReadGpus(answers[kSummary], s);
    std::map<std::string, double> tx = LatestByEntity(answers[kPcieTx]);
    std::map<std::string, double> rx = LatestByEntity(answers[kPcieRx]);
    for (GpuRow& gpu : s.gpus) {
      if (auto it = tx.find(gpu.uuid); it != tx.end()) gpu.pcie_tx = it->second;
      if (auto it = rx.find(gpu.uuid); it != rx.end()) gpu.pcie_rx = it->second;
    }
    ReadProcesses(answers, s);
    ReadFindings(answers[kInsights], s);
  } catch (const json::exception& e) {
    return base::Error(
        base::InvalidArgument("the server's answer has an unexpected shape: {}", e.what()));
  }
  return s;
}

}  // namespace warpscope::top
