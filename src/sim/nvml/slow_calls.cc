// SPDX-License-Identifier: Apache-2.0
// The slow fault: a call on a device answers late (latency, in real time) or hangs until the
// fault's window ends (in simulated time). docs/simulator.md, "Faults".
#include <algorithm>
#include <chrono>
#include <cmath>

#include "sim/nvml/nvml_sim.h"

namespace warpscope::sim {
namespace {

// Bounds one wait of a hang on the real clock, so a wait never relies on a single long timer.
constexpr double kMaxWaitSeconds = 60;

}  // namespace

bool NvmlSim::WaitWhileSlow(std::unique_lock<std::mutex>& lock, size_t dev, std::string_view fn) {
  const FaultSpec* slow = sim_->Slow(dev, fn, NowSeconds());
  if (slow == nullptr) {
    return true;
  }
  // The fault lives in the Simulation, which stays while the generation is unchanged.
  const uint64_t generation = generation_;
  auto shut_down = [&] { return generation_ != generation; };
  if (!slow->hang) {
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(slow->latency_s));
    cv_.wait_until(lock, deadline, shut_down);
    return !shut_down();
  }
  const double until = slow->until_s;
  while (!shut_down()) {
    const double now = NowSeconds();
    if (now >= until) {
      return true;
    }
    if (manual_clock_ || std::isinf(until)) {
      // The manual clock moves only through SetTimeNs, which notifies; a hang without an end
      // ends only with the simulation.
      cv_.wait(lock);
    } else {
      cv_.wait_for(lock, std::chrono::duration<double>(std::min(until - now, kMaxWaitSeconds)));
    }
  }
  return false;
}

}  // namespace warpscope::sim
