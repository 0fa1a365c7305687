// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_AGENT_KUBERNETES_API_CONFIG_H_
#define WARPSCOPE_AGENT_KUBERNETES_API_CONFIG_H_

#include <cstdint>
#include <ctime>
#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace warpscope::agent::kubernetes {

// How to reach one Kubernetes API server: its URL, what to trust, and who we are. Every file a
// configuration names is read when it is loaded (so a bad file fails at start), except the token
// file, which is re-read when it changes (projected service-account tokens rotate).
struct ApiServerConfig {
  std::string server;  // "https://10.96.0.1:443" (http:// only for tests)
  std::string ca_pem;  // PEM certificates to verify the server; "" = the system's
  bool insecure_skip_tls_verify = false;
  std::string token;            // a static bearer token
  std::string token_file;       // a bearer token file, re-read when it changes
  std::string client_cert_pem;  // client certificate (PEM), with client_key_pem
  std::string client_key_pem;
  std::string origin;  // "in-cluster" or the kubeconfig's path, for messages
};

using GetEnv = std::function<const char*(const char*)>;

// The in-cluster configuration: KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT from `getenv`,
// the service account's token and CA under
// <root>/var/run/secrets/kubernetes.io/serviceaccount/ (`root` is "/" but in tests).
// Fails naming what is missing and what to fix.
[[nodiscard]] base::Result<ApiServerConfig> LoadInClusterConfig(const GetEnv& getenv,
                                                                std::string_view root = "/");

// A kubeconfig file: its current-context's cluster (server, certificate-authority(-data),
// insecure-skip-tls-verify) and user (token, tokenFile, client-certificate(-data) and
// client-key(-data)). Relative file paths are relative to the kubeconfig's directory, as kubectl
// reads them. Fails naming the file, the field and the fix.
[[nodiscard]] base::Result<ApiServerConfig> LoadKubeconfig(const std::string& path);

// Decodes standard base64 (the kubeconfig's *-data fields); whitespace is ignored.
[[nodiscard]] base::Result<std::string> DecodeBase64(std::string_view text);

// A bearer token read from a file and re-read when its modification time or size changes.
// Called from the watcher's thread only.
class TokenFile {
 public:
  explicit TokenFile(std::string path) : path_(std::move(path)) {}
  // The current token (trimmed); an error naming the file when it cannot be read or is empty.
  [[nodiscard]] base::Result<std::string> Get();
  uint64_t reads() const { return reads_; }

 private:
  std::string path_;
  std::string token_;
  struct timespec mtime_ = {};
  int64_t size_ = -1;
  uint64_t reads_ = 0;
};

}  // namespace warpscope::agent::kubernetes

#endif  // WARPSCOPE_AGENT_KUBERNETES_API_CONFIG_H_
