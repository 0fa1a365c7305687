// SPDX-License-Identifier: Apache-2.0
#include "profiling/elf_symbols.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace warpscope::profiling {

std::string Demangle(std::string_view name) {
  // Only Itanium names ("_Z...") are worth the call; everything else (C, Triton, cuBLAS)
  // would come back with status -2 anyway.
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') {
    return std::string(name);
  }
  std::string mangled(name);
  int status = 0;
  char* out = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) {
    std::free(out);
    return mangled;
  }
  std::string result(out);
  std::free(out);
  return result;
}

std::string HexString(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

namespace {

// Closes the descriptor and the Elf handle on every path out of Load().
class ElfHandle {
 public:
  ElfHandle(int fd, Elf* elf) : fd_(fd), elf_(elf) {}
  ~ElfHandle() {
    if (elf_ != nullptr) {
      elf_end(elf_);
    }
    if (fd_ >= 0) {
      close(fd_);
    }
  }
  ElfHandle(const ElfHandle&) = delete;
  ElfHandle& operator=(const ElfHandle&) = delete;
  Elf* get() const { return elf_; }

 private:
  int fd_;
  Elf* elf_;
};

bool IsFunction(const GElf_Sym& sym) {
  int type = GELF_ST_TYPE(sym.st_info);
  return (type == STT_FUNC || type == STT_GNU_IFUNC) && sym.st_shndx != SHN_UNDEF &&
         sym.st_value != 0;
}

void ReadSymbolSection(Elf* elf, Elf_Scn* scn, const GElf_Shdr& shdr,
                       std::vector<ElfSymbols::Symbol>& out) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr || shdr.sh_entsize == 0) {
    return;
  }
  size_t count = shdr.sh_size / shdr.sh_entsize;
  for (size_t i = 0; i < count; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr || !IsFunction(sym)) {
      continue;
    }
    const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
    if (name == nullptr || name[0] == '\0') {
      continue;
    }
    out.push_back({sym.st_value, sym.st_size, name});
  }
}

std::string ReadBuildId(Elf* elf, Elf_Scn* scn) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr) {
    return "";
  }
  size_t offset = 0;
  GElf_Nhdr nhdr;
  size_t name_offset = 0;
  size_t desc_offset = 0;
  while ((offset = gelf_getnote(data, offset, &nhdr, &name_offset, &desc_offset)) > 0) {
    const char* base = static_cast<const char*>(data->d_buf);
    if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 &&
        std::memcmp(base + name_offset, "GNU", 4) == 0) {
      return HexString(std::string_view(base + desc_offset, nhdr.n_descsz));
    }
  }
  (void)elf;
  return "";
}

void SortAndDedupe(std::vector<ElfSymbols::Symbol>& symbols) {
  // Sort by address, larger sizes first, so that of several aliases at one address the one
  // that covers the most survives; prefer a sized symbol over a size-0 one.
  std::sort(symbols.begin(), symbols.end(), [](const auto& a, const auto& b) {
    if (a.address != b.address) {
      return a.address < b.address;
    }
    if (a.size != b.size) {
      return a.size > b.size;
    }
    return a.name < b.name;
  });
  symbols.erase(std::unique(symbols.begin(), symbols.end(),
                            [](const auto& a, const auto& b) { return a.address == b.address; }),
                symbols.end());
}

}  // namespace

base::Result<ElfSymbols> ElfSymbols::Load(const std::string& path) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    return base::Error(base::Internal("libelf: {}", elf_errmsg(-1)));
  }
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return base::Error(base::NotFound("cannot open ELF file {}: {}", path, std::strerror(errno)));
  }
  ElfHandle handle(fd, elf_begin(fd, ELF_C_READ_MMAP, nullptr));
  Elf* elf = handle.get();
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) {
    return base::Error(base::InvalidArgument("{} is not an ELF file", path));
  }
  ElfSymbols result;
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) == 0) {
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr phdr;
      if (gelf_getphdr(elf, static_cast<int>(i), &phdr) != nullptr && phdr.p_type == PT_LOAD) {
        result.segments_.push_back({phdr.p_offset, phdr.p_vaddr, phdr.p_filesz});
      }
    }
  }
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) {
      continue;
    }
    if (shdr.sh_type == SHT_SYMTAB || shdr.sh_type == SHT_DYNSYM) {
      if (shdr.sh_type == SHT_SYMTAB) {
        result.has_symtab_ = true;
      }
      ReadSymbolSection(elf, scn, shdr, result.symbols_);
    } else if (shdr.sh_type == SHT_NOTE && result.build_id_.empty()) {
      result.build_id_ = ReadBuildId(elf, scn);
    }
  }
  SortAndDedupe(result.symbols_);
  return result;
}

void ElfSymbols::MergeSymbolsFrom(const ElfSymbols& debug) {
  symbols_.insert(symbols_.end(), debug.symbols_.begin(), debug.symbols_.end());
  SortAndDedupe(symbols_);
  has_symtab_ = has_symtab_ || debug.has_symtab_;
}

std::optional<uint64_t> ElfSymbols::FileOffsetToVaddr(uint64_t file_offset) const {
  for (const Segment& s : segments_) {
    if (file_offset >= s.file_offset && file_offset < s.file_offset + s.file_size) {
      return file_offset - s.file_offset + s.vaddr;
    }
  }
  return std::nullopt;
}

const ElfSymbols::Symbol* ElfSymbols::Find(uint64_t vaddr) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), vaddr,
                             [](uint64_t v, const Symbol& s) { return v < s.address; });
  if (it == symbols_.begin()) {
    return nullptr;
  }
  const Symbol& candidate = *(it - 1);
  if (candidate.size > 0) {
    return vaddr < candidate.address + candidate.size ? &candidate : nullptr;
  }
  // Size unknown: it covers up to the next symbol (assembly stubs, some PLT entries).
  return it == symbols_.end() || vaddr < it->address ? &candidate : nullptr;
}

}  // namespace warpscope::profiling
