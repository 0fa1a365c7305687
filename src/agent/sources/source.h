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
// "meminfo_unreadable"). Called from any method of the source, so from the source's worker
// thread during Poll; the agent counts them (thread-safely) in
// warpscope_agent_source_errors_total{source,reason}. May be empty.
using SourceErrorHook = std::function<void(std::string_view reason)>;

// A Source reads one kind of telemetry.
//
// Threads (docs/design/agent.md, "Deadlines"): Start, Finish and Stop run on the agent main
// sequence; Poll runs on the source's own worker thread, with a deadline. The agent never calls
// two methods of one source at the same time, and everything the main sequence wrote before a
// Poll is visible to it (and the other way round once Poll returned). Poll may block: when it
// misses its deadline the cycle closes without it, and the source is not polled again until it
// has returned. Poll must not touch main-sequence objects (the process resolver, another
// source); that is Finish's job. Readers that block for good own a thread and hand results back
// through a bounded queue that Poll drains.
class Source {
 public:
  virtual ~Source() = default;
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;

  virtual std::string_view name() const = 0;
  // Failure disables this source only; the agent logs it once and carries on with the others.
  virtual base::Status Start() = 0;
  // Writes one collection cycle: entities, values and any events since the last Poll. `out` is
  // the source's own buffer, merged into the cycle when Poll answers by its deadline; of a late
  // Poll only the events are kept (they reach the next cycle).
  virtual void Poll(base::TimePoint now, model::SampleSink& out) = 0;
  // Optional second step, on the main sequence, right after a Poll that answered by its deadline
  // (never after a late one), with the same `now`: writes into the cycle what needs
  // main-sequence objects (e.g. the NVML source resolves GPU processes here).
  virtual void Finish(base::TimePoint now, model::SampleSink& out) {}
  // Not called while a Poll is still running (the agent leaves a hung source behind instead).
  virtual void Stop() = 0;

  // The agent's deadline for one Poll, set once before Start(). A source that fans its work out
  // over workers of its own budgets them from it (NVML: a deadline per GPU).
  virtual void SetPollDeadline(base::Duration deadline) {}

 protected:
  Source() = default;
};

}  // namespace warpscope::agent

#endif  // WARPSCOPE_AGENT_SOURCES_SOURCE_H_
