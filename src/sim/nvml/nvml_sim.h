// SPDX-License-Identifier: Apache-2.0
// NVML semantics of the simulator: init reference counting, device and MIG handles, the
// two-call buffer protocols, versioned structs, field values, events and GPM, all on top of a
// Simulation of the scenario named by $WARPSCOPE_SIM_SCENARIO. The exported C functions of
// libnvidia-ml.so.1 (exports.cc) are one-line forwards to NvmlSim::Global().
//
// Thread safety: every method may be called from any thread. One mutex serialises them;
// EventSetWait_v2 and calls held back by a slow fault release it while they block. Methods never
// throw except std::bad_alloc; the C entry points catch everything and return NVML_ERROR_UNKNOWN.
//
// Time: simulated time t is the monotonic time since the first successful init, until
// SetTimeNs() is called once; from then on t is only what SetTimeNs() sets (manual clock).
//
// Host side: when $WARPSCOPE_SIM_HOST_ROOT names a directory at init, the scenario's host is
// kept there as a synthetic /proc tree (host_tree.h): written at init, then every
// kHostTreeRefresh by a writer thread on the real clock, or by SetTimeNs() on the manual clock.
#ifndef WARPSCOPE_SIM_NVML_NVML_SIM_H_
#define WARPSCOPE_SIM_NVML_NVML_SIM_H_

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "nvml/abi.h"
#include "sim/nvml/hooks.h"
#include "sim/nvml/host_tree.h"
#include "sim/nvml/simulation.h"

namespace warpscope::sim {

namespace abi = ::warpscope::nvml::abi;

// Wall-clock timestamps (µs since the Unix epoch) are this base plus simulated time, so repeated
// runs produce identical timestamps. 1'700'000'000 s is 2023-11-14T22:13:20Z.
inline constexpr long long kEpochBaseUs = 1'700'000'000'000'000LL;
// Per-process utilisation: one sample per process per simulated second, the last 10 kept.
inline constexpr int kProcessSampleRing = 10;
// How often (real time) the synthetic /proc tree follows the real clock.
inline constexpr std::chrono::milliseconds kHostTreeRefresh{50};
// Minimum time between two GPM samples passed to nvmlGpmMetricsGet.
inline constexpr double kGpmMinIntervalSeconds = 0.1;

// Layout of the entries written by the running-process calls.
enum class ProcessLayout {
  kV1,  // unsuffixed: 16-byte nvmlProcessInfo_v1_t
  kV2,  // _v2: 24-byte nvmlProcessInfo_t
  kV3,  // _v3: 24 or 32 bytes, per driver.process_stride
};

class NvmlSim {
 public:
  NvmlSim();
  ~NvmlSim();
  NvmlSim(const NvmlSim&) = delete;
  NvmlSim& operator=(const NvmlSim&) = delete;

  // The instance behind the exported C functions. It lives in static storage and is never
  // destroyed, so calls racing with process exit stay safe; ReleaseAll() frees its heap state.
  static NvmlSim& Global();

  // Drops the simulation, event sets and GPM samples as if the last nvmlShutdown had happened,
  // and wakes blocked waiters. Called when the library is unloaded (dlclose or exit).
  void ReleaseAll();

  // Test hooks (exported as warpscope_sim_set_time_ns / warpscope_sim_last_error).
  void SetTimeNs(long long t_ns);
  // Why the last init failed ("" after a successful init). Valid until the next init.
  const char* LastError();

  // `fn` is the exported name the caller used ("nvmlInit_v2" or "nvmlInit", ...); it selects
  // the legacy behaviour where there is one and is checked against driver.missing_symbols.
  abi::nvmlReturn_t Init(std::string_view fn);
  abi::nvmlReturn_t Shutdown();
  static const char* ErrorString(abi::nvmlReturn_t result);

  abi::nvmlReturn_t SystemGetDriverVersion(char* version, unsigned length);
  abi::nvmlReturn_t SystemGetNvmlVersion(char* version, unsigned length);
  abi::nvmlReturn_t SystemGetCudaDriverVersion(std::string_view fn, int* version);
  abi::nvmlReturn_t SystemGetProcessName(unsigned pid, char* name, unsigned length);

  abi::nvmlReturn_t DeviceGetCount(std::string_view fn, unsigned* count);
  abi::nvmlReturn_t DeviceGetHandleByIndex(std::string_view fn, unsigned index,
                                           abi::nvmlDevice_t* device);
  abi::nvmlReturn_t DeviceGetIndex(abi::nvmlDevice_t device, unsigned* index);
  abi::nvmlReturn_t DeviceGetName(abi::nvmlDevice_t device, char* name, unsigned length);
  abi::nvmlReturn_t DeviceGetUuid(abi::nvmlDevice_t device, char* uuid, unsigned length);
  abi::nvmlReturn_t DeviceGetSerial(abi::nvmlDevice_t device, char* serial, unsigned length);
  abi::nvmlReturn_t DeviceGetPciInfo(std::string_view fn, abi::nvmlDevice_t device,
                                     abi::nvmlPciInfo_t* pci);
  abi::nvmlReturn_t DeviceGetMinorNumber(abi::nvmlDevice_t device, unsigned* minor);
  abi::nvmlReturn_t DeviceGetArchitecture(abi::nvmlDevice_t device, unsigned* arch);
  abi::nvmlReturn_t DeviceGetCudaComputeCapability(abi::nvmlDevice_t device, int* major,
                                                   int* minor);
  abi::nvmlReturn_t DeviceGetMemoryInfoV2(abi::nvmlDevice_t device, abi::nvmlMemory_v2_t* memory);
  abi::nvmlReturn_t DeviceGetMemoryInfoV1(abi::nvmlDevice_t device, abi::nvmlMemory_t* memory);
  abi::nvmlReturn_t DeviceGetUtilizationRates(abi::nvmlDevice_t device,
                                              abi::nvmlUtilization_t* util);
  abi::nvmlReturn_t DeviceGetCodecUtilization(std::string_view fn, abi::nvmlDevice_t device,
                                              unsigned* util, unsigned* sampling_period_us);
  abi::nvmlReturn_t DeviceGetProcessUtilization(abi::nvmlDevice_t device,
                                                abi::nvmlProcessUtilizationSample_t* samples,
                                                unsigned* count,
                                                unsigned long long last_seen_timestamp);
  abi::nvmlReturn_t DeviceGetRunningProcesses(std::string_view fn, abi::nvmlDevice_t device,
                                              ProcessType type, ProcessLayout layout,
                                              unsigned* count, void* infos);
  abi::nvmlReturn_t DeviceGetPowerUsage(abi::nvmlDevice_t device, unsigned* milliwatts);
  abi::nvmlReturn_t DeviceGetPowerLimit(std::string_view fn, abi::nvmlDevice_t device,
                                        unsigned* milliwatts);
  abi::nvmlReturn_t DeviceGetTotalEnergyConsumption(abi::nvmlDevice_t device,
                                                    unsigned long long* millijoules);
  abi::nvmlReturn_t DeviceGetTemperature(abi::nvmlDevice_t device, unsigned sensor,
                                         unsigned* celsius);
  // Thresholds 0..3 from the device's temperature_thresholds; the acoustic and GPS ones (4..7)
  // are NOT_SUPPORTED, higher values INVALID_ARGUMENT.
  abi::nvmlReturn_t DeviceGetTemperatureThreshold(abi::nvmlDevice_t device, unsigned threshold,
                                                  unsigned* celsius);
  abi::nvmlReturn_t DeviceGetClockInfo(std::string_view fn, abi::nvmlDevice_t device, unsigned type,
                                       unsigned* mhz);
  abi::nvmlReturn_t DeviceGetClockReasons(std::string_view fn, abi::nvmlDevice_t device,
                                          unsigned long long* reasons);
  abi::nvmlReturn_t DeviceGetPcieThroughput(abi::nvmlDevice_t device, unsigned counter,
                                            unsigned* kb_per_s);
  abi::nvmlReturn_t DeviceGetPcieReplayCounter(abi::nvmlDevice_t device, unsigned* value);
  abi::nvmlReturn_t DeviceGetFieldValues(abi::nvmlDevice_t device, int count,
                                         abi::nvmlFieldValue_t* values);
  abi::nvmlReturn_t DeviceGetNvLinkState(abi::nvmlDevice_t device, unsigned link,
                                         unsigned* is_active);
  abi::nvmlReturn_t DeviceGetTotalEccErrors(abi::nvmlDevice_t device, unsigned error_type,
                                            unsigned counter_type, unsigned long long* count);
  abi::nvmlReturn_t DeviceGetRemappedRows(abi::nvmlDevice_t device, unsigned* corr, unsigned* unc,
                                          unsigned* pending, unsigned* failure);

  abi::nvmlReturn_t EventSetCreate(abi::nvmlEventSet_t* set);
  abi::nvmlReturn_t DeviceRegisterEvents(abi::nvmlDevice_t device, unsigned long long types,
                                         abi::nvmlEventSet_t set);
  abi::nvmlReturn_t DeviceGetSupportedEventTypes(abi::nvmlDevice_t device,
                                                 unsigned long long* types);
  // Blocks up to timeout_ms (real time) for the next due XID event of a registered device.
  abi::nvmlReturn_t EventSetWait(abi::nvmlEventSet_t set, abi::nvmlEventData_t* data,
                                 unsigned timeout_ms);
  abi::nvmlReturn_t EventSetFree(abi::nvmlEventSet_t set);

  abi::nvmlReturn_t DeviceGetMigMode(abi::nvmlDevice_t device, unsigned* current,
                                     unsigned* pending);
  abi::nvmlReturn_t DeviceGetMaxMigDeviceCount(abi::nvmlDevice_t device, unsigned* count);
  abi::nvmlReturn_t DeviceGetMigDeviceHandleByIndex(abi::nvmlDevice_t device, unsigned index,
                                                    abi::nvmlDevice_t* mig);
  abi::nvmlReturn_t DeviceGetDeviceHandleFromMigDeviceHandle(abi::nvmlDevice_t mig,
                                                             abi::nvmlDevice_t* device);
  abi::nvmlReturn_t DeviceGetInstanceId(std::string_view fn, abi::nvmlDevice_t mig, unsigned* id);

  abi::nvmlReturn_t GpmQueryDeviceSupport(abi::nvmlDevice_t device, abi::nvmlGpmSupport_t* support);
  abi::nvmlReturn_t GpmSampleAlloc(abi::nvmlGpmSample_t* sample);
  abi::nvmlReturn_t GpmSampleFree(abi::nvmlGpmSample_t sample);
  abi::nvmlReturn_t GpmSampleGet(abi::nvmlDevice_t device, abi::nvmlGpmSample_t sample);
  abi::nvmlReturn_t GpmMigSampleGet(abi::nvmlDevice_t device, unsigned gpu_instance_id,
                                    abi::nvmlGpmSample_t sample);
  abi::nvmlReturn_t GpmMetricsGet(abi::nvmlGpmMetricsGet_t* metrics);

 private:
  struct Target {
    size_t dev = 0;
    std::optional<size_t> instance;  // set for MIG device handles
  };
  enum class HandleUse { kFullGpu, kFullGpuOrMig, kMigOnly };
  struct EventSet;
  struct GpmSample;
  struct HandleSlot {
    char unused = 0;
  };

  template <typename Body>
  abi::nvmlReturn_t SystemCall(std::string_view fn, Body&& body);
  // Applies an active slow fault of device `dev` to the call `fn` (slow_calls.cc): waits, with
  // `lock` (on mu_) released, for its latency, or until its window ends (a hang). Either wait
  // ends early when the simulation is shut down or unloaded; then it returns false.
  bool WaitWhileSlow(std::unique_lock<std::mutex>& lock, size_t dev, std::string_view fn);
  template <typename Body>
  abi::nvmlReturn_t DeviceCall(std::string_view fn, abi::nvmlDevice_t handle, HandleUse use,
                               Body&& body);

  double NowSeconds() const;  // requires mu_
  bool Missing(std::string_view fn) const;
  std::optional<Target> Resolve(abi::nvmlDevice_t handle) const;
  abi::nvmlDevice_t HandleFor(size_t dev, std::optional<size_t> instance);
  bool Unsupported(const Target& target, std::string_view what, double t) const;
  void SetError(std::string message);
  void ReleaseSimulation();
  // Brings the host tree to the current time (requires mu_); a failure is reported once.
  void UpdateHostTree();
  void HostWriterLoop();
  unsigned long long SupportedEventTypes(size_t dev) const;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int refcount_ = 0;
  uint64_t generation_ = 0;  // bumped by every init 0->1 and shutdown 1->0
  std::unique_ptr<Simulation> sim_;
  std::set<EventSet*> event_sets_;
  std::set<GpmSample*> gpm_samples_;
  std::unique_ptr<HostTree> host_tree_;  // null without $WARPSCOPE_SIM_HOST_ROOT
  std::thread host_writer_;              // started by the first init with a tree
  bool host_writer_stop_ = false;
  std::condition_variable host_cv_;

  bool manual_clock_ = false;
  long long manual_ns_ = 0;
  bool origin_set_ = false;
  std::chrono::steady_clock::time_point origin_;

  std::array<char, 2048> last_error_{};
  std::string last_printed_error_;

  std::array<std::array<HandleSlot, kMaxMigSlots + 1>, kMaxDevices> handles_{};
};

}  // namespace warpscope::sim

#endif  // WARPSCOPE_SIM_NVML_NVML_SIM_H_
