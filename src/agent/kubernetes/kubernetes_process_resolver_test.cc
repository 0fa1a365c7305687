// SPDX-License-Identifier: Apache-2.0
#include "agent/kubernetes/kubernetes_process_resolver.h"

#include <gtest/gtest.h>

#include <map>

namespace warpscope::agent::kubernetes {
namespace {

// A resolver over a fixed table, counting BeginCycle calls.
class TableResolver : public model::ProcessResolver {
 public:
  const model::ProcessInfo* Resolve(int pid) override {
    auto it = table.find(pid);
    return it == table.end() ? nullptr : &it->second;
  }
  void BeginCycle() override { ++cycles; }
  std::map<int, model::ProcessInfo> table;
  int cycles = 0;
};

class KubernetesProcessResolverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model::ProcessInfo in_pod;
    in_pod.pid = 10;
    in_pod.executable = "python3";
    in_pod.pod_uid = "u1";
    in_pod.container_id = "c0ffee";
    inner_->table[10] = in_pod;
    model::ProcessInfo host;
    host.pid = 20;
    inner_->table[20] = host;
    model::ProcessInfo unknown_pod;
    unknown_pod.pid = 30;
    unknown_pod.pod_uid = "u-unknown";
    inner_->table[30] = unknown_pod;
  }
  base::FakeClock clock_;
  std::shared_ptr<PodCache> cache_ = std::make_shared<PodCache>(PodCache::Options{}, clock_);
  std::shared_ptr<TableResolver> inner_ = std::make_shared<TableResolver>();
  KubernetesProcessResolver resolver_{inner_, cache_};
};

TEST_F(KubernetesProcessResolverTest, FillsPodNamesFromTheCache) {
  cache_->Upsert(PodRecord{"u1", "ml", "trainer-0", {{"c0ffee", "trainer"}}});
  const model::ProcessInfo* p = resolver_.Resolve(10);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->executable, "python3");
  EXPECT_EQ(p->pod_uid, "u1");
  EXPECT_EQ(p->pod_namespace, "ml");
  EXPECT_EQ(p->pod_name, "trainer-0");
  EXPECT_EQ(p->container_name, "trainer");
  // The entity carries the OpenTelemetry attributes.
  model::Entity e = model::MakeProcessEntity(*p);
  EXPECT_EQ(e.attributes.Get(model::attr::kPodName), "trainer-0");
  EXPECT_EQ(e.attributes.Get(model::attr::kPodNamespace), "ml");
  EXPECT_EQ(e.attributes.Get(model::attr::kContainerName), "trainer");
}

TEST_F(KubernetesProcessResolverTest, PassesOtherProcessesThrough) {
  EXPECT_EQ(resolver_.Resolve(20), &inner_->table[20]);  // not in a pod
  EXPECT_EQ(resolver_.Resolve(30), &inner_->table[30]);  // pod not known (yet)
  EXPECT_EQ(resolver_.Resolve(99), nullptr);             // gone
}

TEST_F(KubernetesProcessResolverTest, APodLearnedLaterNamesTheProcessNextCycle) {
  EXPECT_TRUE(resolver_.Resolve(10)->pod_name.empty());
  cache_->Upsert(PodRecord{"u1", "ml", "trainer-0", {}});
  resolver_.BeginCycle();
  EXPECT_EQ(inner_->cycles, 1);
  EXPECT_EQ(resolver_.Resolve(10)->pod_name, "trainer-0");
  EXPECT_EQ(resolver_.Resolve(10)->container_name, "");
}

}  // namespace
}  // namespace warpscope::agent::kubernetes
