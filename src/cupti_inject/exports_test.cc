// SPDX-License-Identifier: Apache-2.0
// libwarpscope_cupti.so is loaded into someone else's process: it must export InitializeInjection
// and nothing else (exports.map), and must not need a shared libstdc++ or libgcc_s (it links them
// statically, so it loads next to an older libstdc++ of conda or a wheel). Read from the built
// library's dynamic section and dynamic symbol table.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

namespace {

struct DynamicInfo {
  std::set<std::string> defined_symbols;  // global or weak, default or protected visibility
  std::vector<std::string> needed;        // DT_NEEDED
  std::string error;
};

template <typename T>
const T* At(const std::string& file, uint64_t offset, uint64_t count = 1) {
  if (offset > file.size() || count * sizeof(T) > file.size() - offset) {
    return nullptr;
  }
  return reinterpret_cast<const T*>(file.data() + offset);
}

DynamicInfo ReadDynamic(const std::string& path) {
  DynamicInfo info;
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto* eh = At<Elf64_Ehdr>(file, 0);
  if (eh == nullptr || std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
      eh->e_ident[EI_CLASS] != ELFCLASS64) {
    info.error = "not a 64-bit ELF file: " + path;
    return info;
  }
  const auto* sections = At<Elf64_Shdr>(file, eh->e_shoff, eh->e_shnum);
  if (sections == nullptr) {
    info.error = "section headers out of bounds";
    return info;
  }
  auto string_at = [&](const Elf64_Shdr& strtab, uint64_t index) -> std::string {
    if (index >= strtab.sh_size || strtab.sh_offset + strtab.sh_size > file.size()) {
      return "";
    }
    const char* s = file.data() + strtab.sh_offset + index;
    return std::string(s, strnlen(s, strtab.sh_size - index));
  };
  for (int i = 0; i < eh->e_shnum; ++i) {
    const Elf64_Shdr& sh = sections[i];
    if ((sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_DYNAMIC) || sh.sh_link >= eh->e_shnum) {
      continue;
    }
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    if (sh.sh_type == SHT_DYNSYM) {
      const size_t n = sh.sh_size / sizeof(Elf64_Sym);
      const auto* syms = At<Elf64_Sym>(file, sh.sh_offset, n);
      for (size_t k = 0; syms != nullptr && k < n; ++k) {
        const int bind = ELF64_ST_BIND(syms[k].st_info);
        const int vis = ELF64_ST_VISIBILITY(syms[k].st_other);
        if (syms[k].st_shndx != SHN_UNDEF && (bind == STB_GLOBAL || bind == STB_WEAK) &&
            (vis == STV_DEFAULT || vis == STV_PROTECTED)) {
          info.defined_symbols.insert(string_at(strtab, syms[k].st_name));
        }
      }
    } else {
      const size_t n = sh.sh_size / sizeof(Elf64_Dyn);
      const auto* dyn = At<Elf64_Dyn>(file, sh.sh_offset, n);
      for (size_t k = 0; dyn != nullptr && k < n && dyn[k].d_tag != DT_NULL; ++k) {
        if (dyn[k].d_tag == DT_NEEDED) {
          info.needed.push_back(string_at(strtab, dyn[k].d_un.d_val));
        }
      }
    }
  }
  return info;
}

TEST(CuptiInjectExportsTest, OnlyInitializeInjectionIsExported) {
  const DynamicInfo info = ReadDynamic(WARPSCOPE_CUPTI_LIBRARY);
  ASSERT_EQ(info.error, "");
  EXPECT_EQ(info.defined_symbols, std::set<std::string>{"InitializeInjection"});
}

TEST(CuptiInjectExportsTest, NeedsNeitherSharedLibstdcxxNorLibgcc) {
  const DynamicInfo info = ReadDynamic(WARPSCOPE_CUPTI_LIBRARY);
  ASSERT_EQ(info.error, "");
  EXPECT_FALSE(info.needed.empty());  // libc at least: the section was found
  for (const auto& lib : info.needed) {
    EXPECT_EQ(lib.find("libstdc++"), std::string::npos) << lib;
    EXPECT_EQ(lib.find("libgcc_s"), std::string::npos) << lib;
  }
}

}  // namespace
