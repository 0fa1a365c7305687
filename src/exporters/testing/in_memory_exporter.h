// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_EXPORTERS_TESTING_IN_MEMORY_EXPORTER_H_
#define WARPSCOPE_EXPORTERS_TESTING_IN_MEMORY_EXPORTER_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exporters/exporter.h"

namespace warpscope::exporters {

// Test double: keeps a copy of every exported frame. Not thread-safe: read frames() on the
// sequence that calls Export(), or after it has stopped.
class InMemoryExporter : public Exporter {
 public:
  explicit InMemoryExporter(std::string name = "in_memory") : name_(std::move(name)) {}

  ExportResult Export(const model::Frame& frame) noexcept override {
    if (shut_down_) {
      return ExportResult::kDropped;
    }
    if (result_ == ExportResult::kSuccess) {
      frames_.push_back(frame);
    }
    return result_;
  }
  void Shutdown(base::Duration timeout) override {
    shut_down_ = true;
    last_shutdown_timeout_ = timeout;
  }
  std::string_view name() const override { return name_; }

  // What Export() returns from now on; frames are kept only while it is kSuccess.
  void set_result(ExportResult result) { result_ = result; }
  const std::vector<model::Frame>& frames() const { return frames_; }
  void clear() { frames_.clear(); }
  bool shut_down() const { return shut_down_; }
  base::Duration last_shutdown_timeout() const { return last_shutdown_timeout_; }

 private:
  std::string name_;
  ExportResult result_ = ExportResult::kSuccess;
  std::vector<model::Frame> frames_;
  bool shut_down_ = false;
  base::Duration last_shutdown_timeout_{0};
};

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_TESTING_IN_MEMORY_EXPORTER_H_
