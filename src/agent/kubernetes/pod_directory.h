// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_AGENT_KUBERNETES_POD_DIRECTORY_H_
#define WARPSCOPE_AGENT_KUBERNETES_POD_DIRECTORY_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>

#include "agent/kubernetes/api_config.h"
#include "agent/kubernetes/pod_cache.h"
#include "base/status.h"
#include "base/time.h"

namespace httplib {
class ClientImpl;
}

namespace warpscope::agent::kubernetes {

// The pods of one node, kept current from the Kubernetes API: a LIST of
// /api/v1/pods?fieldSelector=spec.nodeName=<node>, then a WATCH from the list's resourceVersion
// (with bookmarks), applied to a PodCache that any thread may read. A 410 Gone, an ERROR event,
// a malformed or oversized event line end the watch and re-list; network and HTTP errors retry
// with capped exponential backoff, logging once per change of state (not once per try).
//
// Threads: the watcher runs on a thread of its own (never the agent's main sequence; network
// waits block only it). Start() and Stop() are called from one thread; Stop() returns promptly
// (it shuts the open connection) and is idempotent; the destructor stops.
class PodDirectory {
 public:
  struct Options {
    std::string node_name;  // required
    PodCache::Options cache;
    base::Duration initial_backoff = std::chrono::milliseconds(500);
    base::Duration max_backoff = std::chrono::seconds(30);
    int watch_timeout_seconds = 300;   // the server ends each watch after this; we rewatch
    size_t max_event_bytes = 1 << 20;  // one watch line (a pod is a few KiB; 1 MiB is etcd's cap)
    size_t max_list_bytes = 64 << 20;  // the node's PodList
    base::Duration connect_timeout = std::chrono::seconds(10);
  };
  struct Stats {
    uint64_t lists = 0;           // successful LISTs
    uint64_t watch_restarts = 0;  // watches ended by 410, an ERROR event or a bad line (re-list)
    uint64_t errors = 0;          // failed LISTs and watches (network, HTTP status, bad data)
    bool synced = false;          // the last LIST succeeded and no error followed
  };
  // Reasons given to the error hook: list_failed, watch_failed, watch_gone, watch_error,
  // bad_event, event_too_large.
  using ErrorHook = std::function<void(std::string_view reason)>;

  // Fails (InvalidArgument) on a bad server URL, certificate or key, or an empty node name.
  [[nodiscard]] static base::Result<std::unique_ptr<PodDirectory>> Create(ApiServerConfig config,
                                                                          Options options,
                                                                          const base::Clock& clock,
                                                                          ErrorHook on_error = {});
  ~PodDirectory();
  PodDirectory(const PodDirectory&) = delete;
  PodDirectory& operator=(const PodDirectory&) = delete;

  void Start();
  void Stop();

  // Shared with the process resolvers, which may outlive the directory's thread.
  std::shared_ptr<const PodCache> cache() const { return cache_; }
  Stats stats() const;

 private:
  struct Tls;
  enum class WatchEnd { kTimedOut, kRelist, kFailed, kStopped };

  PodDirectory(ApiServerConfig config, Options options, const base::Clock& clock,
               ErrorHook on_error);
  void Run(std::stop_token stop);
  base::Status List(std::stop_token stop, std::string& resource_version);
  WatchEnd Watch(std::stop_token stop, std::string& resource_version);
  base::Result<std::shared_ptr<httplib::ClientImpl>> Connect(base::Duration read_timeout);
  base::Result<std::string> Token();
  void Failed(std::string_view reason, const std::string& message);
  void Recovered(size_t pods);
  void Backoff(std::stop_token stop);

  const ApiServerConfig config_;
  const Options options_;
  const ErrorHook on_error_;
  std::unique_ptr<Tls> tls_;
  std::string scheme_, host_, base_path_;
  int port_ = 0;
  std::shared_ptr<PodCache> cache_;
  std::unique_ptr<TokenFile> token_file_;  // the watcher thread's

  mutable std::mutex mu_;
  std::condition_variable_any wake_;
  std::shared_ptr<httplib::ClientImpl> client_;  // guarded by mu_: the open connection
  Stats stats_;                                  // guarded by mu_
  std::string failing_;                          // guarded by mu_: the last logged error
  bool finished_ = false;                        // guarded by mu_: the thread has returned
  std::condition_variable_any finished_cv_;
  int consecutive_failures_ = 0;  // watcher thread
  std::jthread thread_;
};

}  // namespace warpscope::agent::kubernetes

#endif  // WARPSCOPE_AGENT_KUBERNETES_POD_DIRECTORY_H_
