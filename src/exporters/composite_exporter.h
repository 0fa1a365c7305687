// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_EXPORTERS_COMPOSITE_EXPORTER_H_
#define WARPSCOPE_EXPORTERS_COMPOSITE_EXPORTER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "exporters/exporter.h"

namespace warpscope::exporters {

// Fans one frame out to several exporters, in the order they were added. Owns its children.
// Same threading contract as Exporter.
class CompositeExporter : public Exporter {
 public:
  explicit CompositeExporter(std::string name = "composite") : name_(std::move(name)) {}

  void Add(std::unique_ptr<Exporter> exporter);
  size_t size() const { return children_.size(); }

  // Hands `frame` to every child. The result is the worst of the children's results
  // (kFailure > kDropped > kSuccess); an empty composite succeeds.
  ExportResult Export(const model::Frame& frame) noexcept override;
  // Shuts the children down one after another; each gets what is left of `timeout`, and every
  // child is shut down even when the time is spent (with a zero timeout).
  void Shutdown(base::Duration timeout) override;
  std::string_view name() const override { return name_; }

 private:
  std::string name_;
  std::vector<std::unique_ptr<Exporter>> children_;
};

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_COMPOSITE_EXPORTER_H_
