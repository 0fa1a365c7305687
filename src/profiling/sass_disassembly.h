// SPDX-License-Identifier: Apache-2.0
// SASS text for sampled PCs: runs NVIDIA's `nvdisasm` (preferred) or `cuobjdump -sass` on a cubin
// the injected library shipped, and parses the listing into pc offset -> instruction text per
// function. The tools are optional (CUDA toolkit, or pip nvidia-cuda-nvdisasm); without them
// profiles show PC offsets only.
//
// Thread contract: the parsers are pure functions. SassDisassembler::Disassemble blocks on a
// child process (up to `timeout`); call it from a worker thread, not the agent main sequence.
#ifndef WARPSCOPE_PROFILING_SASS_DISASSEMBLY_H_
#define WARPSCOPE_PROFILING_SASS_DISASSEMBLY_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "base/status.h"

namespace warpscope::profiling {

// SASS text per (cubin hash, function, pc offset): "FFMA R5, R2, R3, R4", for the frames of PC
// samples. `cubin_hash` is the CUPTI cubin CRC the samples name their module by.
struct SassKey {
  uint64_t cubin_hash = 0;
  std::string function;
  uint64_t pc_offset = 0;
  auto operator<=>(const SassKey&) const = default;
};
using SassMap = std::map<SassKey, std::string>;

// function (mangled) -> pc offset (relative to the function) -> "FFMA R5, R2, R3, R4".
using FunctionSass = std::map<std::string, std::map<uint64_t, std::string>>;

// Parses `nvdisasm -c` / `nvdisasm` output: functions start at a ".text.<name>:" label line or a
// ".section .text.<name>,..." directive; instructions are "/*0040*/  [@P0] OP operands ;".
// Parses `cuobjdump -sass` output: functions start at "Function : <name>"; instruction lines are
// the same, followed by "/* 0x... */" encodings (ignored). Predicates are kept ("@!P0 BRA ...").
// Lines outside a function, labels, directives and comments are skipped. An input with no
// instruction at all is InvalidArgument (not a listing).
[[nodiscard]] base::Result<FunctionSass> ParseSassListing(std::string_view text);

// All functions of `listing` keyed for the profile builder with `cubin_hash`.
SassMap ToSassMap(uint64_t cubin_hash, const FunctionSass& listing);

class SassDisassembler {
 public:
  struct Options {
    // Directories searched for the tools, ':'-separated like $PATH. Empty: $PATH.
    std::string search_path;
    std::string temp_dir = "/tmp";  // where cubin bytes are written for the tool
    std::chrono::milliseconds timeout{30000};
    size_t max_output_bytes = 256u << 20;
  };

  explicit SassDisassembler(Options options);

  // The tool that will be used ("/usr/local/cuda/bin/nvdisasm"), or "" when neither is found.
  std::string ToolPath() const;

  // Disassembles the cubin at `cubin_path`. Unavailable when neither nvdisasm nor cuobjdump is
  // on the search path (the message says how to install them); Internal when the tool fails or
  // times out (the message has the tool's stderr tail).
  [[nodiscard]] base::Result<FunctionSass> DisassembleFile(const std::string& cubin_path) const;

  // Same for cubin bytes (written to a temporary file that is removed afterwards).
  [[nodiscard]] base::Result<FunctionSass> DisassembleBytes(std::string_view cubin) const;

 private:
  Options options_;
};

}  // namespace warpscope::profiling

#endif  // WARPSCOPE_PROFILING_SASS_DISASSEMBLY_H_
