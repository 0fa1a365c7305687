// SPDX-License-Identifier: Apache-2.0
#include "web/assets.h"

#include <algorithm>

namespace warpscope::web {

std::span<const Asset> Assets() { return {internal::kAssets, internal::kAssetCount}; }

const Asset* FindAsset(std::string_view path) {
  std::span<const Asset> all = Assets();
  auto it = std::lower_bound(all.begin(), all.end(), path,
                             [](const Asset& a, std::string_view p) { return a.Path() < p; });
  if (it == all.end() || it->Path() != path) {
    return nullptr;
  }
  return &*it;
}

bool UiBuilt() { return internal::kUiBuilt; }

}  // namespace warpscope::web
