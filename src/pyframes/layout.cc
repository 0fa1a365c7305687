// SPDX-License-Identifier: Apache-2.0
#include "pyframes/layout.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>

namespace warpscope::pyframes {
namespace {

Layout FromTable(const WsPyLayoutTable& t) {
  Layout l;
  l.major = t.major;
  l.minor = t.minor;
  l.frames = t.frames;
  l.lines = t.lines;
  l.tstate_frame = t.tstate_frame;
  l.cframe_current_frame = t.cframe_current_frame;
  l.frame_back = t.frame_back;
  l.frame_code = t.frame_code;
  l.frame_lasti = t.frame_lasti;
  l.frame_instr = t.frame_instr;
  l.frame_owner = t.frame_owner;
  l.code_filename = t.code_filename;
  l.code_name = t.code_name;
  l.code_qualname = t.code_qualname;
  l.code_firstlineno = t.code_firstlineno;
  l.code_linetable = t.code_linetable;
  l.code_adaptive = t.code_adaptive;
  l.code_firsttraceable = t.code_firsttraceable;
  l.bytes_size = t.bytes_size;
  l.bytes_data = t.bytes_data;
  l.unicode_length = t.unicode_length;
  l.unicode_state = t.unicode_state;
  l.unicode_ascii_size = t.unicode_ascii_size;
  l.unicode_utf8 = t.unicode_utf8;
  l.unicode_utf8_length = t.unicode_utf8_length;
  l.unicode_compact_size = t.unicode_compact_size;
  l.frame_is_entry = t.frame_is_entry;
  l.runtime_interpreters_head = t.runtime_interpreters_head;
  l.interp_next = t.interp_next;
  l.interp_threads_head = t.interp_threads_head;
  l.tstate_next = t.tstate_next;
  l.tstate_thread_id = t.tstate_thread_id;
  l.tstate_native_thread_id = t.tstate_native_thread_id;
  l.unicode_has_ready = t.minor <= 11;
  l.owner_not_python = t.minor >= 12 ? 3 : 0xff;
  return l;
}

using DebugSlots = WsPyDebugSlots;
constexpr uint32_t kMaxSlots = 128;

}  // namespace

const char* LayoutErrorName(LayoutError e) {
  switch (e) {
    case LayoutError::kOk:
      return "ok";
    case LayoutError::kUnknownVersion:
      return "no frame layout for this CPython version";
    case LayoutError::kUnreadable:
      return "_PyRuntime's debug offsets could not be read";
    case LayoutError::kBadCookie:
      return "_PyRuntime does not start with the debug-offsets cookie";
    case LayoutError::kVersionMismatch:
      return "the debug offsets describe another CPython version";
    case LayoutError::kFreeThreaded:
      return "free-threaded CPython builds are not supported";
    case LayoutError::kImplausible:
      return "the CPython layout has implausible offsets";
  }
  return "?";
}

LayoutError LayoutForVersion(int major, int minor, Layout* out) {
  if (major != 3) {
    return LayoutError::kUnknownVersion;
  }
  const WsPyLayoutTable* t = nullptr;
  switch (minor) {
    case 9:
      t = &kWsPyLayout39;
      break;
    case 10:
      t = &kWsPyLayout310;
      break;
    case 11:
      t = &kWsPyLayout311;
      break;
    case 12:
      t = &kWsPyLayout312;
      break;
    default:
      return LayoutError::kUnknownVersion;
  }
  *out = FromTable(*t);
  return FinishLayout(out);
}

LayoutError LayoutFromDebugOffsets(MemoryReader& mem, uint64_t runtime_addr, int major, int minor,
                                   Layout* out) {
  if (major != 3 || (minor != 13 && minor != 14)) {
    return LayoutError::kUnknownVersion;
  }
  const DebugSlots& s = minor == 13 ? kWsPyDebugSlots313 : kWsPyDebugSlots314;
  uint64_t v[kMaxSlots];
  static_assert(sizeof(v) >= 95 * sizeof(uint64_t));
  if (!mem.Read(runtime_addr, v, s.total * sizeof(uint64_t))) {
    return LayoutError::kUnreadable;
  }
  if (std::memcmp(&v[0], "xdebugpy", 8) != 0) {
    return LayoutError::kBadCookie;
  }
  // PY_VERSION_HEX: 0xMMmmpprs.
  if ((v[s.version] >> 24) != 3 || ((v[s.version] >> 16) & 0xff) != static_cast<uint64_t>(minor)) {
    return LayoutError::kVersionMismatch;
  }
  if (v[s.free_threaded] != 0) {
    return LayoutError::kFreeThreaded;
  }
  // Facts of the ABI every version keeps: ob_type follows ob_refcnt; PyASCIIObject is 40 bytes
  // (no wstr since 3.12); every field lies inside its struct.
  if (v[s.pyobject_ob_type] != 8 || v[s.unicode_ascii_size] != 40) {
    return LayoutError::kImplausible;
  }
  for (uint32_t f : {s.frame_previous, s.frame_executable, s.frame_instr_ptr, s.frame_owner}) {
    if (v[f] >= v[s.frame_size]) {
      return LayoutError::kImplausible;
    }
  }
  for (uint32_t f : {s.code_filename, s.code_name, s.code_qualname, s.code_linetable,
                     s.code_firstlineno, s.code_adaptive}) {
    if (v[f] >= v[s.code_size] + 8) {  // co_code_adaptive is the flexible tail
      return LayoutError::kImplausible;
    }
  }
  for (uint32_t f :
       {s.tstate_current_frame, s.tstate_next, s.tstate_thread_id, s.tstate_native_thread_id}) {
    if (v[f] >= v[s.tstate_size]) {
      return LayoutError::kImplausible;
    }
  }
  if (v[s.interp_next] >= v[s.interp_size] || v[s.interp_threads_head] >= v[s.interp_size] ||
      v[s.runtime_interpreters_head] >= v[s.runtime_size]) {
    return LayoutError::kImplausible;
  }
  Layout l;
  l.major = 3;
  l.minor = minor;
  l.frames = WS_PY_FRAMES_CURRENT;
  l.lines = WS_PY_LINES_LOCATIONS;
  auto u32 = [&](uint32_t slot) { return static_cast<uint32_t>(v[slot]); };
  l.tstate_frame = u32(s.tstate_current_frame);
  l.frame_back = u32(s.frame_previous);
  l.frame_code = u32(s.frame_executable);
  l.frame_instr = u32(s.frame_instr_ptr);
  l.frame_owner = u32(s.frame_owner);
  l.code_filename = u32(s.code_filename);
  l.code_name = u32(s.code_name);
  l.code_qualname = u32(s.code_qualname);
  l.code_firstlineno = u32(s.code_firstlineno);
  l.code_linetable = u32(s.code_linetable);
  l.code_adaptive = u32(s.code_adaptive);
  l.bytes_size = u32(s.bytes_ob_size);
  l.bytes_data = u32(s.bytes_ob_sval);
  l.unicode_length = u32(s.unicode_length);
  l.unicode_state = u32(s.unicode_state);
  l.unicode_ascii_size = u32(s.unicode_ascii_size);
  // PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8 (Include/cpython/
  // unicodeobject.h, 3.12+; not in the debug offsets).
  l.unicode_utf8_length = l.unicode_ascii_size;
  l.unicode_utf8 = l.unicode_ascii_size + 8;
  l.unicode_compact_size = l.unicode_ascii_size + 16;
  l.runtime_interpreters_head = u32(s.runtime_interpreters_head);
  l.interp_next = u32(s.interp_next);
  l.interp_threads_head = u32(s.interp_threads_head);
  l.tstate_next = u32(s.tstate_next);
  l.tstate_thread_id = u32(s.tstate_thread_id);
  l.tstate_native_thread_id = u32(s.tstate_native_thread_id);
  l.code_tag_mask = minor >= 14 ? 3 : 0;
  l.owner_not_python = 3;
  *out = l;
  return FinishLayout(out);
}

LayoutError FinishLayout(Layout* l) {
  auto end = [](std::initializer_list<uint32_t> fields, uint32_t width) {
    uint32_t e = 0;
    for (uint32_t f : fields) {
      if (f != kNoField) {
        e = std::max(e, f + width);
      }
    }
    return e;
  };
  l->frame_read_size =
      std::max({end({l->frame_back, l->frame_code, l->frame_instr}, 8), end({l->frame_lasti}, 4),
                end({l->frame_owner, l->frame_is_entry}, 1)});
  l->code_read_size =
      std::max(end({l->code_filename, l->code_name, l->code_qualname, l->code_linetable}, 8),
               end({l->code_firstlineno, l->code_firsttraceable}, 4));
  const bool sane = l->frame_back != kNoField && l->frame_code != kNoField &&
                    l->tstate_frame != kNoField && l->code_filename != kNoField &&
                    l->code_name != kNoField && l->code_linetable != kNoField &&
                    l->code_firstlineno != kNoField && l->frame_read_size <= 512 &&
                    l->code_read_size <= 512 && l->unicode_compact_size <= 128 &&
                    (l->frame_lasti != kNoField || l->frame_instr != kNoField) &&
                    (l->frame_instr == kNoField || l->code_adaptive != kNoField);
  return sane ? LayoutError::kOk : LayoutError::kImplausible;
}

}  // namespace warpscope::pyframes
