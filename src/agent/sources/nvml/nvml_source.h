// SPDX-License-Identifier: Apache-2.0
// NvmlSource: every GPU metric of the product's GPU table, read through NVML (dlopen).
//
// Start() loads NVML, enumerates the GPUs once (identity, MIG instances, NVLink links, GPM
// support), registers XID/ECC events and starts the event thread. Poll() reads every GPU and
// writes entities, values and events to the sink; Finish() writes the GPU processes. See
// docs/design/nvml.md for the calls made, the GPM two-sample scheme and the error policy.
//
// Threads (docs/design/nvml.md section 9): Start/Finish/Stop run on the agent main sequence,
// Poll on the source's worker (never at the same time). The GPUs are read one after another on a
// poll worker ("nvml-poll<K>"); when one does not answer for a while, the GPUs after it go on on
// a spare worker (created when first needed, kept, never more than the GPUs). Poll waits for them
// up to the per-GPU deadline and closes with the GPUs that answered. A GPU still inside NVML at
// the deadline is late: degraded (gpu.degraded = 1, Event "gpu_late", reason "gpu_late") and not
// polled again until it answers, then Event "gpu_recovered". Process resolution happens in
// Finish, so the resolver is used on the main sequence only. One more thread ("nvml-events")
// blocks in nvmlEventSetWait_v2 with a short timeout and pushes events into a bounded queue
// (drops and counts when full) that Poll() drains; Stop() ends it within one wait timeout.
//
// Error policy (per GPU, others keep going):
//   NOT_SUPPORTED / FUNCTION_NOT_FOUND / missing symbol -> that metric is absent (never zero);
//     the (GPU, query) pair is remembered and not called again until the GPU recovers.
//   GPU_IS_LOST / RESET_REQUIRED, or `error_streak_to_degrade` failed calls in a row -> the GPU
//     is degraded: Event "gpu_lost", gpu.degraded = 1, no other values; it is retried every
//     `lost_retry_polls` polls (handle re-acquired by index, identity checked by UUID) and
//     Event "gpu_recovered" is written when it answers again (all queries re-probed).
// Every error path reports a reason through the error hook (see SourceErrorHook).
#ifndef WARPSCOPE_AGENT_SOURCES_NVML_NVML_SOURCE_H_
#define WARPSCOPE_AGENT_SOURCES_NVML_NVML_SOURCE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "agent/sources/source.h"
#include "base/status.h"
#include "base/time.h"
#include "model/process.h"
#include "nvml/nvml_library.h"

namespace warpscope::agent {

struct NvmlSourceOptions {
  // libnvidia-ml.so.1 to open (--nvml-path); empty = the dynamic loader's search for
  // libnvidia-ml.so.1, then libnvidia-ml.so.
  std::string library_path;
  // A degraded GPU is retried once every this many polls.
  int lost_retry_polls = 3;
  // This many failed NVML calls in a row on one GPU (UNKNOWN and other unexpected codes, with no
  // success in between) degrade it like GPU_IS_LOST.
  int error_streak_to_degrade = 16;
  // nvmlEventSetWait_v2 timeout: bounds how long Stop() waits for the event thread.
  std::chrono::milliseconds event_wait_timeout{500};
  // Events buffered between two polls; more are dropped and counted ("event_queue_full").
  size_t event_queue_capacity = 1024;
  // Per-process series and process/executable/container entities.
  bool collect_processes = true;
  // GPM needs this much time between two samples; a poll sooner than that writes no GPM values
  // and keeps the previous sample as the baseline.
  std::chrono::milliseconds gpm_min_interval{100};
  // How long Poll waits for the GPUs, counted from the start of their reads (every GPU of a poll
  // must answer by then); a GPU that misses it is late. Zero: half the agent's deadline for the
  // source (SetPollDeadline), or 5 s when none was set.
  std::chrono::milliseconds device_deadline{0};
};

class NvmlSource final : public Source {
 public:
  // `clock` and `resolver` must outlive the source. The resolver's BeginCycle() is the agent's
  // job (once per cycle, before the sources poll); the source only calls Resolve(), in Finish().
  static std::unique_ptr<NvmlSource> Create(const NvmlSourceOptions& options,
                                            const base::Clock& clock,
                                            model::ProcessResolver& resolver,
                                            SourceErrorHook on_error = {});
  ~NvmlSource() override;

  std::string_view name() const override { return "nvml"; }
  // Loads NVML and enumerates the GPUs. Errors: the load/init Status from NvmlLibrary::Load
  // (library missing, driver not loaded, ...), or kNotFound / kPermissionDenied when no GPU can
  // be opened. On error nothing stays loaded and Poll() writes nothing.
  base::Status Start() override;
  // Every GPU that is not still inside a late poll is read; what answered by the per-GPU
  // deadline is written, plus gpu.degraded = 1 for the rest, and the events.
  void Poll(base::TimePoint now, model::SampleSink& out) override;
  // The processes of the GPUs that answered the last Poll: resolved through the
  // model::ProcessResolver, written as entities, per-process series and per-executable roll-ups.
  // Makes no NVML call.
  void Finish(base::TimePoint now, model::SampleSink& out) override;
  // Stops the event thread (within one event wait timeout) and the poll workers, frees GPM
  // samples and the event set, shuts NVML down. A poll worker still inside NVML is first released
  // by shutting NVML down under it; one that still does not return is left behind, with the
  // library, for the rest of the process. Idempotent.
  void Stop() override;
  void SetPollDeadline(base::Duration deadline) override;
  // The per-GPU deadline in effect (see NvmlSourceOptions::device_deadline).
  base::Duration device_deadline() const;

  // Errors seen so far by reason (the same calls the hook received).
  const std::map<std::string, uint64_t, std::less<>>& error_counts() const;
  uint64_t error_count(std::string_view reason) const;
  // Usable GPUs found by Start() (NO_PERMISSION indexes excluded); 0 when not started.
  size_t gpu_count() const;
  // The loaded library while started, else nullptr.
  const nvml::NvmlLibrary* library() const;

  // Blocks until the event thread has received at least `count` events in total since Create()
  // (queued or dropped), or `timeout` passes. Returns whether the count was reached.
  bool WaitForEventsForTesting(uint64_t count, std::chrono::milliseconds timeout);
  // Blocks until no read of GPU `index` (the i-th usable GPU) is in flight or `timeout` passes.
  bool WaitForGpuIdleForTesting(size_t index, std::chrono::milliseconds timeout);

 private:
  class Impl;
  explicit NvmlSource(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace warpscope::agent

#endif  // WARPSCOPE_AGENT_SOURCES_NVML_NVML_SOURCE_H_
