// SPDX-License-Identifier: Apache-2.0
// The only exported symbol of libwarpscope_cupti.so (exports.map): the CUDA driver dlopens the
// library named by CUDA_INJECTION64_PATH during cuInit and calls InitializeInjection.
#include "cupti_inject/profiler.h"

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  return warpscope::cupti_inject::InitializeInjectionOnce();
}
