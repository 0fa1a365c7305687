// SPDX-License-Identifier: Apache-2.0
// Per-thread token bucket that admits kernel launches for stack capture. Not thread-safe: each
// application thread owns one. The caller passes the clock reading (tests inject it) and the
// current rate, so the agent can retune the rate of a running process.
#ifndef WARPSCOPE_CUPTI_INJECT_RATE_LIMITER_H_
#define WARPSCOPE_CUPTI_INJECT_RATE_LIMITER_H_

#include <algorithm>
#include <cstdint>

namespace warpscope::cupti_inject {

class TokenBucket {
 public:
  // Admits one event at `now_ns` (any monotonic clock) when a token is left. `rate_per_s` tokens
  // accrue per second up to `burst`; rate 0 admits nothing. The bucket starts full.
  bool Admit(uint64_t now_ns, uint32_t rate_per_s, uint32_t burst) {
    if (rate_per_s == 0) {
      return false;
    }
    const uint64_t cap = static_cast<uint64_t>(std::max<uint32_t>(burst, 1)) * kNanosPerToken;
    if (!started_) {
      started_ = true;
      last_ns_ = now_ns;
      nano_tokens_ = cap;
    }
    if (now_ns > last_ns_) {
      // Cap the elapsed time so the product cannot overflow (a full bucket needs < 10 s here
      // for any rate >= 1 and burst <= 1e6... and more elapsed time cannot add more than cap).
      const uint64_t elapsed = std::min<uint64_t>(now_ns - last_ns_, kMaxElapsedNs);
      nano_tokens_ = std::min(cap, nano_tokens_ + elapsed * rate_per_s);
      last_ns_ = now_ns;
    }
    if (nano_tokens_ >= kNanosPerToken) {
      nano_tokens_ -= kNanosPerToken;
      return true;
    }
    return false;
  }

 private:
  static constexpr uint64_t kNanosPerToken = 1'000'000'000ull;
  static constexpr uint64_t kMaxElapsedNs = 1'000'000'000'000ull;  // 1000 s
  bool started_ = false;
  uint64_t last_ns_ = 0;
  uint64_t nano_tokens_ = 0;  // tokens * 1e9
};

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_RATE_LIMITER_H_
