// SPDX-License-Identifier: Apache-2.0
// src/cupti/abi.h against CUPTI 11.8's headers (Debian's libcupti-dev, fetched into the build
// tree by scripts/fetch-nvidia-test-files.sh), for every layout the library reads from an older
// libcupti: the callback and resource data, the shared prefixes of the kernel and memcpy records
// (Kernel8 and Memcpy5 there), the memory record (Memory3), Memset4, Marker2, the 56-byte PC record's fields, cbids and enum
// values. cupti.h needs cuda.h: the CUDA 13 image's is found after the 11.8 headers. Compiled,
// never run: the compile is the ctest (cupti_abi_cupti118_check).
#include <cupti.h>
#include <cupti_pcsampling.h>

#include "cupti/abi.h"
#include "nvidia/abi_check.h"
#include "nvidia/cupti_abi_common.inc"

static_assert(CUPTI_API_VERSION == 18, "these checks are for the CUPTI 11.8 headers");

WS_KERNEL_PREFIX(::CUpti_ActivityKernel8);
WS_MEMCPY_PREFIX(::CUpti_ActivityMemcpy5);
// The 11.8 memory record (Memory3) is 13.0's Memory4 without the trailing source.
WS_MEMORY_PREFIX(::CUpti_ActivityMemory3);
static_assert(offsetof(ours::CUpti_ActivityMemory4, source) == sizeof(::CUpti_ActivityMemory3));

// The 11.8 PC record is 56 bytes: everything before 13.0's trailing correlationId.
static_assert(sizeof(::CUpti_PCSamplingPCData) == 56);
static_assert(offsetof(ours::CUpti_PCSamplingPCData, correlationId) ==
              sizeof(::CUpti_PCSamplingPCData));
// The 11.8 sampling data ends before 13.0's hardwareBufferFull.
static_assert(offsetof(ours::CUpti_PCSamplingData, hardwareBufferFull) ==
              sizeof(::CUpti_PCSamplingData));
