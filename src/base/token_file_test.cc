// SPDX-License-Identifier: Apache-2.0
#include "base/token_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>

#include "base/file_util.h"
#include "base/testing/temp_dir.h"

namespace warpscope::base {
namespace {

constexpr std::string_view kFlag = "--auth-token-file";

class TokenFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
  }
  void TearDown() override {}

  // Writes `content` to a file of the test directory with `mode`; returns its path.
  std::string Write(std::string_view content, mode_t mode = 0600) {
    const std::string path = dir_ + "/token" + std::to_string(files_++);
    EXPECT_TRUE(WriteFile(path, content).ok());
    EXPECT_EQ(chmod(path.c_str(), mode), 0);
    return path;
  }

  // The error of reading `path`; fails the test if it was read.
  Status ErrorOf(const std::string& path) {
    auto r = ReadTokenFile(kFlag, path);
    EXPECT_FALSE(r.has_value()) << "read: " << (r ? *r : "");
    if (r) {
      return OkStatus();
    }
    // Every message names the flag and the file.
    EXPECT_NE(r.error().message().find(kFlag), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find(path), std::string::npos) << r.error().message();
    return r.error();
  }

  base::TempDir tmp_;  // removed after everything below
  std::string dir_;
  int files_ = 0;
};

TEST_F(TokenFileTest, ReturnsTheTokenWithoutSurroundingWhitespace) {
  auto r = ReadTokenFile(kFlag, Write("  s3cret-token\n"));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(*r, "s3cret-token");
}

TEST_F(TokenFileTest, AcceptsAnOwnerOnlyReadableFile) {
  auto r = ReadTokenFile(kFlag, Write("abc\n", 0400));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(*r, "abc");
}

TEST_F(TokenFileTest, MissingFileIsNotFoundWithTheRemedy) {
  Status st = ErrorOf(dir_ + "/missing");
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("chmod 600"), std::string::npos) << st.message();
}

TEST_F(TokenFileTest, DirectoryIsNotAToken) {
  Status st = ErrorOf(dir_);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("not a regular file"), std::string::npos) << st.message();
}

TEST_F(TokenFileTest, FileLargerThanATokenIsRefused) {
  EXPECT_TRUE(ReadTokenFile(kFlag, Write(std::string(kMaxTokenFileBytes, 'a'))).has_value());
  Status st = ErrorOf(Write(std::string(kMaxTokenFileBytes + 1, 'a')));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("larger than 4096 bytes"), std::string::npos) << st.message();
}

TEST_F(TokenFileTest, EmptyOrBlankFileIsRefused) {
  for (std::string_view content : {"", " \n", "\t\r\n"}) {
    Status st = ErrorOf(Write(content));
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("empty"), std::string::npos) << st.message();
  }
}

TEST_F(TokenFileTest, SpacesLineBreaksAndControlCharactersInsideAreRefused) {
  for (std::string_view content : {"abc def\n", "abc\ndef\n", "abc\tdef",
                                   "abc\x01"
                                   "def",
                                   "abc\x7f"}) {
    Status st = ErrorOf(Write(content));
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << content;
    EXPECT_NE(st.message().find("the file must hold the token alone"), std::string::npos)
        << st.message();
  }
}

TEST_F(TokenFileTest, FileOpenToGroupOrOthersIsPermissionDenied) {
  for (mode_t mode : {0644, 0640, 0604, 0620, 0602, 0610}) {
    Status st = ErrorOf(Write("s3cret\n", mode));
    EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << std::oct << mode;
    EXPECT_NE(st.message().find("chmod 600"), std::string::npos) << st.message();
  }
}

TEST_F(TokenFileTest, ContentErrorsComeBeforeThePermissionCheck) {
  Status st = ErrorOf(Write(" \n", 0644));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("empty"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace warpscope::base
