/* SPDX-License-Identifier: Apache-2.0
 * The CPython 3.9-3.12 struct offsets the frame reader uses (x86-64 and aarch64 LP64, default
 * GIL builds, release or debug-less ABI). Plain C as well as C++: layout_check.c compiles this
 * header next to each installed interpreter's own headers and compares every field with
 * offsetof() (ctest pyframes_layout_<version>). Sources: the headers named in each comment;
 * docs/design/python-frames.md lists them and what CI confirms. 3.13+ take their offsets from
 * the interpreter's _Py_DebugOffsets at run time (layout.cc), not from here. */
#ifndef WARPSCOPE_PYFRAMES_LAYOUT_TABLES_H_
#define WARPSCOPE_PYFRAMES_LAYOUT_TABLES_H_

#include <stdint.h>

/* How a code object maps instruction offsets to lines. */
enum {
  WS_PY_LINES_LNOTAB = 0,    /* 3.9 co_lnotab: (addr delta, signed line delta) byte pairs */
  WS_PY_LINES_LINETABLE = 1, /* 3.10 co_linetable: (addr delta, line delta or -128) pairs */
  WS_PY_LINES_LOCATIONS = 2  /* 3.11+ location table (Objects/locations.md) */
};

/* How the thread state leads to the innermost frame, and what a frame is. */
enum {
  WS_PY_FRAMES_OBJECT = 0, /* 3.9/3.10: tstate->frame, a PyFrameObject with f_lasti */
  WS_PY_FRAMES_CFRAME = 1, /* 3.11/3.12: tstate->cframe->current_frame (_PyInterpreterFrame) */
  WS_PY_FRAMES_CURRENT = 2 /* 3.13+: tstate->current_frame (_PyInterpreterFrame) */
};

/* Offsets in bytes; 0xffff: the field does not exist in that version. */
#define WS_PY_NONE 0xffff

typedef struct WsPyLayoutTable {
  uint8_t major, minor;
  uint8_t frames; /* WS_PY_FRAMES_* */
  uint8_t lines;  /* WS_PY_LINES_* */
  /* PyThreadState */
  uint16_t tstate_frame;         /* frame / cframe / current_frame */
  uint16_t cframe_current_frame; /* _PyCFrame.current_frame (3.11/3.12) */
  /* PyFrameObject (3.9/3.10) or _PyInterpreterFrame (3.11+) */
  uint16_t frame_back;  /* f_back / previous */
  uint16_t frame_code;  /* f_code / f_executable */
  uint16_t frame_lasti; /* f_lasti, an int (3.9: bytes, 3.10: code units) */
  uint16_t frame_instr; /* prev_instr (3.11/3.12) / instr_ptr (3.13+), a _Py_CODEUNIT* */
  uint16_t frame_owner; /* owner, a char (3.11+) */
  /* PyCodeObject */
  uint16_t code_filename;
  uint16_t code_name;
  uint16_t code_qualname;       /* 3.11+ */
  uint16_t code_firstlineno;    /* an int */
  uint16_t code_linetable;      /* co_lnotab (3.9) / co_linetable (3.10+), a bytes object */
  uint16_t code_adaptive;       /* co_code_adaptive: the bytecode, inline (3.11+) */
  uint16_t code_firsttraceable; /* _co_firsttraceable, an int (3.11+) */
  /* PyBytesObject */
  uint16_t bytes_size;
  uint16_t bytes_data;
  /* PyASCIIObject / PyCompactUnicodeObject */
  uint16_t unicode_length;
  uint16_t unicode_state;
  uint16_t unicode_ascii_size;   /* sizeof(PyASCIIObject): compact ASCII data follows */
  uint16_t unicode_utf8;         /* PyCompactUnicodeObject.utf8 (char*, may be NULL) */
  uint16_t unicode_utf8_length;  /* PyCompactUnicodeObject.utf8_length */
  uint16_t unicode_compact_size; /* sizeof(PyCompactUnicodeObject): compact data follows */
  /* _PyInterpreterFrame.is_entry, a bool (3.11 only: the frame a native eval-loop call began
   * with; 3.12+ mark that with an entry frame owned by the C stack instead) */
  uint16_t frame_is_entry;
  /* Finding a thread's state in another process (Include/internal/pycore_runtime.h,
   * pycore_interp.h, cpython/pystate.h): _PyRuntimeState.interpreters.head,
   * PyInterpreterState.next, .tstate_head (3.9/3.10) / .threads.head (3.11+),
   * PyThreadState.next, .thread_id (pthread_self()), .native_thread_id (3.11+ only). */
  uint16_t runtime_interpreters_head;
  uint16_t interp_next;
  uint16_t interp_threads_head;
  uint16_t tstate_next;
  uint16_t tstate_thread_id;
  uint16_t tstate_native_thread_id;
} WsPyLayoutTable;

/* Include/cpython/pystate.h (struct _ts), Include/cpython/frameobject.h (3.9) or
 * Include/internal/pycore_frame.h (3.10 struct _frame), Include/cpython/code.h,
 * Include/cpython/bytesobject.h, Include/cpython/unicodeobject.h of 3.9.18. */
static const WsPyLayoutTable kWsPyLayout39 = {
    .major = 3,
    .minor = 9,
    .frames = WS_PY_FRAMES_OBJECT,
    .lines = WS_PY_LINES_LNOTAB,
    .tstate_frame = 24,
    .cframe_current_frame = WS_PY_NONE,
    .frame_back = 24,
    .frame_code = 32,
    .frame_lasti = 104,
    .frame_instr = WS_PY_NONE,
    .frame_owner = WS_PY_NONE,
    .code_filename = 104,
    .code_name = 112,
    .code_qualname = WS_PY_NONE,
    .code_firstlineno = 40,
    .code_linetable = 120,
    .code_adaptive = WS_PY_NONE,
    .code_firsttraceable = WS_PY_NONE,
    .bytes_size = 16,
    .bytes_data = 32,
    .unicode_length = 16,
    .unicode_state = 32,
    .unicode_ascii_size = 48,
    .unicode_utf8 = 56,
    .unicode_utf8_length = 48,
    .unicode_compact_size = 72,
    .frame_is_entry = WS_PY_NONE,
    .runtime_interpreters_head = 32,
    .interp_next = 0,
    .interp_threads_head = 8,
    .tstate_next = 8,
    .tstate_thread_id = 176,
    .tstate_native_thread_id = WS_PY_NONE,
};

/* The same headers of 3.10.13 (struct _frame lost f_valuestack's neighbours: f_lasti moved). */
static const WsPyLayoutTable kWsPyLayout310 = {
    .major = 3,
    .minor = 10,
    .frames = WS_PY_FRAMES_OBJECT,
    .lines = WS_PY_LINES_LINETABLE,
    .tstate_frame = 24,
    .cframe_current_frame = WS_PY_NONE,
    .frame_back = 24,
    .frame_code = 32,
    .frame_lasti = 96,
    .frame_instr = WS_PY_NONE,
    .frame_owner = WS_PY_NONE,
    .code_filename = 104,
    .code_name = 112,
    .code_qualname = WS_PY_NONE,
    .code_firstlineno = 40,
    .code_linetable = 120,
    .code_adaptive = WS_PY_NONE,
    .code_firsttraceable = WS_PY_NONE,
    .bytes_size = 16,
    .bytes_data = 32,
    .unicode_length = 16,
    .unicode_state = 32,
    .unicode_ascii_size = 48,
    .unicode_utf8 = 56,
    .unicode_utf8_length = 48,
    .unicode_compact_size = 72,
    .frame_is_entry = WS_PY_NONE,
    .runtime_interpreters_head = 32,
    .interp_next = 0,
    .interp_threads_head = 8,
    .tstate_next = 8,
    .tstate_thread_id = 176,
    .tstate_native_thread_id = WS_PY_NONE,
};

/* 3.11.2 (Debian) and 3.11.7: Include/cpython/pystate.h (_PyCFrame), Include/internal/
 * pycore_frame.h (_PyInterpreterFrame: f_func, f_globals, f_builtins, f_locals, f_code,
 * frame_obj, previous, prev_instr, stacktop, is_entry, owner), Include/cpython/code.h. */
static const WsPyLayoutTable kWsPyLayout311 = {
    .major = 3,
    .minor = 11,
    .frames = WS_PY_FRAMES_CFRAME,
    .lines = WS_PY_LINES_LOCATIONS,
    .tstate_frame = 56,
    .cframe_current_frame = 8,
    .frame_back = 48,
    .frame_code = 32,
    .frame_lasti = WS_PY_NONE,
    .frame_instr = 56,
    .frame_owner = 69,
    .code_filename = 112,
    .code_name = 120,
    .code_qualname = 128,
    .code_firstlineno = 72,
    .code_linetable = 136,
    .code_adaptive = 184,
    .code_firsttraceable = 168,
    .bytes_size = 16,
    .bytes_data = 32,
    .unicode_length = 16,
    .unicode_state = 32,
    .unicode_ascii_size = 48,
    .unicode_utf8 = 56,
    .unicode_utf8_length = 48,
    .unicode_compact_size = 72,
    .frame_is_entry = 68,
    .runtime_interpreters_head = 40,
    .interp_next = 0,
    .interp_threads_head = 16,
    .tstate_next = 8,
    .tstate_thread_id = 152,
    .tstate_native_thread_id = 160,
};

/* 3.12.1: _PyInterpreterFrame starts with f_code, previous; PyASCIIObject lost wstr (40 bytes);
 * _PyCFrame holds current_frame first. */
static const WsPyLayoutTable kWsPyLayout312 = {
    .major = 3,
    .minor = 12,
    .frames = WS_PY_FRAMES_CFRAME,
    .lines = WS_PY_LINES_LOCATIONS,
    .tstate_frame = 56,
    .cframe_current_frame = 0,
    .frame_back = 8,
    .frame_code = 0,
    .frame_lasti = WS_PY_NONE,
    .frame_instr = 56,
    .frame_owner = 70,
    .code_filename = 112,
    .code_name = 120,
    .code_qualname = 128,
    .code_firstlineno = 68,
    .code_linetable = 136,
    .code_adaptive = 192,
    .code_firsttraceable = 176,
    .bytes_size = 16,
    .bytes_data = 32,
    .unicode_length = 16,
    .unicode_state = 32,
    .unicode_ascii_size = 40,
    .unicode_utf8 = 48,
    .unicode_utf8_length = 40,
    .unicode_compact_size = 56,
    .frame_is_entry = WS_PY_NONE,
    .runtime_interpreters_head = 40,
    .interp_next = 0,
    .interp_threads_head = 72,
    .tstate_next = 8,
    .tstate_thread_id = 136,
    .tstate_native_thread_id = 144,
};

/* 3.13+: where each field the reader needs sits in _Py_DebugOffsets (the struct at the start of
 * _PyRuntime), counted in uint64_t slots: the struct is all uint64_t after the 8-byte cookie,
 * which takes slot 0. 3.13: Include/internal/pycore_runtime.h of 3.13.0 (checked against
 * offsetof() by pyframes_layout_3.13). 3.14: Include/internal/pycore_debug_offsets.h of the 3.14
 * sources, which add threads_main, code_object_generation and tlbc_generation to the
 * interpreter state, stackpointer and tlbc_index to the frame, co_tlbc to the code object and
 * a set-object block before the dict block: unverified against a real 3.14. */
typedef struct WsPyDebugSlots {
  uint32_t version, free_threaded;
  uint32_t tstate_size, tstate_current_frame;
  uint32_t frame_size, frame_previous, frame_executable, frame_instr_ptr, frame_owner;
  uint32_t code_size, code_filename, code_name, code_qualname, code_linetable, code_firstlineno,
      code_adaptive;
  uint32_t pyobject_ob_type;
  uint32_t bytes_ob_size, bytes_ob_sval;
  uint32_t unicode_state, unicode_length, unicode_ascii_size;
  uint32_t total; /* slots to read */
  /* Finding a thread's state: runtime_state.interpreters_head, interpreter_state.{size, next,
   * threads_head}, thread_state.{next, thread_id, native_thread_id}, runtime_state.size. */
  uint32_t runtime_interpreters_head, interp_size, interp_next, interp_threads_head;
  uint32_t tstate_next, tstate_thread_id, tstate_native_thread_id, runtime_size;
} WsPyDebugSlots;

static const WsPyDebugSlots kWsPyDebugSlots313 = {1,  2,  19, 23, 28, 29, 30, 31, 33, 34, 35,
                                                  36, 37, 38, 39, 43, 45, 65, 66, 68, 69, 70,
                                                  73, 5,  6,  8,  9,  21, 24, 25, 3};
static const WsPyDebugSlots kWsPyDebugSlots314 = {1,  2,  22, 26, 31, 32, 33, 34, 36, 39, 40,
                                                  41, 42, 43, 44, 48, 51, 75, 76, 78, 79, 80,
                                                  95, 5,  6,  8,  9,  24, 27, 28, 3};

#endif /* WARPSCOPE_PYFRAMES_LAYOUT_TABLES_H_ */
