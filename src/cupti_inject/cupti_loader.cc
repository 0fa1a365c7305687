// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/cupti_loader.h"

#include <dlfcn.h>

namespace warpscope::cupti_inject {

bool LoadCupti(const std::string& configured, CuptiApi* api, std::string* error) {
  CuptiSearch search;
  search.configured = configured;
  if (configured.empty()) {
    search.loaded = LoadedObjectPaths();
  }
  return LoadCupti(search, api, error);
}

bool LoadCupti(const CuptiSearch& search, CuptiApi* api, std::string* error) {
  std::string tried;
  for (const auto& c : CuptiCandidates(search)) {
    api->handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (api->handle != nullptr) {
      break;
    }
    const char* e = dlerror();
    tried += (tried.empty() ? "" : "; ") + c + ": " + (e != nullptr ? e : "not found");
  }
  if (api->handle == nullptr) {
    std::string searched;
    for (const auto& place : CuptiPlacesSearched(search)) {
      searched += (searched.empty() ? "" : ", ") + place;
    }
    *error = "libcupti could not be loaded (" + tried +
             (searched.empty() ? "" : "; no libcupti in " + searched) +
             "); set WARPSCOPE_CUPTI_LIBRARY to the libcupti.so of the CUDA toolkit in use";
    return false;
  }
  std::string missing;
#define WARPSCOPE_CUPTI_REQUIRED(name, ret, params)                        \
  api->name = reinterpret_cast<abi::name##_fn>(dlsym(api->handle, #name)); \
  if (api->name == nullptr) {                                              \
    missing += (missing.empty() ? "" : ", ") + std::string(#name);         \
  }
#define WARPSCOPE_CUPTI_OPTIONAL(name, ret, params) \
  api->name = reinterpret_cast<abi::name##_fn>(dlsym(api->handle, #name));
  WARPSCOPE_CUPTI_FUNCTIONS(WARPSCOPE_CUPTI_REQUIRED, WARPSCOPE_CUPTI_OPTIONAL)
#undef WARPSCOPE_CUPTI_REQUIRED
#undef WARPSCOPE_CUPTI_OPTIONAL
  if (!missing.empty()) {
    *error = "libcupti lacks " + missing + "; use CUPTI from CUDA 11.8 or newer";
    return false;
  }
  return true;
}

bool CuptiVersionSupported(uint32_t version, std::string* error) {
  if (version >= kMinCuptiVersion) {
    return true;
  }
  *error = "CUPTI API version " + std::to_string(version) +
           " is older than CUDA 11.8; kernel profiling needs CUPTI 11.8 or newer";
  return false;
}

std::string ResultString(const CuptiApi& api, abi::CUptiResult r) {
  const char* s = nullptr;
  if (api.cuptiGetResultString != nullptr && api.cuptiGetResultString(r, &s) == abi::kSuccess &&
      s != nullptr) {
    return std::string(s) + " (" + std::to_string(r) + ")";
  }
  return "CUPTI error " + std::to_string(r);
}

}  // namespace warpscope::cupti_inject
