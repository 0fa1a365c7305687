// SPDX-License-Identifier: Apache-2.0
#include "pyframes/remote_process.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/testing/peer.h"
#include "base/testing/temp_dir.h"
#include "pyframes/elf_lookup.h"
#include "pyframes/remote_reader.h"
#include "pyframes/testing/fake_memory_reader.h"

namespace warpscope::pyframes {
namespace {

constexpr const char* kDebianPython = "/usr/bin/python3.11";  // python3-dev, required in CI

TEST(RemoteProcessTest, ParsesMapsLines) {
  MapsEntry e;
  ASSERT_TRUE(ParseMapsLine(
      "7f3a1c000000-7f3a1c200000 r-xp 00001000 fd:01 123456   /usr/lib/libpython3.12.so.1.0", &e));
  EXPECT_EQ(e.start, 0x7f3a1c000000u);
  EXPECT_EQ(e.end, 0x7f3a1c200000u);
  EXPECT_EQ(e.offset, 0x1000u);
  EXPECT_EQ(e.dev, (uint64_t{0xfd} << 32) | 1);
  EXPECT_EQ(e.inode, 123456u);
  EXPECT_TRUE(e.exec);
  EXPECT_EQ(e.path, "/usr/lib/libpython3.12.so.1.0");
  ASSERT_TRUE(ParseMapsLine("7ffd0000-7ffd1000 rw-p 00000000 00:00 0 ", &e));
  EXPECT_EQ(e.path, "");
  EXPECT_FALSE(e.exec);
  ASSERT_TRUE(ParseMapsLine("1000-2000 r--p 00000000 08:01 7 /a path/with spaces (deleted)", &e));
  EXPECT_EQ(e.path, "/a path/with spaces (deleted)");
  EXPECT_FALSE(ParseMapsLine("", &e));
  EXPECT_FALSE(ParseMapsLine("zz-2000 r--p 0 08:01 7 /x", &e));
  EXPECT_FALSE(ParseMapsLine("1000-2000 r--p 0 0801 7 /x", &e));
}

TEST(RemoteProcessTest, StartTimeOfThisProcess) {
  uint64_t a = 0;
  ASSERT_TRUE(ReadStartTime("/proc", getpid(), &a));
  EXPECT_GT(a, 0u);
  uint64_t b = 0;
  EXPECT_FALSE(ReadStartTime("/proc", 0x3fffffff, &b));
}

TEST(RemoteProcessTest, ElfSymbolsBiasAndBuildIdOfThisTest) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  ASSERT_GT(n, 0);
  const std::string path(self, static_cast<size_t>(n));
  ElfInfo info;
  ASSERT_EQ(ReadElfInfo(path, &info), ElfError::kOk);
  EXPECT_FALSE(info.loads.empty());
  std::vector<uint64_t> values;
  ASSERT_EQ(LookupElfSymbols(path, {"main", "no_such_symbol_anywhere"}, true, &values),
            ElfError::kOk);
  EXPECT_NE(values[0], 0u);
  EXPECT_EQ(values[1], 0u);
  EXPECT_EQ(ReadElfInfo("/proc/self/status", &info), ElfError::kNotElf);
  EXPECT_EQ(ReadElfInfo("/no/such/file", &info), ElfError::kOpen);
  // The bias of a file mapped at its link address is 0; of a page moved up by 0x10000, that.
  ElfInfo fake;
  fake.loads = {{0, 0x400000, 0x1000, 0x1000}, {0x2000, 0x402000, 0x1000, 0x1000}};
  uint64_t bias = 1;
  ASSERT_TRUE(LoadBias(fake, 0x400000, 0, &bias));
  EXPECT_EQ(bias, 0u);
  ASSERT_TRUE(LoadBias(fake, 0x412000, 0x2000, &bias));
  EXPECT_EQ(bias, 0x10000u);
  EXPECT_FALSE(LoadBias(fake, 0x412000, 0x5000, &bias));
}

// A /proc of one made-up process that maps Debian's python3.11 executable, over fake memory.
TEST(RemoteProcessTest, ProbesAnInterpreterThroughAFakeProc) {
  struct stat st;
  WARPSCOPE_REQUIRE_PEER(stat(kDebianPython, &st) == 0, std::string(kDebianPython),
                         "scripts/setup.sh (apt-get install python3-dev)");
  base::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string pid_dir = dir.path() + "/4242";
  std::filesystem::create_directories(pid_dir);
  std::filesystem::create_directory_symlink("/", pid_dir + "/root");
  std::ofstream(pid_dir + "/stat") << "4242 (python3 (x)) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 "
                                      "0 0 0 20 0 1 0 987654 0 0\n";
  char dev[32];
  std::snprintf(dev, sizeof(dev), "%02x:%02x", major(st.st_dev), minor(st.st_dev));
  std::ofstream(pid_dir + "/maps")
      << "00400000-00420000 r--p 00000000 " << dev << " " << st.st_ino << " " << kDebianPython
      << "\n00420000-00700000 r-xp 00020000 " << dev << " " << st.st_ino << " " << kDebianPython
      << "\n7ffd0000-7ffd1000 rw-p 00000000 00:00 0 [stack]\n";
  std::vector<uint64_t> sym;
  ASSERT_EQ(LookupElfSymbols(kDebianPython, {"Py_Version", "_PyRuntime"}, false, &sym),
            ElfError::kOk);
  ASSERT_NE(sym[0], 0u);
  FakeMemoryReader mem;
  mem.Map(sym[0], 8);
  mem.Put<uint64_t>(sym[0], 0x030b02f0);  // 3.11.2 final
  RemotePython py;
  ProbeCost cost;
  ASSERT_EQ(ProbeRemotePython(dir.path(), 4242, mem, &py, &cost), RemoteProbe::kReady);
  EXPECT_EQ(py.start_time, 987654u);
  EXPECT_EQ(py.minor, 11);
  EXPECT_EQ(py.path, kDebianPython);
  EXPECT_EQ(py.inode, st.st_ino);
  EXPECT_EQ(py.bias, 0u);  // a non-PIE executable
  EXPECT_EQ(py.runtime, sym[1]);
  EXPECT_EQ(py.build_id.size(), 40u);
  EXPECT_EQ(py.interp.layout.tstate_native_thread_id, 160u);
  EXPECT_EQ(cost.memory_reads, 1u);  // Py_Version only
  EXPECT_TRUE(MappingStillThere(dir.path(), 4242, 0x400000, py.dev, py.inode));
  EXPECT_FALSE(MappingStillThere(dir.path(), 4242, 0x410000, py.dev, py.inode));
  // A version the tables do not know.
  mem.Put<uint64_t>(sym[0], 0x030f00a0);
  EXPECT_EQ(ProbeRemotePython(dir.path(), 4242, mem, &py), RemoteProbe::kUnsupported);
  EXPECT_EQ(py.minor, 15);
  EXPECT_EQ(ProbeRemotePython(dir.path(), 4243, mem, &py), RemoteProbe::kNoProcess);
}

// This test process runs no Python: recognised from its maps and its executable's dynamic
// symbols, without reading its memory, and cached.
TEST(RemoteProcessTest, ANonPythonProcessIsRecognisedCheaply) {
  ProcessMemoryReader mem(getpid());
  RemotePython py;
  ProbeCost cost;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(ProbeRemotePython("/proc", getpid(), mem, &py, &cost), RemoteProbe::kNotPython);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(cost.memory_reads, 0u);
  EXPECT_LE(cost.elf_files_read, 2u);  // the executable (through /proc/<pid>/root, maybe again)
  EXPECT_LT(took, std::chrono::milliseconds(500));  // generous: a loaded CI machine
  ProbeFileCache files;
  EXPECT_EQ(ProbeRemotePython("/proc", getpid(), mem, &py, nullptr, &files),
            RemoteProbe::kNotPython);
  EXPECT_EQ(files.size(), 1u);  // this test's executable
  ProbeCost again;
  EXPECT_EQ(ProbeRemotePython("/proc", getpid(), mem, &py, &again, &files),
            RemoteProbe::kNotPython);
  EXPECT_EQ(again.elf_files_read, 0u);

  RemotePythonReader reader;
  std::vector<PythonFrame> frames;
  ThreadReadResult r = reader.ReadThread(getpid(), gettid(), 1, 48, &frames);
  EXPECT_EQ(r.status, ThreadRead::kNotPython);
  EXPECT_TRUE(r.probed);
  EXPECT_EQ(r.memory_reads, 0u);
  r = reader.ReadThread(getpid(), gettid(), 2, 48, &frames);  // cached: no probe
  EXPECT_EQ(r.status, ThreadRead::kNotPython);
  EXPECT_FALSE(r.probed);
  EXPECT_EQ(reader.stats().probes, 1u);
  // Probed again only after the recheck interval, and then without reading the executable
  // again: it is known to hold no interpreter.
  const uint64_t files_read = reader.stats().elf_files_read;
  EXPECT_GE(files_read, 1u);
  r = reader.ReadThread(getpid(), gettid(), 2 + RemoteReaderOptions{}.not_python_recheck_ns, 48,
                        &frames);
  EXPECT_TRUE(r.probed);
  EXPECT_EQ(r.status, ThreadRead::kNotPython);
  EXPECT_EQ(reader.stats().elf_files_read, files_read);
  EXPECT_EQ(reader.InterpreterOf(getpid()), nullptr);
  // A process that does not exist is not kept.
  r = reader.ReadThread(0x3fffffff, 0x3fffffff, 3, 48, &frames);
  EXPECT_EQ(r.status, ThreadRead::kNoProcess);
  EXPECT_EQ(reader.cached_processes(), 1u);
}

}  // namespace
}  // namespace warpscope::pyframes
