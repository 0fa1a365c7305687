// SPDX-License-Identifier: Apache-2.0
#include "exporters/server/batch_spool.h"

#include <gtest/gtest.h>

#include "base/file_util.h"
#include "base/testing/temp_dir.h"

namespace warpscope::exporters {
namespace {

using base::TempDir;

std::unique_ptr<BatchSpool> MustOpen(const std::string& dir) {
  auto spool = BatchSpool::Open(dir);
  EXPECT_TRUE(spool.has_value()) << spool.error().ToString();
  return spool ? std::move(*spool) : nullptr;
}

TEST(BatchSpoolTest, WritesListsReadsAndRemovesInSequenceOrder) {
  TempDir tmp;
  auto spool = MustOpen(tmp.path());
  ASSERT_NE(spool, nullptr);
  ASSERT_TRUE(spool->Write(1'700'000'000'000'000'123, "third").ok());
  ASSERT_TRUE(spool->Write(9, "first").ok());
  ASSERT_TRUE(spool->Write(10, "second!").ok());

  auto files = spool->List();
  ASSERT_TRUE(files.has_value());
  ASSERT_EQ(files->size(), 3u);
  EXPECT_EQ((*files)[0].sequence, 9u);
  EXPECT_EQ((*files)[0].size, 5u);
  EXPECT_EQ((*files)[1].sequence, 10u);
  EXPECT_EQ((*files)[1].size, 7u);
  EXPECT_EQ((*files)[2].sequence, 1'700'000'000'000'000'123u);
  EXPECT_EQ(spool->Read(10).value_or(""), "second!");
  EXPECT_EQ(tmp.Files(".batch").front(), "00000000000000000009.batch");

  ASSERT_TRUE(spool->Remove(9).ok());
  ASSERT_TRUE(spool->Remove(9).ok());  // already gone: fine
  EXPECT_EQ(spool->List()->size(), 2u);
  EXPECT_FALSE(spool->Read(9).has_value());
}

TEST(BatchSpoolTest, OpenRemovesInterruptedWritesAndListSkipsEmptyFiles) {
  TempDir tmp;
  ASSERT_TRUE(base::WriteFile(tmp.path() + "/00000000000000000005.batch.tmp", "partial").ok());
  ASSERT_TRUE(base::WriteFile(tmp.path() + "/00000000000000000006.batch", "").ok());
  ASSERT_TRUE(base::WriteFile(tmp.path() + "/00000000000000000007.batch", "ok").ok());
  ASSERT_TRUE(base::WriteFile(tmp.path() + "/notes.txt", "kept").ok());
  auto spool = MustOpen(tmp.path());
  ASSERT_NE(spool, nullptr);

  auto files = spool->List();
  ASSERT_TRUE(files.has_value());
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ((*files)[0].sequence, 7u);
  EXPECT_TRUE(tmp.Files(".tmp").empty());
  EXPECT_EQ(tmp.Files(".txt").size(), 1u);
}

TEST(BatchSpoolTest, ReservedSequencePersistsAcrossOpens) {
  TempDir tmp;
  {
    auto spool = MustOpen(tmp.path());
    ASSERT_NE(spool, nullptr);
    EXPECT_EQ(spool->reserved_sequence(), 0u);
    ASSERT_TRUE(spool->ReserveSequences(4242).ok());
    EXPECT_EQ(spool->reserved_sequence(), 4242u);
  }
  auto again = MustOpen(tmp.path());
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->reserved_sequence(), 4242u);
}

TEST(BatchSpoolTest, SecondOpenOfALockedDirectoryFailsUntilTheFirstCloses) {
  TempDir tmp;
  auto first = MustOpen(tmp.path());
  ASSERT_NE(first, nullptr);
  auto second = BatchSpool::Open(tmp.path());
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code(), base::StatusCode::kUnavailable);
  EXPECT_NE(second.error().message().find("in use"), std::string::npos);
  first.reset();
  EXPECT_TRUE(BatchSpool::Open(tmp.path()).has_value());
}

TEST(BatchSpoolTest, CreatesTheDirectoryAndNamesItWhenItCannot) {
  TempDir tmp;
  EXPECT_TRUE(BatchSpool::Open(tmp.path() + "/spool").has_value());
  auto bad = BatchSpool::Open(tmp.path() + "/missing/parent/spool");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("--buffer-dir"), std::string::npos);
  EXPECT_NE(bad.error().message().find("missing/parent"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::exporters
