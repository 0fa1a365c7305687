// SPDX-License-Identifier: Apache-2.0
#include "profiling/dwarf_lines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "profiling/elf_symbols.h"

namespace warpscope::profiling {
namespace {

std::string_view Dirname(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view(".") : path.substr(0, slash);
}

// Why the file open on `fd` is not the debug file of a binary with GNU build id `want` (raw
// bytes), "" when it is. Without a build id (`want` empty) a readable ELF file is taken: the
// debuglink name is all there is.
std::string RejectDebugFile(int fd, const std::string& want) {
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  size_t sections = 0;
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF || elf_getshdrnum(elf, &sections) != 0) {
    if (elf != nullptr) {
      elf_end(elf);
    }
    return "not a readable ELF file (truncated?)";
  }
  std::string why;
  if (!want.empty()) {
    const void* id = nullptr;
    ssize_t size = dwelf_elf_gnu_build_id(elf, &id);
    if (size <= 0 || static_cast<size_t>(size) != want.size() ||
        std::memcmp(id, want.data(), want.size()) != 0) {
      why = "its build id differs (the debug file of another build)";
    }
  }
  elf_end(elf);
  return why;
}

bool HasDebugInfoSection(Elf* elf) {
  size_t shstrndx = 0;
  if (elf == nullptr || elf_getshdrstrndx(elf, &shstrndx) != 0) {
    return false;
  }
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) {
      continue;
    }
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (name != nullptr &&
        (std::strcmp(name, ".debug_info") == 0 || std::strcmp(name, ".zdebug_info") == 0)) {
      return true;
    }
  }
  return false;
}

// The readable name of a subprogram or inlined subroutine: its (demangled) linkage name, else
// its DW_AT_name, following abstract origins and specifications.
std::string DieName(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
    if (dwarf_attr_integrate(die, at, &attr) != nullptr) {
      if (const char* name = dwarf_formstring(&attr)) {
        return Demangle(name);
      }
    }
  }
  if (dwarf_attr_integrate(die, DW_AT_name, &attr) != nullptr) {
    if (const char* name = dwarf_formstring(&attr)) {
      return name;
    }
  }
  return "";
}

// `file` of the unit `cu` as a normalised absolute path: line tables often name files relative
// to the unit's compilation directory.
std::string SourcePath(Dwarf_Die* cu, const char* file) {
  std::filesystem::path path(file);
  if (path.is_relative() && cu != nullptr) {
    Dwarf_Attribute attr;
    if (const char* dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr))) {
      path = std::filesystem::path(dir) / path;
    }
  }
  return path.lexically_normal().string();
}

// Where the inlined subroutine `die` was called from: its DW_AT_call_file and DW_AT_call_line.
SourceFrame CallSite(Dwarf_Die* die) {
  SourceFrame out;
  Dwarf_Attribute attr;
  Dwarf_Word value = 0;
  if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &value) == 0) {
    out.line = static_cast<int64_t>(value);
  }
  Dwarf_Die cu;
  Dwarf_Files* files = nullptr;
  size_t count = 0;
  if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &value) == 0 &&
      dwarf_diecu(die, &cu, nullptr, nullptr) != nullptr &&
      dwarf_getsrcfiles(&cu, &files, &count) == 0 && value < count) {
    if (const char* file = dwarf_filesrc(files, value, nullptr, nullptr)) {
      out.file = SourcePath(&cu, file);
    }
  }
  return out;
}

}  // namespace

struct DwarfLines::Session {
  Dwfl* dwfl = nullptr;
  Dwfl_Module* module = nullptr;
  Dwarf_Addr elf_bias = 0;  // Dwfl address = link-time vaddr + elf_bias
  std::string path;
  std::string logical_dir;
  std::string debug_root;
  std::string build_id;  // raw bytes
  std::string found_debug_file;
  std::string rejected;  // why the first candidate debug file that exists was not taken
  static const Dwfl_Callbacks kCallbacks;
  ~Session() {
    if (dwfl != nullptr) {
      dwfl_end(dwfl);
    }
  }

  // libdwfl's find_debuginfo callback: the build-id path, then the .gnu_debuglink places.
  static int FindDebuginfo(Dwfl_Module* /*mod*/, void** userdata, const char* /*modname*/,
                           GElf_Addr /*base*/, const char* file_name, const char* debuglink,
                           GElf_Word /*crc*/, char** debuginfo_file_name) {
    auto* self = static_cast<Session*>(*userdata);
    if (self == nullptr) {
      return -1;
    }
    std::vector<std::string> candidates;
    if (!self->build_id.empty()) {
      std::string hex = HexString(self->build_id);
      candidates.push_back(self->debug_root + "/.build-id/" + hex.substr(0, 2) + "/" +
                           hex.substr(2) + ".debug");
    }
    if (debuglink != nullptr && debuglink[0] != '\0' && std::strchr(debuglink, '/') == nullptr) {
      std::string dir(Dirname(file_name != nullptr ? file_name : self->path.c_str()));
      candidates.push_back(dir + "/" + debuglink);
      candidates.push_back(dir + "/.debug/" + debuglink);
      candidates.push_back(self->debug_root + self->logical_dir + "/" + debuglink);
    }
    for (const std::string& candidate : candidates) {
      if (candidate == self->path) {
        continue;  // a debuglink naming the file itself
      }
      int fd = open(candidate.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        continue;
      }
      if (std::string why = RejectDebugFile(fd, self->build_id); !why.empty()) {
        close(fd);
        if (self->rejected.empty()) {
          self->rejected = fmt::format("debug file {}: {}", candidate, why);
        }
        continue;
      }
      self->found_debug_file = candidate;
      *debuginfo_file_name = strdup(candidate.c_str());
      return fd;
    }
    errno = ENOENT;
    return -1;
  }
};

namespace {
char* kNoDebuginfoPath = nullptr;  // our find_debuginfo does not read libdwfl's search path
}  // namespace

const Dwfl_Callbacks DwarfLines::Session::kCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = &DwarfLines::Session::FindDebuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &kNoDebuginfoPath,
};

DwarfLines::~DwarfLines() = default;

base::Result<std::unique_ptr<DwarfLines>> DwarfLines::Open(const std::string& path,
                                                           const std::string& logical_path,
                                                           const Options& options) {
  if (access(path.c_str(), R_OK) != 0) {
    return base::Error(base::NotFound("cannot read {}: {}", path, std::strerror(errno)));
  }
  auto s = std::make_unique<Session>();
  s->path = path;
  s->logical_dir = std::string(Dirname(logical_path.empty() ? path : logical_path));
  if (s->logical_dir == ".") {
    s->logical_dir.clear();
  }
  s->debug_root = options.debug_root;
  while (s->debug_root.size() > 1 && s->debug_root.back() == '/') {
    s->debug_root.pop_back();
  }
  s->dwfl = dwfl_begin(&Session::kCallbacks);
  if (s->dwfl == nullptr) {
    return base::Error(base::Internal("libdwfl: {}", dwfl_errmsg(-1)));
  }
  dwfl_report_begin(s->dwfl);
  s->module = dwfl_report_offline(s->dwfl, "", path.c_str(), -1);
  dwfl_report_end(s->dwfl, nullptr, nullptr);
  if (s->module == nullptr) {
    return base::Error(base::InvalidArgument("{} is not a readable ELF file ({})", path,
                                             dwfl_errmsg(-1)));
  }
  void** userdata = nullptr;
  dwfl_module_info(s->module, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  *userdata = s.get();
  const unsigned char* bits = nullptr;
  GElf_Addr note_vaddr = 0;
  int id_size = dwfl_module_build_id(s->module, &bits, &note_vaddr);
  if (id_size > 0) {
    s->build_id.assign(reinterpret_cast<const char*>(bits), static_cast<size_t>(id_size));
  }
  Elf* elf = dwfl_module_getelf(s->module, &s->elf_bias);
  if (elf == nullptr) {
    return base::Error(base::InvalidArgument("{} is not a readable ELF file ({})", path,
                                             dwfl_errmsg(-1)));
  }
  Dwarf_Addr dwarf_bias = 0;
  Dwarf* dwarf = dwfl_module_getdwarf(s->module, &dwarf_bias);
  if (dwarf == nullptr) {
    if (s->found_debug_file.empty() && !HasDebugInfoSection(elf)) {
      if (!s->rejected.empty()) {
        return base::Error(base::InvalidArgument("{} has no DWARF and its {}: replace or remove it",
                                                 path, s->rejected));
      }
      return base::Error(base::NotFound(
          "{} has no DWARF and no debug file was found (build id, .gnu_debuglink)", path));
    }
    return base::Error(base::InvalidArgument(
        "cannot read the DWARF of {}{}: {}: the file or its debug file is corrupt or truncated",
        path, s->found_debug_file.empty() ? "" : " in " + s->found_debug_file, dwfl_errmsg(-1)));
  }
  // Walk the unit headers once: a truncated or corrupt .debug_info shows here, per file, not
  // as silently missing lines.
  Dwarf_Off offset = 0;
  Dwarf_Off next = 0;
  size_t header_size = 0;
  int rc = 0;
  size_t units = 0;
  while ((rc = dwarf_nextcu(dwarf, offset, &next, &header_size, nullptr, nullptr, nullptr)) == 0) {
    Dwarf_Die unit_die;
    if (dwarf_offdie(dwarf, offset + header_size, &unit_die) == nullptr) {
      rc = -1;  // a header libdw accepts but whose unit cannot be read
      break;
    }
    offset = next;
    ++units;
  }
  if (rc == 1 && units == 0) {
    return base::Error(base::InvalidArgument(
        "corrupt DWARF in {}: .debug_info holds no readable unit",
        s->found_debug_file.empty() ? path : s->found_debug_file));
  }
  if (rc < 0) {
    return base::Error(base::InvalidArgument(
        "corrupt DWARF in {} (unit at offset {}): {}",
        s->found_debug_file.empty() ? path : s->found_debug_file, offset, dwarf_errmsg(-1)));
  }
  std::unique_ptr<DwarfLines> out(new DwarfLines());
  out->debug_file_ = s->found_debug_file;
  out->session_ = std::move(s);
  out->max_cached_ = options.max_cached_addresses;
  return out;
}

std::vector<SourceFrame> DwarfLines::Read(uint64_t vaddr) {
  Dwfl_Module* module = session_->module;
  const Dwarf_Addr addr = vaddr + session_->elf_bias;
  SourceFrame current;
  if (Dwfl_Line* line = dwfl_module_getsrc(module, addr)) {
    int lineno = 0;
    if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
      current.file = SourcePath(dwfl_linecu(line), file);
      current.line = lineno;
    }
  }
  std::vector<SourceFrame> out;
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(module, addr, &bias);
  Dwarf_Die* scopes = nullptr;
  int count = cu == nullptr ? 0 : dwarf_getscopes(cu, addr - bias, &scopes);
  if (count < 0 && lookup_error_.empty()) {
    lookup_error_ = fmt::format("address 0x{:x}: {}", vaddr, dwarf_errmsg(-1));
  }
  // The scopes as the DWARF nests them, innermost first: blocks, inlined subroutines, the
  // subprogram the code was compiled into, the unit.
  Dwarf_Die* chain = nullptr;
  int depth = count > 0 ? dwarf_getscopes_die(&scopes[0], &chain) : 0;
  for (int i = 0; i < depth; ++i) {
    int tag = dwarf_tag(&chain[i]);
    if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram) {
      continue;
    }
    current.function = DieName(&chain[i]);
    out.push_back(std::move(current));
    if (tag == DW_TAG_subprogram) {
      break;
    }
    current = CallSite(&chain[i]);
  }
  std::free(chain);
  std::free(scopes);
  if (out.empty() && !current.file.empty()) {
    out.push_back(std::move(current));  // a line table without subprogram entries
  }
  return out;
}

const std::vector<SourceFrame>& DwarfLines::Lookup(uint64_t vaddr) {
  auto it = cache_.find(vaddr);
  if (it != cache_.end()) {
    return it->second;
  }
  if (cache_.size() >= max_cached_) {
    cache_.clear();
  }
  ++lookups_;
  return cache_.emplace(vaddr, Read(vaddr)).first->second;
}

}  // namespace warpscope::profiling
