// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/process_window.h"

#include <fmt/format.h>

#include <algorithm>
#include <queue>
#include <set>

#include "agent/sources/cuda_profiler/gpu_trace.h"
#include "base/logging.h"
#include "profiling/elf_symbols.h"
#include "profiling/folded.h"
#include "profiling/pprof.h"
#include "pyframes/splice.h"

namespace warpscope::agent::cuda_profiler {
namespace {

using profiling::Frame;
using profiling::FrameKind;

constexpr std::string_view kUnsampledSite = "[unsampled launch site]";
constexpr std::string_view kUnattributedPc = "[unattributed PC samples]";
constexpr std::string_view kStackNotReceived = "[stack not received]";
constexpr std::string_view kDefaultLaunch = "[kernel launch]";
// The string label "attribution" of estimated kernel samples (profile_builder.h).
constexpr std::string_view kEstimated = "estimated";
constexpr std::string_view kEstimatedHistory = "estimated_history";

enum Value : size_t { kGpuTime = 0, kLaunches = 1, kPcSamples = 2 };

std::string_view Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// "smsp__pcsamp_warps_issue_stalled_long_scoreboard" -> "long_scoreboard" (and keeps
// "_not_issued"); other spellings pass through.
std::string StallName(std::string_view raw) {
  constexpr std::string_view kPrefixes[] = {"smsp__pcsamp_warps_issue_stalled_", "smsp__pcsamp_"};
  for (std::string_view prefix : kPrefixes) {
    if (raw.rfind(prefix, 0) == 0 && raw.size() > prefix.size()) {
      return std::string(raw.substr(prefix.size()));
    }
  }
  return std::string(raw);
}

// The profile frame of a copy or memset: "[memcpy HtoD]", "[memset]".
std::string MemoryFrameName(const MemoryActivity& m) {
  return m.op == MemoryActivity::Op::kMemcpy ? fmt::format("[memcpy {}]", m.kind)
                                             : std::string("[memset]");
}

Frame MakeFrame(FrameKind kind, std::string name) {
  Frame f;
  f.kind = kind;
  f.function = std::move(name);
  return f;
}

LaunchKind KindOf(const KernelActivity& k) {
  return k.graph_id != 0 ? LaunchKind::kGraph : LaunchKind::kDirect;
}

LaunchHistory::Limits HistoryLimits(const ProfileBuilder::Options& o) {
  return {o.estimate_history_ns, o.estimate_half_life_ns, o.max_estimate_kernels,
          o.max_estimate_sites_per_kernel};
}

// The launching thread's Python frames (innermost first) put in place of the interpreter's eval
// loop in its native frames (root first), as the CPU profiler splices them (pyframes/splice.h),
// so that a process's CPU and GPU stacks have one shape and line up in the merged CPU + GPU view:
// _start -> main -> Py_RunMain -> <module> -> train_step -> torch's C++ -> cudaLaunchKernel. The
// injected library does not send which Python frames each eval-loop call ran, so they form one
// group: placed exactly when the stack has one eval loop (the common case since 3.11, where
// Python-to-Python calls stay in one), else in place of the outermost one with the inner ones
// kept as native frames. No eval loop (a stripped interpreter, a stack cut short): the Python
// frames go outermost, above all native frames.
std::vector<Frame> SplicePython(std::vector<Frame> native, const std::vector<Frame>& python) {
  if (python.empty()) return native;
  std::vector<pyframes::NativeKind> kinds;  // innermost first
  kinds.reserve(native.size());
  for (auto it = native.rbegin(); it != native.rend(); ++it) {
    kinds.push_back(it->kind != FrameKind::kNative ? pyframes::NativeKind::kOther
                    : it->system_name.empty()      ? pyframes::ClassifyNativeSymbol(it->function)
                                                   : pyframes::ClassifyNativeSymbol(it->system_name));
  }
  const std::vector<pyframes::PythonFrame> groups(python.size());  // no eval-entry marks
  std::vector<pyframes::SplicedFrame> merged;
  pyframes::SpliceStacks(kinds, groups, &merged);
  std::vector<Frame> out;
  out.reserve(merged.size());
  for (auto it = merged.rbegin(); it != merged.rend(); ++it) {
    out.push_back(it->python ? python[it->index] : std::move(native[native.size() - 1 - it->index]));
  }
  return out;
}

}  // namespace

const std::string& KernelNames::Demangled(const std::string& mangled) {
  auto it = demangled_.find(mangled);
  if (it == demangled_.end()) {
    if (demangled_.size() > 100000) {
      demangled_.clear();  // bound memory against processes with endless distinct kernels
    }
    it = demangled_.emplace(mangled, profiling::Demangle(mangled)).first;
  }
  return it->second;
}

std::string ProcessFrameName(const ProcessDesc& desc, int32_t pid) {
  return desc.executable.empty() ? fmt::format("pid {}", pid)
                                 : std::string(Basename(desc.executable));
}

size_t ProcessWindow::SiteKeyHash::operator()(const SiteKey& k) const {
  uint64_t h = k.stack_hash * 0x9e3779b97f4a7c15ull;
  h ^= (static_cast<uint64_t>(k.launch) << 32 | k.kernel) + 0x632be59bd9b4e019ull + (h << 6) +
       (h >> 2);
  h ^= (static_cast<uint64_t>(k.device) << 32 | k.stream) + 0x94d049bb133111ebull + (h << 6) +
       (h >> 2);
  h ^= k.nvtx + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return static_cast<size_t>(h);
}

ProcessWindow::ProcessWindow(int32_t pid, ProcessState& state,
                             const ProfileBuilder::Options& options,
                             profiling::Symbolizer* symbolizer, KernelNames& names,
                             const profiling::SassMap& sass, ProfileBuilder::Stats& stats)
    : pid_(pid),
      state_(state),
      options_(options),
      symbolizer_(symbolizer),
      names_(names),
      sass_(sass),
      stats_(stats),
      profile_({{"gpu_time", "nanoseconds"}, {"launches", "count"}, {"pc_samples", "count"}}) {}

uint32_t ProcessWindow::Marker(std::string_view name) {
  return profile_.InternFrame(MakeFrame(FrameKind::kMarker, std::string(name)));
}

uint32_t ProcessWindow::KernelFrame(const std::string& mangled) {
  auto it = kernel_ids_.find(mangled);
  if (it != kernel_ids_.end()) {
    return it->second;
  }
  const std::string& name = names_.Demangled(mangled);
  Frame f = MakeFrame(FrameKind::kKernel, name);
  if (mangled != name) {
    f.system_name = mangled;
  }
  uint32_t id = profile_.InternFrame(f);
  kernel_ids_.emplace(mangled, id);
  kernel_mangled_.emplace(id, mangled);
  return id;
}

profiling::WindowProfile ProcessWindow::Build(int64_t start_ns, int64_t end_ns) {
  out_.pid = pid_;
  out_.executable = state_.desc.executable;
  out_.start_ns = start_ns;
  out_.end_ns = end_ns;
  Frame process = MakeFrame(FrameKind::kProcess, ProcessFrameName(state_.desc, pid_));
  process.file = state_.desc.executable;
  process_frame_ = profile_.InternFrame(process);
  unsampled_stack_ = {process_frame_, Marker(kUnsampledSite)};

  AddKernels(NvtxLabels());
  AddAggregates();
  AddEstimates(start_ns);
  AddMemory();
  AddPcSamples();
  stats_.kernels += out_.kernels;
  state_.kernels_profiled += out_.kernels;
  WriteOutputs(start_ns, end_ns);
  UpdateHistory(end_ns);
  return std::move(out_);
}

// Phase 1 -------------------------------------------------------------------------------------

void ProcessWindow::ResolveStack(ProcessState::Stack& stack) {
  stack.resolved = true;
  stack.frames.clear();
  std::vector<Frame> python;  // innermost first, as captured
  for (const PythonFrame& p : stack.raw.python_frames) {
    Frame f = MakeFrame(FrameKind::kPython, p.function);
    f.file = p.file;
    f.line = p.line;
    python.push_back(std::move(f));
  }
  std::vector<Frame> native;  // root first
  std::vector<uint64_t> lookups;
  lookups.reserve(stack.raw.native_pcs.size());
  for (uint64_t pc : stack.raw.native_pcs) {
    lookups.push_back(pc > 0 ? pc - 1 : pc);  // return addresses point past the call
  }
  std::vector<profiling::NativeFrame> natives;
  if (symbolizer_ != nullptr) {
    natives = symbolizer_->Symbolize(pid_, lookups);
  } else {
    for (uint64_t a : lookups) {
      profiling::NativeFrame f;
      f.address = a;
      f.function = fmt::format("[unknown] 0x{:x}", a);
      natives.push_back(std::move(f));
    }
  }
  // Drop the profiler's own innermost frames (callback, CUPTI).
  size_t first = 0;
  while (first < natives.size()) {
    std::string_view module = Basename(natives[first].module);
    bool own =
        std::any_of(options_.drop_module_prefixes.begin(), options_.drop_module_prefixes.end(),
                    [&](const std::string& p) { return module.rfind(p, 0) == 0; });
    if (!own || module.empty()) {
      break;
    }
    ++first;
  }
  for (size_t i = natives.size(); i > first; --i) {
    const profiling::NativeFrame& n = natives[i - 1];
    if (!n.resolved) {
      ++state_.unresolved_frames;
    }
    for (Frame& f : profiling::ProfileFrames(n)) {  // the function, then what is inlined there
      native.push_back(std::move(f));
    }
  }
  stack.frames = SplicePython(std::move(native), python);
}

uint32_t ProcessWindow::LaunchFrame(std::string_view api) {
  if (api.empty()) {
    api = kDefaultLaunch;
  }
  auto it = launch_ids_.find(api);
  if (it == launch_ids_.end()) {
    uint32_t id = profile_.InternFrame(MakeFrame(FrameKind::kLaunch, std::string(api)));
    it = launch_ids_.emplace(api, id).first;
  }
  return it->second;
}

// Resolved once per stack for the process's life and interned once per window.
const std::vector<uint32_t>& ProcessWindow::LaunchStack(uint64_t key) {
  auto cached = window_stacks_.find(key);
  if (cached != window_stacks_.end()) {
    return cached->second;
  }
  std::vector<uint32_t> ids{process_frame_};
  auto it = state_.stacks.find(key);
  if (it == state_.stacks.end()) {
    ++stats_.unknown_stack_hashes;
    ids.push_back(Marker(kStackNotReceived));
  } else {
    ProcessState::Stack& stack = it->second;
    if (!stack.resolved) {
      ResolveStack(stack);
    }
    for (const Frame& f : stack.frames) {
      ids.push_back(profile_.InternFrame(f));
    }
  }
  return window_stacks_.emplace(key, std::move(ids)).first->second;
}

// Phase 2 -------------------------------------------------------------------------------------

uint32_t ProcessWindow::NvtxLabel(const std::string& name) {
  if (name.empty()) {
    return 0;
  }
  auto [it, inserted] = nvtx_ids_.emplace(name, static_cast<uint32_t>(nvtx_names_.size()));
  if (inserted) {
    nvtx_names_.push_back(name);
  }
  return it->second;
}

// Per launching thread: a sweep over the thread's ranges (by start; the longer first on equal
// starts, so the inner one is opened later) and its launches (by time), with the ranges open at
// the launch time kept ordered by start. The innermost open range is the one opened last.
std::vector<uint32_t> ProcessWindow::NvtxLabels() {
  std::vector<uint32_t> kernel_nvtx(state_.kernels.size(), 0);
  if (state_.nvtx_history.empty()) {
    return kernel_nvtx;
  }
  std::unordered_map<int32_t, std::vector<const NvtxRange*>> ranges_by_thread;
  for (const NvtxRange& r : state_.nvtx_history) {
    if (r.end_ns > r.start_ns) {
      ranges_by_thread[r.thread_id].push_back(&r);
    }
  }
  std::unordered_map<int32_t, std::vector<std::pair<int64_t, size_t>>> launches_by_thread;
  for (size_t i = 0; i < state_.kernels.size(); ++i) {
    const KernelActivity& k = state_.kernels[i];
    if (k.api_end_ns > k.api_start_ns && ranges_by_thread.contains(k.thread_id)) {
      launches_by_thread[k.thread_id].push_back({k.api_start_ns, i});
    }
  }
  for (auto& [tid, launches] : launches_by_thread) {
    std::vector<const NvtxRange*>& ranges = ranges_by_thread[tid];
    std::sort(ranges.begin(), ranges.end(), [](const NvtxRange* a, const NvtxRange* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
    });
    std::sort(launches.begin(), launches.end());
    std::set<std::pair<int64_t, size_t>> open;  // (start, index in ranges)
    std::priority_queue<std::pair<int64_t, size_t>, std::vector<std::pair<int64_t, size_t>>,
                        std::greater<>>
        ends;  // (end, index in ranges), earliest first
    size_t next = 0;
    for (const auto& [launch_ns, kernel_index] : launches) {
      while (next < ranges.size() && ranges[next]->start_ns <= launch_ns) {
        open.insert({ranges[next]->start_ns, next});
        ends.push({ranges[next]->end_ns, next});
        ++next;
      }
      while (!ends.empty() && ends.top().first <= launch_ns) {
        open.erase({ranges[ends.top().second]->start_ns, ends.top().second});
        ends.pop();
      }
      if (!open.empty()) {
        uint32_t label = NvtxLabel(ranges[open.rbegin()->second]->name);
        if (label != 0) {
          kernel_nvtx[kernel_index] = label;
          ++stats_.kernels_nvtx_labeled;
        }
      }
    }
  }
  return kernel_nvtx;
}

// Phases 3 to 7 -------------------------------------------------------------------------------

// Labels in the order device, stream, pid, nvtx, attribution; device and stream -1 mean "none".
std::vector<profiling::Label> ProcessWindow::Labels(int64_t device, int64_t stream, uint32_t nvtx,
                                                    std::string_view attribution) const {
  std::vector<profiling::Label> labels;
  labels.reserve(5);
  if (device >= 0) {
    labels.push_back({"device", "", device});
  }
  if (stream >= 0) {
    labels.push_back({"stream", "", stream});
  }
  labels.push_back({"pid", "", pid_});
  if (nvtx != 0) {
    labels.push_back({"nvtx", nvtx_names_[nvtx], 0});
  }
  if (!attribution.empty()) {
    labels.push_back({"attribution", std::string(attribution), 0});
  }
  return labels;
}

size_t ProcessWindow::AddSample(const std::vector<uint32_t>& stack, int64_t gpu_ns,
                                int64_t launches, int64_t pc_samples,
                                const std::vector<profiling::Label>& labels) {
  const int64_t values[] = {gpu_ns, launches, pc_samples};
  return profile_.Add(stack, values, labels);
}

size_t ProcessWindow::AddKernelSample(const std::vector<uint32_t>& stack, uint64_t gpu_ns,
                                      uint64_t launches,
                                      const std::vector<profiling::Label>& labels,
                                      uint32_t kernel) {
  size_t index =
      AddSample(stack, static_cast<int64_t>(gpu_ns), static_cast<int64_t>(launches), 0, labels);
  site_time_[kernel_mangled_[kernel]][index] += gpu_ns;
  out_.gpu_time_ns += gpu_ns;
  out_.kernels += launches;
  return index;
}

// GPU time and launches in two steps so the per-kernel work is a few hash lookups: (stack
// hash, launch frame, kernel frame, device, stream, nvtx) first, full stacks once per distinct
// key after. Records without a stack go to the unsampled pools.
void ProcessWindow::AddKernels(const std::vector<uint32_t>& nvtx) {
  struct SiteValue {
    uint64_t ns = 0;
    uint64_t count = 0;
    const KernelActivity* first = nullptr;
  };
  std::unordered_map<SiteKey, SiteValue, SiteKeyHash> sites_by_key;
  std::vector<SiteKey> site_order;  // first-seen order, for deterministic output
  for (size_t i = 0; i < state_.kernels.size(); ++i) {
    const KernelActivity& k = state_.kernels[i];
    const uint64_t ns = static_cast<uint64_t>(std::max<int64_t>(0, k.end_ns - k.start_ns));
    const uint32_t kernel = KernelFrame(k.name);
    if (!k.stack_hash.has_value()) {
      ++stats_.kernels_without_stack;
      AddToPool(kernel, k.device, k.stream, KindOf(k), ns, 1);
      continue;
    }
    SiteKey key{*k.stack_hash, LaunchFrame(k.launch_api), kernel, k.device, k.stream, nvtx[i]};
    auto [it, inserted] = sites_by_key.try_emplace(key);
    if (inserted) {
      site_order.push_back(key);
      it->second.first = &k;
    }
    it->second.ns += ns;
    ++it->second.count;
  }
  std::vector<uint32_t> stack;
  for (const SiteKey& key : site_order) {
    const SiteValue& v = sites_by_key[key];
    stack = LaunchStack(key.stack_hash);
    stack.push_back(key.launch);
    stack.push_back(key.kernel);
    size_t index =
        AddKernelSample(stack, v.ns, v.count, Labels(key.device, key.stream, key.nvtx), key.kernel);
    sampled_sites_.push_back({key.kernel, key.device, key.stream, KindOf(*v.first), v.count, v.ns});
    site_info_.push_back({index, key.stack_hash, v.first->launch_api, key.nvtx});
  }
  // kTotals: what the records (sampled or not) account for, taken off the aggregates next.
  if (options_.aggregate_mode == ProfileBuilder::AggregateMode::kTotals) {
    auto cover = [&](uint32_t kernel, uint32_t device, uint32_t stream, uint64_t ns,
                     uint64_t count) {
      auto& [covered_ns, covered_count] = covered_[{kernel, device, stream}];
      covered_ns += ns;
      covered_count += count;
    };
    for (const SampledSite& site : sampled_sites_) {
      cover(site.kernel, site.device, site.stream, site.gpu_ns, site.launches);
    }
    for (const UnsampledPool& pool : pools_) {
      cover(pool.kernel, pool.device, pool.stream, pool.gpu_ns, pool.launches);
    }
  }
}

void ProcessWindow::AddToPool(uint32_t kernel, uint32_t device, uint32_t stream, LaunchKind kind,
                              uint64_t gpu_ns, uint64_t launches) {
  auto [it, inserted] = pool_ids_.try_emplace({kernel, device, stream, kind}, pools_.size());
  if (inserted) {
    pools_.push_back({kernel, device, stream, kind, 0, 0});
  }
  pools_[it->second].gpu_ns += gpu_ns;
  pools_[it->second].launches += launches;
}

void ProcessWindow::AddAggregates() {
  for (const KernelAggregate& a : state_.aggregates) {
    uint64_t ns = a.total_gpu_ns;
    uint64_t count = a.count;
    uint32_t kernel = KernelFrame(a.name);
    auto it = covered_.find({kernel, a.device, a.stream});
    if (it != covered_.end()) {
      auto& [covered_ns, covered_count] = it->second;
      if (covered_ns > ns || covered_count > count) {
        ++stats_.aggregate_shortfalls;
      }
      uint64_t take_ns = std::min(ns, covered_ns);
      uint64_t take_count = std::min(count, covered_count);
      ns -= take_ns;
      count -= take_count;
      covered_ns -= take_ns;
      covered_count -= take_count;
    }
    if (ns == 0 && count == 0) {
      continue;
    }
    AddToPool(kernel, a.device, a.stream, LaunchKind::kUnknown, ns, count);
  }
}

// Each pool: to the window's sampled sites of its kernel (their stacks and NVTX labels, the
// pool's device and stream), else to its sites of earlier windows, else under the marker.
void ProcessWindow::AddEstimates(int64_t start_ns) {
  WindowEstimate estimate = EstimateWindow(sampled_sites_, pools_);
  std::vector<uint32_t> stack;
  for (const EstimatedShare& share : estimate.shares) {
    const UnsampledPool& pool = pools_[share.pool];
    const SiteInfo& site = site_info_[share.site];
    stack = profile_.profile().samples[site.sample].stack;  // copied: Add() may grow the table
    AddKernelSample(stack, share.gpu_ns, share.launches,
                    Labels(pool.device, pool.stream, site.nvtx, kEstimated), pool.kernel);
    stats_.launches_estimated += share.launches;
  }
  for (size_t p : estimate.unmatched) {
    const UnsampledPool& pool = pools_[p];
    if (AddHistoryEstimate(pool, start_ns)) {
      continue;
    }
    stack = unsampled_stack_;
    stack.push_back(pool.kernel);
    AddKernelSample(stack, pool.gpu_ns, pool.launches, Labels(pool.device, pool.stream, 0),
                    pool.kernel);
    stats_.launches_unattributed += pool.launches;
  }
}

bool ProcessWindow::AddHistoryEstimate(const UnsampledPool& pool, int64_t start_ns) {
  if (options_.estimate_history_ns <= 0) {
    return false;
  }
  const LaunchHistory::Limits limits = HistoryLimits(options_);
  const std::vector<LaunchHistory::Site>* sites =
      state_.launch_history.Find(std::string(kernel_mangled_[pool.kernel]), start_ns, limits);
  if (sites == nullptr) {
    return false;
  }
  std::vector<size_t> all(sites->size());
  std::vector<LaunchKind> kinds;
  for (size_t i = 0; i < sites->size(); ++i) {
    all[i] = i;
    kinds.push_back((*sites)[i].kind);
  }
  std::vector<size_t> candidates = PreferKind(all, kinds, pool.kind);
  std::vector<double> launches;
  std::vector<double> ns;
  for (size_t i : candidates) {
    launches.push_back((*sites)[i].launches);
    ns.push_back((*sites)[i].gpu_ns);
  }
  std::vector<uint64_t> launch_shares;
  std::vector<uint64_t> ns_shares;
  SplitPool(pool.launches, pool.gpu_ns, IntegerWeights(launches), IntegerWeights(ns),
            &launch_shares, &ns_shares);
  std::vector<uint32_t> stack;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (launch_shares[i] == 0 && ns_shares[i] == 0) {
      continue;
    }
    const LaunchHistory::Site& site = (*sites)[candidates[i]];
    stack = LaunchStack(site.stack_hash);
    stack.push_back(LaunchFrame(site.launch_api));
    stack.push_back(pool.kernel);
    AddKernelSample(stack, ns_shares[i], launch_shares[i],
                    Labels(pool.device, pool.stream, 0, kEstimatedHistory), pool.kernel);
    stats_.launches_estimated_history += launch_shares[i];
  }
  return true;
}

// The window's sampled sites per kernel, each (stack, launch API, kind) summed over devices,
// streams and NVTX ranges.
void ProcessWindow::UpdateHistory(int64_t end_ns) {
  if (options_.estimate_history_ns <= 0) {
    return;
  }
  const LaunchHistory::Limits limits = HistoryLimits(options_);
  std::map<uint32_t, std::vector<LaunchHistory::Site>> by_kernel;
  for (size_t i = 0; i < sampled_sites_.size(); ++i) {
    const SampledSite& s = sampled_sites_[i];
    const SiteInfo& info = site_info_[i];
    std::vector<LaunchHistory::Site>& sites = by_kernel[s.kernel];
    auto same = std::find_if(sites.begin(), sites.end(), [&](const LaunchHistory::Site& h) {
      return h.stack_hash == info.stack_hash && h.kind == s.kind && h.launch_api == info.launch_api;
    });
    if (same == sites.end()) {
      sites.push_back({info.stack_hash, std::string(info.launch_api), s.kind, 0, 0});
      same = sites.end() - 1;
    }
    same->launches += static_cast<double>(s.launches);
    same->gpu_ns += static_cast<double>(s.gpu_ns);
  }
  for (const auto& [kernel, sites] : by_kernel) {
    state_.launch_history.Update(std::string(kernel_mangled_[kernel]), sites, end_ns, limits);
  }
  state_.launch_history.Prune(end_ns, limits);
}

// Memory copies and memsets: GPU time under "executable -> [memcpy HtoD]".
void ProcessWindow::AddMemory() {
  for (const MemoryActivity& m : state_.memory) {
    uint64_t ns = static_cast<uint64_t>(std::max<int64_t>(0, m.end_ns - m.start_ns));
    ++out_.memory_ops;
    out_.memory_gpu_time_ns += ns;
    out_.gpu_time_ns += ns;
    if (ns == 0) {
      continue;
    }
    std::vector<uint32_t> stack = {
        process_frame_, profile_.InternFrame(MakeFrame(FrameKind::kMemory, MemoryFrameName(m)))};
    AddSample(stack, static_cast<int64_t>(ns), 0, 0, Labels(m.device, m.stream, 0));
  }
  stats_.memory_ops += out_.memory_ops;
}

void ProcessWindow::AddPcSamples() {
  struct SiteList {
    std::vector<size_t> indices;
    std::vector<uint64_t> weights;
    uint64_t total = 0;
  };
  std::unordered_map<std::string_view, SiteList> site_lists;
  for (const PcSample& s : state_.pc_samples) {
    if (s.count == 0) {
      continue;
    }
    auto sass = sass_.find(profiling::SassKey{s.cubin_hash, s.function, s.pc_offset});
    std::string sass_name = sass == sass_.end()
                                ? fmt::format("[sass] 0x{:04x}", s.pc_offset)
                                : fmt::format("[sass] 0x{:04x} {}", s.pc_offset, sass->second);
    uint32_t sass_frame = profile_.InternFrame(MakeFrame(FrameKind::kSass, sass_name));
    uint32_t stall_frame =
        profile_.InternFrame(MakeFrame(FrameKind::kStall, "[stall] " + StallName(s.stall_reason)));
    stats_.pc_samples += s.count;
    out_.pc_samples += s.count;
    // The kernel's launch sites as (sample index, GPU ns), flattened once per kernel.
    auto site = site_lists.find(s.function);
    if (site == site_lists.end()) {
      SiteList list;
      auto times = site_time_.find(s.function);
      if (times != site_time_.end()) {
        for (const auto& [index, ns] : times->second) {
          list.indices.push_back(index);
          list.weights.push_back(ns);
          list.total += ns;
        }
      }
      site = site_lists.emplace(s.function, std::move(list)).first;
    }
    if (site->second.total == 0) {
      stats_.pc_samples_unattributed += s.count;
      std::vector<uint32_t> stack = {process_frame_, Marker(kUnattributedPc),
                                     KernelFrame(s.function), sass_frame, stall_frame};
      AddSample(stack, 0, 0, static_cast<int64_t>(s.count), Labels(-1, -1, 0));
      continue;
    }
    std::vector<uint64_t> shares = SplitProportionally(s.count, site->second.weights);
    for (size_t i = 0; i < shares.size(); ++i) {
      if (shares[i] == 0) {
        continue;
      }
      // Copied: Add() below may grow the sample table.
      const profiling::Sample& base = profile_.profile().samples[site->second.indices[i]];
      std::vector<uint32_t> stack = base.stack;
      std::vector<profiling::Label> labels = base.labels;
      stack.push_back(sass_frame);
      stack.push_back(stall_frame);
      AddSample(stack, 0, 0, static_cast<int64_t>(shares[i]), labels);
    }
  }
}

// Phase 8 -------------------------------------------------------------------------------------

void ProcessWindow::WriteOutputs(int64_t start_ns, int64_t end_ns) {
  const profiling::ProfileFormats& formats = options_.formats;
  if (formats.pprof) {
    profiling::Profile& p = profile_.mutable_profile();
    p.period_type = {"gpu_time", "nanoseconds"};
    p.period = 1;
    p.default_sample_type = "gpu_time";
    p.time_nanos = start_ns;
    p.duration_nanos = std::max<int64_t>(0, end_ns - start_ns);
    auto pprof = profiling::EncodePprof(p);
    if (!pprof) {
      WARPSCOPE_LOG_EVERY_N(ERROR, 100, "pprof of pid {}: {}", pid_, pprof.error().message());
    } else {
      out_.pprof_gz = std::move(*pprof);
    }
  }
  if (formats.folded) {
    out_.folded = profiling::FoldedStacks(profile_.profile(), kGpuTime);
    if (out_.pc_samples > 0) {
      out_.folded_pc_samples = profiling::FoldedStacks(profile_.profile(), kPcSamples);
    }
  }
  if (formats.any_trace()) {
    GpuTraceOptions trace;
    trace.pid = pid_;
    trace.process_name = ProcessFrameName(state_.desc, pid_);
    trace.start_ns = start_ns;
    trace.end_ns = end_ns;
    trace.max_events = options_.max_trace_kernels;
    if (formats.trace) {
      out_.perfetto_trace = GpuTracePerfetto(state_, trace, names_, stats_);
    }
    if (formats.chrome_trace) {
      ProfileBuilder::Stats counted_once = stats_;  // both traces drop the same events
      out_.trace_json = GpuTraceJson(state_, trace, names_, formats.trace ? counted_once : stats_);
    }
  }
}

}  // namespace warpscope::agent::cuda_profiler
