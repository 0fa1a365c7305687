// SPDX-License-Identifier: Apache-2.0
// Cost of reading the launching thread's Python frames (docs/design/python-frames.md "Costs",
// docs/benchmarks.md "Python frames at launch"), on an embedded CPython (the system's, found by
// CMake like fake_cuda_app's). Each benchmark runs a script that recurses to the wanted depth
// and calls a C function that releases the GIL, as a launching extension does, and runs the
// measured loop there: the cache is warm after the first iteration, like a repeated launch site.
//   BM_CapturePython/<depth>  stack_capture's CapturePython: the real launch path (≤ 48 frames
//                             kept, copied into the capture's arena)
//   BM_WalkFrames/<depth>     the frame reader alone, every frame (up to 256)
// Run: <build>/bin/python_capture_bench --benchmark_min_time=0.5
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "cupti_inject/stack_capture.h"
#include "pyframes/frame_reader.h"
#include "pyframes/in_process.h"

namespace {

using warpscope::cupti_inject::CapturePython;
using warpscope::cupti_inject::PythonStack;
namespace pyframes = warpscope::pyframes;

benchmark::State* g_state = nullptr;
int g_which = 0;

class CountSink final : public pyframes::FrameSink {
 public:
  bool OnFrame(std::string_view function, std::string_view, uint32_t line) override {
    bytes += function.size() + line;
    return true;
  }
  size_t bytes = 0;
};

PyObject* RunLoop(PyObject*, PyObject*) {
  benchmark::State& state = *g_state;
  size_t frames = 0;
  Py_BEGIN_ALLOW_THREADS if (g_which == 0) {
    static PythonStack stack;
    for (auto _ : state) {
      CapturePython(&stack);
      benchmark::DoNotOptimize(stack.count);
    }
    frames = stack.count;
  }
  else {
    pyframes::InProcessPython py;
    if (pyframes::ProbeInProcess(&py) == pyframes::ProbeResult::kReady) {
      const auto tstate = reinterpret_cast<uint64_t>(py.this_thread_state());
      pyframes::LocalMemoryReader mem;
      static pyframes::CodeCache cache;
      for (auto _ : state) {
        CountSink sink;
        frames = pyframes::FrameWalker::Walk(py.interp, mem, tstate, cache, 256, sink).frames;
        benchmark::DoNotOptimize(sink.bytes);
      }
    }
  }
  Py_END_ALLOW_THREADS state.counters["python_frames"] = static_cast<double>(frames);
  Py_RETURN_NONE;
}

PyMethodDef kMethods[] = {{"run", RunLoop, METH_NOARGS, "the measured loop"},
                          {nullptr, nullptr, 0, nullptr}};
PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "pybench", nullptr, -1, kMethods};
PyObject* InitModule() { return PyModule_Create(&kModule); }

// Python frames at the measured loop: depth - 1 calls of `step` and the module's own frame.
void Run(benchmark::State& state, int which) {
  g_state = &state;
  g_which = which;
  const long depth = static_cast<long>(state.range(0));
  const std::string script =
      "import pybench\n"
      "class Layer:\n"
      "    def step(self, n):\n"
      "        if n > 1:\n"
      "            return self.step(n - 1)\n"
      "        return pybench.run()\n"
      "Layer().step(" +
      std::to_string(depth - 1) + ")\n";
  if (PyRun_SimpleString(script.c_str()) != 0) {
    state.SkipWithError("the script failed");
  }
}

void BM_CapturePython(benchmark::State& state) { Run(state, 0); }
void BM_WalkFrames(benchmark::State& state) { Run(state, 1); }
BENCHMARK(BM_CapturePython)->Arg(10)->Arg(50)->Arg(200);
BENCHMARK(BM_WalkFrames)->Arg(10)->Arg(50)->Arg(200);

}  // namespace

int main(int argc, char** argv) {
  PyImport_AppendInittab("pybench", &InitModule);
  Py_Initialize();
  std::printf("CPython %s\n", Py_GetVersion());
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  Py_FinalizeEx();
  return 0;
}
