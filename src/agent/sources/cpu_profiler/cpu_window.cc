// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/cpu_window.h"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <unordered_set>

#include "base/logging.h"
#include "profiling/folded.h"
#include "profiling/pprof.h"

namespace warpscope::agent::cpu_profiler {
namespace {

using profiling::Frame;
using profiling::FrameKind;

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

template <typename T>
void AppendRaw(std::string& key, const T& value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

}  // namespace

void CpuWindow::Add(UnwoundSample sample) {
  key_.clear();
  AppendRaw(key_, sample.tid);
  AppendRaw(key_, sample.kernel_ips.size());
  for (uint64_t ip : sample.kernel_ips) {
    AppendRaw(key_, ip);
  }
  AppendRaw(key_, sample.user_pcs.size());
  for (uint64_t pc : sample.user_pcs) {
    AppendRaw(key_, pc);
  }
  AppendRaw(key_, sample.truncated);
  key_ += sample.stopped_in;
  for (const PythonStackFrame& p : sample.python) {
    key_ += '\0';
    key_ += p.frame.function;
    key_ += '\0';
    key_ += p.frame.file;
    AppendRaw(key_, p.frame.line);
    AppendRaw(key_, p.eval_entry);
  }
  ++samples_;
  Aggregate& agg = by_pid_[sample.pid][key_];
  agg.count += 1;
  agg.cpu_ns += static_cast<int64_t>(sample.period_ns);
  if (agg.count == 1) {
    agg.sample = std::move(sample);
  }
}

std::set<uint32_t> CpuWindow::pids() const {
  std::set<uint32_t> out;
  for (const auto& [pid, stacks] : by_pid_) {
    out.insert(pid);
  }
  return out;
}

std::vector<profiling::WindowProfile> CpuWindow::Build(int64_t start_ns, int64_t end_ns,
                                                       const SymbolSources& sources) {
  std::vector<profiling::WindowProfile> out;
  out.reserve(by_pid_.size());
  if (sources.perf_maps != nullptr) {
    sources.perf_maps->BeginWindow();  // each perf map is looked at once in this window
  }
  for (const auto& [pid, stacks] : by_pid_) {
    out.push_back(BuildProcess(pid, stacks, start_ns, end_ns, sources));
  }
  by_pid_.clear();
  samples_ = 0;
  return out;
}

profiling::WindowProfile CpuWindow::BuildProcess(
    uint32_t pid, const std::unordered_map<std::string, Aggregate>& stacks, int64_t start_ns,
    int64_t end_ns, const SymbolSources& sources) {
  const ProcessInfo* info = sources.processes.Find(pid);
  profiling::WindowProfile out;
  out.kind = "cpu";
  out.pid = static_cast<int32_t>(pid);
  out.executable = info != nullptr ? info->executable : "";
  out.start_ns = start_ns;
  out.end_ns = end_ns;

  // Symbolize every distinct user address of the process once, with the tracked mappings.
  std::vector<uint64_t> addresses;
  {
    std::unordered_set<uint64_t> seen;
    for (const auto& [key, agg] : stacks) {
      for (uint64_t pc : agg.sample.user_pcs) {
        if (seen.insert(pc).second) {
          addresses.push_back(pc);
        }
      }
    }
  }
  if (info != nullptr) {
    sources.symbolizer.SetProcessMaps(static_cast<pid_t>(pid), info->maps);
  }
  std::vector<profiling::NativeFrame> native =
      sources.symbolizer.Symbolize(static_cast<pid_t>(pid), addresses);
  // Each address's frames, root first: the function and those inlined into it.
  std::unordered_map<uint64_t, std::vector<Frame>> user_frames;
  for (size_t i = 0; i < addresses.size(); ++i) {
    const profiling::NativeFrame& n = native[i];
    std::vector<Frame> chain;
    const profiling::PerfMapSymbol* jit = nullptr;
    if (!n.resolved && sources.perf_maps != nullptr) {
      jit = sources.perf_maps->Find(pid, addresses[i]);
    }
    if (jit != nullptr) {
      Frame f;
      f.function = jit->name;
      f.module = "[jit]";
      f.kind = FrameKind::kNative;  // the profile model has no JIT kind
      chain.push_back(std::move(f));
    } else if (n.resolved && !n.jit) {
      chain = profiling::ProfileFrames(n);
    } else {
      chain = profiling::ProfileFrames(n);
      chain.resize(1);  // no source position for what no symbol covers
      chain[0].file.clear();
      chain[0].line = 0;
    }
    user_frames.emplace(addresses[i], std::move(chain));
  }

  profiling::ProfileAggregator profile({{"samples", "count"}, {"cpu", "nanoseconds"}});
  Frame process;
  process.kind = FrameKind::kProcess;
  process.function = info != nullptr && !info->executable.empty()
                         ? std::string(Basename(info->executable))
                     : info != nullptr && !info->comm.empty() ? info->comm
                                                              : fmt::format("pid {}", pid);
  process.file = out.executable;
  const uint32_t process_id = profile.InternFrame(process);

  // The process's identity inside its container, on every sample (pprof has no per-profile
  // labels): its namespace pid when it differs from the host's, its container and pod.
  std::vector<profiling::Label> process_labels;
  if (info != nullptr) {
    if (info->ns_pid != 0 && info->ns_pid != pid) {
      process_labels.push_back({"ns_pid", "", static_cast<int64_t>(info->ns_pid)});
    }
    if (!info->container_id.empty()) {
      process_labels.push_back({"container_id", info->container_id, 0});
    }
    if (!info->pod_uid.empty()) {
      process_labels.push_back({"pod_uid", info->pod_uid, 0});
    }
    // dcgm-exporter's label names, as on the process series of /metrics.
    if (!info->pod_namespace.empty()) {
      process_labels.push_back({"namespace", info->pod_namespace, 0});
    }
    if (!info->pod_name.empty()) process_labels.push_back({"pod", info->pod_name, 0});
    if (!info->container_name.empty()) {
      process_labels.push_back({"container", info->container_name, 0});
    }
  }
  std::vector<Frame> frames;
  std::vector<uint32_t> stack;
  for (const auto& [key, agg] : stacks) {
    const UnwoundSample& s = agg.sample;
    frames.clear();
    frames.push_back(process);
    if (s.truncated) {
      Frame marker;
      marker.kind = FrameKind::kMarker;
      marker.function = s.stopped_in.empty()
                            ? std::string("[unwinding stopped]")
                            : fmt::format("[unwinding stopped in {}]", Basename(s.stopped_in));
      frames.push_back(std::move(marker));
    }
    for (auto it = s.user_pcs.rbegin(); it != s.user_pcs.rend(); ++it) {
      const std::vector<Frame>& chain = user_frames.at(*it);
      frames.insert(frames.end(), chain.begin(), chain.end());
    }
    if (!s.python.empty()) {
      frames = sources.python.Splice(std::move(frames), s.python);
    }
    for (auto it = s.kernel_ips.rbegin(); it != s.kernel_ips.rend(); ++it) {
      KernelSymbols::Lookup k = sources.kernel.Find(*it);
      Frame f;
      f.function = std::move(k.function);
      f.module = std::move(k.module);
      f.kind = FrameKind::kOsKernel;
      frames.push_back(std::move(f));
    }
    stack.clear();
    for (const Frame& f : frames) {
      stack.push_back(f == process ? process_id : profile.InternFrame(f));
    }
    std::vector<profiling::Label> labels = {{"tid", "", static_cast<int64_t>(s.tid)}};
    if (info != nullptr) {
      auto thread = info->thread_names.find(s.tid);
      if (thread != info->thread_names.end() && !thread->second.empty()) {
        labels.push_back({"thread_name", thread->second, 0});
      }
      labels.insert(labels.end(), process_labels.begin(), process_labels.end());
    }
    const int64_t values[] = {agg.count, agg.cpu_ns};
    profile.Add(stack, values, labels);
  }

  profiling::Profile& p = profile.mutable_profile();
  p.period_type = {"cpu", "nanoseconds"};
  p.period = 0;
  p.default_sample_type = "cpu";
  p.time_nanos = start_ns;
  p.duration_nanos = std::max<int64_t>(0, end_ns - start_ns);
  // Deterministic output: samples in stack order (the aggregation map is unordered).
  std::sort(p.samples.begin(), p.samples.end(),
            [](const profiling::Sample& a, const profiling::Sample& b) {
              return std::tie(a.stack, a.labels) < std::tie(b.stack, b.labels);
            });
  if (formats_.pprof) {
    auto pprof = profiling::EncodePprof(p);
    if (!pprof) {
      WARPSCOPE_LOG_EVERY_N(ERROR, 100, "CPU profile of pid {}: {}", pid, pprof.error().message());
    } else {
      out.pprof_gz = std::move(*pprof);
    }
  }
  if (formats_.folded) {
    out.folded = profiling::FoldedStacks(p, 1);
  }
  return out;
}

}  // namespace warpscope::agent::cpu_profiler
