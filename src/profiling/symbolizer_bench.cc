// SPDX-License-Identifier: Apache-2.0
// Cost of native symbolization per address, with DWARF lines and inlined frames (/1) and
// without (/0, Options::source_lines = false), on the DWARF fixture library (-g -O2):
//   cold:  a fresh symbolizer, one address (parse the ELF, open the DWARF, resolve);
//   miss:  a warm symbolizer, an address it has not resolved yet (the per-address cache holds
//          one entry, so every lookup of the cycle misses): the cost of each new address;
//   warm:  addresses already resolved.
//
//   ninja -C build/release symbolizer_bench && build/release/bin/symbolizer_bench
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "base/file_util.h"
#include "profiling/symbolizer.h"

namespace warpscope::profiling {
namespace {

constexpr pid_t kPid = 1 << 23;

struct Fixture {
  std::vector<MapEntry> maps;
  std::vector<uint64_t> addresses;  // inside the library's two functions, one per byte
};

const Fixture& GetFixture() {
  static const Fixture fixture = [] {
    Fixture f;
    void* handle = dlopen(SYMBOLIZER_DWARFLIB, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      return f;
    }
    const std::string path = std::filesystem::canonical(SYMBOLIZER_DWARFLIB).string();
    if (auto text = base::ReadFile("/proc/self/maps")) {
      for (const MapEntry& m : ParseProcMaps(*text)) {
        if (m.path == path) {
          f.maps.push_back(m);
        }
      }
    }
    for (const char* name : {"WarpscopeDwarfInlinedCallSite", "WarpscopeDwarfPlain"}) {
      auto start = reinterpret_cast<uint64_t>(dlsym(handle, name));
      for (uint64_t off = 0; start != 0 && off < 24; ++off) {
        f.addresses.push_back(start + off);
      }
    }
    return f;  // the library stays loaded
  }();
  return fixture;
}

Symbolizer::Options OptionsFor(const benchmark::State& state) {
  Symbolizer::Options options;
  options.source_lines = state.range(0) != 0;
  return options;
}

void BM_SymbolizeCold(benchmark::State& state) {
  const Fixture& f = GetFixture();
  for (auto _ : state) {
    Symbolizer symbolizer(OptionsFor(state));
    symbolizer.SetProcessMaps(kPid, f.maps);
    benchmark::DoNotOptimize(symbolizer.Symbolize(kPid, std::span(f.addresses).first(1)));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SymbolizeCold)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_SymbolizeNewAddress(benchmark::State& state) {
  const Fixture& f = GetFixture();
  Symbolizer::Options options = OptionsFor(state);
  options.max_addresses_per_file = 1;
  Symbolizer symbolizer(options);
  symbolizer.SetProcessMaps(kPid, f.maps);
  symbolizer.Symbolize(kPid, f.addresses);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(symbolizer.Symbolize(kPid, std::span(&f.addresses[i], 1)));
    i = (i + 1) % f.addresses.size();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SymbolizeNewAddress)->Arg(0)->Arg(1);

void BM_SymbolizeWarm(benchmark::State& state) {
  const Fixture& f = GetFixture();
  Symbolizer symbolizer(OptionsFor(state));
  symbolizer.SetProcessMaps(kPid, f.maps);
  symbolizer.Symbolize(kPid, f.addresses);
  for (auto _ : state) {
    benchmark::DoNotOptimize(symbolizer.Symbolize(kPid, f.addresses));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(f.addresses.size()));
}
BENCHMARK(BM_SymbolizeWarm)->Arg(0)->Arg(1);

}  // namespace
}  // namespace warpscope::profiling

BENCHMARK_MAIN();
