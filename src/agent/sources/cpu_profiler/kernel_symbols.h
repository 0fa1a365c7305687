// SPDX-License-Identifier: Apache-2.0
// Kernel function names for the kernel part of a sample's callchain, from /proc/kallsyms
// (text symbols only, sorted; at most `max_symbols` kept, so a huge kallsyms costs bounded
// memory). When kernel.kptr_restrict (or a missing CAP_SYSLOG) hides the addresses, kallsyms
// lists every symbol at 0: Load() says so, and Lookup gives "[kernel] 0x<address>" frames.
//
// Thread contract: immutable after Load(); Lookup may be called from any thread.
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_KERNEL_SYMBOLS_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_KERNEL_SYMBOLS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warpscope::agent::cpu_profiler {

class KernelSymbols {
 public:
  struct Symbol {
    uint64_t address = 0;
    std::string name;
    std::string module;  // "" for the kernel image, else the module's name ("nvidia")
  };
  struct Lookup {
    std::string function;  // "do_syscall_64", or "[kernel] 0xffffffff81234567"
    std::string module;    // "[kernel.kallsyms]" or "[nvidia]"
    bool resolved = false;
  };

  KernelSymbols() = default;
  // Parses kallsyms text. PermissionDenied, naming kernel.kptr_restrict and its remedy, when
  // every address is 0 (hidden); the result is then empty but usable.
  [[nodiscard]] static base::Result<KernelSymbols> Parse(std::string_view text,
                                                         size_t max_symbols = 1 << 20);
  // Reads <host_root>/proc/kallsyms. An unreadable or hidden file gives an empty table and a
  // warning (`warning` set), never an error: kernel frames then stay unnamed.
  static KernelSymbols Load(const std::string& host_root, std::string* warning);

  Lookup Find(uint64_t address) const;
  size_t size() const { return symbols_.size(); }

 private:
  std::vector<Symbol> symbols_;  // sorted by address
};

}  // namespace warpscope::agent::cpu_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_KERNEL_SYMBOLS_H_
