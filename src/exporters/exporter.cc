// SPDX-License-Identifier: Apache-2.0
#include "exporters/exporter.h"

namespace warpscope::exporters {

std::string_view ExportResultName(ExportResult result) {
  switch (result) {
    case ExportResult::kSuccess:
      return "success";
    case ExportResult::kFailure:
      return "failure";
    case ExportResult::kDropped:
      return "dropped";
  }
  return "unknown";
}

}  // namespace warpscope::exporters
