// SPDX-License-Identifier: Apache-2.0
// Time-varying signals of the NVML simulator: the shapes a scenario can give a value (constant,
// ramp, sine, step, piecewise-linear) plus optional seeded gaussian noise, and the catalogue of
// named device signals with their units and valid ranges.
//
// Every evaluation is a pure function of (signal, noise key, t): the same scenario and seed give
// the same values on every run and on every machine.
#ifndef WARPSCOPE_SIM_NVML_SIGNAL_H_
#define WARPSCOPE_SIM_NVML_SIGNAL_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/nvml/units.h"

namespace warpscope::sim {

enum class SignalKind { kConstant, kRamp, kSine, kStep, kPiecewise };

// A signal shape plus noise. Passive data; values are in the signal's unit (bytes, W, %, ...),
// times in seconds of simulated time.
struct Signal {
  SignalKind kind = SignalKind::kConstant;
  double value = 0;  // kConstant
  // kRamp: `from` before start_s, `to` after start_s + duration_s, linear in between.
  double from = 0;
  double to = 0;
  double start_s = 0;
  double duration_s = 0;
  // kSine: mean + amplitude * sin(2*pi*(t + phase_s) / period_s).
  double mean = 0;
  double amplitude = 0;
  double period_s = 60;
  double phase_s = 0;
  // kStep: `before` for t < at_s, `after` from at_s on.
  double before = 0;
  double after = 0;
  double at_s = 0;
  // kPiecewise: (t_s, value) with strictly increasing t_s; linear between points, flat outside.
  std::vector<std::pair<double, double>> points;
  // Standard deviation of the gaussian noise added on top; 0 = none. The noise is constant within
  // each whole second of simulated time.
  double noise = 0;

  static Signal Constant(double v) {
    Signal s;
    s.value = v;
    return s;
  }
};

// The shape's value at t, without noise.
double EvaluateShape(const Signal& signal, double t_s);
// Shape plus noise: EvaluateShape(t) + noise * GaussianNoise(noise_key, floor(t)).
double Evaluate(const Signal& signal, uint64_t noise_key, double t_s);
// A standard normal variate that depends only on (key, second).
double GaussianNoise(uint64_t key, int64_t second);
// Key for the noise stream of one signal of one device (or of one process / MIG instance when
// `name` says so, e.g. "processes[2].sm_util").
uint64_t NoiseKey(uint64_t seed, unsigned device_index, std::string_view name);
// 64-bit mixing function (splitmix64 finaliser); also used for deterministic default ids.
uint64_t Mix64(uint64_t x);

// Named device signals (the keys of `signals:` in a scenario).
enum class SignalId : int {
  kGpuUtil,
  kMemCopyUtil,
  kEncoderUtil,
  kDecoderUtil,
  kMemoryUsed,
  kPower,
  kTemperature,
  kMemoryTemperature,
  kSmClock,
  kMemClock,
  kClockEventReasons,
  kPcieTx,
  kPcieRx,
  kPcieReplayRate,
  kNvlinkTx,
  kNvlinkRx,
  kEccSbeRate,
  kEccDbeRate,
  kRemappedRowsCorrectable,
  kRemappedRowsUncorrectable,
  kRemapPending,
  kRemapFailure,
  // GPM (Hopper and newer).
  kGrEngineActive,
  kSmActive,
  kSmOccupancy,
  kTensorActive,
  kDramActive,
  kFp64Active,
  kFp32Active,
  kFp16Active,
  kIntActive,
  kHmmaActive,
  kImmaActive,
  kDfmaActive,
  kGpmPcieTx,
  kGpmPcieRx,
  kGpmNvlinkTx,
  kGpmNvlinkRx,
  kCount,
};
inline constexpr size_t kSignalCount = static_cast<size_t>(SignalId::kCount);

// How a signal's value is clamped after noise.
enum class SignalRange {
  kPercent,      // 0..100
  kNonNegative,  // >= 0
  kCelsius,      // 0..200
  kBitmask,      // rounded to an integer >= 0
};

struct SignalInfo {
  SignalId id;
  std::string_view name;  // YAML key
  Unit unit;
  SignalRange range;
  bool gpm;                    // a GPM metric (Hopper+ only)
  bool mig_instance;           // allowed under mig.instances[].signals
  std::string_view unit_text;  // for docs and messages: "%", "bytes", "W", ...
};

const SignalInfo& GetSignalInfo(SignalId id);
const std::array<SignalInfo, kSignalCount>& AllSignals();
std::optional<SignalId> FindSignal(std::string_view name);
// Applies the signal's range (percent, non-negative, ...). memory_used is bounded by the caller.
double ClampSignal(SignalId id, double value);

}  // namespace warpscope::sim

#endif  // WARPSCOPE_SIM_NVML_SIGNAL_H_
