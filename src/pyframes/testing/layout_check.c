/* SPDX-License-Identifier: Apache-2.0
 * Compiled once per installed CPython against that version's own headers (internal ones
 * included): compares every offset of layout_tables.h with offsetof() and sizeof() and prints
 * each mismatch. Exit 0 when all agree. ctest: pyframes_layout_<version>. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030b0000
#include "internal/pycore_frame.h"
#endif
#include "internal/pycore_interp.h"
#include "internal/pycore_runtime.h"

#include "pyframes/layout_tables.h"

static int g_failures = 0;
static int g_checked = 0;

static void Check(const char* what, size_t table, size_t real) {
  ++g_checked;
  if (table != real) {
    printf("MISMATCH %s: table %zu, headers %zu\n", what, table, real);
    ++g_failures;
  }
}
#define CHECK(field, expr) Check(#field, (size_t)(t->field), (size_t)(expr))
#define SLOT(field, member) Check("slot " #field, (size_t)s->field * 8, offsetof(_Py_DebugOffsets, member))

int main(void) {
  printf("CPython %s headers\n", PY_VERSION);
#if PY_VERSION_HEX >= 0x030d0000
  /* 3.13+: the reader's slot indices into _Py_DebugOffsets, and the compact-str facts it assumes. */
#if PY_VERSION_HEX >= 0x030e0000
  const WsPyDebugSlots* s = &kWsPyDebugSlots314;
#else
  const WsPyDebugSlots* s = &kWsPyDebugSlots313;
#endif
  SLOT(version, version);
  SLOT(free_threaded, free_threaded);
  SLOT(tstate_size, thread_state.size);
  SLOT(tstate_current_frame, thread_state.current_frame);
  SLOT(frame_size, interpreter_frame.size);
  SLOT(frame_previous, interpreter_frame.previous);
  SLOT(frame_executable, interpreter_frame.executable);
  SLOT(frame_instr_ptr, interpreter_frame.instr_ptr);
  SLOT(frame_owner, interpreter_frame.owner);
  SLOT(code_size, code_object.size);
  SLOT(code_filename, code_object.filename);
  SLOT(code_name, code_object.name);
  SLOT(code_qualname, code_object.qualname);
  SLOT(code_linetable, code_object.linetable);
  SLOT(code_firstlineno, code_object.firstlineno);
  SLOT(code_adaptive, code_object.co_code_adaptive);
  SLOT(pyobject_ob_type, pyobject.ob_type);
  SLOT(bytes_ob_size, bytes_object.ob_size);
  SLOT(bytes_ob_sval, bytes_object.ob_sval);
  SLOT(unicode_state, unicode_object.state);
  SLOT(unicode_length, unicode_object.length);
  SLOT(unicode_ascii_size, unicode_object.asciiobject_size);
  SLOT(runtime_size, runtime_state.size);
  SLOT(runtime_interpreters_head, runtime_state.interpreters_head);
  SLOT(interp_size, interpreter_state.size);
  SLOT(interp_next, interpreter_state.next);
  SLOT(interp_threads_head, interpreter_state.threads_head);
  SLOT(tstate_next, thread_state.next);
  SLOT(tstate_thread_id, thread_state.thread_id);
  SLOT(tstate_native_thread_id, thread_state.native_thread_id);
  Check("debug offsets size", (size_t)s->total * 8, sizeof(_Py_DebugOffsets));
  Check("utf8_length follows PyASCIIObject", sizeof(PyASCIIObject),
        offsetof(PyCompactUnicodeObject, utf8_length));
  Check("utf8 after utf8_length", sizeof(PyASCIIObject) + 8,
        offsetof(PyCompactUnicodeObject, utf8));
  Check("PyCompactUnicodeObject size", sizeof(PyASCIIObject) + 16, sizeof(PyCompactUnicodeObject));
  Check("PyASCIIObject size", 40, sizeof(PyASCIIObject));
  Check("ob_type", 8, offsetof(PyObject, ob_type));
  Check("FRAME_OWNED_BY_GENERATOR", 1, FRAME_OWNED_BY_GENERATOR);
  Check("FRAME_OWNED_BY_CSTACK", 3, FRAME_OWNED_BY_CSTACK);
#else
#if PY_VERSION_HEX >= 0x030c0000
  const WsPyLayoutTable* t = &kWsPyLayout312;
#elif PY_VERSION_HEX >= 0x030b0000
  const WsPyLayoutTable* t = &kWsPyLayout311;
#elif PY_VERSION_HEX >= 0x030a0000
  const WsPyLayoutTable* t = &kWsPyLayout310;
#else
  const WsPyLayoutTable* t = &kWsPyLayout39;
#endif
  CHECK(major, PY_MAJOR_VERSION);
  CHECK(minor, PY_MINOR_VERSION);
#if PY_VERSION_HEX < 0x030b0000
  CHECK(tstate_frame, offsetof(PyThreadState, frame));
  CHECK(frame_back, offsetof(PyFrameObject, f_back));
  CHECK(frame_code, offsetof(PyFrameObject, f_code));
  CHECK(frame_lasti, offsetof(PyFrameObject, f_lasti));
  Check("f_lasti is an int", 4, sizeof(((PyFrameObject*)0)->f_lasti));
#if PY_VERSION_HEX < 0x030a0000
  CHECK(code_linetable, offsetof(PyCodeObject, co_lnotab));
#else
  CHECK(code_linetable, offsetof(PyCodeObject, co_linetable));
#endif
#else
  CHECK(tstate_frame, offsetof(PyThreadState, cframe));
  CHECK(cframe_current_frame, offsetof(_PyCFrame, current_frame));
  CHECK(frame_back, offsetof(_PyInterpreterFrame, previous));
  CHECK(frame_code, offsetof(_PyInterpreterFrame, f_code));
  CHECK(frame_instr, offsetof(_PyInterpreterFrame, prev_instr));
  CHECK(frame_owner, offsetof(_PyInterpreterFrame, owner));
  Check("owner is a char", 1, sizeof(((_PyInterpreterFrame*)0)->owner));
  Check("FRAME_OWNED_BY_GENERATOR", 1, FRAME_OWNED_BY_GENERATOR);
#if PY_VERSION_HEX >= 0x030c0000
  Check("FRAME_OWNED_BY_CSTACK", 3, FRAME_OWNED_BY_CSTACK);
#endif
  CHECK(code_qualname, offsetof(PyCodeObject, co_qualname));
  CHECK(code_linetable, offsetof(PyCodeObject, co_linetable));
  CHECK(code_adaptive, offsetof(PyCodeObject, co_code_adaptive));
  CHECK(code_firsttraceable, offsetof(PyCodeObject, _co_firsttraceable));
  Check("_Py_CODEUNIT is 2 bytes", 2, sizeof(_Py_CODEUNIT));
#endif
#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030c0000
  CHECK(frame_is_entry, offsetof(_PyInterpreterFrame, is_entry));
  Check("is_entry is a bool", 1, sizeof(((_PyInterpreterFrame*)0)->is_entry));
#else
  CHECK(frame_is_entry, WS_PY_NONE);
#endif
  /* Finding a thread's state in another process. */
  CHECK(runtime_interpreters_head, offsetof(_PyRuntimeState, interpreters.head));
  CHECK(interp_next, offsetof(PyInterpreterState, next));
#if PY_VERSION_HEX >= 0x030b0000
  CHECK(interp_threads_head, offsetof(PyInterpreterState, threads.head));
  CHECK(tstate_native_thread_id, offsetof(PyThreadState, native_thread_id));
  Check("native_thread_id is 8 bytes", 8, sizeof(((PyThreadState*)0)->native_thread_id));
#else
  CHECK(interp_threads_head, offsetof(PyInterpreterState, tstate_head));
  CHECK(tstate_native_thread_id, WS_PY_NONE);
#endif
  CHECK(tstate_next, offsetof(PyThreadState, next));
  CHECK(tstate_thread_id, offsetof(PyThreadState, thread_id));
  Check("thread_id is 8 bytes", 8, sizeof(((PyThreadState*)0)->thread_id));
  CHECK(code_filename, offsetof(PyCodeObject, co_filename));
  CHECK(code_name, offsetof(PyCodeObject, co_name));
  CHECK(code_firstlineno, offsetof(PyCodeObject, co_firstlineno));
  CHECK(bytes_size, offsetof(PyBytesObject, ob_base.ob_size));
  CHECK(bytes_data, offsetof(PyBytesObject, ob_sval));
  CHECK(unicode_length, offsetof(PyASCIIObject, length));
  CHECK(unicode_state, offsetof(PyASCIIObject, state));
  CHECK(unicode_ascii_size, sizeof(PyASCIIObject));
  CHECK(unicode_utf8, offsetof(PyCompactUnicodeObject, utf8));
  CHECK(unicode_utf8_length, offsetof(PyCompactUnicodeObject, utf8_length));
  CHECK(unicode_compact_size, sizeof(PyCompactUnicodeObject));
  Check("ob_type", 8, offsetof(PyObject, ob_type));
#endif
  {
    /* The str state bit fields the reader decodes (kind:3 after interned:2, then compact,
     * ascii): set them through the compiler's own bit-field layout and compare. */
    PyASCIIObject probe;
    unsigned int bits = 0;
    memset(&probe, 0, sizeof(probe));
    probe.state.kind = 4;
    probe.state.compact = 1;
    probe.state.ascii = 1;
    memcpy(&bits, &probe.state, sizeof(bits));
    Check("state kind/compact/ascii bits", (4u << 2) | (1u << 5) | (1u << 6), bits);
  }
  printf("%d checked, %d mismatches\n", g_checked, g_failures);
  return g_failures == 0 ? 0 : 1;
}
