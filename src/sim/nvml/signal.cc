// SPDX-License-Identifier: Apache-2.0
#include "sim/nvml/signal.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace warpscope::sim {
namespace {

constexpr std::array<SignalInfo, kSignalCount> kSignals = {{
    {SignalId::kGpuUtil, "gpu_util", Unit::kNumber, SignalRange::kPercent, false, false, "%"},
    {SignalId::kMemCopyUtil, "mem_copy_util", Unit::kNumber, SignalRange::kPercent, false, false,
     "%"},
    {SignalId::kEncoderUtil, "encoder_util", Unit::kNumber, SignalRange::kPercent, false, false,
     "%"},
    {SignalId::kDecoderUtil, "decoder_util", Unit::kNumber, SignalRange::kPercent, false, false,
     "%"},
    {SignalId::kMemoryUsed, "memory_used", Unit::kBytes, SignalRange::kNonNegative, false, true,
     "bytes"},
    {SignalId::kPower, "power", Unit::kWatts, SignalRange::kNonNegative, false, false, "W"},
    {SignalId::kTemperature, "temperature", Unit::kNumber, SignalRange::kCelsius, false, false,
     "°C"},
    {SignalId::kMemoryTemperature, "memory_temperature", Unit::kNumber, SignalRange::kCelsius,
     false, false, "°C"},
    {SignalId::kSmClock, "sm_clock", Unit::kNumber, SignalRange::kNonNegative, false, false, "MHz"},
    {SignalId::kMemClock, "mem_clock", Unit::kNumber, SignalRange::kNonNegative, false, false,
     "MHz"},
    {SignalId::kClockEventReasons, "clock_event_reasons", Unit::kNumber, SignalRange::kBitmask,
     false, false, "bitmask"},
    {SignalId::kPcieTx, "pcie_tx", Unit::kNumber, SignalRange::kNonNegative, false, false, "KB/s"},
    {SignalId::kPcieRx, "pcie_rx", Unit::kNumber, SignalRange::kNonNegative, false, false, "KB/s"},
    {SignalId::kPcieReplayRate, "pcie_replay_rate", Unit::kNumber, SignalRange::kNonNegative, false,
     false, "replays/s"},
    {SignalId::kNvlinkTx, "nvlink_tx", Unit::kNumber, SignalRange::kNonNegative, false, false,
     "bytes/s per link"},
    {SignalId::kNvlinkRx, "nvlink_rx", Unit::kNumber, SignalRange::kNonNegative, false, false,
     "bytes/s per link"},
    {SignalId::kEccSbeRate, "ecc_sbe_rate", Unit::kNumber, SignalRange::kNonNegative, false, false,
     "errors/s"},
    {SignalId::kEccDbeRate, "ecc_dbe_rate", Unit::kNumber, SignalRange::kNonNegative, false, false,
     "errors/s"},
    {SignalId::kRemappedRowsCorrectable, "remapped_rows_correctable", Unit::kNumber,
     SignalRange::kBitmask, false, false, "rows"},
    {SignalId::kRemappedRowsUncorrectable, "remapped_rows_uncorrectable", Unit::kNumber,
     SignalRange::kBitmask, false, false, "rows"},
    {SignalId::kRemapPending, "remap_pending", Unit::kNumber, SignalRange::kBitmask, false, false,
     "0/1"},
    {SignalId::kRemapFailure, "remap_failure", Unit::kNumber, SignalRange::kBitmask, false, false,
     "0/1"},
    {SignalId::kGrEngineActive, "gr_engine_active", Unit::kNumber, SignalRange::kPercent, true,
     true, "%"},
    {SignalId::kSmActive, "sm_active", Unit::kNumber, SignalRange::kPercent, true, true, "%"},
    {SignalId::kSmOccupancy, "sm_occupancy", Unit::kNumber, SignalRange::kPercent, true, true, "%"},
    {SignalId::kTensorActive, "tensor_active", Unit::kNumber, SignalRange::kPercent, true, true,
     "%"},
    {SignalId::kDramActive, "dram_active", Unit::kNumber, SignalRange::kPercent, true, true, "%"},
    {SignalId::kFp64Active, "fp64_active", Unit::kNumber, SignalRange::kPercent, true, true, "%"},
    {SignalId::kFp32Active, "fp32_active", Unit::kNumber, SignalRange::kPercent, true, true, "%"},
    {SignalId::kFp16Active, "fp16_active", Unit::kNumber, SignalRange::kPercent, true, true, "%"},
    {SignalId::kIntActive, "int_active", Unit::kNumber, SignalRange::kPercent, true, true, "%"},
    {SignalId::kHmmaActive, "hmma_active", Unit::kNumber, SignalRange::kPercent, true, true, "%"},
    {SignalId::kImmaActive, "imma_active", Unit::kNumber, SignalRange::kPercent, true, true, "%"},
    {SignalId::kDfmaActive, "dfma_active", Unit::kNumber, SignalRange::kPercent, true, true, "%"},
    {SignalId::kGpmPcieTx, "gpm_pcie_tx", Unit::kNumber, SignalRange::kNonNegative, true, true,
     "MiB/s"},
    {SignalId::kGpmPcieRx, "gpm_pcie_rx", Unit::kNumber, SignalRange::kNonNegative, true, true,
     "MiB/s"},
    {SignalId::kGpmNvlinkTx, "gpm_nvlink_tx", Unit::kNumber, SignalRange::kNonNegative, true, true,
     "MiB/s"},
    {SignalId::kGpmNvlinkRx, "gpm_nvlink_rx", Unit::kNumber, SignalRange::kNonNegative, true, true,
     "MiB/s"},
}};

constexpr bool CatalogueIsInOrder() {
  for (size_t i = 0; i < kSignals.size(); ++i) {
    if (static_cast<size_t>(kSignals[i].id) != i) {
      return false;
    }
  }
  return true;
}
static_assert(CatalogueIsInOrder(), "kSignals must be indexed by SignalId");

// Uniform in (0, 1) from 64 random bits; never 0 so log() is finite.
double ToUnit(uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; }

}  // namespace

uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t NoiseKey(uint64_t seed, unsigned device_index, std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return Mix64(Mix64(seed) ^ Mix64(device_index + 0x51ED270B27ULL) ^ h);
}

double GaussianNoise(uint64_t key, int64_t second) {
  uint64_t a = Mix64(key ^ Mix64(static_cast<uint64_t>(second)));
  uint64_t b = Mix64(a ^ 0x5851f42d4c957f2dULL);
  // Box-Muller.
  return std::sqrt(-2.0 * std::log(ToUnit(a))) * std::cos(2.0 * std::numbers::pi * ToUnit(b));
}

double EvaluateShape(const Signal& s, double t) {
  switch (s.kind) {
    case SignalKind::kConstant:
      return s.value;
    case SignalKind::kRamp:
      if (t <= s.start_s) {
        return s.from;
      }
      if (s.duration_s <= 0 || t >= s.start_s + s.duration_s) {
        return s.to;
      }
      return s.from + (s.to - s.from) * (t - s.start_s) / s.duration_s;
    case SignalKind::kSine:
      if (s.period_s <= 0) {
        return s.mean;
      }
      return s.mean + s.amplitude * std::sin(2.0 * std::numbers::pi * (t + s.phase_s) / s.period_s);
    case SignalKind::kStep:
      return t < s.at_s ? s.before : s.after;
    case SignalKind::kPiecewise: {
      if (s.points.empty()) {
        return 0;
      }
      if (t <= s.points.front().first) {
        return s.points.front().second;
      }
      if (t >= s.points.back().first) {
        return s.points.back().second;
      }
      auto it = std::upper_bound(s.points.begin(), s.points.end(), t,
                                 [](double v, const auto& p) { return v < p.first; });
      const auto& hi = *it;
      const auto& lo = *(it - 1);
      return lo.second + (hi.second - lo.second) * (t - lo.first) / (hi.first - lo.first);
    }
  }
  return 0;
}

double Evaluate(const Signal& s, uint64_t noise_key, double t) {
  double v = EvaluateShape(s, t);
  if (s.noise > 0) {
    v += s.noise * GaussianNoise(noise_key, static_cast<int64_t>(std::floor(t)));
  }
  return v;
}

const SignalInfo& GetSignalInfo(SignalId id) { return kSignals[static_cast<size_t>(id)]; }

const std::array<SignalInfo, kSignalCount>& AllSignals() { return kSignals; }

std::optional<SignalId> FindSignal(std::string_view name) {
  for (const auto& info : kSignals) {
    if (info.name == name) {
      return info.id;
    }
  }
  return std::nullopt;
}

double ClampSignal(SignalId id, double v) {
  if (std::isnan(v)) {
    return 0;
  }
  switch (GetSignalInfo(id).range) {
    case SignalRange::kPercent:
      return std::clamp(v, 0.0, 100.0);
    case SignalRange::kNonNegative:
      return std::max(v, 0.0);
    case SignalRange::kCelsius:
      return std::clamp(v, 0.0, 200.0);
    case SignalRange::kBitmask:
      return std::max(std::round(v), 0.0);
  }
  return v;
}

}  // namespace warpscope::sim
