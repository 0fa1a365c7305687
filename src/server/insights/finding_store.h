// SPDX-License-Identifier: Apache-2.0
// Where findings outlive the server: the engine saves them after every evaluation that changed
// them and loads them when it starts, so a restart continues each finding's lifecycle.
#ifndef WARPSCOPE_SERVER_INSIGHTS_FINDING_STORE_H_
#define WARPSCOPE_SERVER_INSIGHTS_FINDING_STORE_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "server/insights/finding.h"

namespace warpscope::server::insights {

class FindingStore {
 public:
  virtual ~FindingStore() = default;
  // Every finding saved last; none when nothing was ever saved.
  [[nodiscard]] virtual base::Result<std::vector<Finding>> Load() = 0;
  // Replaces what was saved, atomically (a crash keeps the old set or the new, never a mix).
  [[nodiscard]] virtual base::Status Save(const std::vector<Finding>& findings) = 0;
};

// A JSON file (`<data-dir>/insights.json` for the server): {"version": 1, "findings": [...]}.
// A file that does not parse is moved aside to `<path>.unreadable` (so nothing is lost) and
// Load answers the error; the engine then starts with no findings.
class FileFindingStore final : public FindingStore {
 public:
  explicit FileFindingStore(std::string path) : path_(std::move(path)) {}
  base::Result<std::vector<Finding>> Load() override;
  base::Status Save(const std::vector<Finding>& findings) override;

 private:
  std::string path_;
};

}  // namespace warpscope::server::insights

#endif  // WARPSCOPE_SERVER_INSIGHTS_FINDING_STORE_H_
