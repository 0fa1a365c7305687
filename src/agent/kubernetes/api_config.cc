// SPDX-License-Identifier: Apache-2.0
#include "agent/kubernetes/api_config.h"

#include <openssl/evp.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/file_util.h"

namespace warpscope::agent::kubernetes {
namespace {

constexpr std::string_view kServiceAccountDir = "var/run/secrets/kubernetes.io/serviceaccount";
constexpr size_t kMaxFileBytes = 1 << 20;  // certificates, keys, tokens and kubeconfigs

std::string JoinRoot(std::string_view root, std::string_view rel) {
  std::string out(root);
  if (out.empty() || out.back() != '/') out.push_back('/');
  out.append(rel);
  return out;
}

// "host:port" with brackets around an IPv6 address.
std::string HostPort(std::string_view host, std::string_view port) {
  if (host.find(':') != std::string_view::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

// A map entry of a kubeconfig node as a string ("" when absent); an error when not a scalar.
base::Result<std::string> Scalar(const YAML::Node& map, const char* key, std::string_view where) {
  const YAML::Node n = map[key];
  if (!n || n.IsNull()) return std::string();
  if (!n.IsScalar()) {
    return base::Error(base::InvalidArgument("{}.{}: expected a string", where, key));
  }
  return n.Scalar();
}

// The entry named `name` of a kubeconfig list (clusters, users, contexts) and its inner map.
base::Result<YAML::Node> Named(const YAML::Node& root, const char* list, const char* inner,
                               const std::string& name, const std::string& path) {
  const YAML::Node entries = root[list];
  if (entries && entries.IsSequence()) {
    for (const YAML::Node& e : entries) {
      if (e.IsMap() && e["name"] && e["name"].IsScalar() && e["name"].Scalar() == name) {
        const YAML::Node body = e[inner];
        if (!body || !body.IsMap()) {
          return base::Error(
              base::InvalidArgument("{}: {} '{}' has no '{}' map", path, list, name, inner));
        }
        return body;
      }
    }
  }
  return base::Error(base::InvalidArgument(
      "{}: no entry named '{}' in '{}'; fix the kubeconfig (kubectl config view) or choose "
      "another current-context",
      path, name, list));
}

// PEM from `<key>-data` (base64) or from the file `<key>` (relative to `dir`).
base::Result<std::string> PemField(const YAML::Node& map, const std::string& key,
                                   std::string_view where, const std::string& dir) {
  WARPSCOPE_ASSIGN_OR_RETURN(std::string data, Scalar(map, (key + "-data").c_str(), where));
  if (!data.empty()) {
    auto pem = DecodeBase64(data);
    if (!pem) return base::Error(pem.error().WithContext(fmt::format("{}.{}-data", where, key)));
    return *pem;
  }
  WARPSCOPE_ASSIGN_OR_RETURN(std::string file, Scalar(map, key.c_str(), where));
  if (file.empty()) return std::string();
  std::filesystem::path p(file);
  if (p.is_relative()) p = std::filesystem::path(dir) / p;
  auto text = base::ReadFile(p.string(), kMaxFileBytes);
  if (!text) {
    return base::Error(text.error().WithContext(fmt::format("{}.{} ({})", where, key, p.string())));
  }
  return *text;
}

base::Result<ApiServerConfig> ParseKubeconfig(const YAML::Node& root, const std::string& path) {
  if (!root.IsMap()) {
    return base::Error(
        base::InvalidArgument("{}: not a kubeconfig (expected a YAML map with "
                              "clusters, users, contexts and current-context)",
                              path));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(std::string context_name, Scalar(root, "current-context", path));
  if (context_name.empty()) {
    return base::Error(base::InvalidArgument(
        "{}: no current-context; set one with kubectl config use-context NAME", path));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node context,
                             Named(root, "contexts", "context", context_name, path));
  const std::string cwhere = fmt::format("{}: context '{}'", path, context_name);
  WARPSCOPE_ASSIGN_OR_RETURN(std::string cluster_name, Scalar(context, "cluster", cwhere));
  WARPSCOPE_ASSIGN_OR_RETURN(std::string user_name, Scalar(context, "user", cwhere));
  if (cluster_name.empty()) {
    return base::Error(base::InvalidArgument("{}: names no cluster", cwhere));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node cluster,
                             Named(root, "clusters", "cluster", cluster_name, path));
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const std::string where = fmt::format("{}: cluster '{}'", path, cluster_name);
  ApiServerConfig config;
  config.origin = path;
  WARPSCOPE_ASSIGN_OR_RETURN(config.server, Scalar(cluster, "server", where));
  if (!config.server.starts_with("https://") && !config.server.starts_with("http://")) {
    return base::Error(base::InvalidArgument(
        "{}.server '{}': expected an https:// URL of the API server", where, config.server));
  }
  while (!config.server.empty() && config.server.back() == '/') config.server.pop_back();
  WARPSCOPE_ASSIGN_OR_RETURN(config.ca_pem, PemField(cluster, "certificate-authority", where, dir));
  WARPSCOPE_ASSIGN_OR_RETURN(std::string insecure,
                             Scalar(cluster, "insecure-skip-tls-verify", where));
  config.insecure_skip_tls_verify = insecure == "true";

  if (user_name.empty()) return config;  // anonymous
  WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node user, Named(root, "users", "user", user_name, path));
  const std::string uwhere = fmt::format("{}: user '{}'", path, user_name);
  if (user["exec"] || user["auth-provider"]) {
    return base::Error(base::InvalidArgument(
        "{}: uses {} credentials, which the agent does not run; give the user a token, tokenFile "
        "or client certificate (a service account's token is simplest)",
        uwhere, user["exec"] ? "exec" : "auth-provider"));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(config.token, Scalar(user, "token", uwhere));
  WARPSCOPE_ASSIGN_OR_RETURN(std::string token_file, Scalar(user, "tokenFile", uwhere));
  if (!token_file.empty()) {
    std::filesystem::path p(token_file);
    if (p.is_relative()) p = std::filesystem::path(dir) / p;
    config.token_file = p.string();
    TokenFile probe(config.token_file);
    if (auto t = probe.Get(); !t) return base::Error(t.error().WithContext(uwhere + ".tokenFile"));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(config.client_cert_pem,
                             PemField(user, "client-certificate", uwhere, dir));
  WARPSCOPE_ASSIGN_OR_RETURN(config.client_key_pem, PemField(user, "client-key", uwhere, dir));
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    return base::Error(base::InvalidArgument(
        "{}: has a client certificate without its key, or a key without its certificate; give "
        "both client-certificate(-data) and client-key(-data)",
        uwhere));
  }
  return config;
}

}  // namespace

base::Result<ApiServerConfig> LoadInClusterConfig(const GetEnv& getenv, std::string_view root) {
  const char* host = getenv("KUBERNETES_SERVICE_HOST");
  const char* port = getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0') {
    return base::Error(base::NotFound(
        "--kubernetes: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set, so the "
        "agent is not running in a pod; run it in the cluster, or give --kubeconfig FILE"));
  }
  ApiServerConfig config;
  config.origin = "in-cluster";
  config.server = "https://" + HostPort(host, port);
  config.token_file = JoinRoot(root, std::string(kServiceAccountDir) + "/token");
  TokenFile probe(config.token_file);
  if (auto t = probe.Get(); !t) {
    return base::Error(t.error().WithContext(
        "--kubernetes: the service account token (mount one: automountServiceAccountToken)"));
  }
  const std::string ca = JoinRoot(root, std::string(kServiceAccountDir) + "/ca.crt");
  auto pem = base::ReadFile(ca, kMaxFileBytes);
  if (!pem) {
    return base::Error(pem.error().WithContext("--kubernetes: the cluster's CA certificate"));
  }
  config.ca_pem = std::move(*pem);
  return config;
}

base::Result<ApiServerConfig> LoadKubeconfig(const std::string& path) {
  auto text = base::ReadFile(path, kMaxFileBytes);
  if (!text) return base::Error(text.error().WithContext("--kubeconfig"));
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return base::Error(base::InvalidArgument("--kubeconfig {}: not YAML: {}", path, e.what()));
  }
  try {
    auto config = ParseKubeconfig(root, path);
    if (!config) return base::Error(config.error().WithContext("--kubeconfig"));
    return config;
  } catch (const YAML::Exception& e) {
    return base::Error(
        base::InvalidArgument("--kubeconfig {}: unexpected structure: {}", path, e.what()));
  }
}

base::Result<std::string> DecodeBase64(std::string_view text) {
  std::string compact;
  compact.reserve(text.size());
  for (char c : text) {
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') compact.push_back(c);
  }
  if (compact.size() % 4 != 0) {
    return base::Error(
        base::InvalidArgument("not base64 ({} characters, not a multiple of 4)", compact.size()));
  }
  std::string out(compact.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(compact.data()),
                                static_cast<int>(compact.size()));
  if (n < 0) return base::Error(base::InvalidArgument("not base64"));
  // EVP_DecodeBlock counts the padding as zero bytes.
  size_t len = static_cast<size_t>(n);
  for (size_t i = compact.size(); i > 0 && compact[i - 1] == '=' && len > 0; --i) --len;
  out.resize(len);
  return out;
}

base::Result<std::string> TokenFile::Get() {
  struct stat st = {};
  if (::stat(path_.c_str(), &st) != 0) {
    return base::Error(base::NotFound("token file {}: {}", path_, std::strerror(errno)));
  }
  if (st.st_mtim.tv_sec != mtime_.tv_sec || st.st_mtim.tv_nsec != mtime_.tv_nsec ||
      st.st_size != size_ || token_.empty()) {
    auto text = base::ReadFile(path_, kMaxFileBytes);
    if (!text) return base::Error(text.error().WithContext("token file"));
    token_ = std::string(base::TrimWhitespace(*text));
    mtime_ = st.st_mtim;
    size_ = st.st_size;
    ++reads_;
  }
  if (token_.empty()) {
    return base::Error(base::InvalidArgument("token file {} is empty", path_));
  }
  return token_;
}

}  // namespace warpscope::agent::kubernetes
