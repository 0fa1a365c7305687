// SPDX-License-Identifier: Apache-2.0
#include "server/alerts/alert.h"

#include <fmt/format.h>

#include <ctime>

#include "server/insights/rule.h"

namespace warpscope::server::alerts {
namespace {

constexpr size_t kMaxEvidenceBytes = 4096;

}  // namespace

std::map<std::string, std::string> AlertLabels(const insights::Finding& f) {
  std::map<std::string, std::string> labels;
  labels["alertname"] = insights::AlertName(f.rule);
  labels["severity"] = std::string(insights::SeverityName(f.severity));
  labels["rule"] = f.rule;
  labels["host"] = f.host;
  struct {
    std::string_view attribute;
    const char* label;
  } const from_attributes[] = {
      {"gpu.index", "gpu"}, {"gpu.uuid", "UUID"}, {"process.pid", "pid"},
      {"cluster", "cluster"}, {"job.id", "job"},   {"job.rank", "rank"}};
  for (const auto& [attribute, label] : from_attributes) {
    std::string_view v = f.attributes.Get(attribute);
    if (!v.empty()) labels[label] = std::string(v);
  }
  return labels;
}

Alert AlertOfFinding(const insights::Finding& f, std::string_view external_url) {
  Alert a;
  a.labels = AlertLabels(f);
  a.annotations["summary"] = f.summary.empty() ? f.title : f.summary;
  std::string description = f.title;
  if (!f.summary.empty()) description += ": " + f.summary;
  if (!f.suggestion.empty()) description += "\nSuggested fix: " + f.suggestion;
  a.annotations["description"] = std::move(description);
  std::string evidence = f.evidence.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (evidence.size() > kMaxEvidenceBytes) {
    evidence.resize(kMaxEvidenceBytes);
    evidence += "…";
  }
  a.annotations["evidence"] = std::move(evidence);
  a.annotations["finding_id"] = f.id;
  if (f.waste.gpu_hours > 0) {
    a.annotations["gpu_hours_lost"] = fmt::format("{:.2f}", f.waste.gpu_hours);
  }
  std::string base(external_url);
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (!base.empty()) a.generator_url = base + "/insights/" + f.id;
  return a;
}

std::string AlertKey(const Alert& a) { return AlertKey(a.labels); }

std::string AlertKey(const std::map<std::string, std::string>& labels) {
  std::string key;
  for (const auto& [k, v] : labels) {
    key += k;
    key += '\x1f';
    key += v;
    key += '\x1e';
  }
  return key;
}

std::string Rfc3339(base::TimePoint t) {
  const int64_t ms = base::ToUnixMillis(t);
  const time_t secs = static_cast<time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  const int64_t frac = ms - static_cast<int64_t>(secs) * 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

nlohmann::json AlertsJson(std::span<const Alert> alerts) {
  nlohmann::json out = nlohmann::json::array();
  for (const Alert& a : alerts) {
    nlohmann::json j;
    j["labels"] = a.labels;
    j["annotations"] = a.annotations;
    j["startsAt"] = Rfc3339(a.starts_at);
    j["endsAt"] = Rfc3339(a.ends_at);
    if (!a.generator_url.empty()) j["generatorURL"] = a.generator_url;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace warpscope::server::alerts
