// SPDX-License-Identifier: Apache-2.0
// Our own declarations of the subset of the CUPTI C ABI that warpscope uses. There is no
// cupti.h in the build (CI has no CUDA): every type, constant and prototype here is written from
// the CUDA 13.0 CUPTI documentation and checked against it (sizes and offsets below are pinned by
// static_asserts; docs/design/cuda-profiler.md lists how they were verified). The injected library
// (cupti_inject) loads libcupti with dlopen and resolves the `<name>_fn` typedefs below; the fake
// libcupti (test/fakes/cupti) implements the same prototypes, so the two cannot drift.
//
// Record versions: activity records carry no size field; their layout is fixed by the libcupti
// version that wrote them. We declare the CUDA 13.0 layouts (CUpti_ActivityKernel10, Memcpy6,
// Memset4, Marker2) and decode only the leading fields that CUPTI has kept at the same offsets in
// the 12.x record versions (see kernel record comment). Callers pick the decoder from
// cuptiGetVersion() (kApiVersion13_0 and newer use the 13.0 layouts; CUDA 12 API versions < 100
// are decoded through the shared prefix only).
#ifndef WARPSCOPE_CUPTI_ABI_H_
#define WARPSCOPE_CUPTI_ABI_H_

#include <cstddef>
#include <cstdint>

namespace warpscope::cupti::abi {

#define WARPSCOPE_CUPTI_PACKED __attribute__((__packed__)) __attribute__((aligned(8)))

using CUptiResult = int;
using CUcontext = struct CUctx_st*;
using CUstream = struct CUstream_st*;
using CUpti_SubscriberHandle = struct CUpti_Subscriber_st*;
using CUpti_CallbackDomain = int;
using CUpti_CallbackId = uint32_t;
using CUpti_ActivityKind = int;

// --- Result codes (cupti_result.h) -------------------------------------------------------------
inline constexpr CUptiResult kSuccess = 0;
inline constexpr CUptiResult kErrorInvalidParameter = 1;
inline constexpr CUptiResult kErrorMaxLimitReached = 12;
inline constexpr CUptiResult kErrorNotReady = 13;
inline constexpr CUptiResult kErrorNotInitialized = 15;
inline constexpr CUptiResult kErrorInvalidKind = 21;
inline constexpr CUptiResult kErrorNotSupported = 27;
inline constexpr CUptiResult kErrorInsufficientPrivileges = 35;
inline constexpr CUptiResult kErrorMultipleSubscribersNotSupported = 39;
inline constexpr CUptiResult kErrorUnknown = 999;

// --- Versions (cupti_version.h) ----------------------------------------------------------------
// From 13.0 the API version is xxyyzz (130001 = 13.0 Update 1); before it, a small counter.
inline constexpr uint32_t kApiVersion13_0 = 130000;

// --- Callback API (cupti_callbacks.h) ----------------------------------------------------------
inline constexpr int kApiEnter = 0;
inline constexpr int kApiExit = 1;

inline constexpr CUpti_CallbackDomain kDomainDriverApi = 1;
inline constexpr CUpti_CallbackDomain kDomainRuntimeApi = 2;
inline constexpr CUpti_CallbackDomain kDomainResource = 3;
inline constexpr CUpti_CallbackDomain kDomainSynchronize = 4;
inline constexpr CUpti_CallbackDomain kDomainNvtx = 5;
inline constexpr CUpti_CallbackDomain kDomainState = 6;

// Resource domain callback ids.
inline constexpr CUpti_CallbackId kCbidResourceContextCreated = 1;
inline constexpr CUpti_CallbackId kCbidResourceContextDestroyStarting = 2;
inline constexpr CUpti_CallbackId kCbidResourceCuInitFinished = 5;
inline constexpr CUpti_CallbackId kCbidResourceModuleLoaded = 6;
inline constexpr CUpti_CallbackId kCbidResourceModuleUnloadStarting = 7;

// Driver API launch callback ids (cupti_driver_cbid.h, CUDA 13.0).
inline constexpr CUpti_CallbackId kCbidCuLaunch = 115;
inline constexpr CUpti_CallbackId kCbidCuLaunchGrid = 116;
inline constexpr CUpti_CallbackId kCbidCuLaunchGridAsync = 117;
inline constexpr CUpti_CallbackId kCbidCuLaunchKernel = 307;
inline constexpr CUpti_CallbackId kCbidCuLaunchKernelPtsz = 442;
inline constexpr CUpti_CallbackId kCbidCuLaunchCooperativeKernel = 477;
inline constexpr CUpti_CallbackId kCbidCuLaunchCooperativeKernelPtsz = 478;
inline constexpr CUpti_CallbackId kCbidCuLaunchCooperativeKernelMultiDevice = 480;
inline constexpr CUpti_CallbackId kCbidCuGraphLaunch = 514;
inline constexpr CUpti_CallbackId kCbidCuGraphLaunchPtsz = 515;
inline constexpr CUpti_CallbackId kCbidCuLaunchKernelEx = 652;
inline constexpr CUpti_CallbackId kCbidCuLaunchKernelExPtsz = 653;

// Runtime API launch callback ids (cupti_runtime_cbid.h, CUDA 13.0).
inline constexpr CUpti_CallbackId kCbidCudaLaunchKernel = 211;
inline constexpr CUpti_CallbackId kCbidCudaLaunchKernelPtsz = 214;
inline constexpr CUpti_CallbackId kCbidCudaLaunchCooperativeKernel = 269;
inline constexpr CUpti_CallbackId kCbidCudaLaunchCooperativeKernelPtsz = 270;
inline constexpr CUpti_CallbackId kCbidCudaLaunchCooperativeKernelMultiDevice = 272;
inline constexpr CUpti_CallbackId kCbidCudaGraphLaunch = 311;
inline constexpr CUpti_CallbackId kCbidCudaGraphLaunchPtsz = 312;
inline constexpr CUpti_CallbackId kCbidCudaLaunchKernelExC = 430;
inline constexpr CUpti_CallbackId kCbidCudaLaunchKernelExCPtsz = 431;
inline constexpr CUpti_CallbackId kCbidCudaLaunchKernelV13 = 505;      // __cudaLaunchKernel_v13000
inline constexpr CUpti_CallbackId kCbidCudaLaunchKernelV13Ptsz = 506;  // ..._ptsz_v13000

inline constexpr CUpti_CallbackId kDriverLaunchCbids[] = {
    kCbidCuLaunch,
    kCbidCuLaunchGrid,
    kCbidCuLaunchGridAsync,
    kCbidCuLaunchKernel,
    kCbidCuLaunchKernelPtsz,
    kCbidCuLaunchCooperativeKernel,
    kCbidCuLaunchCooperativeKernelPtsz,
    kCbidCuLaunchCooperativeKernelMultiDevice,
    kCbidCuGraphLaunch,
    kCbidCuGraphLaunchPtsz,
    kCbidCuLaunchKernelEx,
    kCbidCuLaunchKernelExPtsz,
};
inline constexpr CUpti_CallbackId kRuntimeLaunchCbids[] = {
    kCbidCudaLaunchKernel,
    kCbidCudaLaunchKernelPtsz,
    kCbidCudaLaunchCooperativeKernel,
    kCbidCudaLaunchCooperativeKernelPtsz,
    kCbidCudaLaunchCooperativeKernelMultiDevice,
    kCbidCudaGraphLaunch,
    kCbidCudaGraphLaunchPtsz,
    kCbidCudaLaunchKernelExC,
    kCbidCudaLaunchKernelExCPtsz,
    kCbidCudaLaunchKernelV13,
    kCbidCudaLaunchKernelV13Ptsz,
};

// True for the graph-launch ids of either API domain.
constexpr bool IsGraphLaunch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return (domain == kDomainDriverApi && (cbid == kCbidCuGraphLaunch || cbid == kCbidCuGraphLaunchPtsz)) ||
         (domain == kDomainRuntimeApi &&
          (cbid == kCbidCudaGraphLaunch || cbid == kCbidCudaGraphLaunchPtsz));
}

// Passed to API-domain callbacks (CUpti_CallbackData).
struct CUpti_CallbackData {
  int callbackSite;  // kApiEnter / kApiExit
  const char* functionName;
  const void* functionParams;
  void* functionReturnValue;
  const char* symbolName;  // kernel name on launch callbacks, may be null
  CUcontext context;
  uint32_t contextUid;
  uint64_t* correlationData;
  uint32_t correlationId;
};
static_assert(sizeof(CUpti_CallbackData) == 72);
static_assert(offsetof(CUpti_CallbackData, symbolName) == 32);
static_assert(offsetof(CUpti_CallbackData, context) == 40);
static_assert(offsetof(CUpti_CallbackData, contextUid) == 48);
static_assert(offsetof(CUpti_CallbackData, correlationData) == 56);
static_assert(offsetof(CUpti_CallbackData, correlationId) == 64);

// Passed to resource-domain callbacks (CUpti_ResourceData).
struct CUpti_ResourceData {
  CUcontext context;
  CUstream stream;  // a union with one member in the C header
  void* resourceDescriptor;
};
static_assert(sizeof(CUpti_ResourceData) == 24);

// resourceDescriptor of MODULE_LOADED / MODULE_UNLOAD_STARTING (CUpti_ModuleResourceData).
struct CUpti_ModuleResourceData {
  uint32_t moduleId;
  size_t cubinSize;
  const char* pCubin;
};
static_assert(sizeof(CUpti_ModuleResourceData) == 24);
static_assert(offsetof(CUpti_ModuleResourceData, cubinSize) == 8);

using CUpti_CallbackFunc = void (*)(void* userdata, CUpti_CallbackDomain domain,
                                    CUpti_CallbackId cbid, const void* cbdata);

// cuptiSubscribe_v2 parameters (CUpti_SubscriberParams).
struct CUpti_SubscriberParams {
  size_t structSize;
  const char* subscriberName;
  char* oldSubscriberName;
  size_t oldSubscriberSize;
};
static_assert(sizeof(CUpti_SubscriberParams) == 32);
// Room for the name of the tool that holds CUPTI (CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN is 64).
inline constexpr size_t kOldSubscriberNameLen = 256;

// --- Activity API (cupti_activity.h) -----------------------------------------------------------
inline constexpr CUpti_ActivityKind kActivityMemcpy = 1;
inline constexpr CUpti_ActivityKind kActivityMemset = 2;
inline constexpr CUpti_ActivityKind kActivityKernel = 3;  // serializes kernels: never enabled
inline constexpr CUpti_ActivityKind kActivityDriver = 4;
inline constexpr CUpti_ActivityKind kActivityRuntime = 5;
inline constexpr CUpti_ActivityKind kActivityConcurrentKernel = 10;
inline constexpr CUpti_ActivityKind kActivityMarker = 12;
inline constexpr CUpti_ActivityKind kActivityMarkerData = 13;
inline constexpr CUpti_ActivityKind kActivityOverhead = 17;
inline constexpr CUpti_ActivityKind kActivityMemory2 = 49;  // allocations and releases
inline constexpr CUpti_ActivityKind kActivityGraphTrace = 51;

inline constexpr uint32_t kActivityFlagFlushForced = 1u << 0;
inline constexpr uint32_t kActivityFlagMarkerInstantaneous = 1u << 0;
inline constexpr uint32_t kActivityFlagMarkerStart = 1u << 1;
inline constexpr uint32_t kActivityFlagMarkerEnd = 1u << 2;

// CUpti_ActivityMemcpyKind (Memcpy6::copyKind).
inline constexpr uint8_t kMemcpyKindUnknown = 0;
inline constexpr uint8_t kMemcpyKindHtoD = 1;
inline constexpr uint8_t kMemcpyKindDtoH = 2;
inline constexpr uint8_t kMemcpyKindHtoA = 3;
inline constexpr uint8_t kMemcpyKindAtoH = 4;
inline constexpr uint8_t kMemcpyKindAtoA = 5;
inline constexpr uint8_t kMemcpyKindAtoD = 6;
inline constexpr uint8_t kMemcpyKindDtoA = 7;
inline constexpr uint8_t kMemcpyKindDtoD = 8;
inline constexpr uint8_t kMemcpyKindHtoH = 9;
inline constexpr uint8_t kMemcpyKindPtoP = 10;

// CUpti_ActivityMemoryKind (Memset4::memoryKind, Memory4::memoryKind).
inline constexpr int kMemoryKindUnknown = 0;
inline constexpr int kMemoryKindPageable = 1;
inline constexpr int kMemoryKindPinned = 2;
inline constexpr int kMemoryKindDevice = 3;
inline constexpr int kMemoryKindArray = 4;
inline constexpr int kMemoryKindManaged = 5;
inline constexpr int kMemoryKindDeviceStatic = 6;
inline constexpr int kMemoryKindManagedStatic = 7;

// CUpti_ActivityMemoryOperationType (Memory4::memoryOperationType).
inline constexpr int kMemoryOperationAllocation = 1;
inline constexpr int kMemoryOperationRelease = 2;

inline constexpr int kActivityObjectProcess = 1;
inline constexpr int kActivityObjectThread = 2;

inline constexpr int kActivityThreadIdTypeSystem = 1;

inline constexpr int kActivityAttrDeviceBufferSize = 0;
inline constexpr int kActivityAttrZeroedOutActivityBuffer = 5;

// The leading kind field that every record starts with (CUpti_Activity).
struct CUpti_Activity {
  CUpti_ActivityKind kind;
};

// CUpti_ActivityKernel10 (CONCURRENT_KERNEL, CUDA 13.0), 216 bytes. The fields from `kind` to
// `graphId` sit at the same offsets in CUpti_ActivityKernel9 (CUDA 12.x); we read nothing past
// graphId for API versions below kApiVersion13_0.
struct WARPSCOPE_CUPTI_PACKED CUpti_ActivityKernel10 {
  CUpti_ActivityKind kind;
  uint8_t cacheConfig;
  uint8_t sharedMemoryConfig;
  uint16_t registersPerThread;
  int32_t partitionedGlobalCacheRequested;
  int32_t partitionedGlobalCacheExecuted;
  uint64_t start;
  uint64_t end;
  uint64_t completed;
  uint32_t deviceId;
  uint32_t contextId;
  uint32_t streamId;
  int32_t gridX, gridY, gridZ;
  int32_t blockX, blockY, blockZ;
  int32_t staticSharedMemory;
  int32_t dynamicSharedMemory;
  uint32_t localMemoryPerThread;
  uint32_t localMemoryTotal;
  uint32_t correlationId;
  int64_t gridId;
  const char* name;
  void* reserved0;
  uint64_t queued;
  uint64_t submitted;
  uint8_t launchType;
  uint8_t isSharedMemoryCarveoutRequested;
  uint8_t sharedMemoryCarveoutRequested;
  uint8_t padding;
  uint32_t sharedMemoryExecuted;
  uint64_t graphNodeId;
  int32_t shmemLimitConfig;
  uint32_t graphId;
  void* pAccessPolicyWindow;
  uint32_t channelID;
  int32_t channelType;
  uint32_t clusterX, clusterY, clusterZ;
  uint32_t clusterSchedulingPolicy;
  uint64_t localMemoryTotal_v2;
  uint32_t maxPotentialClusterSize;
  uint32_t maxActiveClusters;
  uint8_t isDeviceLaunched;
  uint8_t padding3[7];
};
static_assert(sizeof(CUpti_ActivityKernel10) == 216);
static_assert(offsetof(CUpti_ActivityKernel10, start) == 16);
static_assert(offsetof(CUpti_ActivityKernel10, deviceId) == 40);
static_assert(offsetof(CUpti_ActivityKernel10, gridX) == 52);
static_assert(offsetof(CUpti_ActivityKernel10, staticSharedMemory) == 76);
static_assert(offsetof(CUpti_ActivityKernel10, correlationId) == 92);
static_assert(offsetof(CUpti_ActivityKernel10, gridId) == 96);
static_assert(offsetof(CUpti_ActivityKernel10, name) == 104);
static_assert(offsetof(CUpti_ActivityKernel10, graphNodeId) == 144);
static_assert(offsetof(CUpti_ActivityKernel10, graphId) == 156);
static_assert(offsetof(CUpti_ActivityKernel10, isDeviceLaunched) == 208);

// CUpti_ActivityMemcpy6 (MEMCPY), 96 bytes.
struct WARPSCOPE_CUPTI_PACKED CUpti_ActivityMemcpy6 {
  CUpti_ActivityKind kind;
  uint8_t copyKind;
  uint8_t srcKind;
  uint8_t dstKind;
  uint8_t flags;
  uint64_t bytes;
  uint64_t start;
  uint64_t end;
  uint32_t deviceId;
  uint32_t contextId;
  uint32_t streamId;
  uint32_t correlationId;
  uint32_t runtimeCorrelationId;
  uint32_t pad;
  void* reserved0;
  uint64_t graphNodeId;
  uint32_t graphId;
  uint32_t channelID;
  int32_t channelType;
  uint8_t isDeviceLaunched;
  uint8_t pad2[3];
  uint64_t copyCount;
};
static_assert(sizeof(CUpti_ActivityMemcpy6) == 96);
static_assert(offsetof(CUpti_ActivityMemcpy6, bytes) == 8);
static_assert(offsetof(CUpti_ActivityMemcpy6, correlationId) == 44);
static_assert(offsetof(CUpti_ActivityMemcpy6, graphNodeId) == 64);
static_assert(offsetof(CUpti_ActivityMemcpy6, copyCount) == 88);

// CUpti_ActivityMemset4 (MEMSET), 88 bytes.
struct WARPSCOPE_CUPTI_PACKED CUpti_ActivityMemset4 {
  CUpti_ActivityKind kind;
  uint32_t value;
  uint64_t bytes;
  uint64_t start;
  uint64_t end;
  uint32_t deviceId;
  uint32_t contextId;
  uint32_t streamId;
  uint32_t correlationId;
  uint16_t flags;
  uint16_t memoryKind;
  uint32_t pad;
  void* reserved0;
  uint64_t graphNodeId;
  uint32_t graphId;
  uint32_t channelID;
  int32_t channelType;
  uint8_t isDeviceLaunched;
  uint8_t pad2[3];
};
static_assert(sizeof(CUpti_ActivityMemset4) == 88);
static_assert(offsetof(CUpti_ActivityMemset4, correlationId) == 44);
static_assert(offsetof(CUpti_ActivityMemset4, memoryKind) == 50);

// CUpti_ActivityMarker2 (MARKER, NVTX), 56 bytes. objectId is a union whose thread form is
// {processId, threadId}.
struct WARPSCOPE_CUPTI_PACKED CUpti_ActivityMarker2 {
  CUpti_ActivityKind kind;
  uint32_t flags;
  uint64_t timestamp;
  uint32_t id;
  int32_t objectKind;
  uint32_t objectProcessId;  // objectId.pt.processId
  uint32_t objectThreadId;   // objectId.pt.threadId
  uint32_t objectIdRest;     // the union is 12 bytes (dcs form)
  uint32_t pad;
  const char* name;
  const char* domain;
};
static_assert(sizeof(CUpti_ActivityMarker2) == 56);
static_assert(offsetof(CUpti_ActivityMarker2, id) == 16);
static_assert(offsetof(CUpti_ActivityMarker2, objectProcessId) == 24);
static_assert(offsetof(CUpti_ActivityMarker2, name) == 40);

// CUpti_ActivityMemory4 (MEMORY2), 128 bytes: one allocation or release through the CUDA
// allocator (cudaMalloc/cuMemAlloc, cudaMallocAsync from a pool, cudaHostAlloc, managed...).
// CUDA 11.8's CUpti_ActivityMemory3 is the same record without the trailing `source` (120
// bytes); the decoder reads fields up to streamId only, which both keep at these offsets.
struct WARPSCOPE_CUPTI_PACKED CUpti_ActivityMemory4 {
  CUpti_ActivityKind kind;
  int32_t memoryOperationType;  // kMemoryOperation*
  int32_t memoryKind;           // kMemoryKind*
  uint32_t correlationId;
  uint64_t address;
  uint64_t bytes;
  uint64_t timestamp;
  uint64_t PC;
  uint32_t processId;
  uint32_t deviceId;
  uint32_t contextId;
  uint32_t streamId;
  const char* name;
  uint32_t isAsync;
  uint32_t pad1;
  struct WARPSCOPE_CUPTI_PACKED {
    int32_t memoryPoolType;
    uint32_t pad2;
    uint64_t address;
    uint64_t releaseThreshold;
    uint64_t pool;  // union {size, processId}
    uint64_t utilizedSize;
  } memoryPoolConfig;
  const char* source;
};
static_assert(sizeof(CUpti_ActivityMemory4) == 128);
static_assert(offsetof(CUpti_ActivityMemory4, address) == 16);
static_assert(offsetof(CUpti_ActivityMemory4, bytes) == 24);
static_assert(offsetof(CUpti_ActivityMemory4, processId) == 48);
static_assert(offsetof(CUpti_ActivityMemory4, streamId) == 60);
static_assert(offsetof(CUpti_ActivityMemory4, memoryPoolConfig) == 80);
static_assert(offsetof(CUpti_ActivityMemory4, source) == 120);

using CUpti_BuffersCallbackRequestFunc = void (*)(uint8_t** buffer, size_t* size,
                                                  size_t* maxNumRecords);
using CUpti_BuffersCallbackCompleteFunc = void (*)(CUcontext context, uint32_t streamId,
                                                   uint8_t* buffer, size_t size,
                                                   size_t validSize);

// --- PC sampling (cupti_pcsampling.h) ----------------------------------------------------------
inline constexpr int kPcSamplingAttrSamplingPeriod = 1;
inline constexpr int kPcSamplingAttrStallReason = 2;
inline constexpr int kPcSamplingAttrScratchBufferSize = 3;
inline constexpr int kPcSamplingAttrHardwareBufferSize = 4;
inline constexpr int kPcSamplingAttrCollectionMode = 5;
inline constexpr int kPcSamplingAttrEnableStartStopControl = 6;
inline constexpr int kPcSamplingAttrOutputDataFormat = 7;
inline constexpr int kPcSamplingAttrSamplingDataBuffer = 8;
inline constexpr int kPcSamplingCollectionModeContinuous = 1;
inline constexpr int kPcSamplingCollectionModeKernelSerialized = 2;
inline constexpr int kPcSamplingOutputDataFormatParsed = 1;

struct WARPSCOPE_CUPTI_PACKED CUpti_PCSamplingStallReason {
  uint32_t pcSamplingStallReasonIndex;
  uint32_t samples;
};
static_assert(sizeof(CUpti_PCSamplingStallReason) == 8);

// The PC record and the data header change with the CUPTI API version (cuptiGetVersion; the
// version-to-toolkit table is in cupti_version.h):
// - CUpti_PCSamplingPCData is 56 bytes up to API version 21 (CUDA 11.x, 12.0-12.3: the 11.8
//   header has no correlationId) and 64 bytes with the trailing correlationId from 22 (CUDA 12.4)
//   on, CUDA 13.0 included. The client sets `size` in each record; CUPTI fills an array of them.
// - CUpti_PCSamplingData is 72 bytes in API version 18 (CUDA 11.8) and 80 with hardwareBufferFull
//   from 19 (CUDA 12.0) on.
// PcSamplingLayoutFor gives the layout of a version; the sampler refuses versions it does not
// know. The fields up to stallReason sit at the same offsets in both record layouts.
struct WARPSCOPE_CUPTI_PACKED CUpti_PCSamplingPCData_v1 {  // 56 bytes, no correlationId
  size_t size;
  uint64_t cubinCrc;
  uint64_t pcOffset;
  uint32_t functionIndex;
  uint32_t pad;
  char* functionName;
  size_t stallReasonCount;
  CUpti_PCSamplingStallReason* stallReason;
};
static_assert(sizeof(CUpti_PCSamplingPCData_v1) == 56);
static_assert(offsetof(CUpti_PCSamplingPCData_v1, functionName) == 32);
static_assert(offsetof(CUpti_PCSamplingPCData_v1, stallReason) == 48);

struct WARPSCOPE_CUPTI_PACKED CUpti_PCSamplingPCData {  // 64 bytes (API version 22 and later)
  size_t size;
  uint64_t cubinCrc;
  uint64_t pcOffset;
  uint32_t functionIndex;
  uint32_t pad;
  char* functionName;
  size_t stallReasonCount;
  CUpti_PCSamplingStallReason* stallReason;
  uint32_t correlationId;
};
static_assert(sizeof(CUpti_PCSamplingPCData) == 64);
static_assert(offsetof(CUpti_PCSamplingPCData, functionName) == 32);
static_assert(offsetof(CUpti_PCSamplingPCData, stallReason) == 48);
static_assert(offsetof(CUpti_PCSamplingPCData, correlationId) == 56);

inline constexpr uint32_t kApiVersion11_8 = 18;
inline constexpr uint32_t kApiVersion12_0 = 19;  // also 12.1
inline constexpr uint32_t kApiVersion12_4 = 22;
inline constexpr uint32_t kApiVersion12_9u1 = 28;  // the last CUDA 12 version (cupti_version.h)
inline constexpr uint32_t kApiVersion14_0 = 140000;

struct PcSamplingLayout {
  uint32_t pc_record_size = 0;  // stride of the CUpti_PCSamplingPCData array, and its `size`
  uint32_t data_size = 0;       // CUpti_PCSamplingData.size
  bool has_correlation_id = false;
};

// The layout of API `version`, or a zero layout (pc_record_size 0) when the version is not one
// whose headers were read: below 18, between 28 and 130000, and from 140000.
constexpr PcSamplingLayout PcSamplingLayoutFor(uint32_t version) {
  if (version >= kApiVersion13_0 && version < kApiVersion14_0) {
    return {64, 80, true};
  }
  if (version >= kApiVersion12_4 && version <= kApiVersion12_9u1) {
    return {64, 80, true};
  }
  if (version >= kApiVersion12_0 && version < kApiVersion12_4) {
    return {56, 80, false};
  }
  if (version == kApiVersion11_8) {
    return {56, 72, false};
  }
  return {};
}

struct WARPSCOPE_CUPTI_PACKED CUpti_PCSamplingData {
  size_t size;
  size_t collectNumPcs;
  uint64_t totalSamples;
  uint64_t droppedSamples;
  size_t totalNumPcs;
  size_t remainingNumPcs;
  uint64_t rangeId;
  CUpti_PCSamplingPCData* pPcData;
  uint64_t nonUsrKernelsTotalSamples;
  uint8_t hardwareBufferFull;
};
static_assert(sizeof(CUpti_PCSamplingData) == 80);
static_assert(offsetof(CUpti_PCSamplingData, pPcData) == 56);

struct CUpti_PCSamplingConfigurationInfo {
  int attributeType;
  CUptiResult attributeStatus;
  union {
    uint64_t invalidData[3];
    uint32_t samplingPeriod;
    struct {
      size_t stallReasonCount;
      uint32_t* pStallReasonIndex;
    } stallReasonData;
    size_t scratchBufferSize;
    size_t hardwareBufferSize;
    int collectionMode;
    uint32_t enableStartStopControl;
    int outputDataFormat;
    void* samplingDataBuffer;
  } attributeData;
};
static_assert(sizeof(CUpti_PCSamplingConfigurationInfo) == 32);

struct CUpti_PCSamplingConfigurationInfoParams {
  size_t size;
  void* pPriv;
  CUcontext ctx;
  size_t numAttributes;
  CUpti_PCSamplingConfigurationInfo* pPCSamplingConfigurationInfo;
};
struct CUpti_PCSamplingGetDataParams {
  size_t size;
  void* pPriv;
  CUcontext ctx;
  void* pcSamplingData;
};
// Enable, Disable, Start and Stop share this shape.
struct CUpti_PCSamplingContextParams {
  size_t size;
  void* pPriv;
  CUcontext ctx;
};
struct CUpti_PCSamplingGetNumStallReasonsParams {
  size_t size;
  void* pPriv;
  CUcontext ctx;
  size_t* numStallReasons;
};
struct CUpti_PCSamplingGetStallReasonsParams {
  size_t size;
  void* pPriv;
  CUcontext ctx;
  size_t numStallReasons;
  uint32_t* stallReasonIndex;
  char** stallReasons;
};
struct CUpti_GetCubinCrcParams {
  size_t size;
  size_t cubinSize;
  const void* cubin;
  uint64_t cubinCrc;
};
static_assert(sizeof(CUpti_PCSamplingConfigurationInfoParams) == 40);
static_assert(sizeof(CUpti_PCSamplingGetStallReasonsParams) == 48);
static_assert(sizeof(CUpti_GetCubinCrcParams) == 32);

// Maximum length (including the terminator) of a stall reason name.
inline constexpr size_t kStallReasonNameMax = 128;

// --- Function table ----------------------------------------------------------------------------
// X(name, return, params): every libcupti entry point the injected library may call. Missing
// optional ones (marked OPT) leave a null pointer; a missing required one makes the library passive.
#define WARPSCOPE_CUPTI_FUNCTIONS(X, OPT)                                                          \
  X(cuptiGetVersion, CUptiResult, (uint32_t * version))                                            \
  X(cuptiGetResultString, CUptiResult, (CUptiResult result, const char** str))                     \
  X(cuptiSubscribe, CUptiResult,                                                                   \
    (CUpti_SubscriberHandle * subscriber, CUpti_CallbackFunc callback, void* userdata))            \
  X(cuptiUnsubscribe, CUptiResult, (CUpti_SubscriberHandle subscriber))                            \
  X(cuptiEnableCallback, CUptiResult,                                                              \
    (uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain,              \
     CUpti_CallbackId cbid))                                                                       \
  X(cuptiActivityEnable, CUptiResult, (CUpti_ActivityKind kind))                                   \
  X(cuptiActivityDisable, CUptiResult, (CUpti_ActivityKind kind))                                  \
  X(cuptiActivityRegisterCallbacks, CUptiResult,                                                   \
    (CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete))        \
  X(cuptiActivityGetNextRecord, CUptiResult,                                                       \
    (uint8_t * buffer, size_t validBufferSizeBytes, CUpti_Activity** record))                      \
  X(cuptiActivityGetNumDroppedRecords, CUptiResult,                                                \
    (CUcontext context, uint32_t streamId, size_t * dropped))                                      \
  X(cuptiActivityFlushAll, CUptiResult, (uint32_t flag))                                           \
  OPT(cuptiSubscribe_v2, CUptiResult,                                                              \
      (CUpti_SubscriberHandle * subscriber, CUpti_CallbackFunc callback, void* userdata,          \
       CUpti_SubscriberParams* params))                                                           \
  OPT(cuptiActivityFlushPeriod, CUptiResult, (uint32_t time))                                      \
  OPT(cuptiActivitySetAttribute, CUptiResult, (int attr, size_t* valueSize, void* value))          \
  OPT(cuptiSetThreadIdType, CUptiResult, (int type))                                               \
  OPT(cuptiGetTimestamp, CUptiResult, (uint64_t * timestamp))                                      \
  OPT(cuptiGetStreamIdEx, CUptiResult,                                                             \
      (CUcontext context, CUstream stream, uint8_t perThreadStream, uint32_t * streamId))          \
  OPT(cuptiFinalize, CUptiResult, ())                                                              \
  OPT(cuptiActivityEnableDriverApi, CUptiResult, (CUpti_CallbackId cbid, uint8_t enable))          \
  OPT(cuptiGetCubinCrc, CUptiResult, (CUpti_GetCubinCrcParams * params))                           \
  OPT(cuptiPCSamplingEnable, CUptiResult, (CUpti_PCSamplingContextParams * params))                \
  OPT(cuptiPCSamplingDisable, CUptiResult, (CUpti_PCSamplingContextParams * params))               \
  OPT(cuptiPCSamplingStart, CUptiResult, (CUpti_PCSamplingContextParams * params))                 \
  OPT(cuptiPCSamplingStop, CUptiResult, (CUpti_PCSamplingContextParams * params))                  \
  OPT(cuptiPCSamplingGetNumStallReasons, CUptiResult,                                              \
      (CUpti_PCSamplingGetNumStallReasonsParams * params))                                         \
  OPT(cuptiPCSamplingGetStallReasons, CUptiResult,                                                 \
      (CUpti_PCSamplingGetStallReasonsParams * params))                                            \
  OPT(cuptiPCSamplingSetConfigurationAttribute, CUptiResult,                                       \
      (CUpti_PCSamplingConfigurationInfoParams * params))                                          \
  OPT(cuptiPCSamplingGetData, CUptiResult, (CUpti_PCSamplingGetDataParams * params))

#define WARPSCOPE_CUPTI_DECLARE_FN(name, ret, params) using name##_fn = ret(*) params;
WARPSCOPE_CUPTI_FUNCTIONS(WARPSCOPE_CUPTI_DECLARE_FN, WARPSCOPE_CUPTI_DECLARE_FN)
#undef WARPSCOPE_CUPTI_DECLARE_FN

}  // namespace warpscope::cupti::abi

#endif  // WARPSCOPE_CUPTI_ABI_H_
