// SPDX-License-Identifier: Apache-2.0
#include "cli/agent_flags.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace warpscope::cli {
namespace {

using std::chrono::seconds;

// Parses `args` (after the program name) for the agent subcommand.
base::Status Parse(std::vector<std::string> args, agent::AgentConfig& config) {
  CLI::App app("test");
  auto* sub = app.add_subcommand("agent");
  AgentFlags flags;
  flags.Register(*sub);
  args.insert(args.begin(), "agent");
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return base::InvalidArgument("{}", e.what());
  }
  return flags.Finish(config);
}

TEST(AgentFlagsTest, DefaultsMatchTheProductBrief) {
  agent::AgentConfig c;
  ASSERT_TRUE(Parse({}, c).ok());
  EXPECT_FALSE(c.enable_gpu_metrics);
  EXPECT_TRUE(c.enable_host_metrics);
  EXPECT_EQ(c.collect_interval, seconds(30));
  EXPECT_EQ(c.export_interval, seconds(60));
  EXPECT_EQ(c.prometheus_listen_address, "127.0.0.1:9400");
}

TEST(AgentFlagsTest, ParsesDurationsAndBooleans) {
  agent::AgentConfig c;
  ASSERT_TRUE(Parse({"--enable-gpu-metrics", "--enable-host-metrics=false",
                     "--collect-metrics-interval", "5s", "--export-metrics-interval=2m"},
                    c)
                  .ok());
  EXPECT_TRUE(c.enable_gpu_metrics);
  EXPECT_FALSE(c.enable_host_metrics);
  EXPECT_EQ(c.collect_interval, seconds(5));
  EXPECT_EQ(c.export_interval, seconds(120));
}

TEST(AgentFlagsTest, InferenceMetricsAndTargets) {
  agent::AgentConfig c;
  ASSERT_TRUE(Parse({}, c).ok());
  EXPECT_TRUE(c.enable_inference_metrics);
  ASSERT_TRUE(Parse({"--enable-inference-metrics=false", "--inference-targets",
                     "http://10.0.0.5:8000/metrics,engine=vllm", "--inference-targets",
                     "http://127.0.0.1:30000/metrics"},
                    c)
                  .ok());
  EXPECT_FALSE(c.enable_inference_metrics);
  EXPECT_EQ(c.inference_targets.size(), 2u);
  base::Status bad = Parse({"--inference-targets", "http://h:1/metrics,engine=triton"}, c);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("unknown engine 'triton'"), std::string::npos);
}

TEST(AgentFlagsTest, BadDurationNamesTheFlag) {
  agent::AgentConfig c;
  base::Status s = Parse({"--collect-metrics-interval=30"}, c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--collect-metrics-interval"), std::string::npos);
  EXPECT_NE(s.message().find("missing unit"), std::string::npos);
}

TEST(AgentFlagsTest, SimulateImpliesGpuMetrics) {
  agent::AgentConfig c;
  ASSERT_TRUE(Parse({"--simulate", "healthy-8xh100"}, c).ok());
  EXPECT_TRUE(c.enable_gpu_metrics);
  EXPECT_EQ(c.simulate, "healthy-8xh100");
}

TEST(AgentFlagsTest, EnvironmentTwinAppliesAndFlagWins) {
  setenv("WARPSCOPE_COLLECT_METRICS_INTERVAL", "10s", 1);
  agent::AgentConfig c;
  ASSERT_TRUE(Parse({}, c).ok());
  EXPECT_EQ(c.collect_interval, seconds(10));
  ASSERT_TRUE(Parse({"--collect-metrics-interval=20s"}, c).ok());
  EXPECT_EQ(c.collect_interval, seconds(20));
  unsetenv("WARPSCOPE_COLLECT_METRICS_INTERVAL");
}

TEST(AgentFlagsTest, ListenAddressOffDisablesTheEndpoint) {
  agent::AgentConfig c;
  ASSERT_TRUE(Parse({"--listen-address=off"}, c).ok());
  EXPECT_EQ(c.prometheus_listen_address, "");
}

TEST(AgentFlagsTest, TagsAndHeaders) {
  agent::AgentConfig c;
  ASSERT_TRUE(Parse({"--tags", "team:ml;zone:a", "--otlp-header", "X-Token=abc"}, c).ok());
  ASSERT_EQ(c.tags.size(), 2u);
  ASSERT_EQ(c.otlp_headers.size(), 1u);
  EXPECT_EQ(c.otlp_headers[0].second, "abc");
  EXPECT_FALSE(Parse({"--otlp-header", "novalue"}, c).ok());
}

TEST(AgentFlagsTest, CudaProfilerIsOffByDefault) {
  agent::AgentConfig c;
  ASSERT_TRUE(Parse({}, c).ok());
  EXPECT_FALSE(c.enable_cuda_profiler);
  EXPECT_EQ(c.cuda_profile_interval, seconds(60));
  EXPECT_FALSE(c.cuda_profiler_rate.has_value());
  EXPECT_FALSE(c.cuda_pc_sampling);
}

TEST(AgentFlagsTest, CudaProfileTraceFormatIsPerfettoUnlessChromeIsChosen) {
  agent::AgentConfig c;
  ASSERT_TRUE(Parse({}, c).ok());
  EXPECT_EQ(c.cuda_profile_trace_format, "perfetto");
  ASSERT_TRUE(Parse({"--cuda-profile-trace-format=chrome"}, c).ok());
  EXPECT_EQ(c.cuda_profile_trace_format, "chrome");
  base::Status bad = Parse({"--cuda-profile-trace-format=json"}, c);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("--cuda-profile-trace-format=json: want perfetto"),
            std::string::npos)
      << bad.message();
}

TEST(AgentFlagsTest, CudaProfilerFlags) {
  agent::AgentConfig c;
  ASSERT_TRUE(Parse({"--cuda-profiler", "--cuda-profiler-socket", "/tmp/x/cupti.sock",
                     "--cuda-profile-interval", "10s", "--cuda-profile-dir", "/tmp/profiles",
                     "--cuda-profiler-rate", "0", "--cuda-pc-sampling"},
                    c)
                  .ok());
  EXPECT_TRUE(c.enable_cuda_profiler);
  EXPECT_EQ(c.cuda_profiler_socket, "/tmp/x/cupti.sock");
  EXPECT_EQ(c.cuda_profile_interval, seconds(10));
  EXPECT_EQ(c.cuda_profile_dir, "/tmp/profiles");
  ASSERT_TRUE(c.cuda_profiler_rate.has_value());
  EXPECT_EQ(*c.cuda_profiler_rate, 0u);
  EXPECT_TRUE(c.cuda_pc_sampling);
}

TEST(AgentFlagsTest, CudaProfilerFlagsAreValidated) {
  agent::AgentConfig c;
  EXPECT_FALSE(Parse({"--cuda-profiler", "--cuda-profile-interval", "100ms"}, c).ok());
  EXPECT_FALSE(Parse({"--cuda-profiler", "--cuda-profiler-rate", "-5"}, c).ok());
  base::Status needs = Parse({"--cuda-profile-dir", "/tmp/profiles"}, c);
  EXPECT_FALSE(needs.ok());
  EXPECT_NE(needs.message().find("--cuda-profiler"), std::string::npos);
  // The profiler alone is something to collect.
  EXPECT_TRUE(Parse({"--cuda-profiler", "--enable-host-metrics=false"}, c).ok());
}

TEST(AgentFlagsTest, CpuProfilerIsOffByDefault) {
  agent::AgentConfig c;
  ASSERT_TRUE(Parse({}, c).ok());
  EXPECT_FALSE(c.enable_cpu_profiler);
  EXPECT_EQ(c.cpu_profile_frequency, 19u);
  EXPECT_EQ(c.cpu_profile_interval, seconds(60));
  EXPECT_EQ(c.cpu_profile_stack_bytes, 16384u);
  EXPECT_TRUE(c.cpu_profile_pids.empty());
  EXPECT_FALSE(c.cpu_profile_gpu_processes);
}

TEST(AgentFlagsTest, CpuProfilerFlags) {
  agent::AgentConfig c;
  ASSERT_TRUE(Parse({"--enable-cpu-profiler", "--cpu-profile-frequency", "99", "--cpu-profile-pids",
                     "12,34", "--cpu-profile-interval", "10s", "--cpu-profile-dir", "/tmp/cpu",
                     "--cpu-profile-stack-bytes", "8192", "--enable-gpu-metrics",
                     "--cpu-profile-gpu-processes"},
                    c)
                  .ok());
  EXPECT_TRUE(c.enable_cpu_profiler);
  EXPECT_EQ(c.cpu_profile_frequency, 99u);
  EXPECT_EQ(c.cpu_profile_pids, (std::vector<uint32_t>{12, 34}));
  EXPECT_EQ(c.cpu_profile_interval, seconds(10));
  EXPECT_EQ(c.cpu_profile_dir, "/tmp/cpu");
  EXPECT_EQ(c.cpu_profile_stack_bytes, 8192u);
  EXPECT_TRUE(c.cpu_profile_gpu_processes);
}

TEST(AgentFlagsTest, CpuProfilerFlagsAreValidated) {
  agent::AgentConfig c;
  EXPECT_FALSE(Parse({"--enable-cpu-profiler", "--cpu-profile-frequency", "0"}, c).ok());
  EXPECT_FALSE(Parse({"--enable-cpu-profiler", "--cpu-profile-frequency", "5000"}, c).ok());
  EXPECT_FALSE(Parse({"--enable-cpu-profiler", "--cpu-profile-stack-bytes", "100"}, c).ok());
  EXPECT_FALSE(Parse({"--enable-cpu-profiler", "--cpu-profile-stack-bytes", "1001"}, c).ok());
  EXPECT_FALSE(Parse({"--enable-cpu-profiler", "--cpu-profile-stack-bytes", "65536"}, c).ok());
  EXPECT_FALSE(Parse({"--enable-cpu-profiler", "--cpu-profile-pids", "1,x"}, c).ok());
  EXPECT_FALSE(Parse({"--enable-cpu-profiler", "--cpu-profile-pids", "1,,2"}, c).ok());
  EXPECT_FALSE(Parse({"--enable-cpu-profiler", "--cpu-profile-interval", "100ms"}, c).ok());
  base::Status gpu = Parse({"--enable-cpu-profiler", "--cpu-profile-gpu-processes"}, c);
  EXPECT_FALSE(gpu.ok());
  EXPECT_NE(gpu.message().find("--enable-gpu-metrics"), std::string::npos);
  base::Status needs = Parse({"--cpu-profile-dir", "/tmp/cpu"}, c);
  EXPECT_FALSE(needs.ok());
  EXPECT_NE(needs.message().find("--enable-cpu-profiler"), std::string::npos);
  EXPECT_TRUE(Parse({"--enable-cpu-profiler", "--enable-host-metrics=false"}, c).ok())
      << "the profiler alone is something to collect";
}

TEST(AgentFlagsTest, CudaProfilerSocketSharesTheApplicationsVariable) {
  setenv("WARPSCOPE_AGENT_SOCKET", "/tmp/shared/cupti.sock", 1);
  agent::AgentConfig c;
  ASSERT_TRUE(Parse({}, c).ok()) << "the variable alone does not need --cuda-profiler";
  EXPECT_EQ(c.cuda_profiler_socket, "/tmp/shared/cupti.sock");
  unsetenv("WARPSCOPE_AGENT_SOCKET");
}

TEST(AgentFlagsTest, KubernetesIsOffByDefault) {
  unsetenv("NODE_NAME");
  agent::AgentConfig c;
  ASSERT_TRUE(Parse({}, c).ok());
  EXPECT_FALSE(c.kubernetes);
  EXPECT_TRUE(c.kubeconfig.empty());
  EXPECT_TRUE(c.kubernetes_node.empty()) << "the agent falls back to the host name";
}

TEST(AgentFlagsTest, KubeconfigImpliesKubernetes) {
  agent::AgentConfig c;
  ASSERT_TRUE(Parse({"--kubeconfig", "/etc/kube/config"}, c).ok());
  EXPECT_TRUE(c.kubernetes);
  EXPECT_EQ(c.kubeconfig, "/etc/kube/config");
}

TEST(AgentFlagsTest, KubernetesNodeDefaultsToNodeNameAndTheFlagWins) {
  setenv("NODE_NAME", "gpu-node-3", 1);
  setenv("WARPSCOPE_KUBERNETES", "true", 1);
  agent::AgentConfig c;
  ASSERT_TRUE(Parse({}, c).ok());
  EXPECT_TRUE(c.kubernetes) << "the environment twin";
  EXPECT_EQ(c.kubernetes_node, "gpu-node-3") << "the downward API's spec.nodeName";
  ASSERT_TRUE(Parse({"--kubernetes-node=other"}, c).ok());
  EXPECT_EQ(c.kubernetes_node, "other");
  unsetenv("WARPSCOPE_KUBERNETES");
  unsetenv("NODE_NAME");
}

}  // namespace
}  // namespace warpscope::cli
