// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/kernel_symbols.h"

#include <algorithm>
#include <charconv>

#include "base/file_util.h"

namespace warpscope::agent::cpu_profiler {

base::Result<KernelSymbols> KernelSymbols::Parse(std::string_view text, size_t max_symbols) {
  KernelSymbols out;
  bool any_nonzero = false;
  size_t lines = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    // "ffffffff81000000 T _stext" or "ffffffffc0a01000 t nv_init\t[nvidia]"
    const size_t sp1 = line.find(' ');
    if (sp1 == std::string_view::npos || sp1 + 3 > line.size() || line[sp1 + 2] != ' ') {
      continue;
    }
    ++lines;
    uint64_t address = 0;
    auto r = std::from_chars(line.data(), line.data() + sp1, address, 16);
    if (r.ec != std::errc() || r.ptr != line.data() + sp1) {
      continue;
    }
    any_nonzero |= address != 0;
    const char type = line[sp1 + 1];
    if (type != 't' && type != 'T' && type != 'w' && type != 'W') {
      continue;
    }
    std::string_view rest = line.substr(sp1 + 3);
    std::string_view module;
    const size_t tab = rest.find('\t');
    if (tab != std::string_view::npos) {
      module = rest.substr(tab + 1);
      rest = rest.substr(0, tab);
      if (module.size() >= 2 && module.front() == '[' && module.back() == ']') {
        module = module.substr(1, module.size() - 2);
      }
    }
    if (out.symbols_.size() < max_symbols) {
      out.symbols_.push_back({address, std::string(rest), std::string(module)});
    }
  }
  if (lines > 0 && !any_nonzero) {
    out.symbols_.clear();
    return base::Error(base::PermissionDenied(
        "/proc/kallsyms hides kernel addresses (kernel.kptr_restrict); kernel frames stay "
        "unnamed: run the agent as root or with CAP_SYSLOG, or `sysctl kernel.kptr_restrict=0`"));
  }
  std::stable_sort(out.symbols_.begin(), out.symbols_.end(),
                   [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
  return out;
}

KernelSymbols KernelSymbols::Load(const std::string& host_root, std::string* warning) {
  const std::string path = host_root + "/proc/kallsyms";
  auto text = base::ReadFile(path, 256u << 20);
  if (!text) {
    if (warning != nullptr) {
      *warning = fmt::format("{}: {}; kernel frames stay unnamed", path, text.error().message());
    }
    return {};
  }
  auto parsed = Parse(*text);
  if (!parsed) {
    if (warning != nullptr) {
      *warning = parsed.error().message();
    }
    return {};
  }
  return std::move(*parsed);
}

KernelSymbols::Lookup KernelSymbols::Find(uint64_t address) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                             [](uint64_t a, const Symbol& s) { return a < s.address; });
  if (it == symbols_.begin()) {
    return {fmt::format("[kernel] 0x{:x}", address), "[kernel.kallsyms]", false};
  }
  const Symbol& s = *(it - 1);
  return {s.name, s.module.empty() ? "[kernel.kallsyms]" : "[" + s.module + "]", true};
}

}  // namespace warpscope::agent::cpu_profiler
