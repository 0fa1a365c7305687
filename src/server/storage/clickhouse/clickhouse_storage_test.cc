// SPDX-License-Identifier: Apache-2.0
// ClickHouseStorage against a real clickhouse-server, started by the test on loopback: the
// conformance suite, errors that name their fix, two stores sharing one database, and an outage.
#include "server/storage/clickhouse/clickhouse_storage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include "server/storage/clickhouse/testing/clickhouse_server.h"
#include "server/storage/testing/storage_conformance.h"

namespace warpscope::server {
namespace {

using clickhouse::TestServer;
using ::testing::HasSubstr;
using ::testing::SizeIs;

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (std::string(ci) == "true" || std::string(ci) == "1");
}

// The server the conformance tests of this process share (each test its own database).
TestServer* SharedServer(std::string* error) {
  static std::mutex mu;
  static std::unique_ptr<TestServer> server;
  static std::string start_error;
  std::lock_guard lock(mu);
  if (server == nullptr && start_error.empty()) {
    auto started = TestServer::Start();
    if (started) {
      server = std::move(*started);
    } else {
      start_error = started.error().ToString();
    }
  }
  if (error != nullptr) *error = start_error;
  return server.get();
}

// A database per test directory, so that reopening the directory finds the same data.
std::string DatabaseFor(const std::string& dir) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : dir) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("t_{:016x}", h);
}

base::Result<std::unique_ptr<Storage>> OpenClickHouse(const std::string& dir,
                                                      const StorageOptions& options) {
  std::string error;
  TestServer* server = SharedServer(&error);
  if (server == nullptr) {
    return base::Error(base::Unavailable("{}", error));
  }
  ClickHouseStorageOptions o;
  o.url = server->Url(DatabaseFor(dir));
  o.storage = options;
  auto opened = ClickHouseStorage::Open(o);
  if (!opened) return base::Error(opened.error());
  return std::unique_ptr<Storage>(std::move(*opened));
}

// Outside CI a machine without clickhouse-server skips; in CI the tests run and fail with the
// setup step in their message (SharedServer's error).
std::string SkipReason(const std::string& /*test*/) {
  if (!InCi() && TestServer::FindBinary().empty()) return clickhouse::kSetupHint;
  return "";
}

INSTANTIATE_TEST_SUITE_P(ClickHouse, StorageConformanceTest,
                         ::testing::Values(StorageBackend{"clickhouse", OpenClickHouse,
                                                          SkipReason}),
                         StorageBackendName);

}  // namespace
}  // namespace warpscope::server
