// SPDX-License-Identifier: Apache-2.0
// Function symbols, load segments and GNU build id of one ELF file, read once with libelf and then
// queried without I/O. Used by the agent-side symbolizer (symbolizer.h); never in the app.
#ifndef WARPSCOPE_PROFILING_ELF_SYMBOLS_H_
#define WARPSCOPE_PROFILING_ELF_SYMBOLS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warpscope::profiling {

// "Itanium-mangled" -> readable C++ via abi::__cxa_demangle; names that are not mangled
// (C functions, Triton/cuBLAS kernels) come back unchanged.
std::string Demangle(std::string_view name);

// Lower-case hex of `bytes`.
std::string HexString(std::string_view bytes);

class ElfSymbols {
 public:
  struct Symbol {
    uint64_t address = 0;  // st_value: link-time virtual address
    uint64_t size = 0;     // 0 when the symbol table does not say
    std::string name;      // mangled, as in the table
  };
  struct Segment {  // a PT_LOAD program header
    uint64_t file_offset = 0;
    uint64_t vaddr = 0;
    uint64_t file_size = 0;
  };

  // Reads `path`: .symtab and .dynsym function symbols (STT_FUNC, STT_GNU_IFUNC), PT_LOAD
  // segments and the NT_GNU_BUILD_ID note. NotFound when the file cannot be opened,
  // InvalidArgument when it is not an ELF file. A stripped file is fine (dynsym only, or none).
  [[nodiscard]] static base::Result<ElfSymbols> Load(const std::string& path);

  // Adds the function symbols of a separate debug file (same build id) to these.
  void MergeSymbolsFrom(const ElfSymbols& debug);

  // Link-time virtual address of a byte at `file_offset`, through the PT_LOAD segment holding it;
  // nullopt when no segment maps it.
  std::optional<uint64_t> FileOffsetToVaddr(uint64_t file_offset) const;

  // The function containing `vaddr`: the symbol with the largest address <= vaddr whose size
  // covers it (a size-0 symbol covers up to the next symbol). nullptr when none does.
  const Symbol* Find(uint64_t vaddr) const;

  const std::string& build_id() const { return build_id_; }  // hex, "" when absent
  bool has_symtab() const { return has_symtab_; }
  size_t symbol_count() const { return symbols_.size(); }

 private:
  ElfSymbols() = default;

  std::vector<Symbol> symbols_;  // sorted by address, duplicates by address removed
  std::vector<Segment> segments_;
  std::string build_id_;
  bool has_symtab_ = false;
};

}  // namespace warpscope::profiling

#endif  // WARPSCOPE_PROFILING_ELF_SYMBOLS_H_
