// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/unwinder.h"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <set>
#include <utility>

#include "base/logging.h"

namespace warpscope::agent::cpu_profiler {

// One process's Dwfl and the sample being unwound through it (the callbacks' argument).
struct Unwinder::ProcessDwfl {
  Dwfl* dwfl = nullptr;
  uint64_t generation = 0;
  bool attached = false;
  std::list<uint32_t>::iterator lru;
  // The current sample.
  uint32_t tid = 0;
  const DwarfRegs* regs = nullptr;  // the initial registers of this walk
  uint32_t known = 0;               // which of them are known (bit = DWARF number)
  uint64_t stack_sp = 0;            // the sampled sp: where the stack copy starts
  std::span<const uint8_t> stack;
  // Set when a read failed: libdwfl then ends the stack as if it were complete (a callback
  // cannot set dwfl_errno), so this is what tells a truncated stack from a whole one.
  bool read_failed = false;

  ~ProcessDwfl() {
    if (dwfl != nullptr) {
      dwfl_end(dwfl);
    }
  }
};

namespace {

char* kDebuginfoPath = nullptr;  // libdwfl's default search path

constexpr uint32_t kAllRegs = (1u << kUserRegCount) - 1;
// The registers a call preserves (System V x86-64, DWARF numbers): rbx, rbp, r12..r15.
constexpr int kCalleeSaved[] = {3, 6, 12, 13, 14, 15};

const Dwfl_Callbacks kCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &kDebuginfoPath,
};

pid_t NextThread(Dwfl*, void* arg, void** thread_arg) {
  if (*thread_arg != nullptr) {
    return 0;
  }
  *thread_arg = arg;
  return static_cast<pid_t>(static_cast<Unwinder::ProcessDwfl*>(arg)->tid);
}

bool GetThread(Dwfl*, pid_t tid, void* arg, void** thread_arg) {
  *thread_arg = arg;
  return true;
}

// A word of the mapped file's contents at `addr`, through the PT_LOAD segment holding it.
bool ReadFromElf(Dwfl* dwfl, Dwarf_Addr addr, Dwarf_Word* result) {
  Dwfl_Module* module = dwfl_addrmodule(dwfl, addr);
  if (module == nullptr) {
    return false;
  }
  Dwarf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(module, &bias);
  size_t size = 0;
  const char* raw = elf == nullptr ? nullptr : elf_rawfile(elf, &size);
  size_t phnum = 0;
  if (raw == nullptr || elf_getphdrnum(elf, &phnum) != 0) {
    return false;
  }
  const Dwarf_Addr vaddr = addr - bias;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr || phdr.p_type != PT_LOAD) {
      continue;
    }
    if (vaddr >= phdr.p_vaddr && vaddr + sizeof(Dwarf_Word) <= phdr.p_vaddr + phdr.p_filesz) {
      const uint64_t offset = phdr.p_offset + (vaddr - phdr.p_vaddr);
      if (offset + sizeof(Dwarf_Word) > size) {
        return false;
      }
      std::memcpy(result, raw + offset, sizeof(Dwarf_Word));
      return true;
    }
  }
  return false;
}

bool MemoryRead(Dwfl* dwfl, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
  auto* p = static_cast<Unwinder::ProcessDwfl*>(arg);
  const uint64_t sp = p->stack_sp;
  if (addr >= sp && addr - sp + sizeof(Dwarf_Word) <= p->stack.size()) {
    std::memcpy(result, p->stack.data() + (addr - sp), sizeof(Dwarf_Word));
    return true;
  }
  if (ReadFromElf(dwfl, addr, result)) {
    return true;
  }
  p->read_failed = true;
  return false;
}

bool SetInitialRegisters(Dwfl_Thread* thread, void* arg) {
  const auto* p = static_cast<Unwinder::ProcessDwfl*>(arg);
  Dwarf_Word regs[kUserRegCount];
  for (int i = 0; i < kUserRegCount; ++i) {
    regs[i] = (*p->regs)[static_cast<size_t>(i)];
  }
  dwfl_thread_state_register_pc(thread, regs[16]);
  if (p->known == kAllRegs) {
    return dwfl_thread_state_registers(thread, 0, kUserRegCount, regs);
  }
  // Resuming past a trampoline: only the registers it leaves known; the others stay unknown.
  for (int i = 0; i < kUserRegCount - 1; ++i) {
    if ((p->known & (1u << i)) != 0 && !dwfl_thread_state_registers(thread, i, 1, &regs[i])) {
      return false;
    }
  }
  return true;
}

const Dwfl_Thread_Callbacks kThreadCallbacks = {
    .next_thread = NextThread,
    .get_thread = GetThread,
    .memory_read = MemoryRead,
    .set_initial_registers = SetInitialRegisters,
    .detach = nullptr,
    .thread_detach = nullptr,
};

// The load bias of `path` mapped at `start` from file offset `offset`: where its vaddr 0 lands.
// nullopt when the file is not ELF or no PT_LOAD holds the offset.
std::optional<uint64_t> LoadBias(const std::string& path, uint64_t start, uint64_t offset,
                                 bool& is_exec) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return std::nullopt;
  }
  std::optional<uint64_t> bias;
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  GElf_Ehdr ehdr;
  size_t phnum = 0;
  if (elf != nullptr && gelf_getehdr(elf, &ehdr) != nullptr && elf_getphdrnum(elf, &phnum) == 0) {
    is_exec = ehdr.e_type == ET_EXEC;
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr phdr;
      if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr || phdr.p_type != PT_LOAD) {
        continue;
      }
      const uint64_t page_offset = phdr.p_offset & ~uint64_t{0xfff};
      if (offset >= page_offset && offset < phdr.p_offset + phdr.p_filesz) {
        bias = start - (phdr.p_vaddr - phdr.p_offset + offset);
        break;
      }
    }
  }
  if (elf != nullptr) {
    elf_end(elf);
  }
  close(fd);
  return bias;
}

}  // namespace

Unwinder::Unwinder(Options options) : options_(std::move(options)) { elf_version(EV_CURRENT); }

Unwinder::~Unwinder() = default;

Unwinder::ProcessDwfl* Unwinder::DwflFor(const ProcessInfo& process) {
  auto it = dwfls_.find(process.pid);
  ProcessDwfl* p = nullptr;
  if (it != dwfls_.end()) {
    p = it->second.get();
    lru_.splice(lru_.begin(), lru_, p->lru);
    if (p->generation == process.maps_generation && p->attached) {
      return p;
    }
  } else {
    auto owned = std::make_unique<ProcessDwfl>();
    p = owned.get();
    lru_.push_front(process.pid);
    p->lru = lru_.begin();
    dwfls_.emplace(process.pid, std::move(owned));
    while (dwfls_.size() > options_.max_processes) {
      dwfls_.erase(lru_.back());
      lru_.pop_back();
    }
  }
  // (Re-)report the modules: a fresh Dwfl, since libdwfl keeps a thread state per Dwfl and
  // cannot re-attach one.
  if (p->dwfl != nullptr) {
    dwfl_end(p->dwfl);
  }
  p->dwfl = dwfl_begin(&kCallbacks);
  p->attached = false;
  p->generation = process.maps_generation;
  ++stats_.reports;
  if (p->dwfl == nullptr) {
    return p;
  }
  dwfl_report_begin(p->dwfl);
  std::set<std::string> reported;
  for (const profiling::MapEntry& m : process.maps) {
    if (m.path.empty() || m.path[0] != '/' || !reported.insert(m.path).second) {
      continue;  // one module per file: its lowest executable mapping places it
    }
    // Through the process's root first (containers), then the host's view of the path.
    std::string candidates[] = {
        fmt::format("{}/proc/{}/root{}", options_.host_root, process.pid, m.path),
        options_.host_root + m.path};
    for (const std::string& path : candidates) {
      bool is_exec = false;
      std::optional<uint64_t> bias = LoadBias(path, m.start, m.file_offset, is_exec);
      if (!bias) {
        continue;
      }
      if (dwfl_report_elf(p->dwfl, m.path.c_str(), path.c_str(), -1, is_exec ? 0 : *bias, true) !=
          nullptr) {
        break;
      }
    }
  }
  dwfl_report_end(p->dwfl, nullptr, nullptr);
  p->attached =
      dwfl_attach_state(p->dwfl, nullptr, static_cast<pid_t>(process.pid), &kThreadCallbacks, p);
  if (!p->attached) {
    ++stats_.attach_failures;
    WARPSCOPE_LOG_FIRST_N(WARNING, 5, "CPU profiler: cannot unwind pid {}: {}", process.pid,
                          dwfl_errmsg(-1));
  }
  return p;
}

namespace {

// What a frame's registers were, for a step past a trampoline that ends libdwfl's walk there.
struct FrameState {
  size_t index = 0;         // in the walk's pcs
  uint64_t pc = 0;          // as libdwfl gave it
  bool activation = false;  // pc is the interrupted instruction (else a return address)
  uint32_t known = 0;       // bits of `regs` known (DWARF numbers)
  DwarfRegs regs{};         // sp and the callee-saved registers only
};

struct FrameCollector {
  std::vector<uint64_t>* pcs;
  // The frames outside every reported module (JIT code); null: not kept.
  std::vector<FrameState>* states;
  Dwfl* dwfl;
  size_t max_frames;
  bool resumed = false;  // this walk starts at a return address (past a trampoline)
};

int OnFrame(Dwfl_Frame* frame, void* arg) {
  auto* c = static_cast<FrameCollector*>(arg);
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(frame, &pc, &activation)) {
    return DWARF_CB_ABORT;
  }
  if (c->resumed) {
    activation = false;  // the initial frame of a resumed walk is the trampoline's caller
    c->resumed = false;
  }
  c->pcs->push_back(activation || pc == 0 ? pc : pc - 1);
  if (c->states == nullptr || dwfl_addrmodule(c->dwfl, pc) != nullptr) {
    return c->pcs->size() >= c->max_frames ? DWARF_CB_ABORT : DWARF_CB_OK;
  }
  FrameState state;
  state.index = c->pcs->size() - 1;
  state.pc = pc;
  state.activation = activation;
  Dwarf_Word value = 0;
  if (dwfl_frame_reg(frame, 7, &value) == 0) {
    state.regs[7] = value;
    state.known |= 1u << 7;
  }
  for (int r : kCalleeSaved) {
    if (dwfl_frame_reg(frame, static_cast<unsigned>(r), &value) == 0) {
      state.regs[static_cast<size_t>(r)] = value;
      state.known |= 1u << r;
    }
  }
  c->states->push_back(state);
  return c->pcs->size() >= c->max_frames ? DWARF_CB_ABORT : DWARF_CB_OK;
}

// Offsets in CPython's x86-64 perf trampoline (Python/asm_trampoline.S, 3.12 and 3.13):
// 0 sub $8,%rsp; 4 call *%rcx; 6 add $8,%rsp; 10 ret. 11 bytes.
constexpr uint64_t kCpythonTrampolineSize = 11;

// The registers of the caller of a CPython trampoline frame `f` whose code starts at `start`;
// nullopt when `f` is not inside it or a read leaves the stack copy.
std::optional<std::pair<DwarfRegs, uint32_t>> StepOverCpythonTrampoline(
    const FrameState& f, uint64_t start, uint64_t stack_sp, std::span<const uint8_t> stack) {
  if ((f.known & (1u << 7)) == 0 || f.pc < start || f.pc >= start + kCpythonTrampolineSize) {
    return std::nullopt;
  }
  const uint64_t offset = f.pc - start;
  // Inside the call (a return address at offset 6, or interrupted at 4 or 6) the return address
  // into the caller sits above the 8 bytes of padding; before the sub or at the ret, at sp.
  const uint64_t sp = f.regs[7];
  const uint64_t ra_at = offset >= 4 && offset <= 6 ? sp + 8 : sp;
  if (!f.activation && offset != 6) {
    return std::nullopt;  // a return address can only follow the call
  }
  if (ra_at < stack_sp || ra_at - stack_sp + 8 > stack.size()) {
    return std::nullopt;
  }
  DwarfRegs regs = f.regs;
  uint32_t known = f.known;
  std::memcpy(&regs[16], stack.data() + (ra_at - stack_sp), 8);
  regs[7] = ra_at + 8;
  known |= 1u << 16;
  return std::make_pair(regs, known);
}

std::string MappingAt(const ProcessInfo& process, uint64_t address) {
  for (const profiling::MapEntry& m : process.maps) {
    if (address >= m.start && address < m.end) {
      return m.path;
    }
  }
  return "";
}

}  // namespace

UnwindResult Unwinder::Unwind(const ProcessInfo& process, uint32_t tid, const DwarfRegs& regs,
                              std::span<const uint8_t> stack) {
  ++stats_.unwinds;
  UnwindResult result;
  ProcessDwfl* p = DwflFor(process);
  if (p->dwfl == nullptr || !p->attached) {
    result.pcs.push_back(regs[16]);
    result.stopped_in = MappingAt(process, regs[16]);
    ++stats_.truncated;
    return result;
  }
  p->tid = tid;
  p->regs = &regs;
  p->known = kAllRegs;
  p->stack_sp = regs[7];
  p->stack = stack;
  p->read_failed = false;
  std::vector<FrameState> states;
  FrameCollector collector{&result.pcs, options_.jit ? &states : nullptr, p->dwfl,
                           options_.max_frames};
  int rc = dwfl_getthread_frames(p->dwfl, static_cast<pid_t>(tid), OnFrame, &collector);
  // rc 0: the outermost frame was reached (its return address is undefined in the CFI).
  result.complete = rc == 0 && !p->read_failed && result.pcs.size() < options_.max_frames;
  // Past CPython's perf trampolines: the first one of the walk ends it (libdwfl's frame-pointer
  // step beyond it is a guess from an rbp the trampoline never set), the walk resumes at its
  // caller.
  size_t from = 0;  // in `states`: the JIT frames not looked at yet
  for (int step = 0;
       !states.empty() && step < kMaxTrampolineSteps && result.pcs.size() < options_.max_frames;
       ++step) {
    std::optional<std::pair<DwarfRegs, uint32_t>> caller;
    size_t at = from;
    for (; at < states.size() && !caller; ++at) {
      const profiling::PerfMapSymbol* jit = options_.jit(process.pid, states[at].pc);
      if (jit != nullptr && jit->name.starts_with("py::") && jit->size == kCpythonTrampolineSize) {
        caller = StepOverCpythonTrampoline(states[at], jit->start, p->stack_sp, stack);
        if (!caller) {
          break;
        }
      }
    }
    if (!caller) {
      break;
    }
    // `at` is one past the trampoline's state: drop the frames after the trampoline's.
    result.pcs.resize(states[at - 1].index + 1);
    states.resize(at);
    from = at;
    ++stats_.trampoline_steps;
    p->regs = &caller->first;
    p->known = caller->second;
    p->read_failed = false;
    collector.resumed = true;
    rc = dwfl_getthread_frames(p->dwfl, static_cast<pid_t>(tid), OnFrame, &collector);
    result.complete = rc == 0 && !p->read_failed && result.pcs.size() < options_.max_frames;
  }
  p->regs = nullptr;
  p->stack = {};
  if (result.pcs.empty()) {
    result.pcs.push_back(regs[16]);
  }
  if (!result.complete) {
    ++stats_.truncated;
    result.stopped_in = MappingAt(process, result.pcs.back());
  }
  return result;
}

void Unwinder::Forget(uint32_t pid) {
  auto it = dwfls_.find(pid);
  if (it != dwfls_.end()) {
    lru_.erase(it->second->lru);
    dwfls_.erase(it);
  }
}

}  // namespace warpscope::agent::cpu_profiler
