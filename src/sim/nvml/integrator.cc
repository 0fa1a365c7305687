// SPDX-License-Identifier: Apache-2.0
#include "sim/nvml/integrator.h"

#include <algorithm>
#include <cmath>

namespace warpscope::sim {

CumulativeIntegral::Fixed CumulativeIntegral::CellUnits(int64_t cell, double seconds,
                                                        const Rate& rate) {
  double v = rate((static_cast<double>(cell) + 0.5) * kStepSeconds);
  if (!std::isfinite(v) || v <= 0) {
    return 0;
  }
  // The same expression for whole and partial cells keeps F(t) monotonic across cell ends.
  return static_cast<Fixed>(std::floor(v * kUnitsPerValue * seconds));
}

namespace {

// The grid position of t: whole cells before it and the seconds into the next cell.
struct GridPoint {
  int64_t full_cells;
  double partial_s;
};

GridPoint Locate(double t_s) {
  t_s = std::clamp(t_s, 0.0, CumulativeIntegral::kMaxSeconds);
  const auto full = static_cast<int64_t>(std::floor(t_s / CumulativeIntegral::kStepSeconds));
  const double partial =
      std::clamp(t_s - static_cast<double>(full) * CumulativeIntegral::kStepSeconds, 0.0,
                 CumulativeIntegral::kStepSeconds);
  return {full, partial};
}

}  // namespace

double CumulativeIntegral::Between(double t1_s, double t2_s, const Rate& rate) {
  if (!(t2_s > t1_s) || !(t2_s > 0)) {
    return 0;
  }
  const GridPoint a = Locate(t1_s);
  const GridPoint b = Locate(t2_s);
  Fixed sum = 0;
  for (int64_t cell = a.full_cells; cell < b.full_cells; ++cell) {
    sum += CellUnits(cell, kStepSeconds, rate);
  }
  sum += CellUnits(b.full_cells, b.partial_s, rate);
  if (t1_s > 0) {
    sum -= CellUnits(a.full_cells, a.partial_s, rate);
  }
  return static_cast<double>(sum) / kUnitsPerValue;
}

double CumulativeIntegral::At(double t_s, const Rate& rate) {
  if (!(t_s > 0)) {
    return 0;
  }
  // Whole cells before t, computed from t alone so every query uses the same grid.
  const GridPoint point = Locate(t_s);
  const int64_t full_cells = point.full_cells;
  // Start from the nearest known point at or before full_cells: a checkpoint or the cursor.
  int64_t checkpoint = std::min<int64_t>(full_cells / kCellsPerCheckpoint,
                                         static_cast<int64_t>(checkpoints_.size()) - 1);
  int64_t cell = checkpoint * kCellsPerCheckpoint;
  Fixed sum = checkpoints_[checkpoint];
  if (cursor_cell_ <= full_cells && cursor_cell_ > cell) {
    cell = cursor_cell_;
    sum = cursor_sum_;
  }
  for (; cell < full_cells; ++cell) {
    sum += CellUnits(cell, kStepSeconds, rate);
    if ((cell + 1) % kCellsPerCheckpoint == 0 &&
        (cell + 1) / kCellsPerCheckpoint == static_cast<int64_t>(checkpoints_.size())) {
      checkpoints_.push_back(sum);
    }
  }
  cursor_cell_ = full_cells;
  cursor_sum_ = sum;
  sum += CellUnits(full_cells, point.partial_s, rate);
  return static_cast<double>(sum) / kUnitsPerValue;
}

}  // namespace warpscope::sim
