// SPDX-License-Identifier: Apache-2.0
#include "nvml/nvml_status.h"

#include <gtest/gtest.h>

namespace warpscope::nvml {
namespace {

TEST(NvmlStatusTest, MapsCodesToStatusClasses) {
  EXPECT_EQ(ToStatusCode(abi::kSuccess), base::StatusCode::kOk);
  EXPECT_EQ(ToStatusCode(abi::kErrorNotSupported), base::StatusCode::kUnsupported);
  EXPECT_EQ(ToStatusCode(abi::kErrorFunctionNotFound), base::StatusCode::kUnsupported);
  EXPECT_EQ(ToStatusCode(abi::kErrorNoPermission), base::StatusCode::kPermissionDenied);
  EXPECT_EQ(ToStatusCode(abi::kErrorGpuIsLost), base::StatusCode::kUnavailable);
  EXPECT_EQ(ToStatusCode(abi::kErrorDriverNotLoaded), base::StatusCode::kUnavailable);
  EXPECT_EQ(ToStatusCode(abi::kErrorLibRmVersionMismatch), base::StatusCode::kUnavailable);
  EXPECT_EQ(ToStatusCode(abi::kErrorNotFound), base::StatusCode::kNotFound);
  EXPECT_EQ(ToStatusCode(abi::kErrorInsufficientSize), base::StatusCode::kResourceExhausted);
  EXPECT_EQ(ToStatusCode(abi::kErrorArgumentVersionMismatch), base::StatusCode::kInvalidArgument);
  EXPECT_EQ(ToStatusCode(abi::kErrorUnknown), base::StatusCode::kInternal);
  EXPECT_EQ(ToStatusCode(12345), base::StatusCode::kInternal);
}

TEST(NvmlStatusTest, NamesAndReasons) {
  EXPECT_EQ(ReturnCodeName(abi::kErrorGpuIsLost), "NVML_ERROR_GPU_IS_LOST");
  EXPECT_EQ(ReturnCodeName(abi::kErrorUnknown), "NVML_ERROR_UNKNOWN");
  EXPECT_EQ(ReturnCodeName(-7), "NVML_ERROR_UNRECOGNIZED");
  EXPECT_EQ(ReturnCodeReason(abi::kErrorNotSupported), "not_supported");
  EXPECT_EQ(ReturnCodeReason(abi::kErrorGpuIsLost), "gpu_is_lost");
  EXPECT_EQ(ReturnCodeReason(abi::kErrorUnknown), "unknown");
}

TEST(NvmlStatusTest, StatusNamesCallCodeAndRemedy) {
  base::Status s = ToStatus(abi::kErrorLibRmVersionMismatch, "nvmlInit_v2",
                            "RM has detected an NVML/RM version mismatch.");
  EXPECT_EQ(s.code(), base::StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("nvmlInit_v2"), std::string::npos);
  EXPECT_NE(s.message().find("NVML_ERROR_LIB_RM_VERSION_MISMATCH, 18"), std::string::npos);
  EXPECT_NE(s.message().find("reboot or reload the driver"), std::string::npos);

  base::Status d = ToStatus(abi::kErrorDriverNotLoaded, "nvmlInit_v2");
  EXPECT_NE(d.message().find("NVML_ERROR_DRIVER_NOT_LOADED (9)"), std::string::npos);
  EXPECT_NE(d.message().find("modprobe nvidia"), std::string::npos);

  EXPECT_TRUE(ToStatus(abi::kSuccess, "x").ok());
}

TEST(NvmlStatusTest, Predicates) {
  EXPECT_TRUE(IsUnsupported(abi::kErrorNotSupported));
  EXPECT_TRUE(IsUnsupported(abi::kErrorFunctionNotFound));
  EXPECT_FALSE(IsUnsupported(abi::kErrorNoPermission));
  EXPECT_TRUE(IsGpuLost(abi::kErrorGpuIsLost));
  EXPECT_TRUE(IsGpuLost(abi::kErrorResetRequired));
  EXPECT_FALSE(IsGpuLost(abi::kErrorUnknown));
}

}  // namespace
}  // namespace warpscope::nvml
