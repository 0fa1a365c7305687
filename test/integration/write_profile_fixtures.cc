// SPDX-License-Identifier: Apache-2.0
// write_profile_fixtures DIR START END: writes DIR/cpu.pb.gz and DIR/gpu.pb.gz, the fixture
// profiles of profile_fixtures.h for the window [START, END) (Unix seconds), and prints the pid
// they carry. The browser test posts them to the server.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "profile_fixtures.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: write_profile_fixtures DIR START END\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int64_t start = std::atoll(argv[2]) * 1'000'000'000;
  const int64_t end = std::atoll(argv[3]) * 1'000'000'000;
  const auto cpu = warpscope::test::FixtureCpuWindow(start, end);
  const auto gpu = warpscope::test::FixtureGpuWindow(start, end);
  for (const auto& [name, w] : {std::pair{"cpu.pb.gz", &cpu}, std::pair{"gpu.pb.gz", &gpu}}) {
    if (w->pprof_gz.empty()) {
      std::fprintf(stderr, "write_profile_fixtures: the %s profile is empty\n", name);
      return 1;
    }
    std::ofstream out(dir + "/" + name, std::ios::binary);
    out << w->pprof_gz;
    if (!out) {
      std::fprintf(stderr, "write_profile_fixtures: cannot write %s/%s\n", dir.c_str(), name);
      return 1;
    }
  }
  std::printf("%d\n", cpu.pid);
  return 0;
}
