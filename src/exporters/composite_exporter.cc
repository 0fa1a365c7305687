// SPDX-License-Identifier: Apache-2.0
#include "exporters/composite_exporter.h"

#include <chrono>

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

void CompositeExporter::Add(std::unique_ptr<Exporter> exporter) {
  if (exporter != nullptr) {
    children_.push_back(std::move(exporter));
  }
}

ExportResult CompositeExporter::Export(const model::Frame& frame) noexcept {
  ExportResult worst = ExportResult::kSuccess;
  for (auto& child : children_) {
    ExportResult r = child->Export(frame);
    if (r == ExportResult::kFailure) {
      worst = ExportResult::kFailure;
    } else if (r == ExportResult::kDropped && worst == ExportResult::kSuccess) {
      worst = ExportResult::kDropped;
    }
  }
  return worst;
}

void CompositeExporter::Shutdown(base::Duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (auto& child : children_) {
    auto left =
        std::chrono::duration_cast<base::Duration>(deadline - std::chrono::steady_clock::now());
    child->Shutdown(left.count() > 0 ? left : base::Duration::zero());
  }
}

}  // namespace warpscope::exporters
