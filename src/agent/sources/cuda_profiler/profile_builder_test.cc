// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/profile_builder.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "agent/sources/cuda_profiler/cuda_profiler_metrics.h"
#include "model/process.h"
#include "model/testing/collecting_sink.h"
#include "perftools/profiles.pb.h"
#include "profiling/testing/pprof_rows.h"

// Functions of this executable that play the launching C++ code.
namespace warpscope_builder_test {
__attribute__((noinline)) int LaunchSite(int x) { return x * 7 + 1; }
__attribute__((noinline)) int Outer(int x) { return LaunchSite(x) + 2; }
__attribute__((noinline)) int Main(int x) { return x + 4; }
}  // namespace warpscope_builder_test
// Named like CPython's eval loop, so that the builder splices the Python frames in its place.
extern "C" __attribute__((noinline)) int _PyEval_EvalFrameDefault(int x) {
  return warpscope_builder_test::Outer(x) + 3;
}

namespace warpscope::agent::cuda_profiler {
namespace {

using Row = profiling::PprofRow;

struct Decoded : profiling::PprofRows {
  const Row* Find(const std::string& stack) const {
    for (const Row& r : rows) {
      if (r.stack == stack) {
        return &r;
      }
    }
    return nullptr;
  }
  // The row of `stack` whose "attribution" label is `attribution` ("": none, measured).
  const Row* Find(const std::string& stack, const std::string& attribution) const {
    for (const Row& r : rows) {
      auto label = r.str_labels.find("attribution");
      const std::string value = label == r.str_labels.end() ? "" : label->second;
      if (r.stack == stack && value == attribution) {
        return &r;
      }
    }
    return nullptr;
  }
  std::string Stacks() const {
    std::string out;
    for (const Row& r : rows) {
      out += r.stack + "\n";
    }
    return out;
  }
};

Decoded Decode(const std::string& gz) {
  Decoded d;
  static_cast<profiling::PprofRows&>(d) = profiling::ReadPprofGz(gz);
  return d;
}

constexpr char kGemm[] = "_Z4gemmIfEvPfi";
constexpr char kGemmName[] = "void gemm<float>(float*, int)";
constexpr char kExe[] = "/usr/bin/python3.11";

// Return addresses just past the start of the test's launch functions: the builder looks up
// pc - 1, which lands on the function's first byte.
uint64_t Ret(int (*fn)(int)) { return reinterpret_cast<uint64_t>(fn) + 1; }

InternedStack PyTorchLikeStack(uint64_t hash) {
  InternedStack s;
  s.hash = hash;
  s.native_pcs = {Ret(&warpscope_builder_test::LaunchSite), Ret(&warpscope_builder_test::Outer)};
  s.python_frames = {{"Model.forward", "/srv/app/model.py", 42}, {"main", "/srv/app/train.py", 10}};
  return s;
}

KernelActivity Kernel(uint64_t correlation, std::optional<uint64_t> stack, int64_t start,
                      int64_t duration, uint32_t stream = 7) {
  KernelActivity k;
  k.correlation_id = correlation;
  k.stack_hash = stack;
  k.name = kGemm;
  k.device = 0;
  k.stream = stream;
  k.context = 1;
  k.start_ns = start;
  k.end_ns = start + duration;
  k.grid = {128, 1, 1};
  k.block = {256, 1, 1};
  k.launch_api = "cudaLaunchKernel";
  k.thread_id = 4321;
  k.api_start_ns = start - 5000;
  k.api_end_ns = start - 1000;
  return k;
}

class ProfileBuilderTest : public ::testing::Test {
 protected:
  ProfileBuilderTest() : symbolizer_(profiling::Symbolizer::Options{}), builder_(&symbolizer_, {}) {
    builder_.AddProcess({pid_, kExe, 1'000'000'000, 55});
  }

  const int32_t pid_ = getpid();
  const std::string launch_prefix_ =
      "python3.11;main;Model.forward;warpscope_builder_test::Outer(int);"
      "warpscope_builder_test::LaunchSite(int);cudaLaunchKernel;";
  profiling::Symbolizer symbolizer_;
  ProfileBuilder builder_;
};

TEST_F(ProfileBuilderTest, SampledKernelSitsUnderItsPythonAndNativeLaunchStack) {
  builder_.AddStack(pid_, PyTorchLikeStack(0xabc));
  builder_.AddKernel(pid_, Kernel(1, 0xabc, 2'000'000'000, 1500));
  auto profiles = builder_.FinishWindow(1'990'000'000, 2'010'000'000);
  ASSERT_EQ(profiles.size(), 1u);
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.rows.size(), 1u) << d.Stacks();
  EXPECT_EQ(d.rows[0].stack, launch_prefix_ + kGemmName);
  EXPECT_EQ(d.rows[0].values, (std::vector<int64_t>{1500, 1, 0}));
  EXPECT_EQ(d.rows[0].labels,
            (std::map<std::string, int64_t>{{"device", 0}, {"stream", 7}, {"pid", pid_}}));
}

TEST_F(ProfileBuilderTest, PythonFramesTakeThePlaceOfTheEvalLoopInTheNativeStack) {
  InternedStack s = PyTorchLikeStack(0xabd);
  s.native_pcs.push_back(Ret(&_PyEval_EvalFrameDefault));
  s.native_pcs.push_back(Ret(&warpscope_builder_test::Main));
  builder_.AddStack(pid_, s);
  builder_.AddKernel(pid_, Kernel(1, 0xabd, 2'000'000'000, 1500));
  auto profiles = builder_.FinishWindow(1'990'000'000, 2'010'000'000);
  ASSERT_EQ(profiles.size(), 1u);
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.rows.size(), 1u) << d.Stacks();
  EXPECT_EQ(d.rows[0].stack,
            std::string("python3.11;warpscope_builder_test::Main(int);main;Model.forward;"
                        "warpscope_builder_test::Outer(int);warpscope_builder_test::LaunchSite(int);"
                        "cudaLaunchKernel;") +
                kGemmName);
}

TEST_F(ProfileBuilderTest, DeclaresSampleTypesWindowAndFramesMetadata) {
  builder_.AddStack(pid_, PyTorchLikeStack(0xabc));
  builder_.AddKernel(pid_, Kernel(1, 0xabc, 2'000'000'000, 1500));
  auto profiles = builder_.FinishWindow(1'990'000'000, 2'010'000'000);
  ASSERT_EQ(profiles.size(), 1u);
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.profile.sample_type_size(), 3);
  EXPECT_EQ(d.Str(d.profile.sample_type(0).type()), "gpu_time");
  EXPECT_EQ(d.Str(d.profile.sample_type(0).unit()), "nanoseconds");
  EXPECT_EQ(d.Str(d.profile.sample_type(1).type()), "launches");
  EXPECT_EQ(d.Str(d.profile.sample_type(2).type()), "pc_samples");
  EXPECT_EQ(d.Str(d.profile.default_sample_type()), "gpu_time");
  EXPECT_EQ(d.profile.time_nanos(), 1'990'000'000);
  EXPECT_EQ(d.profile.duration_nanos(), 20'000'000);
  EXPECT_EQ(d.profile.string_table(0), "");
  // Python frames keep file and line; kernels keep their mangled name; native frames point at
  // the mapping of the executable with its build id.
  bool saw_python = false;
  bool saw_kernel = false;
  for (const auto& loc : d.profile.location()) {
    const auto& fn = d.profile.function(static_cast<int>(loc.line(0).function_id() - 1));
    ASSERT_EQ(fn.id(), loc.line(0).function_id());
    if (d.Str(fn.name()) == "Model.forward") {
      saw_python = true;
      EXPECT_EQ(d.Str(fn.filename()), "/srv/app/model.py");
      EXPECT_EQ(loc.line(0).line(), 42);
    }
    if (d.Str(fn.name()) == kGemmName) {
      saw_kernel = true;
      EXPECT_EQ(d.Str(fn.system_name()), kGemm);
    }
    if (d.Str(fn.name()) == "warpscope_builder_test::LaunchSite(int)") {
      ASSERT_NE(loc.mapping_id(), 0u);
      const auto& m = d.profile.mapping(static_cast<int>(loc.mapping_id() - 1));
      EXPECT_EQ(d.Str(m.filename()), std::filesystem::canonical("/proc/self/exe").string());
      EXPECT_FALSE(d.Str(m.build_id()).empty());
    }
  }
  EXPECT_TRUE(saw_python);
  EXPECT_TRUE(saw_kernel);
}

TEST_F(ProfileBuilderTest, LaunchesOfOneStackAddUpPerStream) {
  builder_.AddStack(pid_, PyTorchLikeStack(0xabc));
  builder_.AddKernel(pid_, Kernel(1, 0xabc, 2'000'000'000, 1000));
  builder_.AddKernel(pid_, Kernel(2, 0xabc, 2'000'010'000, 3000));
  builder_.AddKernel(pid_, Kernel(3, 0xabc, 2'000'020'000, 500, /*stream=*/9));
  auto profiles = builder_.FinishWindow(0, 3'000'000'000);
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.rows.size(), 2u) << d.Stacks();
  EXPECT_EQ(d.rows[0].values, (std::vector<int64_t>{4000, 2, 0}));
  EXPECT_EQ(d.rows[0].labels.at("stream"), 7);
  EXPECT_EQ(d.rows[1].values, (std::vector<int64_t>{500, 1, 0}));
  EXPECT_EQ(d.rows[1].labels.at("stream"), 9);
  EXPECT_EQ(profiles[0].gpu_time_ns, 4500u);
  EXPECT_EQ(profiles[0].kernels, 3u);
}

TEST_F(ProfileBuilderTest, AggregatesCoveringEveryKernelLeaveTheRestToTheEstimate) {
  builder_.AddStack(pid_, PyTorchLikeStack(0xabc));
  builder_.AddKernel(pid_, Kernel(1, 0xabc, 2'000'000'000, 1000));
  builder_.AddKernel(pid_, Kernel(2, std::nullopt, 2'000'010'000, 2000));
  // The library's aggregates: every gemm on stream 7 (the two above included), and a Triton
  // kernel on another device that was never reported individually.
  builder_.AddKernelAggregate(pid_, {kGemm, 0, 7, 30, 60000});
  builder_.AddKernelAggregate(pid_, {kGemm, 0, 7, 10, 20000});
  builder_.AddKernelAggregate(pid_, {"triton_poi_fused_add_0", 1, 3, 5, 500});
  auto profiles = builder_.FinishWindow(0, 3'000'000'000);
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.rows.size(), 3u) << d.Stacks();
  const Row* sampled = d.Find(launch_prefix_ + kGemmName, "");
  ASSERT_NE(sampled, nullptr) << d.Stacks();
  EXPECT_EQ(sampled->values, (std::vector<int64_t>{1000, 1, 0}));
  // The record without a stack and what only the aggregates counted: at the one sampled site.
  const Row* estimated = d.Find(launch_prefix_ + kGemmName, "estimated");
  ASSERT_NE(estimated, nullptr) << d.Stacks();
  EXPECT_EQ(estimated->values, (std::vector<int64_t>{79000, 39, 0}));
  EXPECT_EQ(estimated->labels,
            (std::map<std::string, int64_t>{{"device", 0}, {"stream", 7}, {"pid", pid_}}));
  const Row* triton = d.Find("python3.11;[unsampled launch site];triton_poi_fused_add_0");
  ASSERT_NE(triton, nullptr);
  EXPECT_EQ(triton->values, (std::vector<int64_t>{500, 5, 0}));
  EXPECT_EQ(triton->labels.at("device"), 1);
  EXPECT_EQ(profiles[0].gpu_time_ns, 80000u + 500u) << "totals equal the aggregates";
  EXPECT_EQ(profiles[0].kernels, 45u);
  EXPECT_EQ(builder_.stats().aggregate_shortfalls, 0u);
}

TEST_F(ProfileBuilderTest, ActivitiesBeyondTheirAggregateAreCountedNotNegative) {
  builder_.AddStack(pid_, PyTorchLikeStack(0xabc));
  builder_.AddKernel(pid_, Kernel(1, 0xabc, 2'000'000'000, 5000));
  builder_.AddKernelAggregate(pid_, {kGemm, 0, 7, 1, 1000});
  auto profiles = builder_.FinishWindow(0, 3'000'000'000);
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.rows.size(), 1u) << d.Stacks();
  EXPECT_EQ(d.rows[0].values, (std::vector<int64_t>{5000, 1, 0}));
  EXPECT_EQ(builder_.stats().aggregate_shortfalls, 1u);
}

TEST_F(ProfileBuilderTest, DisjointAggregatesAddToTheActivities) {
  ProfileBuilder::Options options;
  options.aggregate_mode = ProfileBuilder::AggregateMode::kDisjoint;
  ProfileBuilder builder(&symbolizer_, options);
  builder.AddProcess({pid_, kExe, 0, 0});
  builder.AddStack(pid_, PyTorchLikeStack(0xabc));
  builder.AddKernel(pid_, Kernel(1, 0xabc, 2'000'000'000, 1000));
  builder.AddKernel(pid_, Kernel(2, std::nullopt, 2'000'010'000, 2000));
  builder.AddKernelAggregate(pid_, {kGemm, 0, 7, 40, 80000});
  auto profiles = builder.FinishWindow(0, 3'000'000'000);
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.rows.size(), 2u) << d.Stacks();
  const Row* estimated = d.Find(launch_prefix_ + kGemmName, "estimated");
  ASSERT_NE(estimated, nullptr) << d.Stacks();
  EXPECT_EQ(estimated->values, (std::vector<int64_t>{82000, 41, 0}));
  EXPECT_EQ(profiles[0].gpu_time_ns, 83000u);
  EXPECT_EQ(profiles[0].kernels, 42u);
}

TEST_F(ProfileBuilderTest, KernelNamingAStackNeverReceivedIsMarked) {
  builder_.AddKernel(pid_, Kernel(1, 0xdead, 2'000'000'000, 1000));
  auto profiles = builder_.FinishWindow(0, 3'000'000'000);
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].stack,
            std::string("python3.11;[stack not received];cudaLaunchKernel;") + kGemmName);
  EXPECT_EQ(builder_.stats().unknown_stack_hashes, 1u);
}

TEST_F(ProfileBuilderTest, PcSamplesSplitOverLaunchSitesByGpuTimeWithSassAndStall) {
  builder_.AddStack(pid_, PyTorchLikeStack(0xabc));
  builder_.AddKernel(pid_, Kernel(1, 0xabc, 2'000'000'000, 3000));
  builder_.AddKernelAggregate(pid_, {kGemm, 0, 7, 2, 4000});  // covers the kernel above
  builder_.AddSass({{profiling::SassKey{0x77, kGemm, 0x40}, "FFMA R5, R2, R3, R4"}});
  builder_.AddPcSample(pid_,
                       {0x77, kGemm, 0x40, "smsp__pcsamp_warps_issue_stalled_long_scoreboard", 10});
  builder_.AddPcSample(pid_, {0x77, kGemm, 0x50, "smsp__pcsamp_warps_issue_stalled_wait", 4});
  auto profiles = builder_.FinishWindow(0, 3'000'000'000);
  Decoded d = Decode(profiles[0].pprof_gz);
  // 3000 ns measured vs 1000 ns estimated at the same site: 10 samples -> 7.5/2.5 -> 8/2
  // (largest remainder, the heavier site on ties); 4 samples -> 3/1. The estimated part's PC
  // samples keep its label.
  const std::string ffma = launch_prefix_ + kGemmName +
                           ";[sass] 0x0040 FFMA R5, R2, R3, R4;[stall] long_scoreboard";
  const Row* sampled_ffma = d.Find(ffma, "");
  ASSERT_NE(sampled_ffma, nullptr) << d.Stacks();
  EXPECT_EQ(sampled_ffma->values, (std::vector<int64_t>{0, 0, 8}));
  EXPECT_EQ(sampled_ffma->labels.at("stream"), 7);
  const Row* estimated_ffma = d.Find(ffma, "estimated");
  ASSERT_NE(estimated_ffma, nullptr) << d.Stacks();
  EXPECT_EQ(estimated_ffma->values[2], 2);
  const Row* wait = d.Find(launch_prefix_ + kGemmName + ";[sass] 0x0050;[stall] wait", "");
  ASSERT_NE(wait, nullptr) << d.Stacks();
  EXPECT_EQ(wait->values[2], 3);
  int64_t pc_total = 0;
  for (const Row& r : d.rows) {
    pc_total += r.values[2];
  }
  EXPECT_EQ(pc_total, 14);
  EXPECT_EQ(profiles[0].pc_samples, 14u);
}

TEST_F(ProfileBuilderTest, PcSampleSplitKeepsTotalsOverManySites) {
  // 7 streams with equal GPU time, 10 samples: 1 each plus 3 left over for the first sites.
  builder_.AddStack(pid_, PyTorchLikeStack(0xabc));
  for (uint32_t stream = 1; stream <= 7; ++stream) {
    builder_.AddKernel(pid_, Kernel(stream, 0xabc, 2'000'000'000 + stream * 10'000, 1000, stream));
  }
  builder_.AddPcSample(pid_, {0x77, kGemm, 0x40, "wait", 10});
  auto profiles = builder_.FinishWindow(0, 3'000'000'000);
  Decoded d = Decode(profiles[0].pprof_gz);
  std::map<int64_t, int64_t> per_stream;
  int64_t total = 0;
  for (const Row& r : d.rows) {
    if (r.values[2] > 0) {
      per_stream[r.labels.at("stream")] += r.values[2];
      total += r.values[2];
    }
  }
  EXPECT_EQ(total, 10);
  EXPECT_EQ(per_stream,
            (std::map<int64_t, int64_t>{{1, 2}, {2, 2}, {3, 2}, {4, 1}, {5, 1}, {6, 1}, {7, 1}}));
}

TEST_F(ProfileBuilderTest, PcSamplesOfAKernelWithoutGpuTimeAreUnattributed) {
  builder_.AddPcSample(pid_, {0x77, "_Z5otherv", 0x10, "selected", 6});
  auto profiles = builder_.FinishWindow(0, 3'000'000'000);
  ASSERT_EQ(profiles.size(), 1u);
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].stack,
            "python3.11;[unattributed PC samples];other();[sass] 0x0010;[stall] selected");
  EXPECT_EQ(d.rows[0].labels, (std::map<std::string, int64_t>{{"pid", pid_}}));
  EXPECT_EQ(builder_.stats().pc_samples_unattributed, 6u);
}

TEST_F(ProfileBuilderTest, DropsTheProfilersOwnInnermostFrames) {
  void* lib = dlopen(SYMBOLIZER_TESTLIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  ProfileBuilder::Options options;
  options.drop_module_prefixes = {"libsymbolizer_testlib"};
  ProfileBuilder builder(&symbolizer_, options);
  builder.AddProcess({pid_, kExe, 0, 0});
  InternedStack s = PyTorchLikeStack(1);
  s.native_pcs.insert(s.native_pcs.begin(),
                      reinterpret_cast<uint64_t>(dlsym(lib, "WarpscopeFixtureExported")) + 1);
  builder.AddStack(pid_, s);
  builder.AddKernel(pid_, Kernel(1, 1, 2'000'000'000, 100));
  auto profiles = builder.FinishWindow(0, 3'000'000'000);
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].stack, launch_prefix_ + kGemmName);
  dlclose(lib);
}

TEST_F(ProfileBuilderTest, WithoutASymbolizerNativeFramesAreAddresses) {
  ProfileBuilder builder(nullptr, {});
  builder.AddProcess({12, "/opt/app/server", 0, 0});
  InternedStack s;
  s.hash = 5;
  s.native_pcs = {0x401235, 0x401001};
  builder.AddStack(12, s);
  KernelActivity k = Kernel(1, 5, 1000, 10);
  k.launch_api = "";
  builder.AddKernel(12, k);
  auto profiles = builder.FinishWindow(0, 2000);
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].stack, std::string("server;[unknown] 0x401000;[unknown] 0x401234;"
                                         "[kernel launch];") +
                                 kGemmName);
}

TEST_F(ProfileBuilderTest, FoldedStacksAreRootFirstWithSuffixes) {
  builder_.AddStack(pid_, PyTorchLikeStack(0xabc));
  builder_.AddKernel(pid_, Kernel(1, 0xabc, 2'000'000'000, 1500));
  builder_.AddKernelAggregate(pid_, {"triton_poi_fused_add_0", 0, 7, 5, 500});
  builder_.AddPcSample(pid_, {0x77, kGemm, 0x40, "smsp__pcsamp_warps_issue_stalled_wait", 3});
  auto profiles = builder_.FinishWindow(0, 3'000'000'000);
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].folded,
            "python3.11;[unsampled launch site];triton_poi_fused_add_0_[k] 500\n"
            "python3.11;main (train.py:10);Model.forward (model.py:42);"
            "warpscope_builder_test::Outer(int);warpscope_builder_test::LaunchSite(int);"
            "cudaLaunchKernel;void gemm<float>(float*, int)_[k] 1500\n");
  EXPECT_EQ(profiles[0].folded_pc_samples,
            "python3.11;main (train.py:10);Model.forward (model.py:42);"
            "warpscope_builder_test::Outer(int);warpscope_builder_test::LaunchSite(int);"
            "cudaLaunchKernel;void gemm<float>(float*, int)_[k];[sass] 0x0040;[stall] wait 3\n");
}

TEST_F(ProfileBuilderTest, TraceHasOneTrackPerStreamAndFlowsFromLaunchSlices) {
  builder_.AddStack(pid_, PyTorchLikeStack(0xabc));
  builder_.AddKernel(pid_, Kernel(11, 0xabc, 2'000'000'000, 1500));
  builder_.AddKernel(pid_, Kernel(12, 0xabc, 2'000'100'000, 2500, /*stream=*/9));
  auto profiles = builder_.FinishWindow(0, 3'000'000'000);
  ASSERT_EQ(profiles.size(), 1u);
  nlohmann::json trace = nlohmann::json::parse(profiles[0].trace_json, nullptr, false);
  ASSERT_FALSE(trace.is_discarded()) << profiles[0].trace_json;
  std::vector<nlohmann::json> kernels, launches, starts, finishes;
  std::map<int64_t, std::string> thread_names;
  for (const auto& e : trace["traceEvents"]) {
    std::string ph = e["ph"];
    if (ph == "X" && e["cat"] == "kernel") kernels.push_back(e);
    if (ph == "X" && e["cat"] == "cuda_api") launches.push_back(e);
    if (ph == "s") starts.push_back(e);
    if (ph == "f") finishes.push_back(e);
    if (ph == "M" && e["name"] == "thread_name") {
      thread_names[e["tid"].get<int64_t>()] = e["args"]["name"];
    }
  }
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0]["name"], kGemmName);
  EXPECT_EQ(kernels[0]["tid"], 7);
  EXPECT_EQ(kernels[1]["tid"], 9);
  EXPECT_EQ(kernels[0]["pid"], kernels[1]["pid"]) << "one GPU process, one track per stream";
  EXPECT_NE(kernels[0]["pid"], pid_);
  EXPECT_DOUBLE_EQ(kernels[0]["ts"].get<double>(), 2000000.0);
  EXPECT_DOUBLE_EQ(kernels[0]["dur"].get<double>(), 1.5);
  EXPECT_EQ(kernels[0]["args"]["grid"], nlohmann::json::array({128, 1, 1}));
  EXPECT_EQ(kernels[0]["args"]["correlation_id"], 11);
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0]["pid"], pid_);
  EXPECT_EQ(launches[0]["tid"], 4321);
  EXPECT_EQ(launches[0]["name"], "cudaLaunchKernel");
  ASSERT_EQ(starts.size(), 2u);
  ASSERT_EQ(finishes.size(), 2u);
  EXPECT_EQ(starts[0]["id"], finishes[0]["id"]);
  EXPECT_NE(starts[0]["id"], starts[1]["id"]);
  EXPECT_EQ(starts[0]["tid"], 4321);
  EXPECT_DOUBLE_EQ(starts[0]["ts"].get<double>(), launches[0]["ts"].get<double>());
  EXPECT_EQ(finishes[0]["bp"], "e");
  EXPECT_EQ(finishes[0]["pid"], kernels[0]["pid"]);
  EXPECT_DOUBLE_EQ(finishes[0]["ts"].get<double>(), kernels[0]["ts"].get<double>());
  EXPECT_EQ(thread_names[7], "stream 7");
  EXPECT_EQ(thread_names[4321], "thread 4321");
}

TEST_F(ProfileBuilderTest, GraphLaunchDrawsOneLaunchSliceForAllItsKernels) {
  builder_.AddStack(pid_, PyTorchLikeStack(0xabc));
  for (int i = 0; i < 3; ++i) {
    KernelActivity k = Kernel(50, 0xabc, 2'000'000'000 + i * 10'000, 1000);
    k.launch_api = "cudaGraphLaunch";
    k.graph_id = 3;
    builder_.AddKernel(pid_, k);
  }
  auto profiles = builder_.FinishWindow(0, 3'000'000'000);
  nlohmann::json trace = nlohmann::json::parse(profiles[0].trace_json);
  int slices = 0;
  int flows = 0;
  for (const auto& e : trace["traceEvents"]) {
    slices += e["ph"] == "X" && e["cat"] == "cuda_api";
    flows += e["ph"] == "f";
  }
  EXPECT_EQ(slices, 1);
  EXPECT_EQ(flows, 3);
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].values, (std::vector<int64_t>{3000, 3, 0}));
}

TEST_F(ProfileBuilderTest, StacksPersistAcrossWindowsAndWindowDataDoesNot) {
  builder_.AddStack(pid_, PyTorchLikeStack(0xabc));
  builder_.AddKernel(pid_, Kernel(1, 0xabc, 2'000'000'000, 1000));
  ASSERT_EQ(builder_.FinishWindow(0, 3'000'000'000).size(), 1u);
  EXPECT_TRUE(builder_.FinishWindow(3'000'000'000, 4'000'000'000).empty());
  builder_.AddKernel(pid_, Kernel(2, 0xabc, 4'500'000'000, 700));
  auto profiles = builder_.FinishWindow(4'000'000'000, 5'000'000'000);
  ASSERT_EQ(profiles.size(), 1u);
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].stack, launch_prefix_ + kGemmName);
  EXPECT_EQ(d.rows[0].values[0], 700);
}

TEST_F(ProfileBuilderTest, StacksBeyondTheCapAreDropped) {
  ProfileBuilder::Options options;
  options.max_stacks_per_process = 1;
  ProfileBuilder builder(nullptr, options);
  builder.AddProcess({12, "/opt/app/server", 0, 0});
  builder.AddStack(12, {1, {0x401001}, {}});
  builder.AddStack(12, {2, {0x402001}, {}});
  builder.AddStack(12, {1, {0x401001}, {}});  // a known hash may still be replaced
  builder.AddKernel(12, Kernel(1, 2, 1000, 10));
  auto profiles = builder.FinishWindow(0, 2000);
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].stack,
            std::string("server;[stack not received];cudaLaunchKernel;") + kGemmName);
}

TEST_F(ProfileBuilderTest, RecordsOfAnUnannouncedProcessAreNamedByPid) {
  ProfileBuilder builder(nullptr, {});
  builder.AddKernelAggregate(77, {kGemm, 0, 0, 1, 10});
  auto profiles = builder.FinishWindow(0, 100);
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].pid, 77);
  Decoded d = Decode(profiles[0].pprof_gz);
  EXPECT_EQ(d.rows[0].stack, std::string("pid 77;[unsampled launch site];") + kGemmName);
}

TEST_F(ProfileBuilderTest, SelfMetricsCarryCountersAndTheOverheadOfTheLastWindow) {
  builder_.UpdateCounters(pid_, {1000, 200, 3, 4, 5'000'000});
  builder_.FinishWindow(0, 1'000'000'000);
  builder_.UpdateCounters(pid_, {2000, 400, 3, 4, 15'000'000, 6});
  builder_.FinishWindow(1'000'000'000, 2'000'000'000);
  model::CollectingSink sink;
  builder_.EmitSelfMetrics(sink);
  model::ProcessInfo info;
  info.pid = pid_;
  info.start_ticks = 55;
  std::string entity = model::ProcessEntityId(info);
  ASSERT_EQ(sink.entities.size(), 1u);
  EXPECT_EQ(sink.entities[0].id, entity);
  EXPECT_EQ(sink.Find(cuda_profiler_metrics::kLaunchesSeen.key, entity), 2000);
  EXPECT_EQ(sink.Find(cuda_profiler_metrics::kLaunchesAdmitted.key, entity), 400);
  EXPECT_EQ(sink.Find(cuda_profiler_metrics::kLaunchesDropped.key, entity), 3);
  EXPECT_EQ(sink.Find(cuda_profiler_metrics::kRecordsLost.key, entity), 4);
  EXPECT_DOUBLE_EQ(*sink.Find(cuda_profiler_metrics::kOverheadTime.key, entity), 0.015);
  EXPECT_DOUBLE_EQ(*sink.Find(cuda_profiler_metrics::kOverheadRatio.key, entity), 0.01);
  EXPECT_EQ(sink.Find(cuda_profiler_metrics::kPythonFramesSkipped.key, entity), 6);
}

TEST_F(ProfileBuilderTest, ForgetProcessDropsItsStacks) {
  builder_.AddStack(pid_, PyTorchLikeStack(0xabc));
  builder_.ForgetProcess(pid_);
  builder_.AddKernel(pid_, Kernel(1, 0xabc, 2'000'000'000, 1000));
  auto profiles = builder_.FinishWindow(0, 3'000'000'000);
  Decoded d = Decode(profiles[0].pprof_gz);
  EXPECT_EQ(d.rows[0].stack, std::string("pid ") + std::to_string(pid_) +
                                 ";[stack not received];cudaLaunchKernel;" + kGemmName);
}

MemoryActivity Copy(MemoryActivity::Op op, std::string kind, uint64_t bytes, int64_t start,
                    int64_t duration, uint32_t stream = 7) {
  MemoryActivity m;
  m.op = op;
  m.kind = std::move(kind);
  m.correlation_id = 40;
  m.bytes = bytes;
  m.start_ns = start;
  m.end_ns = start + duration;
  m.device = 0;
  m.stream = stream;
  m.context = 1;
  return m;
}

NvtxRange Range(std::string name, int64_t start, int64_t end, int32_t tid = 4321) {
  return NvtxRange{std::move(name), "", start, end, tid};
}

TEST_F(ProfileBuilderTest, CopiesAndMemsetsAddGpuTimeUnderTheExecutable) {
  constexpr auto kCopy = MemoryActivity::Op::kMemcpy;
  builder_.AddMemoryActivity(pid_, Copy(kCopy, "HtoD", 64 << 20, 2'000'000'000, 3000));
  builder_.AddMemoryActivity(pid_, Copy(kCopy, "HtoD", 1 << 20, 2'000'010'000, 1000));
  builder_.AddMemoryActivity(pid_, Copy(kCopy, "DtoH", 4096, 2'000'020'000, 500, /*stream=*/9));
  builder_.AddMemoryActivity(pid_,
                             Copy(MemoryActivity::Op::kMemset, "device", 1536, 2'000'030'000, 200));
  builder_.AddKernel(pid_, Kernel(1, std::nullopt, 2'000'040'000, 1500));
  auto profiles = builder_.FinishWindow(1'990'000'000, 2'010'000'000);
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].memory_ops, 4u);
  EXPECT_EQ(profiles[0].memory_gpu_time_ns, 4700u);
  EXPECT_EQ(profiles[0].gpu_time_ns, 4700u + 1500u) << "GPU time covers copies and kernels";
  EXPECT_EQ(profiles[0].kernels, 1u) << "copies are not kernels";
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.rows.size(), 4u) << d.Stacks();
  const Row* htod = d.Find("python3.11;[memcpy HtoD]");
  ASSERT_NE(htod, nullptr) << d.Stacks();
  ASSERT_EQ(htod->frames.size(), 2u);
  EXPECT_EQ(htod->frames[0].name, "python3.11");
  EXPECT_EQ(htod->frames[0].file, kExe);
  EXPECT_EQ(htod->frames[1].name, "[memcpy HtoD]");
  EXPECT_EQ(htod->frames[1].file, "");
  EXPECT_EQ(htod->values, (std::vector<int64_t>{4000, 0, 0})) << "one row per kind and stream";
  EXPECT_EQ(htod->labels,
            (std::map<std::string, int64_t>{{"device", 0}, {"stream", 7}, {"pid", pid_}}));
  const Row* dtoh = d.Find("python3.11;[memcpy DtoH]");
  ASSERT_NE(dtoh, nullptr) << d.Stacks();
  EXPECT_EQ(dtoh->values, (std::vector<int64_t>{500, 0, 0}));
  EXPECT_EQ(dtoh->labels.at("stream"), 9);
  const Row* memset = d.Find("python3.11;[memset]");
  ASSERT_NE(memset, nullptr) << d.Stacks();
  EXPECT_EQ(memset->values, (std::vector<int64_t>{200, 0, 0}));
  EXPECT_NE(d.Find(std::string("python3.11;[unsampled launch site];") + kGemmName), nullptr);
  EXPECT_NE(profiles[0].folded.find("python3.11;[memcpy HtoD] 4000\n"), std::string::npos)
      << profiles[0].folded;
  EXPECT_EQ(builder_.stats().memory_ops, 4u);
}

TEST_F(ProfileBuilderTest, AWindowWithOnlyCopiesIsBuiltAndNvtxAloneIsNot) {
  builder_.AddNvtxRange(pid_, Range("step 1", 0, 100));
  EXPECT_TRUE(builder_.FinishWindow(0, 1000).empty());
  builder_.AddMemoryActivity(pid_, Copy(MemoryActivity::Op::kMemcpy, "DtoD", 8, 1500, 10));
  auto profiles = builder_.FinishWindow(1000, 2000);
  ASSERT_EQ(profiles.size(), 1u);
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].stack, "python3.11;[memcpy DtoD]");
}

TEST_F(ProfileBuilderTest, KernelSamplesCarryTheInnermostNvtxRangeOfTheirLaunchingThread) {
  builder_.AddStack(pid_, PyTorchLikeStack(0xabc));
  // Kernel(...) launches at start - 5000 on thread 4321.
  builder_.AddNvtxRange(pid_, Range("epoch 0", 1'000'000'000, 3'000'000'000));
  builder_.AddNvtxRange(pid_, Range("train_step 3", 1'999'000'000, 2'000'050'000));
  builder_.AddNvtxRange(pid_, Range("forward", 1'999'500'000, 2'000'000'000));
  builder_.AddNvtxRange(pid_, Range("other thread", 1'999'000'000, 2'100'000'000, /*tid=*/99));
  builder_.AddKernel(pid_, Kernel(1, 0xabc, 2'000'000'000, 1500));  // in forward
  builder_.AddKernel(pid_, Kernel(2, 0xabc, 2'000'020'000, 1000));  // after forward ended
  builder_.AddKernel(pid_, Kernel(3, 0xabc, 2'000'100'000, 700));   // after the step ended
  auto profiles = builder_.FinishWindow(1'990'000'000, 2'010'000'000);
  ASSERT_EQ(profiles.size(), 1u);
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.rows.size(), 3u) << "one sample per (site, nvtx label)";
  std::map<std::string, std::vector<int64_t>> by_label;
  for (const Row& r : d.rows) {
    EXPECT_EQ(r.stack, launch_prefix_ + kGemmName);
    ASSERT_EQ(r.str_labels.size(), 1u);
    by_label[r.str_labels.at("nvtx")] = r.values;
    EXPECT_EQ(r.labels,
              (std::map<std::string, int64_t>{{"device", 0}, {"stream", 7}, {"pid", pid_}}));
  }
  EXPECT_EQ(by_label["forward"], (std::vector<int64_t>{1500, 1, 0}));
  EXPECT_EQ(by_label["train_step 3"], (std::vector<int64_t>{1000, 1, 0}));
  EXPECT_EQ(by_label["epoch 0"], (std::vector<int64_t>{700, 1, 0}));
  EXPECT_EQ(builder_.stats().kernels_nvtx_labeled, 3u);
}

TEST_F(ProfileBuilderTest, KernelsWithoutAContainingRangeOfTheirThreadHaveNoNvtxLabel) {
  builder_.AddStack(pid_, PyTorchLikeStack(0xabc));
  builder_.AddNvtxRange(pid_, Range("marker", 1'999'995'000, 1'999'995'000));  // instantaneous
  builder_.AddNvtxRange(pid_, Range("other thread", 0, 3'000'000'000, /*tid=*/99));
  builder_.AddNvtxRange(pid_, Range("ended at the launch", 1'000'000'000, 1'999'995'000));
  builder_.AddKernel(pid_, Kernel(1, 0xabc, 2'000'000'000, 1500));
  KernelActivity unsampled = Kernel(2, std::nullopt, 2'000'000'000, 500);
  unsampled.api_start_ns = unsampled.api_end_ns = 0;  // no launch known
  builder_.AddKernel(pid_, unsampled);
  auto profiles = builder_.FinishWindow(1'990'000'000, 2'010'000'000);
  ASSERT_EQ(profiles.size(), 1u);
  Decoded d = Decode(profiles[0].pprof_gz);
  ASSERT_EQ(d.rows.size(), 2u);
  for (const Row& r : d.rows) {
    EXPECT_FALSE(r.str_labels.contains("nvtx")) << r.stack;
  }
  for (const std::string& s : d.profile.string_table()) {
    EXPECT_NE(s, "nvtx") << "no label key without labels";
  }
}

TEST_F(ProfileBuilderTest, PcSamplesKeepTheNvtxLabelOfTheSiteTheyAreSplitOver) {
  builder_.AddStack(pid_, PyTorchLikeStack(0xabc));
  builder_.AddNvtxRange(pid_, Range("train_step 3", 1'999'000'000, 2'000'050'000));
  builder_.AddKernel(pid_, Kernel(1, 0xabc, 2'000'000'000, 1500));
  builder_.AddPcSample(pid_, {0x11, kGemm, 0x40, "smsp__pcsamp_warps_issue_stalled_wait", 6});
  auto profiles = builder_.FinishWindow(1'990'000'000, 2'010'000'000);
  Decoded d = Decode(profiles[0].pprof_gz);
  const Row* pc = d.Find(launch_prefix_ + kGemmName + ";[sass] 0x0040;[stall] wait");
  ASSERT_NE(pc, nullptr) << d.Stacks();
  EXPECT_EQ(pc->values, (std::vector<int64_t>{0, 0, 6}));
  EXPECT_EQ(pc->str_labels, (std::map<std::string, std::string>{{"nvtx", "train_step 3"}}));
}

TEST_F(ProfileBuilderTest, RangesOfEarlierWindowsLabelLaterKernelsUntilTheirHistoryEnds) {
  ProfileBuilder::Options options;
  options.nvtx_history_ns = 1'000'000'000;
  ProfileBuilder builder(nullptr, options);
  builder.AddProcess({12, "/opt/app/server", 0, 0});
  builder.AddStack(12, {1, {0x401001}, {}});
  builder.AddNvtxRange(12, Range("step 1", 1'000'000'000, 5'000'000'000));
  builder.AddKernel(12, Kernel(1, 1, 1'500'000'000, 10));
  auto first = builder.FinishWindow(1'000'000'000, 2'000'000'000);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(Decode(first[0].pprof_gz).rows[0].str_labels.at("nvtx"), "step 1");
  builder.AddKernel(12, Kernel(2, 1, 4'500'000'000, 10));  // a later window, same range
  auto second = builder.FinishWindow(4'000'000'000, 5'000'000'000);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(Decode(second[0].pprof_gz).rows[0].str_labels.at("nvtx"), "step 1");
  // A window starting more than nvtx_history_ns after the range ended forgets it, even for a
  // late kernel record whose launch it contained.
  builder.AddKernel(12, Kernel(3, 1, 4'600'000'000, 10));
  auto late = builder.FinishWindow(6'100'000'000, 7'000'000'000);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_TRUE(Decode(late[0].pprof_gz).rows[0].str_labels.empty());
}

TEST_F(ProfileBuilderTest, NvtxHistoryIsCappedPerProcess) {
  ProfileBuilder::Options options;
  options.max_nvtx_ranges_per_process = 2;
  ProfileBuilder builder(nullptr, options);
  builder.AddProcess({12, "/opt/app/server", 0, 0});
  builder.AddStack(12, {1, {0x401001}, {}});
  builder.AddNvtxRange(12, Range("epoch", 0, 10'000));  // evicted by the two below
  builder.AddNvtxRange(12, Range("a", 0, 10));
  builder.AddNvtxRange(12, Range("b", 20, 30));
  builder.AddKernel(12, Kernel(1, 1, 5'100, 10));  // launched at 100: only "epoch" held it
  auto profiles = builder.FinishWindow(0, 10'000);
  EXPECT_TRUE(Decode(profiles[0].pprof_gz).rows[0].str_labels.empty());
  EXPECT_EQ(builder.stats().nvtx_ranges_evicted, 1u);
}

TEST_F(ProfileBuilderTest, TraceDrawsCopiesOnStreamTracksAndNvtxOnTheLaunchThread) {
  builder_.AddStack(pid_, PyTorchLikeStack(0xabc));
  builder_.AddKernel(pid_, Kernel(11, 0xabc, 2'000'000'000, 1500));
  builder_.AddMemoryActivity(
      pid_, Copy(MemoryActivity::Op::kMemcpy, "HtoD", 64 << 20, 1'990'000'000, 2'000'000));
  builder_.AddMemoryActivity(
      pid_, Copy(MemoryActivity::Op::kMemset, "device", 1536, 2'000'010'000, 0, /*stream=*/9));
  NvtxRange step = Range("train_step \"3\"", 1'989'000'000, 2'000'050'000);
  step.domain = "trainer";
  builder_.AddNvtxRange(pid_, step);
  builder_.AddNvtxRange(pid_, Range("checkpoint", 2'000'060'000, 2'000'060'000, /*tid=*/77));
  auto profiles = builder_.FinishWindow(0, 3'000'000'000);
  ASSERT_EQ(profiles.size(), 1u);
  nlohmann::json trace = nlohmann::json::parse(profiles[0].trace_json, nullptr, false);
  ASSERT_FALSE(trace.is_discarded()) << profiles[0].trace_json;
  std::vector<nlohmann::json> kernels, copies, memsets, ranges, instants, launches;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;  // (pid, tid)
  for (const auto& e : trace["traceEvents"]) {
    std::string ph = e["ph"];
    std::string cat = e.value("cat", "");
    if (ph == "X" && cat == "kernel") kernels.push_back(e);
    if (ph == "X" && cat == "memcpy") copies.push_back(e);
    if (ph == "X" && cat == "memset") memsets.push_back(e);
    if (ph == "X" && cat == "nvtx") ranges.push_back(e);
    if (ph == "i" && cat == "nvtx") instants.push_back(e);
    if (ph == "X" && cat == "cuda_api") launches.push_back(e);
    if (ph == "M" && e["name"] == "thread_name") {
      thread_names[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}] = e["args"]["name"];
    }
  }
  ASSERT_EQ(kernels.size(), 1u);
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0]["name"], "memcpy HtoD 64 MiB");
  EXPECT_EQ(copies[0]["pid"], kernels[0]["pid"]) << "the kernel's GPU";
  EXPECT_EQ(copies[0]["tid"], 7) << "the copy's stream track";
  EXPECT_DOUBLE_EQ(copies[0]["ts"].get<double>(), 1990000.0);
  EXPECT_DOUBLE_EQ(copies[0]["dur"].get<double>(), 2000.0);
  EXPECT_EQ(copies[0]["args"]["bytes"], 64 << 20);
  EXPECT_EQ(copies[0]["args"]["kind"], "HtoD");
  EXPECT_EQ(copies[0]["args"]["correlation_id"], 40);
  EXPECT_NEAR(copies[0]["args"]["throughput_gb_per_s"].get<double>(), 33.554, 0.001);
  ASSERT_EQ(memsets.size(), 1u);
  EXPECT_EQ(memsets[0]["name"], "memset 1.5 KiB");
  EXPECT_EQ(memsets[0]["tid"], 9);
  EXPECT_EQ(memsets[0]["args"]["memory_kind"], "device");
  EXPECT_FALSE(memsets[0]["args"].contains("throughput_gb_per_s")) << "no duration, no rate";
  const int64_t gpu_pid = kernels[0]["pid"].get<int64_t>();
  EXPECT_EQ(thread_names[std::make_pair(gpu_pid, int64_t{9})], "stream 9");
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges[0]["name"], "train_step \"3\"");
  EXPECT_EQ(ranges[0]["pid"], pid_);
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(ranges[0]["tid"], launches[0]["tid"]) << "the launch slices' thread track";
  EXPECT_DOUBLE_EQ(ranges[0]["ts"].get<double>(), 1989000.0);
  EXPECT_DOUBLE_EQ(ranges[0]["dur"].get<double>(), 11050.0);
  EXPECT_EQ(ranges[0]["args"]["domain"], "trainer");
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ(instants[0]["name"], "checkpoint");
  EXPECT_EQ(instants[0]["tid"], 77);
  EXPECT_EQ(instants[0]["s"], "t");
  EXPECT_EQ(thread_names[std::make_pair(int64_t{pid_}, int64_t{77})], "thread 77");
}

TEST_F(ProfileBuilderTest, TraceCapCountsRangesKernelsAndCopies) {
  ProfileBuilder::Options options;
  options.max_trace_kernels = 2;
  ProfileBuilder builder(nullptr, options);
  builder.AddProcess({12, "/opt/app/server", 0, 0});
  builder.AddNvtxRange(12, Range("step", 0, 10'000));
  builder.AddKernel(12, Kernel(1, std::nullopt, 6'000, 10));
  builder.AddKernel(12, Kernel(2, std::nullopt, 7'000, 10));
  builder.AddMemoryActivity(12, Copy(MemoryActivity::Op::kMemcpy, "HtoD", 8, 8'000, 10));
  auto profiles = builder.FinishWindow(0, 10'000);
  ASSERT_EQ(profiles.size(), 1u);
  nlohmann::json trace = nlohmann::json::parse(profiles[0].trace_json);
  std::map<std::string, int> drawn;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") ++drawn[e["cat"].get<std::string>()];
  }
  EXPECT_EQ(drawn, (std::map<std::string, int>{{"cuda_api", 1}, {"kernel", 1}, {"nvtx", 1}}));
  EXPECT_EQ(builder.stats().trace_kernels_dropped, 1u);
  EXPECT_EQ(builder.stats().trace_events_dropped, 1u);
  EXPECT_EQ(profiles[0].memory_ops, 1u) << "the profile keeps what the trace drops";
}

TEST_F(ProfileBuilderTest, RangesArrivingInAnIdleWindowAreDrawnInTheNextTrace) {
  builder_.AddNvtxRange(pid_, Range("warmup", 100, 200));
  EXPECT_TRUE(builder_.FinishWindow(0, 1000).empty());
  builder_.AddKernel(pid_, Kernel(1, std::nullopt, 1500, 10));
  auto profiles = builder_.FinishWindow(1000, 2000);
  ASSERT_EQ(profiles.size(), 1u);
  nlohmann::json trace = nlohmann::json::parse(profiles[0].trace_json);
  int ranges = 0;
  for (const auto& e : trace["traceEvents"]) {
    ranges += e["ph"] == "X" && e["cat"] == "nvtx" && e["name"] == "warmup";
  }
  EXPECT_EQ(ranges, 1);
  builder_.AddKernel(pid_, Kernel(2, std::nullopt, 2500, 10));
  auto next = builder_.FinishWindow(2000, 3000);
  EXPECT_EQ(next[0].trace_json.find("warmup"), std::string::npos) << "drawn once";
}

}  // namespace
}  // namespace warpscope::agent::cuda_profiler
