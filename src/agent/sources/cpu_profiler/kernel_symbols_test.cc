// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/kernel_symbols.h"

#include <gtest/gtest.h>

namespace warpscope::agent::cpu_profiler {
namespace {

constexpr const char* kKallsyms =
    "ffffffff81000000 T _stext\n"
    "ffffffff81001000 T do_syscall_64\n"
    "ffffffff81002000 D some_data\n"
    "ffffffff81003000 t __x64_sys_getppid\n"
    "ffffffffc0a01000 t nv_init\t[nvidia]\n";

TEST(KernelSymbolsTest, FindsTheTextSymbolHoldingAnAddress) {
  auto syms = KernelSymbols::Parse(kKallsyms);
  ASSERT_TRUE(syms.has_value()) << syms.error().message();
  EXPECT_EQ(syms->size(), 4u) << "data symbols are dropped";
  EXPECT_EQ(syms->Find(0xffffffff81001010).function, "do_syscall_64");
  EXPECT_EQ(syms->Find(0xffffffff81001010).module, "[kernel.kallsyms]");
  EXPECT_EQ(syms->Find(0xffffffff81002010).function, "do_syscall_64")
      << "data symbols do not end a function";
  EXPECT_EQ(syms->Find(0xffffffffc0a01004).function, "nv_init");
  EXPECT_EQ(syms->Find(0xffffffffc0a01004).module, "[nvidia]");
  auto below = syms->Find(0x1000);
  EXPECT_FALSE(below.resolved);
  EXPECT_EQ(below.function, "[kernel] 0x1000");
}

TEST(KernelSymbolsTest, HiddenAddressesSayKptrRestrict) {
  auto syms = KernelSymbols::Parse("0000000000000000 T _stext\n0000000000000000 t foo\n");
  ASSERT_FALSE(syms.has_value());
  EXPECT_EQ(syms.error().code(), base::StatusCode::kPermissionDenied);
  EXPECT_NE(syms.error().message().find("kptr_restrict"), std::string::npos);
}

TEST(KernelSymbolsTest, IsBounded) {
  auto syms = KernelSymbols::Parse(kKallsyms, 2);
  ASSERT_TRUE(syms.has_value());
  EXPECT_EQ(syms->size(), 2u);
}

TEST(KernelSymbolsTest, LoadsThisMachinesKallsymsOrSaysWhyNot) {
  std::string warning;
  KernelSymbols syms = KernelSymbols::Load("/", &warning);
  EXPECT_TRUE(syms.size() > 0 || !warning.empty());
}

}  // namespace
}  // namespace warpscope::agent::cpu_profiler
