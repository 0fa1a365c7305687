// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/source_lines.h"

#include <elfutils/libdwfl.h>
#include <unistd.h>

namespace warpscope::agent::cpu_profiler {
namespace {

char* kDebuginfoPath = nullptr;  // libdwfl's default search path

const Dwfl_Callbacks kOfflineCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &kDebuginfoPath,
};

}  // namespace

struct SourceLines::Binary {
  Dwfl* dwfl = nullptr;
  Dwfl_Module* module = nullptr;  // null: no DWARF line tables
  Dwarf_Addr bias = 0;
  std::list<std::string>::iterator lru;
  ~Binary() {
    if (dwfl != nullptr) {
      dwfl_end(dwfl);
    }
  }
};

SourceLines::SourceLines(size_t max_binaries) : max_binaries_(max_binaries) {}

SourceLines::~SourceLines() = default;

std::optional<SourceLine> SourceLines::Find(const std::string& key,
                                            std::span<const std::string> paths, uint64_t vaddr) {
  auto it = binaries_.find(key);
  Binary* b = nullptr;
  if (it != binaries_.end()) {
    b = it->second.get();
    lru_.splice(lru_.begin(), lru_, b->lru);
  } else {
    auto owned = std::make_unique<Binary>();
    b = owned.get();
    for (const std::string& path : paths) {
      if (access(path.c_str(), R_OK) != 0) {
        continue;
      }
      b->dwfl = dwfl_begin(&kOfflineCallbacks);
      if (b->dwfl == nullptr) {
        break;
      }
      dwfl_report_begin(b->dwfl);
      Dwfl_Module* m = dwfl_report_offline(b->dwfl, "", path.c_str(), -1);
      dwfl_report_end(b->dwfl, nullptr, nullptr);
      if (m != nullptr && dwfl_module_getdwarf(m, &b->bias) != nullptr) {
        b->module = m;
      }
      ++opened_;
      break;
    }
    lru_.push_front(key);
    b->lru = lru_.begin();
    binaries_.emplace(key, std::move(owned));
    while (binaries_.size() > max_binaries_) {
      binaries_.erase(lru_.back());
      lru_.pop_back();
    }
  }
  if (b->module == nullptr) {
    return std::nullopt;
  }
  Dwfl_Line* line = dwfl_module_getsrc(b->module, vaddr + b->bias);
  int lineno = 0;
  const char* file =
      line == nullptr ? nullptr : dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
  if (file == nullptr) {
    return std::nullopt;
  }
  return SourceLine{file, lineno};
}

}  // namespace warpscope::agent::cpu_profiler
