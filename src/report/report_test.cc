// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/testing/peer.h"
#include "profiling/perfetto_trace.h"
#include "profiling/pprof.h"
#include "profiling/testing/perfetto_rows.h"
#include "report/frame_classify.h"
#include "report/html_report.h"
#include "report/profile_report.h"
#include "report/trace_merge.h"

namespace warpscope::report {
namespace {

using profiling::Frame;
using profiling::FrameKind;

// A frame; its kind only where `kinds` (as the agent's builders set them), else unknown (as a
// foreign profile's frames are).
Frame F(bool kinds, FrameKind kind, std::string function, std::string module = "",
        std::string file = "", int64_t line = 0) {
  Frame f;
  f.function = std::move(function);
  f.module = std::move(module);
  f.file = std::move(file);
  f.line = line;
  if (kinds) f.kind = kind;
  return f;
}

// A GPU profile as the CUDA profiler builds it: app → Python → native → launch API → kernel,
// and a PC-sampled row under the kernel.
profiling::Profile GpuProfile(const std::string& kernel, int64_t ns, int32_t pid, bool kinds) {
  profiling::ProfileAggregator a(
      {{"gpu_time", "nanoseconds"}, {"launches", "count"}, {"pc_samples", "count"}});
  const uint32_t app = a.InternFrame(F(kinds, FrameKind::kProcess, "app", "", "/usr/bin/app"));
  const uint32_t py =
      a.InternFrame(F(kinds, FrameKind::kPython, "train_step", "", "/src/train.py", 12));
  const uint32_t native =
      a.InternFrame(F(kinds, FrameKind::kNative, "at::native::gemm<float>", "/lib/libtorch.so"));
  const uint32_t api =
      a.InternFrame(F(kinds, FrameKind::kLaunch, "cudaLaunchKernel", "/lib/libcudart.so"));
  const uint32_t k = a.InternFrame(F(kinds, FrameKind::kKernel, kernel));
  const uint32_t sass = a.InternFrame(F(kinds, FrameKind::kSass, "[sass] 0x0010 FFMA"));
  const uint32_t stall = a.InternFrame(F(kinds, FrameKind::kStall, "[stall] memory_dependency"));
  const uint32_t copy = a.InternFrame(F(kinds, FrameKind::kMemory, "[memcpy HtoD]"));
  const int64_t v1[] = {ns, 2, 0};
  const int64_t v2[] = {0, 0, 7};
  const int64_t v3[] = {100, 0, 0};
  const profiling::Label dev[] = {{"device", "", 1}, {"pid", "", pid}};
  a.Add(std::vector<uint32_t>{app, py, native, api, k}, v1, dev);
  a.Add(std::vector<uint32_t>{app, py, native, api, k, sass, stall}, v2, dev);
  a.Add(std::vector<uint32_t>{app, copy}, v3, dev);
  return a.profile();
}

profiling::WindowProfile GpuWindow(int32_t pid, const std::string& kernel, int64_t ns) {
  profiling::WindowProfile w;
  w.kind = "gpu";
  w.pid = pid;
  w.executable = "/usr/bin/app";
  w.start_ns = 1'000'000'000;
  w.end_ns = 2'000'000'000;
  w.pprof_gz = *profiling::EncodePprof(GpuProfile(kernel, ns, pid, /*kinds=*/true));
  w.trace_json =
      R"({"traceEvents":[{"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"app"}},)"
      R"({"ph":"X","name":"k","pid":1000001,"tid":7,"ts":1,"dur":2}]})";
  return w;
}

profiling::Profile CpuProfile(bool kinds) {
  profiling::ProfileAggregator a({{"samples", "count"}, {"cpu", "nanoseconds"}});
  const uint32_t app = a.InternFrame(F(kinds, FrameKind::kProcess, "app", "", "/usr/bin/app"));
  const uint32_t py =
      a.InternFrame(F(kinds, FrameKind::kPython, "train_step", "", "/src/train.py", 12));
  const uint32_t loader = a.InternFrame(F(kinds, FrameKind::kNative, "load<&>", "/usr/bin/app"));
  const uint32_t sys =
      a.InternFrame(F(kinds, FrameKind::kOsKernel, "do_syscall_64", "[kernel.kallsyms]"));
  const int64_t v1[] = {3, 300};
  const int64_t v2[] = {1, 100};
  a.Add(std::vector<uint32_t>{app, py, loader}, v1);
  a.Add(std::vector<uint32_t>{app, py, loader, sys}, v2);
  return a.profile();
}

profiling::WindowProfile CpuWindow(int32_t pid, int64_t start_ns) {
  profiling::WindowProfile w;
  w.kind = "cpu";
  w.pid = pid;
  w.executable = "/usr/bin/app";
  w.start_ns = start_ns;
  w.end_ns = start_ns + 1'000'000'000;
  w.pprof_gz = *profiling::EncodePprof(CpuProfile(/*kinds=*/true));
  return w;
}

// Frames without kinds (a foreign profile, in memory: decoding would infer some already).
TEST(ClassifyFramesTest, RecoversEveryKindFromPlaceAndContent) {
  std::optional<profiling::Profile> p = GpuProfile("gemm", 500, 7, /*kinds=*/false);
  ClassifyFrames(*p, /*gpu=*/true);
  std::map<std::string, FrameKind> kinds;
  for (const Frame& f : p->frames) kinds[f.function] = f.kind;
  EXPECT_EQ(kinds["app"], FrameKind::kProcess);
  EXPECT_EQ(kinds["train_step"], FrameKind::kPython);
  EXPECT_EQ(kinds["at::native::gemm<float>"], FrameKind::kNative);
  EXPECT_EQ(kinds["cudaLaunchKernel"], FrameKind::kLaunch);
  EXPECT_EQ(kinds["gemm"], FrameKind::kKernel);
  EXPECT_EQ(kinds["[sass] 0x0010 FFMA"], FrameKind::kSass);
  EXPECT_EQ(kinds["[stall] memory_dependency"], FrameKind::kStall);
  EXPECT_EQ(kinds["[memcpy HtoD]"], FrameKind::kMemory);

  std::optional<profiling::Profile> c = CpuProfile(/*kinds=*/false);
  ClassifyFrames(*c, /*gpu=*/false);
  for (const Frame& f : c->frames) kinds[f.function] = f.kind;
  EXPECT_EQ(kinds["do_syscall_64"], FrameKind::kOsKernel);
  EXPECT_EQ(kinds["load<&>"], FrameKind::kNative);
}

TEST(BuildReportTest, MergesWindowsPerProcessAndKindAndComputesTheTables) {
  RunInfo run;
  run.start_ns = 1'000'000'000;
  run.end_ns = 3'000'000'000;
  std::vector<profiling::WindowProfile> windows = {
      GpuWindow(7, "gemm", 500), GpuWindow(7, "gemm", 300), CpuWindow(7, 1'000'000'000),
      CpuWindow(7, 2'000'000'000), CpuWindow(8, 1'000'000'000)};
  ProfileReport r = BuildReport(run, windows);
  ASSERT_EQ(r.profiles.size(), 3u);  // cpu 7, cpu 8, gpu 7
  EXPECT_EQ(r.cpu_ns, 3 * 400);
  EXPECT_EQ(r.cpu_samples, 3 * 4);
  EXPECT_EQ(r.kernel_ns, 800);
  EXPECT_EQ(r.memory_ns, 200);
  EXPECT_EQ(r.launches, 4);
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].name, "gemm");
  EXPECT_EQ(r.kernels[0].gpu_ns, 800);
  ASSERT_EQ(r.kernels[0].sites.size(), 1u);
  EXPECT_EQ(r.kernels[0].sites[0].python, "train_step (train.py:12)");
  EXPECT_EQ(r.kernels[0].sites[0].native, "at::native::gemm<float>");
  ASSERT_FALSE(r.functions.empty());
  EXPECT_EQ(r.functions[0].name, "load<&>");
  EXPECT_EQ(r.functions[0].self_ns, 3 * 300);
  EXPECT_EQ(r.functions[0].total_ns, 3 * 400);
  ASSERT_EQ(r.processes.size(), 2u);
  EXPECT_EQ(r.processes[0].pid, 7);
  EXPECT_EQ(r.processes[0].cpu_ns, 800);
  EXPECT_EQ(r.processes[0].gpu_ns, 1000);
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_EQ(r.gpus[0].device, 1);
  EXPECT_EQ(r.gpus[0].kernel_ns, 800);
  // One tree: the process node holds CPU and GPU time, the Python frame is shared.
  EXPECT_EQ(r.flame.cpu_ns, 1200);
  EXPECT_EQ(r.flame.gpu_ns, 1000);
  EXPECT_EQ(r.flame.pc_samples, 14);
  const FlameNode* app = nullptr;
  for (const FlameNode& c : r.flame.children) {
    if (c.name == "app (pid 7)") app = &c;
  }
  ASSERT_NE(app, nullptr);
  EXPECT_EQ(app->kind, FrameKind::kProcess);
  EXPECT_EQ(app->cpu_ns, 800);
  EXPECT_EQ(app->gpu_ns, 1000);
  ASSERT_FALSE(app->children.empty());
  EXPECT_EQ(app->children[0].name, "train_step (train.py:12)");
  EXPECT_EQ(app->children[0].cpu_ns, 800);
  EXPECT_EQ(app->children[0].gpu_ns, 800);
}

TEST(BuildReportTest, BoundsTheFlameTreeWithOtherNodes) {
  std::vector<profiling::WindowProfile> windows = {CpuWindow(7, 0), CpuWindow(8, 0),
                                                   CpuWindow(9, 0)};
  ReportOptions options;
  options.max_flame_nodes = 4;
  ProfileReport r = BuildReport({}, windows, options);
  EXPECT_GT(r.flame_nodes_folded, 0u);
  EXPECT_EQ(r.flame.cpu_ns, 1200) << "totals stay exact";
  int64_t sum = 0;
  for (const FlameNode& c : r.flame.children) sum += c.cpu_ns;
  EXPECT_EQ(sum, 1200);
}

TEST(BuildReportTest, AWindowThatDoesNotDecodeIsNamedInTheNotes) {
  profiling::WindowProfile bad = CpuWindow(7, 0);
  bad.pprof_gz = "not a profile";
  ProfileReport r = BuildReport({}, {bad, CpuWindow(8, 0)});
  ASSERT_EQ(r.run.cpu.notes.size(), 1u);
  EXPECT_NE(r.run.cpu.notes[0].find("pid 7"), std::string::npos);
  EXPECT_EQ(r.profiles.size(), 1u);
}

TEST(HtmlReportTest, EscapesEveryNameAndHasEverySection) {
  RunInfo run;
  run.command = {"python3", "<script>alert(1)</script>.py"};
  run.host = "node&1";
  run.start_ns = 1'000'000'000;
  run.end_ns = 3'000'000'000;
  run.outcome = "exited with status 0";
  run.cpu.present = true;
  run.gpu.reason = "no process initialized CUDA";
  ProfileReport r = BuildReport(
      run, {GpuWindow(7, "void k<int, &f>(T*) </script>", 500), CpuWindow(7, 1'000'000'000)});
  const std::string html = RenderHtml(r, {"cpu-x-7-1-2.pb.gz", "trace.json"});
  for (const char* id :
       {"id=\"summary\"", "id=\"flamegraph\"", "id=\"kernels\"", "id=\"functions\"",
        "id=\"processes\"", "id=\"gpus\"", "id=\"files\"", "id=\"legend\"", "id=\"flame-data\""}) {
    EXPECT_NE(html.find(id), std::string::npos) << id;
  }
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;.py"), std::string::npos);
  EXPECT_NE(html.find("node&amp;1"), std::string::npos);
  EXPECT_NE(html.find("void k&lt;int, &amp;f&gt;(T*) &lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("load&lt;&amp;&gt;"), std::string::npos);
  EXPECT_NE(html.find("GPU profile: absent.</b> no process initialized CUDA"), std::string::npos);
  // "</script" appears only where the page closes its own script elements.
  size_t closes = 0;
  for (size_t at = html.find("</script"); at != std::string::npos;
       at = html.find("</script", at + 1)) {
    ++closes;
  }
  EXPECT_EQ(closes, 2u);
  EXPECT_EQ(html.find("http://"), std::string::npos) << "nothing is loaded from the network";
  EXPECT_EQ(html.find("https://"), std::string::npos);
}

TEST(HtmlReportTest, FlameJsonRoundTripsNamesWithMarkup) {
  FlameNode root{"all"};
  root.children.push_back(FlameNode{"a<b>&c", FrameKind::kKernel, 0, 5});
  const std::string text = FlameJson(root);
  EXPECT_EQ(text.find('<'), std::string::npos);
  EXPECT_EQ(text.find('&'), std::string::npos);
  auto doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["tree"][8][0][0], "a<b>&c");
  EXPECT_EQ(doc["kinds"][doc["tree"][8][0][1].get<size_t>()], "kernel");
}

TEST(HtmlReportTest, FormatsDurations) {
  EXPECT_EQ(FormatNs(12), "12 ns");
  EXPECT_EQ(FormatNs(1500), "1.5 \u00b5s");
  EXPECT_EQ(FormatNs(2'500'000), "2.5 ms");
  EXPECT_EQ(FormatNs(3'250'000'000), "3.25 s");
}

TEST(MergedTraceTest, MergesGpuTracesOnceAndAddsACpuTrackPerProcess) {
  const std::string text =
      MergedTrace({GpuWindow(7, "gemm", 1), GpuWindow(7, "gemm", 1), CpuWindow(7, 1'000'000'000)});
  auto doc = nlohmann::json::parse(text);
  int process_names = 0;
  int kernels = 0;
  int counters = 0;
  int cpu_slices = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == 7) ++process_names;
    if (e["ph"] == "X" && e["name"] == "k") ++kernels;
    if (e["ph"] == "C") {
      ++counters;
      EXPECT_DOUBLE_EQ(e["args"]["cores"].get<double>(), 400.0 / 1e9);
    }
    if (e["ph"] == "X" && e.value("cat", "") == "cpu_profile") {
      ++cpu_slices;
      EXPECT_EQ(e["name"], "load<&>");
      EXPECT_EQ(e["tid"], kCpuTrackTid);
    }
  }
  EXPECT_EQ(kernels, 2);
  EXPECT_EQ(counters, 1);
  EXPECT_EQ(cpu_slices, 1);
  EXPECT_EQ(process_names, 2) << "the GPU trace's name and the CPU track's";
}

// A GPU window whose Perfetto trace has kernel `kernel` on pid's stream 7, as the CUDA profiler
// writes it: its own sequence per process, the process track described.
profiling::WindowProfile PerfettoGpuWindow(int32_t pid, const std::string& kernel, int64_t start) {
  profiling::WindowProfile w = GpuWindow(pid, kernel, 1);
  w.trace_json.clear();
  profiling::PerfettoTraceWriter t(static_cast<uint32_t>(pid) + 1);
  t.ProcessTrack(profiling::ProcessTrackUuid(pid), pid, "app (pid 7)");
  t.Track(profiling::GpuTrackUuid(0), 0, "GPU 0");
  const uint64_t stream = profiling::GpuStreamTrackUuid(pid, 0, 7);
  t.Track(stream, profiling::GpuTrackUuid(0), "stream 7 (pid 7)");
  t.Slice(stream, "kernel", kernel, start, start + 2000).Uint("correlation_id", 1);
  w.perfetto_trace = t.Finish();
  return w;
}

TEST(MergedPerfettoTraceTest, ConcatenatesGpuWindowsAndAddsCpuTracksUnderEachProcess) {
  WARPSCOPE_REQUIRE_PEER(profiling::testing::ProtocAvailable(), "protoc",
                         profiling::testing::kProtocSetup);
  const std::string trace = MergedPerfettoTrace(
      {PerfettoGpuWindow(7, "gemm", 1'000'000'000), PerfettoGpuWindow(7, "gemm", 1'500'000'000),
       CpuWindow(7, 1'000'000'000), CpuWindow(8, 1'000'000'000), CpuWindow(8, 2'000'000'000)});
  const profiling::testing::PerfettoTraceRows rows = profiling::testing::ReadPerfettoTrace(trace);
  ASSERT_EQ(rows.error, "");
  EXPECT_EQ(rows.Named("gemm").size(), 2u);
  EXPECT_EQ(rows.tracks.at(profiling::ProcessTrackUuid(7)).name, "app (pid 7)")
      << "described once, by the GPU windows";
  EXPECT_EQ(rows.tracks.at(profiling::ProcessTrackUuid(8)).name, "app (pid 8)");
  const auto cpu = rows.Named("load<&>");
  ASSERT_EQ(cpu.size(), 3u);
  EXPECT_EQ(cpu[0]->category, "cpu_profile");
  EXPECT_EQ(cpu[0]->end_ns - cpu[0]->start_ns, 1'000'000'000);
  EXPECT_EQ(cpu[0]->args.at("samples"), "4");
  const profiling::testing::PerfettoTrack& track = rows.tracks.at(cpu[0]->track);
  EXPECT_EQ(track.name, "CPU profile");
  EXPECT_TRUE(track.parent == profiling::ProcessTrackUuid(7) ||
              track.parent == profiling::ProcessTrackUuid(8));
  int counters = 0;
  for (const profiling::testing::PerfettoSlice& s : rows.slices) {
    if (s.type != "TYPE_COUNTER") continue;
    ++counters;
    EXPECT_DOUBLE_EQ(s.counter, 400.0 / 1e9);
    EXPECT_EQ(rows.tracks.at(s.track).name, "CPU cores");
    EXPECT_TRUE(rows.tracks.at(s.track).counter);
  }
  EXPECT_EQ(counters, 3);
}

TEST(HtmlReportTest, NamesTheTraceFileAndHowToOpenIt) {
  RunInfo run;
  run.command = {"app"};
  ProfileReport r = BuildReport(run, {CpuWindow(7, 1'000'000'000)});
  const std::string perfetto = RenderHtml(r, {"trace.perfetto-trace", "summary.json"});
  EXPECT_NE(perfetto.find("<code>trace.perfetto-trace</code> is a Perfetto trace"),
            std::string::npos);
  EXPECT_NE(perfetto.find("ui.perfetto.dev"), std::string::npos);
  EXPECT_EQ(perfetto.find("Chrome trace"), std::string::npos);
  const std::string chrome = RenderHtml(r, {"trace.json", "summary.json"});
  EXPECT_NE(chrome.find("<code>trace.json</code> is a Chrome trace"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::report
