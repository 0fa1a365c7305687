// SPDX-License-Identifier: Apache-2.0
// Loading libcupti: dlopen of the configured library or the first that loads of the places in
// cupti_search.h (already loaded, the Python environment's wheel, the sonames, the CUDA toolkit
// directories), dlsym of every entry point in the X-macro table of cupti/abi.h, and the version
// check. Called once from InitializeInjection, on the thread the driver calls it on; it
// may block in the dynamic loader, which is why nothing else calls it. The handle is never closed
// (callbacks may run until the process exits), and the table is read-only after loading.
#ifndef WARPSCOPE_CUPTI_INJECT_CUPTI_LOADER_H_
#define WARPSCOPE_CUPTI_INJECT_CUPTI_LOADER_H_

#include <cstdint>
#include <string>

#include "cupti/abi.h"
#include "cupti_inject/cupti_search.h"

namespace warpscope::cupti_inject {

namespace abi = ::warpscope::cupti::abi;

// The libcupti entry points in use. Required ones are non-null after a successful LoadCupti;
// optional ones (newer or PC-sampling API) may be null and are checked at each use.
struct CuptiApi {
#define WARPSCOPE_CUPTI_MEMBER(name, ret, params) abi::name##_fn name = nullptr;
  WARPSCOPE_CUPTI_FUNCTIONS(WARPSCOPE_CUPTI_MEMBER, WARPSCOPE_CUPTI_MEMBER)
#undef WARPSCOPE_CUPTI_MEMBER
  void* handle = nullptr;
};

// Loads `configured` (WARPSCOPE_CUPTI_LIBRARY), or the first candidate of CuptiCandidates (over
// this process's loaded objects) that loads. On failure returns false with a message for the
// operator in `error` (every candidate tried with the loader's reason and the places that held
// none, or which required entry points are missing, and the remedy).
bool LoadCupti(const std::string& configured, CuptiApi* api, std::string* error);
// The same over an explicit search (tests: fake directory trees and loaded-object lists).
bool LoadCupti(const CuptiSearch& search, CuptiApi* api, std::string* error);

// CUPTI API version 18 is CUDA 11.8 (cupti_version.h: 19 is 12.0); the activity records of older
// versions are not decoded (11.8's Kernel8/Memcpy5 share the prefixes the decoders read).
inline constexpr uint32_t kMinCuptiVersion = 18;

// True when records of CUPTI API `version` can be decoded; else false with the reason in `error`.
bool CuptiVersionSupported(uint32_t version, std::string* error);

// CUPTI's name for `r` with its number ("CUPTI_ERROR_... (39)"), or "CUPTI error 39" when the
// library cannot name it.
std::string ResultString(const CuptiApi& api, abi::CUptiResult r);

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_CUPTI_LOADER_H_
