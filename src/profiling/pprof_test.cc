// SPDX-License-Identifier: Apache-2.0
#include "profiling/pprof.h"

#include <gtest/gtest.h>

#include <map>
#include <span>
#include <string>

#include "base/gzip.h"
#include "perftools/profiles.pb.h"
#include "profiling/flame_tree.h"

namespace warpscope::profiling {
namespace {

namespace pb = perftools::profiles;
using Types = std::vector<std::pair<std::string, std::string>>;

std::string GzipForTest(const std::string& data) { return base::GzipCompress(data, 6).value(); }

// Builds pprof messages by hand, the way a profiler writes them.
class PprofMessage {
 public:
  explicit PprofMessage(Types types) {
    Str("");
    for (const auto& [t, u] : types) {
      auto* vt = p_.add_sample_type();
      vt->set_type(Str(t));
      vt->set_unit(Str(u));
    }
  }
  int64_t Str(const std::string& s) {
    for (int i = 0; i < p_.string_table_size(); ++i) {
      if (p_.string_table(i) == s) return i;
    }
    p_.add_string_table(s);
    return p_.string_table_size() - 1;
  }
  uint64_t Function(const std::string& name, const std::string& file = "") {
    auto* f = p_.add_function();
    f->set_id(static_cast<uint64_t>(p_.function_size()));
    f->set_name(Str(name));
    f->set_filename(Str(file));
    return f->id();
  }
  // `lines`: (function id, line), innermost first.
  uint64_t Location(std::vector<std::pair<uint64_t, int64_t>> lines) {
    auto* loc = p_.add_location();
    loc->set_id(static_cast<uint64_t>(p_.location_size()) + 100);
    for (const auto& [fn, line] : lines) {
      auto* l = loc->add_line();
      l->set_function_id(fn);
      l->set_line(line);
    }
    return loc->id();
  }
  // `leaf_first`: location ids.
  void Sample(std::vector<uint64_t> leaf_first, std::vector<int64_t> values) {
    auto* s = p_.add_sample();
    for (uint64_t id : leaf_first) s->add_location_id(id);
    for (int64_t v : values) s->add_value(v);
  }
  pb::Profile& proto() { return p_; }
  std::string Gzipped() const { return GzipForTest(p_.SerializeAsString()); }

 private:
  pb::Profile p_;
};

// main -> work -> spin (100 samples) and main -> idle (50): the CPU profile of the tests.
PprofMessage CpuProfile() {
  PprofMessage b(Types{{"samples", "count"}, {"cpu", "nanoseconds"}});
  uint64_t main_fn = b.Function("main", "main.cc");
  uint64_t work_fn = b.Function("work", "work.cc");
  uint64_t spin_fn = b.Function("spin", "work.cc");
  uint64_t idle_fn = b.Function("idle", "main.cc");
  uint64_t main_loc = b.Location({{main_fn, 10}});
  uint64_t work_loc = b.Location({{work_fn, 20}});
  uint64_t spin_loc = b.Location({{spin_fn, 30}});
  uint64_t idle_loc = b.Location({{idle_fn, 40}});
  b.Sample({spin_loc, work_loc, main_loc}, {100, 1000});
  b.Sample({idle_loc, main_loc}, {50, 500});
  b.proto().set_time_nanos(1000);
  b.proto().set_duration_nanos(10);
  return b;
}

std::vector<std::string> Names(const Profile& p, const Sample& s) {
  std::vector<std::string> out;
  for (const Frame& f : StackFrames(p, s)) out.push_back(f.function);
  return out;
}

TEST(PprofTest, DecodesGzippedProfileRootFirst) {
  auto p = DecodePprof(CpuProfile().Gzipped());
  ASSERT_TRUE(p) << p.error().message();
  ASSERT_EQ(p->sample_types.size(), 2u);
  EXPECT_EQ(p->sample_types[1], (ValueType{"cpu", "nanoseconds"}));
  ASSERT_EQ(p->samples.size(), 2u);
  EXPECT_EQ(Names(*p, p->samples[0]), (std::vector<std::string>{"main", "work", "spin"}));
  EXPECT_EQ(p->frames[p->samples[0].stack[2]], (Frame{"spin", "work.cc", 30}));
  EXPECT_EQ(p->samples[0].values, (std::vector<int64_t>{100, 1000}));
}

TEST(PprofTest, DecodesUncompressedProtobuf) {
  auto p = DecodePprof(CpuProfile().proto().SerializeAsString());
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->samples.size(), 2u);
}

TEST(PprofTest, InlinedFramesExpandOutermostFirst) {
  PprofMessage b(Types{{"samples", "count"}});
  uint64_t outer = b.Function("outer");
  uint64_t inlined = b.Function("inlined");
  uint64_t leaf = b.Function("leaf");
  // One location holding inlined (innermost) within outer.
  uint64_t both = b.Location({{inlined, 5}, {outer, 7}});
  uint64_t leaf_loc = b.Location({{leaf, 1}});
  b.Sample({leaf_loc, both}, {3});
  auto p = DecodePprof(b.Gzipped());
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(Names(*p, p->samples[0]), (std::vector<std::string>{"outer", "inlined", "leaf"}));
  auto stack = StackFrames(*p, p->samples[0]);
  EXPECT_FALSE(stack[0].inlined);
  EXPECT_TRUE(stack[1].inlined) << "inlined into the frame before it";
  EXPECT_FALSE(stack[2].inlined);
}

TEST(PprofTest, InlinedFramesAreLinesOfTheirCallersLocation) {
  // main -> compute (compiled) -> dot, axpy (inlined into compute, axpy innermost); and
  // main -> compute at another call site with only dot inlined.
  ProfileAggregator agg(std::vector<ValueType>{{"samples", "count"}});
  Frame main_frame{"main", "main.cc", 3};
  main_frame.module = "/bin/app";
  main_frame.kind = FrameKind::kNative;
  Frame compute{"compute", "compute.cc", 40};
  compute.module = "/bin/app";
  compute.kind = FrameKind::kNative;
  Frame dot{"dot", "dot.h", 12};
  dot.module = "/bin/app";
  dot.kind = FrameKind::kNative;
  dot.inlined = true;
  Frame axpy{"axpy", "axpy.h", 7};
  axpy.module = "/bin/app";
  axpy.kind = FrameKind::kNative;
  axpy.inlined = true;
  Frame compute_other = compute;
  compute_other.line = 55;
  Frame dot_other = dot;
  dot_other.line = 14;
  const uint32_t a[] = {agg.InternFrame(main_frame), agg.InternFrame(compute),
                        agg.InternFrame(dot), agg.InternFrame(axpy)};
  const uint32_t b[] = {a[0], agg.InternFrame(compute_other), agg.InternFrame(dot_other)};
  const int64_t five[] = {5};
  const int64_t two[] = {2};
  agg.Add(a, five);
  agg.Add(b, two);
  agg.Add(a, two);
  Profile profile = std::move(agg).Take();
  auto encoded = EncodePprof(profile);
  ASSERT_TRUE(encoded) << encoded.error().message();
  pb::Profile raw;
  ASSERT_TRUE(raw.ParseFromString(base::GzipDecompress(*encoded).value()));
  std::map<uint64_t, const pb::Location*> locations;
  for (const auto& loc : raw.location()) locations[loc.id()] = &loc;
  auto name = [&](const pb::Line& line) {
    for (const auto& fn : raw.function()) {
      if (fn.id() == line.function_id()) return raw.string_table(static_cast<int>(fn.name()));
    }
    return std::string("?");
  };
  ASSERT_EQ(raw.sample_size(), 2);
  ASSERT_EQ(raw.sample(0).location_id_size(), 2) << "leaf location holds three lines";
  const pb::Location* leaf = locations.at(raw.sample(0).location_id(0));
  ASSERT_EQ(leaf->line_size(), 3);
  EXPECT_EQ(name(leaf->line(0)), "axpy") << "innermost first";
  EXPECT_EQ(leaf->line(0).line(), 7);
  EXPECT_EQ(name(leaf->line(1)), "dot");
  EXPECT_EQ(name(leaf->line(2)), "compute");
  EXPECT_EQ(leaf->line(2).line(), 40);
  EXPECT_NE(leaf->mapping_id(), 0u);
  const pb::Location* other = locations.at(raw.sample(1).location_id(0));
  ASSERT_EQ(other->line_size(), 2);
  EXPECT_EQ(other->line(1).line(), 55);
  EXPECT_EQ(raw.sample(0).value(0), 7);

  auto back = DecodePprof(*encoded);
  ASSERT_TRUE(back) << back.error().message();
  ASSERT_EQ(back->samples.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(StackFrames(*back, back->samples[i]), StackFrames(profile, profile.samples[i])) << i;
  }
  auto merged = Merge(std::vector<Profile>{*back, profile});
  ASSERT_TRUE(merged) << merged.error().message();
  EXPECT_EQ(merged->samples.size(), 2u) << "decoded inlined frames equal the encoded ones";
}

TEST(PprofTest, MergeSumsIdenticalStacks) {
  auto a = DecodePprof(CpuProfile().Gzipped());
  PprofMessage other(Types{{"samples", "count"}, {"cpu", "nanoseconds"}});
  uint64_t m = other.Location({{other.Function("main", "main.cc"), 10}});
  uint64_t w = other.Location({{other.Function("work", "work.cc"), 20}});
  uint64_t s = other.Location({{other.Function("spin", "work.cc"), 30}});
  uint64_t z = other.Location({{other.Function("sleep", "main.cc"), 50}});
  other.Sample({s, w, m}, {1, 10});
  other.Sample({z, m}, {2, 20});
  other.proto().set_time_nanos(2000);
  other.proto().set_duration_nanos(10);
  auto b = DecodePprof(other.Gzipped());
  ASSERT_TRUE(a && b);
  std::vector<Profile> both{*a, *b};
  auto merged = Merge(both);
  ASSERT_TRUE(merged) << merged.error().message();
  ASSERT_EQ(merged->samples.size(), 3u);
  EXPECT_EQ(merged->samples[0].values, (std::vector<int64_t>{101, 1010}));
  EXPECT_EQ(merged->samples[1].values, (std::vector<int64_t>{50, 500}));
  EXPECT_EQ(merged->samples[2].values, (std::vector<int64_t>{2, 20}));
  EXPECT_EQ(merged->time_nanos, 1000);
  EXPECT_EQ(merged->duration_nanos, 1010);
}

TEST(PprofTest, MergeRefusesDifferentSampleTypes) {
  auto cpu = DecodePprof(CpuProfile().Gzipped());
  PprofMessage gpu(Types{{"launches", "count"}, {"gpu_time", "nanoseconds"}});
  auto g = DecodePprof(gpu.Gzipped());
  ASSERT_TRUE(cpu && g);
  std::vector<Profile> both{*cpu, *g};
  auto merged = Merge(both);
  ASSERT_FALSE(merged);
  EXPECT_NE(merged.error().message().find("launches/count"), std::string::npos);
  EXPECT_NE(merged.error().message().find("cpu/nanoseconds"), std::string::npos);
  EXPECT_FALSE(Merge(std::span<const Profile>()));
}

TEST(PprofTest, FlameTreeTotalsAreSums) {
  auto p = DecodePprof(CpuProfile().Gzipped());
  ASSERT_TRUE(p);
  FlameNode root = FlameTree(*p, {.sort_value = 1});
  EXPECT_EQ(root.name, "root");
  EXPECT_EQ(root.total, (std::vector<int64_t>{150, 1500}));
  ASSERT_EQ(root.children.size(), 1u);
  const FlameNode& main = root.children[0];
  EXPECT_EQ(main.total, (std::vector<int64_t>{150, 1500}));
  EXPECT_EQ(main.self, (std::vector<int64_t>{0, 0}));
  ASSERT_EQ(main.children.size(), 2u);
  EXPECT_EQ(main.children[0].name, "work");  // larger first
  EXPECT_EQ(main.children[0].total, (std::vector<int64_t>{100, 1000}));
  EXPECT_EQ(main.children[0].children[0].self, (std::vector<int64_t>{100, 1000}));
  EXPECT_EQ(main.children[1].name, "idle");
  nlohmann::json j = FlameNodeJson(root);
  EXPECT_EQ(j["children"][0]["children"][1]["total"][1], 500);
}

size_t CountNodes(const FlameNode& n) {
  size_t count = 1;
  for (const FlameNode& c : n.children) count += CountNodes(c);
  return count;
}

TEST(PprofTest, FlameTreeFoldsSmallestIntoOtherUnderTheCap) {
  PprofMessage b(Types{{"samples", "count"}});
  uint64_t main_loc = b.Location({{b.Function("main"), 0}});
  for (int i = 1; i <= 10; ++i) {
    uint64_t loc = b.Location({{b.Function("f" + std::to_string(i)), 0}});
    b.Sample({loc, main_loc}, {i});
  }
  auto p = DecodePprof(b.Gzipped());
  ASSERT_TRUE(p);
  FlameNode root = FlameTree(*p, {.max_nodes = 6});
  EXPECT_LE(CountNodes(root), 6u);
  EXPECT_EQ(root.total[0], 55);
  const FlameNode& main = root.children[0];
  int64_t sum = 0;
  bool has_other = false;
  for (const FlameNode& c : main.children) {
    sum += c.total[0];
    has_other |= c.name == "(other)";
  }
  EXPECT_TRUE(has_other);
  EXPECT_EQ(sum, 55);
  // root, main, f10, f9, f8 and "(other)" holding f1..f7 (1 + ... + 7 = 28).
  ASSERT_EQ(main.children.size(), 4u);
  EXPECT_EQ(main.children[0].name, "(other)");
  EXPECT_EQ(main.children[0].total[0], 28);
  EXPECT_EQ(main.children[1].name, "f10");
}

TEST(PprofTest, EncodeRoundTrips) {
  PprofMessage b = CpuProfile();
  b.proto().mutable_period_type()->set_type(b.Str("cpu"));
  b.proto().mutable_period_type()->set_unit(b.Str("nanoseconds"));
  b.proto().set_period(10'000'000);
  auto p = DecodePprof(b.Gzipped());
  ASSERT_TRUE(p);
  auto encoded = EncodePprof(*p);
  ASSERT_TRUE(encoded) << encoded.error().message();
  auto again = DecodePprof(*encoded);
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(*again, *p);
}

TEST(PprofTest, CorruptInputIsAClearError) {
  std::string gz = CpuProfile().Gzipped();
  auto truncated = DecodePprof(gz.substr(0, gz.size() / 2));
  ASSERT_FALSE(truncated);
  EXPECT_NE(truncated.error().message().find("gzip"), std::string::npos);
  auto garbage = DecodePprof(std::string("\x0a\xff\xff\xff\xff\x0f", 6));
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.error().message().find("perftools.profiles.Profile"), std::string::npos);
  EXPECT_FALSE(DecodePprof(""));

  PprofMessage bad = CpuProfile();
  bad.Sample({9999}, {1, 1});
  auto unknown = DecodePprof(bad.Gzipped());
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message().find("unknown location 9999"), std::string::npos);

  PprofMessage short_values = CpuProfile();
  short_values.Sample({}, {1});
  EXPECT_FALSE(DecodePprof(short_values.Gzipped()));
}

TEST(PprofTest, FindSampleTypeByIndexOrName) {
  std::vector<ValueType> types{{"samples", "count"}, {"cpu", "nanoseconds"}};
  EXPECT_EQ(FindSampleType(types, "1").value(), 1u);
  EXPECT_EQ(FindSampleType(types, "cpu").value(), 1u);
  auto missing = FindSampleType(types, "alloc");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("samples/count"), std::string::npos);
  EXPECT_FALSE(FindSampleType(types, "2"));
}

// What the profilers write beyond names: system names, modules with build ids, labels.
Profile RichProfile() {
  ProfileAggregator agg({{"gpu_time", "nanoseconds"}, {"launches", "count"}});
  Frame native{"Launch(int)", "", 0, "_Z6Launchi", "/opt/app/bin/app", "ab12", FrameKind::kNative};
  Frame py{"Model.forward", "/srv/model.py", 42};
  Frame kernel{"gemm<float>", "", 0, "_Z4gemmIfEv"};
  std::vector<uint32_t> stack{agg.InternFrame(py), agg.InternFrame(native),
                              agg.InternFrame(kernel)};
  const int64_t v1[] = {100, 1};
  const int64_t v2[] = {50, 2};
  agg.Add(stack, v1, std::vector<Label>{{"device", "", 0}, {"nvtx", "step 3", 0}});
  agg.Add(stack, v2, std::vector<Label>{{"device", "", 1}});
  Profile p = std::move(agg).Take();
  p.period_type = {"gpu_time", "nanoseconds"};
  p.period = 1;
  p.default_sample_type = "gpu_time";
  p.time_nanos = 5;
  p.duration_nanos = 7;
  return p;
}

TEST(PprofTest, RoundTripsSystemNamesModulesAndLabels) {
  Profile p = RichProfile();
  auto encoded = EncodePprof(p);
  ASSERT_TRUE(encoded) << encoded.error().message();
  auto back = DecodePprof(*encoded);
  ASSERT_TRUE(back) << back.error().message();
  // Everything travels; the Python frame, written without a kind, comes back with the one its
  // file implies.
  ASSERT_EQ(p.frames[0].function, "Model.forward");
  p.frames[0].kind = FrameKind::kPython;
  EXPECT_EQ(*back, p);
  EXPECT_EQ(back->frames[1].module, "/opt/app/bin/app");
  EXPECT_EQ(back->frames[1].build_id, "ab12");
  EXPECT_EQ(back->frames[2].system_name, "_Z4gemmIfEv");
  EXPECT_EQ(back->samples[0].labels[1], (Label{"nvtx", "step 3", 0}));
}

TEST(PprofTest, EncodeWritesOneMappingPerModuleAndLabelsAsTheWireHasThem) {
  auto encoded = EncodePprof(RichProfile());
  ASSERT_TRUE(encoded);
  pb::Profile raw;
  ASSERT_TRUE(raw.ParseFromString(base::GzipDecompress(*encoded).value()));
  ASSERT_EQ(raw.mapping_size(), 1);
  EXPECT_EQ(raw.mapping(0).id(), 1u);
  EXPECT_EQ(raw.string_table(static_cast<int>(raw.mapping(0).build_id())), "ab12");
  EXPECT_EQ(raw.string_table(static_cast<int>(raw.default_sample_type())), "gpu_time");
  ASSERT_EQ(raw.sample_size(), 2);
  EXPECT_EQ(raw.sample(0).location_id(0), 3u) << "leaf first on the wire";
  ASSERT_EQ(raw.sample(0).label_size(), 2);
  EXPECT_EQ(raw.sample(0).label(0).num(), 0);
  EXPECT_EQ(raw.string_table(static_cast<int>(raw.sample(0).label(1).str())), "step 3");
  EXPECT_EQ(raw.sample(1).label(0).num(), 1);
}

TEST(PprofTest, LabelsCanBeLeftOutWhenDecoding) {
  auto encoded = EncodePprof(RichProfile());
  ASSERT_TRUE(encoded);
  auto back = DecodePprof(*encoded, {.keep_labels = false});
  ASSERT_TRUE(back);
  ASSERT_EQ(back->samples.size(), 2u);
  EXPECT_TRUE(back->samples[0].labels.empty());
  auto merged = Merge(std::vector<Profile>{*back});
  ASSERT_TRUE(merged);
  ASSERT_EQ(merged->samples.size(), 1u) << "without labels both samples share one stack";
  EXPECT_EQ(merged->samples[0].values, (std::vector<int64_t>{150, 3}));
}

TEST(PprofTest, EncodeRefusesSamplesThatDoNotFitTheProfile) {
  Profile p = RichProfile();
  p.samples[0].values.pop_back();
  EXPECT_FALSE(EncodePprof(p));
  p = RichProfile();
  p.samples[0].stack.push_back(99);
  auto bad = EncodePprof(p);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("frame 99"), std::string::npos);
}

TEST(PprofTest, UnresolvableMappingsAndDefaultTypeOnlyLoseTheirAnnotation) {
  PprofMessage b = CpuProfile();
  b.proto().mutable_location(0)->set_mapping_id(77);  // no such mapping
  b.proto().set_default_sample_type(12345);           // no such string
  auto p = DecodePprof(b.Gzipped());
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->default_sample_type, "");
  for (const Frame& f : p->frames) EXPECT_EQ(f.module, "");
}

TEST(PprofTest, GzipBombsAreRefused) {
  std::string big(4u << 20, '\0');
  auto gz = base::GzipCompress(big, 9);
  ASSERT_TRUE(gz);
  auto p = DecodePprof(*gz, {.max_uncompressed_bytes = 1u << 20});
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find("too large"), std::string::npos);
}

TEST(PprofTest, FlameTreeNodesCarryKindsAndOtherFoldsThem) {
  ProfileAggregator agg(std::vector<ValueType>{{"samples", "count"}});
  const uint32_t process = agg.InternFrame({"app", "", 0, "", "", "", FrameKind::kProcess});
  const uint32_t launch =
      agg.InternFrame({"cudaLaunchKernel", "", 0, "", "", "", FrameKind::kLaunch});
  const uint32_t kernel = agg.InternFrame({"gemm", "", 0, "", "", "", FrameKind::kKernel});
  const uint32_t unknown_main = agg.InternFrame({"main"});
  const uint32_t native_main =
      agg.InternFrame({"main", "", 0, "", "/bin/app", "", FrameKind::kNative});
  std::vector<uint32_t> sass;
  std::vector<uint32_t> mixed;
  for (int i = 0; i < 5; ++i) {
    sass.push_back(
        agg.InternFrame({"[sass] 0x" + std::to_string(i), "", 0, "", "", "", FrameKind::kSass}));
  }
  mixed.push_back(agg.InternFrame({"[stall] a", "", 0, "", "", "", FrameKind::kStall}));
  mixed.push_back(agg.InternFrame({"[sass] z", "", 0, "", "", "", FrameKind::kSass}));
  const int64_t big[] = {100};
  // "main" first without a kind, then native: the known kind wins.
  agg.Add(std::vector<uint32_t>{process, unknown_main}, big);
  agg.Add(std::vector<uint32_t>{process, native_main}, big);
  for (size_t i = 0; i < sass.size(); ++i) {
    const int64_t v[] = {static_cast<int64_t>(10 - i)};
    agg.Add(std::vector<uint32_t>{process, launch, kernel, sass[i]}, v);
  }
  const int64_t small[] = {1};
  for (uint32_t m : mixed) agg.Add(std::vector<uint32_t>{process, launch, m}, small);
  agg.Add(std::vector<uint32_t>{process, launch}, big);
  Profile p = std::move(agg).Take();

  FlameNode all = FlameTree(p);
  ASSERT_EQ(all.children.size(), 1u);
  EXPECT_EQ(all.kind, FrameKind::kUnknown);
  const FlameNode& app = all.children[0];
  EXPECT_EQ(app.kind, FrameKind::kProcess);
  ASSERT_EQ(app.children.size(), 2u);
  EXPECT_EQ(app.children[0].name, "main");
  EXPECT_EQ(app.children[0].kind, FrameKind::kNative);
  EXPECT_EQ(app.children[1].kind, FrameKind::kLaunch);
  nlohmann::json j = FlameNodeJson(all);
  EXPECT_EQ(j["kind"], "unknown");
  EXPECT_EQ(j["children"][0]["kind"], "process");
  EXPECT_EQ(j["children"][0]["children"][1]["children"][0]["kind"], "kernel");

  // Under the cap: the five SASS leaves fold into one "(other)" of kind sass; the stall and SASS
  // leaves under the launch fold into an "(other)" of no single kind.
  FlameNode capped = FlameTree(p, {.max_nodes = 7});
  EXPECT_LE(CountNodes(capped), 7u);
  const FlameNode& launch_node = capped.children[0].children[1];
  ASSERT_EQ(launch_node.name, "cudaLaunchKernel");
  const FlameNode* kernel_node = nullptr;
  const FlameNode* launch_other = nullptr;
  for (const FlameNode& c : launch_node.children) {
    if (c.name == "gemm") kernel_node = &c;
    if (c.name == "(other)") launch_other = &c;
  }
  ASSERT_NE(kernel_node, nullptr);
  ASSERT_NE(launch_other, nullptr);
  EXPECT_EQ(launch_other->kind, FrameKind::kUnknown);
  EXPECT_EQ(launch_other->total[0], 2);
  ASSERT_EQ(kernel_node->children.size(), 1u);
  EXPECT_EQ(kernel_node->children[0].name, "(other)");
  EXPECT_EQ(kernel_node->children[0].kind, FrameKind::kSass);
  EXPECT_EQ(kernel_node->children[0].total[0], 40);
  EXPECT_EQ(
      FlameNodeJson(capped)["children"][0]["children"][1]["children"][0]["children"][0]["kind"],
      "sass");
}

TEST(PprofTest, FlameTreeNodesCarryTheirFramesFileAndLine) {
  ProfileAggregator agg(std::vector<ValueType>{{"samples", "count"}});
  const uint32_t main_fn =
      agg.InternFrame({"main", "app.cc", 10, "", "/bin/app", "", FrameKind::kNative});
  const uint32_t dot_a = agg.InternFrame({"dot", "dot.h", 3, "", "/bin/app", "",
                                          FrameKind::kNative, /*inlined=*/true});
  const uint32_t dot_b = agg.InternFrame({"dot", "dot.h", 4, "", "/bin/app", "",
                                          FrameKind::kNative, /*inlined=*/true});
  const uint32_t bare = agg.InternFrame({"memcpy", "", 0, "", "/lib/libc.so", "",
                                         FrameKind::kNative});
  const int64_t one[] = {1};
  agg.Add(std::vector<uint32_t>{main_fn, dot_a}, one);
  agg.Add(std::vector<uint32_t>{main_fn, dot_b}, one);
  agg.Add(std::vector<uint32_t>{main_fn, bare}, one);
  FlameNode root = FlameTree(std::move(agg).Take());
  ASSERT_EQ(root.children.size(), 1u);
  const FlameNode& m = root.children[0];
  EXPECT_EQ(m.file, "app.cc");
  EXPECT_EQ(m.line, 10);
  EXPECT_FALSE(m.inlined);
  ASSERT_EQ(m.children.size(), 2u);
  const FlameNode& dot = m.children[0].name == "dot" ? m.children[0] : m.children[1];
  const FlameNode& libc = m.children[0].name == "dot" ? m.children[1] : m.children[0];
  // Two lines of one function merge into one node: its file, no single line.
  EXPECT_EQ(dot.file, "dot.h");
  EXPECT_EQ(dot.line, 0);
  EXPECT_TRUE(dot.inlined);
  nlohmann::json j = FlameNodeJson(root);
  EXPECT_EQ(j["children"][0]["file"], "app.cc");
  EXPECT_EQ(j["children"][0]["line"], 10);
  EXPECT_FALSE(j["children"][0].contains("inlined"));
  EXPECT_FALSE(j.contains("file"));
  EXPECT_TRUE(libc.file.empty());
  for (const auto& c : j["children"][0]["children"]) {
    if (c["name"] == "dot") {
      EXPECT_EQ(c["file"], "dot.h");
      EXPECT_FALSE(c.contains("line"));
      EXPECT_EQ(c["inlined"], true);
    } else {
      EXPECT_FALSE(c.contains("file"));
    }
  }
}

// One frame of every kind, as the profilers write them, each with and without a module.
Profile EveryKindProfile() {
  ProfileAggregator agg(std::vector<ValueType>{{"samples", "count"}});
  std::vector<Frame> frames = {
      {"python3", "/usr/bin/python3.12", 0, "", "", "", FrameKind::kProcess},
      {"train", "train.py", 3, "", "", "", FrameKind::kPython},
      {"at::native::add", "", 0, "_ZN2at6native3addEv", "/usr/lib/libtorch_cpu.so", "ab",
       FrameKind::kNative},
      {"cudaLaunchKernel", "", 0, "", "", "", FrameKind::kLaunch},
      {"gemm<float>", "", 0, "_Z4gemmIfEv", "", "", FrameKind::kKernel},
      {"[sass] 0x0040 FFMA R5, R2, R3, R4", "", 0, "", "", "", FrameKind::kSass},
      {"[stall] long_scoreboard", "", 0, "", "", "", FrameKind::kStall},
      {"[memcpy HtoD]", "", 0, "", "", "", FrameKind::kMemory},
      {"[unsampled launch site]", "", 0, "", "", "", FrameKind::kMarker},
      {"do_syscall_64", "", 0, "", "[kernel.kallsyms]", "", FrameKind::kOsKernel},
      {"nv_ioctl", "", 0, "", "[nvidia]", "", FrameKind::kOsKernel},
      {"jitted", "", 0, "", "[jit]", "", FrameKind::kNative},
      {"mystery", "", 0, "", "", "", FrameKind::kUnknown},
      // Kinds the fields would not imply: a Python frame in a module, a native frame in a file.
      {"py_in_module", "lib.py", 1, "", "/opt/lib.so", "", FrameKind::kPython},
      {"native_no_module", "x.c", 9, "", "", "", FrameKind::kNative},
      {"launch_in_module", "", 0, "", "/usr/lib/libcudart.so", "cd", FrameKind::kLaunch},
  };
  std::vector<uint32_t> stack;
  for (const Frame& f : frames) stack.push_back(agg.InternFrame(f));
  const int64_t one[] = {1};
  for (size_t i = 1; i <= stack.size(); ++i) {
    agg.Add(std::span<const uint32_t>(stack.data(), i), one);
  }
  return std::move(agg).Take();
}

TEST(PprofTest, EveryFrameKindSurvivesTheRoundTrip) {
  Profile p = EveryKindProfile();
  auto encoded = EncodePprof(p);
  ASSERT_TRUE(encoded) << encoded.error().message();
  auto back = DecodePprof(*encoded);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(*back, p);
  for (size_t i = 0; i < p.frames.size(); ++i) {
    EXPECT_EQ(back->frames[i].kind, p.frames[i].kind) << p.frames[i].function;
    EXPECT_EQ(back->frames[i].module, p.frames[i].module) << p.frames[i].function;
  }
}

TEST(PprofTest, KindsTheFieldsDoNotImplyRideOnASyntheticMappingName) {
  auto encoded = EncodePprof(EveryKindProfile());
  ASSERT_TRUE(encoded);
  pb::Profile raw;
  ASSERT_TRUE(raw.ParseFromString(base::GzipDecompress(*encoded).value()));
  std::vector<std::string> names;
  for (const auto& m : raw.mapping()) {
    names.push_back(raw.string_table(static_cast<int>(m.filename())));
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "[warpscope:process]", "/usr/lib/libtorch_cpu.so", "[warpscope:launch]",
                       "[warpscope:kernel]", "[kernel.kallsyms]", "[warpscope:os_kernel] [nvidia]",
                       "[jit]", "[warpscope:python] /opt/lib.so", "[warpscope:native]",
                       "[warpscope:launch] /usr/lib/libcudart.so"}));
  // Frames whose kind the fields imply (Python by file, SASS, stall, memory and marker names,
  // an unknown frame) have no mapping at all, as before.
  EXPECT_EQ(raw.location(1).mapping_id(), 0u);
  EXPECT_EQ(raw.location(5).mapping_id(), 0u);
  EXPECT_EQ(raw.location(12).mapping_id(), 0u);
}

TEST(PprofTest, ProfilesWithoutKindsGetInferredOnes) {
  PprofMessage b(Types{{"samples", "count"}});
  auto mapping = [&](const std::string& file) {
    auto* m = b.proto().add_mapping();
    m->set_id(static_cast<uint64_t>(b.proto().mapping_size()));
    m->set_filename(b.Str(file));
    return m->id();
  };
  uint64_t kernel_map = mapping("[kernel.kallsyms]");
  uint64_t lib_map = mapping("/lib/libc.so.6");
  uint64_t bogus_map = mapping("[warpscope:toaster]");
  uint64_t py = b.Location({{b.Function("main", "/srv/app.py"), 3}});
  uint64_t native = b.Location({{b.Function("memcpy"), 0}});
  b.proto().mutable_location(1)->set_mapping_id(lib_map);
  uint64_t os = b.Location({{b.Function("schedule"), 0}});
  b.proto().mutable_location(2)->set_mapping_id(kernel_map);
  uint64_t sass = b.Location({{b.Function("[sass] 0x10 LDG"), 0}});
  uint64_t stall = b.Location({{b.Function("[stall] wait"), 0}});
  uint64_t marker = b.Location({{b.Function("[unwinding stopped]"), 0}});
  uint64_t odd = b.Location({{b.Function("odd"), 0}});
  b.proto().mutable_location(6)->set_mapping_id(bogus_map);
  uint64_t plain = b.Location({{b.Function("plain", "plain.go"), 1}});
  b.Sample({stall, sass, os, native, py}, {1});
  b.Sample({plain, odd, marker, py}, {1});
  auto p = DecodePprof(b.Gzipped());
  ASSERT_TRUE(p) << p.error().message();
  std::map<std::string, FrameKind> kinds;
  for (const Frame& f : p->frames) kinds[f.function] = f.kind;
  EXPECT_EQ(kinds["main"], FrameKind::kPython);
  EXPECT_EQ(kinds["memcpy"], FrameKind::kNative);
  EXPECT_EQ(kinds["schedule"], FrameKind::kOsKernel);
  EXPECT_EQ(kinds["[sass] 0x10 LDG"], FrameKind::kSass);
  EXPECT_EQ(kinds["[stall] wait"], FrameKind::kStall);
  EXPECT_EQ(kinds["[unwinding stopped]"], FrameKind::kMarker);
  EXPECT_EQ(kinds["odd"], FrameKind::kNative) << "an unknown tag is a module like any other";
  EXPECT_EQ(kinds["plain"], FrameKind::kUnknown);
  for (const Frame& f : p->frames) {
    if (f.function == "odd") {
      EXPECT_EQ(f.module, "[warpscope:toaster]");
    }
  }
}

}  // namespace
}  // namespace warpscope::profiling
