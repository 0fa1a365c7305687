// SPDX-License-Identifier: Apache-2.0
// Tests only: a private clickhouse-server on loopback. Its config, data and logs live in a
// temporary directory; it runs as a child process on free ports and is stopped by its pid.
#ifndef WARPSCOPE_SERVER_STORAGE_CLICKHOUSE_TESTING_CLICKHOUSE_SERVER_H_
#define WARPSCOPE_SERVER_STORAGE_CLICKHOUSE_TESTING_CLICKHOUSE_SERVER_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>

#include "base/status.h"
#include "base/testing/temp_dir.h"

namespace warpscope::server::clickhouse {

// What to tell a developer whose machine lacks clickhouse-server.
inline constexpr char kSetupHint[] =
    "clickhouse-server is not installed: run scripts/setup.sh --test (it installs "
    "clickhouse-server), or set WARPSCOPE_CLICKHOUSE_SERVER to its path";

class TestServer {
 public:
  // The clickhouse-server binary: $WARPSCOPE_CLICKHOUSE_SERVER, else on PATH, /usr/bin or
  // /usr/sbin; "" when there is none.
  static std::string FindBinary();

  // Starts a server whose user "default" has `password` ("" for none) and waits until /ping
  // answers (at most `ready_within`). NotFound with kSetupHint when the binary is missing.
  static base::Result<std::unique_ptr<TestServer>> Start(
      const std::string& password = "",
      std::chrono::seconds ready_within = std::chrono::seconds(60));

  ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  // Stops the process and waits for it to exit: SIGTERM (SIGKILL after a grace period), or
  // SIGKILL at once when not `graceful` (the destructor's way: the data goes with the directory).
  void Stop(bool graceful = true);
  // Starts it again on the same port and data (after Stop()).
  base::Status Restart();

  int http_port() const { return http_port_; }
  // clickhouse://127.0.0.1:PORT/<database>
  std::string Url(const std::string& database) const;
  bool running() const { return pid_ > 0; }

 private:
  TestServer() = default;
  base::Status Launch();

  base::TempDir dir_{"warpscope_clickhouse_"};
  std::string binary_;
  std::chrono::seconds ready_within_{60};
  int http_port_ = 0;
  int tcp_port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace warpscope::server::clickhouse

#endif  // WARPSCOPE_SERVER_STORAGE_CLICKHOUSE_TESTING_CLICKHOUSE_SERVER_H_
