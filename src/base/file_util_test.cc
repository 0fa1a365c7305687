// SPDX-License-Identifier: Apache-2.0
#include "base/file_util.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace warpscope::base {
namespace {

TEST(FileUtilTest, WriteThenRead) {
  char tmpl[] = "/tmp/warpscope_file_test_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string path = std::string(tmpl) + "/f";
  ASSERT_TRUE(WriteFile(path, "hello\n").ok());
  EXPECT_EQ(*ReadFile(path), "hello\n");
  std::string out;
  EXPECT_TRUE(ReadFileInto(path.c_str(), out));
  EXPECT_EQ(out, "hello\n");
}

TEST(FileUtilTest, WriteAtomicallyReplacesTheFileAndLeavesNoTemporary) {
  char tmpl[] = "/tmp/warpscope_file_test_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string path = std::string(tmpl) + "/state.json";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "new").ok());
  EXPECT_EQ(*ReadFile(path), "new");
  EXPECT_FALSE(ReadFile(path + ".tmp"));
  base::Status bad = WriteFileAtomically(std::string(tmpl) + "/missing/dir/f", "x");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("missing/dir/f.tmp"), std::string::npos) << bad.message();
}

TEST(FileUtilTest, MissingFileIsNotFound) {
  auto r = ReadFile("/nonexistent/warpscope");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), StatusCode::kNotFound);
  EXPECT_NE(r.error().message().find("/nonexistent/warpscope"), std::string::npos);
}

TEST(FileUtilTest, SplitAndTrim) {
  auto parts = SplitString("  a b\tc  ", " \t");
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2], "c");
  EXPECT_EQ(TrimWhitespace("  x y \n"), "x y");
}

}  // namespace
}  // namespace warpscope::base
