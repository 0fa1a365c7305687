// SPDX-License-Identifier: Apache-2.0
// The few things the remote reader needs from an ELF file on disk: named symbols' values from
// .dynsym (and .symtab when asked), the PT_LOAD segments (for the load bias) and the GNU build
// id. 64-bit little-endian ELF only (x86-64, aarch64). Reads the file with pread, no libelf:
// agent side only, so it may allocate.
#ifndef WARPSCOPE_PYFRAMES_ELF_LOOKUP_H_
#define WARPSCOPE_PYFRAMES_ELF_LOOKUP_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace warpscope::pyframes {

struct ElfLoad {  // a PT_LOAD program header
  uint64_t offset = 0;
  uint64_t vaddr = 0;
  uint64_t filesz = 0;
  uint64_t align = 0;
};

struct ElfInfo {
  bool is_dyn = false;  // ET_DYN (shared library or PIE): loaded at a bias
  std::vector<ElfLoad> loads;
  std::string build_id;  // lower-case hex, "" when absent
};

enum class ElfError { kOk = 0, kOpen, kNotElf, kUnsupported, kTruncated };

// Reads the file's header, program headers and build id.
[[nodiscard]] ElfError ReadElfInfo(const std::string& path, ElfInfo* out);

// Looks `names` up in .dynsym and, when `symtab` is set and the file has one, .symtab: values[i]
// is the st_value (link-time address) of names[i], 0 when absent. Stops reading early once all
// are found.
[[nodiscard]] ElfError LookupElfSymbols(const std::string& path,
                                        const std::vector<std::string_view>& names, bool symtab,
                                        std::vector<uint64_t>* values);

// The load bias of a file mapped at `map_start` from file offset `map_offset` (a line of
// /proc/<pid>/maps): runtime address = bias + link-time address. False when no PT_LOAD segment
// starts at that page.
bool LoadBias(const ElfInfo& info, uint64_t map_start, uint64_t map_offset, uint64_t* bias);

}  // namespace warpscope::pyframes

#endif  // WARPSCOPE_PYFRAMES_ELF_LOOKUP_H_
