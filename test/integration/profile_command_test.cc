// SPDX-License-Identifier: Apache-2.0
// `warpscope profile -- CMD` end to end: the fake CUDA application (test/fakes/cupti) under the
// injected library and the fake libcupti, a real Python program under the CPU profiler, exit
// statuses, --duration, signals, bad input, and the report page run in headless Chromium.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/file_util.h"
#include "base/testing/peer.h"
#include "base/testing/temp_dir.h"
#include "integration/child_process.h"
#include "profiling/pprof.h"
#include "profiling/testing/perfetto_rows.h"

namespace warpscope {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kApp = std::string(WARPSCOPE_BINARY_DIR) + "/bin/fake_cuda_app";
const std::string kFakeCupti =
    std::string(WARPSCOPE_BINARY_DIR) + "/lib/libwarpscope_fake_cupti.so";

bool MayProfile() {
  if (geteuid() == 0) return true;
  auto p = base::ReadFile("/proc/sys/kernel/perf_event_paranoid");
  return p && std::atoi(p->c_str()) <= 2;
}

struct Result {
  int status = -1;
  std::string err;
  int code() const {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return -1;
  }
};

class ProfileCommandTest : public ::testing::Test {
 protected:
  std::string Out() const { return dir_.path() + "/out"; }

  Result Profile(std::vector<std::string> args, std::vector<std::string> env = {},
                 std::chrono::milliseconds timeout = 60s) {
    args.insert(args.begin(), {test::WarpscopeBinary(), "profile"});
    env.push_back("WARPSCOPE_CUPTI_LIBRARY=" + kFakeCupti);
    env.push_back("WARPSCOPE_CUPTI_FLUSH_MS=50");
    auto child = test::ChildProcess::Start(args, dir_.path(), env);
    EXPECT_TRUE(child.has_value());
    if (!child) return {};
    Result r;
    r.status = (*child)->Wait(timeout);
    r.err = (*child)->Stderr();
    return r;
  }

  nlohmann::json Summary() {
    auto text = base::ReadFile(Out() + "/summary.json");
    EXPECT_TRUE(text.has_value()) << "no summary.json";
    return text ? nlohmann::json::parse(*text) : nlohmann::json();
  }

  std::vector<std::string> Files(std::string_view prefix, std::string_view suffix) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(Out(), ec)) {
      const std::string name = e.path().filename().string();
      if (name.starts_with(prefix) && name.ends_with(suffix)) out.push_back(e.path().string());
    }
    return out;
  }

  base::TempDir dir_{"warpscope_profile_"};
};

TEST_F(ProfileCommandTest, FakeCudaAppReportHoldsItsKernelsAndLaunchSites) {
  ASSERT_EQ(access(kApp.c_str(), X_OK), 0) << kApp;
  Result r = Profile({"-o", Out(), "--", kApp, "--threads", "2", "--launches", "50", "--python"});
  ASSERT_EQ(r.code(), 0) << r.err;
  nlohmann::json s = Summary();
  EXPECT_TRUE(s["gpu"]["present"].get<bool>()) << s["gpu"].dump();
  std::map<std::string, nlohmann::json> kernels;
  for (const auto& k : s["kernels"]) kernels[k["name"]] = k;
  ASSERT_TRUE(kernels.count("fake_gemm()")) << s["kernels"].dump();
  ASSERT_TRUE(kernels.count("triton_softmax"));
  ASSERT_TRUE(kernels.count("py_kernel()"));
  // 2 threads x 50 gemm launches of 5 us each, every one counted: the records CUPTI delivers
  // at the exit flush, in more buffers than the pool holds, are all kept.
  EXPECT_EQ(kernels["fake_gemm()"]["gpu_ns"].get<int64_t>(), 100 * 5000);
  EXPECT_EQ(kernels["fake_gemm()"]["launches"].get<int64_t>(), 100);
  EXPECT_EQ(kernels["triton_softmax"]["launches"].get<int64_t>(), 100);
  bool python_site = false;
  for (const auto& site : kernels["py_kernel()"]["sites"]) {
    python_site |= site["python"] == "model_forward (fake_train.py:4)";
  }
  EXPECT_TRUE(python_site) << kernels["py_kernel()"].dump();
  bool native_site = false;
  for (const auto& site : kernels["fake_gemm()"]["sites"]) {
    native_site |= !site["native"].get<std::string>().empty();
  }
  EXPECT_TRUE(native_site) << kernels["fake_gemm()"].dump();
  ASSERT_EQ(s["gpus"].size(), 1u);

  // One pprof for the process's GPU profile, with the kernels.
  std::vector<std::string> pprofs = Files("gpu-", ".pb.gz");
  ASSERT_EQ(pprofs.size(), 1u);
  auto gz = base::ReadFile(pprofs[0]);
  ASSERT_TRUE(gz.has_value());
  auto p = profiling::DecodePprof(*gz);
  ASSERT_TRUE(p.has_value());
  bool gemm = false;
  for (const auto& f : p->frames) gemm |= f.function == "fake_gemm()";
  EXPECT_TRUE(gemm);

  // The trace (Perfetto's format, decoded by protoc): kernels on GPU stream tracks, launches on
  // the threads, a flow from each launch to its kernel.
  EXPECT_FALSE(fs::exists(Out() + "/trace.json"));
  WARPSCOPE_REQUIRE_PEER(profiling::testing::ProtocAvailable(), "protoc",
                         profiling::testing::kProtocSetup);
  auto bytes = base::ReadFile(Out() + "/trace.perfetto-trace");
  ASSERT_TRUE(bytes.has_value()) << "no trace.perfetto-trace";
  const profiling::testing::PerfettoTraceRows trace = profiling::testing::ReadPerfettoTrace(*bytes);
  ASSERT_EQ(trace.error, "");
  int kernel_events = 0;
  int api_events = 0;
  size_t flows = 0;
  for (const profiling::testing::PerfettoSlice& e : trace.slices) {
    if (e.category == "kernel") {
      ++kernel_events;
      flows += e.terminating_flows.size();
      EXPECT_EQ(trace.tracks.at(trace.tracks.at(e.track).parent).name, "GPU 0");
    }
    if (e.category == "cuda_api") ++api_events;
  }
  EXPECT_GT(kernel_events, 0);
  EXPECT_GT(api_events, 0);
  EXPECT_GT(flows, 0u);

  auto html = base::ReadFile(Out() + "/report.html");
  ASSERT_TRUE(html.has_value());
  EXPECT_NE(html->find("fake_gemm()"), std::string::npos);
  EXPECT_NE(html->find("model_forward (fake_train.py:4)"), std::string::npos);
}

TEST_F(ProfileCommandTest, PythonFunctionsAppearInTheCpuPart) {
  if (!MayProfile()) {
    if (std::getenv("CI") != nullptr) FAIL() << "perf_event refused; see docs/profile.md";
    GTEST_SKIP() << "perf_event refused (kernel.perf_event_paranoid > 2 and not root)";
  }
  const std::string script = dir_.path() + "/burn.py";
  std::ofstream(script) << "def hot_loop(n):\n"
                           "    s = 0\n"
                           "    for i in range(n):\n"
                           "        s += i * i\n"
                           "    return s\n"
                           "def main():\n"
                           "    for _ in range(100):\n"
                           "        hot_loop(100000)\n"
                           "main()\n";
  Result r =
      Profile({"-o", Out(), "--cpu-profile-frequency", "97", "--", "/usr/bin/python3", script});
  ASSERT_EQ(r.code(), 0) << r.err;
  nlohmann::json s = Summary();
  EXPECT_TRUE(s["cpu"]["present"].get<bool>());
  EXPECT_FALSE(s["gpu"]["present"].get<bool>());
  EXPECT_NE(s["gpu"]["reason"].get<std::string>().find("initialized CUDA"), std::string::npos);
  EXPECT_GT(s["totals"]["cpu_samples"].get<int64_t>(), 10);
  bool hot = false;
  for (const auto& f : s["functions"]) {
    hot |= f["kind"] == "python" && f["name"].get<std::string>().starts_with("hot_loop (burn.py:");
  }
  EXPECT_TRUE(hot) << s["functions"].dump();
  EXPECT_FALSE(Files("cpu-", ".pb.gz").empty());
  auto html = base::ReadFile(Out() + "/report.html");
  ASSERT_TRUE(html.has_value());
  EXPECT_NE(html->find("GPU profile: absent."), std::string::npos);
}

TEST_F(ProfileCommandTest, KeepsTheExitStatusAndMapsASignalDeathTo128PlusN) {
  Result r = Profile({"-o", Out(), "--", "/bin/sh", "-c", "exit 7"});
  EXPECT_EQ(r.code(), 7) << r.err;
  EXPECT_EQ(Summary()["outcome"], "exited with status 7");
  r = Profile({"-o", Out(), "--", "/bin/sh", "-c", "kill -9 $$"});
  EXPECT_EQ(r.code(), 137) << r.err;
  EXPECT_NE(Summary()["outcome"].get<std::string>().find("signal 9"), std::string::npos);
}

TEST_F(ProfileCommandTest, DurationStopsProfilingAndTheCommandRunsOn) {
  const std::string go = dir_.path() + "/go";
  std::vector<std::string> args = {test::WarpscopeBinary(),
                                   "profile",
                                   "-o",
                                   Out(),
                                   "--duration",
                                   "0.5",
                                   "--",
                                   "/bin/sh",
                                   "-c",
                                   "while [ ! -e " + go + " ]; do sleep 0.05; done; exit 3"};
  auto child = test::ChildProcess::Start(args, dir_.path());
  ASSERT_TRUE(child.has_value());
  // The report is written while the command still runs.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!fs::exists(Out() + "/report.html") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);  // polls the observable outcome, bounded
  }
  ASSERT_TRUE(fs::exists(Out() + "/report.html"));
  EXPECT_NE(Summary()["outcome"].get<std::string>().find("still running"), std::string::npos);
  std::ofstream(go) << "go";
  const int status = (*child)->Wait(30s);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
}

TEST_F(ProfileCommandTest, SigtermIsForwardedAndTheReportStillWritten) {
  std::vector<std::string> args = {
      test::WarpscopeBinary(), "profile", "-o", Out(), "--", "/bin/sleep", "60"};
  auto child = test::ChildProcess::Start(args, dir_.path());
  ASSERT_TRUE(child.has_value());
  // Wait until the command runs (sleep is a child of warpscope).
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  bool running = false;
  while (!running && std::chrono::steady_clock::now() < deadline) {
    auto children =
        base::ReadFile(fmt::format("/proc/{}/task/{}/children", (*child)->pid(), (*child)->pid()));
    running = children && !children->empty();
    if (!running) std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(running);
  const int status = (*child)->Signal(SIGTERM, 30s);
  ASSERT_TRUE(WIFEXITED(status)) << (*child)->Stderr();
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  EXPECT_TRUE(fs::exists(Out() + "/report.html"));
  EXPECT_NE(Summary()["outcome"].get<std::string>().find("signal 15"), std::string::npos);
}

TEST_F(ProfileCommandTest, BadInputFailsWithAClearMessage) {
  Result r = Profile({"-o", Out()});
  EXPECT_EQ(r.code(), 2);
  EXPECT_NE(r.err.find("no command to profile"), std::string::npos) << r.err;
  r = Profile({"-o", Out(), "--", "warpscope-no-such-command"});
  EXPECT_EQ(r.code(), 127);
  EXPECT_NE(r.err.find("warpscope-no-such-command: command not found"), std::string::npos) << r.err;
  std::ofstream(dir_.path() + "/file") << "x";
  r = Profile({"-o", dir_.path() + "/file/out", "--", "/bin/true"});
  EXPECT_EQ(r.code(), 2);
  EXPECT_NE(r.err.find("--output"), std::string::npos) << r.err;
  r = Profile({"-o", Out(), "--trace-format", "json", "--", "/bin/true"});
  EXPECT_EQ(r.code(), 2);
  EXPECT_NE(r.err.find("--trace-format=json: want perfetto (the default) or chrome"),
            std::string::npos)
      << r.err;
}

TEST_F(ProfileCommandTest, TraceFormatChromeWritesTraceJsonInstead) {
  ASSERT_EQ(access(kApp.c_str(), X_OK), 0) << kApp;
  Result r = Profile({"-o", Out(), "--trace-format", "chrome", "--", kApp, "--launches", "5"});
  ASSERT_EQ(r.code(), 0) << r.err;
  EXPECT_FALSE(fs::exists(Out() + "/trace.perfetto-trace"));
  auto text = base::ReadFile(Out() + "/trace.json");
  ASSERT_TRUE(text.has_value()) << "no trace.json";
  auto trace = nlohmann::json::parse(*text);
  int kernel_events = 0;
  for (const auto& e : trace["traceEvents"]) kernel_events += e.value("cat", "") == "kernel";
  EXPECT_GT(kernel_events, 0);
  EXPECT_NE(base::ReadFile(Out() + "/report.html")->find("<code>trace.json</code>"),
            std::string::npos);
}

TEST_F(ProfileCommandTest, ReportScriptRunsInHeadlessChromium) {
  const std::string chromium = std::getenv("WARPSCOPE_CHROMIUM") != nullptr
                                   ? std::getenv("WARPSCOPE_CHROMIUM")
                                   : "/usr/bin/chromium";
  if (access(chromium.c_str(), X_OK) != 0) {
    if (std::getenv("CI") != nullptr) FAIL() << "no Chromium at " << chromium;
    GTEST_SKIP() << "no Chromium at " << chromium;
  }
  ASSERT_EQ(access(kApp.c_str(), X_OK), 0) << kApp;
  Result r = Profile({"-o", Out(), "--", kApp, "--threads", "1", "--launches", "20", "--python"});
  ASSERT_EQ(r.code(), 0) << r.err;
  auto browser =
      test::ChildProcess::Start({chromium, "--headless", "--no-sandbox", "--disable-gpu",
                                 "--no-first-run", "--user-data-dir=" + dir_.path() + "/chromium",
                                 "--dump-dom", "file://" + Out() + "/report.html"},
                                dir_.path());
  ASSERT_TRUE(browser.has_value());
  const int status = (*browser)->Wait(60s);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << (*browser)->Stderr();
  const std::string dom = (*browser)->Stdout();
  EXPECT_NE(dom.find("data-flame=\"ok\""), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("<div"), std::string::npos);
}

}  // namespace
}  // namespace warpscope
