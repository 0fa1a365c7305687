// SPDX-License-Identifier: Apache-2.0
#include "report/trace_merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "profiling/perfetto_trace.h"
#include "profiling/pprof.h"

namespace warpscope::report {
namespace {

double Micros(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

std::string_view Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The CPU window's totals and its hottest leaf function.
struct CpuWindowSummary {
  int64_t cpu_ns = 0;
  int64_t samples = 0;
  std::string hottest;
};

std::optional<CpuWindowSummary> Summarize(const profiling::WindowProfile& w) {
  auto p = profiling::DecodePprof(w.pprof_gz);
  if (!p) return std::nullopt;
  auto cpu = profiling::FindSampleType(p->sample_types, "cpu");
  auto count = profiling::FindSampleType(p->sample_types, "samples");
  if (!cpu || !count) return std::nullopt;
  CpuWindowSummary s;
  std::map<std::string, int64_t> self;
  for (const profiling::Sample& sample : p->samples) {
    const int64_t ns = *cpu < sample.values.size() ? sample.values[*cpu] : 0;
    s.cpu_ns += ns;
    s.samples += *count < sample.values.size() ? sample.values[*count] : 0;
    if (!sample.stack.empty()) self[p->frames[sample.stack.back()].function] += ns;
  }
  int64_t best = -1;
  for (const auto& [name, ns] : self) {
    if (ns > best) {
      best = ns;
      s.hottest = name;
    }
  }
  return s;
}

}  // namespace

std::string MergedTrace(const std::vector<profiling::WindowProfile>& windows) {
  nlohmann::json events = nlohmann::json::array();
  std::set<std::string> metadata;  // track-name events already written, as text
  auto add_metadata = [&](nlohmann::json e) {
    if (metadata.insert(e.dump()).second) events.push_back(std::move(e));
  };
  std::set<int32_t> cpu_pids;
  for (const profiling::WindowProfile& w : windows) {
    if (w.kind == "gpu" && !w.trace_json.empty()) {
      nlohmann::json doc = nlohmann::json::parse(w.trace_json, nullptr, /*allow_exceptions=*/false);
      if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
        continue;
      }
      for (nlohmann::json& e : doc["traceEvents"]) {
        if (e.is_object() && e.value("ph", "") == "M") {
          add_metadata(std::move(e));
        } else {
          events.push_back(std::move(e));
        }
      }
      continue;
    }
    if (w.kind != "cpu" || w.pprof_gz.empty()) continue;
    std::optional<CpuWindowSummary> s = Summarize(w);
    if (!s || s->samples == 0) continue;
    if (cpu_pids.insert(w.pid).second) {
      add_metadata(
          {{"ph", "M"},
           {"name", "process_name"},
           {"pid", w.pid},
           {"tid", 0},
           {"args", {{"name", fmt::format("{} (pid {})", Basename(w.executable), w.pid)}}}});
      add_metadata({{"ph", "M"},
                    {"name", "thread_name"},
                    {"pid", w.pid},
                    {"tid", kCpuTrackTid},
                    {"args", {{"name", "CPU profile"}}}});
    }
    const int64_t dur = std::max<int64_t>(1, w.end_ns - w.start_ns);
    const double cores = static_cast<double>(s->cpu_ns) / static_cast<double>(dur);
    events.push_back({{"ph", "C"},
                      {"name", "CPU cores"},
                      {"pid", w.pid},
                      {"ts", Micros(w.start_ns)},
                      {"args", {{"cores", cores}}}});
    events.push_back(
        {{"ph", "X"},
         {"cat", "cpu_profile"},
         {"name", s->hottest.empty() ? std::string("[cpu]") : s->hottest},
         {"pid", w.pid},
         {"tid", kCpuTrackTid},
         {"ts", Micros(w.start_ns)},
         {"dur", Micros(dur)},
         {"args", {{"samples", s->samples}, {"cpu_ms", static_cast<double>(s->cpu_ns) / 1e6}}}});
  }
  nlohmann::json doc = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}};
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string MergedPerfettoTrace(const std::vector<profiling::WindowProfile>& windows) {
  std::string out;
  std::set<int32_t> gpu_pids;  // processes whose track a GPU window describes
  struct CpuWindow {
    const profiling::WindowProfile* window;
    CpuWindowSummary summary;
  };
  std::vector<CpuWindow> cpu;
  for (const profiling::WindowProfile& w : windows) {
    if (w.kind == "gpu" && !w.perfetto_trace.empty()) {
      out += w.perfetto_trace;
      gpu_pids.insert(w.pid);
      continue;
    }
    if (w.kind != "cpu" || w.pprof_gz.empty()) continue;
    std::optional<CpuWindowSummary> s = Summarize(w);
    if (s && s->samples > 0) cpu.push_back({&w, std::move(*s)});
  }
  // Each track's slices by start time (perfetto_trace.h).
  std::stable_sort(cpu.begin(), cpu.end(), [](const CpuWindow& a, const CpuWindow& b) {
    return std::pair(a.window->pid, a.window->start_ns) <
           std::pair(b.window->pid, b.window->start_ns);
  });
  profiling::PerfettoTraceWriter writer(kCpuTraceSequenceId);
  std::set<int32_t> described;
  for (const CpuWindow& c : cpu) {
    const profiling::WindowProfile& w = *c.window;
    const uint64_t process = profiling::ProcessTrackUuid(w.pid);
    const uint64_t slices = profiling::ProcessChildTrackUuid(w.pid, 0);
    const uint64_t cores = profiling::ProcessChildTrackUuid(w.pid, 1);
    if (described.insert(w.pid).second) {
      if (!gpu_pids.count(w.pid)) {
        writer.ProcessTrack(process, w.pid,
                            fmt::format("{} (pid {})", Basename(w.executable), w.pid));
      }
      writer.Track(slices, process, "CPU profile", -2);
      writer.CounterTrack(cores, process, "CPU cores");
    }
    const int64_t dur = std::max<int64_t>(1, w.end_ns - w.start_ns);
    writer.Counter(cores, w.start_ns,
                   static_cast<double>(c.summary.cpu_ns) / static_cast<double>(dur));
    writer
        .Slice(slices, "cpu_profile", c.summary.hottest.empty() ? "[cpu]" : c.summary.hottest,
               w.start_ns, w.start_ns + dur)
        .Int("samples", c.summary.samples)
        .Double("cpu_ms", static_cast<double>(c.summary.cpu_ns) / 1e6);
  }
  out += writer.Finish();
  return out;
}

}  // namespace warpscope::report
