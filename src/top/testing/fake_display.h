// SPDX-License-Identifier: Apache-2.0
// Fakes of top_loop.h's interfaces: a display that plays scripted keys and advances a FakeClock
// by each wait, and a collector that hands out snapshots in turn.
#ifndef WARPSCOPE_TOP_TESTING_FAKE_DISPLAY_H_
#define WARPSCOPE_TOP_TESTING_FAKE_DISPLAY_H_

#include <deque>
#include <utility>
#include <vector>

#include "base/time.h"
#include "top/top_loop.h"

namespace warpscope::top {

// Each ReadKey returns the next scripted step: a key (the clock does not move) or kNoKey (the
// clock advances by the whole timeout, as when no key comes). After the script: 'q'.
class FakeDisplay final : public Display {
 public:
  FakeDisplay(base::FakeClock& clock, int rows, int columns)
      : clock_(clock), rows_(rows), columns_(columns) {}
  void Script(std::vector<int> keys) { keys_.insert(keys_.end(), keys.begin(), keys.end()); }
  void Resize(int rows, int columns) {
    rows_ = rows;
    columns_ = columns;
  }

  int rows() const override { return rows_; }
  int columns() const override { return columns_; }
  bool utf8() const override { return true; }
  void Draw(const Screen& screen) override { screens_.push_back(screen); }
  int ReadKey(base::Duration timeout) override {
    waits_.push_back(timeout);
    if (keys_.empty()) return 'q';
    int key = keys_.front();
    keys_.pop_front();
    if (key == kNoKey) clock_.Advance(timeout);
    return key;
  }

  const std::vector<Screen>& screens() const { return screens_; }
  const std::vector<base::Duration>& waits() const { return waits_; }

 private:
  base::FakeClock& clock_;
  int rows_;
  int columns_;
  std::deque<int> keys_;
  std::vector<Screen> screens_;
  std::vector<base::Duration> waits_;
};

class FakeCollector final : public Collector {
 public:
  explicit FakeCollector(std::vector<Snapshot> snapshots) : snapshots_(std::move(snapshots)) {}
  // The next snapshot; the last one again once all were handed out.
  Snapshot Collect() override {
    ++calls_;
    if (next_ + 1 < snapshots_.size()) return snapshots_[next_++];
    return snapshots_.empty() ? Snapshot{} : snapshots_.back();
  }
  int calls() const { return calls_; }

 private:
  std::vector<Snapshot> snapshots_;
  size_t next_ = 0;
  int calls_ = 0;
};

}  // namespace warpscope::top

#endif  // WARPSCOPE_TOP_TESTING_FAKE_DISPLAY_H_
