// SPDX-License-Identifier: Apache-2.0
// The one sequence of `warpscope top`: wait for a key with a timeout, collect on schedule,
// redraw. The terminal and the data come in through two small interfaces, each with a fake in
// testing/, so the loop runs in unit tests without a terminal, NVML or a server.
#ifndef WARPSCOPE_TOP_TOP_LOOP_H_
#define WARPSCOPE_TOP_TOP_LOOP_H_

#include <functional>

#include "base/time.h"
#include "top/screen.h"
#include "top/snapshot.h"

namespace warpscope::top {

// Returned by Display::ReadKey when no key came before the timeout, and when the terminal was
// resized (the screen is rebuilt for the new size either way).
inline constexpr int kNoKey = -1;
inline constexpr int kResize = -2;

// Where the screen is painted and keys come from. Called on the loop's thread only.
class Display {
 public:
  virtual ~Display() = default;
  Display(const Display&) = delete;
  Display& operator=(const Display&) = delete;

  virtual int rows() const = 0;
  virtual int columns() const = 0;
  virtual bool utf8() const = 0;
  // Replaces what is on the terminal with `screen`.
  virtual void Draw(const Screen& screen) = 0;
  // Waits up to `timeout` for a key: the key (model codes of screen.h), kResize, or kNoKey. May
  // return early (a signal); the loop then checks its stop condition.
  virtual int ReadKey(base::Duration timeout) = 0;

 protected:
  Display() = default;
};

// Where snapshots come from. Collect() never fails: what went wrong is Snapshot::error. Called on
// the loop's thread only, once per interval.
class Collector {
 public:
  virtual ~Collector() = default;
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;
  virtual Snapshot Collect() = 0;

 protected:
  Collector() = default;
};

struct LoopOptions {
  base::Duration interval = std::chrono::seconds(1);
  // Polled after every key wait; true ends the loop (SIGINT/SIGTERM).
  std::function<bool()> stop_requested;
};

struct LoopStats {
  uint64_t collections = 0;
  uint64_t draws = 0;
};

// Runs until the user quits (q) or stop_requested() is true. Collects at once, then every
// interval on `clock`'s monotonic time (a late collection does not bunch up the next ones);
// draws after each collection, key and resize.
LoopStats RunLoop(Display& display, Collector& collector, const base::Clock& clock,
                  const LoopOptions& options);

}  // namespace warpscope::top

#endif  // WARPSCOPE_TOP_TOP_LOOP_H_
