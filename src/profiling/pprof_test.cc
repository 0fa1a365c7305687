// SPDX-License-Identifier: Apache-2.0
#include "profiling/pprof.h"

#include <gtest/gtest.h>

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
  // FrameKind does not travel in pprof; everything else does.
  for (Frame& f : p.frames) f.kind = FrameKind::kUnknown;
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

}  // namespace
}  // namespace warpscope::profiling
