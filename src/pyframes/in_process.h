// SPDX-License-Identifier: Apache-2.0
// Finds the CPython interpreter loaded in this process (libpython or a python executable that
// exports its symbols), never linking it: symbols come from dlsym(RTLD_DEFAULT). Probing calls
// dlsym and, before 3.11, Py_GetVersion() once; it is not for the read path. Reading a thread's
// state afterwards is PyGILState_GetThisThreadState(), a thread-specific-storage read that is
// valid without the GIL (the GIL-state TSS keeps the thread's state while it is detached).
#ifndef WARPSCOPE_PYFRAMES_IN_PROCESS_H_
#define WARPSCOPE_PYFRAMES_IN_PROCESS_H_

#include <cstdint>

#include "pyframes/frame_reader.h"
#include "pyframes/layout.h"

namespace warpscope::pyframes {

enum class ProbeResult {
  kNoPython,     // no interpreter in the process (yet)
  kReady,        // `interp` and `this_thread_state` are usable
  kUnsupported,  // an interpreter whose layout is unknown: `error` says why
};

struct InProcessPython {
  Interpreter interp;
  void* (*this_thread_state)() = nullptr;  // PyGILState_GetThisThreadState
  int major = 0;
  int minor = 0;
  LayoutError error = LayoutError::kOk;
};

// Looks for the interpreter; fills `out` (always its version when one is found).
ProbeResult ProbeInProcess(InProcessPython* out);

// "3.11" from "3.11.2 (main, ...)"; false when `version` does not start with digits.digits.
bool ParseVersion(const char* version, int* major, int* minor);

}  // namespace warpscope::pyframes

#endif  // WARPSCOPE_PYFRAMES_IN_PROCESS_H_
