// SPDX-License-Identifier: Apache-2.0
// The behaviour every Storage backend must have, as a parameterised GoogleTest suite. A backend
// instantiates it with a factory:
//
//   base::Result<std::unique_ptr<Storage>> OpenMine(const std::string& dir,
//                                                    const StorageOptions& options);
//   INSTANTIATE_TEST_SUITE_P(Mine, StorageConformanceTest,
//                            ::testing::Values(StorageBackend{"mine", OpenMine}),
//                            StorageBackendName);
//
// and links warpscope::server_storage_conformance. Each test gets a fresh, empty temporary
// directory; opening the same directory again must give back everything written before
// (durability). Tests drive time explicitly (no clocks, no sleeps).
#ifndef WARPSCOPE_SERVER_STORAGE_TESTING_STORAGE_CONFORMANCE_H_
#define WARPSCOPE_SERVER_STORAGE_TESTING_STORAGE_CONFORMANCE_H_

#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <memory>
#include <string>

#include "base/status.h"
#include "base/testing/temp_dir.h"
#include "base/time.h"
#include "server/storage/storage.h"

namespace warpscope::server {

// Opens the backend on `dir` (a directory it may use as it likes) with `options`.
using StorageFactory = std::function<base::Result<std::unique_ptr<Storage>>(
    const std::string& dir, const StorageOptions& options)>;

struct StorageBackend {
  std::string name;  // a test-name-safe identifier: "sqlite"
  StorageFactory open;
  // Why test `test` (the TEST_P's name) cannot run on this backend here, "" when it can; a
  // non-empty reason skips the test with that reason printed. For a peer missing outside CI, or
  // a documented gap of the backend; null runs every test.
  std::function<std::string(const std::string& test)> skip_reason;
};

namespace conformance {
// The GPU utilization metric as the suite's batches describe it.
MetricInfo Utilization();
}  // namespace conformance

// Prints the backend's name in test output.
void PrintTo(const StorageBackend& backend, std::ostream* os);

// For INSTANTIATE_TEST_SUITE_P's name generator.
std::string StorageBackendName(const ::testing::TestParamInfo<StorageBackend>& info);

class StorageConformanceTest : public ::testing::TestWithParam<StorageBackend> {
 public:
  // The suite's epoch: a whole hour (2023-11-14T22:00:00Z), so minute and hour buckets line up
  // with the windows.
  static inline const base::TimePoint kT0 = base::FromUnixNanos(1'699'999'200'000'000'000);

 protected:
  void SetUp() override;
  void TearDown() override;

  // Closes the store and opens it again on the same directory, with `options_`.
  void Reopen();
  Storage& storage() { return *storage_; }

  StorageOptions options_;
  base::TempDir tmp_;  // removed after everything below
  std::string dir_;
  std::unique_ptr<Storage> storage_;
};

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_STORAGE_TESTING_STORAGE_CONFORMANCE_H_
