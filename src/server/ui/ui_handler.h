// SPDX-License-Identifier: Apache-2.0
// Serving the embedded web UI (web/assets.h): Content-Type by extension, strong ETags with
// If-None-Match, immutable caching for content-hashed file names, and the single-page-app
// fallback (any path that is not a file and not under /api/ gets index.html, so that a shared
// URL such as /host/node1?tab=gpu opens the right view).
#ifndef WARPSCOPE_SERVER_UI_UI_HANDLER_H_
#define WARPSCOPE_SERVER_UI_UI_HANDLER_H_

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "web/assets.h"

namespace warpscope::server::ui {

struct UiResponse {
  int status = 200;       // 200, 304, 404 or 405
  std::string_view body;  // static storage (an asset) or empty
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;  // ETag, Cache-Control, ...
};

// "text/html; charset=utf-8" for .html, "text/javascript; charset=utf-8" for .js, ... and
// "application/octet-stream" for unknown extensions.
std::string ContentTypeFor(std::string_view path);

// True for names the bundler made unique by content ("assets/app-4F2KQ7XA.js"): the last '-'
// of the file name is followed by 8 or more letters/digits and an extension. Such files never
// change and are cached as immutable.
bool IsContentHashed(std::string_view path);

// The answer for GET `path` (the URL path, starting with '/', without the query string) from
// `assets`, given the request's If-None-Match header (may be empty).
// - a file: 200 with its bytes, or 304 when If-None-Match names its ETag;
// - "/" or any other path that is not a file, not under /api/ or /assets/ and not a top-level
//   file name with a known type (/app.js): index.html (no-cache, so a new build is picked up at
//   the next load);
// - anything else (a missing bundle file, /api/...): 404 with an empty body (the caller answers
//   with its JSON error).
UiResponse ServeUi(std::span<const web::Asset> assets, std::string_view path,
                   std::string_view if_none_match);

}  // namespace warpscope::server::ui

#endif  // WARPSCOPE_SERVER_UI_UI_HANDLER_H_
