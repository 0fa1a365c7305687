// SPDX-License-Identifier: Apache-2.0
#include "server/server_config.h"

#include <sys/stat.h>

#include "base/file_util.h"
#include "base/listen_address.h"

namespace warpscope::server {

base::Status ServerConfig::Validate() const {
  auto addr = base::ParseListenAddress(listen_address);
  if (!addr) return addr.error().WithContext("--listen-address");
  if (data_dir.empty()) {
    return base::InvalidArgument("--data-dir is empty: give a directory for the database");
  }
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    return base::InvalidArgument("--tls-cert and --tls-key go together: give both or neither");
  }
  if (max_body_bytes < 1024) {
    return base::InvalidArgument("--max-body-bytes={}: must be at least 1024", max_body_bytes);
  }
  if (max_series_per_host == 0) {
    return base::InvalidArgument("--max-series-per-host must be at least 1");
  }
  if (!(raw_retention <= minute_retention && minute_retention <= hour_retention)) {
    return base::InvalidArgument(
        "retention must grow with resolution: --retention-raw={} <= --retention-1m={} <= "
        "--retention-1h={}",
        base::FormatDuration(raw_retention), base::FormatDuration(minute_retention),
        base::FormatDuration(hour_retention));
  }
  if (raw_retention < std::chrono::hours(1)) {
    return base::InvalidArgument("--retention-raw={}: must be at least 1h",
                                 base::FormatDuration(raw_retention));
  }
  if (compact_interval < std::chrono::seconds(1)) {
    return base::InvalidArgument("--compact-interval must be at least 1s");
  }
  return base::OkStatus();
}

base::Result<std::string> ReadTokenFile(const std::string& path) {
  auto content = base::ReadFile(path, 4096);
  if (!content) {
    return base::Error(content.error().WithContext(
        "--auth-token-file (create it with: head -c 32 /dev/urandom | base64 > FILE; "
        "chmod 600 FILE)"));
  }
  std::string token(base::TrimWhitespace(*content));
  if (token.empty()) {
    return base::Error(base::InvalidArgument("--auth-token-file {} is empty: put a token in it",
                                             path));
  }
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && (st.st_mode & 0077) != 0) {
    return base::Error(base::PermissionDenied(
        "--auth-token-file {} is readable by other users: chmod 600 {}", path, path));
  }
  return token;
}

}  // namespace warpscope::server
