// SPDX-License-Identifier: Apache-2.0
// ProcfsSource over the snapshots in test/data/root: gpuhost_t0 and gpuhost_t1, 10 s apart, on a
// 4-CPU host with USER_HZ 100 (each CPU advances by 1000 ticks between them). Expected values
// are derived in each test from the numbers in the snapshot files.
#include "agent/sources/procfs/procfs_source.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "agent/sources/procfs/host_metrics.h"
#include "agent/sources/procfs/procfs_process_resolver.h"
#include "agent/sources/procfs/procfs_test_util.h"
#include "model/testing/collecting_sink.h"

namespace warpscope::agent {
namespace {

using model::CollectingSink;
using model::Labels;
using testing::SnapshotCopy;
using testing::SnapshotT0;
using testing::SnapshotT1;

constexpr char kHost[] = "gpu-node-07";
constexpr double kKiB = 1024;
constexpr char kDockerId[] = "81fa5ffbb69a4a5b49534a618ada6e6903574cb069bc996347a9a62ee203649b";

ProcfsSourceOptions SnapshotOptions(const std::string& root) {
  ProcfsSourceOptions options;
  options.root = root;
  options.ticks_per_second = 100;
  options.page_size = 4096;
  return options;
}

// Source plus resolver over one root, with a fake clock.
class SourceFixture {
 public:
  explicit SourceFixture(ProcfsSourceOptions options)
      : resolver_(options.root),
        source_(options, clock_, resolver_,
                [this](std::string_view reason) { reported.emplace_back(reason); }) {}

  base::Status Start() { return source_.Start(); }
  CollectingSink Poll() {
    CollectingSink sink;
    resolver_.BeginCycle();
    source_.Poll(clock_.Now(), sink);
    return sink;
  }
  void Advance(base::Duration d) { clock_.Advance(d); }
  ProcfsSource& source() { return source_; }
  std::vector<std::string> reported;  // reasons passed to the error hook

 private:
  base::FakeClock clock_;
  ProcfsProcessResolver resolver_;
  ProcfsSource source_;
};

// Polls t0, then turns the copy into t1, advances 10 s and polls again; returns the 2nd cycle.
CollectingSink PollT0ThenT1(SnapshotCopy& copy, SourceFixture& fixture) {
  EXPECT_TRUE(fixture.Start().ok());
  fixture.Poll();
  std::filesystem::remove_all(copy.root());
  std::filesystem::copy(
      SnapshotT1(), copy.root(),
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  fixture.Advance(std::chrono::seconds(10));
  return fixture.Poll();
}

Labels Mode(std::string_view mode) { return Labels{{"mode", std::string(mode)}}; }
Labels CoreMode(std::string_view cpu, std::string_view mode) {
  return Labels{{"cpu", std::string(cpu)}, {"mode", std::string(mode)}};
}
Labels Dev(std::string_view device, std::string_view direction) {
  return Labels{{"device", std::string(device)}, {"direction", std::string(direction)}};
}
Labels Iface(std::string_view interface, std::string_view direction) {
  return Labels{{"interface", std::string(interface)}, {"direction", std::string(direction)}};
}

std::set<std::string> EntityIds(const CollectingSink& sink, model::EntityKind kind) {
  std::set<std::string> ids;
  for (const auto& e : sink.entities) {
    if (e.kind == kind) ids.insert(e.id);
  }
  return ids;
}

std::set<std::string> LabelValues(const CollectingSink& sink, std::string_view key,
                                  std::string_view label) {
  std::set<std::string> values;
  for (const auto& v : sink.values) {
    if (v.metric->key == key) values.insert(std::string(v.labels.Get(label)));
  }
  return values;
}

// ---- host, CPU --------------------------------------------------------------------------------

TEST(ProcfsSourceTest, DeclaresHostEntityNamedFromSnapshotHostname) {
  SourceFixture f(SnapshotOptions(SnapshotT0()));
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  const model::Entity* host = sink.FindEntity(kHost);
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->kind, model::EntityKind::kHost);
  EXPECT_EQ(host->attributes.Get(model::attr::kHostName), kHost);
}

TEST(ProcfsSourceTest, HostIdOptionOverridesHostname) {
  ProcfsSourceOptions options = SnapshotOptions(SnapshotT0());
  options.host_id = "node-a";
  SourceFixture f(options);
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  EXPECT_NE(sink.FindEntity("node-a"), nullptr);
  EXPECT_EQ(sink.Find("host.load.1m", "node-a"), 3.52);
}

TEST(ProcfsSourceTest, CpuTimesInSecondsOnFirstPollWithoutUtilization) {
  SourceFixture f(SnapshotOptions(SnapshotT0()));
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  // cpu  42000 200 10300 319000 1400 0 500 0 at USER_HZ 100.
  EXPECT_EQ(sink.Find("host.cpu.time", kHost, Mode("user")), 420.0);
  EXPECT_EQ(sink.Find("host.cpu.time", kHost, Mode("system")), 103.0);
  EXPECT_EQ(sink.Find("host.cpu.time", kHost, Mode("idle")), 3190.0);
  EXPECT_EQ(sink.Find("host.cpu.time", kHost, Mode("iowait")), 14.0);
  EXPECT_EQ(sink.Find("host.cpu.time", kHost, Mode("steal")), 0.0);
  // cpu2 9000 20 2000 ...
  EXPECT_EQ(sink.Find("host.cpu.core.time", kHost, CoreMode("2", "system")), 20.0);
  EXPECT_EQ(sink.Find("host.cpu.logical_count", kHost), 4.0);
  EXPECT_FALSE(sink.Has("host.cpu.utilization"));
  EXPECT_FALSE(sink.Has("host.cpu.core.utilization"));
}

TEST(ProcfsSourceTest, CpuUtilizationFromDeltasBetweenPolls) {
  SnapshotCopy copy(SnapshotT0());
  SourceFixture f(SnapshotOptions(copy.root()));
  CollectingSink sink = PollT0ThenT1(copy, f);
  // Aggregate deltas: user 1800, nice 100, system 230, idle 1790, iowait 40, irq 0,
  // softirq 20, steal 20; sum 4000 (4 CPUs x 1000 ticks).
  EXPECT_DOUBLE_EQ(*sink.Find("host.cpu.utilization", kHost, Mode("user")), 1800.0 / 4000);
  EXPECT_DOUBLE_EQ(*sink.Find("host.cpu.utilization", kHost, Mode("nice")), 100.0 / 4000);
  EXPECT_DOUBLE_EQ(*sink.Find("host.cpu.utilization", kHost, Mode("idle")), 1790.0 / 4000);
  EXPECT_DOUBLE_EQ(*sink.Find("host.cpu.utilization", kHost, Mode("steal")), 20.0 / 4000);
  EXPECT_DOUBLE_EQ(*sink.Find("host.cpu.utilization", kHost, Mode("irq")), 0.0);
  // cpu0: user 600, system 100, idle 250, iowait 30, softirq 20 of 1000.
  EXPECT_DOUBLE_EQ(*sink.Find("host.cpu.core.utilization", kHost, CoreMode("0", "user")), 0.6);
  EXPECT_DOUBLE_EQ(*sink.Find("host.cpu.core.utilization", kHost, CoreMode("0", "iowait")), 0.03);
  // cpu3: steal 20 of 1000.
  EXPECT_DOUBLE_EQ(*sink.Find("host.cpu.core.utilization", kHost, CoreMode("3", "steal")), 0.02);
}

TEST(ProcfsSourceTest, CpuUtilizationModesSumToOne) {
  SnapshotCopy copy(SnapshotT0());
  SourceFixture f(SnapshotOptions(copy.root()));
  CollectingSink sink = PollT0ThenT1(copy, f);
  double sum = 0;
  int n = 0;
  for (const auto& v : sink.values) {
    if (v.metric->key == "host.cpu.utilization") {
      sum += v.value;
      ++n;
    }
  }
  EXPECT_EQ(n, 8);
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST(ProcfsSourceTest, PerCoreSeriesCanBeTurnedOff) {
  ProcfsSourceOptions options = SnapshotOptions(SnapshotT0());
  options.per_core_cpu = false;
  SourceFixture f(options);
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  EXPECT_TRUE(sink.Has("host.cpu.time"));
  EXPECT_FALSE(sink.Has("host.cpu.core.time"));
}

// ---- load, memory -----------------------------------------------------------------------------

TEST(ProcfsSourceTest, LoadAverages) {
  SourceFixture f(SnapshotOptions(SnapshotT0()));
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  EXPECT_EQ(sink.Find("host.load.1m", kHost), 3.52);
  EXPECT_EQ(sink.Find("host.load.5m", kHost), 2.91);
  EXPECT_EQ(sink.Find("host.load.15m", kHost), 2.40);
}

TEST(ProcfsSourceTest, MemoryInBytesWithUsedAsTotalMinusAvailable) {
  SourceFixture f(SnapshotOptions(SnapshotT0()));
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  // MemTotal 65842260 kB, MemAvailable 40123456 kB -> used 25718804 kB.
  EXPECT_EQ(sink.Find("host.memory.total", kHost), 65842260 * kKiB);
  EXPECT_EQ(sink.Find("host.memory.available", kHost), 40123456 * kKiB);
  EXPECT_EQ(sink.Find("host.memory.used", kHost), 25718804 * kKiB);
  EXPECT_EQ(sink.Find("host.memory.free", kHost), 1203456 * kKiB);
  EXPECT_EQ(sink.Find("host.memory.cached", kHost), 35123456 * kKiB);
  EXPECT_EQ(sink.Find("host.memory.buffers", kHost), 523456 * kKiB);
  EXPECT_DOUBLE_EQ(*sink.Find("host.memory.utilization", kHost), 25718804.0 / 65842260.0);
}

TEST(ProcfsSourceTest, SwapTotalFreeUsed) {
  SourceFixture f(SnapshotOptions(SnapshotT0()));
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  // SwapTotal 8388604 kB, SwapFree 8123456 kB.
  EXPECT_EQ(sink.Find("host.swap.total", kHost), 8388604 * kKiB);
  EXPECT_EQ(sink.Find("host.swap.free", kHost), 8123456 * kKiB);
  EXPECT_EQ(sink.Find("host.swap.used", kHost), 265148 * kKiB);
}

// ---- disks, network ---------------------------------------------------------------------------

TEST(ProcfsSourceTest, DiskCountersForWholePhysicalDisksOnly) {
  SourceFixture f(SnapshotOptions(SnapshotT0()));
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  // loop0, ram0 and dm-0 are excluded by name; sda1, sda2, nvme0n1p1 are not in sys/block.
  EXPECT_EQ(LabelValues(sink, "host.disk.io", "device"), (std::set<std::string>{"nvme0n1", "sda"}));
  // sda: 120000 reads, 9600000 sectors read, 80000 writes, 6400000 sectors written, 120000 ms.
  EXPECT_EQ(sink.Find("host.disk.io", kHost, Dev("sda", "read")), 9600000.0 * 512);
  EXPECT_EQ(sink.Find("host.disk.io", kHost, Dev("sda", "write")), 6400000.0 * 512);
  EXPECT_EQ(sink.Find("host.disk.operations", kHost, Dev("sda", "read")), 120000.0);
  EXPECT_EQ(sink.Find("host.disk.operations", kHost, Dev("sda", "write")), 80000.0);
  EXPECT_EQ(sink.Find("host.disk.io_time", kHost, Labels{{"device", "sda"}}), 120.0);
}

TEST(ProcfsSourceTest, DiskFiltersAreConfigurable) {
  ProcfsSourceOptions options = SnapshotOptions(SnapshotT0());
  options.disk_exclude = {"ram*"};
  options.disk_partitions = true;
  SourceFixture f(options);
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  EXPECT_EQ(
      LabelValues(sink, "host.disk.io", "device"),
      (std::set<std::string>{"dm-0", "loop0", "nvme0n1", "nvme0n1p1", "sda", "sda1", "sda2"}));
}

TEST(ProcfsSourceTest, NetworkCountersSkipLoopbackAndVeth) {
  SourceFixture f(SnapshotOptions(SnapshotT0()));
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  EXPECT_EQ(LabelValues(sink, "host.network.io", "interface"),
            (std::set<std::string>{"docker0", "eth0"}));
  EXPECT_EQ(sink.Find("host.network.io", kHost, Iface("eth0", "receive")), 9876543210.0);
  EXPECT_EQ(sink.Find("host.network.io", kHost, Iface("eth0", "transmit")), 5432109876.0);
  EXPECT_EQ(sink.Find("host.network.packets", kHost, Iface("eth0", "transmit")), 9876543.0);
  EXPECT_EQ(sink.Find("host.network.errors", kHost, Iface("eth0", "receive")), 3.0);
  EXPECT_EQ(sink.Find("host.network.dropped", kHost, Iface("eth0", "receive")), 12.0);
  EXPECT_EQ(sink.Find("host.network.dropped", kHost, Iface("eth0", "transmit")), 2.0);
}

TEST(ProcfsSourceTest, InterfaceFilterCanIncludeLoopback) {
  ProcfsSourceOptions options = SnapshotOptions(SnapshotT0());
  options.interface_exclude = {};
  SourceFixture f(options);
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  EXPECT_EQ(sink.Find("host.network.io", kHost, Iface("lo", "receive")), 123456789.0);
  EXPECT_EQ(LabelValues(sink, "host.network.io", "interface").size(), 4u);
}

// ---- processes --------------------------------------------------------------------------------

TEST(ProcfsSourceTest, ProcessCountIsTheNumericDirectoriesOfProc) {
  SourceFixture f(SnapshotOptions(SnapshotT0()));
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  // 1 2 777 1234 2345 3456 4567 4600 9999; "self", "net", "sys" are not processes.
  EXPECT_EQ(sink.Find("host.process.count", kHost), 9.0);
}

TEST(ProcfsSourceTest, FirstPollRanksProcessesByLifetimeCpu) {
  ProcfsSourceOptions options = SnapshotOptions(SnapshotT0());
  options.top_processes = 2;
  SourceFixture f(options);
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  // Lifetime ticks: 1234 54000, 2345 32000, 3456 6000, 4567 300, ...
  EXPECT_EQ(EntityIds(sink, model::EntityKind::kProcess),
            (std::set<std::string>{"pid/1234/300000", "pid/2345/310000"}));
  EXPECT_EQ(sink.Find("process.cpu.time", "pid/1234/300000"), 540.0);
  EXPECT_EQ(sink.Find("process.memory.rss", "pid/1234/300000"), 2621440.0 * 4096);
  EXPECT_EQ(sink.Find("process.memory.virtual", "pid/1234/300000"), 34359738368.0);
  EXPECT_EQ(sink.Find("process.threads", "pid/1234/300000"), 24.0);
  EXPECT_FALSE(sink.Has("process.cpu.utilization"));
}

TEST(ProcfsSourceTest, TopProcessesOverTheIntervalWithUtilization) {
  SnapshotCopy copy(SnapshotT0());
  ProcfsSourceOptions options = SnapshotOptions(copy.root());
  options.top_processes = 3;
  SourceFixture f(options);
  CollectingSink sink = PollT0ThenT1(copy, f);
  // Interval ticks: 1234 1600, 2345 800, 5678 300 (new), 777 60 (pid reused), 3456 5, 1 3.
  EXPECT_EQ(EntityIds(sink, model::EntityKind::kProcess),
            (std::set<std::string>{"pid/1234/300000", "pid/2345/310000", "pid/5678/395000"}));
  // Capacity over 10 s: 10 s x 100 ticks/s x 4 CPUs = 4000 ticks.
  EXPECT_DOUBLE_EQ(*sink.Find("process.cpu.utilization", "pid/1234/300000"), 1600.0 / 4000);
  EXPECT_DOUBLE_EQ(*sink.Find("process.cpu.utilization", "pid/2345/310000"), 800.0 / 4000);
  EXPECT_DOUBLE_EQ(*sink.Find("process.cpu.utilization", "pid/5678/395000"), 300.0 / 4000);
  EXPECT_EQ(sink.Find("process.cpu.time", "pid/1234/300000"), 556.0);  // 51500 + 4100 ticks
}

TEST(ProcfsSourceTest, ReusedPidCountsAsANewProcess) {
  SnapshotCopy copy(SnapshotT0());
  ProcfsSourceOptions options = SnapshotOptions(copy.root());
  options.top_processes = 4;
  SourceFixture f(options);
  CollectingSink sink = PollT0ThenT1(copy, f);
  // pid 777 was cron (start 5000, 15 ticks) and is now bash (start 390000, 60 ticks): all 60
  // ticks fall in the interval, not 60 - 15.
  EXPECT_DOUBLE_EQ(*sink.Find("process.cpu.utilization", "pid/777/390000"), 60.0 / 4000);
  EXPECT_EQ(sink.FindEntity("pid/777/5000"), nullptr);
}

TEST(ProcfsSourceTest, ProcessesOfInterestAreReportedOutsideTheTopN) {
  SnapshotCopy copy(SnapshotT0());
  ProcfsSourceOptions options = SnapshotOptions(copy.root());
  options.top_processes = 1;
  SourceFixture f(options);
  // 31337 does not exist.
  f.source().SetProcessesOfInterest({{3456, 320000}, {31337, 1}, {3456, 320000}});
  CollectingSink sink = PollT0ThenT1(copy, f);
  EXPECT_EQ(EntityIds(sink, model::EntityKind::kProcess),
            (std::set<std::string>{"pid/1234/300000", "pid/3456/320000"}));
  EXPECT_DOUBLE_EQ(*sink.Find("process.cpu.utilization", "pid/3456/320000"), 5.0 / 4000);
  EXPECT_EQ(sink.Find("process.memory.rss", "pid/3456/320000"), 1048576.0 * 4096);
}

TEST(ProcfsSourceTest, OnlyProcessesOfInterestWhenTopIsZero) {
  ProcfsSourceOptions options = SnapshotOptions(SnapshotT0());
  options.top_processes = 0;
  SourceFixture f(options);
  f.source().SetProcessesOfInterest({{2345, 310000}});
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  EXPECT_EQ(EntityIds(sink, model::EntityKind::kProcess),
            (std::set<std::string>{"pid/2345/310000"}));
}

TEST(ProcfsSourceTest, AReusedPidIsNotTheProcessOfInterest) {
  SnapshotCopy copy(SnapshotT0());
  ProcfsSourceOptions options = SnapshotOptions(copy.root());
  options.top_processes = 0;
  SourceFixture f(options);
  // cron (pid 777, start 5000) is of interest; at t1 pid 777 is bash (start 390000).
  f.source().SetProcessesOfInterest({{777, 5000}});
  ASSERT_TRUE(f.Start().ok());
  CollectingSink t0 = f.Poll();
  EXPECT_EQ(EntityIds(t0, model::EntityKind::kProcess), (std::set<std::string>{"pid/777/5000"}));
  std::filesystem::remove_all(copy.root());
  std::filesystem::copy(
      SnapshotT1(), copy.root(),
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  f.Advance(std::chrono::seconds(10));
  CollectingSink t1 = f.Poll();
  EXPECT_TRUE(EntityIds(t1, model::EntityKind::kProcess).empty());
  EXPECT_FALSE(t1.Has("process.cpu.time"));
}

TEST(ProcfsSourceTest, AProcessOfInterestWithoutAStartTimeNamesNoLocalProcess) {
  ProcfsSourceOptions options = SnapshotOptions(SnapshotT0());
  options.top_processes = 0;
  SourceFixture f(options);
  // pid 2345 exists, but an identity without a start time (a simulated GPU's process, or one
  // from another pid namespace) is not it; nor is one with another start time.
  f.source().SetProcessesOfInterest({{2345, 0}, {1234, 299999}});
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  EXPECT_TRUE(EntityIds(sink, model::EntityKind::kProcess).empty());
  EXPECT_FALSE(sink.Has("process.cpu.time"));
  EXPECT_EQ(sink.Find("host.process.count", kHost), 9.0);
}

TEST(ProcfsSourceTest, NoProcessSeriesWithoutTopNOrProcessesOfInterest) {
  ProcfsSourceOptions options = SnapshotOptions(SnapshotT0());
  options.top_processes = 0;
  SourceFixture f(options);
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  EXPECT_TRUE(EntityIds(sink, model::EntityKind::kProcess).empty());
  EXPECT_EQ(sink.Find("host.process.count", kHost), 9.0);
}

TEST(ProcfsSourceTest, ContainerProcessComesWithItsContainerEntity) {
  ProcfsSourceOptions options = SnapshotOptions(SnapshotT0());
  options.top_processes = 0;
  SourceFixture f(options);
  f.source().SetProcessesOfInterest({{2345, 310000}});
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  const model::Entity* process = sink.FindEntity("pid/2345/310000");
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->parent, std::string("ctr/") + kDockerId);
  EXPECT_EQ(process->attributes.Get(model::attr::kNsPid), "1");
  const model::Entity* container = sink.FindEntity(std::string("ctr/") + kDockerId);
  ASSERT_NE(container, nullptr);
  EXPECT_EQ(container->kind, model::EntityKind::kContainer);
}

TEST(ProcfsSourceTest, VanishedProcessIsSkippedQuietly) {
  ProcfsSourceOptions options = SnapshotOptions(SnapshotT0());
  options.top_processes = 100;
  SourceFixture f(options);
  // Listed in /proc, but its stat file is gone.
  f.source().SetProcessesOfInterest({{9999, 1}});
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  EXPECT_EQ(EntityIds(sink, model::EntityKind::kProcess).size(), 8u);
  EXPECT_EQ(f.source().error_count(ProcfsError::kProcessStatUnreadable), 0u);
  EXPECT_EQ(f.source().error_count(ProcfsError::kProcessStatMalformed), 0u);
}

// ---- errors -----------------------------------------------------------------------------------

TEST(ProcfsSourceTest, HealthySnapshotReportsNoErrors) {
  SourceFixture f(SnapshotOptions(SnapshotT0()));
  ASSERT_TRUE(f.Start().ok());
  f.Poll();
  for (size_t e = 0; e < kProcfsErrorCount; ++e) {
    EXPECT_EQ(f.source().error_count(static_cast<ProcfsError>(e)), 0u)
        << ProcfsErrorName(static_cast<ProcfsError>(e));
  }
}

TEST(ProcfsSourceTest, UnreadableMeminfoIsCountedAndOnlyMemoryIsSkipped) {
  SnapshotCopy copy(SnapshotT0());
  std::filesystem::remove(copy.path("proc/meminfo"));
  SourceFixture f(SnapshotOptions(copy.root()));
  ASSERT_TRUE(f.Start().ok());
  f.Poll();
  CollectingSink sink = f.Poll();
  EXPECT_EQ(f.source().error_count(ProcfsError::kMeminfoUnreadable), 2u);
  EXPECT_EQ(f.reported, (std::vector<std::string>{"meminfo_unreadable", "meminfo_unreadable"}));
  EXPECT_FALSE(sink.Has("host.memory.total"));
  EXPECT_FALSE(sink.Has("host.swap.total"));
  EXPECT_TRUE(sink.Has("host.cpu.time"));
  EXPECT_TRUE(sink.Has("host.load.1m"));
}

TEST(ProcfsSourceTest, MalformedLoadavgIsCounted) {
  SnapshotCopy copy(SnapshotT0());
  std::ofstream(copy.path("proc/loadavg"), std::ios::trunc) << "not a load average\n";
  SourceFixture f(SnapshotOptions(copy.root()));
  ASSERT_TRUE(f.Start().ok());
  CollectingSink sink = f.Poll();
  EXPECT_EQ(f.source().error_count(ProcfsError::kLoadavgMalformed), 1u);
  EXPECT_FALSE(sink.Has("host.load.1m"));
}

TEST(ProcfsSourceTest, UnreadableProcessStatIsCounted) {
  SnapshotCopy copy(SnapshotT0());
  // A directory where the file should be: open() works, read() fails with EISDIR, which unlike
  // ENOENT/ESRCH does not mean the process exited.
  std::filesystem::remove(copy.path("proc/4600/stat"));
  std::filesystem::create_directory(copy.path("proc/4600/stat"));
  SourceFixture f(SnapshotOptions(copy.root()));
  ASSERT_TRUE(f.Start().ok());
  f.Poll();
  EXPECT_EQ(f.source().error_count(ProcfsError::kProcessStatUnreadable), 1u);
}

TEST(ProcfsSourceTest, MalformedProcessStatIsCounted) {
  SnapshotCopy copy(SnapshotT0());
  std::ofstream(copy.path("proc/4600/stat"), std::ios::trunc) << "4600 (sd-pam S 1\n";
  SourceFixture f(SnapshotOptions(copy.root()));
  ASSERT_TRUE(f.Start().ok());
  f.Poll();
  EXPECT_EQ(f.source().error_count(ProcfsError::kProcessStatMalformed), 1u);
}

TEST(ProcfsSourceTest, UnreadableProcStatLosesCpuUtilizationContinuity) {
  SnapshotCopy copy(SnapshotT0());
  SourceFixture f(SnapshotOptions(copy.root()));
  ASSERT_TRUE(f.Start().ok());
  f.Poll();
  std::filesystem::rename(copy.path("proc/stat"), copy.path("proc/stat.saved"));
  CollectingSink missing = f.Poll();
  EXPECT_EQ(f.source().error_count(ProcfsError::kStatUnreadable), 1u);
  EXPECT_FALSE(missing.Has("host.cpu.time"));
  std::filesystem::rename(copy.path("proc/stat.saved"), copy.path("proc/stat"));
  // The first poll after the gap has nothing to compare with.
  EXPECT_FALSE(f.Poll().Has("host.cpu.utilization"));
}

TEST(ProcfsSourceTest, StartFailsWithoutProcStat) {
  SnapshotCopy copy(SnapshotT0());
  std::filesystem::remove(copy.path("proc/stat"));
  SourceFixture f(SnapshotOptions(copy.root()));
  base::Status status = f.Start();
  EXPECT_EQ(status.code(), base::StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("proc/stat"), std::string::npos);
  EXPECT_NE(status.message().find("--enable-host-metrics=false"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::agent
