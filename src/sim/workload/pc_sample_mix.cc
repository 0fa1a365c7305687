// SPDX-License-Identifier: Apache-2.0
#include "sim/workload/pc_sample_mix.h"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace warpscope::sim::workload {
namespace {

constexpr uint64_t kInstructionBytes = 16;  // sm_70 and later
constexpr uint64_t kSkippedHead = 2;
constexpr uint64_t kSkippedTail = 9;

// Mixes of the demo's GEMMs. The reasons are CUPTI's; the shares are of the order Nsight
// Compute shows for such kernels (memory waits dominate small or bandwidth-bound GEMMs, the FMA
// pipe an fp32 GEMM that cannot use the tensor cores).
constexpr StallShare kTrainingMix[] = {
    {"long_scoreboard", 0.24}, {"barrier", 0.14},      {"math_pipe_throttle", 0.16},
    {"short_scoreboard", 0.12}, {"mio_throttle", 0.08}, {"wait", 0.08},
    {"selected", 0.12},         {"not_selected", 0.06},
};
constexpr StallShare kFp32Mix[] = {
    {"math_pipe_throttle", 0.38}, {"short_scoreboard", 0.12}, {"long_scoreboard", 0.10},
    {"wait", 0.10},               {"barrier", 0.08},          {"selected", 0.16},
    {"not_selected", 0.06},
};
constexpr StallShare kDecodeMix[] = {
    {"long_scoreboard", 0.46}, {"lg_throttle", 0.10}, {"barrier", 0.08}, {"wait", 0.08},
    {"short_scoreboard", 0.08}, {"math_pipe_throttle", 0.05}, {"selected", 0.15},
};

// splitmix64's finalizer: a well-spread 64-bit hash of `x`.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

double Unit(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }  // [0, 1)

}  // namespace

base::Result<std::vector<CubinFunction>> CubinFunctions(std::string_view image) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    return base::Error(base::Internal("libelf: {}", elf_errmsg(-1)));
  }
  // libelf reads (never writes) the image: the cast only satisfies its signature.
  Elf* elf = elf_memory(const_cast<char*>(image.data()), image.size());
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) {
    if (elf != nullptr) elf_end(elf);
    return base::Error(base::InvalidArgument("not an ELF cubin ({} bytes)", image.size()));
  }
  std::vector<CubinFunction> out;
  size_t strtab = 0;
  if (elf_getshdrstrndx(elf, &strtab) == 0) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_PROGBITS) continue;
      const char* name = elf_strptr(elf, strtab, shdr.sh_name);
      constexpr std::string_view kText = ".text.";
      if (name == nullptr || !std::string_view(name).starts_with(kText)) continue;
      out.push_back({std::string(std::string_view(name).substr(kText.size())), shdr.sh_size});
    }
  }
  elf_end(elf);
  return out;
}

std::span<const StallShare> StallMixOf(std::string_view workload) {
  if (workload == "fp32-training") return kFp32Mix;
  if (workload == "inference") return kDecodeMix;
  return kTrainingMix;
}

std::vector<PcSite> PcSitesOf(const CubinFunction& fn, std::span<const StallShare> mix,
                              const std::function<uint32_t(std::string_view)>& index_of) {
  std::vector<std::pair<uint32_t, double>> known;  // (index, cumulative share)
  double total = 0;
  for (const StallShare& s : mix) {
    const uint32_t index = index_of(s.reason);
    if (index == UINT32_MAX || s.share <= 0) continue;
    total += s.share;
    known.emplace_back(index, total);
  }
  const uint64_t instructions = fn.size / kInstructionBytes;
  std::vector<PcSite> out;
  if (known.empty() || instructions < 16) return out;
  const uint64_t seed = Fnv1a(fn.name);
  for (uint64_t i = kSkippedHead; i + kSkippedTail < instructions; ++i) {
    const uint64_t h = Mix(seed ^ Mix(i));
    // A few hot instructions and a long tail: the 6th power of a uniform draw.
    const uint64_t weight = 1 + static_cast<uint64_t>(4000 * std::pow(Unit(h), 6));
    const double pick = Unit(Mix(h)) * total;
    auto reason = std::find_if(known.begin(), known.end(),
                               [&](const auto& k) { return pick < k.second; });
    if (reason == known.end()) reason = known.end() - 1;
    out.push_back({i * kInstructionBytes, reason->first, weight});
  }
  return out;
}

std::vector<uint64_t> SplitSamples(uint64_t samples, std::span<const PcSite> sites) {
  std::vector<uint64_t> out(sites.size(), 0);
  const uint64_t total = std::accumulate(sites.begin(), sites.end(), uint64_t{0},
                                         [](uint64_t a, const PcSite& s) { return a + s.weight; });
  if (total == 0) return out;
  std::vector<std::pair<uint64_t, size_t>> remainders;  // (remainder, site)
  uint64_t given = 0;
  for (size_t i = 0; i < sites.size(); ++i) {
    // 128-bit: samples × weight may pass 2^64 for long windows.
    const unsigned __int128 scaled = static_cast<unsigned __int128>(samples) * sites[i].weight;
    out[i] = static_cast<uint64_t>(scaled / total);
    given += out[i];
    remainders.emplace_back(static_cast<uint64_t>(scaled % total), i);
  }
  std::sort(remainders.begin(), remainders.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  for (size_t k = 0; given < samples && k < remainders.size(); ++k, ++given) {
    ++out[remainders[k].second];
  }
  return out;
}

}  // namespace warpscope::sim::workload
