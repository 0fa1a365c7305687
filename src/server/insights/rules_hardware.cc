// SPDX-License-Identifier: Apache-2.0
// Rule 8: hardware errors — XID errors by code with their meaning, uncorrectable ECC errors
// and failed row remappings, each on its GPU.
#include <algorithm>
#include <cmath>
#include <map>

#include "fmt/format.h"
#include "model/xid.h"
#include "server/insights/rules.h"
#include "server/insights/series_math.h"

namespace warpscope::server::insights {

std::span<const int64_t> ApplicationXids() {
  static constexpr int64_t kCodes[] = {
      13,  // graphics engine exception, e.g. an out-of-range access in a kernel
      31,  // GPU memory page fault
      43,  // GPU stopped processing: the application's context was torn down
      45,  // preemptive cleanup after an earlier error or a killed process
      68,  // video processor exception
  };
  return kCodes;
}

namespace {

constexpr RuleInfo kHardwareErrors{
    .name = "hardware_errors",
    .title = "GPU hardware error",
    .severity = Severity::kPage,
    .hold_for = {},
    .clear_after = std::chrono::minutes(1),
    .suggestion =
        "Drain the GPU and follow NVIDIA's action for the reported error (XID table, "
        "ECC/row-remapping guidance): usually a reset or reboot, and an RMA when "
        "uncorrectable errors or remapping failures repeat.",
};

bool ApplicationXid(int64_t code) {
  return std::ranges::find(ApplicationXids(), code) != ApplicationXids().end();
}

// Increases of a cumulative counter over `s`, counting a decrease as a reset to 0.
double Increase(std::span<const double> s) {
  double total = 0;
  std::optional<double> previous;
  for (double v : s) {
    if (!std::isfinite(v)) continue;
    if (previous) total += v >= *previous ? v - *previous : v;
    previous = v;
  }
  return total;
}

class HardwareErrors final : public Rule {
 public:
  const RuleInfo& info() const override { return kHardwareErrors; }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    const InsightInputs& in = ctx.inputs;
    const size_t n = in.buckets;
    const size_t hold = BucketsIn(in, ctx.config.hardware_hold);
    const size_t from = n > hold ? n - hold : 0;
    const base::TimePoint since = in.BucketStart(from);
    std::map<std::pair<std::string_view, std::string_view>, std::vector<const EventRecord*>> xids;
    for (const EventRecord& e : in.events) {
      if (e.event.kind == "xid" && e.event.time >= since) {
        xids[{e.host, e.event.entity}].push_back(&e);
      }
    }
    std::vector<Observation> out;
    for (const GpuInput& g : in.gpus) {
      std::vector<std::string> problems;
      nlohmann::json xid_list = nlohmann::json::array();
      bool hardware = false;
      auto it = xids.find({g.host, g.uuid});
      if (it != xids.end()) {
        std::map<int64_t, int> by_code;
        for (const EventRecord* e : it->second) {
          ++by_code[e->event.code];
          nlohmann::json xid = {{"time", base::ToUnixMillis(e->event.time)},
                                {"code", e->event.code},
                                {"message", e->event.message}};
          // Raised in a MIG instance (insight_inputs.h attaches it to its GPU).
          std::string_view gi = e->event.attributes.Get(model::attr::kMigGpuInstanceId);
          if (!gi.empty()) xid["mig.gpu_instance_id"] = gi;
          xid_list.push_back(std::move(xid));
        }
        for (const auto& [code, count] : by_code) {
          std::string_view meaning = model::XidDescription(static_cast<uint64_t>(code));
          problems.push_back(fmt::format(
              "XID {}{}{}{}", code, meaning.empty() ? "" : " (" + std::string(meaning) + ")",
              count > 1 ? fmt::format(" ×{}", count) : "",
              ApplicationXid(code) ? ", raised by the application" : ""));
          hardware = hardware || !ApplicationXid(code);
        }
      }
      const double ecc = Increase(Slice(g.ecc_uncorrected, from, n));
      if (ecc > 0) {
        problems.push_back(
            fmt::format("{:.0f} uncorrectable ECC error{}", ecc, ecc > 1 ? "s" : ""));
        hardware = true;
      }
      std::optional<double> remap = Max(Slice(g.remapping_failed, from, n));
      if (remap && *remap > 0) {
        problems.push_back("a failed row remapping (the memory has no spare rows left)");
        hardware = true;
      }
      if (problems.empty()) continue;
      Observation o = OnGpu(g);
      o.severity = hardware ? Severity::kPage : Severity::kTicket;
      std::string list;
      for (const std::string& p : problems) list += (list.empty() ? "" : "; ") + p;
      o.summary = fmt::format("{}: {} within the last {}.", GpuName(g), list,
                              base::FormatDuration(ctx.config.hardware_hold));
      o.evidence = {
          {"xids", std::move(xid_list)},
          {"uncorrectable_ecc_errors", ecc},
          {"row_remapping_failed", remap && *remap > 0},
          {"series",
           {SeriesEvidence(in, "gpu.ecc.uncorrected.volatile", "{error}", g.ecc_uncorrected, from,
                           n)}},
      };
      out.push_back(std::move(o));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Rule> MakeHardwareErrorsRule() { return std::make_unique<HardwareErrors>(); }

}  // namespace warpscope::server::insights
