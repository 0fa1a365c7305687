// SPDX-License-Identifier: Apache-2.0
// File, line and inlined frames from DWARF, checked against binutils' addr2line on the same
// fixture library (built -g -O2 with an inlined function), with the DWARF in the library, in a
// debug file found by .gnu_debuglink or by build id, and in corrupt or truncated files.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/testing/temp_dir.h"
#include "profiling/elf_symbols.h"
#include "profiling/symbolizer.h"

namespace warpscope::profiling {
namespace {

namespace fs = std::filesystem;
using base::TempDir;

constexpr pid_t kPid = 1 << 23;  // above pid_max: the maps are given, never read from /proc
constexpr const char* kDebugName = "libsymbolizer_dwarflib.debug";

// One frame as addr2line prints it.
struct Addr2LineFrame {
  std::string function;
  std::string file;
  int64_t line = 0;
};

// `addr2line -i -f -C -e <file> 0x<vaddr>`: the frames at the address, innermost first.
std::vector<Addr2LineFrame> Addr2Line(const std::string& file, uint64_t vaddr) {
  std::string command = fmt::format("{} -i -f -C -e '{}' 0x{:x}", ADDR2LINE, file, vaddr);
  std::vector<Addr2LineFrame> out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return out;
  }
  std::string text;
  char buffer[512];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    text += buffer;
  }
  pclose(pipe);
  std::vector<std::string_view> lines = base::SplitString(text, "\n");
  for (size_t i = 0; i + 1 < lines.size(); i += 2) {
    std::string_view position = lines[i + 1];
    position = position.substr(0, position.find(" (discriminator"));
    size_t colon = position.rfind(':');
    Addr2LineFrame f;
    f.function = std::string(lines[i]);
    f.file = fs::path(position.substr(0, colon)).lexically_normal().string();
    f.line = std::atoll(std::string(position.substr(colon + 1)).c_str());
    out.push_back(std::move(f));
  }
  return out;
}

// The fixture library loaded in this process, the lookup address of a call made from code
// inlined into WarpscopeDwarfInlinedCallSite, and its mappings, to hand to the symbolizer with
// another file (a stripped or corrupt copy) in their place.
class DwarfFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = dlopen(SYMBOLIZER_DWARFLIB, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    auto call_site = reinterpret_cast<void* (*)(int)>(dlsym(handle_, "WarpscopeDwarfInlinedCallSite"));
    ASSERT_NE(call_site, nullptr);
    auto ret = reinterpret_cast<uint64_t>(call_site(1));
    address_ = ret - 1;  // inside the call instruction, as profilers look return addresses up
    Dl_info info;
    ASSERT_NE(dladdr(reinterpret_cast<void*>(ret), &info), 0);
    vaddr_ = address_ - reinterpret_cast<uint64_t>(info.dli_fbase);
    plain_ = reinterpret_cast<uint64_t>(dlsym(handle_, "WarpscopeDwarfPlain"));
    auto text = base::ReadFile("/proc/self/maps");
    ASSERT_TRUE(text.has_value());
    const std::string library = fs::canonical(SYMBOLIZER_DWARFLIB).string();
    for (const MapEntry& m : ParseProcMaps(*text)) {
      if (m.path == library) {
        maps_.push_back(m);
      }
    }
    ASSERT_FALSE(maps_.empty());
    expected_ = Addr2Line(SYMBOLIZER_DWARFLIB, vaddr_);
    ASSERT_GE(expected_.size(), 2u) << "addr2line (" << ADDR2LINE
                                    << ") must show the inlined frame: install binutils";
    ASSERT_TRUE(expected_[0].function.find("InlinedLeaf") != std::string::npos)
        << expected_[0].function;
  }
  void TearDown() override {
    if (handle_ != nullptr) {
      dlclose(handle_);
    }
  }

  // The library's mappings with `file` mapped in its place.
  std::vector<MapEntry> MapsOf(const std::string& file) const {
    std::vector<MapEntry> out = maps_;
    for (MapEntry& m : out) {
      m.path = file;
    }
    return out;
  }

  NativeFrame SymbolizeAs(Symbolizer& symbolizer, const std::string& file, uint64_t address) {
    symbolizer.SetProcessMaps(kPid, MapsOf(file));
    return symbolizer.Symbolize(kPid, std::span(&address, 1))[0];
  }

  // The frame's file:line and inlined frames are addr2line's.
  void ExpectAddr2LineFrames(const NativeFrame& f) const {
    EXPECT_EQ(f.function, "WarpscopeDwarfInlinedCallSite");
    ASSERT_EQ(f.inlined.size() + 1, expected_.size());
    for (size_t i = 0; i < f.inlined.size(); ++i) {
      EXPECT_EQ(f.inlined[i].file, expected_[i].file) << i;
      EXPECT_EQ(f.inlined[i].line, expected_[i].line) << i;
      EXPECT_EQ(f.inlined[i].function.find("InlinedLeaf") == std::string::npos,
                expected_[i].function.find("InlinedLeaf") == std::string::npos)
          << f.inlined[i].function << " vs " << expected_[i].function;
    }
    EXPECT_EQ(f.inlined[0].function, "warpscope_dwarf_fixture::InlinedLeaf(int)");
    EXPECT_EQ(f.file, expected_.back().file);
    EXPECT_EQ(f.line, expected_.back().line);
    EXPECT_EQ(expected_.back().function, "WarpscopeDwarfInlinedCallSite");
  }

  // A copy of `from` at `to`, directories made.
  static void Copy(const std::string& from, const std::string& to) {
    fs::create_directories(fs::path(to).parent_path());
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  }

  void* handle_ = nullptr;
  uint64_t address_ = 0;
  uint64_t vaddr_ = 0;
  uint64_t plain_ = 0;
  std::vector<MapEntry> maps_;
  std::vector<Addr2LineFrame> expected_;
};

TEST_F(DwarfFixture, LibraryWithDwarfGivesFileLineAndTheInlinedFrame) {
  Symbolizer symbolizer({});
  NativeFrame f = SymbolizeAs(symbolizer, fs::canonical(SYMBOLIZER_DWARFLIB).string(), address_);
  EXPECT_TRUE(f.resolved);
  ExpectAddr2LineFrames(f);
  EXPECT_TRUE(f.file.ends_with("symbolizer_dwarflib.cc")) << f.file;

  // A function with nothing inlined: file and line, no inlined frames.
  NativeFrame plain = symbolizer.Symbolize(kPid, std::span(&plain_, 1))[0];
  EXPECT_EQ(plain.function, "WarpscopeDwarfPlain");
  auto a2l = Addr2Line(SYMBOLIZER_DWARFLIB, plain_ - (address_ - vaddr_));
  ASSERT_EQ(a2l.size(), 1u);
  EXPECT_EQ(plain.file, a2l[0].file);
  EXPECT_EQ(plain.line, a2l[0].line);
  EXPECT_TRUE(plain.inlined.empty());
  EXPECT_TRUE(symbolizer.debug_info_errors().empty());
}

TEST_F(DwarfFixture, ProfileFramesAreTheFunctionThenWhatIsInlinedThereRootFirst) {
  Symbolizer symbolizer({});
  NativeFrame n = SymbolizeAs(symbolizer, fs::canonical(SYMBOLIZER_DWARFLIB).string(), address_);

  std::vector<Frame> frames = ProfileFrames(n);

  // addr2line prints innermost first; the profile's frames run root first.
  ASSERT_EQ(frames.size(), expected_.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    const Addr2LineFrame& want = expected_[expected_.size() - 1 - i];
    EXPECT_EQ(frames[i].file, want.file) << i;
    EXPECT_EQ(frames[i].line, want.line) << i;
    EXPECT_EQ(frames[i].inlined, i > 0) << i;
    EXPECT_EQ(frames[i].kind, FrameKind::kNative);
    EXPECT_EQ(frames[i].module, n.module);
  }
  EXPECT_EQ(frames.front().function, "WarpscopeDwarfInlinedCallSite");
  EXPECT_EQ(frames.back().function, "warpscope_dwarf_fixture::InlinedLeaf(int)");
}

TEST_F(DwarfFixture, CachesTheDwarfPerFileAndTheLinesPerAddress) {
  Symbolizer symbolizer({});
  std::string lib = fs::canonical(SYMBOLIZER_DWARFLIB).string();
  NativeFrame first = SymbolizeAs(symbolizer, lib, address_);
  uint64_t again[] = {address_, address_, plain_};
  auto frames = symbolizer.Symbolize(kPid, again);
  EXPECT_EQ(frames[0], first);
  EXPECT_EQ(frames[1], first);
  EXPECT_EQ(symbolizer.stats().dwarf_loads, 1u);
  EXPECT_EQ(symbolizer.stats().line_lookups, 2u) << "one DWARF read per distinct address";
  EXPECT_EQ(symbolizer.stats().with_lines, 4u);
}

TEST_F(DwarfFixture, WithoutSourceLinesNoDwarfIsRead) {
  Symbolizer::Options options;
  options.source_lines = false;
  Symbolizer symbolizer(options);
  NativeFrame f = SymbolizeAs(symbolizer, fs::canonical(SYMBOLIZER_DWARFLIB).string(), address_);
  EXPECT_EQ(f.function, "WarpscopeDwarfInlinedCallSite");
  EXPECT_EQ(f.file, "");
  EXPECT_TRUE(f.inlined.empty());
  EXPECT_EQ(symbolizer.stats().dwarf_loads, 0u);
}

TEST_F(DwarfFixture, StrippedLibraryFindsItsDebugFileThroughGnuDebuglink) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  Symbolizer::Options options;
  options.debug_root = tmp.path() + "/debug";  // nothing under it but what a case puts there
  // Beside the library (the build directory holds both), in .debug/ beside it, and under the
  // debug root at the library's directory.
  const std::string in_dot_debug = tmp.path() + "/a/lib.so";
  Copy(SYMBOLIZER_DWARFLIB_DEBUGLINK, in_dot_debug);
  Copy(SYMBOLIZER_DWARFLIB_DEBUG, tmp.path() + "/a/.debug/" + kDebugName);
  const std::string in_root = tmp.path() + "/b/lib.so";
  Copy(SYMBOLIZER_DWARFLIB_DEBUGLINK, in_root);
  Copy(SYMBOLIZER_DWARFLIB_DEBUG, options.debug_root + tmp.path() + "/b/" + kDebugName);
  for (const std::string& lib : {std::string(SYMBOLIZER_DWARFLIB_DEBUGLINK), in_dot_debug, in_root}) {
    SCOPED_TRACE(lib);
    Symbolizer symbolizer(options);
    NativeFrame f = SymbolizeAs(symbolizer, lib, address_);
    EXPECT_TRUE(f.resolved) << "exported: .dynsym names it";
    ExpectAddr2LineFrames(f);
    EXPECT_TRUE(symbolizer.debug_info_errors().empty());
  }
}

TEST_F(DwarfFixture, StrippedLibraryFindsItsDebugFileByBuildIdUnderTheDebugRoot) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  auto elf = ElfSymbols::Load(SYMBOLIZER_DWARFLIB_BUILDID);
  ASSERT_TRUE(elf) << elf.error().message();
  const std::string& id = elf->build_id();
  ASSERT_GT(id.size(), 2u);
  const std::string lib = tmp.path() + "/lib/libsymbolizer_dwarflib.so";
  Copy(SYMBOLIZER_DWARFLIB_BUILDID, lib);
  Symbolizer::Options options;
  options.debug_root = tmp.path() + "/debug";
  {
    Symbolizer symbolizer(options);
    NativeFrame f = SymbolizeAs(symbolizer, lib, address_);
    EXPECT_EQ(f.file, "") << "no debug file yet";
    EXPECT_TRUE(symbolizer.debug_info_errors().empty()) << "no debug info is not an error";
  }
  Copy(SYMBOLIZER_DWARFLIB_DEBUG,
       fmt::format("{}/.build-id/{}/{}.debug", options.debug_root, id.substr(0, 2), id.substr(2)));
  Symbolizer symbolizer(options);
  ExpectAddr2LineFrames(SymbolizeAs(symbolizer, lib, address_));

  // The host root moves the default debug root with it.
  Symbolizer::Options rooted;
  rooted.host_root = tmp.path() + "/host";
  Copy(lib, rooted.host_root + "/opt/libsymbolizer_dwarflib.so");
  Copy(SYMBOLIZER_DWARFLIB_DEBUG, fmt::format("{}/usr/lib/debug/.build-id/{}/{}.debug",
                                              rooted.host_root, id.substr(0, 2), id.substr(2)));
  Symbolizer in_container(rooted);
  ExpectAddr2LineFrames(SymbolizeAs(in_container, "/opt/libsymbolizer_dwarflib.so", address_));
}

TEST_F(DwarfFixture, ADebugFileOfAnotherBuildIsRefusedWithAnError) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string lib = tmp.path() + "/lib.so";
  Copy(SYMBOLIZER_DWARFLIB_DEBUGLINK, lib);
  Copy(SYMBOLIZER_TESTLIB, tmp.path() + "/" + kDebugName);  // the right name, another build id
  Symbolizer::Options options;
  options.debug_root = tmp.path() + "/debug";
  Symbolizer symbolizer(options);
  NativeFrame f = SymbolizeAs(symbolizer, lib, address_);
  EXPECT_EQ(f.function, "WarpscopeDwarfInlinedCallSite");
  EXPECT_EQ(f.file, "");
  auto errors = symbolizer.debug_info_errors();
  ASSERT_EQ(errors.count(lib), 1u);
  EXPECT_NE(errors[lib].find("build id differs"), std::string::npos) << errors[lib];
}

TEST_F(DwarfFixture, TruncatedDebugFileKeepsTheNamesAndSaysWhichFile) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string lib = tmp.path() + "/lib.so";
  Copy(SYMBOLIZER_DWARFLIB_DEBUGLINK, lib);
  auto debug = base::ReadFile(SYMBOLIZER_DWARFLIB_DEBUG);
  ASSERT_TRUE(debug.has_value());
  for (size_t keep : {debug->size() / 2, debug->size() - 1, size_t{64}}) {
    SCOPED_TRACE(keep);
    ASSERT_TRUE(base::WriteFile(tmp.path() + "/" + kDebugName, debug->substr(0, keep)).ok());
    Symbolizer::Options options;
    options.debug_root = tmp.path() + "/debug";
    Symbolizer symbolizer(options);
    NativeFrame f = SymbolizeAs(symbolizer, lib, address_);
    EXPECT_EQ(f.function, "WarpscopeDwarfInlinedCallSite");
    EXPECT_EQ(f.file, "");
    EXPECT_TRUE(f.inlined.empty());
    auto errors = symbolizer.debug_info_errors();
    ASSERT_EQ(errors.count(lib), 1u);
    EXPECT_NE(errors[lib].find(kDebugName), std::string::npos) << errors[lib];
    EXPECT_EQ(symbolizer.stats().dwarf_failures, 1u);
  }
}

TEST_F(DwarfFixture, CorruptDwarfInTheLibraryKeepsTheNames) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  // All ones (a 64-bit unit longer than the section), and a DWARF 5 unit header whose
  // abbreviation table offset points nowhere.
  const std::string unit_header("\x07\x00\x00\x00\x05\x00\x01\x08\xff\xff\xff\x7f", 12);
  const std::string contents[] = {std::string(4096, '\xff'),
                                  unit_header + std::string(300, '\x01')};
  for (size_t i = 0; i < std::size(contents); ++i) {
    SCOPED_TRACE(i);
    const std::string garbage = tmp.path() + fmt::format("/garbage{}", i);
    ASSERT_TRUE(base::WriteFile(garbage, contents[i]).ok());
    const std::string lib = tmp.path() + fmt::format("/lib{}.so", i);
    std::string command = fmt::format("{} --update-section .debug_info='{}' '{}' '{}'", OBJCOPY,
                                      garbage, SYMBOLIZER_DWARFLIB, lib);
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    Symbolizer symbolizer({});
    NativeFrame f = SymbolizeAs(symbolizer, lib, address_);
    EXPECT_EQ(f.function, "WarpscopeDwarfInlinedCallSite");
    EXPECT_EQ(f.file, "");
    auto errors = symbolizer.debug_info_errors();
    ASSERT_EQ(errors.count(lib), 1u);
    EXPECT_NE(errors[lib].find("corrupt DWARF in " + lib), std::string::npos) << errors[lib];
  }
}

TEST_F(DwarfFixture, TruncatedLibraryNeverCrashes) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  auto bytes = base::ReadFile(SYMBOLIZER_DWARFLIB);
  ASSERT_TRUE(bytes.has_value());
  for (size_t keep : {bytes->size() * 9 / 10, bytes->size() / 2, size_t{200}}) {
    SCOPED_TRACE(keep);
    const std::string lib = tmp.path() + fmt::format("/lib{}.so", keep);
    ASSERT_TRUE(base::WriteFile(lib, bytes->substr(0, keep)).ok());
    Symbolizer symbolizer({});
    uint64_t addresses[] = {address_, plain_};
    symbolizer.SetProcessMaps(kPid, MapsOf(lib));
    auto frames = symbolizer.Symbolize(kPid, addresses);
    ASSERT_EQ(frames.size(), 2u);
    for (const NativeFrame& f : frames) {
      EXPECT_TRUE(f.resolved || f.function.starts_with("[unknown]")) << f.function;
    }
  }
}

}  // namespace
}  // namespace warpscope::profiling
