// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cupti/profile_builder.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <numeric>
#include <queue>
#include <set>
#include <string_view>

#include "agent/process_info.h"
#include "agent/sources/cupti/cupti_metrics.h"
#include "agent/sources/cupti/elf_symbols.h"
#include "base/logging.h"
#include "perftools/profiles.pb.h"

namespace warpscope::agent::cupti {
namespace {

namespace pb = ::perftools::profiles;

constexpr std::string_view kUnsampledSite = "[unsampled launch site]";
constexpr std::string_view kUnattributedPc = "[unattributed PC samples]";
constexpr std::string_view kStackNotReceived = "[stack not received]";
constexpr std::string_view kDefaultLaunch = "[kernel launch]";
constexpr int64_t kGpuTrackPidBase = 1000000000;  // trace pids of GPU tracks: base + device

enum Value : size_t { kGpuTime = 0, kLaunches = 1, kPcSamples = 2, kValueCount = 3 };

enum class FrameKind : uint8_t {
  kProcess,
  kPython,
  kNative,
  kLaunch,
  kKernel,
  kSass,
  kStall,
  kMemory,
  kMarker
};

struct FrameRec {
  FrameKind kind = FrameKind::kMarker;
  std::string name;         // pprof function name (demangled)
  std::string system_name;  // mangled, "" means same as name
  std::string file;         // Python file; the executable's path for the process frame
  int64_t line = 0;
  std::string module;  // native: mapped file path, "[jit]" for perf-map symbols
  std::string build_id;
};

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

void AppendJsonString(fmt::memory_buffer& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out.append(std::string_view("\\\""));
        break;
      case '\\':
        out.append(std::string_view("\\\\"));
        break;
      case '\n':
        out.append(std::string_view("\\n"));
        break;
      case '\t':
        out.append(std::string_view("\\t"));
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          fmt::format_to(fmt::appender(out), "\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

// "64 MiB", "1.5 KiB", "512 B": binary units, one decimal unless exact.
std::string FormatBytes(uint64_t bytes) {
  constexpr std::string_view kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t unit = 0;
  while (unit + 1 < std::size(kUnits) && bytes >= (uint64_t{1} << (10 * (unit + 1)))) {
    ++unit;
  }
  if (unit == 0) {
    return fmt::format("{} B", bytes);
  }
  const uint64_t scale = uint64_t{1} << (10 * unit);
  if (bytes % scale == 0) {
    return fmt::format("{} {}", bytes / scale, kUnits[unit]);
  }
  return fmt::format("{:.1f} {}", static_cast<double>(bytes) / static_cast<double>(scale),
                     kUnits[unit]);
}

// The profile frame of a copy or memset: "[memcpy HtoD]", "[memset]".
std::string MemoryFrameName(const MemoryActivity& m) {
  return m.op == MemoryActivity::Op::kMemcpy ? fmt::format("[memcpy {}]", m.kind)
                                             : std::string("[memset]");
}

// Microseconds with three decimals, exact for integer nanoseconds.
void AppendMicros(fmt::memory_buffer& out, int64_t ns) {
  if (ns < 0) {
    out.push_back('-');
    ns = -ns;
  }
  fmt::format_to(fmt::appender(out), "{}.{:03}", ns / 1000, ns % 1000);
}

base::Result<std::string> Gzip(const std::string& data) {
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return base::Error(base::Internal("zlib deflateInit2 failed"));
  }
  std::string out;
  out.resize(deflateBound(&zs, data.size()) + 32);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  size_t written = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    return base::Error(base::Internal("zlib deflate failed ({})", rc));
  }
  out.resize(written);
  return out;
}

// Frames, samples and outputs of one process's window.
class WindowData {
 public:
  uint32_t Intern(FrameRec frame) {
    std::string key =
        fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", static_cast<int>(frame.kind), frame.name,
                    frame.file, frame.line, frame.module, frame.system_name);
    auto [it, inserted] = frame_ids_.emplace(std::move(key), frames_.size());
    if (inserted) {
      frames_.push_back(std::move(frame));
    }
    return it->second;
  }

  // The id of an nvtx label value (0 is "no label").
  uint32_t NvtxLabel(const std::string& name) {
    if (name.empty()) {
      return 0;
    }
    auto [it, inserted] = nvtx_ids_.emplace(name, static_cast<uint32_t>(nvtx_names_.size()));
    if (inserted) {
      nvtx_names_.push_back(name);
    }
    return it->second;
  }

  // Adds values to the sample with this root-first stack and labels (nvtx: a NvtxLabel id).
  // Returns the sample's index.
  size_t Add(const std::vector<uint32_t>& stack, int64_t device, int64_t stream,
             const int64_t (&values)[kValueCount], uint32_t nvtx = 0) {
    std::string key;
    key.reserve(stack.size() * 4 + 20);
    key.append(reinterpret_cast<const char*>(stack.data()), stack.size() * sizeof(uint32_t));
    key.append(reinterpret_cast<const char*>(&device), sizeof(device));
    key.append(reinterpret_cast<const char*>(&stream), sizeof(stream));
    key.append(reinterpret_cast<const char*>(&nvtx), sizeof(nvtx));
    auto [it, inserted] = sample_ids_.emplace(std::move(key), samples_.size());
    if (inserted) {
      samples_.push_back({stack, device, stream, nvtx, {0, 0, 0}});
    }
    for (size_t i = 0; i < kValueCount; ++i) {
      samples_[it->second].values[i] += values[i];
    }
    return it->second;
  }

  struct Sample {
    std::vector<uint32_t> stack;  // root first
    int64_t device = -1;          // -1: no label
    int64_t stream = -1;
    uint32_t nvtx = 0;  // 0: no label
    int64_t values[kValueCount];
  };

  const std::vector<FrameRec>& frames() const { return frames_; }
  const std::vector<Sample>& samples() const { return samples_; }
  const std::string& nvtx_name(uint32_t id) const { return nvtx_names_[id]; }

 private:
  std::vector<std::string> nvtx_names_{""};
  std::unordered_map<std::string, uint32_t> nvtx_ids_;
  std::vector<FrameRec> frames_;
  std::unordered_map<std::string, uint32_t> frame_ids_;
  std::vector<Sample> samples_;
  std::unordered_map<std::string, size_t> sample_ids_;
};

std::string FoldedName(const FrameRec& f) {
  std::string name;
  switch (f.kind) {
    case FrameKind::kPython:
      name = f.line > 0 ? fmt::format("{} ({}:{})", f.name, Basename(f.file), f.line)
                        : fmt::format("{} ({})", f.name, Basename(f.file));
      break;
    case FrameKind::kKernel:
      name = f.name + "_[k]";
      break;
    case FrameKind::kNative:
      name = f.module == "[jit]" ? f.name + "_[j]" : f.name;
      break;
    default:
      name = f.name;
  }
  for (char& c : name) {
    if (c == ';' || c == '\n' || c == '\r') {
      c = ' ';
    }
  }
  return name;
}

std::string Folded(const WindowData& data, size_t value) {
  std::map<std::string, int64_t> lines;
  std::vector<std::string> names;
  names.reserve(data.frames().size());
  for (const FrameRec& f : data.frames()) {
    names.push_back(FoldedName(f));
  }
  for (const auto& s : data.samples()) {
    if (s.values[value] <= 0) {
      continue;
    }
    std::string line;
    for (size_t i = 0; i < s.stack.size(); ++i) {
      if (i > 0) {
        line.push_back(';');
      }
      line += names[s.stack[i]];
    }
    lines[line] += s.values[value];
  }
  std::string out;
  for (const auto& [line, v] : lines) {
    fmt::format_to(std::back_inserter(out), "{} {}\n", line, v);
  }
  return out;
}

base::Result<std::string> EncodePprof(const WindowData& data, int32_t pid, int64_t start_ns,
                                      int64_t end_ns) {
  pb::Profile p;
  std::unordered_map<std::string, int64_t> strings;
  auto intern = [&](std::string_view s) -> int64_t {
    auto [it, inserted] = strings.emplace(std::string(s), p.string_table_size());
    if (inserted) {
      p.add_string_table(std::string(s));
    }
    return it->second;
  };
  intern("");
  auto add_type = [&](pb::ValueType* vt, std::string_view type, std::string_view unit) {
    vt->set_type(intern(type));
    vt->set_unit(intern(unit));
  };
  add_type(p.add_sample_type(), "gpu_time", "nanoseconds");
  add_type(p.add_sample_type(), "launches", "count");
  add_type(p.add_sample_type(), "pc_samples", "count");
  add_type(p.mutable_period_type(), "gpu_time", "nanoseconds");
  p.set_period(1);
  p.set_default_sample_type(intern("gpu_time"));
  p.set_time_nanos(start_ns);
  p.set_duration_nanos(std::max<int64_t>(0, end_ns - start_ns));

  std::map<std::pair<std::string, std::string>, uint64_t> mappings;  // (file, build id)
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> functions;
  const auto& frames = data.frames();
  for (size_t i = 0; i < frames.size(); ++i) {
    const FrameRec& f = frames[i];
    const std::string& system = f.system_name.empty() ? f.name : f.system_name;
    auto [fit, new_fn] =
        functions.emplace(std::make_tuple(f.name, system, f.file), functions.size() + 1);
    if (new_fn) {
      pb::Function* fn = p.add_function();
      fn->set_id(fit->second);
      fn->set_name(intern(f.name));
      fn->set_system_name(intern(system));
      fn->set_filename(intern(f.file));
    }
    pb::Location* loc = p.add_location();
    loc->set_id(i + 1);
    if (f.kind == FrameKind::kNative && !f.module.empty()) {
      auto [mit, new_map] =
          mappings.emplace(std::make_pair(f.module, f.build_id), mappings.size() + 1);
      if (new_map) {
        pb::Mapping* m = p.add_mapping();
        m->set_id(mit->second);
        m->set_filename(intern(f.module));
        m->set_build_id(intern(f.build_id));
        m->set_has_functions(true);
      }
      loc->set_mapping_id(mit->second);
    }
    pb::Line* line = loc->add_line();
    line->set_function_id(fit->second);
    line->set_line(f.line);
  }
  int64_t device_key = intern("device");
  int64_t stream_key = intern("stream");
  int64_t pid_key = intern("pid");
  int64_t nvtx_key = -1;  // interned on first use: profiles without NVTX keep their table
  for (const auto& s : data.samples()) {
    pb::Sample* out = p.add_sample();
    for (auto it = s.stack.rbegin(); it != s.stack.rend(); ++it) {
      out->add_location_id(*it + 1);
    }
    for (int64_t v : s.values) {
      out->add_value(v);
    }
    auto add_label = [&](int64_t key, int64_t num) {
      pb::Label* l = out->add_label();
      l->set_key(key);
      l->set_num(num);
    };
    if (s.device >= 0) {
      add_label(device_key, s.device);
    }
    if (s.stream >= 0) {
      add_label(stream_key, s.stream);
    }
    add_label(pid_key, pid);
    if (s.nvtx != 0) {
      if (nvtx_key < 0) {
        nvtx_key = intern("nvtx");
      }
      pb::Label* l = out->add_label();
      l->set_key(nvtx_key);
      l->set_str(intern(data.nvtx_name(s.nvtx)));
    }
  }
  std::string bytes;
  if (!p.SerializeToString(&bytes)) {
    return base::Error(
        base::Internal("pprof encode of pid {}: protobuf serialisation failed", pid));
  }
  return Gzip(bytes);
}

// Splits `count` over `weights` in proportion, as integers summing exactly to `count`.
std::vector<uint64_t> SplitProportionally(uint64_t count, const std::vector<uint64_t>& weights) {
  std::vector<uint64_t> out(weights.size(), 0);
  unsigned __int128 total = 0;
  for (uint64_t w : weights) {
    total += w;
  }
  if (total == 0 || weights.empty()) {
    return out;
  }
  std::vector<std::pair<unsigned __int128, size_t>> remainders;
  remainders.reserve(weights.size());
  uint64_t given = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    unsigned __int128 scaled = static_cast<unsigned __int128>(count) * weights[i];
    out[i] = static_cast<uint64_t>(scaled / total);
    given += out[i];
    remainders.push_back({scaled % total, i});
  }
  // The leftover (< number of sites) goes to the largest remainders; on ties the heavier site,
  // then the earlier one. Only the top `left` entries need ordering: O(sites) per call.
  size_t left = static_cast<size_t>(count - given);
  auto before = [&](const auto& a, const auto& b) {
    if (a.first != b.first) {
      return a.first > b.first;
    }
    if (weights[a.second] != weights[b.second]) {
      return weights[a.second] > weights[b.second];
    }
    return a.second < b.second;
  };
  if (left > 0 && left < remainders.size()) {
    std::nth_element(remainders.begin(), remainders.begin() + static_cast<long>(left),
                     remainders.end(), before);
  }
  for (size_t i = 0; i < left && i < remainders.size(); ++i) {
    ++out[remainders[i].second];
  }
  return out;
}

}  // namespace

struct ProfileBuilder::ProcessState {
  struct Stack {
    InternedStack raw;
    bool resolved = false;
    std::vector<FrameRec> frames;  // Python then native, root first
  };
  ProcessDesc desc;
  std::unordered_map<uint64_t, Stack> stacks;
  std::vector<KernelActivity> kernels;
  std::vector<KernelAggregate> aggregates;
  std::vector<PcSample> pc_samples;
  std::vector<MemoryActivity> memory;
  std::deque<NvtxRange> nvtx_history;   // arrival order; for labels
  std::vector<NvtxRange> nvtx_undrawn;  // not drawn in a trace yet
  ProcessCounters counters;
  uint64_t overhead_ns_at_window_start = 0;
  std::optional<double> overhead_ratio;
  uint64_t kernels_profiled = 0;
  uint64_t unresolved_frames = 0;
};

ProfileBuilder::ProfileBuilder(Symbolizer* symbolizer, Options options)
    : symbolizer_(symbolizer), options_(std::move(options)) {}

ProfileBuilder::~ProfileBuilder() = default;

ProfileBuilder::ProcessState& ProfileBuilder::State(int32_t pid) {
  auto& slot = processes_[pid];
  if (slot == nullptr) {
    slot = std::make_unique<ProcessState>();
    slot->desc.pid = pid;
  }
  return *slot;
}

void ProfileBuilder::AddProcess(const ProcessDesc& process) {
  ProcessState& state = State(process.pid);
  state.desc = process;
}

void ProfileBuilder::AddStack(int32_t pid, InternedStack stack) {
  ProcessState& state = State(pid);
  if (state.stacks.size() >= options_.max_stacks_per_process &&
      !state.stacks.contains(stack.hash)) {
    // A process that keeps producing new stacks (JIT, recursion) must not grow the agent
    // without bound; its later kernels read "[stack not received]".
    WARPSCOPE_LOG_FIRST_N(WARNING, 1,
                          "pid {}: more than {} distinct launch stacks; dropping new ones", pid,
                          options_.max_stacks_per_process);
    return;
  }
  uint64_t hash = stack.hash;
  state.stacks[hash] = ProcessState::Stack{std::move(stack), false, {}};
}

void ProfileBuilder::AddKernel(int32_t pid, KernelActivity kernel) {
  State(pid).kernels.push_back(std::move(kernel));
}

void ProfileBuilder::AddKernelAggregate(int32_t pid, const KernelAggregate& aggregate) {
  State(pid).aggregates.push_back(aggregate);
}

void ProfileBuilder::AddPcSample(int32_t pid, const PcSample& sample) {
  State(pid).pc_samples.push_back(sample);
}

void ProfileBuilder::AddMemoryActivity(int32_t pid, MemoryActivity activity) {
  State(pid).memory.push_back(std::move(activity));
}

void ProfileBuilder::AddNvtxRange(int32_t pid, NvtxRange range) {
  ProcessState& state = State(pid);
  ++stats_.nvtx_ranges;
  if (options_.trace) {
    if (state.nvtx_undrawn.size() < options_.max_trace_kernels) {
      state.nvtx_undrawn.push_back(range);
    } else {
      ++stats_.trace_events_dropped;
    }
  }
  if (options_.max_nvtx_ranges_per_process == 0) {
    return;
  }
  while (state.nvtx_history.size() >= options_.max_nvtx_ranges_per_process) {
    state.nvtx_history.pop_front();
    ++stats_.nvtx_ranges_evicted;
  }
  state.nvtx_history.push_back(std::move(range));
}

void ProfileBuilder::AddSass(const SassMap& sass) {
  for (const auto& [key, text] : sass) {
    sass_[key] = text;
  }
}

void ProfileBuilder::UpdateCounters(int32_t pid, const ProcessCounters& counters) {
  State(pid).counters = counters;
}

void ProfileBuilder::ForgetProcess(int32_t pid) {
  processes_.erase(pid);
  if (symbolizer_ != nullptr) {
    symbolizer_->ForgetProcess(pid);
  }
}

const std::string& ProfileBuilder::DemangledKernel(const std::string& mangled) {
  auto it = demangled_.find(mangled);
  if (it == demangled_.end()) {
    if (demangled_.size() > 100000) {
      demangled_.clear();  // bound memory against processes with endless distinct kernels
    }
    it = demangled_.emplace(mangled, Demangle(mangled)).first;
  }
  return it->second;
}

std::vector<WindowProfile> ProfileBuilder::FinishWindow(int64_t start_ns, int64_t end_ns) {
  ++stats_.windows;
  std::vector<WindowProfile> out;
  for (auto& [pid, state_ptr] : processes_) {
    ProcessState& state = *state_ptr;
    // The overhead estimate covers every known process, also idle ones.
    if (end_ns > start_ns) {
      uint64_t spent = state.counters.overhead_ns >= state.overhead_ns_at_window_start
                           ? state.counters.overhead_ns - state.overhead_ns_at_window_start
                           : 0;
      state.overhead_ratio = static_cast<double>(spent) / static_cast<double>(end_ns - start_ns);
    }
    state.overhead_ns_at_window_start = state.counters.overhead_ns;
    // Ranges that ended long before this window can no longer contain a launch of a kernel
    // still to come.
    std::erase_if(state.nvtx_history, [&](const NvtxRange& r) {
      return r.end_ns < start_ns - options_.nvtx_history_ns;
    });
    if (state.kernels.empty() && state.aggregates.empty() && state.pc_samples.empty() &&
        state.memory.empty()) {
      continue;
    }

    WindowData data;
    WindowProfile profile;
    profile.pid = pid;
    profile.executable = state.desc.executable;
    profile.start_ns = start_ns;
    profile.end_ns = end_ns;

    std::string exe_name = state.desc.executable.empty()
                               ? fmt::format("pid {}", pid)
                               : std::string(Basename(state.desc.executable));
    uint32_t process_frame =
        data.Intern({FrameKind::kProcess, exe_name, "", state.desc.executable, 0, "", ""});
    auto marker = [&](std::string_view name) {
      return data.Intern({FrameKind::kMarker, std::string(name), "", "", 0, "", ""});
    };
    auto kernel_frame = [&](const std::string& mangled) {
      const std::string& name = DemangledKernel(mangled);
      return data.Intern({FrameKind::kKernel, name, mangled == name ? "" : mangled, "", 0, "", ""});
    };

    // Launch stacks, resolved once per stack for the process's life and interned once per
    // window: stack hash -> root-first frame ids (the executable frame included).
    std::unordered_map<uint64_t, std::vector<uint32_t>> window_stacks;
    const std::vector<uint32_t> unsampled_ids{process_frame, marker(kUnsampledSite)};
    auto stack_frames = [&](const KernelActivity& k) -> const std::vector<uint32_t>& {
      if (!k.stack_hash.has_value()) {
        return unsampled_ids;
      }
      uint64_t key = *k.stack_hash;
      auto cached = window_stacks.find(key);
      if (cached != window_stacks.end()) {
        return cached->second;
      }
      auto it = state.stacks.find(key);
      std::vector<uint32_t> ids{process_frame};
      if (it == state.stacks.end()) {
        ++stats_.unknown_stack_hashes;
        ids.push_back(marker(kStackNotReceived));
      } else {
        ProcessState::Stack& stack = it->second;
        if (!stack.resolved) {
          stack.resolved = true;
          stack.frames.clear();
          const auto& py = stack.raw.python_frames;
          for (auto p = py.rbegin(); p != py.rend(); ++p) {
            stack.frames.push_back({FrameKind::kPython, p->function, "", p->file, p->line, "", ""});
          }
          std::vector<uint64_t> lookups;
          lookups.reserve(stack.raw.native_pcs.size());
          for (uint64_t pc : stack.raw.native_pcs) {
            lookups.push_back(pc > 0 ? pc - 1 : pc);  // return addresses point past the call
          }
          std::vector<NativeFrame> natives;
          if (symbolizer_ != nullptr) {
            natives = symbolizer_->Symbolize(pid, lookups);
          } else {
            for (uint64_t a : lookups) {
              NativeFrame f;
              f.address = a;
              f.function = fmt::format("[unknown] 0x{:x}", a);
              natives.push_back(std::move(f));
            }
          }
          // Drop the profiler's own innermost frames (callback, CUPTI).
          size_t first = 0;
          while (first < natives.size()) {
            std::string_view module = Basename(natives[first].module);
            bool own = std::any_of(options_.drop_module_prefixes.begin(),
                                   options_.drop_module_prefixes.end(),
                                   [&](const std::string& p) { return module.rfind(p, 0) == 0; });
            if (!own || module.empty()) {
              break;
            }
            ++first;
          }
          for (size_t i = natives.size(); i > first; --i) {
            const NativeFrame& n = natives[i - 1];
            if (!n.resolved) {
              ++state.unresolved_frames;
            }
            stack.frames.push_back({FrameKind::kNative, n.function,
                                    n.mangled == n.function ? "" : n.mangled, "", 0, n.module,
                                    n.build_id});
          }
        }
        for (const FrameRec& f : stack.frames) {
          ids.push_back(data.Intern(f));
        }
      }
      return window_stacks.emplace(key, std::move(ids)).first->second;
    };

    // The innermost NVTX range containing each sampled launch, per launching thread: a sweep
    // over the thread's ranges (by start; the longer first on equal starts, so the inner one is
    // opened later) and its launches (by time), with the ranges open at the launch time kept
    // ordered by start. The innermost open range is the one opened last.
    std::vector<uint32_t> kernel_nvtx(state.kernels.size(), 0);
    if (!state.nvtx_history.empty()) {
      std::unordered_map<int32_t, std::vector<const NvtxRange*>> ranges_by_thread;
      for (const NvtxRange& r : state.nvtx_history) {
        if (r.end_ns > r.start_ns) {
          ranges_by_thread[r.thread_id].push_back(&r);
        }
      }
      std::unordered_map<int32_t, std::vector<std::pair<int64_t, size_t>>> launches_by_thread;
      for (size_t i = 0; i < state.kernels.size(); ++i) {
        const KernelActivity& k = state.kernels[i];
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
            uint32_t label = data.NvtxLabel(ranges[open.rbegin()->second]->name);
            if (label != 0) {
              kernel_nvtx[kernel_index] = label;
              ++stats_.kernels_nvtx_labeled;
            }
          }
        }
      }
    }

    // GPU time and launches, in two steps so the per-kernel work is a few hash lookups:
    // (stack hash, launch frame, kernel frame, device, stream) first, full stacks once per
    // distinct key after.
    std::unordered_map<std::string_view, uint32_t> launch_ids;
    std::unordered_map<std::string_view, uint32_t> kernel_ids;
    std::unordered_map<uint32_t, std::string_view> kernel_mangled;  // kernel frame -> name
    auto kernel_id = [&](const std::string& mangled) {
      auto it = kernel_ids.find(mangled);
      if (it == kernel_ids.end()) {
        uint32_t id = kernel_frame(mangled);
        it = kernel_ids.emplace(mangled, id).first;
        kernel_mangled.emplace(id, mangled);
      }
      return it->second;
    };
    struct SiteKey {
      uint64_t stack_hash;
      uint32_t launch;  // frame id; kNoStack: a stackless kernel (no launch frame)
      uint32_t kernel;
      uint32_t device;
      uint32_t stream;
      uint32_t nvtx;  // WindowData::NvtxLabel id, 0: none
      bool operator==(const SiteKey&) const = default;
    };
    struct SiteKeyHash {
      size_t operator()(const SiteKey& k) const {
        uint64_t h = k.stack_hash * 0x9e3779b97f4a7c15ull;
        h ^= (static_cast<uint64_t>(k.launch) << 32 | k.kernel) + 0x632be59bd9b4e019ull + (h << 6) +
             (h >> 2);
        h ^= (static_cast<uint64_t>(k.device) << 32 | k.stream) + 0x94d049bb133111ebull + (h << 6) +
             (h >> 2);
        h ^= k.nvtx + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        return static_cast<size_t>(h);
      }
    };
    constexpr uint32_t kNoStack = 0xffffffffu;
    struct SiteValue {
      uint64_t ns = 0;
      uint64_t count = 0;
      const KernelActivity* first = nullptr;
    };
    std::unordered_map<SiteKey, SiteValue, SiteKeyHash> sites_by_key;
    std::vector<SiteKey> site_order;  // first-seen order, for deterministic output
    for (size_t i = 0; i < state.kernels.size(); ++i) {
      const KernelActivity& k = state.kernels[i];
      SiteKey key{k.stack_hash.value_or(0),
                  kNoStack,
                  kernel_id(k.name),
                  k.device,
                  k.stream,
                  kernel_nvtx[i]};
      if (!k.stack_hash.has_value()) {
        ++stats_.kernels_without_stack;
      } else {
        std::string_view api = k.launch_api.empty() ? kDefaultLaunch : k.launch_api;
        auto it = launch_ids.find(api);
        if (it == launch_ids.end()) {
          it = launch_ids
                   .emplace(api,
                            data.Intern({FrameKind::kLaunch, std::string(api), "", "", 0, "", ""}))
                   .first;
        }
        key.launch = it->second;
      }
      auto [it, inserted] = sites_by_key.try_emplace(key);
      if (inserted) {
        site_order.push_back(key);
        it->second.first = &k;
      }
      it->second.ns += static_cast<uint64_t>(std::max<int64_t>(0, k.end_ns - k.start_ns));
      ++it->second.count;
    }
    // mangled kernel -> sample index -> GPU ns: the launch sites PC samples are split over.
    std::unordered_map<std::string_view, std::map<size_t, uint64_t>> site_time;
    // kTotals: what the individual records already account for, per (kernel frame, device,
    // stream), consumed as aggregates are applied.
    std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::pair<uint64_t, uint64_t>> covered;
    std::vector<uint32_t> stack;
    for (const SiteKey& key : site_order) {
      const SiteValue& v = sites_by_key[key];
      stack = stack_frames(*v.first);
      if (key.launch != kNoStack) {
        stack.push_back(key.launch);
      }
      stack.push_back(key.kernel);
      int64_t values[kValueCount] = {static_cast<int64_t>(v.ns), static_cast<int64_t>(v.count), 0};
      size_t index = data.Add(stack, key.device, key.stream, values, key.nvtx);
      site_time[kernel_mangled[key.kernel]][index] += v.ns;
      profile.gpu_time_ns += v.ns;
      profile.kernels += v.count;
      if (options_.aggregate_mode == AggregateMode::kTotals) {
        auto& [ns, count] = covered[{key.kernel, key.device, key.stream}];
        ns += v.ns;
        count += v.count;
      }
    }
    for (const KernelAggregate& a : state.aggregates) {
      uint64_t ns = a.total_gpu_ns;
      uint64_t count = a.count;
      uint32_t kernel = kernel_id(a.name);
      auto it = covered.find({kernel, a.device, a.stream});
      if (it != covered.end()) {
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
      stack = {process_frame, marker(kUnsampledSite), kernel};
      int64_t values[kValueCount] = {static_cast<int64_t>(ns), static_cast<int64_t>(count), 0};
      size_t index = data.Add(stack, a.device, a.stream, values);
      site_time[kernel_mangled[kernel]][index] += ns;
      profile.gpu_time_ns += ns;
      profile.kernels += count;
    }

    // Memory copies and memsets: GPU time under "executable -> [memcpy HtoD]".
    for (const MemoryActivity& m : state.memory) {
      uint64_t ns = static_cast<uint64_t>(std::max<int64_t>(0, m.end_ns - m.start_ns));
      ++profile.memory_ops;
      profile.memory_gpu_time_ns += ns;
      profile.gpu_time_ns += ns;
      if (ns == 0) {
        continue;
      }
      stack = {process_frame,
               data.Intern({FrameKind::kMemory, MemoryFrameName(m), "", "", 0, "", ""})};
      int64_t values[kValueCount] = {static_cast<int64_t>(ns), 0, 0};
      data.Add(stack, m.device, m.stream, values);
    }
    stats_.memory_ops += profile.memory_ops;

    // PC samples, split over the kernel's launch sites by GPU time.
    struct SiteList {
      std::vector<size_t> indices;
      std::vector<uint64_t> weights;
      uint64_t total = 0;
    };
    std::unordered_map<std::string_view, SiteList> site_lists;
    for (const PcSample& s : state.pc_samples) {
      if (s.count == 0) {
        continue;
      }
      auto sass = sass_.find(SassKey{s.cubin_hash, s.function, s.pc_offset});
      std::string sass_name = sass == sass_.end()
                                  ? fmt::format("[sass] 0x{:04x}", s.pc_offset)
                                  : fmt::format("[sass] 0x{:04x} {}", s.pc_offset, sass->second);
      uint32_t sass_frame = data.Intern({FrameKind::kSass, sass_name, "", "", 0, "", ""});
      uint32_t stall_frame = data.Intern(
          {FrameKind::kStall, "[stall] " + StallName(s.stall_reason), "", "", 0, "", ""});
      stats_.pc_samples += s.count;
      profile.pc_samples += s.count;
      // The kernel's launch sites as (sample index, GPU ns), flattened once per kernel.
      auto site = site_lists.find(s.function);
      if (site == site_lists.end()) {
        SiteList list;
        auto times = site_time.find(s.function);
        if (times != site_time.end()) {
          for (const auto& [index, ns] : times->second) {
            list.indices.push_back(index);
            list.weights.push_back(ns);
            list.total += ns;
          }
        }
        site = site_lists.emplace(s.function, std::move(list)).first;
      }
      uint64_t site_total = site->second.total;
      if (site_total == 0) {
        stats_.pc_samples_unattributed += s.count;
        stack = {process_frame, marker(kUnattributedPc), kernel_frame(s.function), sass_frame,
                 stall_frame};
        int64_t values[kValueCount] = {0, 0, static_cast<int64_t>(s.count)};
        data.Add(stack, -1, -1, values);
        continue;
      }
      std::vector<uint64_t> shares = SplitProportionally(s.count, site->second.weights);
      for (size_t i = 0; i < shares.size(); ++i) {
        uint64_t share = shares[i];
        if (share == 0) {
          continue;
        }
        const WindowData::Sample& base = data.samples()[site->second.indices[i]];
        stack = base.stack;  // copied: Add() below may grow the sample table
        int64_t device = base.device;
        int64_t stream = base.stream;
        uint32_t nvtx = base.nvtx;
        stack.push_back(sass_frame);
        stack.push_back(stall_frame);
        int64_t values[kValueCount] = {0, 0, static_cast<int64_t>(share)};
        data.Add(stack, device, stream, values, nvtx);
      }
    }

    stats_.kernels += profile.kernels;
    state.kernels_profiled += profile.kernels;

    auto pprof = EncodePprof(data, pid, start_ns, end_ns);
    if (!pprof) {
      WARPSCOPE_LOG_EVERY_N(ERROR, 100, "{}", pprof.error().message());
    } else {
      profile.pprof_gz = std::move(*pprof);
    }
    profile.folded = Folded(data, kGpuTime);
    if (profile.pc_samples > 0) {
      profile.folded_pc_samples = Folded(data, kPcSamples);
    }

    if (options_.trace) {
      fmt::memory_buffer t;
      auto emit = [&t, first = true]() mutable -> fmt::memory_buffer& {
        if (!first) {
          t.push_back(',');
        }
        first = false;
        t.push_back('\n');
        return t;
      };
      t.reserve(4096 +
                std::min(state.kernels.size() + state.memory.size() + state.nvtx_undrawn.size(),
                         options_.max_trace_kernels) *
                    768);
      t.append(std::string_view("{\"displayTimeUnit\":\"ns\",\"traceEvents\":["));
      fmt::format_to(
          fmt::appender(emit()),
          "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":", pid);
      AppendJsonString(t, fmt::format("{} (pid {})", exe_name, pid));
      t.append(std::string_view("}}"));
      std::set<std::pair<uint32_t, uint32_t>> gpu_tracks;
      std::set<int32_t> threads;
      std::set<uint64_t> launch_slices;  // correlation ids drawn (graph launches fan out)
      uint64_t flow_id = 0;
      size_t drawn = 0;
      // NVTX ranges first: few, and what a reader orients by (step boundaries).
      for (const NvtxRange& r : state.nvtx_undrawn) {
        if (drawn >= options_.max_trace_kernels) {
          ++stats_.trace_events_dropped;
          continue;
        }
        ++drawn;
        threads.insert(r.thread_id);
        if (r.end_ns > r.start_ns) {
          fmt::format_to(fmt::appender(emit()),
                         "{{\"ph\":\"X\",\"cat\":\"nvtx\",\"pid\":{},\"tid\":{},\"ts\":", pid,
                         r.thread_id);
          AppendMicros(t, r.start_ns);
          t.append(std::string_view(",\"dur\":"));
          AppendMicros(t, r.end_ns - r.start_ns);
        } else {
          fmt::format_to(fmt::appender(emit()),
                         "{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"nvtx\",\"pid\":{},\"tid\":{},"
                         "\"ts\":",
                         pid, r.thread_id);
          AppendMicros(t, r.start_ns);
        }
        t.append(std::string_view(",\"name\":"));
        AppendJsonString(t, r.name.empty() ? std::string_view("[nvtx]") : r.name);
        t.append(std::string_view(",\"args\":{\"domain\":"));
        AppendJsonString(t, r.domain);
        t.append(std::string_view("}}"));
      }
      for (const KernelActivity& k : state.kernels) {
        if (drawn >= options_.max_trace_kernels) {
          ++stats_.trace_kernels_dropped;
          continue;
        }
        ++drawn;
        int64_t gpu_pid = kGpuTrackPidBase + k.device;
        gpu_tracks.insert({k.device, k.stream});
        fmt::format_to(fmt::appender(emit()),
                       "{{\"ph\":\"X\",\"cat\":\"kernel\",\"pid\":{},\"tid\":{},\"ts\":", gpu_pid,
                       k.stream);
        AppendMicros(t, k.start_ns);
        t.append(std::string_view(",\"dur\":"));
        AppendMicros(t, std::max<int64_t>(0, k.end_ns - k.start_ns));
        t.append(std::string_view(",\"name\":"));
        AppendJsonString(t, DemangledKernel(k.name));
        fmt::format_to(fmt::appender(t),
                       ",\"args\":{{\"correlation_id\":{},\"device\":{},\"stream\":{},"
                       "\"context\":{},\"grid\":[{},{},{}],\"block\":[{},{},{}],"
                       "\"registers_per_thread\":{},\"shared_memory_bytes\":{},\"graph_id\":{}}}}}",
                       k.correlation_id, k.device, k.stream, k.context, k.grid.x, k.grid.y,
                       k.grid.z, k.block.x, k.block.y, k.block.z, k.registers_per_thread,
                       k.shared_memory_bytes, k.graph_id);
        if (k.api_end_ns <= k.api_start_ns) {
          continue;
        }
        threads.insert(k.thread_id);
        if (launch_slices.insert(k.correlation_id).second) {
          fmt::format_to(fmt::appender(emit()),
                         "{{\"ph\":\"X\",\"cat\":\"cuda_api\",\"pid\":{},\"tid\":{},\"ts\":", pid,
                         k.thread_id);
          AppendMicros(t, k.api_start_ns);
          t.append(std::string_view(",\"dur\":"));
          AppendMicros(t, k.api_end_ns - k.api_start_ns);
          t.append(std::string_view(",\"name\":"));
          AppendJsonString(t, k.launch_api.empty() ? kDefaultLaunch : k.launch_api);
          fmt::format_to(fmt::appender(t), ",\"args\":{{\"correlation_id\":{}}}}}",
                         k.correlation_id);
        }
        ++flow_id;
        fmt::format_to(fmt::appender(emit()),
                       "{{\"ph\":\"s\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":{},"
                       "\"pid\":{},\"tid\":{},\"ts\":",
                       flow_id, pid, k.thread_id);
        AppendMicros(t, k.api_start_ns);
        t.push_back('}');
        fmt::format_to(fmt::appender(emit()),
                       "{{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"launch\",\"name\":\"launch\","
                       "\"id\":{},\"pid\":{},\"tid\":{},\"ts\":",
                       flow_id, gpu_pid, k.stream);
        AppendMicros(t, k.start_ns);
        t.push_back('}');
      }
      for (const MemoryActivity& m : state.memory) {
        if (drawn >= options_.max_trace_kernels) {
          ++stats_.trace_events_dropped;
          continue;
        }
        ++drawn;
        const bool copy = m.op == MemoryActivity::Op::kMemcpy;
        const int64_t dur = std::max<int64_t>(0, m.end_ns - m.start_ns);
        gpu_tracks.insert({m.device, m.stream});
        fmt::format_to(fmt::appender(emit()),
                       "{{\"ph\":\"X\",\"cat\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":",
                       copy ? "memcpy" : "memset", kGpuTrackPidBase + m.device, m.stream);
        AppendMicros(t, m.start_ns);
        t.append(std::string_view(",\"dur\":"));
        AppendMicros(t, dur);
        t.append(std::string_view(",\"name\":"));
        AppendJsonString(t, copy ? fmt::format("memcpy {} {}", m.kind, FormatBytes(m.bytes))
                                 : fmt::format("memset {}", FormatBytes(m.bytes)));
        t.append(std::string_view(",\"args\":{"));
        AppendJsonString(t, copy ? "kind" : "memory_kind");
        t.push_back(':');
        AppendJsonString(t, m.kind);
        fmt::format_to(fmt::appender(t),
                       ",\"bytes\":{},\"correlation_id\":{},\"device\":{},\"stream\":{},"
                       "\"context\":{},\"graph_id\":{}",
                       m.bytes, m.correlation_id, m.device, m.stream, m.context, m.graph_id);
        if (dur > 0) {
          // bytes per ns is GB/s (10^9 bytes per second)
          fmt::format_to(fmt::appender(t), ",\"throughput_gb_per_s\":{:.3f}",
                         static_cast<double>(m.bytes) / static_cast<double>(dur));
        }
        t.append(std::string_view("}}"));
      }
      for (int32_t tid : threads) {
        fmt::format_to(fmt::appender(emit()),
                       "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},"
                       "\"args\":{{\"name\":\"thread {}\"}}}}",
                       pid, tid, tid);
      }
      std::set<uint32_t> devices;
      for (const auto& [device, stream] : gpu_tracks) {
        if (devices.insert(device).second) {
          fmt::format_to(fmt::appender(emit()),
                         "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},"
                         "\"args\":{{\"name\":\"GPU {}\"}}}}",
                         kGpuTrackPidBase + device, device);
          fmt::format_to(fmt::appender(emit()),
                         "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{},"
                         "\"args\":{{\"sort_index\":{}}}}}",
                         kGpuTrackPidBase + device, 1 + device);
        }
        fmt::format_to(fmt::appender(emit()),
                       "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},"
                       "\"args\":{{\"name\":\"stream {}\"}}}}",
                       kGpuTrackPidBase + device, stream, stream);
      }
      fmt::format_to(
          fmt::appender(t),
          "\n],\"otherData\":{{\"pid\":{},\"window_start_ns\":{},\"window_end_ns\":{}}}}}\n", pid,
          start_ns, end_ns);
      profile.trace_json = fmt::to_string(t);
    }

    state.kernels.clear();
    state.aggregates.clear();
    state.pc_samples.clear();
    state.memory.clear();
    state.nvtx_undrawn.clear();
    out.push_back(std::move(profile));
  }
  return out;
}

void ProfileBuilder::EmitSelfMetrics(model::SampleSink& sink) const {
  for (const auto& [pid, state_ptr] : processes_) {
    const ProcessState& state = *state_ptr;
    agent::ProcessInfo info;
    info.pid = pid;
    info.container_pid = pid;
    info.start_ticks = state.desc.start_ticks;
    info.executable = std::string(Basename(state.desc.executable));
    info.executable_path = state.desc.executable;
    model::Entity entity = MakeProcessEntity(info);
    sink.AddEntity(entity);
    const ProcessCounters& c = state.counters;
    sink.AddValue(cupti_metrics::kLaunchesSeen, entity.id, static_cast<double>(c.launches_seen));
    sink.AddValue(cupti_metrics::kLaunchesAdmitted, entity.id,
                  static_cast<double>(c.launches_admitted));
    sink.AddValue(cupti_metrics::kLaunchesDropped, entity.id,
                  static_cast<double>(c.launches_dropped));
    sink.AddValue(cupti_metrics::kRecordsLost, entity.id, static_cast<double>(c.records_lost));
    sink.AddValue(cupti_metrics::kOverheadTime, entity.id,
                  static_cast<double>(c.overhead_ns) / 1e9);
    if (state.overhead_ratio) {
      sink.AddValue(cupti_metrics::kOverheadRatio, entity.id, *state.overhead_ratio);
    }
    sink.AddValue(cupti_metrics::kKernelsProfiled, entity.id,
                  static_cast<double>(state.kernels_profiled));
    sink.AddValue(cupti_metrics::kUnresolvedFrames, entity.id,
                  static_cast<double>(state.unresolved_frames));
  }
}

}  // namespace warpscope::agent::cupti
