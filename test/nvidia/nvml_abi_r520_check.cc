// SPDX-License-Identifier: Apache-2.0
// src/nvml/abi.h against NVIDIA's nvml.h of driver R520 (Debian's libnvidia-ml-dev 11.8, fetched
// into the build tree by scripts/fetch-nvidia-test-files.sh): return codes, enum values, field
// ids, GPM metric ids, every struct the agent passes to NVML, and the prototype of every entry
// point R520 has. What abi.h declares beyond R520 (newer drivers) is listed at the end and checked
// to extend R520 compatibly. Compiled, never run: the compile is the ctest (nvml_abi_r520_check).
//
// The unversioned names (nvmlInit, nvmlDeviceGetCount, ...) must stay functions, not nvml.h's
// macros for the _v2 names: our legacy fallbacks resolve exactly those symbols.
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>

#include "nvidia/abi_check.h"
#include "nvml/abi.h"

namespace ours = ::warpscope::nvml::abi;

static_assert(NVML_API_VERSION == 11, "these checks are for the R520 nvml.h");

// --- Return codes ----------------------------------------------------------------------------
WS_SAME_VALUE(ours::kSuccess, NVML_SUCCESS);
WS_SAME_VALUE(ours::kErrorUninitialized, NVML_ERROR_UNINITIALIZED);
WS_SAME_VALUE(ours::kErrorInvalidArgument, NVML_ERROR_INVALID_ARGUMENT);
WS_SAME_VALUE(ours::kErrorNotSupported, NVML_ERROR_NOT_SUPPORTED);
WS_SAME_VALUE(ours::kErrorNoPermission, NVML_ERROR_NO_PERMISSION);
WS_SAME_VALUE(ours::kErrorNotFound, NVML_ERROR_NOT_FOUND);
WS_SAME_VALUE(ours::kErrorInsufficientSize, NVML_ERROR_INSUFFICIENT_SIZE);
WS_SAME_VALUE(ours::kErrorDriverNotLoaded, NVML_ERROR_DRIVER_NOT_LOADED);
WS_SAME_VALUE(ours::kErrorTimeout, NVML_ERROR_TIMEOUT);
WS_SAME_VALUE(ours::kErrorLibraryNotFound, NVML_ERROR_LIBRARY_NOT_FOUND);
WS_SAME_VALUE(ours::kErrorFunctionNotFound, NVML_ERROR_FUNCTION_NOT_FOUND);
WS_SAME_VALUE(ours::kErrorGpuIsLost, NVML_ERROR_GPU_IS_LOST);
WS_SAME_VALUE(ours::kErrorResetRequired, NVML_ERROR_RESET_REQUIRED);
WS_SAME_VALUE(ours::kErrorLibRmVersionMismatch, NVML_ERROR_LIB_RM_VERSION_MISMATCH);
WS_SAME_VALUE(ours::kErrorMemory, NVML_ERROR_MEMORY);
WS_SAME_VALUE(ours::kErrorNoData, NVML_ERROR_NO_DATA);
WS_SAME_VALUE(ours::kErrorArgumentVersionMismatch, NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
WS_SAME_VALUE(ours::kErrorUnknown, NVML_ERROR_UNKNOWN);
static_assert(sizeof(ours::nvmlReturn_t) == sizeof(::nvmlReturn_t));

// --- Buffer sizes: ours are at least NVIDIA's (R520's name and UUID buffers are the smaller
// v1 sizes; newer drivers document 96) ------------------------------------------------------
static_assert(ours::kSystemDriverVersionBufferSize >= NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE);
static_assert(ours::kDeviceNameBufferSize >= NVML_DEVICE_NAME_BUFFER_SIZE);
static_assert(ours::kDeviceNameBufferSize >= NVML_DEVICE_NAME_V2_BUFFER_SIZE);
static_assert(ours::kDeviceUuidBufferSize >= NVML_DEVICE_UUID_BUFFER_SIZE);
static_assert(ours::kDeviceUuidBufferSize >= NVML_DEVICE_UUID_V2_BUFFER_SIZE);
static_assert(ours::kDeviceSerialBufferSize >= NVML_DEVICE_SERIAL_BUFFER_SIZE);

// --- Enums -------------------------------------------------------------------------------------
WS_SAME_VALUE(ours::kClockGraphics, NVML_CLOCK_GRAPHICS);
WS_SAME_VALUE(ours::kClockSm, NVML_CLOCK_SM);
WS_SAME_VALUE(ours::kClockMem, NVML_CLOCK_MEM);
WS_SAME_VALUE(ours::kTemperatureGpu, NVML_TEMPERATURE_GPU);
WS_SAME_VALUE(ours::kTemperatureThresholdShutdown, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN);
WS_SAME_VALUE(ours::kTemperatureThresholdSlowdown, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN);
WS_SAME_VALUE(ours::kTemperatureThresholdMemMax, NVML_TEMPERATURE_THRESHOLD_MEM_MAX);
WS_SAME_VALUE(ours::kTemperatureThresholdGpuMax, NVML_TEMPERATURE_THRESHOLD_GPU_MAX);
WS_SAME_VALUE(ours::kPcieUtilTxBytes, NVML_PCIE_UTIL_TX_BYTES);
WS_SAME_VALUE(ours::kPcieUtilRxBytes, NVML_PCIE_UTIL_RX_BYTES);
WS_SAME_VALUE(ours::kMemoryErrorCorrected, NVML_MEMORY_ERROR_TYPE_CORRECTED);
WS_SAME_VALUE(ours::kMemoryErrorUncorrected, NVML_MEMORY_ERROR_TYPE_UNCORRECTED);
WS_SAME_VALUE(ours::kEccCounterVolatile, NVML_VOLATILE_ECC);
WS_SAME_VALUE(ours::kEccCounterAggregate, NVML_AGGREGATE_ECC);
WS_SAME_VALUE(ours::kFeatureDisabled, NVML_FEATURE_DISABLED);
WS_SAME_VALUE(ours::kFeatureEnabled, NVML_FEATURE_ENABLED);
WS_SAME_VALUE(ours::kMigDisable, NVML_DEVICE_MIG_DISABLE);
WS_SAME_VALUE(ours::kMigEnable, NVML_DEVICE_MIG_ENABLE);
WS_SAME_VALUE(ours::kArchKepler, NVML_DEVICE_ARCH_KEPLER);
WS_SAME_VALUE(ours::kArchMaxwell, NVML_DEVICE_ARCH_MAXWELL);
WS_SAME_VALUE(ours::kArchPascal, NVML_DEVICE_ARCH_PASCAL);
WS_SAME_VALUE(ours::kArchVolta, NVML_DEVICE_ARCH_VOLTA);
WS_SAME_VALUE(ours::kArchTuring, NVML_DEVICE_ARCH_TURING);
WS_SAME_VALUE(ours::kArchAmpere, NVML_DEVICE_ARCH_AMPERE);
WS_SAME_VALUE(ours::kArchAda, NVML_DEVICE_ARCH_ADA);
WS_SAME_VALUE(ours::kArchHopper, NVML_DEVICE_ARCH_HOPPER);
WS_SAME_VALUE(ours::kEventTypeSingleBitEccError, nvmlEventTypeSingleBitEccError);
WS_SAME_VALUE(ours::kEventTypeDoubleBitEccError, nvmlEventTypeDoubleBitEccError);
WS_SAME_VALUE(ours::kEventTypeXidCriticalError, nvmlEventTypeXidCriticalError);

// --- Field ids -------------------------------------------------------------------------------
WS_SAME_VALUE(ours::kFiEccSbeVolTotal, NVML_FI_DEV_ECC_SBE_VOL_TOTAL);
WS_SAME_VALUE(ours::kFiEccDbeVolTotal, NVML_FI_DEV_ECC_DBE_VOL_TOTAL);
WS_SAME_VALUE(ours::kFiEccSbeAggTotal, NVML_FI_DEV_ECC_SBE_AGG_TOTAL);
WS_SAME_VALUE(ours::kFiEccDbeAggTotal, NVML_FI_DEV_ECC_DBE_AGG_TOTAL);
WS_SAME_VALUE(ours::kFiMemoryTemp, NVML_FI_DEV_MEMORY_TEMP);
WS_SAME_VALUE(ours::kFiTotalEnergyConsumption, NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION);
WS_SAME_VALUE(ours::kFiNvlinkLinkCount, NVML_FI_DEV_NVLINK_LINK_COUNT);
WS_SAME_VALUE(ours::kFiNvlinkThroughputDataTx, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX);
WS_SAME_VALUE(ours::kFiNvlinkThroughputDataRx, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX);
WS_SAME_VALUE(ours::kFiRemappedCor, NVML_FI_DEV_REMAPPED_COR);
WS_SAME_VALUE(ours::kFiRemappedUnc, NVML_FI_DEV_REMAPPED_UNC);
WS_SAME_VALUE(ours::kFiRemappedPending, NVML_FI_DEV_REMAPPED_PENDING);
WS_SAME_VALUE(ours::kFiRemappedFailure, NVML_FI_DEV_REMAPPED_FAILURE);
WS_SAME_VALUE(ours::kValueTypeDouble, NVML_VALUE_TYPE_DOUBLE);
WS_SAME_VALUE(ours::kValueTypeUnsignedInt, NVML_VALUE_TYPE_UNSIGNED_INT);
WS_SAME_VALUE(ours::kValueTypeUnsignedLong, NVML_VALUE_TYPE_UNSIGNED_LONG);
WS_SAME_VALUE(ours::kValueTypeUnsignedLongLong, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG);
WS_SAME_VALUE(ours::kValueTypeSignedLongLong, NVML_VALUE_TYPE_SIGNED_LONG_LONG);

// --- GPM ---------------------------------------------------------------------------------------
WS_SAME_VALUE(ours::kGpmGraphicsUtil, NVML_GPM_METRIC_GRAPHICS_UTIL);
WS_SAME_VALUE(ours::kGpmSmUtil, NVML_GPM_METRIC_SM_UTIL);
WS_SAME_VALUE(ours::kGpmSmOccupancy, NVML_GPM_METRIC_SM_OCCUPANCY);
WS_SAME_VALUE(ours::kGpmIntegerUtil, NVML_GPM_METRIC_INTEGER_UTIL);
WS_SAME_VALUE(ours::kGpmAnyTensorUtil, NVML_GPM_METRIC_ANY_TENSOR_UTIL);
WS_SAME_VALUE(ours::kGpmDfmaTensorUtil, NVML_GPM_METRIC_DFMA_TENSOR_UTIL);
WS_SAME_VALUE(ours::kGpmHmmaTensorUtil, NVML_GPM_METRIC_HMMA_TENSOR_UTIL);
WS_SAME_VALUE(ours::kGpmImmaTensorUtil, NVML_GPM_METRIC_IMMA_TENSOR_UTIL);
WS_SAME_VALUE(ours::kGpmDramBwUtil, NVML_GPM_METRIC_DRAM_BW_UTIL);
WS_SAME_VALUE(ours::kGpmFp64Util, NVML_GPM_METRIC_FP64_UTIL);
WS_SAME_VALUE(ours::kGpmFp32Util, NVML_GPM_METRIC_FP32_UTIL);
WS_SAME_VALUE(ours::kGpmFp16Util, NVML_GPM_METRIC_FP16_UTIL);
WS_SAME_VALUE(ours::kGpmPcieTxPerSec, NVML_GPM_METRIC_PCIE_TX_PER_SEC);
WS_SAME_VALUE(ours::kGpmPcieRxPerSec, NVML_GPM_METRIC_PCIE_RX_PER_SEC);
WS_SAME_VALUE(ours::kGpmNvlinkTotalRxPerSec, NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC);
WS_SAME_VALUE(ours::kGpmNvlinkTotalTxPerSec, NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC);
WS_SAME_VALUE(ours::kGpmSupportVersion, NVML_GPM_SUPPORT_VERSION);
WS_SAME_VALUE(ours::kGpmMetricsGetVersion, NVML_GPM_METRICS_GET_VERSION);
// Ours is the largest array any header declared (333): never smaller than R520's.
static_assert(ours::kGpmMetricMax >= NVML_GPM_METRIC_MAX);

WS_SAME_SIZE(ours::nvmlGpmSupport_t, ::nvmlGpmSupport_t);
WS_SAME_FIELD(ours::nvmlGpmSupport_t, ::nvmlGpmSupport_t, version);
WS_SAME_FIELD(ours::nvmlGpmSupport_t, ::nvmlGpmSupport_t, isSupportedDevice);
WS_SAME_SIZE(ours::nvmlGpmMetric_t, ::nvmlGpmMetric_t);
WS_SAME_FIELD(ours::nvmlGpmMetric_t, ::nvmlGpmMetric_t, metricId);
WS_SAME_FIELD(ours::nvmlGpmMetric_t, ::nvmlGpmMetric_t, nvmlReturn);
WS_SAME_FIELD(ours::nvmlGpmMetric_t, ::nvmlGpmMetric_t, value);
WS_SAME_FIELD(ours::nvmlGpmMetric_t, ::nvmlGpmMetric_t, metricInfo);
WS_SAME_FIELD(ours::nvmlGpmMetric_t, ::nvmlGpmMetric_t, metricInfo.shortName);
WS_SAME_FIELD(ours::nvmlGpmMetric_t, ::nvmlGpmMetric_t, metricInfo.longName);
WS_SAME_FIELD(ours::nvmlGpmMetric_t, ::nvmlGpmMetric_t, metricInfo.unit);
WS_SAME_FIELD(ours::nvmlGpmMetricsGet_t, ::nvmlGpmMetricsGet_t, version);
WS_SAME_FIELD(ours::nvmlGpmMetricsGet_t, ::nvmlGpmMetricsGet_t, numMetrics);
WS_SAME_FIELD(ours::nvmlGpmMetricsGet_t, ::nvmlGpmMetricsGet_t, sample1);
WS_SAME_FIELD(ours::nvmlGpmMetricsGet_t, ::nvmlGpmMetricsGet_t, sample2);
static_assert(offsetof(ours::nvmlGpmMetricsGet_t, metrics) ==
              offsetof(::nvmlGpmMetricsGet_t, metrics));
static_assert(sizeof(ours::nvmlGpmMetricsGet_t) >= sizeof(::nvmlGpmMetricsGet_t));

// --- Structs -----------------------------------------------------------------------------------
WS_SAME_SIZE(ours::nvmlPciInfo_t, ::nvmlPciInfo_t);
WS_SAME_FIELD(ours::nvmlPciInfo_t, ::nvmlPciInfo_t, busIdLegacy);
WS_SAME_FIELD(ours::nvmlPciInfo_t, ::nvmlPciInfo_t, domain);
WS_SAME_FIELD(ours::nvmlPciInfo_t, ::nvmlPciInfo_t, bus);
WS_SAME_FIELD(ours::nvmlPciInfo_t, ::nvmlPciInfo_t, device);
WS_SAME_FIELD(ours::nvmlPciInfo_t, ::nvmlPciInfo_t, pciDeviceId);
WS_SAME_FIELD(ours::nvmlPciInfo_t, ::nvmlPciInfo_t, pciSubSystemId);
WS_SAME_FIELD(ours::nvmlPciInfo_t, ::nvmlPciInfo_t, busId);

WS_SAME_SIZE(ours::nvmlMemory_t, ::nvmlMemory_t);
WS_SAME_FIELD(ours::nvmlMemory_t, ::nvmlMemory_t, total);
WS_SAME_FIELD(ours::nvmlMemory_t, ::nvmlMemory_t, free);
WS_SAME_FIELD(ours::nvmlMemory_t, ::nvmlMemory_t, used);
WS_SAME_SIZE(ours::nvmlMemory_v2_t, ::nvmlMemory_v2_t);
WS_SAME_FIELD(ours::nvmlMemory_v2_t, ::nvmlMemory_v2_t, version);
WS_SAME_FIELD(ours::nvmlMemory_v2_t, ::nvmlMemory_v2_t, total);
WS_SAME_FIELD(ours::nvmlMemory_v2_t, ::nvmlMemory_v2_t, reserved);
WS_SAME_FIELD(ours::nvmlMemory_v2_t, ::nvmlMemory_v2_t, free);
WS_SAME_FIELD(ours::nvmlMemory_v2_t, ::nvmlMemory_v2_t, used);
WS_SAME_VALUE(ours::kMemoryV2Version, nvmlMemory_v2);

WS_SAME_SIZE(ours::nvmlUtilization_t, ::nvmlUtilization_t);
WS_SAME_FIELD(ours::nvmlUtilization_t, ::nvmlUtilization_t, gpu);
WS_SAME_FIELD(ours::nvmlUtilization_t, ::nvmlUtilization_t, memory);

WS_SAME_SIZE(ours::nvmlProcessUtilizationSample_t, ::nvmlProcessUtilizationSample_t);
WS_SAME_FIELD(ours::nvmlProcessUtilizationSample_t, ::nvmlProcessUtilizationSample_t, pid);
WS_SAME_FIELD(ours::nvmlProcessUtilizationSample_t, ::nvmlProcessUtilizationSample_t, timeStamp);
WS_SAME_FIELD(ours::nvmlProcessUtilizationSample_t, ::nvmlProcessUtilizationSample_t, smUtil);
WS_SAME_FIELD(ours::nvmlProcessUtilizationSample_t, ::nvmlProcessUtilizationSample_t, memUtil);
WS_SAME_FIELD(ours::nvmlProcessUtilizationSample_t, ::nvmlProcessUtilizationSample_t, encUtil);
WS_SAME_FIELD(ours::nvmlProcessUtilizationSample_t, ::nvmlProcessUtilizationSample_t, decUtil);

WS_SAME_SIZE(ours::nvmlProcessInfo_v1_t, ::nvmlProcessInfo_v1_t);
WS_SAME_FIELD(ours::nvmlProcessInfo_v1_t, ::nvmlProcessInfo_v1_t, pid);
WS_SAME_FIELD(ours::nvmlProcessInfo_v1_t, ::nvmlProcessInfo_v1_t, usedGpuMemory);
WS_SAME_SIZE(ours::nvmlProcessInfo_t, ::nvmlProcessInfo_t);
WS_SAME_SIZE(ours::nvmlProcessInfo_t, ::nvmlProcessInfo_v2_t);
WS_SAME_FIELD(ours::nvmlProcessInfo_t, ::nvmlProcessInfo_t, pid);
WS_SAME_FIELD(ours::nvmlProcessInfo_t, ::nvmlProcessInfo_t, usedGpuMemory);
WS_SAME_FIELD(ours::nvmlProcessInfo_t, ::nvmlProcessInfo_t, gpuInstanceId);
WS_SAME_FIELD(ours::nvmlProcessInfo_t, ::nvmlProcessInfo_t, computeInstanceId);

WS_SAME_SIZE(ours::nvmlValue_t, ::nvmlValue_t);
WS_SAME_FIELD(ours::nvmlValue_t, ::nvmlValue_t, dVal);
WS_SAME_FIELD(ours::nvmlValue_t, ::nvmlValue_t, uiVal);
WS_SAME_FIELD(ours::nvmlValue_t, ::nvmlValue_t, ulVal);
WS_SAME_FIELD(ours::nvmlValue_t, ::nvmlValue_t, ullVal);
WS_SAME_FIELD(ours::nvmlValue_t, ::nvmlValue_t, sllVal);
WS_SAME_SIZE(ours::nvmlFieldValue_t, ::nvmlFieldValue_t);
WS_SAME_FIELD(ours::nvmlFieldValue_t, ::nvmlFieldValue_t, fieldId);
WS_SAME_FIELD(ours::nvmlFieldValue_t, ::nvmlFieldValue_t, scopeId);
WS_SAME_FIELD(ours::nvmlFieldValue_t, ::nvmlFieldValue_t, timestamp);
WS_SAME_FIELD(ours::nvmlFieldValue_t, ::nvmlFieldValue_t, latencyUsec);
WS_SAME_FIELD(ours::nvmlFieldValue_t, ::nvmlFieldValue_t, valueType);
WS_SAME_FIELD(ours::nvmlFieldValue_t, ::nvmlFieldValue_t, nvmlReturn);
WS_SAME_FIELD(ours::nvmlFieldValue_t, ::nvmlFieldValue_t, value);

WS_SAME_SIZE(ours::nvmlEventData_t, ::nvmlEventData_t);
WS_SAME_FIELD(ours::nvmlEventData_t, ::nvmlEventData_t, device);
WS_SAME_FIELD(ours::nvmlEventData_t, ::nvmlEventData_t, eventType);
WS_SAME_FIELD(ours::nvmlEventData_t, ::nvmlEventData_t, eventData);
WS_SAME_FIELD(ours::nvmlEventData_t, ::nvmlEventData_t, gpuInstanceId);
WS_SAME_FIELD(ours::nvmlEventData_t, ::nvmlEventData_t, computeInstanceId);

// --- Prototypes: every entry point of WARPSCOPE_NVML_FUNCTIONS / _LEGACY_FUNCTIONS in R520 ------
#define WS_NVML_SIGNATURE(ret, name, params) WS_SAME_SIGNATURE(ours, name);
#define WS_NVML_R520_FUNCTIONS(X)                                                                         \
  X(, nvmlInit_v2, )                                                                                      \
  X(, nvmlShutdown, ) X(, nvmlErrorString, ) X(, nvmlSystemGetDriverVersion, ) X(                         \
      , nvmlSystemGetNVMLVersion, ) X(, nvmlSystemGetCudaDriverVersion_v2, )                              \
      X(, nvmlSystemGetProcessName, ) X(, nvmlDeviceGetCount_v2, ) X(                                     \
          , nvmlDeviceGetHandleByIndex_v2, ) X(, nvmlDeviceGetIndex, ) X(, nvmlDeviceGetName, )           \
          X(, nvmlDeviceGetUUID, ) X(, nvmlDeviceGetSerial, ) X(, nvmlDeviceGetPciInfo_v3, ) X(           \
              , nvmlDeviceGetMinorNumber, ) X(, nvmlDeviceGetArchitecture, )                              \
              X(, nvmlDeviceGetCudaComputeCapability, ) X(, nvmlDeviceGetMemoryInfo_v2, ) X(              \
                  , nvmlDeviceGetUtilizationRates, ) X(, nvmlDeviceGetEncoderUtilization, )               \
                  X(, nvmlDeviceGetDecoderUtilization, ) X(, nvmlDeviceGetProcessUtilization, ) X(        \
                      , nvmlDeviceGetComputeRunningProcesses_v3, )                                        \
                      X(, nvmlDeviceGetGraphicsRunningProcesses_v3, ) X(                                  \
                          , nvmlDeviceGetPowerUsage, ) X(, nvmlDeviceGetPowerManagementLimit, )           \
                          X(, nvmlDeviceGetEnforcedPowerLimit, ) X(                                       \
                              ,                                                                           \
                              nvmlDeviceGetTotalEnergyConsumption, ) X(,                                  \
                                                                       nvmlDeviceGetTemperature, )        \
                              X(, nvmlDeviceGetTemperatureThreshold, )                                    \
                              X(, nvmlDeviceGetClockInfo, ) X(, nvmlDeviceGetMaxClockInfo, ) X(           \
                                  ,                                                                       \
                                  nvmlDeviceGetPcieThroughput, ) X(,                                      \
                                                                   nvmlDeviceGetPcieReplayCounter, )      \
                                  X(, nvmlDeviceGetFieldValues, ) X(                                      \
                                      ,                                                                   \
                                      nvmlDeviceGetNvLinkState, ) X(,                                     \
                                                                    nvmlDeviceGetTotalEccErrors, )        \
                                      X(, nvmlDeviceGetRemappedRows, ) X(                                 \
                                          , nvmlEventSetCreate, ) X(, nvmlDeviceRegisterEvents, )         \
                                          X(, nvmlDeviceGetSupportedEventTypes, ) X(                      \
                                              , nvmlEventSetWait_v2, ) X(, nvmlEventSetFree, )            \
                                              X(, nvmlDeviceGetMigMode, ) X(                              \
                                                  , nvmlDeviceGetMaxMigDeviceCount, )                     \
                                                  X(, nvmlDeviceGetMigDeviceHandleByIndex, ) X(           \
                                                      ,                                                   \
                                                      nvmlDeviceGetDeviceHandleFromMigDeviceHandle, )     \
                                                      X(, nvmlDeviceGetGpuInstanceId, )                   \
                                                          X(, nvmlDeviceGetComputeInstanceId, ) X(        \
                                                              , nvmlGpmQueryDeviceSupport, )              \
                                                              X(, nvmlGpmSampleAlloc, ) X(                \
                                                                  , nvmlGpmSampleFree, )                  \
                                                                  X(, nvmlGpmSampleGet, ) X(              \
                                                                      , nvmlGpmMetricsGet, ) /* legacy    \
                                                                                                fallbacks \
                                                                                              */          \
      X(, nvmlInit, ) X(, nvmlSystemGetCudaDriverVersion, ) X(, nvmlDeviceGetCount, )                     \
          X(, nvmlDeviceGetHandleByIndex, ) X(, nvmlDeviceGetPciInfo_v2, )                                \
              X(, nvmlDeviceGetMemoryInfo, ) X(, nvmlDeviceGetComputeRunningProcesses_v2, )               \
                  X(, nvmlDeviceGetGraphicsRunningProcesses_v2, )                                         \
                      X(, nvmlDeviceGetComputeRunningProcesses, )                                         \
                          X(, nvmlDeviceGetGraphicsRunningProcesses, )                                    \
                              X(, nvmlDeviceGetCurrentClocksThrottleReasons, )
WS_NVML_R520_FUNCTIONS(WS_NVML_SIGNATURE)

// --- Declared by abi.h for drivers newer than R520 (not in this header) --------------------------
// nvmlDeviceGetCurrentClocksEventReasons (R535: the new name of ...ClocksThrottleReasons, same
// signature), nvmlGpmMigSampleGet, kArchBlackwell, kValueTypeSignedInt / kValueTypeUnsignedShort
// and nvmlValue_t's siVal / usVal, nvmlProcessInfoWide_t (R535's 32-byte stride), and GPM metric
// arrays up to 333 entries. They must extend R520's declarations without moving anything:
static_assert(ours::kArchBlackwell == NVML_DEVICE_ARCH_HOPPER + 1);
static_assert(ours::kValueTypeSignedInt == NVML_VALUE_TYPE_SIGNED_LONG_LONG + 1);
static_assert(ours::kValueTypeUnsignedShort == ours::kValueTypeSignedInt + 1);
static_assert(offsetof(ours::nvmlProcessInfoWide_t, computeInstanceId) ==
              offsetof(::nvmlProcessInfo_t, computeInstanceId));
static_assert(offsetof(ours::nvmlProcessInfoWide_t, usedGpuCcProtectedMemory) ==
              sizeof(::nvmlProcessInfo_t));
static_assert(::warpscope::abi_check::SameSignature<
              ours::nvmlDeviceGetCurrentClocksEventReasons_fn,
              decltype(&::nvmlDeviceGetCurrentClocksThrottleReasons)>::value);
