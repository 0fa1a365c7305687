// SPDX-License-Identifier: Apache-2.0
// The real `warpscope agent` binary on the NVML simulator: its /metrics is checked against the
// scenario, scraped by a real Prometheus that answers dashboard 12239's queries, and its OTLP
// push is decoded by an independent receiver.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "base/file_util.h"
#include "base/testing/peer.h"
#include "child_process.h"
#include "prometheus_peer.h"
#include "scrape.h"

namespace warpscope::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kScenario[] = R"(
name: e2e
seed: 7
driver: {version: "550.127.08", nvml_version: "12.550.127.08", cuda_version: 12040}
devices:
  - repeat: 2
    name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    memory_total: 80GiB
    memory_reserved: 512MiB
    power_limit: 700
    nvlink_links: 4
    signals:
      gpu_util: 97
      memory_used: 20GiB
      power: 650
      temperature: 62
      memory_temperature: 70
      sm_clock: 1980
      mem_clock: 2619
      sm_active: 88
      sm_occupancy: 45
      tensor_active: 55
      dram_active: 40
    processes:
      - {pid: "424{i}", name: python3, type: compute, memory: 8GiB, sm_util: 90, mem_util: 40}
    overrides:
      "1":
        faults:
          - {kind: not_supported, what: memory_temperature}
          - {kind: xid, at: 1s, code: 79}
)";

class AgentE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    binary_ = std::string(WARPSCOPE_BINARY_DIR) + "/bin/warpscope";
    scenario_ = tmp_.path() + "/e2e.yaml";
    ASSERT_TRUE(base::WriteFile(scenario_, kScenario).ok());
    // An independent OTLP receiver: parses what arrives with nlohmann::json.
    otlp_.Post("/v1/metrics", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      otlp_bodies_.push_back(req.body);
      otlp_content_types_.push_back(req.get_header_value("Content-Type"));
      res.status = 200;
      res.set_content("{}", "application/json");
    });
    otlp_port_ = otlp_.bind_to_any_port("127.0.0.1");
    otlp_thread_ = std::thread([this] { otlp_.listen_after_bind(); });
  }
  void TearDown() override {
    otlp_.stop();
    if (otlp_thread_.joinable()) otlp_thread_.join();
  }

  // Polls the agent's /metrics until `ready(body)` holds (bounded), returning the last body.
  std::string WaitForMetrics(int port, const std::function<bool(const std::string&)>& ready) {
    return WaitForHttp(port, "/metrics", ready);
  }

  TempDir tmp_;
  std::string binary_;
  std::string scenario_;
  httplib::Server otlp_;
  int otlp_port_ = 0;
  std::thread otlp_thread_;
  std::mutex mu_;
  std::vector<std::string> otlp_bodies_;
  std::vector<std::string> otlp_content_types_;
};

TEST_F(AgentE2ETest, ServesScenarioValuesToPrometheusAndOtlp) {
  const int port = PickFreePort();
  auto agent = ChildProcess::Start(
      {binary_, "agent", "--simulate", scenario_, "--collect-metrics-interval=500ms",
       "--export-metrics-interval=1s", "--listen-address=127.0.0.1:" + std::to_string(port),
       "--hostname=e2e-node", "--tags=cluster:ci", "--top-processes=3",
       "--otlp-endpoint=http://127.0.0.1:" + std::to_string(otlp_port_)},
      tmp_.path());
  ASSERT_TRUE(agent) << agent.error().message();

  std::string body = WaitForMetrics(port, [](const std::string& b) {
    return b.find("DCGM_FI_PROF_SM_ACTIVE{") != std::string::npos &&
           b.find("warpscope_gpu_xid_errors_total{") != std::string::npos;
  });
  ASSERT_NE(body.find("DCGM_FI_PROF_SM_ACTIVE{"), std::string::npos) << "agent stderr:\n"
                                                                     << (*agent)->Stderr();

  // Values after unit conversion to dcgm-exporter's units, with its labels.
  const std::string gpu0 = "gpu=\"0\"";
  EXPECT_EQ(PromSample(body, "DCGM_FI_DEV_GPU_UTIL",
                       {gpu0, "device=\"nvidia0\"", "modelName=\"NVIDIA H100 80GB HBM3\"",
                        "Hostname=\"e2e-node\"", "cluster=\"ci\""}),
            97);
  EXPECT_EQ(PromSample(body, "DCGM_FI_DEV_FB_USED", {gpu0}), 20480);
  EXPECT_EQ(PromSample(body, "DCGM_FI_DEV_POWER_USAGE", {gpu0}), 650);
  EXPECT_EQ(PromSample(body, "DCGM_FI_DEV_GPU_TEMP", {gpu0}), 62);
  EXPECT_EQ(PromSample(body, "DCGM_FI_DEV_SM_CLOCK", {gpu0}), 1980);
  EXPECT_NEAR(*PromSample(body, "DCGM_FI_PROF_SM_ACTIVE", {gpu0}), 0.88, 1e-6);
  EXPECT_NEAR(*PromSample(body, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", {gpu0}), 0.55, 1e-6);
  // NOT_SUPPORTED is absent, never zero.
  EXPECT_EQ(PromSample(body, "DCGM_FI_DEV_MEMORY_TEMP", {gpu0}), 70);
  EXPECT_EQ(PromSample(body, "DCGM_FI_DEV_MEMORY_TEMP", {"gpu=\"1\""}), std::nullopt);
  // The XID: last code and a per-code counter.
  EXPECT_EQ(PromSample(body, "DCGM_FI_DEV_XID_ERRORS", {"gpu=\"1\""}), 79);
  EXPECT_EQ(PromSample(body, "warpscope_gpu_xid_errors_total", {"gpu=\"1\"", "xid=\"79\""}), 1);
  // The GPU consumer, attributed by pid and executable.
  EXPECT_EQ(PromSample(body, "warpscope_gpu_process_memory_used_bytes",
                       {"pid=\"4240\"", "executable=\"python3\"", gpu0}),
            8.0 * (1 << 30));
  // Host metrics and self-metrics ride along.
  EXPECT_TRUE(PromSample(body, "warpscope_host_memory_total_bytes").has_value());
  EXPECT_EQ(PromSample(body, "warpscope_agent_source_up", {"source=\"nvml\""}), 1);

  // A real Prometheus scrapes the agent and answers dashboard 12239's queries. Without one this
  // part is left out, except in CI, where that fails.
  if (!PrometheusPeer::Available() && base::InCi()) {
    ADD_FAILURE() << "/usr/bin/prometheus is missing: run scripts/setup.sh --test "
                     "(CI=true: a missing peer fails)";
  }
  if (PrometheusPeer::Available()) {
    PrometheusPeer::Options options;
    options.targets.push_back({"dcgm", "127.0.0.1:" + std::to_string(port)});
    auto prom = PrometheusPeer::Start(options);
    ASSERT_TRUE(prom) << prom.error().message();
    auto two_series = [](const nlohmann::json& r) { return r.is_array() && r.size() == 2; };
    auto temp = (*prom)->WaitForQuery("max(DCGM_FI_DEV_GPU_TEMP) by (Hostname, gpu)", two_series);
    ASSERT_TRUE(temp) << temp.error().message();
    for (const auto& series : *temp) {
      EXPECT_EQ(series["metric"]["Hostname"], "e2e-node");
      EXPECT_EQ(series["value"][1], "62");
    }
    auto util = (*prom)->WaitForQuery("avg(DCGM_FI_DEV_GPU_UTIL) by (Hostname, gpu)", two_series);
    ASSERT_TRUE(util) << util.error().message();
    EXPECT_EQ((*util)[0]["value"][1], "97");
    auto power = (*prom)->WaitForQuery("sum(DCGM_FI_DEV_POWER_USAGE) by (Hostname)",
                                       [](const nlohmann::json& r) { return r.size() == 1; });
    ASSERT_TRUE(power) << power.error().message();
    EXPECT_EQ((*power)[0]["value"][1], "1300");
    auto fb = (*prom)->WaitForQuery(
        "DCGM_FI_DEV_FB_USED{gpu=\"1\"} / (DCGM_FI_DEV_FB_USED{gpu=\"1\"} + "
        "DCGM_FI_DEV_FB_FREE{gpu=\"1\"})",
        [](const nlohmann::json& r) { return r.size() == 1; });
    ASSERT_TRUE(fb) << fb.error().message();
    EXPECT_GT(std::stod((*fb)[0]["value"][1].get<std::string>()), 0.2);
  }

  // SIGTERM: a clean exit that flushes a final window to OTLP.
  int status = (*agent)->Signal(SIGTERM, seconds(10));
  ASSERT_TRUE(WIFEXITED(status)) << (*agent)->Stderr();
  EXPECT_EQ(WEXITSTATUS(status), 0);

  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_FALSE(otlp_bodies_.empty()) << (*agent)->Stderr();
  EXPECT_EQ(otlp_content_types_[0], "application/json");
  bool found_util = false;
  for (const std::string& body_text : otlp_bodies_) {
    nlohmann::json req = nlohmann::json::parse(body_text);
    const auto& rm = req["resourceMetrics"][0];
    bool host_attr = false;
    for (const auto& a : rm["resource"]["attributes"]) {
      if (a["key"] == "host.name") host_attr = a["value"]["stringValue"] == "e2e-node";
    }
    EXPECT_TRUE(host_attr);
    for (const auto& sm : rm["scopeMetrics"]) {
      for (const auto& m : sm["metrics"]) {
        if (m["name"] != "hw.gpu.utilization" || !m.contains("gauge")) continue;
        for (const auto& dp : m["gauge"]["dataPoints"]) {
          bool general = false;
          for (const auto& a : dp["attributes"]) {
            if (a["key"] == "hw.gpu.task") general = a["value"]["stringValue"] == "general";
          }
          if (general) {
            found_util = true;
            EXPECT_NEAR(dp["asDouble"].get<double>(), 0.97, 1e-9);
          }
        }
      }
    }
  }
  EXPECT_TRUE(found_util) << otlp_bodies_.back().substr(0, 2000);
}

// A simulated GPU process whose scenario pid is the pid of a real process of this machine (here a
// sleeping child): the agent reports the simulator's process (NVML's name), never the child, and
// the host source does not read the child's CPU and memory as a GPU process's.
TEST_F(AgentE2ETest, SimulatedPidsNeverResolveToRealProcesses) {
  auto child = ChildProcess::Start({"/bin/sleep", "600"}, tmp_.path());
  ASSERT_TRUE(child) << child.error().message();
  const std::string pid = std::to_string((*child)->pid());
  const std::string scenario = tmp_.path() + "/taken-pid.yaml";
  ASSERT_TRUE(base::WriteFile(scenario, R"(
name: taken-pid
driver: {version: "550.127.08", nvml_version: "12.550.127.08", cuda_version: 12040}
devices:
  - name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    memory_total: 80GiB
    signals: {gpu_util: 90}
    processes:
      - {pid: )" + pid + R"(, name: simtrainer, memory: 4GiB, sm_util: 80}
)")
                  .ok());
  auto agent = ChildProcess::Start({binary_, "agent", "--simulate", scenario, "--once",
                                    "--collect-metrics-interval=200ms", "--top-processes=0"},
                                   tmp_.path());
  ASSERT_TRUE(agent) << agent.error().message();
  int status = (*agent)->Wait(seconds(30));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << (*agent)->Stderr();
  const std::string body = (*agent)->Stdout();

  const std::string pid_label = "pid=\"" + pid + "\"";
  EXPECT_EQ(PromSample(body, "warpscope_gpu_process_memory_used_bytes",
                       {pid_label, "executable=\"simtrainer\""}),
            4.0 * (1 << 30))
      << body;
  EXPECT_EQ(
      PromSample(body, "warpscope_gpu_executable_memory_used_bytes", {"executable=\"simtrainer\""}),
      4.0 * (1 << 30));
  EXPECT_EQ(body.find("executable=\"sleep\""), std::string::npos) << body;
  // With --top-processes=0 the host source reports only processes of interest: none here.
  EXPECT_EQ(PromSample(body, "warpscope_host_process_resident_memory_bytes", {pid_label}),
            std::nullopt);
  EXPECT_EQ(body.find("warpscope_host_process_cpu_seconds_total{"), std::string::npos);
  EXPECT_TRUE(PromSample(body, "warpscope_host_memory_total_bytes").has_value());
}

// The simulated host side: a scenario process's CPU, RSS, threads, executable, command line,
// user and container come out of the agent's normal host path with the scenario's values, the
// host totals are the simulated host's, and no process of this machine appears, not even the one
// (a sleeping child) that holds the simulated pid here.
TEST_F(AgentE2ETest, SimulatedHostSideComesOutWithTheScenarioValues) {
  auto child = ChildProcess::Start({"/bin/sleep", "600"}, tmp_.path());
  ASSERT_TRUE(child) << child.error().message();
  const std::string sim_pid = std::to_string((*child)->pid());
  const std::string scenario = tmp_.path() + "/host-side.yaml";
  ASSERT_TRUE(base::WriteFile(scenario, R"(
name: host-side
driver: {version: "550.127.08", nvml_version: "12.550.127.08", cuda_version: 12040}
host: {cpus: 16, memory_total: 256GiB, memory_base: 16GiB}
devices:
  - name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    memory_total: 80GiB
    signals: {gpu_util: 25}
    processes:
      - pid: )" + sim_pid + R"(
        name: python3
        memory: 4GiB
        sm_util: 20
        host:
          exe: /opt/conda/bin/python3.10
          cmdline: [python3, train.py, --epochs=3]
          user: alice
          container_id: 4f3c0d6c8e5b2a1f9d7e6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f
          pod_uid: 1b4e28ba-2fa1-11d2-883f-0016d3cca427
          threads: 17
          rss: 3GiB
          cpu: 6
      - {pid: 4243, name: gpuonly, memory: 1GiB}
)")
                  .ok());
  const int port = PickFreePort();
  auto agent = ChildProcess::Start(
      {binary_, "agent", "--simulate", scenario, "--collect-metrics-interval=1s",
       "--export-metrics-interval=1s", "--listen-address=127.0.0.1:" + std::to_string(port),
       "--hostname=sim-host", "--top-processes=10",
       "--otlp-endpoint=http://127.0.0.1:" + std::to_string(otlp_port_)},
      tmp_.path());
  ASSERT_TRUE(agent) << agent.error().message();
  std::string body = WaitForMetrics(port, [](const std::string& b) {
    return b.find("warpscope_host_process_cpu_utilization_ratio{") != std::string::npos;
  });
  ASSERT_NE(body.find("warpscope_host_process_cpu_utilization_ratio{"), std::string::npos)
      << "agent stderr:\n"
      << (*agent)->Stderr();

  const std::string pid = "pid=\"" + sim_pid + "\"";
  const std::string exe = "executable=\"python3.10\"";
  // 6 of 16 CPUs; the tree follows the clock every 50 ms, on a 1 s interval.
  EXPECT_NEAR(*PromSample(body, "warpscope_host_process_cpu_utilization_ratio", {pid, exe}),
              6.0 / 16, 0.1)
      << body;
  EXPECT_GT(*PromSample(body, "warpscope_host_process_cpu_seconds_total", {pid, exe}), 3);
  EXPECT_EQ(PromSample(body, "warpscope_host_process_resident_memory_bytes", {pid}),
            3.0 * (1 << 30));
  EXPECT_EQ(PromSample(body, "warpscope_host_process_threads", {pid}), 17);
  EXPECT_EQ(PromSample(body, "warpscope_gpu_process_memory_used_bytes", {pid, exe}),
            4.0 * (1 << 30));
  // A process without a host side keeps NVML's name and has no host series.
  EXPECT_EQ(PromSample(body, "warpscope_gpu_process_memory_used_bytes",
                       {"pid=\"4243\"", "executable=\"gpuonly\""}),
            1.0 * (1 << 30));
  EXPECT_EQ(PromSample(body, "warpscope_host_process_threads", {"pid=\"4243\""}), std::nullopt);
  // The simulated host's totals, not this machine's.
  EXPECT_EQ(PromSample(body, "warpscope_host_cpus"), 16);
  EXPECT_EQ(PromSample(body, "warpscope_host_memory_total_bytes"), 256.0 * (1 << 30));
  EXPECT_EQ(PromSample(body, "warpscope_host_memory_used_bytes"), 19.0 * (1 << 30));
  EXPECT_EQ(PromSample(body, "warpscope_host_processes"), 1);
  // No real process leaks in: the only per-process series are the scenario's.
  size_t process_lines = 0;
  for (size_t pos = body.find("\nwarpscope_host_process_"); pos != std::string::npos;
       pos = body.find("\nwarpscope_host_process_", pos + 1)) {
    const std::string line = body.substr(pos + 1, body.find('\n', pos + 1) - pos - 1);
    if (line.find('{') == std::string::npos) continue;
    ++process_lines;
    EXPECT_NE(line.find(pid), std::string::npos) << line;
  }
  EXPECT_GE(process_lines, 5u);
  EXPECT_EQ(body.find("executable=\"warpscope\""), std::string::npos);
  EXPECT_EQ(body.find("executable=\"sleep\""), std::string::npos);

  int status = (*agent)->Signal(SIGTERM, seconds(10));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << (*agent)->Stderr();
  // The pushed frame carries the process's identity from the simulated host.
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::string> attrs;
  for (const std::string& body_text : otlp_bodies_) {
    nlohmann::json req = nlohmann::json::parse(body_text);
    for (const auto& sm : req["resourceMetrics"][0]["scopeMetrics"]) {
      for (const auto& m : sm["metrics"]) {
        if (m["name"] != "process.cpu.utilization" || !m.contains("gauge")) continue;
        for (const auto& dp : m["gauge"]["dataPoints"]) {
          for (const auto& a : dp["attributes"]) {
            if (a["value"].contains("stringValue")) {
              attrs[a["key"].get<std::string>()] = a["value"]["stringValue"].get<std::string>();
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(attrs["process.executable.name"], "python3.10");
  EXPECT_EQ(attrs["process.executable.path"], "/opt/conda/bin/python3.10");
  EXPECT_EQ(attrs["process.command_line"], "python3 train.py --epochs=3");
  EXPECT_EQ(attrs["process.owner"], "alice");
  EXPECT_EQ(attrs["container.id"],
            "4f3c0d6c8e5b2a1f9d7e6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f");
  EXPECT_EQ(attrs["k8s.pod.uid"], "1b4e28ba-2fa1-11d2-883f-0016d3cca427");
}

TEST_F(AgentE2ETest, BadFlagExitsWithAClearMessage) {
  auto agent =
      ChildProcess::Start({binary_, "agent", "--collect-metrics-interval=30"}, tmp_.path());
  ASSERT_TRUE(agent);
  int status = (*agent)->Wait(seconds(10));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE((*agent)->Stderr().find("--collect-metrics-interval"), std::string::npos);
}

TEST_F(AgentE2ETest, NoNvmlCarriesOnWithHostMetrics) {
  const int port = PickFreePort();
  auto agent = ChildProcess::Start(
      {binary_, "agent", "--enable-gpu-metrics", "--nvml-path=/nonexistent/libnvidia-ml.so.1",
       "--collect-metrics-interval=200ms", "--listen-address=127.0.0.1:" + std::to_string(port)},
      tmp_.path());
  ASSERT_TRUE(agent);
  std::string body = WaitForMetrics(port, [](const std::string& b) {
    return b.find("warpscope_host_memory_total_bytes") != std::string::npos;
  });
  EXPECT_EQ(PromSample(body, "warpscope_agent_source_up", {"source=\"nvml\""}), 0);
  EXPECT_EQ(PromSample(body, "warpscope_agent_source_up", {"source=\"procfs\""}), 1);
  EXPECT_EQ(body.find("DCGM_FI_DEV_GPU_UTIL"), std::string::npos);
  int status = (*agent)->Signal(SIGTERM, seconds(10));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n"
                                                             << (*agent)->Stderr();
  // One clear line about NVML, not one per cycle.
  std::string log = (*agent)->Stderr();
  size_t first = log.find("source nvml disabled");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("source nvml disabled", first + 1), std::string::npos);
}

// The CUDA runtime metrics on /metrics: fake_cuda_app (test/fakes/cupti, --memory) runs kernels,
// allocations, copies and a memset over the fake libcupti with libwarpscope_cupti.so injected,
// reporting to the real agent's --cuda-profiler socket; the agent's Prometheus endpoint shows
// them on the process with the values the application produced.
TEST_F(AgentE2ETest, CudaRuntimeMetricsAppearOnMetrics) {
  const std::string bin = std::string(WARPSCOPE_BINARY_DIR);
  const std::string socket = tmp_.path() + "/cupti.sock";
  const int port = PickFreePort();
  auto agent = ChildProcess::Start(
      {binary_, "agent", "--enable-gpu-metrics", "--nvml-path=/nonexistent/libnvidia-ml.so.1",
       "--cuda-profiler", "--cuda-profiler-socket=" + socket, "--cuda-profile-interval=1s",
       "--collect-metrics-interval=200ms", "--listen-address=127.0.0.1:" + std::to_string(port)},
      tmp_.path());
  ASSERT_TRUE(agent) << agent.error().message();
  // The application waits (at most 10 s) for `go` after its work, so the agent sees it alive.
  const std::string go = tmp_.path() + "/go";
  std::unique_ptr<ChildProcess> app;
  for (int attempt = 0; attempt < 100 && app == nullptr; ++attempt) {
    if (access(socket.c_str(), F_OK) != 0) {
      std::this_thread::sleep_for(milliseconds(50));  // bounded wait for the agent's socket
      continue;
    }
    auto started = ChildProcess::Start(
        {bin + "/bin/fake_cuda_app", "--threads", "1", "--launches", "5", "--memory",
         "--pause-file", go},
        tmp_.path(),
        {"CUDA_INJECTION64_PATH=" + bin + "/lib/libwarpscope_cupti.so",
         "WARPSCOPE_CUPTI_LIBRARY=" + bin + "/lib/libwarpscope_fake_cupti.so",
         "WARPSCOPE_AGENT_SOCKET=" + socket, "WARPSCOPE_CUPTI_FLUSH_MS=50",
         "WARPSCOPE_CUPTI_ACTIVITY_BUFFERS=64"});
    ASSERT_TRUE(started) << started.error().message();
    app = std::move(*started);
  }
  ASSERT_NE(app, nullptr) << "the agent did not create " << socket << ":\n" << (*agent)->Stderr();
  const std::string pid = "pid=\"" + std::to_string(app->pid()) + "\"";
  const std::string body = WaitForMetrics(port, [&](const std::string& b) {
    return PromSample(b, "warpscope_cuda_memory_allocated_bytes", {pid}).has_value() &&
           PromSample(b, "warpscope_cuda_memcpy_bytes_total", {pid, "direction=\"P2P\""}) &&
           PromSample(b, "warpscope_cuda_stream_busy_ratio", {pid}).has_value() &&
           PromSample(b, "warpscope_cuda_kernel_launches_total", {pid}).value_or(0) >= 10;
  });
  { std::ofstream(go) << "go"; }
  const int app_status = app->Wait(seconds(30));
  EXPECT_TRUE(WIFEXITED(app_status) && WEXITSTATUS(app_status) == 0) << app->Stderr();
  SCOPED_TRACE(body.substr(0, 20000));

  const std::string dev = "cuda_device=\"0\"";
  constexpr double kMiB = 1 << 20;
  // 5 launches of fake_gemm (5000 ns) and triton_softmax (1000 ns) on stream 7.
  EXPECT_EQ(PromSample(body, "warpscope_cuda_kernel_launches_total", {pid, dev}), 10);
  EXPECT_NEAR(*PromSample(body, "warpscope_cuda_kernel_seconds_total", {pid, dev}), 30000e-9,
              1e-12);
  const auto busy = PromSample(body, "warpscope_cuda_stream_busy_ratio", {pid, dev});
  ASSERT_TRUE(busy.has_value());
  EXPECT_GE(*busy, 0.0);
  EXPECT_LE(*busy, 1.0);
  // The copies and the memset of RuntimeMemoryWork, exact.
  EXPECT_EQ(PromSample(body, "warpscope_cuda_memcpy_bytes_total",
                       {pid, dev, "direction=\"H2D\""}),
            1 * kMiB);
  EXPECT_EQ(PromSample(body, "warpscope_cuda_memcpy_bytes_total",
                       {pid, dev, "direction=\"D2H\""}),
            256 * 1024);
  EXPECT_EQ(PromSample(body, "warpscope_cuda_memcpy_bytes_total",
                       {pid, dev, "direction=\"D2D\""}),
            2 * kMiB);
  EXPECT_EQ(PromSample(body, "warpscope_cuda_memcpy_bytes_total",
                       {pid, dev, "direction=\"P2P\""}),
            4 * kMiB);
  EXPECT_NEAR(*PromSample(body, "warpscope_cuda_memcpy_seconds_total",
                          {pid, dev, "direction=\"P2P\""}),
              800e-9, 1e-12);
  EXPECT_EQ(PromSample(body, "warpscope_cuda_memset_bytes_total", {pid, dev}), 1 * kMiB);
  // 64 + 16 MiB allocated on the device, 16 MiB released; 1 MiB of pinned host memory.
  const std::string device_kind = "kind=\"device\"";
  EXPECT_EQ(PromSample(body, "warpscope_cuda_memory_allocated_bytes", {pid, dev, device_kind}),
            64 * kMiB);
  EXPECT_EQ(PromSample(body, "warpscope_cuda_memory_allocations_total", {pid, dev, device_kind}),
            2);
  EXPECT_EQ(
      PromSample(body, "warpscope_cuda_memory_allocation_bytes_total", {pid, dev, device_kind}),
      80 * kMiB);
  EXPECT_EQ(PromSample(body, "warpscope_cuda_memory_releases_total", {pid, dev, device_kind}), 1);
  EXPECT_EQ(PromSample(body, "warpscope_cuda_memory_release_bytes_total", {pid, dev, device_kind}),
            16 * kMiB);
  EXPECT_EQ(
      PromSample(body, "warpscope_cuda_memory_allocated_bytes", {pid, dev, "kind=\"pinned\""}),
      1 * kMiB);
  EXPECT_NE(body.find("# TYPE warpscope_cuda_stream_busy_ratio gauge"), std::string::npos);

  int status = (*agent)->Signal(SIGTERM, seconds(10));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << (*agent)->Stderr();
}

}  // namespace
}  // namespace warpscope::test
