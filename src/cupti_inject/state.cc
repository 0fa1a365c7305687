// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/state.h"

#include <cstdarg>
#include <cstdio>

namespace warpscope::cupti_inject {

Global* g = nullptr;

void Log(const char* fmt, ...) {
  if (g == nullptr || !g->config.log_stderr) {
    return;
  }
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  fprintf(stderr, "warpscope-cupti[%d]: %s\n", static_cast<int>(getpid()), buf);
}

void Notify(wire::Severity severity, uint32_t code, std::string message) {
  Log("%s", message.c_str());
  std::lock_guard lock(g->notice_mu);
  if (g->notices.size() >= kMaxNotices) {
    return;
  }
  g->notices.push_back(wire::Notice{severity, code, std::move(message)});
  g->notice_generation.fetch_add(1, std::memory_order_relaxed);
}

void ClearInternedStacks() {
  // The array's address in a local: otherwise each store may alias `g` and reloads it.
  std::atomic<uint64_t>* cells = g->interned.get();
  for (size_t i = 0; i < kInternSize; ++i) {
    cells[i].store(0, std::memory_order_relaxed);
  }
}

}  // namespace warpscope::cupti_inject
