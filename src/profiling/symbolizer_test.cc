// SPDX-License-Identifier: Apache-2.0
#include "profiling/symbolizer.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/file_util.h"
#include "base/testing/temp_dir.h"

// A function of the test executable itself, with a stable demangled name.
namespace warpscope_symbolizer_test {
__attribute__((noinline)) int MainExecutableFunction(int x) { return x * 5 + 3; }
}  // namespace warpscope_symbolizer_test

namespace warpscope::profiling {
namespace {

namespace fs = std::filesystem;
using base::TempDir;

// dlopens a fixture library for the life of the test.
class Library {
 public:
  explicit Library(const char* path) : handle_(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {}
  ~Library() {
    if (handle_ != nullptr) {
      dlclose(handle_);
    }
  }
  bool ok() const { return handle_ != nullptr; }
  uint64_t Address(const char* symbol) const {
    return reinterpret_cast<uint64_t>(dlsym(handle_, symbol));
  }
  void* Call(const char* symbol) const {
    auto fn = reinterpret_cast<void* (*)()>(dlsym(handle_, symbol));
    return fn == nullptr ? nullptr : fn();
  }

 private:
  void* handle_;
};

TEST(DemangleTest, DemanglesItaniumNamesAndKeepsOthers) {
  EXPECT_EQ(Demangle("_ZN17warpscope_fixture6Widget7ComputeEi"),
            "warpscope_fixture::Widget::Compute(int)");
  EXPECT_EQ(Demangle("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
  EXPECT_EQ(Demangle("_Zbroken"), "_Zbroken");
  EXPECT_EQ(Demangle(""), "");
}

TEST(ParseProcMapsTest, ParsesFileAnonymousAndSpecialMappings) {
  auto maps = ParseProcMaps(
      "7f0000001000-7f0000002000 r-xp 00001000 fd:01 1234   /usr/lib/libfoo.so.1\n"
      "55d000000000-55d000021000 rw-p 00000000 00:00 0      [heap]\n"
      "7f0000000000-7f0000001000 r--p 00000000 fd:01 1234   /usr/lib/libfoo.so.1\n"
      "7f1000000000-7f1000001000 rwxp 00000000 00:00 0 \n"
      "garbage line\n");
  ASSERT_EQ(maps.size(), 4u);
  EXPECT_EQ(maps[0].start, 0x55d000000000u);
  EXPECT_EQ(maps[0].path, "[heap]");
  EXPECT_FALSE(maps[0].executable);
  EXPECT_EQ(maps[2].start, 0x7f0000001000u);
  EXPECT_EQ(maps[2].end, 0x7f0000002000u);
  EXPECT_EQ(maps[2].file_offset, 0x1000u);
  EXPECT_EQ(maps[2].inode, 1234u);
  EXPECT_TRUE(maps[2].executable);
  EXPECT_EQ(maps[2].path, "/usr/lib/libfoo.so.1");
  EXPECT_EQ(maps[3].path, "");
}

TEST(ParsePerfMapTest, ParsesHexWithAndWithoutPrefixSortedByStart) {
  auto symbols = ParsePerfMap(
      "7f1000002000 40 LazyCompile:~foo bar.js:1\n"
      "0x7f1000001000 0x20 jitted_kernel_launcher\n"
      "zz 10 bad\n"
      "7f1000003000 0 zero_size\n");
  ASSERT_EQ(symbols.size(), 2u);
  EXPECT_EQ(symbols[0].start, 0x7f1000001000u);
  EXPECT_EQ(symbols[0].size, 0x20u);
  EXPECT_EQ(symbols[0].name, "jitted_kernel_launcher");
  EXPECT_EQ(symbols[1].name, "LazyCompile:~foo bar.js:1");
}

TEST(ElfSymbolsTest, ReadsSymtabAndBuildId) {
  auto elf = ElfSymbols::Load(SYMBOLIZER_TESTLIB);
  ASSERT_TRUE(elf) << elf.error().message();
  EXPECT_TRUE(elf->has_symtab());
  EXPECT_EQ(elf->build_id().size(), 40u) << "GNU ld writes a 20-byte sha1 build id";
  EXPECT_GT(elf->symbol_count(), 3u);
}

TEST(ElfSymbolsTest, RejectsNonElfFilesAndMissingFiles) {
  TempDir tmp;
  std::string text = tmp.path() + "/not-elf";
  ASSERT_TRUE(base::WriteFile(text, "hello").ok());
  EXPECT_EQ(ElfSymbols::Load(text).error().code(), base::StatusCode::kInvalidArgument);
  EXPECT_EQ(ElfSymbols::Load(tmp.path() + "/missing").error().code(), base::StatusCode::kNotFound);
}

TEST(SymbolizerTest, ResolvesAFunctionOfASharedLibraryInThisProcess) {
  Library lib(SYMBOLIZER_TESTLIB);
  ASSERT_TRUE(lib.ok()) << dlerror();
  Symbolizer symbolizer({});
  uint64_t exported = lib.Address("WarpscopeFixtureExported");
  uint64_t compute = reinterpret_cast<uint64_t>(lib.Call("WarpscopeFixtureComputeAddress"));
  uint64_t internal = reinterpret_cast<uint64_t>(lib.Call("WarpscopeFixtureInternalAddress"));
  uint64_t addresses[] = {exported + 1, compute, internal};
  auto frames = symbolizer.Symbolize(getpid(), addresses);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].function, "WarpscopeFixtureExported");
  EXPECT_TRUE(frames[0].resolved);
  EXPECT_EQ(frames[0].module, fs::canonical(SYMBOLIZER_TESTLIB).string());
  EXPECT_EQ(frames[0].build_id.size(), 40u);
  EXPECT_EQ(frames[1].function, "warpscope_fixture::Widget::Compute(int)");
  EXPECT_EQ(frames[1].mangled, "_ZN17warpscope_fixture6Widget7ComputeEi");
  EXPECT_EQ(frames[2].function, "warpscope_fixture::InternalHelper(int)");
}

TEST(SymbolizerTest, ResolvesAFunctionOfTheMainExecutable) {
  Symbolizer symbolizer({});
  uint64_t address = reinterpret_cast<uint64_t>(&warpscope_symbolizer_test::MainExecutableFunction);
  auto frames = symbolizer.Symbolize(getpid(), std::span(&address, 1));
  EXPECT_EQ(frames[0].function, "warpscope_symbolizer_test::MainExecutableFunction(int)");
  EXPECT_EQ(frames[0].module, fs::canonical("/proc/self/exe").string());
}

TEST(SymbolizerTest, StrippedLibraryResolvesDynsymOnlyAndNamesTheModuleOtherwise) {
  Library lib(SYMBOLIZER_TESTLIB_STRIPPED);
  ASSERT_TRUE(lib.ok()) << dlerror();
  Symbolizer symbolizer({});
  uint64_t exported = lib.Address("WarpscopeFixtureExported");
  uint64_t internal = reinterpret_cast<uint64_t>(lib.Call("WarpscopeFixtureInternalAddress"));
  uint64_t addresses[] = {exported, internal};
  auto frames = symbolizer.Symbolize(getpid(), addresses);
  EXPECT_EQ(frames[0].function, "WarpscopeFixtureExported");
  EXPECT_TRUE(frames[0].resolved);
  EXPECT_FALSE(frames[1].resolved);
  Dl_info info;
  ASSERT_NE(dladdr(reinterpret_cast<void*>(internal), &info), 0);
  uint64_t vaddr = internal - reinterpret_cast<uint64_t>(info.dli_fbase);
  EXPECT_EQ(frames[1].function,
            fmt::format("[unknown] libsymbolizer_testlib_stripped.so+0x{:x}", vaddr));
  EXPECT_EQ(symbolizer.stats().unresolved, 1u);
}

TEST(SymbolizerTest, AddressOutsideEveryMappingIsUnknown) {
  Symbolizer symbolizer({});
  uint64_t address = 0x10;  // the zero page is never mapped
  auto frames = symbolizer.Symbolize(getpid(), std::span(&address, 1));
  EXPECT_EQ(frames[0].function, "[unknown] 0x10");
  EXPECT_FALSE(frames[0].resolved);
}

TEST(SymbolizerTest, VanishedProcessGivesUnknownFrames) {
  Symbolizer symbolizer({});
  uint64_t address = 0x401000;
  // pid_max is at most 2^22, so this pid cannot exist.
  auto frames = symbolizer.Symbolize(1 << 23, std::span(&address, 1));
  EXPECT_EQ(frames[0].function, "[unknown] 0x401000");
}

TEST(SymbolizerTest, GivenMapsServeAProcessThatNoLongerExists) {
  Library lib(SYMBOLIZER_TESTLIB);
  ASSERT_TRUE(lib.ok());
  auto text = base::ReadFile("/proc/self/maps");
  ASSERT_TRUE(text.has_value());
  Symbolizer symbolizer({});
  constexpr pid_t kGone = 1 << 23;  // above pid_max: no such process
  symbolizer.SetProcessMaps(kGone, ParseProcMaps(*text));
  uint64_t addresses[] = {lib.Address("WarpscopeFixtureExported"), 0x10};
  auto frames = symbolizer.Symbolize(kGone, addresses);
  EXPECT_EQ(frames[0].function, "WarpscopeFixtureExported");
  EXPECT_EQ(frames[1].function, "[unknown] 0x10");
  EXPECT_EQ(symbolizer.stats().maps_reads, 0u) << "given maps are never re-read from /proc";
}

TEST(SymbolizerTest, CachesElfFilesAndMapsAcrossCalls) {
  Library lib(SYMBOLIZER_TESTLIB);
  ASSERT_TRUE(lib.ok());
  Symbolizer symbolizer({});
  uint64_t address = lib.Address("WarpscopeFixtureExported");
  symbolizer.Symbolize(getpid(), std::span(&address, 1));
  symbolizer.Symbolize(getpid(), std::span(&address, 1));
  EXPECT_EQ(symbolizer.stats().maps_reads, 1u);
  EXPECT_EQ(symbolizer.stats().elf_loads, 1u);
  symbolizer.InvalidateProcess(getpid());
  symbolizer.Symbolize(getpid(), std::span(&address, 1));
  EXPECT_EQ(symbolizer.stats().maps_reads, 2u);
  EXPECT_EQ(symbolizer.stats().elf_loads, 1u) << "the parsed file is reused after re-reading maps";
}

TEST(SymbolizerTest, RereadsMapsOnceWhenALibraryAppearsAfterTheFirstRead) {
  Symbolizer symbolizer({});
  uint64_t own = reinterpret_cast<uint64_t>(&Demangle);
  symbolizer.Symbolize(getpid(), std::span(&own, 1));
  Library lib(SYMBOLIZER_TESTLIB);  // mapped after the maps were cached
  ASSERT_TRUE(lib.ok());
  uint64_t addresses[] = {lib.Address("WarpscopeFixtureExported"), 0x10, 0x20};
  auto frames = symbolizer.Symbolize(getpid(), addresses);
  EXPECT_EQ(frames[0].function, "WarpscopeFixtureExported");
  EXPECT_EQ(symbolizer.stats().maps_reads, 2u) << "one re-read per call, however many misses";
}

TEST(SymbolizerTest, ResolvesJitCodeThroughThePerfMapAndRereadsItWhenItChanges) {
  TempDir tmp;
  void* region = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(region, MAP_FAILED);
  uint64_t base = reinterpret_cast<uint64_t>(region);
  std::string map_path = fmt::format("{}/perf-{}.map", tmp.path(), getpid());
  ASSERT_TRUE(base::WriteFile(map_path, fmt::format("{:x} 100 jit_fn_one\n", base)).ok());
  Symbolizer::Options options;
  options.perf_map_dir = tmp.path();
  Symbolizer symbolizer(options);
  uint64_t first = base + 0x10;
  auto frames = symbolizer.Symbolize(getpid(), std::span(&first, 1));
  EXPECT_EQ(frames[0].function, "jit_fn_one");
  EXPECT_TRUE(frames[0].jit);
  EXPECT_EQ(frames[0].module, "[jit]");

  ASSERT_TRUE(base::WriteFile(map_path, fmt::format("{:x} 100 jit_fn_one\n{:x} 80 jit_fn_two\n",
                                                    base, base + 0x1000))
                  .ok());
  uint64_t second = base + 0x1004;
  frames = symbolizer.Symbolize(getpid(), std::span(&second, 1));
  EXPECT_EQ(frames[0].function, "jit_fn_two");
  EXPECT_EQ(symbolizer.stats().perf_map_reads, 2u);
  munmap(region, 8192);
}

TEST(SymbolizerTest, NonElfFileMappingsAlsoConsultThePerfMap) {
  TempDir tmp;
  std::string image = tmp.path() + "/jit-image.bin";
  ASSERT_TRUE(base::WriteFile(image, std::string(8192, '\x90')).ok());
  int fd = open(image.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  void* region = mmap(nullptr, 8192, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  ASSERT_NE(region, MAP_FAILED);
  uint64_t base = reinterpret_cast<uint64_t>(region);
  ASSERT_TRUE(base::WriteFile(fmt::format("{}/perf-{}.map", tmp.path(), getpid()),
                              fmt::format("{:x} 200 triton_launcher_stub\n", base))
                  .ok());
  Symbolizer::Options options;
  options.perf_map_dir = tmp.path();
  Symbolizer symbolizer(options);
  uint64_t inside = base + 0x20;
  uint64_t outside = base + 0x1000;
  uint64_t addresses[] = {inside, outside};
  auto frames = symbolizer.Symbolize(getpid(), addresses);
  EXPECT_EQ(frames[0].function, "triton_launcher_stub");
  EXPECT_TRUE(frames[0].jit);
  EXPECT_EQ(frames[1].function, "[unknown] jit-image.bin+0x1000");
  munmap(region, 8192);
}

TEST(SymbolizerTest, HonoursTheHostRootForMapsAndFiles) {
  TempDir root;
  fs::create_directories(root.path() + "/proc/4242");
  fs::create_directories(root.path() + "/opt/app");
  fs::copy_file(SYMBOLIZER_TESTLIB, root.path() + "/opt/app/libfake.so");
  // The library, mapped whole at a made-up base in a made-up process.
  constexpr uint64_t kBase = 0x7f0000000000;
  ASSERT_TRUE(base::WriteFile(root.path() + "/proc/4242/maps",
                              fmt::format("{:x}-{:x} r-xp 00000000 fd:01 99 /opt/app/libfake.so\n",
                                          kBase, kBase + 0x100000))
                  .ok());
  // Find the function's link-time address through this process's copy of the library.
  Library lib(SYMBOLIZER_TESTLIB);
  ASSERT_TRUE(lib.ok());
  uint64_t exported = lib.Address("WarpscopeFixtureExported");
  Dl_info info;
  ASSERT_NE(dladdr(reinterpret_cast<void*>(exported), &info), 0);
  uint64_t vaddr = exported - reinterpret_cast<uint64_t>(info.dli_fbase);
  auto elf = ElfSymbols::Load(SYMBOLIZER_TESTLIB);
  ASSERT_TRUE(elf);
  ASSERT_EQ(elf->FileOffsetToVaddr(vaddr), vaddr) << "GNU ld maps text at offset == vaddr";

  Symbolizer::Options options;
  options.host_root = root.path() + "/";
  Symbolizer symbolizer(options);
  uint64_t address = kBase + vaddr;
  auto frames = symbolizer.Symbolize(4242, std::span(&address, 1));
  EXPECT_EQ(frames[0].function, "WarpscopeFixtureExported");
  EXPECT_EQ(frames[0].module, "/opt/app/libfake.so");
  EXPECT_EQ(frames[0].module_offset, vaddr);
}

TEST(SymbolizerTest, ForgetProcessDropsItsMaps) {
  Symbolizer symbolizer({});
  uint64_t own = reinterpret_cast<uint64_t>(&Demangle);
  symbolizer.Symbolize(getpid(), std::span(&own, 1));
  symbolizer.ForgetProcess(getpid());
  symbolizer.Symbolize(getpid(), std::span(&own, 1));
  EXPECT_EQ(symbolizer.stats().maps_reads, 2u);
}

}  // namespace
}  // namespace warpscope::profiling
