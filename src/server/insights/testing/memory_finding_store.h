// SPDX-License-Identifier: Apache-2.0
// A FindingStore in memory, for engine tests: what was saved, how often, and a failure to give.
#ifndef WARPSCOPE_SERVER_INSIGHTS_TESTING_MEMORY_FINDING_STORE_H_
#define WARPSCOPE_SERVER_INSIGHTS_TESTING_MEMORY_FINDING_STORE_H_

#include <vector>

#include "server/insights/finding_store.h"

namespace warpscope::server::insights::testing {

class MemoryFindingStore final : public FindingStore {
 public:
  base::Result<std::vector<Finding>> Load() override {
    if (!load_error.ok()) return base::Error(load_error);
    return saved;
  }
  base::Status Save(const std::vector<Finding>& findings) override {
    ++saves;
    if (!save_error.ok()) return save_error;
    saved = findings;
    return base::OkStatus();
  }

  std::vector<Finding> saved;
  int saves = 0;
  base::Status load_error;
  base::Status save_error;
};

}  // namespace warpscope::server::insights::testing

#endif  // WARPSCOPE_SERVER_INSIGHTS_TESTING_MEMORY_FINDING_STORE_H_
