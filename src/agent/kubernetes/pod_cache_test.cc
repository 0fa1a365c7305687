// SPDX-License-Identifier: Apache-2.0
#include "agent/kubernetes/pod_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/kubernetes/pod_events.h"

namespace warpscope::agent::kubernetes {
namespace {

using ::testing::HasSubstr;

PodRecord Pod(std::string uid, std::string name,
              std::vector<std::pair<std::string, std::string>> containers = {}) {
  return PodRecord{std::move(uid), "ml", std::move(name), std::move(containers)};
}

TEST(PodCacheTest, LooksUpNamesByUidAndContainerId) {
  base::FakeClock clock;
  PodCache cache({}, clock);
  cache.Upsert(Pod("u1", "trainer-0", {{"c0ffee", "trainer"}, {"beef", "sidecar"}}));
  auto a = cache.Lookup("u1", "beef");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->pod_namespace, "ml");
  EXPECT_EQ(a->pod_name, "trainer-0");
  EXPECT_EQ(a->container_name, "sidecar");
  // An unknown container (not started when the status was written): the pod's names only.
  auto b = cache.Lookup("u1", "0000");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->pod_name, "trainer-0");
  EXPECT_EQ(b->container_name, "");
  EXPECT_FALSE(cache.Lookup("u2", "c0ffee"));
}

TEST(PodCacheTest, DeletedPodsLastTheGracePeriod) {
  base::FakeClock clock;
  PodCache cache({.max_pods = 10, .deleted_grace = std::chrono::seconds(30)}, clock);
  cache.Upsert(Pod("u1", "a"));
  cache.Remove("u1");
  EXPECT_EQ(cache.live_pods(), 0u);
  clock.Advance(std::chrono::seconds(29));
  EXPECT_TRUE(cache.Lookup("u1", ""));
  clock.Advance(std::chrono::seconds(2));
  EXPECT_FALSE(cache.Lookup("u1", ""));
  // Re-added (MODIFIED after a re-list): alive again.
  cache.Upsert(Pod("u1", "a"));
  EXPECT_TRUE(cache.Lookup("u1", ""));
}

TEST(PodCacheTest, ReplaceMarksUnlistedPodsDeleted) {
  base::FakeClock clock;
  PodCache cache({.max_pods = 10, .deleted_grace = std::chrono::seconds(5)}, clock);
  cache.Upsert(Pod("old", "gone"));
  cache.Replace({Pod("new", "fresh")});
  EXPECT_EQ(cache.live_pods(), 1u);
  EXPECT_TRUE(cache.Lookup("old", ""));  // within the grace
  clock.Advance(std::chrono::seconds(6));
  EXPECT_FALSE(cache.Lookup("old", ""));
  EXPECT_TRUE(cache.Lookup("new", ""));
}

TEST(PodCacheTest, IsBounded) {
  base::FakeClock clock;
  PodCache cache({.max_pods = 2, .deleted_grace = std::chrono::seconds(5)}, clock);
  cache.Upsert(Pod("a", "a"));
  cache.Upsert(Pod("b", "b"));
  cache.Upsert(Pod("c", "c"));
  EXPECT_FALSE(cache.Lookup("c", ""));
  EXPECT_EQ(cache.dropped_pods(), 1u);
  cache.Upsert(Pod("a", "a2"));  // an update of a kept pod still applies
  EXPECT_EQ(cache.Lookup("a", "")->pod_name, "a2");
}

TEST(PodEventsTest, StripsRuntimePrefixes) {
  EXPECT_EQ(StripRuntimePrefix("containerd://abc"), "abc");
  EXPECT_EQ(StripRuntimePrefix("docker://abc"), "abc");
  EXPECT_EQ(StripRuntimePrefix("cri-o://abc"), "abc");
  EXPECT_EQ(StripRuntimePrefix("abc"), "abc");
}

constexpr char kPodJson[] = R"({"metadata":{"uid":"u1","namespace":"ml","name":"trainer-0",
  "resourceVersion":"17"},"status":{
  "containerStatuses":[{"name":"trainer","containerID":"containerd://c0ffee"},
                       {"name":"waiting"}],
  "initContainerStatuses":[{"name":"init","containerID":"cri-o://1111"}]}})";

TEST(PodEventsTest, ParsesAPodList) {
  auto list = ParsePodList(std::string(R"({"kind":"PodList","metadata":{"resourceVersion":"42"},
      "items":[)") + kPodJson +
                           "]}");
  ASSERT_TRUE(list) << list.error().message();
  EXPECT_EQ(list->resource_version, "42");
  ASSERT_EQ(list->pods.size(), 1u);
  const PodRecord& p = list->pods[0];
  EXPECT_EQ(p.uid, "u1");
  EXPECT_EQ(p.pod_namespace, "ml");
  EXPECT_EQ(p.name, "trainer-0");
  using Pair = std::pair<std::string, std::string>;
  EXPECT_THAT(p.containers,
              ::testing::ElementsAre(Pair{"c0ffee", "trainer"}, Pair{"1111", "init"}));
}

TEST(PodEventsTest, ParsesWatchEvents) {
  auto added = ParseWatchEvent(std::string(R"({"type":"ADDED","object":)") + kPodJson + "}");
  ASSERT_TRUE(added) << added.error().message();
  EXPECT_EQ(added->type, WatchEvent::Type::kAdded);
  EXPECT_EQ(added->resource_version, "17");
  EXPECT_EQ(added->pod.name, "trainer-0");

  auto bookmark = ParseWatchEvent(
      R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"99"}}})");
  ASSERT_TRUE(bookmark);
  EXPECT_EQ(bookmark->type, WatchEvent::Type::kBookmark);
  EXPECT_EQ(bookmark->resource_version, "99");

  auto gone = ParseWatchEvent(
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old"}})");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->type, WatchEvent::Type::kError);
  EXPECT_EQ(gone->error_code, 410);
  EXPECT_EQ(gone->error_message, "too old");
}

TEST(PodEventsTest, RejectsBadInputWithAReason) {
  EXPECT_THAT(ParseWatchEvent("{not json").error().message(), HasSubstr("not a JSON object"));
  EXPECT_THAT(ParseWatchEvent(R"({"type":"ADDED"})").error().message(),
              HasSubstr("without an object"));
  EXPECT_THAT(ParseWatchEvent(R"({"type":"RENAMED","object":{}})").error().message(),
              HasSubstr("unknown type 'RENAMED'"));
  EXPECT_THAT(
      ParseWatchEvent(R"({"type":"ADDED","object":{"metadata":{"name":"x"}}})").error().message(),
      HasSubstr("without metadata.uid"));
  EXPECT_THAT(ParsePodList(R"({"kind":"Status"})").error().message(), HasSubstr("PodList"));
}

}  // namespace
}  // namespace warpscope::agent::kubernetes
