// SPDX-License-Identifier: Apache-2.0
#include "pyframes/memory_reader.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "pyframes/testing/fake_memory_reader.h"

namespace warpscope::pyframes {
namespace {

TEST(MemoryReaderTest, LocalReadsItsOwnMemoryAndRefusesImplausibleAddresses) {
  const char text[] = "frames";
  char out[sizeof(text)] = {};
  LocalMemoryReader local;
  ASSERT_TRUE(local.Read(reinterpret_cast<uint64_t>(text), out, sizeof(text)));
  EXPECT_STREQ(out, "frames");
  EXPECT_FALSE(local.Read(0, out, 1));
  EXPECT_FALSE(local.Read(16, out, 1));
  EXPECT_FALSE(local.Read(uint64_t{1} << 63, out, 1));
  EXPECT_FALSE(local.Read(~uint64_t{0} - 2, out, 8));
}

TEST(MemoryReaderTest, ProcessReaderFailsOnUnmappedMemoryInsteadOfFaulting) {
  ProcessMemoryReader self(getpid());
  uint64_t value = 0x1234;
  uint64_t out = 0;
  ASSERT_TRUE(self.Read(reinterpret_cast<uint64_t>(&value), &out, sizeof(out)));
  EXPECT_EQ(out, 0x1234u);
  EXPECT_FALSE(self.Read(0x10000, &out, sizeof(out)));  // below every mapping
}

// A child writes a known buffer, sends its address, and waits; the parent reads it with
// process_vm_readv.
TEST(MemoryReaderTest, ProcessReaderReadsAChildProcessBuffer) {
  int to_parent[2];
  int to_child[2];
  ASSERT_EQ(pipe(to_parent), 0);
  ASSERT_EQ(pipe(to_child), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    static char buffer[64];
    std::strcpy(buffer, "known bytes of the child");
    const uint64_t addr = reinterpret_cast<uint64_t>(buffer);
    char done = 0;
    const bool ok = write(to_parent[1], &addr, sizeof(addr)) == sizeof(addr) &&
                    read(to_child[0], &done, 1) == 1;
    _exit(ok ? 0 : 1);
  }
  uint64_t addr = 0;
  ASSERT_EQ(read(to_parent[0], &addr, sizeof(addr)), static_cast<ssize_t>(sizeof(addr)));
  ProcessMemoryReader reader(child);
  char out[25] = {};
  const bool ok = reader.Read(addr, out, 24);
  char done = 1;
  ASSERT_EQ(write(to_child[1], &done, 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(ok) << "process_vm_readv of a child (same uid) was refused";
  EXPECT_STREQ(out, "known bytes of the child");
  for (int fd : {to_parent[0], to_parent[1], to_child[0], to_child[1]}) {
    close(fd);
  }
}

TEST(MemoryReaderTest, FakeReadsOnlyInsideMappedRegions) {
  FakeMemoryReader fake;
  fake.Map(0x1000, 16);
  fake.Put<uint64_t>(0x1008, 42);
  uint64_t v = 0;
  ASSERT_TRUE(fake.Read(0x1008, &v, 8));
  EXPECT_EQ(v, 42u);
  EXPECT_FALSE(fake.Read(0x100c, &v, 8));  // crosses the end
  EXPECT_FALSE(fake.Read(0x2000, &v, 8));
}

}  // namespace
}  // namespace warpscope::pyframes
