// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/procfs/procfs_parse.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace warpscope::agent::procfs {
namespace {

constexpr std::string_view kPythonStat =
    "1234 (python3) R 1 1234 1234 0 -1 4194560 15234 0 12 0 50000 4000 0 0 20 0 24 0 300000 "
    "34359738368 2621440 18446744073709551615 94371823284224 94371823300000 140733000000000 0 0 "
    "0 0 4096 81926 0 0 0 17 2 0 0 0 0 0 94371823310000 94371823320000 94371850000000 "
    "140733000001000 140733000001100 140733000001100 140733000002000 0\n";

// ---- stat -------------------------------------------------------------------------------------

TEST(ParseProcStatTest, ReadsTheFieldsWeUse) {
  std::optional<ProcStat> st = ParseProcStat(kPythonStat);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->pid, 1234);
  EXPECT_EQ(st->comm, "python3");
  EXPECT_EQ(st->state, 'R');
  EXPECT_EQ(st->ppid, 1);
  EXPECT_EQ(st->utime_ticks, 50000u);
  EXPECT_EQ(st->stime_ticks, 4000u);
  EXPECT_EQ(st->num_threads, 24);
  EXPECT_EQ(st->start_ticks, 300000u);
  EXPECT_EQ(st->vsize_bytes, 34359738368u);
  EXPECT_EQ(st->rss_pages, 2621440);
}

TEST(ParseProcStatTest, CommWithSpacesAndParenthesesEndsAtTheLastParenthesis) {
  std::optional<ProcStat> st = ParseProcStat(
      "4567 (my) proc (x) S 1 4567 4567 0 -1 4194560 1 0 0 0 200 100 0 0 20 0 2 0 330000 "
      "10485760 2048 0 0 0 0");
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->comm, "my) proc (x");
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->utime_ticks, 200u);
  EXPECT_EQ(st->start_ticks, 330000u);
  EXPECT_EQ(st->rss_pages, 2048);
}

TEST(ParseProcStatTest, CommThatIsItselfParenthesized) {
  std::optional<ProcStat> st = ParseProcStat(
      "4600 ((sd-pam)) S 4590 4600 4600 0 -1 1 0 0 0 0 0 0 0 0 20 0 1 0 5100 104857600 900");
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->comm, "(sd-pam)");
  EXPECT_EQ(st->start_ticks, 5100u);
}

TEST(ParseProcStatTest, RejectsTruncatedLine) {
  EXPECT_FALSE(ParseProcStat("1234 (python3) R 1 1234 1234 0 -1 4194560 15234 0 12 0 50000"));
}

TEST(ParseProcStatTest, RejectsMissingParentheses) {
  EXPECT_FALSE(ParseProcStat("1234 python3 R 1 2 3"));
  EXPECT_FALSE(ParseProcStat(""));
}

TEST(ParseProcStatTest, RejectsNonNumericCounter) {
  std::string line(kPythonStat);
  line.replace(line.find("50000"), 5, "5x000");
  EXPECT_FALSE(ParseProcStat(line));
}

// ---- /proc/stat -------------------------------------------------------------------------------

TEST(ParseCpuStatTest, ReadsAggregateAndPerCpuLines) {
  CpuTimes total;
  std::vector<CpuTimes> cores;
  ASSERT_TRUE(
      ParseCpuStat("cpu  42000 200 10300 319000 1400 0 500 7 11 13\n"
                   "cpu0 10000 100 3000 80000 500 0 200 3 5 7\n"
                   "cpu3 11000 30 2800 79000 200 0 50 4 6 6\n"
                   "intr 1 2 3\nctxt 99\n",
                   total, cores));
  EXPECT_EQ(total.cpu, -1);
  EXPECT_EQ(total.ticks[0], 42000u);   // user
  EXPECT_EQ(total.ticks[3], 319000u);  // idle
  EXPECT_EQ(total.ticks[7], 7u);       // steal; guest columns are not read
  ASSERT_EQ(cores.size(), 2u);
  EXPECT_EQ(cores[0].cpu, 0);
  EXPECT_EQ(cores[1].cpu, 3);  // offline CPUs leave gaps
  EXPECT_EQ(cores[1].ticks[2], 2800u);
}

TEST(ParseCpuStatTest, OldKernelWithFourColumns) {
  CpuTimes total;
  std::vector<CpuTimes> cores;
  ASSERT_TRUE(ParseCpuStat("cpu 1 2 3 4\ncpu0 1 2 3 4\n", total, cores));
  EXPECT_EQ(total.ticks[3], 4u);
  EXPECT_EQ(total.ticks[4], 0u);
}

TEST(ParseCpuStatTest, MissingAggregateIsMalformed) {
  CpuTimes total;
  std::vector<CpuTimes> cores;
  EXPECT_FALSE(ParseCpuStat("cpu0 1 2 3 4 5 6 7 8\n", total, cores));
}

TEST(ParseCpuStatTest, ShortLineIsMalformed) {
  CpuTimes total;
  std::vector<CpuTimes> cores;
  EXPECT_FALSE(ParseCpuStat("cpu 1 2 3 4 5 6 7 8\ncpu0 1 2\n", total, cores));
}

TEST(CpuModeNameTest, ColumnOrder) {
  EXPECT_EQ(CpuModeName(0), "user");
  EXPECT_EQ(CpuModeName(4), "iowait");
  EXPECT_EQ(CpuModeName(7), "steal");
}

// ---- meminfo, loadavg -------------------------------------------------------------------------

TEST(ParseMeminfoTest, ConvertsKibibytesToBytes) {
  std::optional<MemInfo> mem = ParseMeminfo(
      "MemTotal:       65842260 kB\nMemFree:         1203456 kB\nMemAvailable:   40123456 kB\n"
      "Buffers:          523456 kB\nCached:         35123456 kB\nSwapCached:         1024 kB\n"
      "SwapTotal:       8388604 kB\nSwapFree:        8123456 kB\nHugePages_Total:       0\n");
  ASSERT_TRUE(mem.has_value());
  EXPECT_EQ(*mem->mem_total, 65842260ull * 1024);
  EXPECT_EQ(*mem->mem_free, 1203456ull * 1024);
  EXPECT_EQ(*mem->mem_available, 40123456ull * 1024);
  EXPECT_EQ(*mem->buffers, 523456ull * 1024);
  EXPECT_EQ(*mem->cached, 35123456ull * 1024);  // not SwapCached
  EXPECT_EQ(*mem->swap_total, 8388604ull * 1024);
  EXPECT_EQ(*mem->swap_free, 8123456ull * 1024);
}

TEST(ParseMeminfoTest, OldKernelWithoutMemAvailable) {
  std::optional<MemInfo> mem = ParseMeminfo("MemTotal: 1000 kB\nMemFree: 100 kB\n");
  ASSERT_TRUE(mem.has_value());
  EXPECT_FALSE(mem->mem_available.has_value());
}

TEST(ParseMeminfoTest, MissingMemTotalIsMalformed) {
  EXPECT_FALSE(ParseMeminfo("MemFree: 100 kB\n").has_value());
  EXPECT_FALSE(ParseMeminfo("garbage").has_value());
}

TEST(ParseLoadavgTest, ReadsThreeAverages) {
  std::optional<LoadAvg> load = ParseLoadavg("3.52 2.91 2.40 5/1024 5677\n");
  ASSERT_TRUE(load.has_value());
  EXPECT_DOUBLE_EQ(load->load1, 3.52);
  EXPECT_DOUBLE_EQ(load->load5, 2.91);
  EXPECT_DOUBLE_EQ(load->load15, 2.40);
}

TEST(ParseLoadavgTest, RejectsGarbage) {
  EXPECT_FALSE(ParseLoadavg("3.52 abc 2.40").has_value());
  EXPECT_FALSE(ParseLoadavg("").has_value());
}

// ---- diskstats, net/dev -----------------------------------------------------------------------

TEST(ParseDiskstatsTest, ReadsCountersPerDevice) {
  std::vector<DiskStats> disks;
  ASSERT_TRUE(ParseDiskstats(
      "   8       0 sda 120000 3000 9600000 50000 80000 4000 6400000 90000 0 120000 140000 0 0 "
      "0 0 1000 500\n"
      " 259       0 nvme0n1 500000 100 64000000 200000 300000 200 48000000 150000 2 250000 "
      "350000\n",
      disks));
  ASSERT_EQ(disks.size(), 2u);
  EXPECT_EQ(disks[0].device, "sda");
  EXPECT_EQ(disks[0].reads_completed, 120000u);
  EXPECT_EQ(disks[0].sectors_read, 9600000u);
  EXPECT_EQ(disks[0].writes_completed, 80000u);
  EXPECT_EQ(disks[0].sectors_written, 6400000u);
  EXPECT_EQ(disks[0].io_time_ms, 120000u);
  EXPECT_EQ(disks[1].device, "nvme0n1");  // 14-field format of kernels before 4.18
  EXPECT_EQ(disks[1].io_time_ms, 250000u);
}

TEST(ParseDiskstatsTest, SkipsMalformedLineAndKeepsTheOthers) {
  std::vector<DiskStats> disks;
  EXPECT_FALSE(
      ParseDiskstats("   8 0 sda 1 2 3\n   8 16 sdb 1 0 8 0 2 0 16 0 0 5 0 0 0 0 0 0 0\n", disks));
  ASSERT_EQ(disks.size(), 1u);
  EXPECT_EQ(disks[0].device, "sdb");
  EXPECT_EQ(disks[0].sectors_written, 16u);
}

TEST(ParseNetDevTest, ReadsInterfacesAndSkipsHeaders) {
  std::vector<NetDevStats> nets;
  ASSERT_TRUE(ParseNetDev(
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
      "drop fifo colls carrier compressed\n"
      "  eth0: 9876543210 12345678 3 12 0 0 0 1234 5432109876 9876543 1 2 0 0 0 0\n"
      "docker0:1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n",
      nets));
  ASSERT_EQ(nets.size(), 2u);
  EXPECT_EQ(nets[0].interface, "eth0");
  EXPECT_EQ(nets[0].rx_bytes, 9876543210u);
  EXPECT_EQ(nets[0].rx_packets, 12345678u);
  EXPECT_EQ(nets[0].rx_errors, 3u);
  EXPECT_EQ(nets[0].rx_dropped, 12u);
  EXPECT_EQ(nets[0].tx_bytes, 5432109876u);
  EXPECT_EQ(nets[0].tx_packets, 9876543u);
  EXPECT_EQ(nets[0].tx_errors, 1u);
  EXPECT_EQ(nets[0].tx_dropped, 2u);
  EXPECT_EQ(nets[1].interface, "docker0");  // name touching the colon
  EXPECT_EQ(nets[1].rx_bytes, 1000u);
}

TEST(ParseNetDevTest, ShortLineIsMalformed) {
  std::vector<NetDevStats> nets;
  EXPECT_FALSE(ParseNetDev("  eth0: 1 2 3\n    lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n", nets));
  ASSERT_EQ(nets.size(), 1u);
  EXPECT_EQ(nets[0].interface, "lo");
}

// ---- status -----------------------------------------------------------------------------------

TEST(ParseProcStatusTest, ReadsUidsAndInnermostNsPid) {
  ProcStatus st = ParseProcStatus(
      "Name:\tpython3\nPid:\t2345\nUid:\t1000\t1001\t1001\t1001\nGid:\t0\t0\t0\t0\n"
      "NStgid:\t2345\t1\nNSpid:\t2345\t17\t1\nThreads:\t64\n");
  EXPECT_EQ(st.real_uid, 1000u);
  EXPECT_EQ(st.effective_uid, 1001u);
  EXPECT_EQ(st.innermost_nspid, 1);
}

TEST(ParseProcStatusTest, NoNsPidLineOnOldKernels) {
  ProcStatus st = ParseProcStatus("Name:\tcron\nUid:\t0\t0\t0\t0\n");
  EXPECT_EQ(st.innermost_nspid, 0);
  EXPECT_EQ(st.effective_uid, 0u);
}

// ---- cgroup -----------------------------------------------------------------------------------

constexpr std::string_view kId = "81fa5ffbb69a4a5b49534a618ada6e6903574cb069bc996347a9a62ee203649b";

TEST(ParseCgroupPathTest, DockerSystemdDriver) {
  CgroupIds ids = ParseCgroupPath("/system.slice/docker-" + std::string(kId) + ".scope");
  EXPECT_EQ(ids.container_id, kId);
  EXPECT_EQ(ids.pod_uid, "");
  EXPECT_EQ(ids.slurm_job, "");
}

TEST(ParseCgroupPathTest, DockerCgroupfsDriver) {
  EXPECT_EQ(ParseCgroupPath("/docker/" + std::string(kId)).container_id, kId);
}

TEST(ParseCgroupPathTest, ContainerdUnderKubepodsSystemdDriverNormalizesPodUid) {
  CgroupIds ids = ParseCgroupPath(
      "/kubepods.slice/kubepods-burstable.slice/"
      "kubepods-burstable-pod0f3c2a61_8b1e_4d2f_9a57_3e6c1d2b4a90.slice/cri-containerd-" +
      std::string(kId) + ".scope");
  EXPECT_EQ(ids.container_id, kId);
  EXPECT_EQ(ids.pod_uid, "0f3c2a61-8b1e-4d2f-9a57-3e6c1d2b4a90");
}

TEST(ParseCgroupPathTest, GuaranteedPodWithoutQosSlice) {
  CgroupIds ids = ParseCgroupPath(
      "/kubepods.slice/kubepods-pod0f3c2a61_8b1e_4d2f_9a57_3e6c1d2b4a90.slice/crio-" +
      std::string(kId) + ".scope");
  EXPECT_EQ(ids.container_id, kId);
  EXPECT_EQ(ids.pod_uid, "0f3c2a61-8b1e-4d2f-9a57-3e6c1d2b4a90");
}

TEST(ParseCgroupPathTest, KubepodsCgroupfsDriver) {
  CgroupIds ids = ParseCgroupPath("/kubepods/besteffort/pod7c4e9d2a-1b3f-4e5d-8a6b-9c0d1e2f3a4b/" +
                                  std::string(kId));
  EXPECT_EQ(ids.container_id, kId);
  EXPECT_EQ(ids.pod_uid, "7c4e9d2a-1b3f-4e5d-8a6b-9c0d1e2f3a4b");
}

TEST(ParseCgroupPathTest, ContainerdColonFormOnCgroupV1) {
  CgroupIds ids = ParseCgroupPath(
      "/kubepods-besteffort-pod7c4e9d2a_1b3f_4e5d_8a6b_9c0d1e2f3a4b.slice:cri-containerd:" +
      std::string(kId));
  EXPECT_EQ(ids.container_id, kId);
  EXPECT_EQ(ids.pod_uid, "7c4e9d2a-1b3f-4e5d-8a6b-9c0d1e2f3a4b");
}

TEST(ParseCgroupPathTest, StaticPodHashUid) {
  CgroupIds ids = ParseCgroupPath("/kubepods/burstable/pod6c6a1a2a7c53b5f6b3d8d9f3d0c3a4f1/" +
                                  std::string(kId));
  EXPECT_EQ(ids.pod_uid, "6c6a1a2a7c53b5f6b3d8d9f3d0c3a4f1");
}

TEST(ParseCgroupPathTest, CrioAndPodman) {
  EXPECT_EQ(ParseCgroupPath("/machine.slice/crio-" + std::string(kId) + ".scope").container_id,
            kId);
  EXPECT_EQ(ParseCgroupPath("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" +
                            std::string(kId) + ".scope/container")
                .container_id,
            kId);
}

TEST(ParseCgroupPathTest, ConmonScopesAreNotContainers) {
  EXPECT_EQ(
      ParseCgroupPath("/machine.slice/libpod-conmon-" + std::string(kId) + ".scope").container_id,
      "");
  EXPECT_EQ(
      ParseCgroupPath("/system.slice/crio-conmon-" + std::string(kId) + ".scope").container_id, "");
}

TEST(ParseCgroupPathTest, PodOutsideKubepodsIsIgnored) {
  EXPECT_EQ(ParseCgroupPath("/user.slice/pod0f3c2a61-8b1e-4d2f-9a57-3e6c1d2b4a90/x").pod_uid, "");
}

TEST(ParseCgroupPathTest, SlurmCgroupV1) {
  CgroupIds ids = ParseCgroupPath("/slurm/uid_1000/job_4242/step_0/task_0");
  EXPECT_EQ(ids.slurm_job, "4242");
  EXPECT_EQ(ids.container_id, "");
}

TEST(ParseCgroupPathTest, SlurmCgroupV2) {
  EXPECT_EQ(
      ParseCgroupPath("/system.slice/slurmstepd.scope/job_77/step_batch/user/task_0").slurm_job,
      "77");
}

TEST(ParseCgroupPathTest, HostProcessHasNoIds) {
  CgroupIds ids = ParseCgroupPath("/user.slice/user-1000.slice/session-3.scope");
  EXPECT_EQ(ids.container_id, "");
  EXPECT_EQ(ids.pod_uid, "");
  EXPECT_EQ(ids.slurm_job, "");
  EXPECT_EQ(ParseCgroupPath("/").container_id, "");
}

TEST(ParseCgroupPathTest, ShortOrUppercaseHexIsNotAnId) {
  EXPECT_EQ(ParseCgroupPath("/docker/abc123").container_id, "");
  std::string upper(kId);
  upper[0] = 'A';
  EXPECT_EQ(ParseCgroupPath("/docker/" + upper).container_id, "");
}

TEST(ParseCgroupFileTest, CgroupV1TakesIdsFromAnyHierarchy) {
  CgroupIds ids = ParseCgroupFile(
      "12:pids:/slurm/uid_1000/job_4242/step_0/task_0\n"
      "4:cpuset:/slurm/uid_1000/job_4242/step_0\n"
      "1:name=systemd:/system.slice/slurmd.service\n"
      "0::/system.slice/slurmd.service\n");
  EXPECT_EQ(ids.slurm_job, "4242");
}

TEST(ParseCgroupFileTest, CgroupV2SingleLine) {
  CgroupIds ids = ParseCgroupFile("0::/system.slice/docker-" + std::string(kId) + ".scope\n");
  EXPECT_EQ(ids.container_id, kId);
}

// ---- cmdline, exe, passwd ---------------------------------------------------------------------

TEST(JoinCmdlineTest, JoinsArgvWithSpaces) {
  using namespace std::string_view_literals;
  EXPECT_EQ(JoinCmdline("python3\0train.py\0--epochs\00010\0"sv), "python3 train.py --epochs 10");
  EXPECT_EQ(JoinCmdline(""sv), "");
  EXPECT_EQ(JoinCmdline("nginx: worker process\0\0\0\0"sv), "nginx: worker process");
}

TEST(JoinCmdlineTest, BoundsTheLength) {
  std::string raw(300, 'a');
  EXPECT_EQ(JoinCmdline(raw).size(), 256u);
  EXPECT_EQ(JoinCmdline(raw, 10), "aaaaaaaaaa");
}

TEST(JoinCmdlineTest, DoesNotSplitUtf8Sequence) {
  // "é" is two bytes; a cut after byte 4 of "abcé" + "x" would leave half of it.
  std::string raw = "abc\xC3\xA9x";
  EXPECT_EQ(JoinCmdline(raw, 4), "abc");
  EXPECT_EQ(JoinCmdline(raw, 5), "abc\xC3\xA9");
}

TEST(ExeTest, StripsDeletedSuffixAndTakesBaseName) {
  EXPECT_EQ(StripDeletedSuffix("/usr/local/bin/weird (deleted)"), "/usr/local/bin/weird");
  EXPECT_EQ(StripDeletedSuffix("/usr/bin/python3.11"), "/usr/bin/python3.11");
  EXPECT_EQ(BaseName("/usr/bin/python3.11"), "python3.11");
  EXPECT_EQ(BaseName("python3"), "python3");
}

TEST(ParsePasswdTest, MapsUidsToNames) {
  auto users = ParsePasswd(
      "root:x:0:0:root:/root:/bin/bash\n# comment\n\nbroken line\n"
      "alice:x:1000:1000:Alice,,,:/home/alice:/bin/bash\nalias:x:1000:1000::/:/bin/sh\n");
  ASSERT_EQ(users.size(), 2u);
  EXPECT_EQ(users.at(0), "root");
  EXPECT_EQ(users.at(1000), "alice");  // first entry wins
}

// ---- filters ----------------------------------------------------------------------------------

TEST(MatchesAnyPatternTest, PrefixAndExact) {
  std::vector<std::string> patterns = {"lo", "veth*"};
  EXPECT_TRUE(MatchesAnyPattern("lo", patterns));
  EXPECT_TRUE(MatchesAnyPattern("veth1a2b", patterns));
  EXPECT_FALSE(MatchesAnyPattern("lowpan0", patterns));
  EXPECT_FALSE(MatchesAnyPattern("eth0", patterns));
  EXPECT_FALSE(MatchesAnyPattern("eth0", {}));
}

TEST(LooksLikePartitionTest, KnownNamingSchemes) {
  EXPECT_TRUE(LooksLikePartition("sda1"));
  EXPECT_TRUE(LooksLikePartition("xvdb12"));
  EXPECT_TRUE(LooksLikePartition("vda2"));
  EXPECT_TRUE(LooksLikePartition("nvme0n1p2"));
  EXPECT_TRUE(LooksLikePartition("mmcblk0p1"));
  EXPECT_FALSE(LooksLikePartition("sda"));
  EXPECT_FALSE(LooksLikePartition("nvme0n1"));
  EXPECT_FALSE(LooksLikePartition("mmcblk0"));
  EXPECT_FALSE(LooksLikePartition("md0"));
  EXPECT_FALSE(LooksLikePartition("dm-0"));
}

// ---- robustness -------------------------------------------------------------------------------

std::string ReadSnapshotFile(const std::string& relative) {
  std::ifstream in(std::string(WARPSCOPE_SOURCE_DIR) + "/test/data/root/gpuhost_t0/" + relative,
                   std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every prefix of every real file (what a short read or a racing writer could produce) parses or
// is rejected without reading out of bounds; run under ASan this checks the bounds.
TEST(ParsersTest, SurviveEveryPrefixOfRealFiles) {
  CpuTimes total;
  std::vector<CpuTimes> cores;
  std::vector<DiskStats> disks;
  std::vector<NetDevStats> nets;
  for (const char* file :
       {"proc/stat", "proc/meminfo", "proc/loadavg", "proc/diskstats", "proc/net/dev",
        "proc/1234/stat", "proc/4567/stat", "proc/1234/status", "proc/3456/cgroup",
        "proc/1234/cgroup", "proc/2345/cmdline", "etc/passwd"}) {
    std::string text = ReadSnapshotFile(file);
    ASSERT_FALSE(text.empty()) << file;
    for (size_t n = 0; n <= text.size(); ++n) {
      // A copy of exactly n bytes, so that reading past the end is caught.
      std::string prefix = text.substr(0, n);
      std::string_view view(prefix);
      (void)ParseProcStat(view);
      (void)ParseCpuStat(view, total, cores);
      (void)ParseMeminfo(view);
      (void)ParseLoadavg(view);
      (void)ParseDiskstats(view, disks);
      (void)ParseNetDev(view, nets);
      (void)ParseProcStatus(view);
      (void)ParseCgroupFile(view);
      (void)JoinCmdline(view);
      (void)ParsePasswd(view);
      (void)LooksLikePartition(view);
    }
  }
}


// ---- regressions found by procfs_parse_fuzzer.cc ----------------------------------------------

TEST(ParseBootTimeTest, ReadsBtimeAndRefusesWhatIsNotATime) {
  EXPECT_EQ(ParseBootTime("cpu  1 2 3 4\nintr 0 1 2\nbtime 1717000000\nprocesses 9\n"),
            std::optional<int64_t>(1717000000));
  EXPECT_EQ(ParseBootTime("cpu  1 2 3 4\nprocesses 9\n"), std::nullopt);
  EXPECT_EQ(ParseBootTime("btime -5\n"), std::nullopt);
  EXPECT_EQ(ParseBootTime("btime soon\n"), std::nullopt);
  EXPECT_EQ(ParseBootTime("btimex 12\n"), std::nullopt);
}

TEST(ParseCpuStatTest, CpuNumberBeyondKMaxCpusIsMalformed) {
  // The source indexes per-CPU state by this number; 2^31-1 would allocate gigabytes.
  CpuTimes total;
  std::vector<CpuTimes> cores;
  EXPECT_FALSE(ParseCpuStat("cpu 1 2 3 4\ncpu0 1 2 3 4\ncpu2147483647 1 2 3 4\n", total, cores));
  ASSERT_EQ(cores.size(), 1u);
  EXPECT_EQ(cores[0].cpu, 0);
  EXPECT_TRUE(ParseCpuStat("cpu 1 2 3 4\ncpu8191 1 2 3 4\n", total, cores));
  EXPECT_FALSE(ParseCpuStat("cpu 1 2 3 4\ncpu8192 1 2 3 4\n", total, cores));
}

TEST(ParseMeminfoTest, KibibyteValueThatWouldWrapIsAbsent) {
  std::optional<MemInfo> info =
      ParseMeminfo("MemTotal: 18014398509481984 kB\nMemFree: 1 kB\nCached: 18014398509481983 kB\n");
  EXPECT_FALSE(info.has_value());  // MemTotal * 1024 does not fit in 64 bits
  info = ParseMeminfo("MemTotal: 2 kB\nMemFree: 1 kB\nCached: 18014398509481983 kB\n");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->cached, 18014398509481983ull * 1024);
}

TEST(ParseLoadavgTest, RejectsNonFiniteAndNegativeAverages) {
  EXPECT_FALSE(ParseLoadavg("nan 0.1 0.1 1/2 3"));
  EXPECT_FALSE(ParseLoadavg("0.1 inf 0.1 1/2 3"));
  EXPECT_FALSE(ParseLoadavg("0.1 0.1 -1 1/2 3"));
  EXPECT_TRUE(ParseLoadavg("0 0.00 1e2 1/2 3"));
}

TEST(JoinCmdlineTest, HugeLimitKeepsTheWholeCommandLine) {
  // max_bytes + 4 used to wrap around to 3.
  EXPECT_EQ(JoinCmdline(std::string_view("python3\0train.py\0", 17), SIZE_MAX),
            "python3 train.py");
}

}  // namespace
}  // namespace warpscope::agent::procfs
