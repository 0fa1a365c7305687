// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_AGENT_SOURCES_SOURCE_H_
#define WARPSCOPE_AGENT_SOURCES_SOURCE_H_

#include <functional>
#include <string_view>

#include "base/status.h"
#include "base/time.h"
#include "model/sample_sink.h"

namespace warpscope::agent {

// Reports one degraded-mode event of a source ("not_supported", "gpu_lost",
// "meminfo_unreadable"). Called on the agent main sequence; the agent counts them in
// warpscope_agent_source_errors_total{source,reason}. May be empty.
using SourceErrorHook = std::function<void(std::string_view reason)>;

// A Source reads one kind of telemetry. All methods run on the agent main sequence.
// Poll() must not block for long; blocking readers own a thread and hand results back through
// a bounded queue that Poll() drains.
class Source {
 public:
  virtual ~Source() = default;
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;

  virtual std::string_view name() const = 0;
  // Failure disables this source only; the agent logs it once and carries on with the others.
  virtual base::Status Start() = 0;
  // Writes one collection cycle: entities, values and any events since the last Poll.
  virtual void Poll(base::TimePoint now, model::SampleSink& out) = 0;
  virtual void Stop() = 0;

 protected:
  Source() = default;
};

}  // namespace warpscope::agent

#endif  // WARPSCOPE_AGENT_SOURCES_SOURCE_H_
