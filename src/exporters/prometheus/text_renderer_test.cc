// SPDX-License-Identifier: Apache-2.0
#include "exporters/prometheus/text_renderer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "exporters/testing/sample_frame.h"

namespace warpscope::exporters {
namespace {

using model::EntityKind;
using model::MetricDesc;
using model::MetricKind;
using ::testing::HasSubstr;
using ::testing::Not;

const MetricDesc kTemp{"gpu.temperature",
                       EntityKind::kGpu,
                       MetricKind::kGauge,
                       "Cel",
                       "GPU temperature (in C).",
                       "DCGM_FI_DEV_GPU_TEMP",
                       1.0,
                       "hw.gpu.temperature"};
const MetricDesc kEnergy{"gpu.energy",
                         EntityKind::kGpu,
                         MetricKind::kCounter,
                         "J",
                         "Total energy consumption since boot (in mJ).",
                         "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                         1000.0,
                         "hw.energy"};
const MetricDesc kNvlinkTx{"gpu.nvlink.tx",
                           EntityKind::kGpu,
                           MetricKind::kCounter,
                           "By",
                           "Bytes transmitted over one NVLink link.",
                           "warpscope_gpu_nvlink_transmit_bytes_total",
                           1.0,
                           "hw.gpu.io"};
const MetricDesc kLoad{"host.load.1m",
                       EntityKind::kHost,
                       MetricKind::kGauge,
                       "1",
                       "One-minute load average.",
                       "warpscope_host_load1",
                       1.0,
                       "system.cpu.load_average.1m"};
const MetricDesc kFbUsed{"gpu.memory.used",
                         EntityKind::kGpu,
                         MetricKind::kGauge,
                         "By",
                         "Framebuffer memory used (in MiB).",
                         "DCGM_FI_DEV_FB_USED",
                         1.0 / 1048576,
                         "hw.gpu.memory.usage"};
const MetricDesc kMigFbUsed{"mig.memory.used",
                            EntityKind::kMigInstance,
                            MetricKind::kGauge,
                            "By",
                            "MIG framebuffer memory used (in MiB).",
                            "DCGM_FI_DEV_FB_USED",
                            1.0 / 1048576,
                            "hw.gpu.memory.usage"};
const MetricDesc kSmClock{"gpu.clock.sm",
                          EntityKind::kGpu,
                          MetricKind::kGauge,
                          "Hz",
                          "SM clock frequency (in MHz).",
                          "DCGM_FI_DEV_SM_CLOCK",
                          1e-6,
                          "warpscope.gpu.clock.sm"};
const MetricDesc kXid{"gpu.xid",
                      EntityKind::kGpu,
                      MetricKind::kGauge,
                      "1",
                      "Value of the last XID error encountered.",
                      "DCGM_FI_DEV_XID_ERRORS",
                      1.0,
                      "warpscope.gpu.xid"};
const MetricDesc kProcMem{"process.gpu.memory.used",
                          EntityKind::kProcess,
                          MetricKind::kGauge,
                          "By",
                          "GPU memory used by the process on one GPU.",
                          "warpscope_process_gpu_memory_used_bytes",
                          1.0,
                          "warpscope.process.gpu.memory.usage"};
const MetricDesc kExeMem{"executable.gpu.memory.used",
                         EntityKind::kExecutable,
                         MetricKind::kGauge,
                         "By",
                         "GPU memory used by one executable.",
                         "warpscope_executable_gpu_memory_used_bytes",
                         1.0,
                         "warpscope.executable.gpu.memory.usage"};

model::Entity Host(const std::string& name = "node1") {
  model::Entity e;
  e.kind = EntityKind::kHost;
  e.id = name;
  e.attributes.Set(model::attr::kHostName, name);
  return e;
}

model::Entity Gpu(int index, const std::string& uuid) {
  model::Entity e;
  e.kind = EntityKind::kGpu;
  e.id = uuid;
  e.parent = "node1";
  e.attributes.Set(model::attr::kGpuIndex, std::to_string(index));
  e.attributes.Set(model::attr::kGpuUuid, uuid);
  e.attributes.Set(model::attr::kGpuPciBusId, "00000000:17:00.0");
  e.attributes.Set(model::attr::kGpuModel, "NVIDIA H100 80GB HBM3");
  e.attributes.Set(model::attr::kDriverVersion, "550.127.08");
  return e;
}

void Add(model::Frame& f, const MetricDesc& m, const std::string& entity, double value,
         model::Labels labels = {}) {
  model::SeriesPoint p;
  p.metric = &m;
  p.entity = entity;
  p.labels = std::move(labels);
  p.avg = p.min = p.max = p.last = value;
  p.count = 1;
  f.series.push_back(std::move(p));
}

TextRenderer::Options NoTargetInfo() {
  TextRenderer::Options o;
  o.target_info = false;
  return o;
}

model::Frame SmallFrame() {
  model::Frame f;
  f.entities = {Host(), Gpu(0, "GPU-abc")};
  Add(f, kLoad, "node1", 0.5);
  Add(f, kNvlinkTx, "GPU-abc", 1e12, {{"link", "0"}});
  Add(f, kEnergy, "GPU-abc", 1234.5);
  Add(f, kTemp, "GPU-abc", 45);
  return f;
}

constexpr const char* kGpuLabels =
    R"(gpu="0",UUID="GPU-abc",pci_bus_id="00000000:17:00.0",device="nvidia0",)"
    R"(modelName="NVIDIA H100 80GB HBM3",Hostname="node1",DCGM_FI_DRIVER_VERSION="550.127.08")";

TEST(TextRendererTest, RendersText004Exactly) {
  TextRenderer r(NoTargetInfo());
  const std::string l = kGpuLabels;
  const std::string expected =
      "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
      "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
      "DCGM_FI_DEV_GPU_TEMP{" +
      l +
      "} 45\n"
      "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).\n"
      "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{" +
      l +
      "} 1234500\n"
      "# HELP warpscope_gpu_nvlink_transmit_bytes_total Bytes transmitted over one NVLink link.\n"
      "# TYPE warpscope_gpu_nvlink_transmit_bytes_total counter\n"
      "warpscope_gpu_nvlink_transmit_bytes_total{" +
      l +
      ",link=\"0\"} 1e+12\n"
      "# HELP warpscope_host_load1 One-minute load average.\n"
      "# TYPE warpscope_host_load1 gauge\n"
      "warpscope_host_load1{Hostname=\"node1\"} 0.5\n";
  EXPECT_EQ(r.Render(SmallFrame(), ExpositionFormat::kText004), expected);
}

TEST(TextRendererTest, RendersOpenMetricsExactly) {
  TextRenderer r(NoTargetInfo());
  const std::string l = kGpuLabels;
  const std::string expected =
      "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
      "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
      "DCGM_FI_DEV_GPU_TEMP{" +
      l +
      "} 45\n"
      "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION unknown\n"
      "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).\n"
      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{" +
      l +
      "} 1234500\n"
      "# TYPE warpscope_gpu_nvlink_transmit_bytes counter\n"
      "# UNIT warpscope_gpu_nvlink_transmit_bytes bytes\n"
      "# HELP warpscope_gpu_nvlink_transmit_bytes Bytes transmitted over one NVLink link.\n"
      "warpscope_gpu_nvlink_transmit_bytes_total{" +
      l +
      ",link=\"0\"} 1e+12\n"
      "# TYPE warpscope_host_load1 gauge\n"
      "# HELP warpscope_host_load1 One-minute load average.\n"
      "warpscope_host_load1{Hostname=\"node1\"} 0.5\n"
      "# EOF\n";
  EXPECT_EQ(r.Render(SmallFrame(), ExpositionFormat::kOpenMetrics1), expected);
}

TEST(TextRendererTest, RenderBothMatchesSeparateRenders) {
  TextRenderer r(NoTargetInfo());
  std::string text;
  std::string om;
  r.RenderBoth(SmallFrame(), &text, &om);
  TextRenderer other(NoTargetInfo());
  EXPECT_EQ(text, other.Render(SmallFrame(), ExpositionFormat::kText004));
  EXPECT_EQ(om, other.Render(SmallFrame(), ExpositionFormat::kOpenMetrics1));
}

TEST(TextRendererTest, ReusedRendererGivesTheSameOutput) {
  TextRenderer r(NoTargetInfo());
  std::string first = r.Render(SmallFrame(), ExpositionFormat::kText004);
  model::Frame other = SmallFrame();
  other.series.pop_back();
  (void)r.Render(other, ExpositionFormat::kText004);
  EXPECT_EQ(r.Render(SmallFrame(), ExpositionFormat::kText004), first);
}

TEST(TextRendererTest, EmptyFrame) {
  TextRenderer r(NoTargetInfo());
  EXPECT_EQ(r.Render(model::Frame{}, ExpositionFormat::kText004), "");
  EXPECT_EQ(r.Render(model::Frame{}, ExpositionFormat::kOpenMetrics1), "# EOF\n");
}

TEST(TextRendererTest, EscapesLabelValuesAndHelp) {
  const MetricDesc odd{"host.odd",
                       EntityKind::kHost,
                       MetricKind::kGauge,
                       "1",
                       "Help with \\ backslash, \"quotes\"\nand a newline.",
                       "warpscope_odd",
                       1.0,
                       "odd"};
  model::Frame f;
  f.entities = {Host()};
  Add(f, odd, "node1", 1, {{"device", "a\\b\"c\nd"}});
  TextRenderer r(NoTargetInfo());

  std::string text = r.Render(f, ExpositionFormat::kText004);
  EXPECT_THAT(text, HasSubstr("# HELP warpscope_odd Help with \\\\ backslash, \"quotes\"\\nand a "
                              "newline.\n"));
  EXPECT_THAT(text, HasSubstr(R"(device="a\\b\"c\nd")"));

  std::string om = r.Render(f, ExpositionFormat::kOpenMetrics1);
  EXPECT_THAT(om, HasSubstr("# HELP warpscope_odd Help with \\\\ backslash, \\\"quotes\\\"\\nand "
                            "a newline.\n"));
  EXPECT_THAT(om, HasSubstr(R"(device="a\\b\"c\nd")"));
}

TEST(TextRendererTest, FormatsSpecialFloats) {
  const MetricDesc a{"a", EntityKind::kHost, MetricKind::kGauge, "1", "a", "a", 1.0, "a"};
  const MetricDesc b{"b", EntityKind::kHost, MetricKind::kGauge, "1", "b", "b", 1.0, "b"};
  const MetricDesc c{"c", EntityKind::kHost, MetricKind::kGauge, "1", "c", "c", 1.0, "c"};
  const MetricDesc d{"d", EntityKind::kHost, MetricKind::kGauge, "1", "d", "d", 1.0, "d"};
  model::Frame f;
  f.entities = {Host()};
  Add(f, a, "node1", std::numeric_limits<double>::quiet_NaN());
  Add(f, b, "node1", std::numeric_limits<double>::infinity());
  Add(f, c, "node1", -std::numeric_limits<double>::infinity());
  Add(f, d, "node1", 0.1);
  TextRenderer r(NoTargetInfo());
  std::string text = r.Render(f, ExpositionFormat::kText004);
  EXPECT_THAT(text, HasSubstr("a{Hostname=\"node1\"} NaN\n"));
  EXPECT_THAT(text, HasSubstr("b{Hostname=\"node1\"} +Inf\n"));
  EXPECT_THAT(text, HasSubstr("c{Hostname=\"node1\"} -Inf\n"));
  EXPECT_THAT(text, HasSubstr("d{Hostname=\"node1\"} 0.1\n"));
}

TEST(TextRendererTest, ScalesByDividingForReciprocalScales) {
  model::Frame f;
  f.entities = {Host(), Gpu(0, "GPU-abc")};
  Add(f, kSmClock, "GPU-abc", 1980e6);
  Add(f, kFbUsed, "GPU-abc", 3.0 * 1048576);
  TextRenderer r(NoTargetInfo());
  std::string text = r.Render(f, ExpositionFormat::kText004);
  EXPECT_THAT(text, HasSubstr("\"} 1980\n"));
  EXPECT_THAT(text, HasSubstr("\"} 3\n"));
}

TEST(TextRendererTest, MigSeriesCarryParentGpuLabelsAndInstanceLabels) {
  model::Frame f;
  model::Entity mig;
  mig.kind = EntityKind::kMigInstance;
  mig.id = "GPU-abc/gi3";
  mig.parent = "GPU-abc";
  mig.attributes.Set(model::attr::kMigProfile, "1g.10gb");
  mig.attributes.Set(model::attr::kMigGpuInstanceId, "3");
  f.entities = {Host(), Gpu(0, "GPU-abc"), mig};
  Add(f, kMigFbUsed, "GPU-abc/gi3", 2.0 * 1048576);
  TextRenderer r(NoTargetInfo());
  EXPECT_THAT(r.Render(f, ExpositionFormat::kText004),
              HasSubstr(R"(DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-abc",)"
                        R"(pci_bus_id="00000000:17:00.0",device="nvidia0",)"
                        R"(modelName="NVIDIA H100 80GB HBM3",GPU_I_PROFILE="1g.10gb",)"
                        R"(GPU_I_ID="3",Hostname="node1",DCGM_FI_DRIVER_VERSION="550.127.08"} 2)"
                        "\n"));
}

TEST(TextRendererTest, DescsSharingAPrometheusNameShareOneFamily) {
  model::Frame f;
  model::Entity mig;
  mig.kind = EntityKind::kMigInstance;
  mig.id = "GPU-abc/gi1";
  mig.parent = "GPU-abc";
  mig.attributes.Set(model::attr::kMigGpuInstanceId, "1");
  f.entities = {Host(), Gpu(0, "GPU-abc"), mig};
  Add(f, kFbUsed, "GPU-abc", 4.0 * 1048576);
  Add(f, kTemp, "GPU-abc", 40);
  Add(f, kMigFbUsed, "GPU-abc/gi1", 1.0 * 1048576);
  TextRenderer r(NoTargetInfo());
  std::string text = r.Render(f, ExpositionFormat::kText004);
  size_t first = text.find("# TYPE DCGM_FI_DEV_FB_USED gauge");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(text.find("# TYPE DCGM_FI_DEV_FB_USED", first + 1), std::string::npos);
  EXPECT_EQ(text.find("# HELP DCGM_FI_DEV_FB_USED", first + 40), std::string::npos);
}

TEST(TextRendererTest, ProcessSeriesGetProcessLabelsAndMappedGpuLabels) {
  model::Frame f;
  model::Entity p;
  p.kind = EntityKind::kProcess;
  p.id = "pid/4242/99";
  p.attributes.Set(model::attr::kPid, "4242");
  p.attributes.Set(model::attr::kExecutable, "python3");
  p.attributes.Set(model::attr::kContainerId, "c0ffee");
  p.attributes.Set(model::attr::kPodUid, "pod-1");
  p.attributes.Set(model::attr::kCommandLine, "python3 train.py");
  f.entities = {Host(), p};
  Add(f, kProcMem, "pid/4242/99", 1024, {{"gpu.index", "1"}, {"gpu.uuid", "GPU-def"}});
  TextRenderer r(NoTargetInfo());
  EXPECT_EQ(r.Render(f, ExpositionFormat::kText004),
            "# HELP warpscope_process_gpu_memory_used_bytes GPU memory used by the process on one "
            "GPU.\n"
            "# TYPE warpscope_process_gpu_memory_used_bytes gauge\n"
            "warpscope_process_gpu_memory_used_bytes{pid=\"4242\",executable=\"python3\","
            "container_id=\"c0ffee\",pod_uid=\"pod-1\",Hostname=\"node1\",gpu=\"1\","
            "UUID=\"GPU-def\"} 1024\n");
}

TEST(TextRendererTest, ProcessInAPodGetsDcgmExporterPodLabels) {
  model::Frame f;
  model::Entity p;
  p.kind = EntityKind::kProcess;
  p.id = "pid/4242/99";
  p.attributes.Set(model::attr::kPid, "4242");
  p.attributes.Set(model::attr::kPodUid, "pod-1");
  p.attributes.Set(model::attr::kPodNamespace, "ml");
  p.attributes.Set(model::attr::kPodName, "trainer-0");
  p.attributes.Set(model::attr::kContainerName, "trainer");
  f.entities = {Host(), p};
  Add(f, kProcMem, "pid/4242/99", 1024, {{"gpu.index", "1"}});
  TextRenderer r(NoTargetInfo());
  EXPECT_NE(r.Render(f, ExpositionFormat::kText004)
                .find("warpscope_process_gpu_memory_used_bytes{pid=\"4242\",pod_uid=\"pod-1\","
                      "namespace=\"ml\",pod=\"trainer-0\",container=\"trainer\","
                      "Hostname=\"node1\",gpu=\"1\"} 1024\n"),
            std::string::npos);
}

TEST(TextRendererTest, ProcessWithoutContainerHasNoEmptyLabels) {
  model::Frame f;
  model::Entity p;
  p.kind = EntityKind::kProcess;
  p.id = "pid/7/1";
  p.attributes.Set(model::attr::kPid, "7");
  p.attributes.Set(model::attr::kExecutable, "a.out");
  f.entities = {Host(), p};
  Add(f, kProcMem, "pid/7/1", 1);
  TextRenderer r(NoTargetInfo());
  std::string text = r.Render(f, ExpositionFormat::kText004);
  EXPECT_THAT(text, HasSubstr(R"({pid="7",executable="a.out",Hostname="node1"} 1)"));
  EXPECT_THAT(text, Not(HasSubstr("container_id")));
}

TEST(TextRendererTest, ExecutableSeriesGetExecutableLabels) {
  model::Frame f;
  model::Entity e;
  e.kind = EntityKind::kExecutable;
  e.id = "exe//usr/bin/python3.11";
  e.attributes.Set(model::attr::kExecutable, "python3.11");
  e.attributes.Set(model::attr::kExecutablePath, "/usr/bin/python3.11");
  f.entities = {Host(), e};
  Add(f, kExeMem, e.id, 5);
  TextRenderer r(NoTargetInfo());
  EXPECT_THAT(r.Render(f, ExpositionFormat::kText004),
              HasSubstr(R"(warpscope_executable_gpu_memory_used_bytes{executable="python3.11",)"
                        R"(executable_path="/usr/bin/python3.11",Hostname="node1"} 5)"));
}

TEST(TextRendererTest, TagsAreAddedToEverySeriesWithSanitisedKeys) {
  TextRenderer::Options o = NoTargetInfo();
  o.constant_labels = {{"team.name", "ml-infra"}, {"1zone", "a"}, {"__name__", "x"}};
  TextRenderer r(o);
  std::string text = r.Render(SmallFrame(), ExpositionFormat::kText004);
  EXPECT_THAT(text, HasSubstr(R"(warpscope_host_load1{Hostname="node1",team_name="ml-infra",)"
                              R"(_1zone="a",name__="x"} 0.5)"));
  EXPECT_THAT(text, HasSubstr(R"(DCGM_FI_DRIVER_VERSION="550.127.08",team_name="ml-infra",)"
                              R"(_1zone="a",name__="x",link="0"})"));
}

TEST(TextRendererTest, HostnameOverrideWins) {
  TextRenderer::Options o = NoTargetInfo();
  o.hostname = "gpu-node-7";
  TextRenderer r(o);
  EXPECT_THAT(r.Render(SmallFrame(), ExpositionFormat::kText004),
              HasSubstr(R"(warpscope_host_load1{Hostname="gpu-node-7"} 0.5)"));
}

TEST(TextRendererTest, SeriesLabelsAreSanitisedAndCannotOverrideEntityLabels) {
  model::Frame f;
  f.entities = {Host()};
  Add(f, kLoad, "node1", 1, {{"Hostname", "spoof"}, {"net.iface-name", "eth0"}, {"empty", ""}});
  TextRenderer r(NoTargetInfo());
  EXPECT_THAT(r.Render(f, ExpositionFormat::kText004),
              HasSubstr(R"(warpscope_host_load1{Hostname="node1",net_iface_name="eth0"} 1)"));
}

TEST(TextRendererTest, InvalidMetricNamesAreSanitised) {
  const MetricDesc bad{
      "bad", EntityKind::kHost, MetricKind::kGauge, "1", "Bad name.", "9bad.name-x", 1.0, "bad"};
  model::Frame f;
  f.entities = {Host()};
  Add(f, bad, "node1", 1);
  TextRenderer r(NoTargetInfo());
  EXPECT_THAT(r.Render(f, ExpositionFormat::kText004),
              HasSubstr("_9bad_name_x{Hostname=\"node1\"} 1\n"));
}

TEST(TextRendererTest, XidSeriesGetErrCodeAndErrMsg) {
  model::Frame f;
  f.entities = {Host(), Gpu(0, "GPU-abc"), Gpu(1, "GPU-def")};
  Add(f, kXid, "GPU-abc", 79);
  Add(f, kXid, "GPU-def", 31);
  model::Event ev;
  ev.entity = "GPU-def";
  ev.kind = "xid";
  ev.code = 31;
  ev.message = "MMU fault on channel 7";
  f.events.push_back(ev);
  TextRenderer r(NoTargetInfo());
  std::string text = r.Render(f, ExpositionFormat::kText004);
  EXPECT_THAT(text, HasSubstr(R"(DCGM_FI_DRIVER_VERSION="550.127.08",err_code="79",)"
                              R"(err_msg="GPU has fallen off the bus"} 79)"));
  EXPECT_THAT(text, HasSubstr(R"(err_code="31",err_msg="MMU fault on channel 7"} 31)"));
}

TEST(TextRendererTest, FamiliesAreContiguousAndSeriesSorted) {
  model::Frame f;
  f.entities = {Host(), Gpu(1, "GPU-b"), Gpu(0, "GPU-a")};
  Add(f, kTemp, "GPU-b", 41);
  Add(f, kLoad, "node1", 1);
  Add(f, kTemp, "GPU-a", 40);
  TextRenderer r(NoTargetInfo());
  std::string text = r.Render(f, ExpositionFormat::kText004);
  size_t a = text.find("gpu=\"0\"");
  size_t b = text.find("gpu=\"1\"");
  size_t load = text.find("warpscope_host_load1{");
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  EXPECT_LT(a, b);
  EXPECT_LT(b, load);
}

TEST(TextRendererTest, DuplicateSeriesAreEmittedOnce) {
  model::Frame f;
  f.entities = {Host()};
  Add(f, kLoad, "node1", 1);
  Add(f, kLoad, "node1", 2);
  TextRenderer r(NoTargetInfo());
  std::string text = r.Render(f, ExpositionFormat::kText004);
  EXPECT_EQ(text.find("warpscope_host_load1{"), text.rfind("warpscope_host_load1{"));
}

TEST(TextRendererTest, SeriesOfAnUnknownEntityGetHostLabels) {
  model::Frame f;
  f.entities = {Host()};
  Add(f, kTemp, "GPU-gone", 50);
  TextRenderer r(NoTargetInfo());
  EXPECT_THAT(r.Render(f, ExpositionFormat::kText004),
              HasSubstr("DCGM_FI_DEV_GPU_TEMP{Hostname=\"node1\"} 50\n"));
}

TEST(TextRendererTest, TargetInfoInBothFormats) {
  TextRenderer::Options o;
  o.service_version = "1.2.3";
  o.constant_labels = {{"cluster", "c1"}};
  TextRenderer r(o);
  model::Frame f;
  f.entities = {Host()};
  std::string info = R"(target_info{service_name="warpscope-agent",service_version="1.2.3",)"
                     R"(Hostname="node1",cluster="c1"} 1)"
                     "\n";
  EXPECT_EQ(r.Render(f, ExpositionFormat::kText004),
            "# HELP target_info Target metadata.\n# TYPE target_info gauge\n" + info);
  EXPECT_EQ(r.Render(f, ExpositionFormat::kOpenMetrics1),
            "# TYPE target info\n# HELP target Target metadata.\n" + info + "# EOF\n");
}

TEST(TextRendererTest, SampleFrameHasOneHeaderPerFamily) {
  TextRenderer r(TextRenderer::Options{});
  std::string text = r.Render(sample::MakeSampleFrame(), ExpositionFormat::kText004);
  EXPECT_THAT(text, HasSubstr("# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"));
  size_t pos = text.find("# TYPE DCGM_FI_DEV_GPU_TEMP");
  EXPECT_EQ(text.find("# TYPE DCGM_FI_DEV_GPU_TEMP", pos + 1), std::string::npos);
  EXPECT_EQ(text.back(), '\n');
}

TEST(ExpositionContentTypeTest, BothFormats) {
  EXPECT_EQ(ExpositionContentType(ExpositionFormat::kText004),
            "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(ExpositionContentType(ExpositionFormat::kOpenMetrics1),
            "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

}  // namespace
}  // namespace warpscope::exporters
