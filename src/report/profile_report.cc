// SPDX-License-Identifier: Apache-2.0
#include "report/profile_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "profiling/pprof.h"
#include "report/frame_classify.h"

namespace warpscope::report {
namespace {

using profiling::Frame;
using profiling::FrameKind;

std::string_view Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The name a frame has in the flame tree and the tables.
std::string DisplayName(const Frame& f, int32_t pid) {
  if (f.kind == FrameKind::kProcess) {
    return fmt::format("{} (pid {})", f.function, pid);
  }
  if (f.kind == FrameKind::kPython && !f.file.empty()) {
    return f.line > 0 ? fmt::format("{} ({}:{})", f.function, Basename(f.file), f.line)
                      : fmt::format("{} ({})", f.function, Basename(f.file));
  }
  return f.function;
}

std::string Where(const Frame& f) {
  if (f.kind == FrameKind::kPython) {
    return f.line > 0 ? fmt::format("{}:{}", f.file, f.line) : f.file;
  }
  return f.module;
}

int64_t ValueOf(const profiling::Sample& s, std::optional<size_t> index) {
  return index && *index < s.values.size() ? s.values[*index] : 0;
}

std::optional<size_t> TypeIndex(const profiling::Profile& p, std::string_view type) {
  for (size_t i = 0; i < p.sample_types.size(); ++i) {
    if (p.sample_types[i].type == type) return i;
  }
  return std::nullopt;
}

// The flame tree while it is built: children found by (kind, name).
struct BuildNode {
  std::string name;
  FrameKind kind = FrameKind::kUnknown;
  int64_t cpu = 0, gpu = 0, pc = 0, self_cpu = 0, self_gpu = 0, self_pc = 0;
  std::map<std::pair<FrameKind, std::string>, size_t> index;
  std::vector<BuildNode> children;
  int64_t weight() const { return cpu + gpu; }
};

BuildNode& Child(BuildNode& parent, FrameKind kind, const std::string& name) {
  auto [it, inserted] = parent.index.emplace(std::make_pair(kind, name), parent.children.size());
  if (inserted) {
    parent.children.push_back(BuildNode{name, kind});
  }
  return parent.children[it->second];
}

// Keeps the `max_nodes` heaviest nodes (a parent is never lighter than its child, and ties keep
// the shallower node first, so every kept node's parent is kept) and folds the others of each
// kept parent into one "(other)" child.
struct Pruner {
  size_t max_nodes;
  size_t folded = 0;
  std::set<const BuildNode*> kept;

  void Choose(const BuildNode& root) {
    std::vector<std::tuple<int64_t, int64_t, size_t, const BuildNode*>> all;  // -w, -pc, depth
    std::vector<std::pair<const BuildNode*, size_t>> stack = {{&root, 0}};
    while (!stack.empty()) {
      auto [n, depth] = stack.back();
      stack.pop_back();
      all.emplace_back(-n->weight(), -n->pc, depth, n);
      for (const BuildNode& c : n->children) stack.emplace_back(&c, depth + 1);
    }
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
      return std::tie(std::get<0>(a), std::get<1>(a), std::get<2>(a)) <
             std::tie(std::get<0>(b), std::get<1>(b), std::get<2>(b));
    });
    // Room for one "(other)" per kept node in the worst case is not reserved: the bound is on
    // real frames, and "(other)" nodes are at most as many again.
    for (size_t i = 0; i < all.size() && i < std::max<size_t>(max_nodes, 1); ++i) {
      kept.insert(std::get<3>(all[i]));
    }
  }

  FlameNode Convert(const BuildNode& n) {
    FlameNode out{n.name, n.kind, n.cpu, n.gpu, n.self_cpu, n.self_gpu, {}, n.pc, n.self_pc};
    FlameNode other{"(other)", FrameKind::kUnknown};
    bool any_other = false;
    for (const BuildNode& c : n.children) {
      if (kept.count(&c) > 0) {
        out.children.push_back(Convert(c));
        continue;
      }
      any_other = true;
      ++folded;
      other.cpu_ns += c.cpu;
      other.gpu_ns += c.gpu;
      other.pc_samples += c.pc;
    }
    if (any_other) {
      other.self_cpu_ns = other.cpu_ns;
      other.self_gpu_ns = other.gpu_ns;
      other.self_pc_samples = other.pc_samples;
      out.children.push_back(std::move(other));
    }
    std::sort(out.children.begin(), out.children.end(), [](const FlameNode& a, const FlameNode& b) {
      const int64_t wa = a.cpu_ns + a.gpu_ns;
      const int64_t wb = b.cpu_ns + b.gpu_ns;
      if (wa != wb) return wa > wb;
      if (a.pc_samples != b.pc_samples) return a.pc_samples > b.pc_samples;
      return a.name < b.name;
    });
    return out;
  }
};

// Adds one sample's stack to the tree with its weights.
void AddStack(BuildNode& root, const ProcessProfile& pp, const profiling::Sample& s, int64_t cpu,
              int64_t gpu, int64_t pc) {
  BuildNode* node = &root;
  auto add = [&](BuildNode& n) {
    n.cpu += cpu;
    n.gpu += gpu;
    n.pc += pc;
  };
  add(root);
  for (uint32_t id : s.stack) {
    const Frame& f = pp.profile.frames[id];
    node = &Child(*node, f.kind, DisplayName(f, pp.pid));
    add(*node);
  }
  node->self_cpu += cpu;
  node->self_gpu += gpu;
  node->self_pc += pc;
}

void AddKernelRows(const ProcessProfile& pp, std::map<std::string, KernelRow>& kernels,
                   std::map<std::tuple<std::string, std::string, std::string>, LaunchSite>& sites,
                   std::map<int64_t, GpuRow>& gpus, ProcessRow& row, ProfileReport& report) {
  const auto gpu_index = TypeIndex(pp.profile, "gpu_time");
  const auto launch_index = TypeIndex(pp.profile, "launches");
  for (const profiling::Sample& s : pp.profile.samples) {
    const int64_t ns = ValueOf(s, gpu_index);
    const int64_t launches = ValueOf(s, launch_index);
    if (ns == 0 && launches == 0) continue;
    int64_t device = -1;
    for (const profiling::Label& l : s.labels) {
      if (l.key == "device" && l.str.empty()) device = l.num;
    }
    GpuRow& gpu = gpus[device];
    gpu.device = device;
    gpu.launches += launches;
    row.gpu_ns += ns;
    row.launches += launches;
    report.launches += launches;
    // The kernel: the last kernel frame of the stack.
    std::optional<size_t> kernel;
    for (size_t i = s.stack.size(); i-- > 0;) {
      const FrameKind k = pp.profile.frames[s.stack[i]].kind;
      if (k == FrameKind::kKernel || k == FrameKind::kMemory) {
        kernel = i;
        break;
      }
    }
    if (!kernel || pp.profile.frames[s.stack[*kernel]].kind == FrameKind::kMemory) {
      gpu.memory_ns += ns;
      report.memory_ns += ns;
      continue;
    }
    gpu.kernel_ns += ns;
    report.kernel_ns += ns;
    const std::string& name = pp.profile.frames[s.stack[*kernel]].function;
    KernelRow& k = kernels[name];
    k.name = name;
    k.gpu_ns += ns;
    k.launches += launches;
    std::string python;
    std::string native;
    for (size_t i = *kernel; i-- > 1;) {
      const Frame& f = pp.profile.frames[s.stack[i]];
      if (python.empty() && f.kind == FrameKind::kPython) python = DisplayName(f, pp.pid);
      if (native.empty() && f.kind == FrameKind::kNative) native = f.function;
    }
    LaunchSite& site = sites[{name, python, native}];
    site.python = python;
    site.native = native;
    site.gpu_ns += ns;
    site.launches += launches;
  }
}

void AddCpuRows(const ProcessProfile& pp,
                std::map<std::tuple<FrameKind, std::string, std::string>, FunctionRow>& functions,
                ProcessRow& row, ProfileReport& report) {
  const auto cpu_index = TypeIndex(pp.profile, "cpu");
  const auto count_index = TypeIndex(pp.profile, "samples");
  std::set<std::tuple<FrameKind, std::string, std::string>> seen;
  for (const profiling::Sample& s : pp.profile.samples) {
    const int64_t ns = ValueOf(s, cpu_index);
    row.cpu_ns += ns;
    row.cpu_samples += ValueOf(s, count_index);
    report.cpu_ns += ns;
    report.cpu_samples += ValueOf(s, count_index);
    seen.clear();
    for (size_t i = 0; i < s.stack.size(); ++i) {
      const Frame& f = pp.profile.frames[s.stack[i]];
      if (f.kind == FrameKind::kProcess || f.kind == FrameKind::kMarker) continue;
      auto key = std::make_tuple(f.kind, DisplayName(f, pp.pid), Where(f));
      FunctionRow& fr = functions[key];
      if (fr.name.empty()) {
        fr.name = std::get<1>(key);
        fr.where = std::get<2>(key);
        fr.kind = f.kind;
      }
      if (seen.insert(key).second) fr.total_ns += ns;
      if (i + 1 == s.stack.size()) fr.self_ns += ns;
    }
  }
}

}  // namespace

ProfileReport BuildReport(RunInfo run, const std::vector<profiling::WindowProfile>& windows,
                          const ReportOptions& options) {
  ProfileReport report;
  report.run = std::move(run);

  // Merge each process's windows of one kind.
  struct Group {
    std::vector<profiling::Profile> profiles;
    std::string executable;
    int64_t start_ns = 0;
    int64_t end_ns = 0;
  };
  std::map<std::pair<std::string, int32_t>, Group> groups;
  for (const profiling::WindowProfile& w : windows) {
    if (w.pprof_gz.empty()) continue;
    PartStatus& part = w.kind == "gpu" ? report.run.gpu : report.run.cpu;
    auto decoded = profiling::DecodePprof(w.pprof_gz);
    if (!decoded) {
      part.notes.push_back(fmt::format("a {} profile of pid {} was left out: {}", w.kind, w.pid,
                                       decoded.error().message()));
      continue;
    }
    Group& g = groups[{w.kind, w.pid}];
    if (g.profiles.empty() || w.start_ns < g.start_ns) g.start_ns = w.start_ns;
    g.end_ns = std::max(g.end_ns, w.end_ns);
    if (g.executable.empty()) g.executable = w.executable;
    g.profiles.push_back(std::move(*decoded));
  }
  for (auto& [key, g] : groups) {
    auto merged = profiling::Merge(g.profiles);
    if (!merged) {
      PartStatus& part = key.first == "gpu" ? report.run.gpu : report.run.cpu;
      part.notes.push_back(fmt::format("the {} profiles of pid {} were left out: {}", key.first,
                                       key.second, merged.error().message()));
      continue;
    }
    ClassifyFrames(*merged, key.first == "gpu");
    report.profiles.push_back(
        ProcessProfile{key.first, key.second, g.executable, g.start_ns, g.end_ns, *merged});
  }

  BuildNode root{"all", FrameKind::kUnknown};
  std::map<std::string, KernelRow> kernels;
  std::map<std::tuple<std::string, std::string, std::string>, LaunchSite> sites;
  std::map<std::tuple<FrameKind, std::string, std::string>, FunctionRow> functions;
  std::map<int64_t, GpuRow> gpus;
  std::map<int32_t, ProcessRow> processes;
  for (const ProcessProfile& pp : report.profiles) {
    ProcessRow& row = processes[pp.pid];
    row.pid = pp.pid;
    if (row.executable.empty()) row.executable = pp.executable;
    const bool gpu = pp.kind == "gpu";
    const auto cpu_index = TypeIndex(pp.profile, "cpu");
    const auto gpu_index = TypeIndex(pp.profile, "gpu_time");
    const auto pc_index = TypeIndex(pp.profile, "pc_samples");
    for (const profiling::Sample& s : pp.profile.samples) {
      const int64_t cpu = gpu ? 0 : ValueOf(s, cpu_index);
      const int64_t gns = gpu ? ValueOf(s, gpu_index) : 0;
      const int64_t pc = gpu ? ValueOf(s, pc_index) : 0;
      if (cpu == 0 && gns == 0 && pc == 0) continue;
      AddStack(root, pp, s, cpu, gns, pc);
    }
    if (gpu) {
      AddKernelRows(pp, kernels, sites, gpus, row, report);
    } else {
      AddCpuRows(pp, functions, row, report);
    }
  }

  Pruner pruner{options.max_flame_nodes};
  pruner.Choose(root);
  report.flame = pruner.Convert(root);
  report.flame_nodes_folded = pruner.folded;

  for (auto& [key, site] : sites) {
    kernels[std::get<0>(key)].sites.push_back(site);
  }
  for (auto& [name, k] : kernels) {
    std::sort(k.sites.begin(), k.sites.end(), [](const LaunchSite& a, const LaunchSite& b) {
      return std::tie(b.gpu_ns, b.launches, a.python, a.native) <
             std::tie(a.gpu_ns, a.launches, b.python, b.native);
    });
    if (k.sites.size() > options.max_sites) k.sites.resize(options.max_sites);
    report.kernels.push_back(std::move(k));
  }
  std::sort(
      report.kernels.begin(), report.kernels.end(), [](const KernelRow& a, const KernelRow& b) {
        return std::tie(b.gpu_ns, b.launches, a.name) < std::tie(a.gpu_ns, a.launches, b.name);
      });
  if (report.kernels.size() > options.max_kernels) report.kernels.resize(options.max_kernels);

  for (auto& [key, f] : functions) {
    if (f.self_ns > 0 || f.total_ns > 0) report.functions.push_back(std::move(f));
  }
  std::sort(report.functions.begin(), report.functions.end(),
            [](const FunctionRow& a, const FunctionRow& b) {
              return std::tie(b.self_ns, b.total_ns, a.name) <
                     std::tie(a.self_ns, a.total_ns, b.name);
            });
  if (report.functions.size() > options.max_functions) {
    report.functions.resize(options.max_functions);
  }
  for (auto& [pid, row] : processes) report.processes.push_back(std::move(row));
  for (auto& [device, row] : gpus) report.gpus.push_back(row);
  return report;
}

}  // namespace warpscope::report
