// SPDX-License-Identifier: Apache-2.0
// A fake CUDA application for the injected profiler's end-to-end tests and overhead benchmark.
// It loads the library named by CUDA_INJECTION64_PATH and calls InitializeInjection as the
// driver does, then plays the driver through the fake libcupti's hooks (fake_cupti.h): kernel
// launches from several threads at known launch sites (optionally through a stripped library
// without frame pointers or unwind tables, as libcuda is), graph launches, a module load, memcpy
// and NVTX records, PC samples, activity buffers delivered out of order, optionally launches
// from an embedded Python interpreter (with and without the GIL), a fork, and a timed launch
// storm.
//
// Output (stdout, one fact per line, for the tests):
//   site <function> <start address hex> <size>   address range of each launching function (and
//                                                of the stripped fake driver's FakeDriverLaunch)
//   pid <pid>
//   paused                                       (with --pause-file, before waiting)
//   kernel <correlation id> <start ns>           (with --print-kernels, per kernel of the threads)
//   storm launches=<n> kernels=<k> ns_per_launch=<x> cpu_ns_per_launch=<y> rss_kb=<peak>
//     ns_per_launch: wall time x threads / launches; cpu_ns_per_launch: the process's CPU time
//     (every thread, the profiler's flusher included) / launches
//   child ok | done ok
// Exit status 0 when every step behaved; non-zero with a message on stderr otherwise.
#include <dlfcn.h>
#include <link.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cupti/abi.h"
#include "fakes/cupti/fake_cupti.h"

#ifdef WARPSCOPE_FAKE_APP_PYTHON
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#endif

// The stripped stand-in for libcuda's launch path (fake_cuda_driver.cc).
extern "C" uint32_t FakeDriverLaunch(int domain, uint32_t cbid, const char* symbol, void* context);

// Exported by the fake libcupti like the real one.
extern "C" warpscope::cupti::abi::CUptiResult cuptiGetCubinCrc(
    warpscope::cupti::abi::CUpti_GetCubinCrcParams* params);

namespace {

namespace abi = ::warpscope::cupti::abi;

void* const kContext = reinterpret_cast<void*>(0x1000);
constexpr uint64_t kGemmNs = 5000;
constexpr uint64_t kSoftmaxNs = 1000;
constexpr uint64_t kGraphNodeNs = 2000;
constexpr uint64_t kPythonNs = 3000;

std::atomic<uint64_t> g_clock{1'000'000'000};
uint64_t g_gap_ns = 10;        // --kernel-gap-us: idle GPU time after each kernel
bool g_print_kernels = false;  // --print-kernels

uint64_t GpuNow(uint64_t advance) { return g_clock.fetch_add(advance + g_gap_ns); }

uint64_t NowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void AddKernel(uint32_t corr, const char* name, uint32_t stream, uint64_t start, uint64_t dur) {
  FakeCuptiAddKernel(corr, name, 0, stream, start, start + dur, 0, 0);
  if (g_print_kernels) {
    std::printf("kernel %u %lu\n", corr, static_cast<unsigned long>(start));
  }
}

// --memory: what cuda_profiler_e2e_test checks on the agent's metrics. On device 0: 64 MiB and
// 16 MiB allocated, the 16 MiB released (64 MiB left), 1 MiB of pinned host memory; copies on
// stream 7 of 1 MiB H2D (1000 ns), 256 KiB D2H (500 ns), 2 MiB D2D (200 ns), a 4 MiB P2P copy on
// stream 8 (800 ns) and a 1 MiB memset on stream 7 (100 ns).
void RuntimeMemoryWork() {
  constexpr int kAlloc = 1, kRelease = 2, kDeviceKind = 3, kPinnedKind = 2;
  constexpr uint64_t kMiB = 1u << 20;
  const uint64_t t = GpuNow(0);
  FakeCuptiAddMemory(kAlloc, kDeviceKind, 0, 0x7f0000000000, 64 * kMiB, t);
  FakeCuptiAddMemory(kAlloc, kDeviceKind, 0, 0x7f0010000000, 16 * kMiB, t + 1);
  FakeCuptiAddMemory(kRelease, kDeviceKind, 0, 0x7f0010000000, 16 * kMiB, t + 2);
  FakeCuptiAddMemory(kAlloc, kPinnedKind, 0, 0x7e0000000000, 1 * kMiB, t + 3);
  uint64_t at = GpuNow(1000);
  FakeCuptiAddMemcpyOn(0, 1, 1 * kMiB, at, at + 1000, 0, 7);
  at = GpuNow(500);
  FakeCuptiAddMemcpyOn(0, 2, 256 * 1024, at, at + 500, 0, 7);
  at = GpuNow(200);
  FakeCuptiAddMemcpyOn(0, 8, 2 * kMiB, at, at + 200, 0, 7);
  at = GpuNow(800);
  FakeCuptiAddMemcpyOn(0, 10, 4 * kMiB, at, at + 800, 0, 8);
  at = GpuNow(100);
  FakeCuptiAddMemset(0, 1 * kMiB, at, at + 100, 0, 7);
}

struct Options {
  int threads = 4;
  int launches = 50;
  bool graph = false;
  bool python = false;
  bool python_nogil = false;  // --python-nogil: launches that release the GIL first
  bool fork = false;
  bool pc = false;
  bool markers = false;
  bool memory = false;  // --memory: the allocations, copies and memset of RuntimeMemoryWork
  bool reverse = false;
  bool conflict = false;
  std::string pause_file;  // after the launches: wait for this file, then launch again
  int storm_ms = 0;
  int storm_threads = 1;
  bool storm_records = true;
  int storm_record_every = 64;  // a kernel record for one storm launch in this many
  int storm_launch_work = 0;    // the driver's own CPU work per launch: iterations of a ~1 ns step
  int records_per_buffer = 16;
  bool stripped_driver = false;  // gemm launches go through the stripped fake driver
  bool reused_cubin = false;     // a second module's cubin memory is reused right after its load
};

// The launching functions: each shows up in the native stack of its launches.
extern "C" __attribute__((noinline, visibility("default"))) uint32_t FakeAppLaunchGemm() {
  const uint32_t corr = FakeCuptiLaunch(abi::kDomainRuntimeApi, abi::kCbidCudaLaunchKernel,
                                        "_Z9fake_gemmv", kContext);
  asm volatile("" ::: "memory");
  return corr;
}

// --stripped-driver: FakeAppStrippedCaller -> FakeAppLaunchViaDriver -> FakeDriverLaunch (no
// frame pointer, no unwind table, stripped) -> the fake libcupti's callbacks.
extern "C" __attribute__((noinline, visibility("default"))) uint32_t FakeAppLaunchViaDriver() {
  const uint32_t corr = FakeDriverLaunch(abi::kDomainRuntimeApi, abi::kCbidCudaLaunchKernel,
                                         "_Z9fake_gemmv", kContext);
  asm volatile("" ::: "memory");
  return corr;
}

extern "C" __attribute__((noinline, visibility("default"))) uint32_t FakeAppStrippedCaller() {
  const uint32_t corr = FakeAppLaunchViaDriver();
  asm volatile("" ::: "memory");
  return corr;
}

extern "C" __attribute__((noinline, visibility("default"))) uint32_t FakeAppLaunchSoftmax() {
  const uint32_t corr = FakeCuptiLaunch(abi::kDomainDriverApi, abi::kCbidCuLaunchKernelEx,
                                        "triton_softmax", kContext);
  asm volatile("" ::: "memory");
  return corr;
}

extern "C" __attribute__((noinline, visibility("default"))) uint32_t FakeAppLaunchGraph() {
  const uint32_t corr =
      FakeCuptiLaunch(abi::kDomainDriverApi, abi::kCbidCuGraphLaunch, nullptr, kContext);
  asm volatile("" ::: "memory");
  return corr;
}

extern "C" __attribute__((noinline, visibility("default"))) uint32_t FakeAppLaunchInChild() {
  const uint32_t corr = FakeCuptiLaunch(abi::kDomainRuntimeApi, abi::kCbidCudaLaunchKernel,
                                        "_Z10child_kernv", kContext);
  asm volatile("" ::: "memory");
  return corr;
}

extern "C" __attribute__((noinline, visibility("default"))) uint32_t FakeAppLaunchFromPython(
    const char* name) {
  const uint32_t corr =
      FakeCuptiLaunch(abi::kDomainRuntimeApi, abi::kCbidCudaLaunchKernel, name, kContext);
  asm volatile("" ::: "memory");
  return corr;
}

void PrintSite(const char* name, const void* fn) {
  Dl_info info;
  void* extra = nullptr;
  const auto* sym = dladdr1(fn, &info, &extra, RTLD_DL_SYMENT) != 0
                        ? static_cast<const ElfW(Sym)*>(extra)
                        : nullptr;
  if (sym != nullptr) {
    std::printf("site %s %lx %lu\n", name, reinterpret_cast<unsigned long>(info.dli_saddr),
                static_cast<unsigned long>(sym->st_size));
  } else {
    std::printf("site %s %lx 0\n", name, reinterpret_cast<unsigned long>(fn));
  }
}

bool g_stripped_driver = false;  // --stripped-driver

void LaunchThread(int index, int launches) {
  for (int i = 0; i < launches; ++i) {
    const uint32_t gemm = g_stripped_driver ? FakeAppStrippedCaller() : FakeAppLaunchGemm();
    AddKernel(gemm, "_Z9fake_gemmv", 7 + index, GpuNow(kGemmNs), kGemmNs);
    const uint32_t softmax = FakeAppLaunchSoftmax();
    AddKernel(softmax, "triton_softmax", 7 + index, GpuNow(kSoftmaxNs), kSoftmaxNs);
  }
}

#ifdef WARPSCOPE_FAKE_APP_PYTHON
PyObject* PyLaunch(PyObject*, PyObject* args) {
  const char* name = nullptr;
  if (!PyArg_ParseTuple(args, "s", &name)) {
    return nullptr;
  }
  // Kernel names must outlive the process's records, like CUPTI's.
  static const char* kPyKernel = "_Z9py_kernelv";
  const uint32_t corr = FakeAppLaunchFromPython(kPyKernel);
  const uint64_t t = GpuNow(kPythonNs);
  FakeCuptiAddKernel(corr, kPyKernel, 0, 3, t, t + kPythonNs, 0, 0);
  return PyLong_FromUnsignedLong(corr);
}

// Launches with the GIL released, as PyTorch's op bindings and Triton launchers do before they
// reach cudaLaunchKernel: the library still reads the thread's Python frames. The optional
// argument picks the kernel name (one per call site of the --python-nogil script).
PyObject* PyLaunchNoGil(PyObject*, PyObject* args) {
  static const char* const kNames[][2] = {{"forward", "_Z13nogil_forwardv"},
                                          {"method", "_Z12nogil_methodv"},
                                          {"generator", "_Z15nogil_generatorv"},
                                          {"coroutine", "_Z15nogil_coroutinev"}};
  const char* site = nullptr;
  if (!PyArg_ParseTuple(args, "|s", &site)) {
    return nullptr;
  }
  const char* kernel = "_Z10nogil_kernv";
  for (const auto& n : kNames) {
    if (site != nullptr && std::strcmp(site, n[0]) == 0) {
      kernel = n[1];
    }
  }
  uint32_t corr = 0;
  Py_BEGIN_ALLOW_THREADS corr = FakeAppLaunchFromPython(kernel);
  Py_END_ALLOW_THREADS const uint64_t t = GpuNow(kPythonNs);
  FakeCuptiAddKernel(corr, kernel, 0, 3, t, t + kPythonNs, 0, 0);
  return PyLong_FromUnsignedLong(corr);
}

// Launches from a thread that never ran Python (a C++ worker of an extension), joined with the
// GIL released: no Python frames.
PyObject* PyLaunchOnNewThread(PyObject*, PyObject*) {
  static const char* kNativeKernel = "_Z12native_kernv";
  uint32_t corr = 0;
  Py_BEGIN_ALLOW_THREADS std::thread([&corr] {
    corr = FakeAppLaunchFromPython(kNativeKernel);
  }).join();
  Py_END_ALLOW_THREADS const uint64_t t = GpuNow(kPythonNs);
  FakeCuptiAddKernel(corr, kNativeKernel, 0, 3, t, t + kPythonNs, 0, 0);
  return PyLong_FromUnsignedLong(corr);
}

PyMethodDef kMethods[] = {{"launch", PyLaunch, METH_VARARGS, "launch a fake kernel"},
                          {"launch_nogil", PyLaunchNoGil, METH_VARARGS, "launch without the GIL"},
                          {"launch_on_new_thread", PyLaunchOnNewThread, METH_NOARGS,
                           "launch from a thread that never ran Python"},
                          {nullptr, nullptr, 0, nullptr}};
PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "fakecuda", nullptr, -1, kMethods};
PyObject* InitModule() { return PyModule_Create(&kModule); }

// The --python script: launches with the GIL held, then one without it.
constexpr const char* kTrainScript =
    "import fakecuda\n"
    "def model_forward(n):\n"
    "    for i in range(n):\n"
    "        fakecuda.launch('py_kernel')\n"
    "def train_step():\n"
    "    model_forward(5)\n"
    "train_step()\n"
    "fakecuda.launch_nogil()\n";

// The --python-nogil script: every launch releases the GIL first, from a function, a method, a
// generator and a coroutine run by asyncio, then from a thread that never ran Python. The
// end-to-end test checks these line numbers.
constexpr const char* kNoGilScript =
    "import asyncio\n"                            // 1
    "import fakecuda\n"                           // 2
    "def model_forward(n):\n"                     // 3
    "    for i in range(n):\n"                    // 4
    "        fakecuda.launch_nogil('forward')\n"  // 5
    "def train_step():\n"                         // 6
    "    model_forward(2)\n"                      // 7
    "class Model:\n"                              // 8
    "    def forward(self):\n"                    // 9
    "        fakecuda.launch_nogil('method')\n"   // 10
    "def batches():\n"                            // 11
    "    fakecuda.launch_nogil('generator')\n"    // 12
    "    yield 1\n"                               // 13
    "async def serve():\n"                        // 14
    "    await asyncio.sleep(0)\n"                // 15
    "    fakecuda.launch_nogil('coroutine')\n"    // 16
    "train_step()\n"                              // 17
    "Model().forward()\n"                         // 18
    "for _ in batches():\n"                       // 19
    "    pass\n"                                  // 20
    "asyncio.run(serve())\n"                      // 21
    "fakecuda.launch_on_new_thread()\n";          // 22

bool RunPython(const char* script, const char* file) {
  PyImport_AppendInittab("fakecuda", &InitModule);
  Py_Initialize();
  PyObject* code = Py_CompileString(script, file, Py_file_input);
  PyObject* result = nullptr;
  if (code != nullptr) {
    PyObject* globals = PyDict_New();
    PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
    result = PyEval_EvalCode(code, globals, globals);
    Py_DECREF(globals);
    Py_DECREF(code);
  }
  const bool ok = result != nullptr;
  if (!ok) {
    PyErr_Print();
  }
  Py_XDECREF(result);
  Py_FinalizeEx();
  return ok;
}
#endif

uint64_t PeakRssKb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss);
}

uint64_t ProcessCpuNs() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto ns = [](const timeval& tv) {
    return static_cast<uint64_t>(tv.tv_sec) * 1'000'000'000ull +
           static_cast<uint64_t>(tv.tv_usec) * 1000;
  };
  return ns(ru.ru_utime) + ns(ru.ru_stime);
}

// Kernel records of the storm carry CLOCK_REALTIME timestamps, like CUPTI's.
void Storm(const Options& o) {
  std::atomic<uint64_t> total{0};
  std::atomic<uint64_t> kernels{0};
  const uint64_t every = static_cast<uint64_t>(std::max(o.storm_record_every, 1));
  const uint64_t cpu_start = ProcessCpuNs();
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::milliseconds(o.storm_ms);
  std::vector<std::thread> threads;
  for (int t = 0; t < o.storm_threads; ++t) {
    threads.emplace_back([&, t] {
      uint64_t n = 0;
      uint64_t k = 0;
      while (std::chrono::steady_clock::now() < end) {
        for (int i = 0; i < 256; ++i) {
          // A fixed amount of work, not a timed wait: its CPU cost stays the same when the
          // thread is preempted, so CPU per launch compares across runs.
          uint64_t x = n;
          for (int w = 0; w < o.storm_launch_work; ++w) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            asm volatile("" : "+r"(x));
          }
          const uint32_t corr = FakeAppLaunchGemm();
          if (o.storm_records && (n + static_cast<uint64_t>(i)) % every == 0) {
            const uint64_t ts = NowNs(CLOCK_REALTIME);
            FakeCuptiAddKernel(corr, "_Z9fake_gemmv", 0, 7 + t, ts, ts + kGemmNs, 0, 0);
            ++k;
          }
        }
        n += 256;
      }
      total += n;
      kernels += k;
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  const double cpu = static_cast<double>(ProcessCpuNs() - cpu_start);
  const double launches = static_cast<double>(std::max<uint64_t>(total.load(), 1));
  // FakeAppLaunchGemm is a runtime launch: 4 callbacks (enter/exit + nested driver enter/exit).
  std::printf(
      "storm launches=%lu kernels=%lu ns_per_launch=%.1f cpu_ns_per_launch=%.1f rss_kb=%lu\n",
      static_cast<unsigned long>(total.load()), static_cast<unsigned long>(kernels.load()),
      ns * o.storm_threads / launches, cpu / launches, static_cast<unsigned long>(PeakRssKb()));
}

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](int* out) {
      if (i + 1 >= argc) {
        return false;
      }
      *out = std::atoi(argv[++i]);
      return true;
    };
    if (a == "--threads") {
      if (!next(&o->threads)) return false;
    } else if (a == "--launches") {
      if (!next(&o->launches)) return false;
    } else if (a == "--storm-ms") {
      if (!next(&o->storm_ms)) return false;
    } else if (a == "--storm-threads") {
      if (!next(&o->storm_threads)) return false;
    } else if (a == "--pause-file") {
      if (i + 1 >= argc) return false;
      o->pause_file = argv[++i];
    } else if (a == "--storm-record-every") {
      if (!next(&o->storm_record_every)) return false;
    } else if (a == "--storm-launch-work") {
      if (!next(&o->storm_launch_work)) return false;
    } else if (a == "--records-per-buffer") {
      if (!next(&o->records_per_buffer)) return false;
    } else if (a == "--kernel-gap-us") {
      int us = 0;
      if (!next(&us)) return false;
      g_gap_ns = static_cast<uint64_t>(us) * 1000;
    } else if (a == "--print-kernels") {
      g_print_kernels = true;
    } else if (a == "--no-storm-records") {
      o->storm_records = false;
    } else if (a == "--graph") {
      o->graph = true;
    } else if (a == "--python") {
      o->python = true;
    } else if (a == "--python-nogil") {
      o->python_nogil = true;
    } else if (a == "--fork") {
      o->fork = true;
    } else if (a == "--pc") {
      o->pc = true;
    } else if (a == "--markers") {
      o->markers = true;
    } else if (a == "--memory") {
      o->memory = true;
    } else if (a == "--reverse") {
      o->reverse = true;
    } else if (a == "--stripped-driver") {
      o->stripped_driver = true;
    } else if (a == "--reused-cubin") {
      o->reused_cubin = true;
    } else if (a == "--second-subscriber") {
      o->conflict = true;
    } else {
      std::fprintf(stderr, "fake_cuda_app: unknown argument %s\n", a.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) {
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (o.conflict) {
    FakeCuptiSetSubscribeResult(abi::kErrorMultipleSubscribersNotSupported);
  }
  FakeCuptiSetDelivery(static_cast<size_t>(std::max(o.records_per_buffer, 1)), o.reverse ? 1 : 0);
  const char* inject = std::getenv("CUDA_INJECTION64_PATH");
  if (inject != nullptr && *inject != '\0') {
    void* lib = dlopen(inject, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      std::fprintf(stderr, "fake_cuda_app: dlopen(%s): %s\n", inject, dlerror());
      return 3;
    }
    auto init = reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection"));
    if (init == nullptr || init() != 1) {
      std::fprintf(stderr, "fake_cuda_app: InitializeInjection missing or failed\n");
      return 3;
    }
  }
  std::printf("pid %d\n", static_cast<int>(getpid()));
  PrintSite("FakeAppLaunchGemm", reinterpret_cast<void*>(&FakeAppLaunchGemm));
  PrintSite("FakeAppLaunchSoftmax", reinterpret_cast<void*>(&FakeAppLaunchSoftmax));
  PrintSite("FakeAppLaunchGraph", reinterpret_cast<void*>(&FakeAppLaunchGraph));
  PrintSite("FakeAppLaunchInChild", reinterpret_cast<void*>(&FakeAppLaunchInChild));
  PrintSite("FakeAppLaunchFromPython", reinterpret_cast<void*>(&FakeAppLaunchFromPython));
  PrintSite("FakeAppLaunchViaDriver", reinterpret_cast<void*>(&FakeAppLaunchViaDriver));
  PrintSite("FakeAppStrippedCaller", reinterpret_cast<void*>(&FakeAppStrippedCaller));
  PrintSite("FakeDriverLaunch", reinterpret_cast<void*>(&FakeDriverLaunch));
  g_stripped_driver = o.stripped_driver;

  FakeCuptiContextCreated(kContext);
  static const unsigned char kCubin[] = {0x7f, 'E', 'L', 'F', 2,   1, 1, 0x33, 'f', 'a', 'k', 'e',
                                         'c',  'u', 'b', 'i', 'n', 0, 1, 2,    3,   4,   5,   6};
  FakeCuptiModuleLoaded(kContext, 1, kCubin, sizeof(kCubin));
  if (o.reused_cubin) {
    // A module loaded from a buffer that is then freed and reused (a JIT's output, or the
    // driver's own copy): by the time PC sampling is switched on it holds something else.
    static unsigned char buffer[32] = {0x7f, 'E', 'L', 'F', 2,   1,   1,
                                       0x33, 's', 'e', 'c', 'o', 'n', 'd'};
    FakeCuptiModuleLoaded(kContext, 2, buffer, sizeof(buffer));
    std::memset(buffer, 0xab, sizeof(buffer));
  }

  if (o.storm_ms > 0) {
    Storm(o);
    std::printf("done ok\n");
    return 0;
  }

  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) {
    threads.emplace_back(LaunchThread, t, o.launches);
  }
  for (auto& th : threads) {
    th.join();
  }
  if (o.memory) {
    RuntimeMemoryWork();  // before a pause: the agent sees it while the process lives
  }
  if (!o.pause_file.empty()) {
    std::printf("paused\n");
    for (int i = 0; i < 2000 && access(o.pause_file.c_str(), F_OK) != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (access(o.pause_file.c_str(), F_OK) != 0) {
      std::fprintf(stderr, "fake_cuda_app: %s did not appear\n", o.pause_file.c_str());
      return 8;
    }
    LaunchThread(0, o.launches);
  }
  if (o.graph) {
    static const char* kNodes[] = {"_Z8graph_k1v", "_Z8graph_k2v", "_Z8graph_k3v"};
    for (int launch = 0; launch < 2; ++launch) {
      const uint32_t corr = FakeAppLaunchGraph();
      for (int n = 0; n < 3; ++n) {
        const uint64_t t = GpuNow(kGraphNodeNs);
        FakeCuptiAddKernel(corr, kNodes[n], 0, 9, t, t + kGraphNodeNs, 42, 100 + n);
      }
    }
  }
  if (o.markers) {
    const uint64_t t = GpuNow(100);
    FakeCuptiAddMarker(1, 2, t, "train_step", static_cast<uint32_t>(gettid()));
    FakeCuptiAddMarker(1, 4, t + 50, nullptr, static_cast<uint32_t>(gettid()));
    FakeCuptiAddMemcpy(1, 1, 4096, t, t + 40);
  }
#ifdef WARPSCOPE_FAKE_APP_PYTHON
  if ((o.python && !RunPython(kTrainScript, "fake_train.py")) ||
      (o.python_nogil && !RunPython(kNoGilScript, "fake_nogil.py"))) {
    std::fprintf(stderr, "fake_cuda_app: the Python script failed\n");
    return 4;
  }
#else
  if (o.python || o.python_nogil) {
    std::fprintf(stderr, "fake_cuda_app: built without Python (python3-dev missing)\n");
    return 5;
  }
#endif
  if (o.pc) {
    abi::CUpti_GetCubinCrcParams p{};
    p.size = sizeof(p);
    p.cubin = kCubin;
    p.cubinSize = sizeof(kCubin);
    cuptiGetCubinCrc(&p);
    FakeCuptiAddPcSample(kContext, p.cubinCrc, "_Z9fake_gemmv", 0x40, 7, 100);
    FakeCuptiAddPcSample(kContext, p.cubinCrc, "_Z9fake_gemmv", 0x50, 12, 25);
    // Wait (bounded) until the profiler opened a second window: the first one was collected.
    for (int i = 0; i < 500 && FakeCuptiPcSamplingStarts() < 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (FakeCuptiPcSamplingStarts() < 2) {
      std::fprintf(stderr, "fake_cuda_app: PC sampling windows did not open (%d calls refused)\n",
                   FakeCuptiPcErrors());
      return 6;
    }
    if (FakeCuptiPcErrors() != 0) {
      std::fprintf(stderr,
                   "fake_cuda_app: %d PC-sampling calls were refused (no current context "
                   "or a wrong record layout)\n",
                   FakeCuptiPcErrors());
      return 9;
    }
  }
  if (o.fork) {
    const pid_t child = fork();
    if (child == 0) {
      const uint32_t corr = FakeAppLaunchInChild();
      const uint64_t t = GpuNow(kGemmNs);
      FakeCuptiAddKernel(corr, "_Z10child_kernv", 0, 7, t, t + kGemmNs, 0, 0);
      std::printf("child ok\n");
      std::fflush(stdout);
      std::exit(0);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "fake_cuda_app: the forked child failed (status %d)\n", status);
      return 7;
    }
    // The parent keeps launching after the fork.
    LaunchThread(0, 2);
  }
  std::printf("done ok\n");
  return 0;
}
