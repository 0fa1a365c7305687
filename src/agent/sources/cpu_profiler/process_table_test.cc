// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/process_table.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/testing/temp_dir.h"

namespace warpscope::agent::cpu_profiler {
namespace {

profiling::MapEntry Map(uint64_t start, uint64_t end, uint64_t offset, std::string path) {
  profiling::MapEntry m;
  m.start = start;
  m.end = end;
  m.file_offset = offset;
  m.executable = true;
  m.path = std::move(path);
  return m;
}

MmapRecord Mmap(uint32_t pid, uint64_t start, uint64_t len, std::string path, bool exec = true) {
  MmapRecord r;
  r.pid = r.tid = pid;
  r.start = start;
  r.length = len;
  r.executable = exec;
  r.path = std::move(path);
  return r;
}

// A /proc root with one process: pid 100, "app", two threads.
class ProcessTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    namespace fs = std::filesystem;
    const fs::path proc = fs::path(dir_.path()) / "proc" / "100";
    fs::create_directories(proc / "task" / "100");
    fs::create_directories(proc / "task" / "101");
    std::ofstream(proc / "maps") << "00400000-00401000 r--p 00000000 08:01 7 /usr/bin/app\n"
                                    "00401000-00402000 r-xp 00001000 08:01 7 /usr/bin/app\n"
                                    "7f0000000000-7f0000001000 r-xp 00000000 08:01 9 /lib/libc.so\n"
                                    "7ffd0000000-7ffd0001000 rw-p 00000000 00:00 0 [stack]\n";
    std::ofstream(proc / "comm") << "app\n";
    std::ofstream(proc / "task" / "100" / "comm") << "app\n";
    std::ofstream(proc / "task" / "101" / "comm") << "loader\n";
    fs::create_symlink("/usr/bin/app", proc / "exe");
  }
  base::TempDir dir_;
};

TEST_F(ProcessTableTest, SeedsExecutableMappingsNameAndThreadsFromProc) {
  ProcessTable table(dir_.path());
  const ProcessInfo& p = table.Get(100);
  ASSERT_EQ(p.maps.size(), 2u);
  EXPECT_EQ(p.maps[0].path, "/usr/bin/app");
  EXPECT_EQ(p.maps[0].start, 0x401000u);
  EXPECT_EQ(p.maps[1].path, "/lib/libc.so");
  EXPECT_EQ(p.comm, "app");
  EXPECT_EQ(p.executable, "/usr/bin/app");
  EXPECT_EQ(p.thread_names.at(101), "loader");
  EXPECT_EQ(table.stats().seeded, 1u);
}

TEST_F(ProcessTableTest, MmapRecordsAddMappingsAndDataMappingsAreIgnored) {
  ProcessTable table(dir_.path());
  const uint64_t generation = table.Get(100).maps_generation;
  table.Apply(Mmap(100, 0x7f1000000000, 0x2000, "/lib/libdl.so"));
  table.Apply(Mmap(100, 0x7f2000000000, 0x2000, "/data.bin", false));
  const ProcessInfo& p = table.Get(100);
  ASSERT_EQ(p.maps.size(), 3u);
  EXPECT_EQ(p.maps[2].path, "/lib/libdl.so");
  EXPECT_EQ(p.maps_generation, generation + 1);
}

TEST_F(ProcessTableTest, RecordsOfAProcessNeverSampledDoNotReadProc) {
  ProcessTable table(dir_.path());
  table.Apply(Mmap(100, 0x7f1000000000, 0x2000, "/lib/libdl.so"));
  table.Apply(CommRecord{100, 101, false, "worker"});
  EXPECT_EQ(table.stats().seeded + table.stats().seed_failed, 0u);
  const ProcessInfo& p = table.Get(100);  // its first sample
  EXPECT_EQ(table.stats().seeded, 1u);
  EXPECT_EQ(p.maps.size(), 2u) << "the live maps replace what records told";
  EXPECT_EQ(p.comm, "app");
}

TEST_F(ProcessTableTest, ExitedBeforeItsFirstSampleKeepsTheMappingsRecordsTold) {
  ProcessTable table(dir_.path());
  table.Apply(Mmap(200, 0x400000, 0x1000, "/usr/bin/short"));
  table.Apply(TaskRecord{true, 200, 1, 200, 1, 0});
  const ProcessInfo& p = table.Get(200);  // /proc/200 does not exist
  ASSERT_EQ(p.maps.size(), 1u);
  EXPECT_EQ(p.maps[0].path, "/usr/bin/short");
  EXPECT_EQ(p.executable, "/usr/bin/short");
}

TEST(InsertMappingTest, NewMappingReplacesWhatItOverlaps) {
  std::vector<profiling::MapEntry> maps = {Map(0x1000, 0x5000, 0, "/a")};
  InsertMapping(maps, Map(0x2000, 0x3000, 0, "/b"));
  ASSERT_EQ(maps.size(), 3u);
  EXPECT_EQ(maps[0].end, 0x2000u);
  EXPECT_EQ(maps[1].path, "/b");
  EXPECT_EQ(maps[2].start, 0x3000u);
  EXPECT_EQ(maps[2].file_offset, 0x2000u) << "the upper part keeps its file offset";
  EXPECT_EQ(maps[2].path, "/a");
  InsertMapping(maps, Map(0x0, 0x10000, 0, "/c"));
  ASSERT_EQ(maps.size(), 1u);
  EXPECT_EQ(maps[0].path, "/c");
}

TEST_F(ProcessTableTest, CommExecReplacesTheImageAndThreadCommsNameThreads) {
  ProcessTable table(dir_.path());
  table.Get(100);
  table.Apply(CommRecord{100, 101, false, "worker"});
  EXPECT_EQ(table.Find(100)->thread_names.at(101), "worker");
  table.Apply(CommRecord{100, 100, true, "python3"});
  const ProcessInfo* p = table.Find(100);
  EXPECT_TRUE(p->maps.empty());
  EXPECT_EQ(p->comm, "python3");
  EXPECT_EQ(p->thread_names.size(), 1u);
}

TEST_F(ProcessTableTest, ExitedProcessesStayUntilTheirWindowNoLongerNeedsThem) {
  ProcessTable table(dir_.path());
  table.Get(100);
  table.Apply(TaskRecord{true, 100, 1, 101, 1, 0});
  EXPECT_FALSE(table.Find(100)->exited) << "a thread's exit is not the process's";
  table.Apply(TaskRecord{true, 100, 1, 100, 1, 0});
  EXPECT_TRUE(table.Find(100)->exited);
  table.Collect({100});
  ASSERT_NE(table.Find(100), nullptr) << "its samples are in the window being built";
  EXPECT_EQ(table.Find(100)->maps.size(), 2u);
  table.Collect({});
  EXPECT_EQ(table.Find(100), nullptr);
}

TEST_F(ProcessTableTest, UnknownProcessStillGetsAnEntryAndIsBounded) {
  ProcessTable table(dir_.path(), 2);
  table.Get(7).comm = "seven";
  EXPECT_EQ(table.stats().seed_failed, 1u);
  table.Get(8);
  table.Get(9);
  table.Collect({});
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.Find(7), nullptr) << "the least recently used goes first";
}

TEST(ProcessTableRealTest, SeedsThisProcess) {
  ProcessTable table;
  const ProcessInfo& self = table.Get(static_cast<uint32_t>(getpid()));
  EXPECT_FALSE(self.maps.empty());
  EXPECT_EQ(self.executable, std::filesystem::read_symlink("/proc/self/exe").string());
}

}  // namespace
}  // namespace warpscope::agent::cpu_profiler
