// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/cupti_loader.h"

#include <gtest/gtest.h>

#include <string>

namespace warpscope::cupti_inject {
namespace {

TEST(CuptiLoaderTest, MissingLibraryNamesWhatWasTriedAndTheSetting) {
  CuptiApi api;
  std::string error;
  EXPECT_FALSE(LoadCupti("/nonexistent/libcupti.so.13", &api, &error));
  EXPECT_EQ(api.handle, nullptr);
  EXPECT_NE(error.find("/nonexistent/libcupti.so.13"), std::string::npos) << error;
  EXPECT_NE(error.find("WARPSCOPE_CUPTI_LIBRARY"), std::string::npos) << error;
}

TEST(CuptiLoaderTest, LibraryWithoutTheRequiredEntryPointsIsRefused) {
  CuptiApi api;
  std::string error;
  EXPECT_FALSE(LoadCupti("libc.so.6", &api, &error));
  EXPECT_NE(error.find("lacks cuptiGetVersion"), std::string::npos) << error;
  EXPECT_NE(error.find("cuptiSubscribe"), std::string::npos) << error;
}

TEST(CuptiLoaderTest, VersionsBeforeCuda12AreRefused) {
  std::string error;
  EXPECT_TRUE(CuptiVersionSupported(kMinCuptiVersion, &error));
  EXPECT_TRUE(CuptiVersionSupported(26, &error));
  EXPECT_EQ(error, "");
  EXPECT_FALSE(CuptiVersionSupported(kMinCuptiVersion - 1, &error));
  EXPECT_NE(error.find("version 17"), std::string::npos) << error;
}

abi::CUptiResult FakeResultString(abi::CUptiResult r, const char** s) {
  *s = r == 39 ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" : nullptr;
  return r == 39 ? abi::kSuccess : 1;
}

TEST(CuptiLoaderTest, ResultStringUsesCuptisNameWhenItHasOne) {
  CuptiApi api;
  EXPECT_EQ(ResultString(api, 39), "CUPTI error 39");
  api.cuptiGetResultString = &FakeResultString;
  EXPECT_EQ(ResultString(api, 39), "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39)");
  EXPECT_EQ(ResultString(api, 7), "CUPTI error 7");
}

}  // namespace
}  // namespace warpscope::cupti_inject
