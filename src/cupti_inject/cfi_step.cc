// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/cfi_step.h"

#include <algorithm>
#include <cstring>

#include "cupti_inject/stack_capture.h"

// libgcc's FDE lookup (see code_ranges.cc): the FDE covering pc; bases->func is the start of the
// function it covers.
struct dwarf_eh_bases {
  void* tbase;
  void* dbase;
  void* func;
};
extern "C" const void* _Unwind_Find_FDE(void* pc, dwarf_eh_bases* bases);

namespace warpscope::cupti_inject {

#if defined(__x86_64__)
namespace {

constexpr int kRegRbp = 6;
constexpr int kRegRsp = 7;
constexpr size_t kMaxStates = 8;  // DW_CFA_remember_state depth

// Bounded reader over [p, end): a read past the end fails the whole parse.
struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;

  uint8_t U8() {
    if (p >= end) {
      ok = false;
      return 0;
    }
    return *p++;
  }
  uint64_t Fixed(size_t n) {
    if (static_cast<size_t>(end - p) < n) {
      ok = false;
      p = end;
      return 0;
    }
    uint64_t v = 0;
    std::memcpy(&v, p, n);  // little-endian
    p += n;
    return v;
  }
  uint64_t Uleb() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t b = U8();
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        return v;
      }
    }
    ok = false;
    return 0;
  }
  int64_t Sleb() {
    int64_t v = 0;
    int shift = 0;
    uint8_t b = 0;
    do {
      b = U8();
      v |= static_cast<int64_t>(b & 0x7f) << shift;
      shift += 7;
    } while ((b & 0x80) != 0 && shift < 64 && ok);
    if (shift < 64 && (b & 0x40) != 0) {
      v |= -(int64_t{1} << shift);
    }
    return v;
  }
  // Skips a pointer in DW_EH_PE encoding `enc` (only its size matters here).
  void SkipEncoded(uint8_t enc) {
    if (enc == 0xff) {
      return;  // DW_EH_PE_omit
    }
    switch (enc & 0x0f) {
      case 0x00:
        Fixed(8);
        break;  // absptr
      case 0x01:
        Uleb();
        break;
      case 0x09:
        Sleb();
        break;
      case 0x02:
      case 0x0a:
        Fixed(2);
        break;
      case 0x03:
      case 0x0b:
        Fixed(4);
        break;
      case 0x04:
      case 0x0c:
        Fixed(8);
        break;
      default:
        ok = false;
    }
  }
};

// Where a register of the caller is found.
struct Rule {
  enum Kind : uint8_t { kSame, kOffset, kValOffset, kUndefined, kUnknown } kind = kSame;
  int64_t offset = 0;
};

struct Row {
  int cfa_reg = kRegRsp;
  int64_t cfa_offset = 8;
  bool cfa_unsupported = false;
  Rule rbp;
  Rule ra;
};

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t ra_reg = 16;
  uint8_t fde_enc = 0;
  bool has_z = false;
  Cursor insns{nullptr, nullptr};
};

bool ParseCie(const uint8_t* cie, Cie* out) {
  uint32_t len;
  std::memcpy(&len, cie, 4);
  if (len == 0 || len == 0xffffffffu) {
    return false;  // a terminator or a 64-bit entry
  }
  Cursor c{cie + 4, cie + 4 + len};
  if (c.Fixed(4) != 0) {
    return false;  // not a CIE
  }
  const uint8_t version = c.U8();
  const char* aug = reinterpret_cast<const char*>(c.p);
  const size_t aug_len = strnlen(aug, static_cast<size_t>(c.end - c.p));
  c.p += aug_len + 1;
  if (!c.ok || c.p > c.end || std::strstr(aug, "eh") != nullptr) {
    return false;
  }
  out->code_align = c.Uleb();
  out->data_align = c.Sleb();
  out->ra_reg = version == 1 ? c.U8() : c.Uleb();
  if (aug[0] == 'z') {
    out->has_z = true;
    const uint64_t n = c.Uleb();
    if (n > static_cast<uint64_t>(c.end - c.p)) {
      return false;
    }
    const uint8_t* data_end = c.p + n;
    for (size_t i = 1; i < aug_len && c.ok; ++i) {
      switch (aug[i]) {
        case 'R':
          out->fde_enc = c.U8();
          break;
        case 'P':
          c.SkipEncoded(c.U8());
          break;
        case 'L':
          c.U8();
          break;
        case 'S':
        case 'B':
          break;
        default:
          i = aug_len;
          break;  // unknown letters: the length lets us skip the rest
      }
    }
    c.p = data_end;
  } else if (aug[0] != '\0') {
    return false;
  }
  out->insns = Cursor{c.p, c.end};
  return c.ok;
}

Rule* RuleFor(Row* row, uint64_t reg, uint64_t ra_reg) {
  if (reg == kRegRbp) {
    return &row->rbp;
  }
  if (reg == ra_reg) {
    return &row->ra;
  }
  return nullptr;  // registers a step does not need
}

// The rule DW_CFA_restore goes back to: the CIE's, or "same value" inside the CIE itself.
Rule InitialRule(const Row* initial, uint64_t reg, uint64_t ra_reg) {
  if (initial == nullptr) {
    return Rule{};
  }
  return reg == kRegRbp ? initial->rbp : reg == ra_reg ? initial->ra : Rule{};
}

// Runs call-frame instructions until the location passes `target`. `initial` is the row after
// the CIE's instructions (DW_CFA_restore's reference). Returns false on anything unsupported.
bool Execute(Cursor c, const Cie& cie, uintptr_t loc, uintptr_t target, const Row* initial,
             Row* row) {
  Row stack[kMaxStates];
  size_t depth = 0;
  while (c.p < c.end && c.ok) {
    const uint8_t op = c.U8();
    const uint8_t hi = op & 0xc0;
    const uint8_t lo = op & 0x3f;
    uint64_t advance = 0;
    if (hi == 0x40) {  // DW_CFA_advance_loc
      advance = lo;
    } else if (hi == 0x80) {  // DW_CFA_offset
      const int64_t off = static_cast<int64_t>(c.Uleb()) * cie.data_align;
      if (Rule* r = RuleFor(row, lo, cie.ra_reg)) *r = {Rule::kOffset, off};
      continue;
    } else if (hi == 0xc0) {  // DW_CFA_restore
      if (Rule* r = RuleFor(row, lo, cie.ra_reg)) *r = InitialRule(initial, lo, cie.ra_reg);
      continue;
    } else {
      switch (op) {
        case 0x00:
          break;  // nop
        case 0x02:
          advance = c.U8();
          break;  // advance_loc1
        case 0x03:
          advance = c.Fixed(2);
          break;  // advance_loc2
        case 0x04:
          advance = c.Fixed(4);
          break;  // advance_loc4
        case 0x05:
        case 0x11: {  // offset_extended(_sf)
          const uint64_t reg = c.Uleb();
          const int64_t off = op == 0x05 ? static_cast<int64_t>(c.Uleb()) * cie.data_align
                                         : c.Sleb() * cie.data_align;
          if (Rule* r = RuleFor(row, reg, cie.ra_reg)) *r = {Rule::kOffset, off};
          break;
        }
        case 0x06: {  // restore_extended
          const uint64_t reg = c.Uleb();
          if (Rule* r = RuleFor(row, reg, cie.ra_reg)) *r = InitialRule(initial, reg, cie.ra_reg);
          break;
        }
        case 0x07:
        case 0x08: {  // undefined, same_value
          const uint64_t reg = c.Uleb();
          if (Rule* r = RuleFor(row, reg, cie.ra_reg)) {
            *r = {op == 0x07 ? Rule::kUndefined : Rule::kSame, 0};
          }
          break;
        }
        case 0x09: {  // register: value in another register
          const uint64_t reg = c.Uleb();
          c.Uleb();
          if (Rule* r = RuleFor(row, reg, cie.ra_reg)) *r = {Rule::kUnknown, 0};
          break;
        }
        case 0x0a:  // remember_state
          if (depth == kMaxStates) return false;
          stack[depth++] = *row;
          break;
        case 0x0b:  // restore_state
          if (depth == 0) return false;
          *row = stack[--depth];
          break;
        case 0x0c:
        case 0x12:  // def_cfa(_sf)
          row->cfa_reg = static_cast<int>(c.Uleb());
          row->cfa_offset = op == 0x0c ? static_cast<int64_t>(c.Uleb()) : c.Sleb() * cie.data_align;
          row->cfa_unsupported = false;
          break;
        case 0x0d:  // def_cfa_register
          row->cfa_reg = static_cast<int>(c.Uleb());
          break;
        case 0x0e:  // def_cfa_offset
          row->cfa_offset = static_cast<int64_t>(c.Uleb());
          break;
        case 0x13:  // def_cfa_offset_sf
          row->cfa_offset = c.Sleb() * cie.data_align;
          break;
        case 0x0f:  // def_cfa_expression
          row->cfa_unsupported = true;
          c.p += std::min<uint64_t>(c.Uleb(), static_cast<uint64_t>(c.end - c.p));
          break;
        case 0x10:
        case 0x16: {  // expression, val_expression
          const uint64_t reg = c.Uleb();
          c.p += std::min<uint64_t>(c.Uleb(), static_cast<uint64_t>(c.end - c.p));
          if (Rule* r = RuleFor(row, reg, cie.ra_reg)) *r = {Rule::kUnknown, 0};
          break;
        }
        case 0x14:
        case 0x15: {  // val_offset(_sf)
          const uint64_t reg = c.Uleb();
          const int64_t off = op == 0x14 ? static_cast<int64_t>(c.Uleb()) * cie.data_align
                                         : c.Sleb() * cie.data_align;
          if (Rule* r = RuleFor(row, reg, cie.ra_reg)) *r = {Rule::kValOffset, off};
          break;
        }
        case 0x2e:  // GNU_args_size
          c.Uleb();
          break;
        case 0x2f: {  // GNU_negative_offset_extended
          const uint64_t reg = c.Uleb();
          const int64_t off = -static_cast<int64_t>(c.Uleb()) * cie.data_align;
          if (Rule* r = RuleFor(row, reg, cie.ra_reg)) *r = {Rule::kOffset, off};
          break;
        }
        default:
          return false;  // DW_CFA_set_loc (an encoded address) and anything else
      }
    }
    if (advance != 0) {
      loc += advance * cie.code_align;
      if (loc > target) {
        break;
      }
    }
  }
  return c.ok;
}

bool ReadStackWord(const StackBounds& b, uintptr_t addr, uintptr_t* out) {
  if ((addr & 7) != 0 || addr < b.low || addr + 8 > b.high) {
    return false;
  }
  *out = *reinterpret_cast<const uintptr_t*>(addr);
  return true;
}

}  // namespace

CfiStepResult CfiStep(const StackBounds& bounds, CfiRegs* regs, uintptr_t* ra_slot) {
  if (regs->pc == 0 || bounds.high == 0) {
    return CfiStepResult::kUnsupported;
  }
  dwarf_eh_bases bases;
  const auto* fde =
      static_cast<const uint8_t*>(_Unwind_Find_FDE(reinterpret_cast<void*>(regs->pc - 1), &bases));
  if (fde == nullptr) {
    return CfiStepResult::kNoEntry;
  }
  uint32_t len;
  int32_t cie_delta;
  std::memcpy(&len, fde, 4);
  std::memcpy(&cie_delta, fde + 4, 4);
  if (len == 0xffffffffu || len < 8) {
    return CfiStepResult::kUnsupported;
  }
  Cie cie;
  if (!ParseCie(fde + 4 - cie_delta, &cie)) {
    return CfiStepResult::kUnsupported;
  }
  Cursor c{fde + 8, fde + 4 + len};
  c.SkipEncoded(cie.fde_enc);         // pc_begin (bases.func holds it decoded)
  c.SkipEncoded(cie.fde_enc & 0x0f);  // pc_range: the same size, never relative
  if (cie.has_z) {
    const uint64_t n = c.Uleb();
    c.p += std::min<uint64_t>(n, static_cast<uint64_t>(c.end - c.p));
  }
  if (!c.ok) {
    return CfiStepResult::kUnsupported;
  }
  const auto func = reinterpret_cast<uintptr_t>(bases.func);
  const uintptr_t target = regs->pc - 1;
  Row initial;
  if (!Execute(cie.insns, cie, func, target, nullptr, &initial)) {
    return CfiStepResult::kUnsupported;
  }
  Row row = initial;
  if (!Execute(c, cie, func, target, &initial, &row) || row.cfa_unsupported) {
    return CfiStepResult::kUnsupported;
  }
  uintptr_t base = 0;
  if (row.cfa_reg == kRegRsp) {
    base = regs->sp;
  } else if (row.cfa_reg == kRegRbp && regs->fp != 0) {
    base = regs->fp;
  } else {
    return CfiStepResult::kUnsupported;
  }
  const uintptr_t cfa = base + static_cast<uintptr_t>(row.cfa_offset);
  if (row.ra.kind == Rule::kUndefined) {
    return CfiStepResult::kEnd;
  }
  if (row.ra.kind != Rule::kOffset || cfa <= regs->sp || cfa > bounds.high) {
    return CfiStepResult::kUnsupported;  // the stack only grows toward its base
  }
  const uintptr_t slot = cfa + static_cast<uintptr_t>(row.ra.offset);
  uintptr_t ra = 0;
  if (!ReadStackWord(bounds, slot, &ra)) {
    return CfiStepResult::kUnsupported;
  }
  uintptr_t fp = regs->fp;
  switch (row.rbp.kind) {
    case Rule::kSame:
      break;
    case Rule::kOffset:
      if (!ReadStackWord(bounds, cfa + static_cast<uintptr_t>(row.rbp.offset), &fp)) fp = 0;
      break;
    case Rule::kValOffset:
      fp = cfa + static_cast<uintptr_t>(row.rbp.offset);
      break;
    default:
      fp = 0;
  }
  if (ra == 0) {
    return CfiStepResult::kUnsupported;  // the outermost frame says so in its entry, not by a 0
  }
  regs->pc = ra;
  regs->sp = cfa;
  regs->fp = fp;
  if (ra_slot != nullptr) {
    *ra_slot = slot;
  }
  return CfiStepResult::kOk;
}

#else

CfiStepResult CfiStep(const StackBounds&, CfiRegs*, uintptr_t*) {
  return CfiStepResult::kUnsupported;
}

#endif

}  // namespace warpscope::cupti_inject
