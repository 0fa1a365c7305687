// SPDX-License-Identifier: Apache-2.0
// Internal to the NVML source: GpuPoller reads one GPU (and its MIG instances) through NVML.
//
// Its code is spread over files by concern:
//   gpu_poller.cc     one poll: the per-metric groups (utilisation, memory, power, thermals and
//                     clocks, temperature thresholds, PCIe, field values and NVLink, ECC and
//                     remapped rows, MIG)
//   gpu_identity.cc   enumeration: identity, static properties, NVLink links, MIG instances
//   gpu_degraded.cc   the error policy: unsupported queries, degraded GPUs and their recovery
//   gpm_sampler.cc    GPM sampling
//   gpu_processes.cc  running-process rows and per-process utilisation
//
// Pollers of different GPUs may run on different threads at the same time (each with its own
// PollScratch); one poller is used by one thread at a time. A poller never reads the clock (the
// caller passes the poll's times) and never touches the process resolver. Values go to the
// SampleSink given to Poll(); degraded-mode reasons and events go to the Reporter given at
// construction.
#ifndef WARPSCOPE_AGENT_SOURCES_NVML_GPU_POLLER_H_
#define WARPSCOPE_AGENT_SOURCES_NVML_GPU_POLLER_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agent/sources/nvml/gpu_state.h"
#include "agent/sources/nvml/nvml_queries.h"
#include "agent/sources/nvml/nvml_source.h"
#include "base/time.h"
#include "model/frame.h"
#include "model/labels.h"
#include "model/sample_sink.h"
#include "nvml/nvml_library.h"

namespace warpscope::agent::nvml_internal {

class EventWatcher;

// Where degraded-mode reasons (the error hook's reasons) and events of the source go.
class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void ReportError(std::string_view reason) = 0;
  virtual void AddEvent(model::Event event) = 0;
};

model::Event MakeEvent(base::TimePoint when, std::string_view entity, std::string_view kind,
                       int64_t code, std::string message);

// What every poller of one source shares; read-only while pollers run.
struct PollerContext {
  const nvml::NvmlLibrary* lib = nullptr;
  NvmlSourceOptions options;  // normalised (retry and streak counts >= 1)
  model::Labels reason_labels[kClockReasonCount];
  std::vector<model::Labels> link_labels;  // kMaxNvlinkLinks entries: {link}
  std::string driver_version;
  std::string cuda_version;
  const EventWatcher* events = nullptr;  // set once the event set exists
};

// Buffers a poll reuses (no allocation once warmed up). Pollers that run one after another share
// one; pollers that run at the same time need one each.
struct PollScratch {
  PollScratch() : gpm_get(std::make_unique<nvml::abi::nvmlGpmMetricsGet_t>()) {}
  std::unique_ptr<nvml::abi::nvmlGpmMetricsGet_t> gpm_get;  // 13 KB: never on the stack
  nvml::ProcessListBuffer process_buffer;
  std::vector<nvml::ProcessEntry> process_entries;
  std::vector<ProcessRow> rows;
  std::vector<ProcessRow> mig_rows;  // MIG fallback: the parent's list
  std::vector<nvml::abi::nvmlProcessUtilizationSample_t> util_samples;
};

class GpuPoller {
 public:
  // `ctx`, `reporter` and `scratch` must outlive the poller.
  GpuPoller(const PollerContext& ctx, Reporter& reporter, PollScratch& scratch, unsigned index,
            nvml::Device handle);
  GpuPoller(const GpuPoller&) = delete;
  GpuPoller& operator=(const GpuPoller&) = delete;

  // Reads identity and static properties once (Start). May leave the GPU degraded.
  void Identify(base::TimePoint now);
  // The handle could not be acquired at Start: degraded under a placeholder id until it answers.
  void MarkLostAtStart(nvml::abi::nvmlReturn_t rc, base::TimePoint now);
  // Registers XID/ECC events of this GPU on the source's event set; false when none.
  bool RegisterEvents();

  // One poll at `now` (`mono` on the monotonic clock): degraded handling (a retry every
  // lost_retry_polls polls), then every metric group. Writes gpu.info and gpu.degraded and every
  // value; collects process rows (process_groups()) with their NVML names.
  void Poll(base::TimePoint now, base::Duration mono, model::SampleSink& out);

  const GpuState& state() const { return g_; }
  GpuState& state() { return g_; }
  // Changes whenever the identity (handle, entity, MIG instances) may have changed.
  uint64_t identity_version() const { return identity_version_; }
  void CopyIdentity(GpuIdentity& out) const;
  // What the last Poll found running, for the main-sequence process emission.
  const std::vector<ProcessGroup>& process_groups() const { return groups_; }
  const std::vector<ProcessRow>& process_rows() const { return group_rows_; }
  const std::vector<UtilAccumulator>& utilization() const { return util_acc_; }

 private:
  // gpu_identity.cc
  void InitGpu();
  void InitStatic();
  void InitLinks();
  void RebuildFields();
  void InitMig();
  // gpu_degraded.cc
  bool Check(Support& support, Query q, nvml::abi::nvmlReturn_t rc);
  void MarkDegraded(nvml::abi::nvmlReturn_t rc, Query q);
  void TryRecover();
  void PollDegraded(model::SampleSink& out);
  // gpu_poller.cc
  void PollUtilization(model::SampleSink& out);
  void PollMemory(model::SampleSink& out);
  void EmitMemory(Support& support, nvml::Device handle, const std::string& id,
                  model::SampleSink& out);
  void PollPower(model::SampleSink& out);
  void PollThermalsAndClocks(model::SampleSink& out);
  void PollTemperatureThresholds(model::SampleSink& out);
  void PollPcie(model::SampleSink& out);
  void PollFields(model::SampleSink& out);
  void EmitNvlink(model::SampleSink& out);
  void PollErrors(model::SampleSink& out);
  void PollMig(model::SampleSink& out);
  // gpm_sampler.cc
  void InitGpm();
  void PollGpm(model::SampleSink& out);
  void SampleGpm(Support& support, GpmSampler& sampler, std::vector<uint8_t>& metrics,
                 nvml::Device device, std::optional<unsigned> gpu_instance_id,
                 const std::string& id, model::SampleSink& out);
  // gpu_processes.cc
  void PollProcesses(model::SampleSink& out);
  bool CollectProcessRows(Support& support, nvml::Device handle);
  bool ReadProcessUtilization();
  void AddGroup(const model::Labels (&labels)[2], const model::Labels& consumer_labels,
                bool util_known, const std::vector<ProcessRow>& rows);
  // nvmlSystemGetProcessName for each pid new on this GPU, remembered while it stays.
  void FetchProcessNames();

  const PollerContext& ctx_;
  const nvml::NvmlLibrary& lib_;
  Reporter& reporter_;
  GpuState g_;
  base::TimePoint now_{};
  base::Duration mono_{};
  uint64_t identity_version_ = 0;
  uint64_t polls_ = 0;

  PollScratch& scratch_;
  // What the last poll found running (read by the process emitter after Poll returns).
  std::vector<UtilAccumulator> util_acc_;
  std::vector<ProcessGroup> groups_;
  std::vector<ProcessRow> group_rows_;
  struct ProcessName {
    std::string name;
    uint64_t seen_poll = 0;
  };
  std::unordered_map<unsigned, ProcessName> process_names_;  // by pid
};

}  // namespace warpscope::agent::nvml_internal

#endif  // WARPSCOPE_AGENT_SOURCES_NVML_GPU_POLLER_H_
