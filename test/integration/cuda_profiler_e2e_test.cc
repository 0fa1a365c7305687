// SPDX-License-Identifier: Apache-2.0
// End to end: fake_cuda_app (test/fakes/cupti) loads libwarpscope_cupti.so through
// CUDA_INJECTION64_PATH over the fake libcupti and reports to the agent's ProfileListener on a
// socket in a temporary directory; the window's pprof is decoded with the generated protobuf and
// checked frame by frame; a launch storm's profile is sent to an in-process server and read back
// from its merged-profile API.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/sources/cuda_profiler/cuda_profiler_source.h"
#include "agent/sources/cuda_profiler/profile_listener.h"
#include "base/testing/peer.h"
#include "base/testing/temp_dir.h"
#include "base/time.h"
#include "exporters/profiles/profile_sink.h"
#include "exporters/profiles/profile_uploader.h"
#include "integration/child_process.h"
#include "model/testing/collecting_sink.h"
#include "perftools/profiles.pb.h"
#include "profiling/elf_symbols.h"
#include "profiling/testing/pprof_rows.h"
#include "server/api/api_server.h"
#include "server/storage/sqlite_storage.h"

namespace warpscope::agent::cuda_profiler {
namespace {

namespace w = ::warpscope::cupti::wire;
using namespace std::chrono_literals;

const std::string kApp = std::string(WARPSCOPE_BINARY_DIR) + "/bin/fake_cuda_app";
const std::string kInject = std::string(WARPSCOPE_BINARY_DIR) + "/lib/libwarpscope_cupti.so";
const std::string kFakeCupti =
    std::string(WARPSCOPE_BINARY_DIR) + "/lib/libwarpscope_fake_cupti.so";

// The fake application's GPU durations (fake_cuda_app.cc).
constexpr uint64_t kGemmNs = 5000;
constexpr uint64_t kSoftmaxNs = 1000;
constexpr uint64_t kGraphNodeNs = 2000;
constexpr uint64_t kPythonNs = 3000;
// Its kernels, as CUPTI reports them, shown demangled.
const std::string kGemm = profiling::Demangle("_Z9fake_gemmv");
const std::string kSoftmax = "triton_softmax";
const std::string kPyKernel = profiling::Demangle("_Z9py_kernelv");
const std::string kNoGilKernel = profiling::Demangle("_Z10nogil_kernv");

using Frame = profiling::PprofFrame;
using Row = profiling::PprofRow;

struct Decoded : profiling::PprofRows {
  std::string Stacks() const {
    std::string out;
    for (const auto& r : rows) {
      out += r.stack + " " + std::to_string(r.values[0]) + "\n";
    }
    return out;
  }
  // Rows whose leaf (last frame) is `kernel`.
  std::vector<const Row*> Leaf(const std::string& kernel) const {
    std::vector<const Row*> out;
    for (const auto& r : rows) {
      if (!r.frames.empty() && r.frames.back().name == kernel) {
        out.push_back(&r);
      }
    }
    return out;
  }
  int64_t Sum(const std::string& kernel, int value) const {
    int64_t total = 0;
    for (const Row* r : Leaf(kernel)) {
      total += r->values[static_cast<size_t>(value)];
    }
    return total;
  }
};

Decoded Decode(const std::string& gz) {
  Decoded d;
  static_cast<profiling::PprofRows&>(d) = profiling::ReadPprofGz(gz);
  return d;
}

// What the listener has seen of one process, for waiting on the application's progress.
class Progress {
 public:
  void Observe(int32_t pid, const w::Message& m) {
    std::lock_guard<std::mutex> lock(mu_);
    if (const auto* agg = std::get_if<w::KernelAggregate>(&m)) {
      for (const auto& e : agg->entries) {
        kernels_[pid] += e.count;
      }
    }
    if (const auto* counters = std::get_if<w::Counters>(&m)) {
      for (const auto& c : counters->counters) {
        if (c.id == w::CounterId::kControlsApplied) {
          controls_[pid] = c.value;
        }
      }
    }
    cv_.notify_all();
  }
  bool WaitControlsApplied(int32_t pid, uint64_t n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return controls_[pid] >= n; });
  }
  bool WaitKernels(int32_t pid, uint64_t n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    const bool ok = cv_.wait_for(lock, timeout, [&] { return kernels_[pid] >= n; });
    if (!ok) {
      std::string seen;
      for (const auto& [p, k] : kernels_) {
        seen += " pid " + std::to_string(p) + ": " + std::to_string(k);
      }
      ADD_FAILURE() << "waiting for " << n << " kernels of pid " << pid << "; seen" << seen;
    }
    return ok;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int32_t, uint64_t> kernels_;
  std::map<int32_t, uint64_t> controls_;
};

// Every row: the executable at the root; sampled rows carry the launching function above the
// launch API above the kernel, with resolved frames in between.
void CheckRows(const Decoded& d, int32_t pid, int threads) {
  int sampled_gemm = 0;
  int sampled_softmax = 0;
  for (const Row& r : d.rows) {
    ASSERT_GE(r.frames.size(), 2u);
    EXPECT_EQ(r.frames[0].name, "fake_cuda_app");
    EXPECT_EQ(r.labels.at("pid"), pid);
    const std::string& kernel = r.frames.back().name;
    if (r.IndexOf("[unsampled launch site]") == 1) {
      EXPECT_EQ(r.frames.size(), 3u) << r.stack;
      continue;
    }
    const int api = static_cast<int>(r.frames.size()) - 2;
    const std::string& api_name = r.frames[static_cast<size_t>(api)].name;
    int site = -1;
    if (kernel == kGemm) {
      ++sampled_gemm;
      EXPECT_EQ(api_name, "cudaLaunchKernel") << r.stack;
      site = r.IndexOf("FakeAppLaunchGemm");
      const int caller = r.IndexContaining("LaunchThread(int, int)");
      EXPECT_GT(caller, 0) << r.stack;
      EXPECT_LT(caller, site) << r.stack;
      EXPECT_TRUE(r.labels.at("stream") >= 7 && r.labels.at("stream") < 7 + threads);
    } else if (kernel == kSoftmax) {
      ++sampled_softmax;
      EXPECT_EQ(api_name, "cuLaunchKernelEx") << r.stack;
      site = r.IndexOf("FakeAppLaunchSoftmax");
    } else {
      // Graph nodes: all under the graph launch's stack and its one API frame.
      EXPECT_EQ(api_name, "cuGraphLaunch") << r.stack;
      site = r.IndexOf("FakeAppLaunchGraph");
      EXPECT_EQ(r.labels.at("stream"), 9);
    }
    EXPECT_GT(site, 0) << r.stack;
    EXPECT_LT(site, api) << r.stack;
    for (int i = std::max(site, 0); i < api; ++i) {
      EXPECT_EQ(r.frames[static_cast<size_t>(i)].name.find("[unknown]"), std::string::npos)
          << r.stack;
    }
  }
  EXPECT_GT(sampled_gemm, 0);
  EXPECT_GT(sampled_softmax, 0);
}

class CudaProfilerE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& path : {kApp, kInject, kFakeCupti}) {
      ASSERT_EQ(access(path.c_str(), R_OK), 0) << path
                                               << " is missing; build fake_cuda_app, "
                                                  "warpscope_cupti, warpscope_fake_cupti";
    }
    ProfileListener::Options o;
    socket_path_ = dir_.path() + "/agent/cupti.sock";
    o.socket_path = socket_path_;
    o.disassemble = false;
    o.observer = [this](int32_t pid, const w::Message& m) { progress_.Observe(pid, m); };
    auto l = ProfileListener::Start(o);
    ASSERT_TRUE(l.has_value()) << l.error().message();
    listener_ = std::move(*l);
  }

  std::unique_ptr<test::ChildProcess> StartApp(std::vector<std::string> args) {
    args.insert(args.begin(), kApp);
    auto child = test::ChildProcess::Start(
        args, dir_.path(),
        {"CUDA_INJECTION64_PATH=" + kInject, "WARPSCOPE_CUPTI_LIBRARY=" + kFakeCupti,
         "WARPSCOPE_AGENT_SOCKET=" + socket_path_, "WARPSCOPE_CUPTI_FLUSH_MS=50",
         // The fake libcupti fills 16 records per buffer and requests every buffer of a flush
         // before completing any: give it enough for a flush period's kernels.
         "WARPSCOPE_CUPTI_ACTIVITY_BUFFERS=64"});
    EXPECT_TRUE(child.has_value()) << (child ? "" : child.error().message());
    return child ? std::move(*child) : nullptr;
  }

  profiling::WindowProfile Window(int32_t pid) {
    auto future = listener_->FinishWindow(1, 2);
    EXPECT_EQ(future.wait_for(30s), std::future_status::ready);
    for (auto& p : future.get()) {
      if (p.pid == pid) {
        return p;
      }
    }
    ADD_FAILURE() << "no profile for pid " << pid;
    return {};
  }

  test::TempDir dir_;
  std::string socket_path_;
  Progress progress_;
  std::unique_ptr<ProfileListener> listener_;
};

TEST_F(CudaProfilerE2eTest, KernelsSitUnderTheNativeFramesThatLaunchedThemWithExactGpuTime) {
  constexpr int kThreads = 3;
  constexpr int kLaunches = 40;
  const std::string go = dir_.path() + "/go";
  auto app = StartApp({"--threads", std::to_string(kThreads), "--launches",
                       std::to_string(kLaunches), "--graph", "--pause-file", go});
  ASSERT_NE(app, nullptr);
  const int32_t pid = app->pid();
  ASSERT_TRUE(progress_.WaitKernels(pid, 2 * kThreads * kLaunches, 30s)) << app->Stderr();

  const profiling::WindowProfile window = Window(pid);
  EXPECT_EQ(window.executable, kApp);
  const Decoded d = Decode(window.pprof_gz);
  SCOPED_TRACE(d.Stacks());
  ASSERT_EQ(d.profile.sample_type_size(), 3);
  EXPECT_EQ(d.Str(d.profile.sample_type(0).type()), "gpu_time");

  // GPU time and launches per kernel are exactly what the application ran.
  EXPECT_EQ(d.Sum(kGemm, 0), int64_t{kThreads * kLaunches} * kGemmNs);
  EXPECT_EQ(d.Sum(kGemm, 1), kThreads * kLaunches);
  EXPECT_EQ(d.Sum(kSoftmax, 0), int64_t{kThreads * kLaunches} * kSoftmaxNs);
  EXPECT_EQ(d.Sum(kSoftmax, 1), kThreads * kLaunches);
  EXPECT_EQ(window.gpu_time_ns - window.memory_gpu_time_ns,
            uint64_t{kThreads * kLaunches} * (kGemmNs + kSoftmaxNs));

  CheckRows(d, pid, kThreads);

  // The application resumes: one thread's launches again, then two graph launches of three
  // kernel nodes each; it exits. Its last window comes, then it is forgotten.
  { std::ofstream(go) << "go"; }
  const int status = app->Wait(30s);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << app->Stderr();
  ASSERT_TRUE(listener_->WaitUntil([](const auto& s) { return s.closed >= 1; }, 30s));
  const profiling::WindowProfile last = Window(pid);
  const Decoded d2 = Decode(last.pprof_gz);
  SCOPED_TRACE(d2.Stacks());
  EXPECT_EQ(d2.Sum(kGemm, 0), int64_t{kLaunches} * kGemmNs);
  EXPECT_EQ(d2.Sum(kSoftmax, 0), int64_t{kLaunches} * kSoftmaxNs);
  for (const std::string& node :
       {profiling::Demangle("_Z8graph_k1v"), profiling::Demangle("_Z8graph_k2v"),
        profiling::Demangle("_Z8graph_k3v")}) {
    EXPECT_EQ(d2.Sum(node, 0), 2 * static_cast<int64_t>(kGraphNodeNs)) << node;
    EXPECT_EQ(d2.Sum(node, 1), 2) << node;
    EXPECT_FALSE(d2.Leaf(node).empty());
  }
  CheckRows(d2, pid, 1);
  EXPECT_EQ(listener_->stats().processes_forgotten, 1u);
  EXPECT_EQ(listener_->stats().closed_corrupt, 0u);
}

TEST_F(CudaProfilerE2eTest, PythonFramesTakeTheEvalLoopsPlaceInTheNativeStack) {
  // One launch first, then a pause: the process connects while it runs (the agent reads its
  // maps then), and the Python part runs after the go file appears.
  const std::string go = dir_.path() + "/go";
  auto app = StartApp({"--threads", "1", "--launches", "1", "--pause-file", go, "--python"});
  ASSERT_NE(app, nullptr);
  const int32_t pid = app->pid();
  ASSERT_TRUE(progress_.WaitKernels(pid, 2, 30s)) << app->Stderr();
  { std::ofstream(go) << "go"; }
  const int status = app->Wait(30s);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 5) {
    WARPSCOPE_REQUIRE_PEER(false, "python3-dev (fake_cuda_app was built without Python)",
                           "run scripts/setup.sh --test and rebuild");
  }
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << app->Stderr();
  ASSERT_TRUE(progress_.WaitKernels(pid, 2 + 2 + 6, 30s));
  ASSERT_TRUE(listener_->WaitUntil([](const auto& s) { return s.closed >= 1; }, 30s));
  const profiling::WindowProfile window = Window(pid);
  const Decoded d = Decode(window.pprof_gz);
  SCOPED_TRACE(d.Stacks());
  EXPECT_EQ(d.Sum(kPyKernel, 0), 5 * static_cast<int64_t>(kPythonNs));
  EXPECT_EQ(d.Sum(kNoGilKernel, 0), static_cast<int64_t>(kPythonNs));

  const auto py = d.Leaf(kPyKernel);
  ASSERT_FALSE(py.empty());
  for (const Row* r : py) {
    // fake_cuda_app -> _start ... main -> RunPython -> PyEval_EvalCode -> <module> -> train_step
    // -> model_forward -> libpython's call of a C function -> PyLaunch ... -> kernel: the Python
    // frames stand where the eval loop ran them, as in the CPU profiler's stacks.
    const int m = r->IndexOf("<module>");
    ASSERT_GT(m, r->IndexOf("PyEval_EvalCode")) << r->stack;
    ASSERT_GT(r->IndexOf("PyEval_EvalCode"), 0) << "the interpreter's entry above: " << r->stack;
    ASSERT_GE(r->frames.size(), static_cast<size_t>(m) + 6) << r->stack;
    EXPECT_EQ(r->frames[m].file, "fake_train.py");
    EXPECT_EQ(r->frames[m + 1].name, "train_step") << r->stack;
    EXPECT_EQ(r->frames[m + 1].line, 6);
    EXPECT_EQ(r->frames[m + 2].name, "model_forward") << r->stack;
    EXPECT_EQ(r->frames[m + 2].file, "fake_train.py");
    EXPECT_EQ(r->frames[m + 2].line, 4);
    EXPECT_EQ(r->IndexOf("_PyEval_EvalFrameDefault"), -1) << "the eval loop is replaced: " << r->stack;
    const int site = r->IndexOf("FakeAppLaunchFromPython");
    EXPECT_GT(site, m + 2) << "native frames below the Python frames: " << r->stack;
    EXPECT_EQ(r->frames[r->frames.size() - 2].name, "cudaLaunchKernel");
  }
  // Launched with the GIL released: native frames only.
  for (const Row* r : d.Leaf(kNoGilKernel)) {
    EXPECT_EQ(r->IndexOf("model_forward"), -1) << r->stack;
    EXPECT_GT(r->IndexOf("FakeAppLaunchFromPython"), 0) << r->stack;
  }
}

TEST_F(CudaProfilerE2eTest, CopiesEnterTheProfileAndCopiesAndNvtxRangesTheTrace) {
  // --markers: after its launches the application records an NVTX range "train_step" (50 ns)
  // and a 4 KiB host-to-device copy (40 ns), then exits (the library flushes at exit).
  auto app = StartApp({"--threads", "1", "--launches", "2", "--markers"});
  ASSERT_NE(app, nullptr);
  const int32_t pid = app->pid();
  const int status = app->Wait(30s);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << app->Stderr();
  ASSERT_TRUE(listener_->WaitUntil([](const auto& s) { return s.closed >= 1; }, 30s));
  const profiling::WindowProfile window = Window(pid);
  const Decoded d = Decode(window.pprof_gz);
  SCOPED_TRACE(d.Stacks());
  EXPECT_EQ(window.memory_ops, 1u);
  EXPECT_EQ(window.memory_gpu_time_ns, 40u);
  const auto copies = d.Leaf("[memcpy HtoD]");
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0]->stack, "fake_cuda_app;[memcpy HtoD]");
  EXPECT_EQ(copies[0]->values, (std::vector<int64_t>{40, 0, 0}));

  nlohmann::json trace = nlohmann::json::parse(window.trace_json, nullptr, false);
  ASSERT_FALSE(trace.is_discarded()) << window.trace_json;
  int memcpys = 0;
  int ranges = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "memcpy") {
      ++memcpys;
      EXPECT_EQ(e["name"], "memcpy HtoD 4 KiB");
      EXPECT_EQ(e["args"]["bytes"], 4096);
    }
    if (e["ph"] == "X" && e["cat"] == "nvtx") {
      ++ranges;
      EXPECT_EQ(e["name"], "train_step");
      EXPECT_EQ(e["pid"], pid);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 0.05);
    }
  }
  EXPECT_EQ(memcpys, 1);
  EXPECT_EQ(ranges, 1);
}

// The Source end to end: profiles land in a directory (--cuda-profile-dir), and a control sent
// to every process that connects (--cuda-profiler-rate) is applied by the library.
TEST_F(CudaProfilerE2eTest, SourceWritesProfilesToTheDirectoryAndRetunesProcesses) {
  listener_.reset();  // the source brings its own listener on the same path
  CudaProfilerSource::Options options;
  options.listener.socket_path = socket_path_;
  options.listener.disassemble = false;
  options.listener.controls_on_connect = {w::Control{w::ControlOp::kSetRate, 500}};
  options.listener.observer = [this](int32_t pid, const w::Message& m) {
    progress_.Observe(pid, m);
  };
  options.window = 1s;
  const std::string out_dir = dir_.path() + "/profiles";
  auto sink = exporters::DirectoryProfileSink::Create(out_dir, "testhost");
  ASSERT_TRUE(sink.has_value());
  auto uploader = std::make_unique<exporters::ProfileUploader>(
      std::move(*sink), exporters::ProfileUploader::Options{});
  exporters::ProfileUploader& directory = *uploader;
  CudaProfilerSource::Exporters exporters;
  exporters.push_back(std::move(uploader));
  CudaProfilerSource source(options, std::move(exporters), base::RealClock::Get(), nullptr);
  ASSERT_TRUE(source.Start().ok());

  const std::string go = dir_.path() + "/go";
  auto app = StartApp({"--threads", "2", "--launches", "10", "--pause-file", go});
  ASSERT_NE(app, nullptr);
  const int32_t pid = app->pid();
  ASSERT_TRUE(progress_.WaitKernels(pid, 40, 30s)) << app->Stderr();
  ASSERT_TRUE(progress_.WaitControlsApplied(pid, 1, 30s)) << app->Stderr();

  model::CollectingSink metrics;
  const base::TimePoint t0 = base::FromUnixNanos(1'800'000'000'000'000'000);
  source.Poll(t0, metrics);
  source.Poll(t0 + 1s, metrics);
  ASSERT_TRUE(directory.WaitUntil([](const auto& s) { return s.written >= 1; }, 30s));
  const std::string stem =
      out_dir + "/gpu-testhost-" + std::to_string(pid) + "-1800000000000-" + "1800000001000";
  for (const char* ext : {".pb.gz", ".folded", ".perfetto-trace"}) {
    EXPECT_EQ(access((stem + ext).c_str(), R_OK), 0) << stem << ext;
  }
  std::ifstream in(stem + ".pb.gz", std::ios::binary);
  const std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Decoded d = Decode(gz);
  EXPECT_EQ(d.Sum(kGemm, 0), 20 * static_cast<int64_t>(kGemmNs)) << d.Stacks();
  EXPECT_EQ(d.Sum(kSoftmax, 0), 20 * static_cast<int64_t>(kSoftmaxNs)) << d.Stacks();

  { std::ofstream(go) << "go"; }
  const int status = app->Wait(30s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << app->Stderr();
  source.Stop();
}

// PC samples with SASS: the process ships a cubin in chunks, a stand-in nvdisasm (a script that
// prints a checked-in listing) disassembles it on the listener's worker, and the PC-sample
// stacks show the instruction and the stall reason.
TEST_F(CudaProfilerE2eTest, PcSamplesShowTheSassOfTheShippedCubin) {
  listener_.reset();
  const std::string tools = dir_.path() + "/tools";
  std::filesystem::create_directories(tools);
  const std::string nvdisasm = tools + "/nvdisasm";
  {
    std::ofstream script(nvdisasm);
    script << "#!/bin/sh\n[ \"$1\" = -c ] && [ -f \"$2\" ] || exit 3\ncat " << WARPSCOPE_SOURCE_DIR
           << "/test/data/cupti/nvdisasm_sm90.txt\n";
  }
  ASSERT_EQ(chmod(nvdisasm.c_str(), 0755), 0);
  ProfileListener::Options o;
  o.socket_path = socket_path_;
  o.use_peer_pid = false;
  o.sass.search_path = tools;
  o.sass.temp_dir = dir_.path();
  auto l = ProfileListener::Start(o);
  ASSERT_TRUE(l.has_value()) << l.error().message();

  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path_.data(), socket_path_.size());
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const std::string cubin(1000, 'c');
  std::string bytes;
  w::Hello hello;
  hello.pid = 4242;
  hello.exe = "/usr/bin/python3";
  w::Encode(hello, &bytes);
  w::Encode(w::CubinChunk{0xc0b1, cubin.size(), 600, cubin.substr(600)}, &bytes);
  w::Encode(w::CubinChunk{0xc0b1, cubin.size(), 0, cubin.substr(0, 600)}, &bytes);
  w::Encode(w::KernelName{1, "_Z4gemmIfEvPfi"}, &bytes);
  w::KernelAggregate agg;
  agg.entries.push_back(w::KernelAggregateEntry{1, 0, 7, 10, 50000, 5000, 5000});
  w::Encode(agg, &bytes);
  w::Encode(w::StallReasons{0, {{7, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"}}}, &bytes);
  w::PcSamples samples;
  samples.samples = {{0xc0b1, "_Z4gemmIfEvPfi", 0x40, 7, 100}};
  w::Encode(samples, &bytes);
  ASSERT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  ASSERT_TRUE((*l)->WaitUntil([](const auto& s) { return s.sass_done + s.sass_failed >= 1; }, 30s));
  EXPECT_EQ((*l)->stats().sass_done, 1u);
  auto future = (*l)->FinishWindow(1, 2);
  ASSERT_EQ(future.wait_for(30s), std::future_status::ready);
  auto profiles = future.get();
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].pc_samples, 100u);
  EXPECT_NE(profiles[0].folded_pc_samples.find("[sass] 0x0040 FFMA R5, R2, R3, R4"),
            std::string::npos)
      << profiles[0].folded_pc_samples;
  EXPECT_NE(profiles[0].folded_pc_samples.find("[stall] long_scoreboard"), std::string::npos)
      << profiles[0].folded_pc_samples;
  close(fd);
}

// --cuda-pc-sampling: the agent turns PC sampling on in a process that did not ask for it; its
// stall reasons reach the PC-sample profile (offsets only: the module was loaded before sampling
// was on, so no cubin was captured).
TEST_F(CudaProfilerE2eTest, AgentTurnsPcSamplingOnForAConnectingProcess) {
  listener_.reset();
  ProfileListener::Options o;
  o.socket_path = socket_path_;
  o.disassemble = false;
  o.controls_on_connect = {w::Control{w::ControlOp::kEnablePcSampling, 0}};
  auto l = ProfileListener::Start(o);
  ASSERT_TRUE(l.has_value()) << l.error().message();
  auto app = test::ChildProcess::Start(
      {kApp, "--threads", "1", "--launches", "2", "--pc"}, dir_.path(),
      {"CUDA_INJECTION64_PATH=" + kInject, "WARPSCOPE_CUPTI_LIBRARY=" + kFakeCupti,
       "WARPSCOPE_AGENT_SOCKET=" + socket_path_, "WARPSCOPE_CUPTI_FLUSH_MS=50",
       "WARPSCOPE_CUPTI_PC_WINDOW_MS=20", "WARPSCOPE_CUPTI_PC_INTERVAL_MS=40"});
  ASSERT_TRUE(app.has_value());
  const int status = (*app)->Wait(30s);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << (*app)->Stderr();
  ASSERT_TRUE((*l)->WaitUntil([](const auto& s) { return s.closed >= 1; }, 30s));
  auto future = (*l)->FinishWindow(1, 2);
  ASSERT_EQ(future.wait_for(30s), std::future_status::ready);
  auto profiles = future.get();
  ASSERT_EQ(profiles.size(), 1u);
  const profiling::WindowProfile& p = profiles[0];
  EXPECT_EQ(p.pc_samples, 125u);
  EXPECT_NE(p.folded_pc_samples.find(kGemm), std::string::npos) << p.folded_pc_samples;
  EXPECT_NE(p.folded_pc_samples.find("[sass] 0x0040;[stall] long_scoreboard 100"),
            std::string::npos)
      << p.folded_pc_samples;
  const Decoded d = Decode(p.pprof_gz);
  int64_t pc_total = 0;
  for (const Row& r : d.rows) {
    pc_total += r.values[2];
  }
  EXPECT_EQ(pc_total, 125);
}

// A launch storm at the default rate limit (200 admitted launches per thread per second): almost
// every launch goes unsampled, yet its GPU time is attributed to the launch stacks, as the
// server's merged profile shows.
TEST_F(CudaProfilerE2eTest, AStormsGpuTimeIsAttributedToLaunchStacksAtTheServer) {
  // Storm threads launch gemm on streams 7 and 8; one launch in 16 makes a kernel record.
  auto app = StartApp({"--storm-ms", "1000", "--storm-threads", "2", "--storm-record-every", "16"});
  ASSERT_NE(app, nullptr);
  const int32_t pid = app->pid();
  const int status = app->Wait(60s);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << app->Stderr();
  ASSERT_TRUE(listener_->WaitUntil([](const auto& s) { return s.closed >= 1; }, 30s));
  const int64_t end = base::ToUnixNanos(base::RealClock::Get().Now());
  const int64_t start = end - 60'000'000'000;
  auto future = listener_->FinishWindow(start, end);
  ASSERT_EQ(future.wait_for(30s), std::future_status::ready);
  std::vector<profiling::WindowProfile> windows = future.get();
  ASSERT_EQ(windows.size(), 1u);
  const profiling::WindowProfile& window = windows[0];
  const Decoded d = Decode(window.pprof_gz);
  SCOPED_TRACE(d.Stacks());
  ASSERT_GT(window.kernels, 500u) << "a storm (sanitizer builds launch fewer)";
  EXPECT_EQ(window.gpu_time_ns, window.kernels * kGemmNs) << "exact totals";
  int64_t measured = 0;
  int64_t estimated = 0;
  for (const Row* r : d.Leaf(kGemm)) {
    auto label = r->str_labels.find("attribution");
    (label == r->str_labels.end() ? measured : estimated) += r->values[1];
    if (label != r->str_labels.end()) {
      EXPECT_EQ(label->second, "estimated") << r->stack;
      EXPECT_GT(r->IndexOf("FakeAppLaunchGemm"), 0) << r->stack;
    }
  }
  EXPECT_GT(measured, 0);
  EXPECT_GT(estimated, 10 * measured) << "the rate limiter admitted few launches";

  // To a server, and back from its merged profile (a call tree keyed by function names).
  base::TempDir server_dir;
  server::SqliteStorageOptions so;
  so.data_dir = server_dir.path();
  auto storage = server::SqliteStorage::Open(so);
  ASSERT_TRUE(storage) << storage.error().message();
  base::FakeClock clock(base::FromUnixNanos(end));
  server::ApiServer::Options server_options;
  server_options.listen_address = "127.0.0.1:0";
  server_options.serve_ui = false;
  server::ApiServer api(server_options, **storage, clock);
  auto port = api.Start();
  ASSERT_TRUE(port) << port.error().message();
  auto sink = exporters::ServerProfileSink::Create(
      {.server_url = "http://127.0.0.1:" + std::to_string(*port), .host = "storm-host"});
  ASSERT_TRUE(sink) << sink.error().message();
  base::Status written = (*sink)->Write(window);
  ASSERT_TRUE(written.ok()) << written.message();
  httplib::Client client("127.0.0.1", *port);
  auto res = client.Get("/api/v1/profiles/merged?kind=gpu&pid=" + std::to_string(pid) +
                        "&start=" + std::to_string(start / 1'000'000'000) +
                        "&end=" + std::to_string(end / 1'000'000'000 + 1));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  nlohmann::json tree = nlohmann::json::parse(res->body, nullptr, false);
  ASSERT_FALSE(tree.is_discarded()) << res->body;
  ASSERT_EQ(tree["root"]["children"].size(), 1u) << res->body;
  const nlohmann::json& process = tree["root"]["children"][0];
  EXPECT_EQ(process["name"], "fake_cuda_app");
  const double total = process["total"][0].get<double>();
  double unsampled = 0;
  for (const auto& child : process["children"]) {
    if (child["name"] == "[unsampled launch site]") {
      unsampled += child["total"][0].get<double>();
    }
  }
  EXPECT_EQ(total, static_cast<double>(window.gpu_time_ns));
  EXPECT_GE((total - unsampled) / total, 0.95)
      << unsampled << " of " << total << " ns under [unsampled launch site]";
}

}  // namespace
}  // namespace warpscope::agent::cuda_profiler
