// SPDX-License-Identifier: Apache-2.0
#include "exporters/profiles/profile_sink.h"

#include <fmt/format.h>
#include <httplib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/file_util.h"
#include "exporters/http_push.h"

namespace warpscope::exporters {
namespace {

// Host names and the like, made safe as one path component.
std::string FileSafe(std::string_view text) {
  std::string out;
  for (char c : text) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    out.push_back(ok ? c : '_');
  }
  return out.empty() ? "_" : out;
}

// Unix seconds with nanosecond digits: what the server's time parameters accept.
std::string Seconds(int64_t ns) {
  return fmt::format("{}.{:09}", ns / 1000000000, ns % 1000000000);
}

}  // namespace

std::string UrlEncode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      fmt::format_to(std::back_inserter(out), "%{:02X}", c);
    }
  }
  return out;
}

// DirectoryProfileSink -----------------------------------------------------------------------

DirectoryProfileSink::DirectoryProfileSink(std::string dir, std::string host,
                                           profiling::TraceFormat trace)
    : dir_(std::move(dir)), host_(std::move(host)), trace_(trace) {}

base::Result<std::unique_ptr<DirectoryProfileSink>> DirectoryProfileSink::Create(
    std::string dir, std::string host, profiling::TraceFormat trace) {
  if (dir.empty()) {
    return base::Error(base::InvalidArgument(
        "profile directory is empty: pass the directory profiles should be written to"));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!std::filesystem::is_directory(dir)) {
    return base::Error(base::InvalidArgument(
        "profile directory {} cannot be created{}{}: choose a writable directory", dir,
        ec ? ": " : "", ec ? ec.message() : ""));
  }
  return std::unique_ptr<DirectoryProfileSink>(
      new DirectoryProfileSink(std::move(dir), std::move(host), trace));
}

std::string DirectoryProfileSink::StemFor(const profiling::WindowProfile& profile) const {
  return fmt::format("{}-{}-{}-{}-{}", FileSafe(profile.kind), FileSafe(host_), profile.pid,
                     profile.start_ns / 1000000, profile.end_ns / 1000000);
}

base::Status DirectoryProfileSink::Write(const profiling::WindowProfile& profile) {
  std::string stem = dir_ + "/" + StemFor(profile);
  const std::pair<std::string_view, const std::string*> files[] = {
      {".pb.gz", &profile.pprof_gz},
      {".folded", &profile.folded},
      {".pc.folded", &profile.folded_pc_samples},
      {".perfetto-trace", &profile.perfetto_trace},
      {".trace.json", &profile.trace_json},
  };
  for (const auto& [extension, content] : files) {
    if (content->empty()) {
      continue;
    }
    std::string path = stem + std::string(extension);
    std::string temp = path + ".tmp";
    base::Status written = base::WriteFile(temp, *content);
    if (!written.ok()) {
      std::remove(temp.c_str());
      // A full or read-only disk may recover; the caller decides whether to retry.
      return base::Unavailable("cannot write profile {}: {}; free space or fix permissions of {}",
                               path, written.message(), dir_);
    }
    if (std::rename(temp.c_str(), path.c_str()) != 0) {
      int err = errno;
      std::remove(temp.c_str());
      return base::Unavailable("cannot rename {} to {}: {}", temp, path, std::strerror(err));
    }
  }
  return base::OkStatus();
}

// ServerProfileSink --------------------------------------------------------------------------

ServerProfileSink::ServerProfileSink(Options options, std::string path,
                                     std::unique_ptr<httplib::Client> client)
    : options_(std::move(options)), path_(std::move(path)), client_(std::move(client)) {}

ServerProfileSink::~ServerProfileSink() = default;

base::Result<std::unique_ptr<ServerProfileSink>> ServerProfileSink::Create(Options options) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      exporters::HttpEndpoint endpoint,
      exporters::ParseHttpEndpoint(options.server_url, "--server", "http://server:9410"));
  if (options.host.empty()) {
    return base::Error(base::InvalidArgument(
        "profile upload needs a host name: set the agent's host name (--hostname)"));
  }
  if (!options.auth_token.empty() && !exporters::IsValidHeaderValue(options.auth_token)) {
    return base::Error(base::InvalidArgument(
        "the auth token has line breaks or NUL bytes: write only the token into the token file"));
  }
  exporters::HttpClientOptions client_options;
  client_options.timeout = options.timeout;
  client_options.tls_ca_file = options.tls_ca_file;
  auto client = exporters::MakeHttpClient(endpoint, client_options);
  std::string path = endpoint.path;
  while (!path.empty() && path.back() == '/') {
    path.pop_back();
  }
  path += "/api/v1/ingest/profile";
  return std::unique_ptr<ServerProfileSink>(
      new ServerProfileSink(std::move(options), std::move(path), std::move(client)));
}

std::string ServerProfileSink::TargetFor(const profiling::WindowProfile& profile) const {
  std::string target = fmt::format("{}?host={}&kind={}&pid={}", path_, UrlEncode(options_.host),
                                   UrlEncode(profile.kind), profile.pid);
  if (!profile.executable.empty()) {
    target += "&executable=" + UrlEncode(profile.executable);
  }
  if (profile.end_ns > profile.start_ns && profile.start_ns >= 0) {
    target += "&start=" + Seconds(profile.start_ns) + "&end=" + Seconds(profile.end_ns);
  }
  return target;
}

base::Status ServerProfileSink::Write(const profiling::WindowProfile& profile) {
  if (profile.pprof_gz.empty()) {
    return base::InvalidArgument("profile of pid {} has no pprof data; nothing to send",
                                 profile.pid);
  }
  httplib::Headers headers;
  if (!options_.auth_token.empty()) {
    headers.emplace("Authorization", "Bearer " + options_.auth_token);
  }
  std::string target = TargetFor(profile);
  auto res = client_->Post(target, headers, profile.pprof_gz, "application/octet-stream");
  if (!res) {
    return base::Unavailable(
        "profile upload to {}: {}; check that the server is running and "
        "reachable",
        options_.server_url, httplib::to_string(res.error()));
  }
  if (res->status == 200) {
    return base::OkStatus();
  }
  std::string body = exporters::BodySnippet(res->body);
  if (res->status == 401 || res->status == 403) {
    return base::PermissionDenied(
        "profile upload to {}: HTTP {} {}; put the server's ingest token in --auth-token-file",
        options_.server_url, res->status, body);
  }
  if (res->status >= 500 || res->status == 429) {
    return base::Unavailable("profile upload to {}: HTTP {} {}; will retry", options_.server_url,
                             res->status, body);
  }
  return base::InvalidArgument("profile upload to {}: HTTP {} {}", options_.server_url, res->status,
                               body);
}

}  // namespace warpscope::exporters
