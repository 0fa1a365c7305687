// SPDX-License-Identifier: Apache-2.0
#include "top/top_loop.h"

#include <algorithm>
#include <vector>

#include "top/history.h"

namespace warpscope::top {

LoopStats RunLoop(Display& display, Collector& collector, const base::Clock& clock,
                  const LoopOptions& options) {
  LoopStats stats;
  ViewState state;
  History history;
  Snapshot snapshot;
  std::vector<int> gpu_indices;
  base::Duration next_collect = clock.Monotonic();
  bool dirty = true;
  while (!state.quit) {
    if (options.stop_requested && options.stop_requested()) break;
    base::Duration now = clock.Monotonic();
    if (now >= next_collect) {
      snapshot = collector.Collect();
      ++stats.collections;
      history.Add(snapshot);
      gpu_indices.clear();
      for (const GpuRow& gpu : snapshot.gpus) gpu_indices.push_back(gpu.index);
      next_collect += options.interval;
      now = clock.Monotonic();
      if (next_collect <= now) next_collect = now + options.interval;
      dirty = true;
    }
    if (dirty) {
      ScreenOptions screen{.rows = display.rows(),
                           .columns = display.columns(),
                           .utf8 = display.utf8(),
                           .interval = options.interval};
      display.Draw(BuildScreen(snapshot, history, state, screen));
      ++stats.draws;
      dirty = false;
    }
    int key = display.ReadKey(std::max(next_collect - clock.Monotonic(), base::Duration(0)));
    if (key == kNoKey) continue;
    if (key != kResize) HandleKey(state, key, gpu_indices);
    dirty = true;
  }
  return stats;
}

}  // namespace warpscope::top
