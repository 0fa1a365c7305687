// SPDX-License-Identifier: Apache-2.0
#include "model/process.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "model/testing/fake_process_resolver.h"

namespace warpscope::model {
namespace {

ProcessInfo Trainer() {
  ProcessInfo p;
  p.pid = 4242;
  p.container_pid = 7;
  p.start_ticks = 123456;
  p.executable = "python3";
  p.executable_path = "/usr/bin/python3.11";
  p.command_line = "python3 train.py";
  p.user = "alice";
  p.container_id = std::string(64, 'a');
  p.pod_uid = "pod-1";
  return p;
}

TEST(ProcessEntityTest, APidAndItsStartTimeNameTheProcess) {
  ProcessInfo p = Trainer();
  EXPECT_EQ(ProcessEntityId(p), "pid/4242/123456");
  ProcessInfo reused = p;
  reused.start_ticks = 999999;  // the same pid, another process
  EXPECT_NE(ProcessEntityId(reused), ProcessEntityId(p));
}

TEST(ProcessEntityTest, EntitiesCarryTheAttributionAttributes) {
  ProcessInfo p = Trainer();
  Entity e = MakeProcessEntity(p);
  EXPECT_EQ(e.kind, EntityKind::kProcess);
  EXPECT_EQ(e.parent, ContainerEntityId(p));
  EXPECT_EQ(e.attributes.Get(attr::kPid), "4242");
  EXPECT_EQ(e.attributes.Get(attr::kNsPid), "7");
  EXPECT_EQ(e.attributes.Get(attr::kExecutable), "python3");
  EXPECT_EQ(e.attributes.Get(attr::kPodUid), "pod-1");
  EXPECT_EQ(MakeExecutableEntity(p).id, "exe//usr/bin/python3.11");
  EXPECT_EQ(MakeContainerEntity(p).id, "ctr/" + p.container_id);

  ProcessInfo host = p;
  host.container_id.clear();
  host.container_pid = host.pid;
  Entity on_host = MakeProcessEntity(host);
  EXPECT_EQ(on_host.parent, "");
  EXPECT_EQ(on_host.attributes.Get(attr::kNsPid), "");
}

TEST(ProcessEntityTest, AKnownStartTimeIsAnIso8601UtcAttribute) {
  ProcessInfo p = Trainer();
  EXPECT_EQ(MakeProcessEntity(p).attributes.Get(attr::kCreationTime), "");  // not known
  p.start_time_ms = 1717003000120;
  EXPECT_EQ(MakeProcessEntity(p).attributes.Get(attr::kCreationTime), "2024-05-29T17:16:40.120Z");
}

TEST(ProcessEntityTest, AnEntityIdParsesBackToItsIdentity) {
  ProcessInfo p = Trainer();
  std::optional<ProcessIdentity> identity = ParseProcessEntityId(ProcessEntityId(p));
  ASSERT_TRUE(identity.has_value());
  EXPECT_EQ(identity->pid, 4242);
  EXPECT_EQ(identity->start_ticks, 123456u);
  EXPECT_TRUE(identity->known());
  std::optional<ProcessIdentity> unknown = ParseProcessEntityId("pid/77/0");
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->pid, 77);
  EXPECT_FALSE(unknown->known());
}

TEST(ProcessEntityTest, OtherIdsAreNoProcessIdentity) {
  for (std::string_view id :
       {"", "pid/", "pid/12", "pid/12/", "pid//5", "pid/0/5", "pid/-3/5", "pid/12/5x", "pid/12/5/1",
        "exe//usr/bin/python3", "GPU-1234", "pid/99999999999999999999/1"}) {
    EXPECT_FALSE(ParseProcessEntityId(id).has_value()) << id;
  }
}

TEST(ProcessEntityTest, TheNoResolverResolvesNothing) {
  NoProcessResolver resolver;
  EXPECT_EQ(resolver.Resolve(1), nullptr);
  EXPECT_EQ(resolver.Resolve(getpid()), nullptr);  // not even a process that exists
}

TEST(ProcessEntityTest, TheFakeResolverAnswersFromItsTable) {
  FakeProcessResolver resolver;
  resolver.Add(Trainer());
  ASSERT_NE(resolver.Resolve(4242), nullptr);
  EXPECT_EQ(resolver.Resolve(4242)->executable, "python3");
  EXPECT_EQ(resolver.Resolve(1), nullptr);
}

}  // namespace
}  // namespace warpscope::model
