// SPDX-License-Identifier: Apache-2.0
#include "pyframes/in_process.h"

#include <dlfcn.h>

namespace warpscope::pyframes {

bool ParseVersion(const char* v, int* major, int* minor) {
  if (v == nullptr) {
    return false;
  }
  int parts[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    if (*v < '0' || *v > '9') {
      return false;
    }
    while (*v >= '0' && *v <= '9') {
      parts[i] = parts[i] * 10 + (*v++ - '0');
      if (parts[i] > 1000) {
        return false;
      }
    }
    if (i == 0 && *v++ != '.') {
      return false;
    }
  }
  *major = parts[0];
  *minor = parts[1];
  return true;
}

ProbeResult ProbeInProcess(InProcessPython* out) {
  auto* this_thread_state =
      reinterpret_cast<void* (*)()>(dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState"));
  const void* code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
  const void* unicode_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
  if (this_thread_state == nullptr || code_type == nullptr || unicode_type == nullptr) {
    return ProbeResult::kNoPython;
  }
  // Py_Version (3.11+): PY_VERSION_HEX as data; older ones only have Py_GetVersion().
  if (const auto* hex = static_cast<const unsigned long*>(dlsym(RTLD_DEFAULT, "Py_Version"))) {
    out->major = static_cast<int>((*hex >> 24) & 0xff);
    out->minor = static_cast<int>((*hex >> 16) & 0xff);
  } else {
    auto* get_version = reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "Py_GetVersion"));
    if (get_version == nullptr || !ParseVersion(get_version(), &out->major, &out->minor)) {
      out->error = LayoutError::kUnknownVersion;
      return ProbeResult::kUnsupported;
    }
  }
  out->interp.code_type = reinterpret_cast<uint64_t>(code_type);
  out->interp.unicode_type = reinterpret_cast<uint64_t>(unicode_type);
  out->this_thread_state = this_thread_state;
  if (out->major == 3 && out->minor >= 13) {
    const void* runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
    LocalMemoryReader local;  // _PyRuntime is the interpreter's own mapped data
    out->error = runtime == nullptr
                     ? LayoutError::kUnreadable
                     : LayoutFromDebugOffsets(local, reinterpret_cast<uint64_t>(runtime),
                                              out->major, out->minor, &out->interp.layout);
  } else {
    out->error = LayoutForVersion(out->major, out->minor, &out->interp.layout);
  }
  return out->error == LayoutError::kOk ? ProbeResult::kReady : ProbeResult::kUnsupported;
}

}  // namespace warpscope::pyframes
