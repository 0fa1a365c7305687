// SPDX-License-Identifier: Apache-2.0
#include "sim/nvml/nvml_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <tuple>
#include <vector>

#include "sim/nvml/nvml_sim_internal.h"

namespace warpscope::sim {

using abi::nvmlReturn_t;

NvmlSim::NvmlSim() = default;
NvmlSim::~NvmlSim() { ReleaseAll(); }

NvmlSim& NvmlSim::Global() {
  // Placement-new into static storage: no destructor runs at exit (threads may still call in),
  // and no heap object is left behind when the library is unloaded (see ReleaseAll()).
  alignas(NvmlSim) static unsigned char storage[sizeof(NvmlSim)];
  static NvmlSim* instance = new (storage) NvmlSim();
  return *instance;
}

void NvmlSim::ReleaseAll() {
  std::thread writer;
  {
    std::lock_guard lock(mu_);
    ReleaseSimulation();
    refcount_ = 0;
    ++generation_;
    std::string().swap(last_printed_error_);
    host_writer_stop_ = true;
    writer = std::move(host_writer_);
  }
  cv_.notify_all();
  host_cv_.notify_all();
  if (writer.joinable()) writer.join();
  std::lock_guard lock(mu_);
  host_writer_stop_ = false;
}

void NvmlSim::SetTimeNs(long long t_ns) {
  {
    std::lock_guard lock(mu_);
    manual_clock_ = true;
    manual_ns_ = std::max(t_ns, 0LL);
    UpdateHostTree();
  }
  cv_.notify_all();
}

void NvmlSim::UpdateHostTree() {
  if (!host_tree_ || !sim_) return;
  base::Status st = host_tree_->Update(*sim_, NowSeconds());
  if (!st.ok()) SetError(st.message());
}

void NvmlSim::HostWriterLoop() {
  std::unique_lock lock(mu_);
  while (!host_writer_stop_) {
    host_cv_.wait_for(lock, kHostTreeRefresh);
    if (!host_writer_stop_ && !manual_clock_) UpdateHostTree();
  }
}

const char* NvmlSim::LastError() { return last_error_.data(); }

double NvmlSim::NowSeconds() const {
  if (manual_clock_) {
    return static_cast<double>(manual_ns_) / 1e9;
  }
  if (!origin_set_) {
    return 0;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count();
}

bool NvmlSim::Missing(std::string_view fn) const {
  return sim_ && sim_->scenario().driver.missing_symbols.contains(fn);
}

void NvmlSim::SetError(std::string message) {
  size_t n = std::min(message.size(), last_error_.size() - 1);
  std::memcpy(last_error_.data(), message.data(), n);
  last_error_[n] = '\0';
  if (message != last_printed_error_) {
    std::fprintf(stderr, "warpscope NVML simulator: %s\n", message.c_str());
    last_printed_error_ = std::move(message);
  }
}

void NvmlSim::ReleaseSimulation() {
  for (EventSet* set : event_sets_) {
    delete set;
  }
  event_sets_.clear();
  for (GpmSample* s : gpm_samples_) {
    delete s;
  }
  gpm_samples_.clear();
  sim_.reset();
  host_tree_.reset();
}

abi::nvmlDevice_t NvmlSim::HandleFor(size_t dev, std::optional<size_t> instance) {
  size_t slot = 0;
  if (instance) {
    slot = sim_->device(dev).mig.instances[*instance].slot + 1;
  }
  return reinterpret_cast<abi::nvmlDevice_t>(&handles_[dev][slot]);
}

std::optional<NvmlSim::Target> NvmlSim::Resolve(abi::nvmlDevice_t handle) const {
  if (handle == nullptr || !sim_) {
    return std::nullopt;
  }
  auto addr = reinterpret_cast<uintptr_t>(handle);
  auto base = reinterpret_cast<uintptr_t>(&handles_[0][0]);
  constexpr size_t kPerDevice = kMaxMigSlots + 1;
  if (addr < base || addr >= base + sizeof(handles_)) {
    return std::nullopt;
  }
  size_t offset = (addr - base) / sizeof(HandleSlot);
  size_t dev = offset / kPerDevice;
  size_t slot = offset % kPerDevice;
  if (dev >= sim_->device_count()) {
    return std::nullopt;
  }
  Target target{dev, std::nullopt};
  if (slot > 0) {
    const MigSpec& mig = sim_->device(dev).mig;
    if (!mig.enabled) {
      return std::nullopt;
    }
    for (size_t i = 0; i < mig.instances.size(); ++i) {
      if (mig.instances[i].slot + 1 == slot) {
        target.instance = i;
      }
    }
    if (!target.instance) {
      return std::nullopt;
    }
  }
  return target;
}

bool NvmlSim::Unsupported(const Target& target, std::string_view what, double t) const {
  return sim_->Unsupported(target.dev, what, t);
}

// ---- Lifecycle ----

nvmlReturn_t NvmlSim::Init(std::string_view fn) {
  std::lock_guard lock(mu_);
  if (refcount_ > 0) {
    if (Missing(fn)) {
      return abi::kErrorFunctionNotFound;
    }
    ++refcount_;
    return abi::kSuccess;
  }
  const char* path = std::getenv(kScenarioEnvVar);
  if (path == nullptr || *path == '\0') {
    SetError(
        fmt::format("{} is not set; point it at a scenario file, e.g. "
                    "{}=scenarios/healthy-8xh100.yaml",
                    kScenarioEnvVar, kScenarioEnvVar));
    return abi::kErrorUnknown;
  }
  auto scenario = LoadScenarioFile(path);
  if (!scenario) {
    SetError(scenario.error().message());
    return abi::kErrorUnknown;
  }
  const char* pid_map = std::getenv(kPidMapEnvVar);
  if (pid_map != nullptr && *pid_map != '\0') {
    if (base::Status st = ApplyPidMap(pid_map, *scenario); !st.ok()) {
      SetError(fmt::format("{}: {}", kPidMapEnvVar, st.message()));
      return abi::kErrorUnknown;
    }
  }
  if (scenario->driver.missing_symbols.contains(fn)) {
    return abi::kErrorFunctionNotFound;
  }
  sim_ = std::make_unique<Simulation>(std::move(*scenario));
  if (!origin_set_) {
    origin_ = std::chrono::steady_clock::now();
    origin_set_ = true;
  }
  const char* host_root = std::getenv(kHostRootEnvVar);
  if (host_root != nullptr && *host_root != '\0') {
    auto tree = std::make_unique<HostTree>(host_root);
    base::Status st = tree->Update(*sim_, NowSeconds());
    if (!st.ok()) {
      sim_.reset();
      SetError(fmt::format("{}: {}", kHostRootEnvVar, st.message()));
      return abi::kErrorUnknown;
    }
    host_tree_ = std::move(tree);
    if (!host_writer_.joinable()) host_writer_ = std::thread([this] { HostWriterLoop(); });
  }
  refcount_ = 1;
  ++generation_;
  last_error_[0] = '\0';
  return abi::kSuccess;
}

nvmlReturn_t NvmlSim::Shutdown() {
  {
    std::lock_guard lock(mu_);
    if (refcount_ == 0) {
      return abi::kErrorUninitialized;
    }
    if (--refcount_ > 0) {
      return abi::kSuccess;
    }
    ReleaseSimulation();
    ++generation_;
  }
  cv_.notify_all();
  return abi::kSuccess;
}

const char* NvmlSim::ErrorString(nvmlReturn_t result) {
  switch (result) {
    case 0:
      return "Success";
    case 1:
      return "Uninitialized";
    case 2:
      return "Invalid Argument";
    case 3:
      return "Not Supported";
    case 4:
      return "Insufficient Permissions";
    case 5:
      return "Already Initialized";
    case 6:
      return "Not Found";
    case 7:
      return "Insufficient Size";
    case 8:
      return "Insufficient External Power";
    case 9:
      return "Driver Not Loaded";
    case 10:
      return "Timeout";
    case 11:
      return "Interrupt Request Issue";
    case 12:
      return "NVML Shared Library Not Found";
    case 13:
      return "Function Not Found";
    case 14:
      return "Corrupted infoROM";
    case 15:
      return "GPU is lost";
    case 16:
      return "GPU requires restart";
    case 17:
      return "The operating system has blocked the request";
    case 18:
      return "RM has detected an NVML/RM version mismatch";
    case 19:
      return "In use by another client";
    case 20:
      return "Insufficient Memory";
    case 21:
      return "No data";
    case 22:
      return "The requested vgpu operation is not available on target device, because "
             "ECC is enabled";
    case 23:
      return "Insufficient resources";
    case 24:
      return "Frequency not supported";
    case 25:
      return "Argument version mismatch";
    case 26:
      return "Deprecated";
    case 27:
      return "Not Ready";
    case 28:
      return "GPU not found";
    case 29:
      return "Invalid state";
    case 30:
      return "Reset type not supported";
    default:
      return "Unknown Error";
  }
}

// ---- System ----

nvmlReturn_t NvmlSim::SystemGetDriverVersion(char* version, unsigned length) {
  return SystemCall("nvmlSystemGetDriverVersion", [&](double) {
    return CopyString(sim_->scenario().driver.version, version, length);
  });
}

nvmlReturn_t NvmlSim::SystemGetNvmlVersion(char* version, unsigned length) {
  return SystemCall("nvmlSystemGetNVMLVersion", [&](double) {
    return CopyString(sim_->scenario().driver.nvml_version, version, length);
  });
}

nvmlReturn_t NvmlSim::SystemGetCudaDriverVersion(std::string_view fn, int* version) {
  return SystemCall(fn, [&](double) {
    if (version == nullptr) {
      return abi::kErrorInvalidArgument;
    }
    *version = sim_->scenario().driver.cuda_version;
    return abi::kSuccess;
  });
}

nvmlReturn_t NvmlSim::SystemGetProcessName(unsigned pid, char* name, unsigned length) {
  return SystemCall("nvmlSystemGetProcessName", [&](double t) {
    if (name == nullptr || length == 0) {
      return abi::kErrorInvalidArgument;
    }
    for (size_t d = 0; d < sim_->device_count(); ++d) {
      const auto& procs = sim_->device(d).processes;
      for (size_t p = 0; p < procs.size(); ++p) {
        if (procs[p].pid == pid && sim_->ProcessActive(d, p, t)) {
          return CopyString(procs[p].name, name, length);
        }
      }
    }
    return abi::kErrorNotFound;
  });
}

}  // namespace warpscope::sim
