// SPDX-License-Identifier: Apache-2.0
// Our own declarations of the subset of the NVML C ABI that warpscope uses. There is no nvml.h
// in the build: every type, constant and prototype here is written from the layout tables in
// docs/design/nvml.md (sizes and offsets are checked by static_asserts below). Both the dlopen
// loader (nvml/nvml_library.cc) and the simulator (sim/nvml) use this file, so they cannot drift.
#ifndef WARPSCOPE_NVML_ABI_H_
#define WARPSCOPE_NVML_ABI_H_

#include <climits>
#include <cstddef>

namespace warpscope::nvml::abi {

using nvmlReturn_t = int;
struct nvmlDevice_st;
struct nvmlEventSet_st;
struct nvmlGpmSample_st;
using nvmlDevice_t = nvmlDevice_st*;
using nvmlEventSet_t = nvmlEventSet_st*;
using nvmlGpmSample_t = nvmlGpmSample_st*;

// Return codes.
inline constexpr nvmlReturn_t kSuccess = 0;
inline constexpr nvmlReturn_t kErrorUninitialized = 1;
inline constexpr nvmlReturn_t kErrorInvalidArgument = 2;
inline constexpr nvmlReturn_t kErrorNotSupported = 3;
inline constexpr nvmlReturn_t kErrorNoPermission = 4;
inline constexpr nvmlReturn_t kErrorNotFound = 6;
inline constexpr nvmlReturn_t kErrorInsufficientSize = 7;
inline constexpr nvmlReturn_t kErrorDriverNotLoaded = 9;
inline constexpr nvmlReturn_t kErrorTimeout = 10;
inline constexpr nvmlReturn_t kErrorLibraryNotFound = 12;
inline constexpr nvmlReturn_t kErrorFunctionNotFound = 13;
inline constexpr nvmlReturn_t kErrorGpuIsLost = 15;
inline constexpr nvmlReturn_t kErrorResetRequired = 16;
inline constexpr nvmlReturn_t kErrorLibRmVersionMismatch = 18;
inline constexpr nvmlReturn_t kErrorMemory = 20;
inline constexpr nvmlReturn_t kErrorNoData = 21;
inline constexpr nvmlReturn_t kErrorArgumentVersionMismatch = 25;
inline constexpr nvmlReturn_t kErrorUnknown = 999;

// Buffer sizes for string getters.
inline constexpr unsigned kSystemDriverVersionBufferSize = 80;
inline constexpr unsigned kDeviceNameBufferSize = 96;
inline constexpr unsigned kDeviceUuidBufferSize = 96;
inline constexpr unsigned kDeviceSerialBufferSize = 30;

// Enums (4-byte ints in the ABI).
inline constexpr unsigned kClockGraphics = 0;
inline constexpr unsigned kClockSm = 1;
inline constexpr unsigned kClockMem = 2;
inline constexpr unsigned kTemperatureGpu = 0;
// nvmlTemperatureThresholds_t values (nvmlDeviceGetTemperatureThreshold).
inline constexpr unsigned kTemperatureThresholdShutdown = 0;
inline constexpr unsigned kTemperatureThresholdSlowdown = 1;
inline constexpr unsigned kTemperatureThresholdMemMax = 2;
inline constexpr unsigned kTemperatureThresholdGpuMax = 3;
inline constexpr unsigned kPcieUtilTxBytes = 0;
inline constexpr unsigned kPcieUtilRxBytes = 1;
inline constexpr unsigned kMemoryErrorCorrected = 0;
inline constexpr unsigned kMemoryErrorUncorrected = 1;
inline constexpr unsigned kEccCounterVolatile = 0;
inline constexpr unsigned kEccCounterAggregate = 1;
inline constexpr unsigned kFeatureDisabled = 0;
inline constexpr unsigned kFeatureEnabled = 1;
inline constexpr unsigned kMigDisable = 0;
inline constexpr unsigned kMigEnable = 1;
inline constexpr unsigned kInvalidInstanceId = 0xFFFFFFFFu;

// nvmlDeviceArchitecture_t values.
inline constexpr unsigned kArchKepler = 2, kArchMaxwell = 3, kArchPascal = 4, kArchVolta = 5,
                          kArchTuring = 6, kArchAmpere = 7, kArchAda = 8, kArchHopper = 9,
                          kArchBlackwell = 10;

// Event type bits.
inline constexpr unsigned long long kEventTypeSingleBitEccError = 0x1;
inline constexpr unsigned long long kEventTypeDoubleBitEccError = 0x2;
inline constexpr unsigned long long kEventTypeXidCriticalError = 0x8;

// Field ids (stable range <= 198 only).
inline constexpr unsigned kFiEccSbeVolTotal = 3;
inline constexpr unsigned kFiEccDbeVolTotal = 4;
inline constexpr unsigned kFiEccSbeAggTotal = 5;
inline constexpr unsigned kFiEccDbeAggTotal = 6;
inline constexpr unsigned kFiMemoryTemp = 82;
inline constexpr unsigned kFiTotalEnergyConsumption = 83;
inline constexpr unsigned kFiNvlinkLinkCount = 91;
inline constexpr unsigned kFiNvlinkThroughputDataTx = 138;  // KiB, cumulative
inline constexpr unsigned kFiNvlinkThroughputDataRx = 139;
inline constexpr unsigned kFiRemappedCor = 142;
inline constexpr unsigned kFiRemappedUnc = 143;
inline constexpr unsigned kFiRemappedPending = 144;
inline constexpr unsigned kFiRemappedFailure = 145;
inline constexpr unsigned kScopeAllLinks = UINT_MAX;

// nvmlValueType_t.
inline constexpr unsigned kValueTypeDouble = 0;
inline constexpr unsigned kValueTypeUnsignedInt = 1;
inline constexpr unsigned kValueTypeUnsignedLong = 2;
inline constexpr unsigned kValueTypeUnsignedLongLong = 3;
inline constexpr unsigned kValueTypeSignedLongLong = 4;
inline constexpr unsigned kValueTypeSignedInt = 5;
inline constexpr unsigned kValueTypeUnsignedShort = 6;

// GPM metric ids.
inline constexpr unsigned kGpmGraphicsUtil = 1;
inline constexpr unsigned kGpmSmUtil = 2;
inline constexpr unsigned kGpmSmOccupancy = 3;
inline constexpr unsigned kGpmIntegerUtil = 4;
inline constexpr unsigned kGpmAnyTensorUtil = 5;
inline constexpr unsigned kGpmDfmaTensorUtil = 6;
inline constexpr unsigned kGpmHmmaTensorUtil = 7;
inline constexpr unsigned kGpmImmaTensorUtil = 9;
inline constexpr unsigned kGpmDramBwUtil = 10;
inline constexpr unsigned kGpmFp64Util = 11;
inline constexpr unsigned kGpmFp32Util = 12;
inline constexpr unsigned kGpmFp16Util = 13;
inline constexpr unsigned kGpmPcieTxPerSec = 20;  // MiB/s
inline constexpr unsigned kGpmPcieRxPerSec = 21;
inline constexpr unsigned kGpmNvlinkTotalRxPerSec = 60;
inline constexpr unsigned kGpmNvlinkTotalTxPerSec = 61;
inline constexpr unsigned kGpmSupportVersion = 1;
inline constexpr unsigned kGpmMetricsGetVersion = 1;
// Newer headers grew NVML_GPM_METRIC_MAX (98 -> 210 -> 333) without a version bump: declare the
// largest so a newer driver can never write past our struct.
inline constexpr unsigned kGpmMetricMax = 333;

struct nvmlPciInfo_t {  // _v2/_v3 layout
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

struct nvmlMemory_t {  // v1: used includes reserved
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlMemory_v2_t {
  unsigned int version;  // must be kMemoryV2Version
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
inline constexpr unsigned kMemoryV2Version = (2u << 24) | sizeof(nvmlMemory_v2_t);

struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};

struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;  // µs since epoch
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};

struct nvmlProcessInfo_v1_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
};

struct nvmlProcessInfo_t {  // v2; what _v2 and (mostly) _v3 write
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// The 32-byte "_v3" stride written by some R535 drivers.
struct nvmlProcessInfoWide_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
  unsigned long long usedGpuCcProtectedMemory;
};

union nvmlValue_t {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  unsigned short usVal;
};

struct nvmlFieldValue_t {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;  // µs since epoch
  long long latencyUsec;
  unsigned int valueType;
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
};

struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // XID number
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

struct nvmlGpmSupport_t {
  unsigned int version;
  unsigned int isSupportedDevice;
};

struct nvmlGpmMetric_t {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};

struct nvmlGpmMetricsGet_t {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[kGpmMetricMax];
};

static_assert(sizeof(nvmlPciInfo_t) == 68);
static_assert(offsetof(nvmlPciInfo_t, busId) == 36);
static_assert(sizeof(nvmlMemory_t) == 24);
static_assert(sizeof(nvmlMemory_v2_t) == 40 && kMemoryV2Version == 0x02000028);
static_assert(offsetof(nvmlMemory_v2_t, used) == 32);
static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32);
static_assert(offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16);
static_assert(sizeof(nvmlProcessInfo_v1_t) == 16);
static_assert(sizeof(nvmlProcessInfo_t) == 24);
static_assert(sizeof(nvmlProcessInfoWide_t) == 32);
static_assert(sizeof(nvmlFieldValue_t) == 40);
static_assert(offsetof(nvmlFieldValue_t, valueType) == 24);
static_assert(offsetof(nvmlFieldValue_t, value) == 32);
static_assert(sizeof(nvmlEventData_t) == 32);
static_assert(sizeof(nvmlGpmMetric_t) == 40);
static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24);

// Every function the agent may call: X(return type, symbol, parameter list). The loader resolves
// each with dlsym (a missing symbol means "not supported"); the simulator exports each with C
// linkage. Legacy fallbacks are listed in WARPSCOPE_NVML_LEGACY_FUNCTIONS.
#define WARPSCOPE_NVML_FUNCTIONS(X)                                                              \
  X(nvmlReturn_t, nvmlInit_v2, (void))                                                           \
  X(nvmlReturn_t, nvmlShutdown, (void))                                                          \
  X(const char*, nvmlErrorString, (nvmlReturn_t result))                                         \
  X(nvmlReturn_t, nvmlSystemGetDriverVersion, (char* version, unsigned int length))              \
  X(nvmlReturn_t, nvmlSystemGetNVMLVersion, (char* version, unsigned int length))                \
  X(nvmlReturn_t, nvmlSystemGetCudaDriverVersion_v2, (int* version))                             \
  X(nvmlReturn_t, nvmlSystemGetProcessName, (unsigned int pid, char* name, unsigned int length)) \
  X(nvmlReturn_t, nvmlDeviceGetCount_v2, (unsigned int* count))                                  \
  X(nvmlReturn_t, nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t* device))     \
  X(nvmlReturn_t, nvmlDeviceGetIndex, (nvmlDevice_t device, unsigned int* index))                \
  X(nvmlReturn_t, nvmlDeviceGetName, (nvmlDevice_t device, char* name, unsigned int length))     \
  X(nvmlReturn_t, nvmlDeviceGetUUID, (nvmlDevice_t device, char* uuid, unsigned int length))     \
  X(nvmlReturn_t, nvmlDeviceGetSerial, (nvmlDevice_t device, char* serial, unsigned int length)) \
  X(nvmlReturn_t, nvmlDeviceGetPciInfo_v3, (nvmlDevice_t device, nvmlPciInfo_t* pci))            \
  X(nvmlReturn_t, nvmlDeviceGetMinorNumber, (nvmlDevice_t device, unsigned int* minor))          \
  X(nvmlReturn_t, nvmlDeviceGetArchitecture, (nvmlDevice_t device, unsigned int* arch))          \
  X(nvmlReturn_t, nvmlDeviceGetCudaComputeCapability, (nvmlDevice_t device, int* major,          \
                                                       int* minor))                              \
  X(nvmlReturn_t, nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t device, nvmlMemory_v2_t* memory))    \
  X(nvmlReturn_t, nvmlDeviceGetUtilizationRates, (nvmlDevice_t device, nvmlUtilization_t* util)) \
  X(nvmlReturn_t, nvmlDeviceGetEncoderUtilization, (nvmlDevice_t device, unsigned int* util,     \
                                                    unsigned int* sampling_period_us))           \
  X(nvmlReturn_t, nvmlDeviceGetDecoderUtilization, (nvmlDevice_t device, unsigned int* util,     \
                                                    unsigned int* sampling_period_us))           \
  X(nvmlReturn_t, nvmlDeviceGetProcessUtilization,                                               \
    (nvmlDevice_t device, nvmlProcessUtilizationSample_t* samples, unsigned int* count,          \
     unsigned long long last_seen_timestamp))                                                    \
  X(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses_v3,                                       \
    (nvmlDevice_t device, unsigned int* count, nvmlProcessInfo_t* infos))                        \
  X(nvmlReturn_t, nvmlDeviceGetGraphicsRunningProcesses_v3,                                      \
    (nvmlDevice_t device, unsigned int* count, nvmlProcessInfo_t* infos))                        \
  X(nvmlReturn_t, nvmlDeviceGetPowerUsage, (nvmlDevice_t device, unsigned int* milliwatts))      \
  X(nvmlReturn_t, nvmlDeviceGetPowerManagementLimit, (nvmlDevice_t device,                       \
                                                      unsigned int* milliwatts))                 \
  X(nvmlReturn_t, nvmlDeviceGetEnforcedPowerLimit, (nvmlDevice_t device,                         \
                                                    unsigned int* milliwatts))                   \
  X(nvmlReturn_t, nvmlDeviceGetTotalEnergyConsumption, (nvmlDevice_t device,                     \
                                                        unsigned long long* millijoules))        \
  X(nvmlReturn_t, nvmlDeviceGetTemperature, (nvmlDevice_t device, unsigned int sensor,           \
                                             unsigned int* celsius))                             \
  X(nvmlReturn_t, nvmlDeviceGetTemperatureThreshold,                                             \
    (nvmlDevice_t device, unsigned int threshold, unsigned int* celsius))                        \
  X(nvmlReturn_t, nvmlDeviceGetClockInfo, (nvmlDevice_t device, unsigned int type,               \
                                           unsigned int* mhz))                                   \
  X(nvmlReturn_t, nvmlDeviceGetMaxClockInfo, (nvmlDevice_t device, unsigned int type,            \
                                              unsigned int* mhz))                                \
  X(nvmlReturn_t, nvmlDeviceGetCurrentClocksEventReasons, (nvmlDevice_t device,                  \
                                                           unsigned long long* reasons))         \
  X(nvmlReturn_t, nvmlDeviceGetPcieThroughput, (nvmlDevice_t device, unsigned int counter,       \
                                                unsigned int* kb_per_s))                         \
  X(nvmlReturn_t, nvmlDeviceGetPcieReplayCounter, (nvmlDevice_t device, unsigned int* value))    \
  X(nvmlReturn_t, nvmlDeviceGetFieldValues, (nvmlDevice_t device, int count,                     \
                                             nvmlFieldValue_t* values))                          \
  X(nvmlReturn_t, nvmlDeviceGetNvLinkState, (nvmlDevice_t device, unsigned int link,             \
                                             unsigned int* is_active))                           \
  X(nvmlReturn_t, nvmlDeviceGetTotalEccErrors, (nvmlDevice_t device, unsigned int error_type,    \
                                                unsigned int counter_type,                       \
                                                unsigned long long* count))                      \
  X(nvmlReturn_t, nvmlDeviceGetRemappedRows, (nvmlDevice_t device, unsigned int* corr,           \
                                              unsigned int* unc, unsigned int* pending,          \
                                              unsigned int* failure))                            \
  X(nvmlReturn_t, nvmlEventSetCreate, (nvmlEventSet_t * set))                                    \
  X(nvmlReturn_t, nvmlDeviceRegisterEvents, (nvmlDevice_t device, unsigned long long types,      \
                                             nvmlEventSet_t set))                                \
  X(nvmlReturn_t, nvmlDeviceGetSupportedEventTypes, (nvmlDevice_t device,                        \
                                                     unsigned long long* types))                 \
  X(nvmlReturn_t, nvmlEventSetWait_v2, (nvmlEventSet_t set, nvmlEventData_t * data,              \
                                        unsigned int timeout_ms))                                \
  X(nvmlReturn_t, nvmlEventSetFree, (nvmlEventSet_t set))                                        \
  X(nvmlReturn_t, nvmlDeviceGetMigMode, (nvmlDevice_t device, unsigned int* current,             \
                                         unsigned int* pending))                                 \
  X(nvmlReturn_t, nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t device, unsigned int* count))    \
  X(nvmlReturn_t, nvmlDeviceGetMigDeviceHandleByIndex, (nvmlDevice_t device, unsigned int index, \
                                                        nvmlDevice_t* mig))                      \
  X(nvmlReturn_t, nvmlDeviceGetDeviceHandleFromMigDeviceHandle, (nvmlDevice_t mig,               \
                                                                 nvmlDevice_t* device))          \
  X(nvmlReturn_t, nvmlDeviceGetGpuInstanceId, (nvmlDevice_t mig, unsigned int* id))              \
  X(nvmlReturn_t, nvmlDeviceGetComputeInstanceId, (nvmlDevice_t mig, unsigned int* id))          \
  X(nvmlReturn_t, nvmlGpmQueryDeviceSupport, (nvmlDevice_t device, nvmlGpmSupport_t* support))   \
  X(nvmlReturn_t, nvmlGpmSampleAlloc, (nvmlGpmSample_t * sample))                                \
  X(nvmlReturn_t, nvmlGpmSampleFree, (nvmlGpmSample_t sample))                                   \
  X(nvmlReturn_t, nvmlGpmSampleGet, (nvmlDevice_t device, nvmlGpmSample_t sample))               \
  X(nvmlReturn_t, nvmlGpmMigSampleGet, (nvmlDevice_t device, unsigned int gpu_instance_id,       \
                                        nvmlGpmSample_t sample))                                 \
  X(nvmlReturn_t, nvmlGpmMetricsGet, (nvmlGpmMetricsGet_t * metrics))

// Older drivers' names for the same calls, tried when the symbol above is missing. Same
// signatures except where noted in nvml_library.h.
#define WARPSCOPE_NVML_LEGACY_FUNCTIONS(X)                                                       \
  X(nvmlReturn_t, nvmlInit, (void))                                                              \
  X(nvmlReturn_t, nvmlSystemGetCudaDriverVersion, (int* version))                                \
  X(nvmlReturn_t, nvmlDeviceGetCount, (unsigned int* count))                                     \
  X(nvmlReturn_t, nvmlDeviceGetHandleByIndex, (unsigned int index, nvmlDevice_t* device))        \
  X(nvmlReturn_t, nvmlDeviceGetPciInfo_v2, (nvmlDevice_t device, nvmlPciInfo_t* pci))            \
  X(nvmlReturn_t, nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t* memory))          \
  X(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses_v2,                                       \
    (nvmlDevice_t device, unsigned int* count, nvmlProcessInfo_t* infos))                        \
  X(nvmlReturn_t, nvmlDeviceGetGraphicsRunningProcesses_v2,                                      \
    (nvmlDevice_t device, unsigned int* count, nvmlProcessInfo_t* infos))                        \
  X(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses,                                          \
    (nvmlDevice_t device, unsigned int* count, nvmlProcessInfo_v1_t* infos))                     \
  X(nvmlReturn_t, nvmlDeviceGetGraphicsRunningProcesses,                                         \
    (nvmlDevice_t device, unsigned int* count, nvmlProcessInfo_v1_t* infos))                     \
  X(nvmlReturn_t, nvmlDeviceGetCurrentClocksThrottleReasons, (nvmlDevice_t device,               \
                                                              unsigned long long* reasons))

// Symbols resolved only to detect the driver generation (never called): see the process-list
// stride heuristic in nvml_library.cc.
#define WARPSCOPE_NVML_PROBE_SYMBOLS(X)      \
  X(nvmlDeviceGetConfComputeMemSizeInfo)     \
  X(nvmlDeviceGetRunningProcessDetailList)

#define WARPSCOPE_NVML_DECLARE_TYPEDEF(ret, name, params) using name##_fn = ret(*) params;
WARPSCOPE_NVML_FUNCTIONS(WARPSCOPE_NVML_DECLARE_TYPEDEF)
WARPSCOPE_NVML_LEGACY_FUNCTIONS(WARPSCOPE_NVML_DECLARE_TYPEDEF)
#undef WARPSCOPE_NVML_DECLARE_TYPEDEF

}  // namespace warpscope::nvml::abi

#endif  // WARPSCOPE_NVML_ABI_H_
