// SPDX-License-Identifier: Apache-2.0
#include "server/query/profiles.h"

#include <gtest/gtest.h>

#include "profiling/pprof.h"
#include "server/query/testing/query_fixture.h"

namespace warpscope::server::query {
namespace {

// main -> work (`work` samples, 1 ms each) and main -> idle, labelled by `device`.
std::string CpuPprof(int64_t work, int64_t idle, int64_t device) {
  profiling::ProfileAggregator p(
      std::vector<profiling::ValueType>{{"samples", "count"}, {"cpu", "nanoseconds"}});
  uint32_t main = p.InternFrame({"main", "main.cc", 1});
  const int64_t w[] = {work, work * 1'000'000};
  const int64_t i[] = {idle, idle * 1'000'000};
  const std::vector<profiling::Label> labels{{"device", "", device}};
  p.Add(std::vector<uint32_t>{main, p.InternFrame({"work", "work.cc", 2})}, w, labels);
  p.Add(std::vector<uint32_t>{main, p.InternFrame({"idle", "main.cc", 3})}, i, labels);
  return profiling::EncodePprof(p.profile()).value();
}

using profiling::Frame;
using profiling::FrameKind;

// What the CPU profiler writes for one process: python3 -> train.py:step -> at::add ->
// do_syscall_64, `main_ms` ms on thread 100 "python3" and `loader_ms` ms of python3 ->
// loader.py:next on thread 101 "DataLoader".
std::string ThreadedCpuPprof(int64_t main_ms, int64_t loader_ms) {
  profiling::ProfileAggregator p(
      std::vector<profiling::ValueType>{{"samples", "count"}, {"cpu", "nanoseconds"}});
  const uint32_t process =
      p.InternFrame({"python3", "/usr/bin/python3", 0, "", "", "", FrameKind::kProcess});
  const uint32_t step = p.InternFrame({"step", "train.py", 3, "", "", "", FrameKind::kPython});
  const uint32_t add =
      p.InternFrame({"at::add", "", 0, "", "/usr/lib/libtorch_cpu.so", "", FrameKind::kNative});
  const uint32_t sys =
      p.InternFrame({"do_syscall_64", "", 0, "", "[kernel.kallsyms]", "", FrameKind::kOsKernel});
  const uint32_t next = p.InternFrame({"next", "loader.py", 9, "", "", "", FrameKind::kPython});
  const int64_t m[] = {main_ms, main_ms * 1'000'000};
  const int64_t l[] = {loader_ms, loader_ms * 1'000'000};
  p.Add(std::vector<uint32_t>{process, step, add, sys}, m,
        std::vector<profiling::Label>{{"tid", "", 100}, {"thread_name", "python3", 0}});
  p.Add(std::vector<uint32_t>{process, next}, l,
        std::vector<profiling::Label>{{"tid", "", 101}, {"thread_name", "DataLoader", 0}});
  return profiling::EncodePprof(p.profile()).value();
}

// What the CUDA profiler writes for the same process: python3 -> train.py:step ->
// cudaLaunchKernel -> gemm -> [sass] -> [stall], `gpu_ms` ms of GPU time, 3 launches.
std::string GpuPprof(int64_t gpu_ms) {
  profiling::ProfileAggregator p(std::vector<profiling::ValueType>{
      {"gpu_time", "nanoseconds"}, {"launches", "count"}, {"pc_samples", "count"}});
  std::vector<uint32_t> stack = {
      p.InternFrame({"python3", "/usr/bin/python3", 0, "", "", "", FrameKind::kProcess}),
      p.InternFrame({"step", "train.py", 3, "", "", "", FrameKind::kPython}),
      p.InternFrame({"cudaLaunchKernel", "", 0, "", "", "", FrameKind::kLaunch}),
      p.InternFrame({"gemm", "", 0, "", "", "", FrameKind::kKernel})};
  const int64_t k[] = {gpu_ms * 1'000'000, 3, 0};
  p.Add(stack, k, std::vector<profiling::Label>{{"device", "", 0}});
  stack.push_back(p.InternFrame({"[sass] 0x10 FFMA", "", 0, "", "", "", FrameKind::kSass}));
  stack.push_back(p.InternFrame({"[stall] long_scoreboard", "", 0, "", "", "", FrameKind::kStall}));
  const int64_t pc[] = {0, 0, 5};
  p.Add(stack, pc, std::vector<profiling::Label>{{"pid", "", 42}});
  return profiling::EncodePprof(p.profile()).value();
}

// A labelled GPU profile of pid 42, `scale` times these GPU ns: gemm on device 0 stream 7 in
// NVTX "forward" (40), gemm on device 1 stream 8 in "forward" (20), relu on device 0 stream 8
// in "backward" (30), and an unsampled relu on device 1 stream 7 without a range (10).
std::string LabelledGpuPprof(int64_t scale) {
  profiling::ProfileAggregator p(std::vector<profiling::ValueType>{
      {"gpu_time", "nanoseconds"}, {"launches", "count"}, {"pc_samples", "count"}});
  const uint32_t process =
      p.InternFrame({"python3", "/usr/bin/python3", 0, "", "", "", FrameKind::kProcess});
  const uint32_t launch =
      p.InternFrame({"cudaLaunchKernel", "", 0, "", "", "", FrameKind::kLaunch});
  const uint32_t gemm = p.InternFrame({"gemm", "", 0, "", "", "", FrameKind::kKernel});
  const uint32_t relu = p.InternFrame({"relu", "", 0, "", "", "", FrameKind::kKernel});
  const uint32_t unsampled =
      p.InternFrame({"[unsampled launch site]", "", 0, "", "", "", FrameKind::kMarker});
  auto add = [&](std::vector<uint32_t> stack, int64_t ns, int64_t device, int64_t stream,
                 std::string nvtx) {
    std::vector<profiling::Label> labels = {
        {"device", "", device}, {"stream", "", stream}, {"pid", "", 42}};
    if (!nvtx.empty()) labels.push_back({"nvtx", nvtx, 0});
    const int64_t v[] = {ns * scale, 1, 0};
    p.Add(stack, v, labels);
  };
  add({process, launch, gemm}, 40, 0, 7, "forward");
  add({process, launch, gemm}, 20, 1, 8, "forward");
  add({process, launch, relu}, 30, 0, 8, "backward");
  add({process, unsampled, relu}, 10, 1, 7, "");
  return profiling::EncodePprof(p.profile()).value();
}

const nlohmann::json* Child(const nlohmann::json& node, const std::string& name) {
  for (const nlohmann::json& c : node["children"]) {
    if (c["name"] == name) return &c;
  }
  return nullptr;
}

class MergedProfilesTest : public QueryFixture {
 protected:
  void Store(const std::string& data, const std::string& kind, int64_t offset_s,
             const std::string& host = "node1", int64_t pid = 0) {
    ProfileMeta m;
    m.host = host;
    m.pid = pid;
    m.kind = kind;
    m.start = At(kT0 + offset_s);
    m.end = At(kT0 + offset_s + 10);
    ASSERT_TRUE(storage_->WriteProfile(m, data));
  }
  ProfileQuery Window() const {
    ProfileQuery q;
    q.host = "node1";
    q.start = At(kT0);
    q.end = At(kT0 + 100);
    return q;
  }
};

TEST_F(MergedProfilesTest, SumsTheWindowsProfilesByStackWithoutLabels) {
  Store(CpuPprof(10, 5, 0), "cpu", 0);
  Store(CpuPprof(30, 1, 1), "cpu", 10);
  auto merged = MergeStoredProfiles(*storage_, Window());
  ASSERT_TRUE(merged) << merged.error().message();
  EXPECT_EQ(merged->profiles, 2u);
  EXPECT_EQ(merged->skipped, 0u);
  ASSERT_EQ(merged->profile.samples.size(), 2u) << "labels of the two devices are not kept";
  EXPECT_TRUE(merged->profile.samples[0].labels.empty());
  int64_t work = 0;
  for (const auto& s : merged->profile.samples) {
    if (merged->profile.frames[s.stack.back()].function == "work") work = s.values[0];
  }
  EXPECT_EQ(work, 40);
  nlohmann::json tree = MergedProfileTreeJson(*merged, {.sort_value = 1});
  EXPECT_EQ(tree["profiles"], 2);
  EXPECT_EQ(tree["value"], 1);
  EXPECT_EQ(tree["root"]["total"][0], 46);
}

TEST_F(MergedProfilesTest, LeavesOutWhatDoesNotDecodeAndSaysWhy) {
  Store(CpuPprof(10, 5, 0), "cpu", 0);
  Store("not a profile", "cpu", 10);
  auto merged = MergeStoredProfiles(*storage_, Window());
  ASSERT_TRUE(merged) << merged.error().message();
  EXPECT_EQ(merged->profiles, 1u);
  EXPECT_EQ(merged->skipped, 1u);
  EXPECT_NE(merged->first_error.find("pprof"), std::string::npos) << merged->first_error;

  ProfileQuery only_bad = Window();
  only_bad.start = At(kT0 + 10);
  auto none = MergeStoredProfiles(*storage_, only_bad);
  ASSERT_TRUE(none) << none.error().message();
  EXPECT_EQ(none->profiles, 0u);
  EXPECT_EQ(none->skipped, 1u);
}

TEST_F(MergedProfilesTest, AnEmptyWindowIsNotFoundAndMixedKindsAreRefused) {
  auto empty = MergeStoredProfiles(*storage_, Window());
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code(), base::StatusCode::kNotFound);
  EXPECT_NE(empty.error().message().find("run the CPU or CUDA profiler"), std::string::npos);

  Store(CpuPprof(10, 5, 0), "cpu", 0);
  profiling::ProfileAggregator gpu(std::vector<profiling::ValueType>{{"gpu_time", "nanoseconds"}});
  const int64_t v[] = {100};
  gpu.Add(std::vector<uint32_t>{gpu.InternFrame({"kernel"})}, v);
  Store(profiling::EncodePprof(gpu.profile()).value(), "gpu", 10);
  auto mixed = MergeStoredProfiles(*storage_, Window());
  ASSERT_FALSE(mixed);
  EXPECT_EQ(mixed.error().code(), base::StatusCode::kInvalidArgument);
}

TEST_F(MergedProfilesTest, ListsTheWindowsThreadsAndFiltersByTidOrName) {
  Store(ThreadedCpuPprof(30, 10), "cpu", 0);
  Store(ThreadedCpuPprof(20, 50), "cpu", 10);
  MergeRequest all{Window(), {}, {}};
  auto merged = MergeStoredProfiles(*storage_, all);
  ASSERT_TRUE(merged) << merged.error().message();
  ASSERT_EQ(merged->threads.size(), 2u);
  nlohmann::json tree = MergedProfileTreeJson(*merged, {.sort_value = 1});
  ASSERT_EQ(tree["threads"].size(), 2u);
  EXPECT_EQ(tree["threads"][0]["tid"], 101) << "largest first";
  EXPECT_EQ(tree["threads"][0]["name"], "DataLoader");
  EXPECT_EQ(tree["threads"][0]["total"][0], 60);
  EXPECT_EQ(tree["threads"][1]["total"][1], 50'000'000);
  EXPECT_EQ(tree["threads_omitted"], 0);
  EXPECT_EQ(tree["root"]["total"][0], 110);

  for (std::string thread : {"101", "DataLoader"}) {
    auto loader = MergeStoredProfiles(*storage_, MergeRequest{Window(), {}, thread});
    ASSERT_TRUE(loader) << loader.error().message();
    nlohmann::json t = MergedProfileTreeJson(*loader, profiling::FlameTreeOptions{});
    EXPECT_EQ(t["root"]["total"][0], 60) << thread;
    EXPECT_EQ(t["threads"].size(), 2u) << "the list is of the whole window";
    const nlohmann::json* python = Child(t["root"], "python3");
    ASSERT_NE(python, nullptr);
    EXPECT_EQ(Child(*python, "step"), nullptr) << "the main thread's frames are filtered out";
  }
  auto none = MergeStoredProfiles(*storage_, MergeRequest{Window(), {}, "4242"});
  ASSERT_TRUE(none);
  EXPECT_EQ(MergedProfileTreeJson(*none, profiling::FlameTreeOptions{})["root"]["total"][0], 0);

  nlohmann::json capped = MergedProfileTreeJson(*merged, TreeJsonOptions{{}, 1});
  EXPECT_EQ(capped["threads"].size(), 1u);
  EXPECT_EQ(capped["threads_omitted"], 1);
}

TEST_F(MergedProfilesTest, NodesCarryTheirKindsAlsoWhenFoldedUnderTheNodeLimit) {
  Store(ThreadedCpuPprof(30, 10), "cpu", 0);
  auto merged = MergeStoredProfiles(*storage_, Window());
  ASSERT_TRUE(merged);
  nlohmann::json tree = MergedProfileTreeJson(*merged, profiling::FlameTreeOptions{});
  const nlohmann::json* python = Child(tree["root"], "python3");
  ASSERT_NE(python, nullptr);
  EXPECT_EQ((*python)["kind"], "process");
  const nlohmann::json* step = Child(*python, "step");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ((*step)["kind"], "python");
  EXPECT_EQ((*step)["children"][0]["kind"], "native");
  EXPECT_EQ((*step)["children"][0]["children"][0]["kind"], "os_kernel");
  // Five nodes: root, python3, step and two "(other)": the loader's subtree (next, 10 ms) under
  // python3, of kind python, and the native subtree under step, of kind native.
  nlohmann::json capped = MergedProfileTreeJson(*merged, {.max_nodes = 5});
  const nlohmann::json* capped_python = Child(capped["root"], "python3");
  ASSERT_NE(capped_python, nullptr);
  const nlohmann::json* other = Child(*capped_python, "(other)");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ((*other)["kind"], "python");
  EXPECT_EQ((*other)["total"][0], 10);
  const nlohmann::json* capped_step = Child(*capped_python, "step");
  ASSERT_NE(capped_step, nullptr);
  ASSERT_EQ((*capped_step)["children"].size(), 1u);
  EXPECT_EQ((*capped_step)["children"][0]["name"], "(other)");
  EXPECT_EQ((*capped_step)["children"][0]["kind"], "native");
}

TEST_F(MergedProfilesTest, CpuShareOfAllCoresUsesTheHostsLogicalCpuCount) {
  Store(ThreadedCpuPprof(30, 10), "cpu", 0);
  Store(ThreadedCpuPprof(30, 10), "cpu", 10);
  auto before = MergeStoredProfiles(*storage_, Window());
  ASSERT_TRUE(before);
  ASSERT_TRUE(before->cpu);
  EXPECT_EQ(before->cpu->value, 1u);
  EXPECT_EQ(before->cpu->window_ns, 20'000'000'000);
  EXPECT_FALSE(before->cpu->cores) << "never guessed";
  nlohmann::json unknown = MergedProfileTreeJson(*before, profiling::FlameTreeOptions{});
  EXPECT_TRUE(unknown["cpu"]["cores"].is_null());
  EXPECT_TRUE(unknown["cpu"]["capacity_ns"].is_null());
  EXPECT_NE(unknown["cpu"]["unknown_reason"].get<std::string>().find("host.cpu.logical_count"),
            std::string::npos);

  IngestBatch b = QueryFixture::Window("node1", 0);
  b.entities.push_back(model::Entity{model::EntityKind::kHost, "node1", "node1", {}});
  AddGauge(b, std::string(kHostCpuCountMetric), model::EntityKind::kHost, "node1", 8);
  Write(b);
  auto merged = MergeStoredProfiles(*storage_, Window());
  ASSERT_TRUE(merged);
  ASSERT_TRUE(merged->cpu && merged->cpu->cores);
  EXPECT_EQ(*merged->cpu->cores, 8);
  nlohmann::json tree = MergedProfileTreeJson(*merged, profiling::FlameTreeOptions{});
  EXPECT_EQ(tree["cpu"]["value"], 1);
  EXPECT_EQ(tree["cpu"]["cores"], 8);
  EXPECT_EQ(tree["cpu"]["window_seconds"], 20);
  EXPECT_EQ(tree["cpu"]["capacity_ns"], 160e9);
  EXPECT_FALSE(tree["cpu"].contains("unknown_reason"));

  // Profiles of two hosts: whose cores? Unknown, and the reason says to filter by host.
  Store(ThreadedCpuPprof(1, 1), "cpu", 20, "node2");
  ProfileQuery both = Window();
  both.host.clear();
  auto two = MergeStoredProfiles(*storage_, both);
  ASSERT_TRUE(two);
  ASSERT_TRUE(two->cpu);
  EXPECT_FALSE(two->cpu->cores);
  EXPECT_NE(two->cpu->unknown_reason.find("host="), std::string::npos);

  // A GPU profile has no CPU time: no "cpu" object.
  Store(GpuPprof(5), "gpu", 30);
  ProfileQuery gpu = Window();
  gpu.kind = "gpu";
  auto g = MergeStoredProfiles(*storage_, gpu);
  ASSERT_TRUE(g);
  EXPECT_TRUE(MergedProfileTreeJson(*g, profiling::FlameTreeOptions{})["cpu"].is_null());
}

TEST_F(MergedProfilesTest, CpuAndGpuProfilesOfOneProcessMergeUnderTheUnionOfTheirTypes) {
  Store(ThreadedCpuPprof(30, 10), "cpu", 0, "node1", 42);
  Store(GpuPprof(7), "gpu", 0, "node1", 42);
  Store(ThreadedCpuPprof(1000, 1000), "cpu", 0, "node1", 43);  // another process
  ProfileQuery q = Window();
  q.pid = 42;
  auto merged = MergeStoredProfiles(*storage_, MergeRequest{q, {"cpu", "gpu"}, {}});
  ASSERT_TRUE(merged) << merged.error().message();
  EXPECT_EQ(merged->profiles, 2u);
  EXPECT_EQ(merged->kinds, (std::vector<std::string>{"cpu", "gpu"}));
  nlohmann::json tree = MergedProfileTreeJson(*merged, profiling::FlameTreeOptions{});
  std::vector<std::string> types;
  for (const auto& t : tree["sample_types"]) types.push_back(t["type"]);
  EXPECT_EQ(types,
            (std::vector<std::string>{"samples", "cpu", "gpu_time", "launches", "pc_samples"}));
  EXPECT_EQ(tree["root"]["total"], nlohmann::json({40, 40'000'000, 7'000'000, 3, 5}));
  EXPECT_EQ(tree["kinds"], nlohmann::json({"cpu", "gpu"}));
  // One root for the process; its Python frame holds both the CPU time and the launch.
  ASSERT_EQ(tree["root"]["children"].size(), 1u);
  const nlohmann::json& python = tree["root"]["children"][0];
  const nlohmann::json* step = Child(python, "step");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ((*step)["total"], nlohmann::json({30, 30'000'000, 7'000'000, 3, 5}));
  const nlohmann::json* launch = Child(*step, "cudaLaunchKernel");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ((*launch)["kind"], "launch");
  EXPECT_EQ((*launch)["total"], nlohmann::json({0, 0, 7'000'000, 3, 5}));
  const nlohmann::json& kernel = (*launch)["children"][0];
  EXPECT_EQ(kernel["kind"], "kernel");
  EXPECT_EQ(kernel["children"][0]["kind"], "sass");
  EXPECT_EQ(kernel["children"][0]["children"][0]["kind"], "stall");
  const nlohmann::json* add = Child(*step, "at::add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ((*add)["total"], nlohmann::json({30, 30'000'000, 0, 0, 0}));
  ASSERT_FALSE(tree["cpu"].is_null());
  EXPECT_EQ(tree["cpu"]["value"], 1);

  // Without asking for both kinds, the two stay unmergeable.
  auto refused = MergeStoredProfiles(*storage_, q);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), base::StatusCode::kInvalidArgument);
}

LabelFilter Label(std::string_view text) { return ParseLabelFilter(text).value(); }

TEST_F(MergedProfilesTest, LabelFiltersSelectOneDeviceStreamOrRange) {
  Store(LabelledGpuPprof(1), "gpu", 0);
  Store(LabelledGpuPprof(2), "gpu", 10);
  auto total = [&](std::vector<LabelFilter> labels) -> int64_t {
    MergeRequest r;
    r.query = Window();
    r.labels = std::move(labels);
    auto merged = MergeStoredProfiles(*storage_, r);
    EXPECT_TRUE(merged) << merged.error().message();
    if (!merged) return -1;
    return MergedProfileTreeJson(*merged, profiling::FlameTreeOptions{})["root"]["total"][0];
  };
  EXPECT_EQ(total({}), 300);
  EXPECT_EQ(total({Label("device:0")}), 210);
  EXPECT_EQ(total({Label("device:1")}), 90);
  EXPECT_EQ(total({Label("stream:7")}), 150);
  EXPECT_EQ(total({Label("nvtx:forward")}), 180);
  EXPECT_EQ(total({Label("nvtx:back*")}), 90);
  EXPECT_EQ(total({Label("nvtx:*")}), 270) << "any range; the unsampled relu has none";
  EXPECT_EQ(total({Label("device:0"), Label("stream:8")}), 90) << "keys AND";
  EXPECT_EQ(total({Label("stream:7"), Label("stream:8")}), 300) << "one key's values OR";
  EXPECT_EQ(total({Label("device:1"), Label("nvtx:forward")}), 60);
  EXPECT_EQ(total({Label("device:2")}), 0);
  EXPECT_EQ(total({Label("pid:42")}), 300);
}

TEST_F(MergedProfilesTest, KeepingLabelsSumsByStackAndLabels) {
  Store(LabelledGpuPprof(1), "gpu", 0);
  Store(LabelledGpuPprof(2), "gpu", 10);
  MergeRequest r;
  r.query = Window();
  r.keep_labels = true;
  r.labels = {Label("device:0")};
  auto merged = MergeStoredProfiles(*storage_, r);
  ASSERT_TRUE(merged) << merged.error().message();
  const auto& samples = merged->profile.samples;
  ASSERT_EQ(samples.size(), 2u) << "the two profiles' samples of device 0, summed";
  EXPECT_EQ(samples[0].values, (std::vector<int64_t>{120, 2, 0}));
  EXPECT_EQ(samples[0].labels,
            (std::vector<profiling::Label>{
                {"device", "", 0}, {"nvtx", "forward", 0}, {"pid", "", 42}, {"stream", "", 7}}))
      << "sorted by key";
  EXPECT_EQ(samples[1].values[0], 90);
  EXPECT_EQ(merged->label_sets.kept, 2u);
  EXPECT_EQ(merged->label_sets.over_cap, 0u);

  r.labels.clear();
  r.max_label_sets = 1;
  auto capped = MergeStoredProfiles(*storage_, r);
  ASSERT_TRUE(capped);
  EXPECT_EQ(capped->label_sets.kept, 1u);
  EXPECT_EQ(capped->label_sets.over_cap, 3u);
  int64_t sum = 0;
  for (const auto& s : capped->profile.samples) sum += s.values[0];
  EXPECT_EQ(sum, 300) << "past the cap, samples lose their labels, not their values";
  EXPECT_EQ(capped->profile.samples[0].labels[0].key, "device") << "the heaviest set: 120";
  EXPECT_EQ(capped->profile.samples[1].labels[0].key, std::string(kOverCapLabelKey));

  MergeRequest tree;
  tree.query = Window();
  auto by_stack = MergeStoredProfiles(*storage_, tree);
  ASSERT_TRUE(by_stack);
  EXPECT_EQ(by_stack->profile.samples.size(), 3u) << "without keep_labels: by stack only";
  EXPECT_EQ(by_stack->label_sets.kept, 0u);
}

TEST_F(MergedProfilesTest, ListsEachLabelKeysValuesWithTheirShare) {
  Store(LabelledGpuPprof(1), "gpu", 0);
  Store(LabelledGpuPprof(2), "gpu", 10);
  MergeRequest r;
  r.query = Window();
  r.label_totals = true;
  r.labels = {Label("device:0")};
  auto merged = MergeStoredProfiles(*storage_, r);
  ASSERT_TRUE(merged) << merged.error().message();
  nlohmann::json tree = MergedProfileTreeJson(*merged, profiling::FlameTreeOptions{});
  EXPECT_EQ(tree["root"]["total"][0], 210);
  EXPECT_EQ(tree["label_filters"], nlohmann::json({"device:0"}));
  EXPECT_EQ(tree["label_keys_omitted"], 0);
  std::map<std::string, nlohmann::json> keys;
  for (const auto& k : tree["labels"]) keys[k["key"]] = k;
  ASSERT_EQ(keys.size(), 4u);
  // The device menu ignores the device filter: device 0 is 70 %, device 1 30 %.
  const nlohmann::json& device = keys["device"];
  EXPECT_EQ(device["total"][0], 300);
  ASSERT_EQ(device["values"].size(), 2u);
  EXPECT_EQ(device["values"][0]["value"], 0);
  EXPECT_DOUBLE_EQ(device["values"][0]["share"].get<double>(), 0.7);
  EXPECT_DOUBLE_EQ(device["values"][1]["share"].get<double>(), 0.3);
  // The other menus are of device 0: stream 7 has 120 of 210, stream 8 90.
  const nlohmann::json& stream = keys["stream"];
  EXPECT_EQ(stream["total"][0], 210);
  EXPECT_EQ(stream["values"][0]["filter"], "stream:7");
  EXPECT_EQ(stream["values"][0]["total"][0], 120);
  const nlohmann::json& nvtx = keys["nvtx"];
  EXPECT_EQ(nvtx["values"][0]["value"], "forward");
  EXPECT_EQ(nvtx["unlabelled"][0], 0);
  EXPECT_EQ(tree["labels"][0]["key"], "device") << "keys labelling the most first";

  nlohmann::json none = MergedProfileTreeJson(*MergeStoredProfiles(*storage_, Window()),
                                              profiling::FlameTreeOptions{});
  EXPECT_TRUE(none["labels"].empty()) << "only when asked for";
}

TEST_F(MergedProfilesTest, TheThreadListFollowsTheLabelFilters) {
  Store(ThreadedCpuPprof(30, 10), "cpu", 0);
  MergeRequest r;
  r.query = Window();
  r.labels = {Label("thread_name:DataLoader")};
  auto merged = MergeStoredProfiles(*storage_, r);
  ASSERT_TRUE(merged) << merged.error().message();
  ASSERT_EQ(merged->threads.size(), 1u);
  EXPECT_EQ(merged->threads[0].tid, 101);
  EXPECT_EQ(MergedProfileTreeJson(*merged, profiling::FlameTreeOptions{})["root"]["total"][0], 10);
}

}  // namespace
}  // namespace warpscope::server::query
