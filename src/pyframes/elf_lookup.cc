// SPDX-License-Identifier: Apache-2.0
#include "pyframes/elf_lookup.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace warpscope::pyframes {
namespace {

constexpr uint64_t kMaxTable = uint64_t{256} << 20;  // symbol or string tables larger are skipped
constexpr uint64_t kMaxNotes = 64 << 10;

class File {
 public:
  explicit File(const std::string& path) : fd_(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~File() {
    if (fd_ >= 0) {
      close(fd_);
    }
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  bool ok() const { return fd_ >= 0; }
  bool Read(uint64_t offset, void* dst, size_t len) const {
    auto* p = static_cast<char*>(dst);
    while (len > 0) {
      const ssize_t got = pread(fd_, p, len, static_cast<off_t>(offset));
      if (got <= 0) {
        return false;
      }
      p += got;
      offset += static_cast<uint64_t>(got);
      len -= static_cast<size_t>(got);
    }
    return true;
  }

 private:
  int fd_;
};

ElfError ReadHeader(const File& f, Elf64_Ehdr* eh) {
  if (!f.ok()) {
    return ElfError::kOpen;
  }
  if (!f.Read(0, eh, sizeof(*eh)) || std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) {
    return ElfError::kNotElf;
  }
  if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB) {
    return ElfError::kUnsupported;
  }
  return ElfError::kOk;
}

std::string Hex(const uint8_t* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += kDigits[p[i] >> 4];
    s += kDigits[p[i] & 15];
  }
  return s;
}

// The NT_GNU_BUILD_ID descriptor in a PT_NOTE segment's bytes, "" when absent.
std::string BuildIdIn(const std::vector<uint8_t>& notes) {
  size_t at = 0;
  while (at + sizeof(Elf64_Nhdr) <= notes.size()) {
    Elf64_Nhdr nh;
    std::memcpy(&nh, notes.data() + at, sizeof(nh));
    const size_t name_at = at + sizeof(nh);
    const size_t desc_at = name_at + ((nh.n_namesz + 3) & ~3u);
    const size_t next = desc_at + ((nh.n_descsz + 3) & ~3u);
    if (next > notes.size()) {
      break;
    }
    if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
        std::memcmp(notes.data() + name_at, "GNU", 4) == 0) {
      return Hex(notes.data() + desc_at, nh.n_descsz);
    }
    at = next;
  }
  return "";
}

}  // namespace

ElfError ReadElfInfo(const std::string& path, ElfInfo* out) {
  File f(path);
  Elf64_Ehdr eh;
  if (const ElfError e = ReadHeader(f, &eh); e != ElfError::kOk) {
    return e;
  }
  *out = ElfInfo{};
  out->is_dyn = eh.e_type == ET_DYN;
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 256) {
    return ElfError::kUnsupported;
  }
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (!f.Read(eh.e_phoff, ph.data(), ph.size() * sizeof(Elf64_Phdr))) {
    return ElfError::kTruncated;
  }
  for (const Elf64_Phdr& p : ph) {
    if (p.p_type == PT_LOAD) {
      out->loads.push_back({p.p_offset, p.p_vaddr, p.p_filesz, p.p_align});
    } else if (p.p_type == PT_NOTE && out->build_id.empty() && p.p_filesz <= kMaxNotes) {
      std::vector<uint8_t> notes(p.p_filesz);
      if (f.Read(p.p_offset, notes.data(), notes.size())) {
        out->build_id = BuildIdIn(notes);
      }
    }
  }
  return ElfError::kOk;
}

ElfError LookupElfSymbols(const std::string& path, const std::vector<std::string_view>& names,
                          bool symtab, std::vector<uint64_t>* values) {
  values->assign(names.size(), 0);
  File f(path);
  Elf64_Ehdr eh;
  if (const ElfError e = ReadHeader(f, &eh); e != ElfError::kOk) {
    return e;
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shnum > 4096) {
    return ElfError::kUnsupported;
  }
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  if (!f.Read(eh.e_shoff, sh.data(), sh.size() * sizeof(Elf64_Shdr))) {
    return ElfError::kTruncated;
  }
  size_t found = 0;
  for (uint32_t type : {uint32_t{SHT_DYNSYM}, uint32_t{SHT_SYMTAB}}) {
    if (type == SHT_SYMTAB && !symtab) {
      break;
    }
    for (const Elf64_Shdr& s : sh) {
      if (s.sh_type != type || s.sh_link >= sh.size() || s.sh_entsize != sizeof(Elf64_Sym) ||
          s.sh_size > kMaxTable || sh[s.sh_link].sh_size > kMaxTable) {
        continue;
      }
      const Elf64_Shdr& strs = sh[s.sh_link];
      std::vector<char> str(strs.sh_size + 1, '\0');
      std::vector<Elf64_Sym> syms(s.sh_size / sizeof(Elf64_Sym));
      if (!f.Read(strs.sh_offset, str.data(), strs.sh_size) ||
          !f.Read(s.sh_offset, syms.data(), syms.size() * sizeof(Elf64_Sym))) {
        continue;
      }
      for (const Elf64_Sym& sym : syms) {
        if (sym.st_name >= strs.sh_size || sym.st_shndx == SHN_UNDEF || sym.st_value == 0) {
          continue;
        }
        const std::string_view name(str.data() + sym.st_name);
        for (size_t i = 0; i < names.size(); ++i) {
          if ((*values)[i] == 0 && names[i] == name) {
            (*values)[i] = sym.st_value;
            if (++found == names.size()) {
              return ElfError::kOk;
            }
          }
        }
      }
    }
  }
  return ElfError::kOk;
}

bool LoadBias(const ElfInfo& info, uint64_t map_start, uint64_t map_offset, uint64_t* bias) {
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  for (const ElfLoad& l : info.loads) {
    if ((l.offset & ~(page - 1)) == map_offset) {
      *bias = map_start - (l.vaddr & ~(page - 1));
      return true;
    }
  }
  return false;
}

}  // namespace warpscope::pyframes
