// SPDX-License-Identifier: Apache-2.0
#include "server/ui/ui_handler.h"

#include <algorithm>
#include <cctype>

namespace warpscope::server::ui {
namespace {

std::string_view Extension(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0) {
    return {};
  }
  return name.substr(dot + 1);
}

const web::Asset* Find(std::span<const web::Asset> assets, std::string_view path) {
  auto it = std::lower_bound(assets.begin(), assets.end(), path,
                             [](const web::Asset& a, std::string_view p) { return a.Path() < p; });
  if (it == assets.end() || it->Path() != path) {
    return nullptr;
  }
  return &*it;
}

// Does the If-None-Match header list `etag` (quoted), or "*"? Weak validators (W/"...") match
// too, as RFC 9110 asks for GET.
bool EtagMatches(std::string_view header, std::string_view quoted_etag) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t comma = header.find(',', pos);
    std::string_view item =
        header.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) {
      item.remove_prefix(1);
    }
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) {
      item.remove_suffix(1);
    }
    if (item.rfind("W/", 0) == 0) {
      item.remove_prefix(2);
    }
    if (item == "*" || item == quoted_etag) {
      return true;
    }
    if (comma == std::string_view::npos) {
      break;
    }
    pos = comma + 1;
  }
  return false;
}

UiResponse FileResponse(const web::Asset& asset, std::string_view if_none_match) {
  UiResponse r;
  std::string etag = std::string("\"") + asset.etag + "\"";
  r.content_type = ContentTypeFor(asset.Path());
  r.headers.emplace_back("ETag", etag);
  r.headers.emplace_back("Cache-Control", IsContentHashed(asset.Path())
                                              ? "public, max-age=31536000, immutable"
                                              : "no-cache");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  if (asset.Path() == "index.html") {
    // Everything the UI loads comes from this server: no CDN, no inline scripts. uPlot sets
    // inline style attributes, hence 'unsafe-inline' for styles only.
    r.headers.emplace_back("Content-Security-Policy",
                           "default-src 'self'; script-src 'self'; style-src 'self' "
                           "'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; "
                           "frame-ancestors 'none'; base-uri 'none'");
    r.headers.emplace_back("Referrer-Policy", "no-referrer");
  }
  if (!if_none_match.empty() && EtagMatches(if_none_match, etag)) {
    r.status = 304;
    return r;
  }
  r.status = 200;
  r.body = asset.Data();
  return r;
}

}  // namespace

std::string ContentTypeFor(std::string_view path) {
  std::string ext(Extension(path));
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static constexpr std::pair<std::string_view, std::string_view> kTypes[] = {
      {"html", "text/html; charset=utf-8"},
      {"js", "text/javascript; charset=utf-8"},
      {"mjs", "text/javascript; charset=utf-8"},
      {"css", "text/css; charset=utf-8"},
      {"json", "application/json"},
      {"map", "application/json"},
      {"svg", "image/svg+xml"},
      {"png", "image/png"},
      {"ico", "image/x-icon"},
      {"woff2", "font/woff2"},
      {"txt", "text/plain; charset=utf-8"},
      {"wasm", "application/wasm"},
  };
  for (const auto& [e, type] : kTypes) {
    if (ext == e) {
      return std::string(type);
    }
  }
  return "application/octet-stream";
}

bool IsContentHashed(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  size_t dot = name.rfind('.');
  size_t dash = name.rfind('-', dot);
  if (dot == std::string_view::npos || dash == std::string_view::npos || dash > dot) {
    return false;
  }
  std::string_view hash = name.substr(dash + 1, dot - dash - 1);
  if (hash.size() < 8) {
    return false;
  }
  return std::all_of(hash.begin(), hash.end(),
                     [](unsigned char c) { return std::isalnum(c) != 0; });
}

UiResponse ServeUi(std::span<const web::Asset> assets, std::string_view path,
                   std::string_view if_none_match) {
  UiResponse not_found;
  not_found.status = 404;
  if (path.empty() || path.front() != '/') {
    return not_found;
  }
  std::string_view rel = path.substr(1);
  if (rel == "api" || rel.rfind("api/", 0) == 0) {
    return not_found;
  }
  if (rel.empty()) {
    rel = "index.html";
  }
  // No path tricks: the table only has plain relative names, but refuse them outright anyway.
  if (rel.find("..") != std::string_view::npos || rel.find('\\') != std::string_view::npos) {
    return not_found;
  }
  if (const web::Asset* asset = Find(assets, rel)) {
    return FileResponse(*asset, if_none_match);
  }
  // A view of the single-page app (/host/node1, /top): its entry page. A missing bundle file
  // (assets/..., or a top-level file such as /app.js) is a 404, not HTML in place of a script.
  // Host names with dots (/host/node1.example.com) are views.
  if (rel.rfind("assets/", 0) == 0 ||
      (rel.find('/') == std::string_view::npos && !Extension(rel).empty() &&
       ContentTypeFor(rel) != "application/octet-stream")) {
    return not_found;
  }
  if (const web::Asset* index = Find(assets, "index.html")) {
    return FileResponse(*index, if_none_match);
  }
  return not_found;
}

}  // namespace warpscope::server::ui
