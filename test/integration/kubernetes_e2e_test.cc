// SPDX-License-Identifier: Apache-2.0
// The real `warpscope agent --simulate ... --kubeconfig ...` against a fake Kubernetes API
// server: the simulated process's pod UID and container id (from its cgroup in the simulated
// /proc) are named, and its /metrics series carry namespace, pod and container.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>

#include <mutex>
#include <thread>

#include "agent/kubernetes/testing/fake_api_server.h"
#include "base/file_util.h"
#include "child_process.h"
#include "scrape.h"

namespace warpscope::test {
namespace {

namespace k8s = agent::kubernetes::testing;

constexpr char kPodUid[] = "1b4e28ba-2fa1-11d2-883f-0016d3cca427";
constexpr char kContainerId[] = "4f3c0d6c8e5b2a1f9d7e6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f";

TEST(KubernetesE2ETest, GpuProcessSeriesCarryTheirPodNames) {
  k8s::FakeApiServer api;
  api.set_node("gpu-node-7");
  api.AddList(nlohmann::json::array(
                  {k8s::PodJson(kPodUid, "trainer-0", {{kContainerId, "trainer"}}, "ml-team"),
                   k8s::PodJson("00000000-0000-0000-0000-000000000001", "other-0")}),
              "500");

  TempDir tmp;
  const std::string kubeconfig = tmp.path() + "/kubeconfig";
  ASSERT_TRUE(base::WriteFile(kubeconfig, fmt::format(R"(
current-context: test
contexts: [{{name: test, context: {{cluster: fake, user: agent}}}}]
clusters: [{{name: fake, cluster: {{server: "http://127.0.0.1:{}"}}}}]
users: [{{name: agent, user: {{token: test-token}}}}]
)",
                                                      api.port()))
                  .ok());
  // An OTLP receiver: the entity attributes travel with the pushed windows.
  httplib::Server otlp;
  std::mutex otlp_mu;
  std::vector<std::string> otlp_bodies;
  otlp.Post("/v1/metrics", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(otlp_mu);
    otlp_bodies.push_back(req.body);
    res.set_content("{}", "application/json");
  });
  const int otlp_port = otlp.bind_to_any_port("127.0.0.1");
  std::thread otlp_thread([&] { otlp.listen_after_bind(); });

  const int port = PickFreePort();
  auto agent = ChildProcess::Start(
      {WarpscopeBinary(), "agent", "--simulate",
       std::string(WARPSCOPE_SOURCE_DIR) + "/test/data/kubernetes/pod-process.yaml",
       "--collect-metrics-interval=200ms", "--export-metrics-interval=1s",
       "--listen-address=127.0.0.1:" + std::to_string(port), "--hostname=e2e-node", "--kubeconfig",
       kubeconfig, "--otlp-endpoint=http://127.0.0.1:" + std::to_string(otlp_port)},
      tmp.path(), {"NODE_NAME=gpu-node-7"});
  ASSERT_TRUE(agent) << agent.error().message();

  const std::string body = WaitForHttp(port, "/metrics", [](const std::string& b) {
    return b.find("pod=\"trainer-0\"") != std::string::npos &&
           b.find("warpscope_gpu_process_memory_used_bytes{") != std::string::npos;
  });
  ASSERT_NE(body.find("pod=\"trainer-0\""), std::string::npos) << "agent stderr:\n"
                                                               << (*agent)->Stderr();
  EXPECT_EQ(PromSample(body, "warpscope_gpu_process_memory_used_bytes",
                       {"pid=\"5150\"", "pod_uid=\"" + std::string(kPodUid) + "\"",
                        "namespace=\"ml-team\"", "pod=\"trainer-0\"", "container=\"trainer\""}),
            8.0 * (1 << 30));
  // The host's process has no pod labels.
  const size_t tool = body.find("pid=\"5160\"");
  ASSERT_NE(tool, std::string::npos);
  const std::string tool_line = body.substr(tool, body.find('\n', tool) - tool);
  EXPECT_EQ(tool_line.find("pod="), std::string::npos) << tool_line;
  // The directory's self-metrics; the node came from NODE_NAME.
  EXPECT_EQ(PromSample(body, "warpscope_agent_kubernetes_pods"), 2);
  EXPECT_EQ(PromSample(body, "warpscope_agent_kubernetes_synced"), 1);
  EXPECT_TRUE(api.bad_selectors().empty());

  const int status = (*agent)->Signal(SIGTERM, std::chrono::seconds(10));
  ASSERT_TRUE(WIFEXITED(status)) << (*agent)->Stderr();
  EXPECT_EQ(WEXITSTATUS(status), 0);
  otlp.stop();
  otlp_thread.join();
  std::lock_guard lock(otlp_mu);
  ASSERT_FALSE(otlp_bodies.empty()) << "the final window is pushed at SIGTERM";
  bool named = false;
  for (const std::string& b : otlp_bodies) {
    named = named || (b.find("\"k8s.pod.name\"") != std::string::npos &&
                      b.find("\"trainer-0\"") != std::string::npos &&
                      b.find("\"k8s.namespace.name\"") != std::string::npos &&
                      b.find("\"k8s.container.name\"") != std::string::npos);
  }
  EXPECT_TRUE(named) << otlp_bodies.back().substr(0, 2000);
}

TEST(KubernetesE2ETest, ABadKubeconfigStopsTheAgentWithTheReason) {
  TempDir tmp;
  const std::string kubeconfig = tmp.path() + "/kubeconfig";
  ASSERT_TRUE(base::WriteFile(kubeconfig, "clusters: []\n").ok());
  auto agent = ChildProcess::Start(
      {WarpscopeBinary(), "agent", "--simulate",
       std::string(WARPSCOPE_SOURCE_DIR) + "/test/data/kubernetes/pod-process.yaml",
       "--listen-address=off", "--kubeconfig", kubeconfig},
      tmp.path());
  ASSERT_TRUE(agent) << agent.error().message();
  const int status = (*agent)->Wait(std::chrono::seconds(20));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE((*agent)->Stderr().find("no current-context"), std::string::npos) << (*agent)->Stderr();
}

}  // namespace
}  // namespace warpscope::test
