// SPDX-License-Identifier: Apache-2.0
// Internal to the NVML source: XID and ECC events (docs/design/nvml.md section 7). One event set
// for all GPUs; a dedicated thread ("nvml-events") blocks in nvmlEventSetWait_v2 and queues what
// arrives; the source takes the queue once per poll and turns raw events into model events.
#ifndef WARPSCOPE_AGENT_SOURCES_NVML_NVML_EVENTS_H_
#define WARPSCOPE_AGENT_SOURCES_NVML_NVML_EVENTS_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <stop_token>
#include <thread>
#include <vector>

#include "agent/sources/nvml/gpu_poller.h"
#include "agent/sources/nvml/gpu_state.h"
#include "agent/sources/nvml/nvml_source.h"
#include "base/time.h"
#include "nvml/nvml_library.h"

namespace warpscope::agent::nvml_internal {

struct RawEvent {
  nvml::Device device;
  unsigned long long type;
  unsigned long long data;
  unsigned gpu_instance_id;
  std::chrono::steady_clock::time_point when;
};

// The event set and its thread. Create/Start/Stop/Take run on the source's thread; Register may
// be called from any thread once the set exists (NVML is thread-safe).
class EventWatcher {
 public:
  explicit EventWatcher(const NvmlSourceOptions& options) : options_(options) {}
  ~EventWatcher() { Stop(); }
  EventWatcher(const EventWatcher&) = delete;
  EventWatcher& operator=(const EventWatcher&) = delete;

  // Creates the event set. False (the reason reported and logged) when the library has no event
  // API or the set cannot be created: XID errors are then not reported.
  bool Create(const nvml::NvmlLibrary& lib, Reporter& reporter);
  // Registers the XID/ECC events a GPU supports (XID alone when the combination is refused).
  // False when none could be registered.
  bool Register(GpuState& g, Reporter& reporter) const;
  // Starts the thread that waits for events.
  void Start();
  // Ends the thread (within one wait timeout). Idempotent.
  void StopThread();
  // StopThread(), then frees the set and drops queued events. Idempotent. Not while a GPU
  // poller may still call Register().
  void Stop();

  // Swaps the events received since the last call into `out`.
  void Take(std::vector<RawEvent>& out);
  // Reports the queue drops and wait errors counted since the last call.
  void ReportCounters(Reporter& reporter);
  bool WaitForEvents(uint64_t count, std::chrono::milliseconds timeout);

 private:
  void Loop(std::stop_token stop);

  const NvmlSourceOptions& options_;
  const nvml::NvmlLibrary* lib_ = nullptr;
  nvml::abi::nvmlEventSet_t set_ = nullptr;
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::vector<RawEvent> queue_;   // guarded by queue_mu_
  uint64_t events_received_ = 0;  // guarded by queue_mu_
  std::atomic<uint64_t> events_dropped_{0};
  std::atomic<uint64_t> wait_errors_{0};
  uint64_t reported_dropped_ = 0;
  uint64_t reported_wait_errors_ = 0;
  std::jthread thread_;
};

// What event delivery needs of one GPU: its identity (which may be a copy, while its poll runs)
// and where its XIDs are counted.
struct EventTarget {
  unsigned index = 0;
  const GpuIdentity* identity = nullptr;
  std::vector<uint64_t>* xids = nullptr;  // XID codes, in arrival order, to count on the GPU
};

// Attributes each raw event to its GPU (or to the MIG instance it names) and turns it into a
// model::Event stamped with its arrival time (`now` minus how long it waited in the queue). An XID
// is also appended to the GPU's `xids`. `find` maps a device handle to its target (nullopt:
// unknown, counted as "event_unknown_device").
void DeliverEvents(std::span<const RawEvent> events, base::TimePoint now,
                   const std::function<std::optional<EventTarget>(nvml::Device)>& find,
                   Reporter& reporter);

// Counts XIDs on a GPU: the last code and a counter per code (gpu.xid.last, gpu.xid.errors).
void CountXids(std::span<const uint64_t> xids, GpuState& g);

}  // namespace warpscope::agent::nvml_internal

#endif  // WARPSCOPE_AGENT_SOURCES_NVML_NVML_EVENTS_H_
