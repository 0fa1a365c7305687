// SPDX-License-Identifier: Apache-2.0
// Where finished window profiles (profiling/window_profile.h) go: files in a directory, or the
// warpscope server's profile ingest (POST /api/v1/ingest/profile, docs/api.md). A ProfileSink
// writes synchronously; ProfileUploader (profile_uploader.h) gives it a thread and a queue.
//
// Thread contract: Write() blocks (file or network I/O); call it from the profiler's upload
// thread, never from the agent main sequence. One instance is not used concurrently.
#ifndef WARPSCOPE_EXPORTERS_PROFILES_PROFILE_SINK_H_
#define WARPSCOPE_EXPORTERS_PROFILES_PROFILE_SINK_H_

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/time.h"
#include "profiling/window_profile.h"

namespace httplib {
class Client;
}  // namespace httplib

namespace warpscope::exporters {

class ProfileSink {
 public:
  virtual ~ProfileSink() = default;
  ProfileSink(const ProfileSink&) = delete;
  ProfileSink& operator=(const ProfileSink&) = delete;

  // Stores or sends one process's window. Unavailable for transient failures the caller may
  // retry (network, server 5xx, disk full); other codes mean retrying the same profile is
  // pointless.
  [[nodiscard]] virtual base::Status Write(const profiling::WindowProfile& profile) = 0;
  // The formats Write() uses.
  virtual profiling::ProfileFormats formats() const = 0;

 protected:
  ProfileSink() = default;
};

// Writes <dir>/<kind>-<host>-<pid>-<start ms>-<end ms>.pb.gz, .folded, the trace (.perfetto-trace,
// Perfetto's protobuf format, or .trace.json, Chrome JSON) and (when there were PC samples)
// .pc.folded. Each file is written to a temporary name and renamed, so readers never see partial
// files. Empty outputs are not written.
class DirectoryProfileSink final : public ProfileSink {
 public:
  // Creates `dir` (and parents) when missing. InvalidArgument when it exists and is not a
  // directory or cannot be created.
  // `trace`: the trace format formats() asks profilers for.
  [[nodiscard]] static base::Result<std::unique_ptr<DirectoryProfileSink>> Create(
      std::string dir, std::string host,
      profiling::TraceFormat trace = profiling::TraceFormat::kPerfetto);

  base::Status Write(const profiling::WindowProfile& profile) override;
  profiling::ProfileFormats formats() const override {
    return profiling::ProfileFormats::Files(trace_);
  }

  // The file name stem Write() uses for `profile`, without directory or extension.
  std::string StemFor(const profiling::WindowProfile& profile) const;

 private:
  DirectoryProfileSink(std::string dir, std::string host, profiling::TraceFormat trace);
  std::string dir_;
  std::string host_;
  profiling::TraceFormat trace_;
};

// POSTs the pprof of each window to <server>/api/v1/ingest/profile?host=H&kind=K&pid=P&
// executable=X&start=S&end=E (S, E in Unix seconds) with "Authorization: Bearer <token>" when a
// token is set.
class ServerProfileSink final : public ProfileSink {
 public:
  struct Options {
    std::string server_url;  // "http://server:9410" (a path prefix is kept)
    std::string host;        // the host name profiles are filed under
    std::string auth_token;  // the server's ingest token, "" for none
    std::string tls_ca_file;
    base::Duration timeout = std::chrono::seconds(10);
  };

  // InvalidArgument for a malformed URL, an empty host or a token that cannot go in a header.
  [[nodiscard]] static base::Result<std::unique_ptr<ServerProfileSink>> Create(Options options);
  ~ServerProfileSink() override;

  base::Status Write(const profiling::WindowProfile& profile) override;
  // The server stores pprof only.
  profiling::ProfileFormats formats() const override { return {.pprof = true}; }

  // The request target Write() uses for `profile` (path and query), for tests and logs.
  std::string TargetFor(const profiling::WindowProfile& profile) const;

 private:
  ServerProfileSink(Options options, std::string path, std::unique_ptr<httplib::Client> client);
  Options options_;
  std::string path_;
  std::unique_ptr<httplib::Client> client_;
};

// Percent-encodes everything but RFC 3986 unreserved characters.
std::string UrlEncode(std::string_view text);

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_PROFILES_PROFILE_SINK_H_
