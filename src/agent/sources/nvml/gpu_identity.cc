// SPDX-License-Identifier: Apache-2.0
// GpuPoller's enumeration: identity and static properties read once (and again after a
// recovery), NVLink links, the field-value request, MIG instances.
#include <cstring>
#include <string>

#include "agent/sources/nvml/gpu_poller.h"
#include "agent/sources/nvml/nvml_metrics.h"
#include "base/logging.h"

namespace warpscope::agent::nvml_internal {
namespace {

namespace abi = nvml::abi;
using abi::nvmlReturn_t;

std::string_view ArchitectureName(unsigned arch) {
  switch (arch) {
    case abi::kArchKepler:
      return "kepler";
    case abi::kArchMaxwell:
      return "maxwell";
    case abi::kArchPascal:
      return "pascal";
    case abi::kArchVolta:
      return "volta";
    case abi::kArchTuring:
      return "turing";
    case abi::kArchAmpere:
      return "ampere";
    case abi::kArchAda:
      return "ada";
    case abi::kArchHopper:
      return "hopper";
    case abi::kArchBlackwell:
      return "blackwell";
    default:
      return {};
  }
}

// "NVIDIA A100-SXM4-40GB MIG 1g.5gb" -> "1g.5gb".
std::string MigProfileFromName(std::string_view name) {
  size_t pos = name.rfind("MIG ");
  if (pos == std::string_view::npos) {
    return {};
  }
  std::string_view rest = name.substr(pos + 4);
  while (!rest.empty() && rest.front() == ' ') {
    rest.remove_prefix(1);
  }
  while (!rest.empty() && rest.back() == ' ') {
    rest.remove_suffix(1);
  }
  return std::string(rest);
}

}  // namespace

namespace m = nvml_metrics;
using nvml::Device;
using nvml::NvmlLibrary;

void GpuPoller::Identify(base::TimePoint now) {
  now_ = now;
  InitGpu();
}

void GpuPoller::InitGpu() {
  ++identity_version_;
  const NvmlLibrary& lib = lib_;
  Device h = g_.handle;
  char buf[abi::kDeviceUuidBufferSize] = {};
  // Identity: read once. A failure drops that attribute only.
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetUUID, h, buf, sizeof(buf)) == abi::kSuccess) {
    g_.uuid = CopyString(buf, sizeof(buf));
  }
  std::memset(buf, 0, sizeof(buf));
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetName, h, buf, sizeof(buf)) == abi::kSuccess) {
    g_.name = CopyString(buf, sizeof(buf));
  }
  model::Entity& e = g_.entity;
  e.kind = model::EntityKind::kGpu;
  e.id = g_.uuid.empty() ? fmt::format("nvml-index-{}", g_.index) : g_.uuid;
  e.attributes = model::Labels();
  e.attributes.Set(model::attr::kGpuIndex, std::to_string(g_.index));
  if (!g_.uuid.empty()) {
    e.attributes.Set(model::attr::kGpuUuid, g_.uuid);
  }
  if (!g_.name.empty()) {
    e.attributes.Set(model::attr::kGpuModel, g_.name);
  }
  abi::nvmlPciInfo_t pci{};
  if (lib.DeviceGetPciInfo(h, &pci) == abi::kSuccess) {
    e.attributes.Set(model::attr::kGpuPciBusId, CopyString(pci.busId, sizeof(pci.busId)));
  }
  char serial[abi::kDeviceSerialBufferSize] = {};
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetSerial, h, serial, sizeof(serial)) == abi::kSuccess) {
    std::string s = CopyString(serial, sizeof(serial));
    if (!s.empty()) {
      e.attributes.Set(model::attr::kGpuSerial, s);
    }
  }
  unsigned minor = 0;
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetMinorNumber, h, &minor) == abi::kSuccess) {
    e.attributes.Set(model::attr::kGpuMinor, std::to_string(minor));
  }
  unsigned arch = 0;
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetArchitecture, h, &arch) == abi::kSuccess) {
    std::string_view arch_name = ArchitectureName(arch);
    e.attributes.Set(model::attr::kGpuArchitecture,
                     arch_name.empty() ? fmt::format("unknown-{}", arch) : std::string(arch_name));
  }
  int cc_major = 0;
  int cc_minor = 0;
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetCudaComputeCapability, h, &cc_major, &cc_minor) ==
      abi::kSuccess) {
    e.attributes.Set(model::attr::kGpuComputeCapability, fmt::format("{}.{}", cc_major, cc_minor));
  }
  if (!ctx_.driver_version.empty()) {
    e.attributes.Set(model::attr::kDriverVersion, ctx_.driver_version);
  }
  if (!ctx_.cuda_version.empty()) {
    e.attributes.Set(model::attr::kCudaVersion, ctx_.cuda_version);
  }

  std::string index = std::to_string(g_.index);
  g_.consumer_labels = model::Labels{{std::string(model::attr::kGpuIndex), index},
                                     {std::string(model::attr::kGpuUuid), e.id}};
  for (int t = 0; t < 2; ++t) {
    g_.process_labels[t] = g_.consumer_labels;
    g_.process_labels[t].Set(m::kLabelType, t == 0 ? "compute" : "graphics");
  }
  InitStatic();
}

// Everything re-probed when a GPU recovers: support flags, clocks, temperature thresholds (at
// the next poll), MIG, NVLink, GPM.
void GpuPoller::InitStatic() {
  const NvmlLibrary& lib = lib_;
  g_.unsupported.reset();
  g_.error_streak = 0;
  g_.last_util_timestamp = 0;
  for (auto& threshold : g_.temperature_thresholds) {
    threshold.reset();
  }
  g_.thresholds_read_at.reset();  // read at the next poll
  unsigned mhz = 0;
  g_.max_sm_hz.reset();
  g_.max_mem_hz.reset();
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetMaxClockInfo, g_.handle, abi::kClockSm, &mhz) ==
      abi::kSuccess) {
    g_.max_sm_hz = mhz * 1e6;
  }
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetMaxClockInfo, g_.handle, abi::kClockMem, &mhz) ==
      abi::kSuccess) {
    g_.max_mem_hz = mhz * 1e6;
  }
  InitMig();
  if (g_.degraded) {
    return;
  }
  InitLinks();
  if (g_.degraded) {
    return;
  }
  RebuildFields();
  InitGpm();
}

void GpuPoller::InitLinks() {
  g_.links.clear();
  for (unsigned link = 0; link < kMaxNvlinkLinks; ++link) {
    unsigned active = 0;
    nvmlReturn_t rc = WARPSCOPE_NVML_CALL(lib_, nvmlDeviceGetNvLinkState, g_.handle, link, &active);
    if (rc == abi::kErrorInvalidArgument || rc == abi::kErrorNotFound) {
      break;  // past the last link of this device
    }
    if (rc != abi::kSuccess) {
      if (link == 0) {
        (void)Check(g_.unsupported, kQNvlink, rc);
      }
      break;
    }
    if (active == abi::kFeatureEnabled) {
      LinkState ls;
      ls.link = link;
      ls.labels = &ctx_.link_labels[link];
      g_.links.push_back(ls);
    }
  }
  if (g_.links.empty()) {
    g_.unsupported.set(kQNvlink);
  }
}

void GpuPoller::RebuildFields() {
  g_.fields.clear();
  g_.field_slots.clear();
  if (g_.unsupported[kQFieldValues]) {
    return;
  }
  if (!g_.unsupported[kQMemoryTemperature]) {
    g_.field_slots.push_back({FieldKind::kMemoryTemperature, abi::kFiMemoryTemp, 0, 0});
  }
  if (!g_.unsupported[kQNvlink]) {
    for (size_t i = 0; i < g_.links.size(); ++i) {
      g_.field_slots.push_back(
          {FieldKind::kNvlinkTx, abi::kFiNvlinkThroughputDataTx, g_.links[i].link, i});
      g_.field_slots.push_back(
          {FieldKind::kNvlinkRx, abi::kFiNvlinkThroughputDataRx, g_.links[i].link, i});
    }
  }
  g_.fields.resize(g_.field_slots.size());
}

void GpuPoller::InitMig() {
  ++identity_version_;
  const NvmlLibrary& lib = lib_;
  g_.migs.clear();
  g_.mig_enabled.reset();
  unsigned current = 0;
  unsigned pending = 0;
  nvmlReturn_t rc = WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetMigMode, g_.handle, &current, &pending);
  if (rc != abi::kSuccess) {
    if (!nvml::IsUnsupported(rc)) {
      (void)Check(g_.unsupported, kQMig, rc);
    }
    g_.unsupported.set(kQMig);
    return;
  }
  g_.mig_enabled = current == abi::kMigEnable;
  if (!*g_.mig_enabled) {
    return;
  }
  unsigned max_count = 0;
  rc = WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetMaxMigDeviceCount, g_.handle, &max_count);
  if (!Check(g_.unsupported, kQMig, rc)) {
    return;
  }
  for (unsigned i = 0; i < max_count; ++i) {
    Device mig_handle = nullptr;
    rc = WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetMigDeviceHandleByIndex, g_.handle, i, &mig_handle);
    if (rc == abi::kErrorNotFound) {
      continue;  // empty slot
    }
    if (rc != abi::kSuccess) {
      if (!Check(g_.unsupported, kQMig, rc) && g_.degraded) {
        return;
      }
      continue;
    }
    auto mig = std::make_unique<MigState>();
    mig->handle = mig_handle;
    unsigned id = 0;
    if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetGpuInstanceId, mig_handle, &id) == abi::kSuccess) {
      mig->gpu_instance_id = id;
    }
    if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetComputeInstanceId, mig_handle, &id) ==
        abi::kSuccess) {
      mig->compute_instance_id = id;
    }
    char buf[abi::kDeviceUuidBufferSize] = {};
    if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetUUID, mig_handle, buf, sizeof(buf)) ==
        abi::kSuccess) {
      mig->uuid = CopyString(buf, sizeof(buf));
    }
    std::string profile;
    std::memset(buf, 0, sizeof(buf));
    if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetName, mig_handle, buf, sizeof(buf)) ==
        abi::kSuccess) {
      profile = MigProfileFromName(CopyString(buf, sizeof(buf)));
    }
    model::Entity& e = mig->entity;
    e.kind = model::EntityKind::kMigInstance;
    e.id =
        mig->uuid.empty() ? fmt::format("{}/gi{}", g_.entity.id, mig->gpu_instance_id) : mig->uuid;
    e.parent = g_.entity.id;
    // The parent GPU's identity, so exporters label MIG series like dcgm-exporter does
    // (gpu, UUID, modelName of the GPU plus GPU_I_ID / GPU_I_PROFILE).
    for (std::string_view key :
         {model::attr::kGpuIndex, model::attr::kGpuUuid, model::attr::kGpuModel,
          model::attr::kGpuPciBusId, model::attr::kDriverVersion, model::attr::kCudaVersion}) {
      if (g_.entity.attributes.Has(key)) {
        e.attributes.Set(key, g_.entity.attributes.Get(key));
      }
    }
    e.attributes.Set(model::attr::kMigGpuInstanceId, std::to_string(mig->gpu_instance_id));
    e.attributes.Set(model::attr::kMigComputeInstanceId, std::to_string(mig->compute_instance_id));
    if (!profile.empty()) {
      e.attributes.Set(model::attr::kMigProfile, profile);
    }
    mig->consumer_labels =
        model::Labels{{std::string(model::attr::kGpuIndex), std::to_string(g_.index)},
                      {std::string(model::attr::kGpuUuid), e.id}};
    for (int t = 0; t < 2; ++t) {
      mig->process_labels[t] = mig->consumer_labels;
      mig->process_labels[t].Set(m::kLabelType, t == 0 ? "compute" : "graphics");
    }
    g_.migs.push_back(std::move(mig));
  }
}

}  // namespace warpscope::agent::nvml_internal
