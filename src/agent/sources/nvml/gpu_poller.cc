// SPDX-License-Identifier: Apache-2.0
// One poll of one GPU: degraded handling first, then the per-metric groups in a fixed order.
#include "agent/sources/nvml/gpu_poller.h"

#include <cmath>
#include <string>

#include "agent/sources/nvml/nvml_metrics.h"
#include "base/logging.h"

namespace warpscope::agent::nvml_internal {
namespace {

namespace abi = nvml::abi;
using abi::nvmlReturn_t;

// The union member selected by valueType, as a double.
double FieldAsDouble(const abi::nvmlFieldValue_t& f) {
  switch (f.valueType) {
    case abi::kValueTypeDouble:
      return f.value.dVal;
    case abi::kValueTypeUnsignedInt:
      return f.value.uiVal;
    case abi::kValueTypeUnsignedLong:
      return static_cast<double>(f.value.ulVal);
    case abi::kValueTypeUnsignedLongLong:
      return static_cast<double>(f.value.ullVal);
    case abi::kValueTypeSignedLongLong:
      return static_cast<double>(f.value.sllVal);
    case abi::kValueTypeSignedInt:
      return f.value.siVal;
    case abi::kValueTypeUnsignedShort:
      return f.value.usVal;
    default:
      return static_cast<double>(f.value.ullVal);
  }
}

uint64_t FieldAsU64(const abi::nvmlFieldValue_t& f) {
  switch (f.valueType) {
    case abi::kValueTypeDouble:
      return f.value.dVal > 0 ? static_cast<uint64_t>(f.value.dVal) : 0;
    case abi::kValueTypeUnsignedInt:
      return f.value.uiVal;
    case abi::kValueTypeSignedInt:
      return f.value.siVal > 0 ? f.value.siVal : 0;
    case abi::kValueTypeSignedLongLong:
      return f.value.sllVal > 0 ? f.value.sllVal : 0;
    case abi::kValueTypeUnsignedShort:
      return f.value.usVal;
    default:
      return f.value.ullVal;
  }
}

// Field 82: R545 drivers tagged it as a double while filling uiVal (NVIDIA bug 4300930, the
// reason DCGM ignores valueType here). Trust the tag only when it gives a plausible reading.
double MemoryTemperature(const abi::nvmlFieldValue_t& f) {
  if (f.valueType == abi::kValueTypeDouble) {
    double d = f.value.dVal;
    if (std::isfinite(d) && d > 1e-3 && d <= kMaxPlausibleCelsius) {
      return d;
    }
    return f.value.uiVal;
  }
  return FieldAsDouble(f);
}

}  // namespace

namespace m = nvml_metrics;
using model::Labels;
using nvml::Device;
using nvml::NvmlLibrary;

model::Event MakeEvent(base::TimePoint when, std::string_view entity, std::string_view kind,
                       int64_t code, std::string message) {
  model::Event e;
  e.time = when;
  e.entity = std::string(entity);
  e.kind = std::string(kind);
  e.code = code;
  e.message = std::move(message);
  return e;
}

GpuPoller::GpuPoller(const PollerContext& ctx, Reporter& reporter, PollScratch& scratch,
                     unsigned index, Device handle)
    : ctx_(ctx), lib_(*ctx.lib), reporter_(reporter), scratch_(scratch) {
  g_.index = index;
  g_.handle = handle;
}

void GpuPoller::Poll(base::TimePoint now, base::Duration mono, model::SampleSink& out) {
  now_ = now;
  mono_ = mono;
  ++polls_;
  groups_.clear();
  group_rows_.clear();
  if (g_.degraded) {
    PollDegraded(out);
    if (g_.degraded) {
      return;
    }
  }
  out.AddValue(m::kInfo, g_.entity.id, 1);
  using Step = void (GpuPoller::*)(model::SampleSink&);
  static constexpr Step kSteps[] = {
      &GpuPoller::PollUtilization,
      &GpuPoller::PollMemory,
      &GpuPoller::PollPower,
      &GpuPoller::PollThermalsAndClocks,
      &GpuPoller::PollTemperatureThresholds,
      &GpuPoller::PollPcie,
      &GpuPoller::PollFields,
      &GpuPoller::PollErrors,
      &GpuPoller::PollGpm,
      &GpuPoller::PollMig,
      &GpuPoller::PollProcesses,
  };
  for (Step step : kSteps) {
    if (g_.degraded) {
      break;
    }
    (this->*step)(out);
  }
  FetchProcessNames();
  out.AddValue(m::kDegraded, g_.entity.id, g_.degraded ? 1 : 0);
}

void GpuPoller::CopyIdentity(GpuIdentity& out) const {
  out.handle = g_.handle;
  out.entity = g_.entity;
  out.migs.resize(g_.migs.size());
  for (size_t i = 0; i < g_.migs.size(); ++i) {
    out.migs[i].gpu_instance_id = g_.migs[i]->gpu_instance_id;
    out.migs[i].entity = g_.migs[i]->entity;
  }
}

void GpuPoller::PollUtilization(model::SampleSink& out) {
  const NvmlLibrary& lib = lib_;
  const std::string& id = g_.entity.id;
  if (!g_.unsupported[kQUtilization]) {
    abi::nvmlUtilization_t u{};
    if (Check(g_.unsupported, kQUtilization,
              WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetUtilizationRates, g_.handle, &u))) {
      out.AddValue(m::kGpuUtilization, id, u.gpu / 100.0);
      out.AddValue(m::kMemoryCopyUtilization, id, u.memory / 100.0);
    }
  }
  unsigned util = 0;
  unsigned period_us = 0;
  if (!g_.degraded && !g_.unsupported[kQEncoder] &&
      Check(g_.unsupported, kQEncoder,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetEncoderUtilization, g_.handle, &util,
                                &period_us))) {
    out.AddValue(m::kEncoderUtilization, id, util / 100.0);
  }
  if (!g_.degraded && !g_.unsupported[kQDecoder] &&
      Check(g_.unsupported, kQDecoder,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetDecoderUtilization, g_.handle, &util,
                                &period_us))) {
    out.AddValue(m::kDecoderUtilization, id, util / 100.0);
  }
}

void GpuPoller::PollMemory(model::SampleSink& out) {
  EmitMemory(g_.unsupported, g_.handle, g_.entity.id, out);
}

void GpuPoller::EmitMemory(Support& support, Device handle, const std::string& id,
                           model::SampleSink& out) {
  if (support[kQMemory]) {
    return;
  }
  nvml::MemoryInfo mem;
  if (!Check(support, kQMemory, lib_.DeviceGetMemoryInfo(handle, &mem))) {
    return;
  }
  out.AddValue(m::kMemoryTotal, id, static_cast<double>(mem.total));
  out.AddValue(m::kMemoryUsed, id, static_cast<double>(mem.used));
  out.AddValue(m::kMemoryFree, id, static_cast<double>(mem.free));
  if (mem.has_reserved) {
    out.AddValue(m::kMemoryReserved, id, static_cast<double>(mem.reserved));
  }
  uint64_t usable = mem.total > mem.reserved ? mem.total - mem.reserved : 0;
  if (usable > 0) {
    out.AddValue(m::kMemoryUtilization, id,
                 static_cast<double>(mem.used) / static_cast<double>(usable));
  }
}

void GpuPoller::PollPower(model::SampleSink& out) {
  const NvmlLibrary& lib = lib_;
  const std::string& id = g_.entity.id;
  struct MilliwattQuery {
    Query q;
    abi::nvmlDeviceGetPowerUsage_fn fn;
    const model::MetricDesc* desc;
  };
  const MilliwattQuery queries[] = {
      {kQPower, lib.api().nvmlDeviceGetPowerUsage, &m::kPowerUsage},
      {kQPowerLimit, lib.api().nvmlDeviceGetPowerManagementLimit, &m::kPowerLimit},
      {kQEnforcedLimit, lib.api().nvmlDeviceGetEnforcedPowerLimit, &m::kEnforcedPowerLimit},
  };
  for (const auto& query : queries) {
    if (g_.degraded) {
      return;
    }
    unsigned mw = 0;
    if (!g_.unsupported[query.q] &&
        Check(g_.unsupported, query.q, NvmlLibrary::Invoke(query.fn, g_.handle, &mw))) {
      out.AddValue(*query.desc, id, mw / 1000.0);
    }
  }
  unsigned long long mj = 0;
  if (!g_.degraded && !g_.unsupported[kQEnergy] &&
      Check(g_.unsupported, kQEnergy,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetTotalEnergyConsumption, g_.handle, &mj))) {
    out.AddValue(m::kEnergyConsumed, id, static_cast<double>(mj) / 1000.0);
  }
}

void GpuPoller::PollThermalsAndClocks(model::SampleSink& out) {
  const NvmlLibrary& lib = lib_;
  const std::string& id = g_.entity.id;
  unsigned value = 0;
  if (!g_.unsupported[kQTemperature] &&
      Check(g_.unsupported, kQTemperature,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetTemperature, g_.handle, abi::kTemperatureGpu,
                                &value)) &&
      value <= kMaxPlausibleCelsius) {
    out.AddValue(m::kTemperature, id, value);
  }
  if (!g_.degraded && !g_.unsupported[kQSmClock] &&
      Check(g_.unsupported, kQSmClock,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetClockInfo, g_.handle, abi::kClockSm, &value))) {
    out.AddValue(m::kSmClock, id, value * 1e6);
  }
  if (!g_.degraded && !g_.unsupported[kQMemClock] &&
      Check(g_.unsupported, kQMemClock,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetClockInfo, g_.handle, abi::kClockMem, &value))) {
    out.AddValue(m::kMemoryClock, id, value * 1e6);
  }
  if (g_.max_sm_hz) {
    out.AddValue(m::kMaxSmClock, id, *g_.max_sm_hz);
  }
  if (g_.max_mem_hz) {
    out.AddValue(m::kMaxMemoryClock, id, *g_.max_mem_hz);
  }
  if (g_.mig_enabled) {
    out.AddValue(m::kMigMode, id, *g_.mig_enabled ? 1 : 0);
  }
  unsigned long long reasons = 0;
  if (!g_.degraded && !g_.unsupported[kQClockReasons] &&
      Check(g_.unsupported, kQClockReasons, lib.DeviceGetClocksEventReasons(g_.handle, &reasons))) {
    out.AddValue(m::kClockEventReasons, id, static_cast<double>(reasons));
    for (size_t i = 0; i < kClockReasonCount; ++i) {
      out.AddValue(m::kClockEventReasonActive, id, ctx_.reason_labels[i],
                   (reasons & kClockReasons[i].bit) != 0 ? 1 : 0);
    }
  }
}

// Static values: read when due (first poll, recovery, every kThresholdRereadInterval), the last
// answers written on every poll so that each window has them.
void GpuPoller::PollTemperatureThresholds(model::SampleSink& out) {
  struct ThresholdQuery {
    unsigned threshold;
    Query q;
    const model::MetricDesc* desc;
  };
  static constexpr ThresholdQuery kThresholds[] = {
      {abi::kTemperatureThresholdShutdown, kQShutdownTemperature, &m::kTemperatureShutdown},
      {abi::kTemperatureThresholdSlowdown, kQSlowdownTemperature, &m::kTemperatureSlowdown},
      {abi::kTemperatureThresholdMemMax, kQMemoryMaxTemperature, &m::kMemoryTemperatureMax},
      {abi::kTemperatureThresholdGpuMax, kQGpuMaxTemperature, &m::kTemperatureMaxOperating},
  };
  const bool due =
      !g_.thresholds_read_at || mono_ - *g_.thresholds_read_at >= kThresholdRereadInterval;
  if (due) {
    g_.thresholds_read_at = mono_;
    for (const auto& t : kThresholds) {
      if (g_.degraded) {
        return;
      }
      std::optional<double>& value = g_.temperature_thresholds[t.threshold];
      unsigned celsius = 0;
      if (!g_.unsupported[t.q] &&
          Check(g_.unsupported, t.q,
                WARPSCOPE_NVML_CALL(lib_, nvmlDeviceGetTemperatureThreshold, g_.handle,
                                    t.threshold, &celsius))) {
        value.reset();
        if (celsius > 0 && celsius <= kMaxPlausibleCelsius) value = celsius;
      } else if (g_.unsupported[t.q]) {
        value.reset();  // not supported (now or since an earlier read)
      }
      // Any other error keeps the last answer: a threshold does not change between reads.
    }
  }
  for (const auto& t : kThresholds) {
    if (const std::optional<double>& value = g_.temperature_thresholds[t.threshold]) {
      out.AddValue(*t.desc, g_.entity.id, *value);
    }
  }
}

void GpuPoller::PollPcie(model::SampleSink& out) {
  const NvmlLibrary& lib = lib_;
  const std::string& id = g_.entity.id;
  unsigned kb_per_s = 0;
  if (!g_.unsupported[kQPcieTx] &&
      Check(g_.unsupported, kQPcieTx,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetPcieThroughput, g_.handle, abi::kPcieUtilTxBytes,
                                &kb_per_s))) {
    out.AddValue(m::kPcieTransmitRate, id, kb_per_s * 1024.0);
  }
  if (!g_.degraded && !g_.unsupported[kQPcieRx] &&
      Check(g_.unsupported, kQPcieRx,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetPcieThroughput, g_.handle, abi::kPcieUtilRxBytes,
                                &kb_per_s))) {
    out.AddValue(m::kPcieReceiveRate, id, kb_per_s * 1024.0);
  }
  unsigned replays = 0;
  if (!g_.degraded && !g_.unsupported[kQPcieReplay] &&
      Check(g_.unsupported, kQPcieReplay,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetPcieReplayCounter, g_.handle, &replays))) {
    out.AddValue(m::kPcieReplays, id, replays);
  }
}

void GpuPoller::PollFields(model::SampleSink& out) {
  if (g_.fields.empty()) {
    return;
  }
  const std::string& id = g_.entity.id;
  for (size_t i = 0; i < g_.fields.size(); ++i) {
    abi::nvmlFieldValue_t& f = g_.fields[i];
    f = abi::nvmlFieldValue_t{};
    f.fieldId = g_.field_slots[i].field_id;
    f.scopeId = g_.field_slots[i].scope;
  }
  nvmlReturn_t rc = WARPSCOPE_NVML_CALL(lib_, nvmlDeviceGetFieldValues, g_.handle,
                                        static_cast<int>(g_.fields.size()), g_.fields.data());
  if (!Check(g_.unsupported, kQFieldValues, rc)) {
    if (g_.unsupported[kQFieldValues]) {
      g_.unsupported.set(kQMemoryTemperature);
      g_.unsupported.set(kQNvlink);
      RebuildFields();
    }
    return;
  }
  for (auto& link : g_.links) {
    link.got_tx = false;
    link.got_rx = false;
  }
  bool rebuild = false;
  for (size_t i = 0; i < g_.fields.size(); ++i) {
    const abi::nvmlFieldValue_t& f = g_.fields[i];
    const FieldSlot& slot = g_.field_slots[i];
    const Query q = slot.kind == FieldKind::kMemoryTemperature ? kQMemoryTemperature : kQNvlink;
    if (f.nvmlReturn != abi::kSuccess) {
      if (g_.unsupported[q]) {
        continue;  // already reported for another link in this poll
      }
      if (!Check(g_.unsupported, q, f.nvmlReturn)) {
        if (g_.degraded) {
          return;
        }
        rebuild = rebuild || g_.unsupported[q];
      }
      continue;
    }
    switch (slot.kind) {
      case FieldKind::kMemoryTemperature: {
        double celsius = MemoryTemperature(f);
        if (celsius <= kMaxPlausibleCelsius) {
          out.AddValue(m::kMemoryTemperature, id, celsius);
        }
        break;
      }
      case FieldKind::kNvlinkTx: {
        LinkState& link = g_.links[slot.link];
        link.new_tx_kib = FieldAsU64(f);
        link.new_tx_us = f.timestamp;
        link.got_tx = true;
        break;
      }
      case FieldKind::kNvlinkRx: {
        LinkState& link = g_.links[slot.link];
        link.new_rx_kib = FieldAsU64(f);
        link.new_rx_us = f.timestamp;
        link.got_rx = true;
        break;
      }
    }
  }
  EmitNvlink(out);
  if (rebuild) {
    RebuildFields();
  }
}

// NVLink byte counters per link, and rates from two successive readings.
void GpuPoller::EmitNvlink(model::SampleSink& out) {
  if (g_.unsupported[kQNvlink] || g_.links.empty()) {
    return;
  }
  const std::string& id = g_.entity.id;
  const base::Duration mono = mono_;
  double total = 0;
  bool have_total = false;
  for (auto& link : g_.links) {
    if (!link.got_tx || !link.got_rx) {
      continue;
    }
    out.AddValue(m::kNvlinkTransmitBytes, id, *link.labels, link.new_tx_kib * 1024.0);
    out.AddValue(m::kNvlinkReceiveBytes, id, *link.labels, link.new_rx_kib * 1024.0);
    if (link.has_prev) {
      // Seconds between the readings from the fields' own timestamps; the agent's clock when
      // the driver gives none.
      const double mono_seconds = base::ToSeconds(mono - link.prev_mono);
      auto seconds = [&](int64_t now_us, int64_t prev_us) {
        return now_us > prev_us ? (now_us - prev_us) / 1e6 : mono_seconds;
      };
      const double tx_s = seconds(link.new_tx_us, link.tx_us);
      const double rx_s = seconds(link.new_rx_us, link.rx_us);
      // A counter that went backwards was reset (driver reload): re-baseline, no rate.
      const bool tx_ok = link.new_tx_kib >= link.tx_kib && tx_s > 0;
      const bool rx_ok = link.new_rx_kib >= link.rx_kib && rx_s > 0;
      if (tx_ok) {
        double rate = (link.new_tx_kib - link.tx_kib) * 1024.0 / tx_s;
        out.AddValue(m::kNvlinkTransmitRate, id, *link.labels, rate);
        total += rate;
      }
      if (rx_ok) {
        double rate = (link.new_rx_kib - link.rx_kib) * 1024.0 / rx_s;
        out.AddValue(m::kNvlinkReceiveRate, id, *link.labels, rate);
        total += rate;
      }
      have_total = have_total || tx_ok || rx_ok;
    }
    link.tx_kib = link.new_tx_kib;
    link.rx_kib = link.new_rx_kib;
    link.tx_us = link.new_tx_us;
    link.rx_us = link.new_rx_us;
    link.prev_mono = mono;
    link.has_prev = true;
  }
  if (have_total) {
    out.AddValue(m::kNvlinkBandwidthTotal, id, total);
  }
}

void GpuPoller::PollErrors(model::SampleSink& out) {
  const NvmlLibrary& lib = lib_;
  const std::string& id = g_.entity.id;
  struct EccQuery {
    Query q;
    unsigned error_type;
    unsigned counter_type;
    const model::MetricDesc* desc;
  };
  static constexpr EccQuery kEcc[] = {
      {kQEccCorrectedVolatile, abi::kMemoryErrorCorrected, abi::kEccCounterVolatile,
       &m::kEccCorrectedVolatile},
      {kQEccUncorrectedVolatile, abi::kMemoryErrorUncorrected, abi::kEccCounterVolatile,
       &m::kEccUncorrectedVolatile},
      {kQEccCorrectedAggregate, abi::kMemoryErrorCorrected, abi::kEccCounterAggregate,
       &m::kEccCorrectedAggregate},
      {kQEccUncorrectedAggregate, abi::kMemoryErrorUncorrected, abi::kEccCounterAggregate,
       &m::kEccUncorrectedAggregate},
  };
  for (const auto& e : kEcc) {
    if (g_.degraded) {
      return;
    }
    unsigned long long count = 0;
    if (!g_.unsupported[e.q] &&
        Check(g_.unsupported, e.q,
              WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetTotalEccErrors, g_.handle, e.error_type,
                                  e.counter_type, &count))) {
      out.AddValue(*e.desc, id, static_cast<double>(count));
    }
  }
  unsigned corr = 0;
  unsigned unc = 0;
  unsigned pending = 0;
  unsigned failure = 0;
  if (!g_.degraded && !g_.unsupported[kQRemappedRows] &&
      Check(g_.unsupported, kQRemappedRows,
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetRemappedRows, g_.handle, &corr, &unc, &pending,
                                &failure))) {
    out.AddValue(m::kRemappedRowsCorrectable, id, corr);
    out.AddValue(m::kRemappedRowsUncorrectable, id, unc);
    out.AddValue(m::kRemappedRowsPending, id, pending != 0 ? 1 : 0);
    out.AddValue(m::kRemappedRowsFailure, id, failure != 0 ? 1 : 0);
  }
  if (g_.events_registered) {
    out.AddValue(m::kXidLast, id, static_cast<double>(g_.last_xid));
    for (const auto& [xid, seen] : g_.xids) {
      out.AddValue(m::kXidErrors, id, seen.labels, static_cast<double>(seen.count));
    }
  }
}

void GpuPoller::PollMig(model::SampleSink& out) {
  for (auto& mig : g_.migs) {
    if (g_.degraded) {
      return;
    }
    EmitMemory(mig->unsupported, mig->handle, mig->entity.id, out);
    if (!g_.degraded && g_.gpm_supported && !g_.unsupported[kQGpm]) {
      SampleGpm(mig->unsupported, mig->gpm, mig->gpm_metrics, g_.handle, mig->gpu_instance_id,
                mig->entity.id, out);
    }
  }
}

}  // namespace warpscope::agent::nvml_internal
