// SPDX-License-Identifier: Apache-2.0
#include "report/report_writer.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "exporters/profiles/profile_sink.h"
#include "profiling/folded.h"
#include "profiling/frame_kind.h"
#include "profiling/pprof.h"
#include "report/frame_classify.h"
#include "report/html_report.h"
#include "report/trace_merge.h"

namespace warpscope::report {
namespace {

nlohmann::json PartJson(const PartStatus& p) {
  return {{"present", p.present}, {"reason", p.reason}, {"remedy", p.remedy}, {"notes", p.notes}};
}

}  // namespace

std::string SummaryJson(const ProfileReport& r) {
  nlohmann::json doc;
  doc["command"] = r.run.command;
  doc["host"] = r.run.host;
  doc["start_ns"] = r.run.start_ns;
  doc["end_ns"] = r.run.end_ns;
  doc["outcome"] = r.run.outcome;
  doc["cpu"] = PartJson(r.run.cpu);
  doc["gpu"] = PartJson(r.run.gpu);
  doc["totals"] = {{"cpu_ns", r.cpu_ns},
                   {"cpu_samples", r.cpu_samples},
                   {"kernel_ns", r.kernel_ns},
                   {"memory_ns", r.memory_ns},
                   {"launches", r.launches}};
  nlohmann::json kernels = nlohmann::json::array();
  for (const KernelRow& k : r.kernels) {
    nlohmann::json sites = nlohmann::json::array();
    for (const LaunchSite& s : k.sites) {
      sites.push_back({{"python", s.python},
                       {"native", s.native},
                       {"gpu_ns", s.gpu_ns},
                       {"launches", s.launches}});
    }
    kernels.push_back(
        {{"name", k.name}, {"gpu_ns", k.gpu_ns}, {"launches", k.launches}, {"sites", sites}});
  }
  doc["kernels"] = std::move(kernels);
  nlohmann::json functions = nlohmann::json::array();
  for (const FunctionRow& f : r.functions) {
    functions.push_back({{"name", f.name},
                         {"where", f.where},
                         {"kind", profiling::FrameKindName(f.kind)},
                         {"self_ns", f.self_ns},
                         {"total_ns", f.total_ns}});
  }
  doc["functions"] = std::move(functions);
  nlohmann::json processes = nlohmann::json::array();
  for (const ProcessRow& p : r.processes) {
    processes.push_back({{"pid", p.pid},
                         {"executable", p.executable},
                         {"cpu_ns", p.cpu_ns},
                         {"cpu_samples", p.cpu_samples},
                         {"gpu_ns", p.gpu_ns},
                         {"launches", p.launches}});
  }
  doc["processes"] = std::move(processes);
  nlohmann::json gpus = nlohmann::json::array();
  for (const GpuRow& g : r.gpus) {
    gpus.push_back({{"device", g.device},
                    {"kernel_ns", g.kernel_ns},
                    {"memory_ns", g.memory_ns},
                    {"launches", g.launches}});
  }
  doc["gpus"] = std::move(gpus);
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

base::Result<WrittenReport> WriteReport(const std::string& dir, const ProfileReport& report,
                                        const std::vector<profiling::WindowProfile>& windows,
                                        profiling::TraceFormat trace) {
  WARPSCOPE_ASSIGN_OR_RETURN(auto sink,
                             exporters::DirectoryProfileSink::Create(dir, report.run.host));
  WrittenReport out;
  for (const ProcessProfile& pp : report.profiles) {
    profiling::WindowProfile w;
    w.kind = pp.kind;
    w.pid = pp.pid;
    w.executable = pp.executable;
    w.start_ns = pp.start_ns;
    w.end_ns = pp.end_ns;
    WARPSCOPE_ASSIGN_OR_RETURN(w.pprof_gz, profiling::EncodePprof(pp.profile));
    // Folded by the default value: CPU nanoseconds, GPU nanoseconds.
    auto value =
        profiling::FindSampleType(pp.profile.sample_types, pp.kind == "gpu" ? "gpu_time" : "cpu");
    if (value) w.folded = profiling::FoldedStacks(pp.profile, *value);
    WARPSCOPE_RETURN_IF_ERROR(sink->Write(w));
    const std::string stem = sink->StemFor(w);
    out.files.push_back(stem + ".pb.gz");
    if (!w.folded.empty()) out.files.push_back(stem + ".folded");
  }
  if (trace == profiling::TraceFormat::kPerfetto) {
    WARPSCOPE_RETURN_IF_ERROR(
        base::WriteFile(dir + "/trace.perfetto-trace", MergedPerfettoTrace(windows)));
    out.files.push_back("trace.perfetto-trace");
  } else {
    WARPSCOPE_RETURN_IF_ERROR(base::WriteFile(dir + "/trace.json", MergedTrace(windows)));
    out.files.push_back("trace.json");
  }
  WARPSCOPE_RETURN_IF_ERROR(base::WriteFile(dir + "/summary.json", SummaryJson(report)));
  out.files.push_back("summary.json");
  out.html_path = dir + "/report.html";
  WARPSCOPE_RETURN_IF_ERROR(base::WriteFile(out.html_path, RenderHtml(report, out.files)));
  out.files.insert(out.files.begin(), "report.html");
  return out;
}

}  // namespace warpscope::report
