// SPDX-License-Identifier: Apache-2.0
// Where libcupti is looked for (docs/design/cuda-profiler.md, "Finding libcupti"): the ordered
// list of paths and names LoadCupti tries. Pure apart from the existence checks under `root`;
// LoadedObjectPaths reads the process's loaded objects with dl_iterate_phdr. Both run once, on
// the thread that calls InitializeInjection.
#ifndef WARPSCOPE_CUPTI_INJECT_CUPTI_SEARCH_H_
#define WARPSCOPE_CUPTI_INJECT_CUPTI_SEARCH_H_

#include <string>
#include <vector>

namespace warpscope::cupti_inject {

// The sonames tried, newest first (CUDA 13, 12, 11.8, then whatever libcupti.so is).
inline constexpr const char* kCuptiSonames[] = {"libcupti.so.13", "libcupti.so.12",
                                                "libcupti.so.11.8", "libcupti.so"};

struct CuptiSearch {
  std::string configured;           // WARPSCOPE_CUPTI_LIBRARY; when set, the only candidate
  std::vector<std::string> loaded;  // paths of the objects the process has loaded
  std::string root;                 // prefix of the toolkit directories (tests: a temp dir)
  bool sonames = true;              // step 4; tests of fake trees turn it off
};

// Candidates in the order LoadCupti tries them, without repeats:
//  1. `configured`, alone, when set;
//  2. a libcupti the process already loaded (the one its CUDA libraries use);
//  3. <env>/nvidia/cuda_cupti/lib/<soname> and <env>/nvidia/cu13/lib/<soname> for every Python
//     environment a loaded object lies in (<env> = the path up to site-packages or
//     dist-packages, e.g. of .../site-packages/torch/lib/libtorch_cuda.so), where present;
//  4. the sonames, resolved by the dynamic loader's own search path;
//  5. <root>/usr/local/cuda/{extras/CUPTI/lib64,targets/*/lib,lib64}/<soname>, then the same
//     under every <root>/usr/local/cuda-<version> (newest version first), where present.
std::vector<std::string> CuptiCandidates(const CuptiSearch& search);

// The places of steps 3 and 5 that held no libcupti, for the notice ("searched ... and found
// nothing"); globs are written as such.
std::vector<std::string> CuptiPlacesSearched(const CuptiSearch& search);

// Paths of the objects loaded in this process (dl_iterate_phdr), the main program excluded.
std::vector<std::string> LoadedObjectPaths();

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_CUPTI_SEARCH_H_
