// SPDX-License-Identifier: Apache-2.0
#include "profile_fixtures.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "agent/sources/cpu_profiler/cpu_window.h"
#include "agent/sources/cuda_profiler/profile_builder.h"

// Native functions of this binary for the CPU profile's user frames.
extern "C" __attribute__((noinline)) int warpscope_fixture_matmul(int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) s += i * i;
  return s;
}
extern "C" __attribute__((noinline)) int warpscope_fixture_decode_jpeg(int n) {
  int s = 1;
  for (int i = 0; i < n; ++i) s ^= i << 1;
  return s;
}

namespace warpscope::test {
namespace {

namespace cpu = agent::cpu_profiler;
namespace cuda = agent::cuda_profiler;

constexpr const char* kKallsyms = "ffffffff81001000 T do_syscall_64\n";
constexpr uint64_t kSyscallIp = 0xffffffff81001010;

// Inserts the sample's Python frames right below the process frame (the CPython reader splices
// them at the eval-loop frames; these stacks have none).
class SplicingPython final : public cpu::PythonStackSource {
 public:
  std::vector<cpu::PythonStackFrame> ReadFrames(uint32_t, uint32_t) override { return {}; }
  std::vector<profiling::Frame> Splice(std::vector<profiling::Frame> native,
                                       const std::vector<cpu::PythonStackFrame>& python) override {
    auto at = native.begin() + (native.empty() ? 0 : 1);
    for (auto it = python.rbegin(); it != python.rend(); ++it) {
      at = native.insert(at, it->frame) + 1;
    }
    return native;
  }
};

uint64_t Inside(int (*fn)(int)) { return reinterpret_cast<uint64_t>(fn) + 4; }

cpu::PythonStackFrame Py(const char* function, const char* file, int64_t line) {
  cpu::PythonStackFrame f;
  f.frame.function = function;
  f.frame.file = file;
  f.frame.line = line;
  f.frame.kind = profiling::FrameKind::kPython;
  f.eval_entry = true;
  return f;
}

}  // namespace

profiling::WindowProfile FixtureCpuWindow(int64_t start_ns, int64_t end_ns) {
  const auto pid = static_cast<uint32_t>(getpid());
  cpu::ProcessTable table;
  cpu::ProcessInfo& info = table.Get(pid);
  info.executable = "/usr/bin/python3";
  info.thread_names[pid] = "python3";
  info.thread_names[pid + 1] = "DataLoader";
  profiling::Symbolizer symbolizer{{}};
  cpu::KernelSymbols kernel = cpu::KernelSymbols::Parse(kKallsyms).value();
  SplicingPython python;
  cpu::SymbolSources sources{table, symbolizer, kernel, python};

  cpu::CpuWindow window(profiling::ProfileFormats{.pprof = true});
  cpu::UnwoundSample train;
  train.pid = pid;
  train.tid = pid;
  train.period_ns = 10'000'000;
  train.user_pcs = {Inside(&warpscope_fixture_matmul)};
  train.kernel_ips = {kSyscallIp};
  train.python = {Py("train_step", "train.py", 6)};
  for (int i = 0; i < 30; ++i) window.Add(train);
  cpu::UnwoundSample loader;
  loader.pid = pid;
  loader.tid = pid + 1;
  loader.period_ns = 10'000'000;
  loader.user_pcs = {Inside(&warpscope_fixture_decode_jpeg)};
  loader.python = {Py("next_batch", "loader.py", 12)};
  for (int i = 0; i < 10; ++i) window.Add(loader);
  std::vector<profiling::WindowProfile> out = window.Build(start_ns, end_ns, sources);
  return out.empty() ? profiling::WindowProfile{} : std::move(out[0]);
}

profiling::WindowProfile FixtureGpuWindow(int64_t start_ns, int64_t end_ns) {
  const auto pid = static_cast<int32_t>(getpid());
  cuda::ProfileBuilder::Options options;
  options.formats = profiling::ProfileFormats{.pprof = true};
  cuda::ProfileBuilder builder(nullptr, options);
  builder.AddProcess({pid, "/usr/bin/python3", 0, 0});
  cuda::InternedStack stack;
  stack.hash = 0xabc;
  stack.python_frames = {{"train_step", "train.py", 6}};
  builder.AddStack(pid, stack);
  cuda::KernelActivity k;
  k.correlation_id = 1;
  k.stack_hash = 0xabc;
  k.name = "_Z4gemmIfEvPfi";
  k.stream = 7;
  k.context = 1;
  k.start_ns = start_ns + 1'000'000;
  k.end_ns = k.start_ns + 4'000'000;
  k.launch_api = "cudaLaunchKernel";
  k.thread_id = pid;
  k.api_start_ns = start_ns + 500'000;
  k.api_end_ns = start_ns + 600'000;
  // Two more kernels of the same launch site: one on device 1 (stream 9) in the NVTX range
  // "backward", one on device 0 (stream 8) outside any range.
  cuda::KernelActivity attn = k;
  attn.correlation_id = 3;
  attn.name = "flash_attn_bwd_kernel";
  attn.device = 1;
  attn.stream = 9;
  attn.start_ns = start_ns + 8'000'000;
  attn.end_ns = attn.start_ns + 2'000'000;
  attn.api_start_ns = start_ns + 7'500'000;
  attn.api_end_ns = start_ns + 7'600'000;
  cuda::KernelActivity add = k;
  add.correlation_id = 4;
  add.name = "elementwise_add_kernel";
  add.stream = 8;
  add.start_ns = start_ns + 11'000'000;
  add.end_ns = add.start_ns + 500'000;
  add.api_start_ns = start_ns + 10'500'000;
  add.api_end_ns = start_ns + 10'600'000;
  builder.AddNvtxRange(pid, {"forward", "", start_ns, start_ns + 900'000, pid});
  builder.AddNvtxRange(pid, {"backward", "", start_ns + 7'000'000, start_ns + 10'000'000, pid});
  builder.AddKernel(pid, k);
  builder.AddKernel(pid, attn);
  builder.AddKernel(pid, add);
  builder.AddPcSample(
      pid, {1, "_Z4gemmIfEvPfi", 0x40, "smsp__pcsamp_warps_issue_stalled_long_scoreboard", 12});
  cuda::MemoryActivity copy;
  copy.kind = "HtoD";
  copy.correlation_id = 2;
  copy.bytes = 1 << 20;
  copy.start_ns = start_ns + 6'000'000;
  copy.end_ns = copy.start_ns + 1'000'000;
  copy.context = 1;
  builder.AddMemoryActivity(pid, copy);
  std::vector<profiling::WindowProfile> out = builder.FinishWindow(start_ns, end_ns);
  return out.empty() ? profiling::WindowProfile{} : std::move(out[0]);
}

}  // namespace warpscope::test
