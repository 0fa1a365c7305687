// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/perf_maps.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agent/sources/cpu_profiler/cpu_window.h"
#include "base/testing/temp_dir.h"
#include "profiling/pprof.h"

namespace warpscope::agent::cpu_profiler {
namespace {

namespace fs = std::filesystem;

// A host root holding process 4242, pid 7 in its own namespace, with an anonymous executable
// mapping (JIT code) and its perf map in its root's /tmp, named by the namespace pid.
class PerfMapsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    proc_ = fs::path(dir_.path()) / "proc" / "4242";
    fs::create_directories(proc_ / "root" / "tmp");
    std::ofstream(proc_ / "status") << "Name:\tpython3.12\nNSpid:\t4242\t7\n";
    std::ofstream(proc_ / "maps") << "00400000-00401000 r-xp 00000000 08:01 7 /usr/bin/app\n"
                                     "7f1000000000-7f1000010000 r-xp 00000000 00:00 0 \n";
    std::ofstream(proc_ / "comm") << "python3.12\n";
    Write(
        "7f1000000000 b py::<module>:/srv/app.py\n"
        "7f1000000010 20 py::burn:/srv/app.py\n",
        std::ios::trunc);
  }
  void Write(const std::string& text, std::ios::openmode mode = std::ios::app) {
    std::ofstream(map_path(), std::ios::out | mode) << text;
  }
  fs::path map_path() const { return proc_ / "root" / "tmp" / "perf-7.map"; }
  PerfMaps::Options Options() const { return {dir_.path()}; }

  base::TempDir dir_;
  fs::path proc_;
};

std::string NameAt(PerfMaps& maps, uint64_t address) {
  const profiling::PerfMapSymbol* s = maps.Find(4242, address);
  return s == nullptr ? "" : s->name;
}

TEST_F(PerfMapsTest, FindsSymbolsThroughTheProcessRootByItsNamespacePid) {
  PerfMaps maps(Options());
  EXPECT_EQ(NameAt(maps, 0x7f1000000000), "py::<module>:/srv/app.py");
  EXPECT_EQ(NameAt(maps, 0x7f100000000a), "py::<module>:/srv/app.py");
  EXPECT_EQ(NameAt(maps, 0x7f100000000b), "");  // between the two entries
  EXPECT_EQ(NameAt(maps, 0x7f1000000010), "py::burn:/srv/app.py");
  EXPECT_EQ(NameAt(maps, 0x7f100000002f), "py::burn:/srv/app.py");
  EXPECT_EQ(NameAt(maps, 0x7f1000000030), "");
  EXPECT_EQ(NameAt(maps, 0x400000), "");
  EXPECT_EQ(maps.Find(4243, 0x7f1000000010), nullptr);  // no such process, no file
  EXPECT_EQ(maps.stats().reads, 1u);
  EXPECT_EQ(maps.stats().symbols, 2u);
}

TEST_F(PerfMapsTest, AppendedLinesAreParsedOncePerWindowAndOnlyTheNewPart) {
  PerfMaps maps(Options());
  ASSERT_EQ(NameAt(maps, 0x7f1000000010), "py::burn:/srv/app.py");
  Write("7f1000000100 10 py::later:/srv/app.py\n7f10000002");  // a line being written
  EXPECT_EQ(NameAt(maps, 0x7f1000000100), "") << "the file is looked at once per window";
  maps.BeginWindow();
  EXPECT_EQ(NameAt(maps, 0x7f1000000100), "py::later:/srv/app.py");
  EXPECT_EQ(NameAt(maps, 0x7f1000000200), "") << "an unfinished line waits";
  EXPECT_EQ(maps.stats().reads, 2u);
  EXPECT_EQ(maps.stats().symbols, 3u) << "only the appended part is parsed";
  Write("00 10 py::finished:/srv/app.py\n7f1000000010 20 py::reused:/srv/app.py\n");
  maps.BeginWindow();
  EXPECT_EQ(NameAt(maps, 0x7f1000000200), "py::finished:/srv/app.py");
  EXPECT_EQ(NameAt(maps, 0x7f1000000010), "py::reused:/srv/app.py") << "the newest line wins";
  EXPECT_EQ(NameAt(maps, 0x7f1000000000), "py::<module>:/srv/app.py");
  maps.BeginWindow();
  EXPECT_EQ(NameAt(maps, 0x7f1000000200), "py::finished:/srv/app.py");
  EXPECT_EQ(maps.stats().reads, 3u) << "an unchanged file is not read again";
}

TEST_F(PerfMapsTest, ARewrittenFileIsReadFromTheStart) {
  PerfMaps maps(Options());
  ASSERT_EQ(NameAt(maps, 0x7f1000000010), "py::burn:/srv/app.py");
  fs::remove(map_path());
  Write("7f1000000800 8 new\n", std::ios::trunc);
  maps.BeginWindow();
  EXPECT_EQ(NameAt(maps, 0x7f1000000800), "new");
  EXPECT_EQ(NameAt(maps, 0x7f1000000010), "") << "the old symbols went with the old file";
}

TEST_F(PerfMapsTest, AGoneFileKeepsWhatWasReadForLateSymbolization) {
  PerfMaps maps(Options());
  ASSERT_EQ(NameAt(maps, 0x7f1000000010), "py::burn:/srv/app.py");
  fs::remove_all(proc_);  // the process exited
  maps.BeginWindow();
  EXPECT_EQ(NameAt(maps, 0x7f1000000010), "py::burn:/srv/app.py");
  maps.Forget(4242);
  EXPECT_EQ(maps.size(), 0u);
  EXPECT_EQ(NameAt(maps, 0x7f1000000010), "");
}

TEST_F(PerfMapsTest, BoundedBySymbolsPerProcessBytesPerFileAndProcesses) {
  PerfMaps::Options o = Options();
  o.max_entries = 1;
  {
    PerfMaps maps(o);
    EXPECT_EQ(NameAt(maps, 0x7f1000000000), "py::<module>:/srv/app.py");
    EXPECT_EQ(NameAt(maps, 0x7f1000000010), "");
    EXPECT_EQ(maps.stats().dropped_symbols, 1u);
  }
  o = Options();
  o.max_bytes = 45;  // the first line is 40 bytes
  {
    PerfMaps maps(o);
    EXPECT_EQ(NameAt(maps, 0x7f1000000000), "py::<module>:/srv/app.py");
    EXPECT_EQ(NameAt(maps, 0x7f1000000010), "");
    EXPECT_EQ(maps.stats().capped_files, 1u);
  }
  o = Options();
  o.max_processes = 2;
  {
    PerfMaps maps(o);
    maps.Find(1, 0);
    maps.Find(2, 0);
    maps.Find(4242, 0);
    EXPECT_EQ(maps.size(), 2u);
  }
}

// The window build names the addresses the ELF symbolizer could not name from the perf map,
// as native frames of module "[jit]"; an address without an entry stays unknown.
TEST_F(PerfMapsTest, WindowNamesJitAddressesFromThePerfMap) {
  ProcessTable table(dir_.path());
  profiling::Symbolizer symbolizer({dir_.path(), "", 512, 1024, false});
  KernelSymbols kernel = KernelSymbols::Parse("").value();
  NoPythonStacks python;
  PerfMaps maps(Options());
  SymbolSources sources{table, symbolizer, kernel, python, dir_.path(), &maps};
  ASSERT_EQ(table.Get(4242).maps.size(), 2u) << "the anonymous executable mapping is tracked";

  CpuWindow window(profiling::ProfileFormats::All());
  UnwoundSample s;
  s.pid = 4242;
  s.tid = 4242;
  s.period_ns = 1000;
  s.user_pcs = {0x7f1000000014, 0x7f1000000004, 0x7f1000000400};  // leaf first
  window.Add(s);
  auto profiles = window.Build(0, 1000, sources);
  ASSERT_EQ(profiles.size(), 1u);
  auto p = profiling::DecodePprof(profiles[0].pprof_gz);
  ASSERT_TRUE(p.has_value()) << p.error().message();
  ASSERT_EQ(p->samples.size(), 1u);
  std::vector<profiling::Frame> frames = profiling::StackFrames(*p, p->samples[0]);
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_EQ(frames[0].function, "python3.12");
  EXPECT_EQ(frames[1].function, "[unknown] [anon]+0x400");
  EXPECT_EQ(frames[2].function, "py::<module>:/srv/app.py");
  EXPECT_EQ(frames[2].module, "[jit]");
  EXPECT_EQ(frames[3].function, "py::burn:/srv/app.py");
  EXPECT_EQ(frames[3].module, "[jit]");
  // The folded stacks mark JIT frames as perf does ("_[j]").
  EXPECT_NE(profiles[0].folded.find("py::<module>:/srv/app.py_[j];py::burn:/srv/app.py_[j] 1000"),
            std::string::npos)
      << profiles[0].folded;
}

}  // namespace
}  // namespace warpscope::agent::cpu_profiler
