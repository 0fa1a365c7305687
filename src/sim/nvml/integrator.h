// SPDX-License-Identifier: Apache-2.0
// Cumulative integral of a rate signal from 0 to t, as NVML's counters (energy, NVLink bytes,
// ECC errors, PCIe replays) are integrals of the corresponding rates.
//
// The rate is sampled at the midpoints of a fixed 0.1 s grid (negative rates count as 0) and
// each cell's contribution is rounded down to a fixed-point integer of 1e-6 units, so sums are
// exact: the result does not depend on the order or history of queries, is deterministic,
// exact for rates that are constant on the grid (constants, and noise, which changes once per
// second) to 1e-6, and monotonically non-decreasing in t. A forward cursor makes the usual
// query pattern (t growing by one poll interval) cost one evaluation per 0.1 s of new time;
// sparse checkpoints every 10 minutes bound a query for an earlier t to 6000 evaluations and
// keep memory small (about 2 KB per simulated day).
// Not thread-safe; callers serialise.
#ifndef WARPSCOPE_SIM_NVML_INTEGRATOR_H_
#define WARPSCOPE_SIM_NVML_INTEGRATOR_H_

#include <cstdint>
#include <functional>
#include <vector>

namespace warpscope::sim {

class CumulativeIntegral {
 public:
  static constexpr double kStepSeconds = 0.1;
  static constexpr int64_t kCellsPerCheckpoint = 6000;  // 10 minutes
  static constexpr double kUnitsPerValue = 1e6;         // fixed-point resolution
  // Simulated time beyond this (about 115 days) is treated as this; counters stop advancing.
  static constexpr double kMaxSeconds = 1e7;

  using Rate = std::function<double(double t_s)>;

  // Integral of max(rate, 0) over [0, t_s]; 0 for t_s <= 0. `rate` must be a pure function of t
  // and the same function on every call to this object.
  double At(double t_s, const Rate& rate);
  // At(t2) - At(t1) for t1 <= t2, computed from the cells of [t1, t2] only (no state), so it
  // costs one evaluation per 0.1 s of the interval. Used for GPM averages.
  static double Between(double t1_s, double t2_s, const Rate& rate);

 private:
  using Fixed = __int128;
  // floor(max(rate at the cell's midpoint, 0) * seconds) in fixed-point units.
  static Fixed CellUnits(int64_t cell, double seconds, const Rate& rate);

  std::vector<Fixed> checkpoints_{0};  // checkpoints_[k] = integral over k * 6000 cells
  int64_t cursor_cell_ = 0;            // integral over [0, cursor_cell_ cells) is cursor_sum_
  Fixed cursor_sum_ = 0;
};

}  // namespace warpscope::sim

#endif  // WARPSCOPE_SIM_NVML_INTEGRATOR_H_
