// SPDX-License-Identifier: Apache-2.0
// The web UI's files, embedded in the binary at build time (web/CMakeLists.txt). The server
// serves them with server/ui/ui_handler.h.
#ifndef WARPSCOPE_WEB_ASSETS_H_
#define WARPSCOPE_WEB_ASSETS_H_

#include <cstddef>
#include <span>
#include <string_view>

namespace warpscope::web {

// One embedded file. Everything points into static storage: valid for the whole program.
struct Asset {
  const char* path;  // relative, '/'-separated, no leading '/': "index.html", "assets/app-X.js"
  const char* data;
  size_t size;
  const char* etag;  // 16 hex digits of the content's SHA-256 (without quotes)

  std::string_view Path() const { return path; }
  std::string_view Data() const { return {data, size}; }
};

// Every embedded file, sorted by path. Always holds at least index.html.
std::span<const Asset> Assets();

// The asset at `path` (no leading '/'), or nullptr.
const Asset* FindAsset(std::string_view path);

// False when the binary was built with WARPSCOPE_WITH_UI=OFF (or without npm): the assets are
// then a single page saying how to build the UI.
bool UiBuilt();

namespace internal {
extern const Asset kAssets[];
extern const size_t kAssetCount;
extern const bool kUiBuilt;
}  // namespace internal

}  // namespace warpscope::web

#endif  // WARPSCOPE_WEB_ASSETS_H_
