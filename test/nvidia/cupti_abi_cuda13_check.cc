// SPDX-License-Identifier: Apache-2.0
// src/cupti/abi.h against CUDA 13.0's own CUPTI headers (the toolkit of the machine image,
// /usr/local/cuda/include). Compiled, never run: the compile is the ctest
// (test/nvidia/CMakeLists.txt, cupti_abi_cuda13_check).
#include <cupti.h>
#include <cupti_pcsampling.h>

#include "cupti/abi.h"
#include "nvidia/abi_check.h"
#include "nvidia/cupti_abi_common.inc"

static_assert(CUPTI_API_VERSION >= ours::kApiVersion13_0 && CUPTI_API_VERSION < 140000,
              "these checks are for the CUDA 13 headers");

// The state domain (background CUPTI errors) is newer than 11.8.
WS_SAME_VALUE(ours::kDomainState, CUPTI_CB_DOMAIN_STATE);

// Launch cbids new in 13.0.
WS_SAME_VALUE(ours::kCbidCudaLaunchKernelV13, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000);
WS_SAME_VALUE(ours::kCbidCudaLaunchKernelV13Ptsz,
              CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000);

// cuptiSubscribe_v2 parameters.
WS_SAME_SIZE(ours::CUpti_SubscriberParams, ::CUpti_SubscriberParams);
WS_SAME_FIELD(ours::CUpti_SubscriberParams, ::CUpti_SubscriberParams, structSize);
WS_SAME_FIELD(ours::CUpti_SubscriberParams, ::CUpti_SubscriberParams, subscriberName);
WS_SAME_FIELD(ours::CUpti_SubscriberParams, ::CUpti_SubscriberParams, oldSubscriberName);
WS_SAME_FIELD(ours::CUpti_SubscriberParams, ::CUpti_SubscriberParams, oldSubscriberSize);
static_assert(ours::kOldSubscriberNameLen >= CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN);

// The 13.0 records: every field.
WS_SAME_SIZE(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10);
WS_KERNEL_PREFIX(::CUpti_ActivityKernel10);
WS_SAME_FIELD_AS(ours::CUpti_ActivityKernel10, cacheConfig, ::CUpti_ActivityKernel10,
                 cacheConfig.both);
WS_SAME_FIELD(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10, sharedMemoryConfig);
WS_SAME_FIELD(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10,
              partitionedGlobalCacheRequested);
WS_SAME_FIELD(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10,
              partitionedGlobalCacheExecuted);
WS_SAME_FIELD(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10, reserved0);
WS_SAME_FIELD(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10,
              isSharedMemoryCarveoutRequested);
WS_SAME_FIELD(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10,
              sharedMemoryCarveoutRequested);
WS_SAME_FIELD(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10, pAccessPolicyWindow);
WS_SAME_FIELD(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10, channelID);
WS_SAME_FIELD(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10, channelType);
WS_SAME_FIELD(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10, clusterX);
WS_SAME_FIELD(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10, clusterY);
WS_SAME_FIELD(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10, clusterZ);
WS_SAME_FIELD(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10, clusterSchedulingPolicy);
WS_SAME_FIELD(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10, localMemoryTotal_v2);
WS_SAME_FIELD(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10, maxPotentialClusterSize);
WS_SAME_FIELD(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10, maxActiveClusters);
WS_SAME_FIELD(ours::CUpti_ActivityKernel10, ::CUpti_ActivityKernel10, isDeviceLaunched);

WS_SAME_SIZE(ours::CUpti_ActivityMemcpy6, ::CUpti_ActivityMemcpy6);
WS_MEMCPY_PREFIX(::CUpti_ActivityMemcpy6);
WS_SAME_FIELD(ours::CUpti_ActivityMemcpy6, ::CUpti_ActivityMemcpy6, reserved0);
WS_SAME_FIELD(ours::CUpti_ActivityMemcpy6, ::CUpti_ActivityMemcpy6, graphNodeId);
WS_SAME_FIELD(ours::CUpti_ActivityMemcpy6, ::CUpti_ActivityMemcpy6, graphId);
WS_SAME_FIELD(ours::CUpti_ActivityMemcpy6, ::CUpti_ActivityMemcpy6, channelID);
WS_SAME_FIELD(ours::CUpti_ActivityMemcpy6, ::CUpti_ActivityMemcpy6, channelType);
WS_SAME_FIELD(ours::CUpti_ActivityMemcpy6, ::CUpti_ActivityMemcpy6, isDeviceLaunched);
WS_SAME_FIELD(ours::CUpti_ActivityMemcpy6, ::CUpti_ActivityMemcpy6, copyCount);
WS_SAME_FIELD(ours::CUpti_ActivityMemset4, ::CUpti_ActivityMemset4, isDeviceLaunched);

// The 13.0 memory record: the shared prefix and the trailing source.
WS_SAME_SIZE(ours::CUpti_ActivityMemory4, ::CUpti_ActivityMemory4);
WS_MEMORY_PREFIX(::CUpti_ActivityMemory4);
WS_SAME_FIELD(ours::CUpti_ActivityMemory4, ::CUpti_ActivityMemory4, source);

// The 13.0 PC record (with correlationId) and sampling data (with hardwareBufferFull).
WS_SAME_SIZE(ours::CUpti_PCSamplingPCData, ::CUpti_PCSamplingPCData);
WS_SAME_FIELD(ours::CUpti_PCSamplingPCData, ::CUpti_PCSamplingPCData, correlationId);
WS_SAME_SIZE(ours::CUpti_PCSamplingData, ::CUpti_PCSamplingData);
WS_SAME_FIELD(ours::CUpti_PCSamplingData, ::CUpti_PCSamplingData, hardwareBufferFull);

// Entry points new since 11.8.
WS_SAME_SIGNATURE(ours, cuptiSubscribe_v2);
WS_SAME_SIGNATURE(ours, cuptiActivityEnableDriverApi);
