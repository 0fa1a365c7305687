// SPDX-License-Identifier: Apache-2.0
#include "model/entity.h"

namespace warpscope::model {

std::string_view EntityKindName(EntityKind kind) {
  switch (kind) {
    case EntityKind::kHost: return "host";
    case EntityKind::kGpu: return "gpu";
    case EntityKind::kMigInstance: return "mig";
    case EntityKind::kProcess: return "process";
    case EntityKind::kExecutable: return "executable";
    case EntityKind::kContainer: return "container";
    case EntityKind::kCluster: return "cluster";
  }
  return "unknown";
}

}  // namespace warpscope::model
