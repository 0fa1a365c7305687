// SPDX-License-Identifier: Apache-2.0
#include "agent/kubernetes/pod_directory.h"

#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <charconv>

#include "agent/kubernetes/pod_events.h"
#include "base/logging.h"

namespace warpscope::agent::kubernetes {

// Client certificate and key, parsed once (a bad one fails at start); the CA bundle is parsed
// for each connection, since the client takes ownership of its certificate store.
struct PodDirectory::Tls {
  std::string ca_pem;
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  ~Tls() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

namespace {

using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;

BioPtr MemBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
}

// Every certificate of a PEM bundle into a new store; nullptr when there is none.
X509_STORE* StoreFromPem(const std::string& pem) {
  BioPtr bio = MemBio(pem);
  X509_STORE* store = X509_STORE_new();
  int added = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    added += X509_STORE_add_cert(store, cert) == 1 ? 1 : 0;
    X509_free(cert);
  }
  if (added == 0) {
    X509_STORE_free(store);
    return nullptr;
  }
  return store;
}

// Splits "https://host:port/prefix".
base::Status ParseServer(const std::string& url, std::string& scheme, std::string& host, int& port,
                         std::string& path) {
  const size_t sep = url.find("://");
  if (sep == std::string::npos) {
    return base::InvalidArgument("API server '{}': expected https://HOST[:PORT]", url);
  }
  scheme = url.substr(0, sep);
  std::string rest = url.substr(sep + 3);
  const size_t slash = rest.find('/');
  path = slash == std::string::npos ? "" : rest.substr(slash);
  while (!path.empty() && path.back() == '/') path.pop_back();
  std::string authority = rest.substr(0, slash);
  port = scheme == "https" ? 443 : 80;
  size_t colon = authority.rfind(':');
  if (!authority.empty() && authority.front() == '[') {  // [v6]:port
    const size_t close = authority.find(']');
    if (close == std::string::npos) return base::InvalidArgument("API server '{}': bad host", url);
    host = authority.substr(1, close - 1);
    colon = authority.find(':', close);
  } else {
    host = authority.substr(0, colon);
  }
  if (colon != std::string::npos) {
    const std::string p = authority.substr(colon + 1);
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
    if (ec != std::errc() || end != p.data() + p.size() || port <= 0 || port > 65535) {
      return base::InvalidArgument("API server '{}': bad port '{}'", url, p);
    }
  }
  if (host.empty() || (scheme != "https" && scheme != "http")) {
    return base::InvalidArgument("API server '{}': expected https://HOST[:PORT]", url);
  }
  return base::OkStatus();
}

std::string UrlEncode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

template <class Rep, class Period>
std::pair<time_t, time_t> SecUsec(std::chrono::duration<Rep, Period> d) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  return {static_cast<time_t>(us / 1000000), static_cast<time_t>(us % 1000000)};
}

}  // namespace

base::Result<std::unique_ptr<PodDirectory>> PodDirectory::Create(ApiServerConfig config,
                                                                 Options options,
                                                                 const base::Clock& clock,
                                                                 ErrorHook on_error) {
  if (options.node_name.empty()) {
    return base::Error(base::InvalidArgument(
        "the node's name is unknown; give --kubernetes-node NAME (in a pod: the downward API's "
        "spec.nodeName as NODE_NAME)"));
  }
  std::unique_ptr<PodDirectory> d(
      new PodDirectory(std::move(config), std::move(options), clock, std::move(on_error)));
  WARPSCOPE_RETURN_IF_ERROR(
      ParseServer(d->config_.server, d->scheme_, d->host_, d->port_, d->base_path_)
          .WithContext(d->config_.origin));
  d->tls_->ca_pem = d->config_.ca_pem;
  if (!d->config_.ca_pem.empty()) {
    X509_STORE* store = StoreFromPem(d->config_.ca_pem);
    if (store == nullptr) {
      return base::Error(base::InvalidArgument(
          "{}: the certificate authority holds no PEM certificate", d->config_.origin));
    }
    X509_STORE_free(store);
  }
  if (!d->config_.client_cert_pem.empty()) {
    BioPtr cert = MemBio(d->config_.client_cert_pem);
    d->tls_->cert = PEM_read_bio_X509(cert.get(), nullptr, nullptr, nullptr);
    BioPtr key = MemBio(d->config_.client_key_pem);
    d->tls_->key = PEM_read_bio_PrivateKey(key.get(), nullptr, nullptr, nullptr);
    if (d->tls_->cert == nullptr || d->tls_->key == nullptr) {
      return base::Error(base::InvalidArgument("{}: the client {} is not PEM", d->config_.origin,
                                               d->tls_->cert == nullptr ? "certificate" : "key"));
    }
  }
  if (!d->config_.token_file.empty()) {
    d->token_file_ = std::make_unique<TokenFile>(d->config_.token_file);
  }
  return d;
}

PodDirectory::PodDirectory(ApiServerConfig config, Options options, const base::Clock& clock,
                           ErrorHook on_error)
    : config_(std::move(config)),
      options_(std::move(options)),
      on_error_(std::move(on_error)),
      tls_(std::make_unique<Tls>()),
      cache_(std::make_shared<PodCache>(options_.cache, clock)) {}

PodDirectory::~PodDirectory() { Stop(); }

void PodDirectory::Start() {
  if (thread_.joinable()) return;
  WARPSCOPE_LOG(INFO, "kubernetes: watching the pods of node {} through {} ({})",
                options_.node_name, config_.server, config_.origin);
  thread_ = std::jthread([this](std::stop_token stop) {
    try {
      Run(stop);
    } catch (...) {
      WARPSCOPE_LOG(ERROR,
                    "kubernetes: the pod watcher stopped on an unexpected exception; pods "
                    "are no longer updated");
    }
    std::lock_guard lock(mu_);
    finished_ = true;
    finished_cv_.notify_all();
  });
}

void PodDirectory::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  // Shutting the connection wakes a blocked read. A request that had not opened its socket yet
  // when stop() was called is not woken by it, so repeat until the thread says it is done.
  std::unique_lock lock(mu_);
  while (!finished_) {
    if (client_) client_->stop();
    wake_.notify_all();
    finished_cv_.wait_for(lock, std::chrono::milliseconds(20));
  }
  lock.unlock();
  thread_.join();
}

PodDirectory::Stats PodDirectory::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void PodDirectory::Run(std::stop_token stop) {
  std::string resource_version;
  bool need_list = true;
  while (!stop.stop_requested()) {
    if (need_list) {
      base::Status listed = List(stop, resource_version);
      if (stop.stop_requested()) return;
      if (!listed.ok()) {
        Failed("list_failed", listed.message());
        Backoff(stop);
        continue;
      }
      need_list = false;
      consecutive_failures_ = 0;
      Recovered(cache_->live_pods());
    }
    const auto watch_start = std::chrono::steady_clock::now();
    switch (Watch(stop, resource_version)) {
      case WatchEnd::kTimedOut:
        // The server's timeoutSeconds: watch again from the last version. A stream that ends at
        // once (a proxy that does not stream) must not turn this into a busy loop.
        if (std::chrono::steady_clock::now() - watch_start < std::chrono::seconds(1)) {
          Backoff(stop);
        }
        break;
      case WatchEnd::kRelist:
        need_list = true;
        break;
      case WatchEnd::kFailed:
        need_list = true;
        Backoff(stop);
        break;
      case WatchEnd::kStopped:
        return;
    }
  }
}

base::Result<std::string> PodDirectory::Token() {
  if (token_file_) return token_file_->Get();
  return config_.token;
}

base::Result<std::shared_ptr<httplib::ClientImpl>> PodDirectory::Connect(
    base::Duration read_timeout) {
  std::shared_ptr<httplib::ClientImpl> client;
  if (scheme_ == "https") {
    auto ssl = std::make_shared<httplib::SSLClient>(host_, port_, tls_->cert, tls_->key);
    if (!tls_->ca_pem.empty()) ssl->set_ca_cert_store(StoreFromPem(tls_->ca_pem));
    ssl->enable_server_certificate_verification(!config_.insecure_skip_tls_verify);
    client = std::move(ssl);
  } else {
    client = std::make_shared<httplib::ClientImpl>(host_, port_);
  }
  auto [cs, cu] = SecUsec(options_.connect_timeout);
  client->set_connection_timeout(cs, cu);
  auto [rs, ru] = SecUsec(read_timeout);
  client->set_read_timeout(rs, ru);
  client->set_keep_alive(false);
  WARPSCOPE_ASSIGN_OR_RETURN(std::string token, Token());
  if (!token.empty()) client->set_bearer_token_auth(token);
  return client;
}

base::Status PodDirectory::List(std::stop_token stop, std::string& resource_version) {
  WARPSCOPE_ASSIGN_OR_RETURN(auto client, Connect(std::chrono::seconds(60)));
  {
    std::lock_guard lock(mu_);
    if (stop.stop_requested()) return base::OkStatus();
    client_ = client;
  }
  const std::string path = fmt::format("{}/api/v1/pods?fieldSelector={}", base_path_,
                                       UrlEncode("spec.nodeName=" + options_.node_name));
  std::string body;
  int status = 0;
  bool too_large = false;
  httplib::Result res = client->Get(
      path, httplib::Headers{{"Accept", "application/json"}},
      [&](const httplib::Response& r) {
        status = r.status;
        return true;
      },
      [&](const char* data, size_t n) {
        if (body.size() + n > options_.max_list_bytes) {
          too_large = true;
          return false;
        }
        body.append(data, n);
        return !stop.stop_requested();
      });
  {
    std::lock_guard lock(mu_);
    client_.reset();
  }
  if (stop.stop_requested()) return base::OkStatus();
  if (too_large) {
    return base::Unavailable("GET {}: the pod list is larger than {} bytes", path,
                             options_.max_list_bytes);
  }
  if (!res) {
    return base::Unavailable("GET {}{}: {} error", config_.server, path,
                             httplib::to_string(res.error()));
  }
  if (status != 200) {
    std::string hint;
    if (status == 401) hint = "; the token or certificate is not accepted";
    if (status == 403) {
      hint = "; the agent's service account needs get, list and watch on pods (ClusterRole)";
    }
    return base::Unavailable("GET {}{}: HTTP {}{}", config_.server, path, status, hint);
  }
  WARPSCOPE_ASSIGN_OR_RETURN(PodList list, ParsePodList(body));
  resource_version = list.resource_version;
  cache_->Replace(std::move(list.pods));
  std::lock_guard lock(mu_);
  ++stats_.lists;
  return base::OkStatus();
}

PodDirectory::WatchEnd PodDirectory::Watch(std::stop_token stop, std::string& resource_version) {
  // Read timeout: the server ends the watch after timeoutSeconds and sends bookmarks meanwhile;
  // a minute more than that means the connection is dead.
  auto connected = Connect(std::chrono::seconds(options_.watch_timeout_seconds + 60));
  if (!connected) {
    Failed("watch_failed", connected.error().message());
    return WatchEnd::kFailed;
  }
  std::shared_ptr<httplib::ClientImpl> client = *connected;
  {
    std::lock_guard lock(mu_);
    if (stop.stop_requested()) return WatchEnd::kStopped;
    client_ = client;
  }
  const std::string path = fmt::format(
      "{}/api/v1/pods?fieldSelector={}&watch=1&allowWatchBookmarks=true&timeoutSeconds={}{}",
      base_path_, UrlEncode("spec.nodeName=" + options_.node_name), options_.watch_timeout_seconds,
      resource_version.empty() ? "" : "&resourceVersion=" + UrlEncode(resource_version));
  int status = 0;
  std::string line;
  std::optional<WatchEnd> end;
  std::string why;
  const char* reason = "";
  auto handle_line = [&](std::string_view text) {
    if (text.empty()) return;
    auto event = ParseWatchEvent(text);
    if (!event) {
      reason = "bad_event";
      why = event.error().message();
      end = WatchEnd::kFailed;
      return;
    }
    switch (event->type) {
      case WatchEvent::Type::kAdded:
      case WatchEvent::Type::kModified:
        cache_->Upsert(std::move(event->pod));
        break;
      case WatchEvent::Type::kDeleted:
        cache_->Remove(event->pod.uid);
        break;
      case WatchEvent::Type::kBookmark:
        break;
      case WatchEvent::Type::kError:
        reason = event->error_code == 410 ? "watch_gone" : "watch_error";
        why = fmt::format("ERROR event {}: {}", event->error_code, event->error_message);
        end = WatchEnd::kRelist;
        return;
    }
    if (!event->resource_version.empty()) resource_version = event->resource_version;
  };
  httplib::Result res = client->Get(
      path, httplib::Headers{{"Accept", "application/json"}},
      [&](const httplib::Response& r) {
        status = r.status;
        return r.status == 200;
      },
      [&](const char* data, size_t n) {
        std::string_view chunk(data, n);
        while (!chunk.empty() && !end) {
          const size_t nl = chunk.find('\n');
          const std::string_view part = chunk.substr(0, nl);
          if (line.size() + part.size() > options_.max_event_bytes) {
            reason = "event_too_large";
            why = fmt::format("a watch event line longer than {} bytes", options_.max_event_bytes);
            end = WatchEnd::kFailed;
            break;
          }
          line.append(part);
          if (nl == std::string_view::npos) break;
          handle_line(line);
          line.clear();
          chunk.remove_prefix(nl + 1);
        }
        return !end && !stop.stop_requested();
      });
  {
    std::lock_guard lock(mu_);
    client_.reset();
  }
  if (stop.stop_requested()) return WatchEnd::kStopped;
  if (!end && !res && res.error() != httplib::Error::Canceled) {
    reason = "watch_failed";
    why = fmt::format("watch: {} error", httplib::to_string(res.error()));
    end = WatchEnd::kFailed;
  }
  if (!end && status != 200) {
    if (status == 410) {
      reason = "watch_gone";
      why = "watch: HTTP 410 Gone";
      end = WatchEnd::kRelist;
    } else {
      reason = "watch_failed";
      why = fmt::format("watch: HTTP {}", status);
      end = WatchEnd::kFailed;
    }
  }
  if (!end) return WatchEnd::kTimedOut;
  {
    std::lock_guard lock(mu_);
    ++stats_.watch_restarts;
  }
  if (*end == WatchEnd::kRelist) {
    // Expected now and then (the version fell out of the server's window): no warning.
    WARPSCOPE_VLOG(1, "kubernetes: {}; listing the node's pods again", why);
    if (on_error_) on_error_(reason);
  } else {
    Failed(reason, why);
  }
  return *end;
}

void PodDirectory::Failed(std::string_view reason, const std::string& message) {
  if (on_error_) on_error_(reason);
  ++consecutive_failures_;
  std::lock_guard lock(mu_);
  ++stats_.errors;
  stats_.synced = false;
  if (failing_ != reason) {  // once per state change, not once per retry
    failing_ = std::string(reason);
    WARPSCOPE_LOG(WARNING,
                  "kubernetes: {} ({}); retrying with backoff up to {}; processes keep their pod "
                  "UID but not its namespace and name meanwhile",
                  message, config_.origin, base::FormatDuration(options_.max_backoff));
  }
}

void PodDirectory::Recovered(size_t pods) {
  std::lock_guard lock(mu_);
  stats_.synced = true;
  if (!failing_.empty() || stats_.lists == 1) {
    WARPSCOPE_LOG(INFO, "kubernetes: {} pods on node {}{}", pods, options_.node_name,
                  failing_.empty() ? "" : " (recovered)");
  }
  failing_.clear();
}

void PodDirectory::Backoff(std::stop_token stop) {
  base::Duration wait = options_.initial_backoff;
  for (int i = 1; i < consecutive_failures_ && wait < options_.max_backoff; ++i) wait *= 2;
  wait = std::min(wait, options_.max_backoff);
  std::unique_lock lock(mu_);
  wake_.wait_for(lock, stop, wait, [] { return false; });
}

}  // namespace warpscope::agent::kubernetes
