// SPDX-License-Identifier: Apache-2.0
// warpscope-demo-workload: one simulated GPU process of `warpscope up --simulate`. It behaves as
// a CUDA application does under the profiler: it loads the library named by
// CUDA_INJECTION64_PATH (libwarpscope_cupti.so) and calls its InitializeInjection, as the CUDA
// driver does, then runs train.py (train_script.cc) in an embedded Python interpreter. The
// script's kernel launches go through the C functions below to the fake libcupti named by
// WARPSCOPE_CUPTI_LIBRARY (the same file the injected library loads), which fires the launch
// callbacks on the calling thread and queues one kernel record per launch on a simulated GPU
// timeline; so the injected library sees real launch stacks (Python frames included) and
// kernel records, and reports them to the agent like any application's. When the demo cubin
// (warpscope-demo-kernels.cubin, next to the fake libcupti) is there, it is loaded as the
// context's module and, while the profiler has a PC-sampling window open, the GPU time of its
// kernels turns into PC samples at its real instruction offsets (pc_sample_mix.h).
//
// A `ddp` workload is one rank of a data-parallel job (ddp_rank.h): its job comes from the
// launcher's variables (RANK, WORLD_SIZE, TORCHELASTIC_RUN_ID, as torch.distributed reads them),
// its steps are NVTX ranges ProfilerStep#N (marker records of the fake libcupti) at the job's
// schedule, and its gradient all-reduces also go to the NCCL profiler plugin named by
// NCCL_PROFILER_PLUGIN, as NCCL reports them.
//
// Usage: warpscope-demo-workload --workload NAME --device N
//            [--slowdown PCT --job-slowdown PCT --job-epoch-ns NS]   (ddp)
//   NAME: sim/nvml/workloads.h. N: the NVML index of the simulated GPU, the device of every
//   kernel record. ddp: this rank's and the job's largest slowdown (percent), and when the
//   job's step 0 begins (CLOCK_REALTIME ns; default: 1 s after start). Runs until SIGTERM or
//   SIGINT; exit status 0 then, 2 for bad arguments or environment, 3 when a library cannot be
//   loaded, 4 when the script fails.
#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "cupti/abi.h"
#include "sim/nvml/workloads.h"
#include "sim/workload/ddp_rank.h"
#include "sim/workload/pc_sample_mix.h"
#include "sim/workload/train_script.h"

namespace {

namespace abi = ::warpscope::cupti::abi;

// The fake libcupti's hooks (test/fakes/cupti/fake_cupti.h), resolved with dlsym.
using LaunchFn = uint32_t (*)(int domain, uint32_t cbid, const char* symbol, void* context);
using AddKernelFn = void (*)(uint32_t corr, const char* name, uint32_t device, uint32_t stream,
                             uint64_t start_ns, uint64_t end_ns, uint32_t graph_id,
                             uint64_t graph_node_id);
using ContextCreatedFn = void (*)(void* context);
using ModuleLoadedFn = void (*)(void* context, uint32_t module_id, const void* cubin, size_t size);
using AddPcSampleFn = void (*)(void* context, uint64_t cubin_crc, const char* function,
                               uint64_t pc_offset, uint32_t stall_reason_index, uint32_t samples);
using PcActiveFn = int (*)(void* context);
using StallIndexFn = uint32_t (*)(const char* name);
using CubinCrcFn = abi::CUptiResult (*)(abi::CUpti_GetCubinCrcParams* params);
using AddMarkerFn = void (*)(uint32_t id, uint32_t flags, uint64_t timestamp_ns, const char* name,
                             uint32_t tid);

LaunchFn g_launch = nullptr;
AddKernelFn g_add_kernel = nullptr;
void* const kContext = reinterpret_cast<void*>(0x1000);

std::atomic<bool> g_stop{false};
std::string g_workload;
uint32_t g_device = 0;

uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The simulated GPU: kernels of one stream run back to back, never before their launch.
// `g_gpu_free_ns` is when the last queued kernel ends (CLOCK_REALTIME, like CUPTI's records).
std::mutex g_gpu_mu;
uint64_t g_gpu_free_ns = 0;

uint64_t QueueKernel(uint64_t duration_ns) {
  std::lock_guard lock(g_gpu_mu);
  const uint64_t start = std::max(g_gpu_free_ns, RealtimeNs());
  g_gpu_free_ns = start + duration_ns;
  return start;
}

// A `ddp` rank (ddp_rank.h): the job's model of its GPU, the step schedule, the NCCL plugin.
// Touched only by the script's thread (the plugin driver has its own proxy thread).
struct DdpRank {
  warpscope::sim::workload::DdpClock clock{0, 0};
  warpscope::sim::workload::DdpSchedule schedule;
  std::unique_ptr<warpscope::sim::workload::NcclPluginDriver> nccl;
  AddMarkerFn add_marker = nullptr;
  double time_scale = 1;    // the script's kernel times are multiplied by this
  bool dry = false;         // a dry run times the step, launches nothing
  bool started = false;     // a step has begun
  uint64_t step = 0;        // the current (or next) step
  uint64_t nccl_seq = 0;    // all-reduces on the communicator so far
};
DdpRank* g_ddp = nullptr;  // null unless --workload ddp

// Kernel names must stay valid for the life of the process (CUPTI shares them the same way).
const char* Intern(const char* name) {
  static std::mutex mu;
  static std::set<std::string>* names = new std::set<std::string>();
  std::lock_guard lock(mu);
  return names->emplace(name).first->c_str();
}

// PC samples of the demo cubin's kernels. A kernel's GPU time accrues while a sampling window
// is open; the sampler thread turns it into samples every tick (one per kNsPerSample, spread
// over the kernel's sites) and queues them with the fake libcupti, which hands them to the
// injected library's next cuptiPCSamplingGetData.
constexpr uint64_t kNsPerSample = 1000;
constexpr auto kSamplerTick = std::chrono::milliseconds(50);

struct SampledKernel {
  const char* name = nullptr;  // interned: launches compare pointers
  std::vector<warpscope::sim::workload::PcSite> sites;
  std::atomic<uint64_t> pending_ns{0};
};

std::vector<std::unique_ptr<SampledKernel>> g_sampled;
std::atomic<bool> g_window_open{false};
uint64_t g_cubin_crc = 0;
AddPcSampleFn g_add_pc_sample = nullptr;
PcActiveFn g_pc_active = nullptr;

void AccruePcTime(const char* kernel, uint64_t duration_ns) {
  if (!g_window_open.load(std::memory_order_relaxed)) return;
  for (const auto& k : g_sampled) {
    if (k->name == kernel) {
      k->pending_ns.fetch_add(duration_ns, std::memory_order_relaxed);
      return;
    }
  }
}

void SamplerLoop() {
  while (!g_stop.load()) {
    std::this_thread::sleep_for(kSamplerTick);  // a sampling period, not a synchronisation
    const bool open = g_pc_active(kContext) != 0;
    g_window_open.store(open);
    for (const auto& k : g_sampled) {
      const uint64_t ns = k->pending_ns.exchange(0);
      if (!open || ns < kNsPerSample) continue;
      const std::vector<uint64_t> counts =
          warpscope::sim::workload::SplitSamples(ns / kNsPerSample, k->sites);
      for (size_t i = 0; i < counts.size(); ++i) {
        if (counts[i] == 0) continue;
        g_add_pc_sample(kContext, g_cubin_crc, k->name, k->sites[i].offset,
                        k->sites[i].reason_index,
                        static_cast<uint32_t>(std::min<uint64_t>(counts[i], UINT32_MAX)));
      }
    }
  }
}

// Loads the demo cubin next to the fake libcupti as the context's module and prepares the
// sites of the workload's kernels that it holds. Returns why PC samples are off, or "".
std::string LoadDemoCubin(void* cupti, const std::string& cupti_path) {
  auto module_loaded = reinterpret_cast<ModuleLoadedFn>(dlsym(cupti, "FakeCuptiModuleLoaded"));
  auto stall_index = reinterpret_cast<StallIndexFn>(dlsym(cupti, "FakeCuptiStallReasonIndex"));
  auto crc = reinterpret_cast<CubinCrcFn>(dlsym(cupti, "cuptiGetCubinCrc"));
  g_add_pc_sample = reinterpret_cast<AddPcSampleFn>(dlsym(cupti, "FakeCuptiAddPcSample"));
  g_pc_active = reinterpret_cast<PcActiveFn>(dlsym(cupti, "FakeCuptiPcSamplingActive"));
  if (module_loaded == nullptr || stall_index == nullptr || crc == nullptr ||
      g_add_pc_sample == nullptr || g_pc_active == nullptr) {
    return "the CUPTI simulator has no PC-sampling hooks";
  }
  const std::string path =
      cupti_path.substr(0, cupti_path.rfind('/') + 1) + "warpscope-demo-kernels.cubin";
  std::ifstream in(path, std::ios::binary);
  // Kept for the life of the process: CUPTI's module callbacks lend the cubin, they do not copy.
  static std::string* cubin = new std::string(std::istreambuf_iterator<char>(in), {});
  if (cubin->empty()) {
    return "no " + path + " (the build makes it with the CUDA toolkit's ptxas)";
  }
  auto functions = warpscope::sim::workload::CubinFunctions(*cubin);
  if (!functions) return path + ": " + functions.error().message();
  abi::CUpti_GetCubinCrcParams params{};
  params.size = sizeof(params);
  params.cubinSize = cubin->size();
  params.cubin = cubin->data();
  if (crc(&params) != abi::kSuccess) return "cuptiGetCubinCrc failed on " + path;
  g_cubin_crc = params.cubinCrc;
  const auto mix = warpscope::sim::workload::StallMixOf(g_workload);
  for (const auto& fn : *functions) {
    auto k = std::make_unique<SampledKernel>();
    k->name = Intern(fn.name.c_str());
    k->sites = warpscope::sim::workload::PcSitesOf(
        fn, mix, [&](std::string_view r) { return stall_index(std::string(r).c_str()); });
    if (!k->sites.empty()) g_sampled.push_back(std::move(k));
  }
  module_loaded(kContext, 1, cubin->data(), cubin->size());
  return g_sampled.empty() ? path + " has no function to sample" : "";
}

}  // namespace

// The launching functions: native frames between the Python caller and the launch API, named
// as the extension functions of a framework would be. Exported, with frame pointers, so the
// injected library's unwinder and symbolizer see them.
extern "C" __attribute__((noinline, visibility("default"))) uint32_t SimLaunchKernel(
    const char* kernel, uint32_t stream, uint64_t duration_ns) {
  warpscope::sim::workload::Interval run;
  if (g_ddp != nullptr) {
    run = g_ddp->clock.Compute(static_cast<uint64_t>(static_cast<double>(duration_ns) *
                                                     g_ddp->time_scale));
    if (g_ddp->dry) return 0;
  } else {
    run.start_ns = QueueKernel(duration_ns);
    run.end_ns = run.start_ns + duration_ns;
  }
  const uint32_t corr = g_launch(abi::kDomainRuntimeApi, abi::kCbidCudaLaunchKernel, kernel, kContext);
  g_add_kernel(corr, kernel, g_device, stream, run.start_ns, run.end_ns, 0, 0);
  AccruePcTime(kernel, run.end_ns - run.start_ns);
  asm volatile("" ::: "memory");
  return corr;
}

// NCCL launches its collectives on a stream of its own.
constexpr uint32_t kNcclStream = 13;
constexpr int kNcclChannels = 4;

extern "C" __attribute__((noinline, visibility("default"))) uint32_t SimNcclAllReduce(
    const char* kernel, uint64_t duration_ns, uint64_t count) {
  if (g_ddp == nullptr) {
    const uint32_t corr = SimLaunchKernel(kernel, kNcclStream, duration_ns);
    asm volatile("" ::: "memory");
    return corr;
  }
  // A rank of the job: the kernel ends when the slowest rank has joined (ddp_rank.h).
  const warpscope::sim::workload::Interval run = g_ddp->clock.AllReduce(duration_ns);
  if (g_ddp->dry) return 0;
  const uint32_t corr =
      g_launch(abi::kDomainRuntimeApi, abi::kCbidCudaLaunchKernel, kernel, kContext);
  g_add_kernel(corr, kernel, g_device, kNcclStream, run.start_ns, run.end_ns, 0, 0);
  if (g_ddp->nccl != nullptr) g_ddp->nccl->AllReduce(g_ddp->nccl_seq, count, run, kNcclChannels);
  ++g_ddp->nccl_seq;
  asm volatile("" ::: "memory");
  return corr;
}

// CPU work of a data loader: an inverse DCT-like loop over `pixels` values.
extern "C" __attribute__((noinline, visibility("default"))) uint64_t SimDecodeImage(
    uint64_t pixels) {
  uint64_t acc = 0;
  for (uint64_t i = 0; i < pixels; ++i) {
    acc = acc * 6364136223846793005ull + (i ^ (acc >> 29));
    asm volatile("" : "+r"(acc));
  }
  return acc & 0xFF;
}

namespace {

PyObject* PyLaunch(PyObject*, PyObject* args) {
  const char* name = nullptr;
  unsigned long us = 0;
  if (!PyArg_ParseTuple(args, "sk", &name, &us)) return nullptr;
  return PyLong_FromUnsignedLong(SimLaunchKernel(Intern(name), 7, us * 1000));
}

PyObject* PyAllReduce(PyObject*, PyObject* args) {
  const char* name = nullptr;
  unsigned long us = 0;
  unsigned long long count = 0;
  if (!PyArg_ParseTuple(args, "sk|K", &name, &us, &count)) return nullptr;
  return PyLong_FromUnsignedLong(SimNcclAllReduce(Intern(name), us * 1000, count));
}

PyObject* PyDecodeImage(PyObject*, PyObject* args) {
  unsigned long long pixels = 0;
  if (!PyArg_ParseTuple(args, "K", &pixels)) return nullptr;
  return PyLong_FromUnsignedLongLong(SimDecodeImage(pixels));
}

// Waits, with the GIL released, until the simulated GPU has run every queued kernel (as
// torch.cuda.synchronize); a step of the script never runs ahead of its GPU.
PyObject* PySynchronize(PyObject*, PyObject*) {
  uint64_t until = 0;
  {
    std::lock_guard lock(g_gpu_mu);
    until = g_gpu_free_ns;
  }
  Py_BEGIN_ALLOW_THREADS;
  const uint64_t now = RealtimeNs();
  if (until > now) {
    const uint64_t wait = std::min<uint64_t>(until - now, 1'000'000'000ull);
    timespec ts{static_cast<time_t>(wait / 1'000'000'000ull),
                static_cast<long>(wait % 1'000'000'000ull)};
    nanosleep(&ts, nullptr);
  }
  Py_END_ALLOW_THREADS;
  Py_RETURN_NONE;
}

// Sleeps, with the GIL released, until CLOCK_REALTIME `until_ns` or a stop signal.
void SleepUntil(uint64_t until_ns) {
  Py_BEGIN_ALLOW_THREADS;
  for (uint64_t now = RealtimeNs(); now < until_ns && !g_stop.load(); now = RealtimeNs()) {
    const uint64_t wait = std::min<uint64_t>(until_ns - now, 100'000'000ull);
    timespec ts{static_cast<time_t>(wait / 1'000'000'000ull),
                static_cast<long>(wait % 1'000'000'000ull)};
    nanosleep(&ts, nullptr);
  }
  Py_END_ALLOW_THREADS;
}

PyObject* NotDdp() {
  PyErr_SetString(PyExc_RuntimeError, "only the ddp workload runs in steps of a job");
  return nullptr;
}

// ddp_dry_run(True) ... ddp_dry_run(False): the step run in between launches nothing and sets
// the job's step period (every rank times the same step with the same slowdowns).
PyObject* PyDdpDryRun(PyObject*, PyObject* args) {
  int on = 0;
  if (!PyArg_ParseTuple(args, "p", &on)) return nullptr;
  if (g_ddp == nullptr) return NotDdp();
  g_ddp->dry = on != 0;
  if (on) {
    g_ddp->clock.BeginStep(0);
  } else {
    g_ddp->schedule.period_ns = std::max<uint64_t>(g_ddp->clock.JobEnd(), 1'000'000);
  }
  Py_RETURN_NONE;
}

// Waits for the job's next step and begins it: the step's NVTX range ProfilerStep#N opens at its
// scheduled start. A rank that fell behind (a busy machine) skips to the step ahead of it, as a
// late rank's steps are missing; the other ranks' go on. Returns N, or None once stopping.
PyObject* PyDdpStepBegin(PyObject*, PyObject*) {
  if (g_ddp == nullptr) return NotDdp();
  DdpRank& d = *g_ddp;
  const uint64_t now = RealtimeNs();
  if (!d.started || d.schedule.StartOf(d.step) + d.schedule.period_ns / 4 < now) {
    d.step = d.schedule.NextStepAt(now);
  }
  const uint64_t start = d.schedule.StartOf(d.step);
  SleepUntil(start);
  if (g_stop.load()) Py_RETURN_NONE;
  d.started = true;
  d.clock.BeginStep(start);
  const std::string name = "ProfilerStep#" + std::to_string(d.step);
  d.add_marker(static_cast<uint32_t>(d.step + 1), 2, start, Intern(name.c_str()),
               static_cast<uint32_t>(syscall(SYS_gettid)));
  return PyLong_FromUnsignedLongLong(d.step);
}

// Ends the step: waits for the job's step to end on the GPU (every rank's), then closes its range.
PyObject* PyDdpStepEnd(PyObject*, PyObject*) {
  if (g_ddp == nullptr) return NotDdp();
  DdpRank& d = *g_ddp;
  const uint64_t end = d.schedule.StartOf(d.step + 1);
  SleepUntil(end);
  d.add_marker(static_cast<uint32_t>(d.step + 1), 4, end, nullptr,
               static_cast<uint32_t>(syscall(SYS_gettid)));
  ++d.step;
  Py_RETURN_NONE;
}

// The compute stream waits for the all-reduces (DDP before the optimizer step).
PyObject* PyWaitAllReduces(PyObject*, PyObject*) {
  if (g_ddp == nullptr) return NotDdp();
  g_ddp->clock.WaitAllReduces();
  Py_RETURN_NONE;
}

PyObject* PySetTimeScale(PyObject*, PyObject* args) {
  double scale = 1;
  if (!PyArg_ParseTuple(args, "d", &scale)) return nullptr;
  if (g_ddp == nullptr) return NotDdp();
  g_ddp->time_scale = scale;
  Py_RETURN_NONE;
}

PyObject* PyRunning(PyObject*, PyObject*) { return PyBool_FromLong(g_stop.load() ? 0 : 1); }

PyObject* PyWorkload(PyObject*, PyObject*) { return PyUnicode_FromString(g_workload.c_str()); }

PyMethodDef kMethods[] = {
    {"launch", PyLaunch, METH_VARARGS, "launch(kernel, microseconds): one kernel launch"},
    {"all_reduce", PyAllReduce, METH_VARARGS,
     "all_reduce(kernel, microseconds[, count]): NCCL launch of count bf16 elements"},
    {"ddp_dry_run", PyDdpDryRun, METH_VARARGS, "ddp_dry_run(on): time a step, launch nothing"},
    {"ddp_step_begin", PyDdpStepBegin, METH_NOARGS, "wait for the job's next step; its number"},
    {"ddp_step_end", PyDdpStepEnd, METH_NOARGS, "wait for the end of the job's step"},
    {"wait_all_reduces", PyWaitAllReduces, METH_NOARGS, "compute waits for the all-reduces"},
    {"set_time_scale", PySetTimeScale, METH_VARARGS, "multiply the kernels' times (ddp)"},
    {"decode_image", PyDecodeImage, METH_VARARGS, "decode_image(pixels): CPU work"},
    {"synchronize", PySynchronize, METH_NOARGS, "wait for the simulated GPU"},
    {"running", PyRunning, METH_NOARGS, "False once SIGTERM or SIGINT arrived"},
    {"workload", PyWorkload, METH_NOARGS, "the --workload name"},
    {nullptr, nullptr, 0, nullptr}};
PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "simcuda", nullptr, -1, kMethods};
PyObject* InitModule() { return PyModule_Create(&kModule); }

void OnStopSignal(int) { g_stop.store(true); }

int Usage(const char* why) {
  std::fprintf(stderr,
               "warpscope-demo-workload: %s\n"
               "usage: warpscope-demo-workload --workload NAME --device N  (NAME: %s)\n"
               "         [--slowdown PCT --job-slowdown PCT --job-epoch-ns NS]  (ddp)\n",
               why, warpscope::sim::KnownWorkloadList().c_str());
  return 2;
}

bool ParsePercent(const char* text, double* out) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= 0 && v <= 400)) return false;
  *out = v;
  return true;
}

struct DdpArgs {
  double slowdown = 0;
  double job_slowdown = 0;
  uint64_t epoch_ns = 0;
};

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// The rank's side of the job: its clock and schedule, and the NCCL plugin when
// NCCL_PROFILER_PLUGIN names one (NCCL runs without a plugin it cannot load, and so does this).
int StartDdpRank(void* cupti, const DdpArgs& args) {
  static DdpRank rank;
  rank.clock = warpscope::sim::workload::DdpClock(args.slowdown, args.job_slowdown);
  rank.schedule.epoch_ns = args.epoch_ns != 0 ? args.epoch_ns : RealtimeNs() + 1'000'000'000ull;
  rank.add_marker = reinterpret_cast<AddMarkerFn>(dlsym(cupti, "FakeCuptiAddMarker"));
  if (rank.add_marker == nullptr) {
    std::fprintf(stderr,
                 "warpscope-demo-workload: the CUPTI simulator has no FakeCuptiAddMarker\n");
    return 3;
  }
  const int world = EnvInt("WORLD_SIZE", 1);
  const int r = EnvInt("RANK", 0);
  const char* run_id = std::getenv("TORCHELASTIC_RUN_ID");
  const char* plugin = std::getenv("NCCL_PROFILER_PLUGIN");
  if (plugin == nullptr || *plugin == '\0') {
    std::fprintf(stderr, "warpscope-demo-workload: NCCL_PROFILER_PLUGIN is not set; the "
                 "all-reduces reach no NCCL profiler\n");
  } else {
    auto nccl = warpscope::sim::workload::NcclPluginDriver::Create(
        plugin, warpscope::sim::workload::CommIdOf(run_id != nullptr ? run_id : "none"), world, r);
    if (nccl) {
      rank.nccl = std::move(*nccl);
    } else {
      std::fprintf(stderr, "warpscope-demo-workload: %s\n", nccl.error().message().c_str());
    }
  }
  std::fprintf(stderr, "warpscope-demo-workload: ddp rank %d of %d, %g %% slower (the job's "
               "slowest: %g %%)\n", r, world, args.slowdown, args.job_slowdown);
  g_ddp = &rank;
  return 0;
}

void* Load(const char* env, int flags) {
  const char* path = std::getenv(env);
  if (path == nullptr || *path == '\0') {
    std::fprintf(stderr, "warpscope-demo-workload: %s is not set; `warpscope up --simulate` "
                 "sets it\n", env);
    return nullptr;
  }
  void* lib = dlopen(path, flags);
  if (lib == nullptr) {
    std::fprintf(stderr, "warpscope-demo-workload: %s=%s: %s\n", env, path, dlerror());
  }
  return lib;
}

}  // namespace

int main(int argc, char** argv) {
  bool have_device = false;
  DdpArgs ddp;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--workload" && i + 1 < argc) {
      g_workload = argv[++i];
    } else if ((a == "--slowdown" || a == "--job-slowdown") && i + 1 < argc) {
      if (!ParsePercent(argv[++i], a == "--slowdown" ? &ddp.slowdown : &ddp.job_slowdown)) {
        return Usage((a + " must be a percentage 0..400").c_str());
      }
    } else if (a == "--job-epoch-ns" && i + 1 < argc) {
      char* end = nullptr;
      ddp.epoch_ns = std::strtoull(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0') return Usage("--job-epoch-ns must be a number");
    } else if (a == "--device" && i + 1 < argc) {
      char* end = nullptr;
      const unsigned long d = std::strtoul(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0' || d > 1023) return Usage("--device must be 0..1023");
      g_device = static_cast<uint32_t>(d);
      have_device = true;
    } else {
      return Usage(("unknown argument '" + a + "'").c_str());
    }
  }
  if (!warpscope::sim::IsKnownWorkload(g_workload)) {
    return Usage(("unknown workload '" + g_workload + "'").c_str());
  }
  if (!have_device) return Usage("--device is missing");

  struct sigaction sa{};
  sa.sa_handler = OnStopSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  // The fake libcupti first, global, so that the injected library's dlopen of the same path
  // finds this copy and both talk to one fake.
  void* cupti = Load("WARPSCOPE_CUPTI_LIBRARY", RTLD_NOW | RTLD_GLOBAL);
  if (cupti == nullptr) return 3;
  g_launch = reinterpret_cast<LaunchFn>(dlsym(cupti, "FakeCuptiLaunch"));
  g_add_kernel = reinterpret_cast<AddKernelFn>(dlsym(cupti, "FakeCuptiAddKernel"));
  auto context_created = reinterpret_cast<ContextCreatedFn>(dlsym(cupti, "FakeCuptiContextCreated"));
  if (g_launch == nullptr || g_add_kernel == nullptr || context_created == nullptr) {
    std::fprintf(stderr, "warpscope-demo-workload: WARPSCOPE_CUPTI_LIBRARY is not the simulated "
                 "libcupti (no FakeCuptiLaunch); point it at lib/libwarpscope_fake_cupti.so\n");
    return 3;
  }
  void* inject = Load("CUDA_INJECTION64_PATH", RTLD_NOW | RTLD_LOCAL);
  if (inject == nullptr) return 3;
  auto init = reinterpret_cast<int (*)()>(dlsym(inject, "InitializeInjection"));
  if (init == nullptr || init() != 1) {
    std::fprintf(stderr, "warpscope-demo-workload: InitializeInjection missing or failed\n");
    return 3;
  }
  context_created(kContext);
  if (g_workload == warpscope::sim::kDdpWorkload) {
    if (int rc = StartDdpRank(cupti, ddp); rc != 0) return rc;
  }
  const std::string no_pc = LoadDemoCubin(cupti, std::getenv("WARPSCOPE_CUPTI_LIBRARY"));
  if (!no_pc.empty()) std::fprintf(stderr, "warpscope-demo-workload: no PC samples: %s\n", no_pc.c_str());
  std::thread sampler;
  if (no_pc.empty()) sampler = std::thread(SamplerLoop);

  PyImport_AppendInittab("simcuda", &InitModule);
  Py_Initialize();
  PyObject* code = Py_CompileString(warpscope::sim::workload::kTrainScript,
                                    warpscope::sim::workload::kTrainScriptFile, Py_file_input);
  PyObject* result = nullptr;
  if (code != nullptr) {
    PyObject* globals = PyDict_New();
    PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
    PyDict_SetItemString(globals, "__name__", PyUnicode_FromString("__main__"));
    result = PyEval_EvalCode(code, globals, globals);
    Py_DECREF(globals);
    Py_DECREF(code);
  }
  const bool ok = result != nullptr;
  if (!ok) PyErr_Print();
  Py_XDECREF(result);
  Py_FinalizeEx();
  g_stop.store(true);
  if (sampler.joinable()) sampler.join();
  if (g_ddp != nullptr) g_ddp->nccl.reset();  // reports the last channels, finalizes
  return ok ? 0 : 4;
}
