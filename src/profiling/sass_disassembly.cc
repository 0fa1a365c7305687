// SPDX-License-Identifier: Apache-2.0
#include "profiling/sass_disassembly.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/file_util.h"

extern char** environ;

namespace warpscope::profiling {
namespace {

std::string CollapseSpaces(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) {
      out.push_back(' ');
      space = false;
    }
    out.push_back(c);
  }
  return out;
}

// "/*0040*/ rest" -> offset 0x40 and "rest"; false for anything else, including the
// "/* 0x000fc400078e00ff */" encoding comments of cuobjdump.
bool ParseInstruction(std::string_view line, uint64_t& offset, std::string& text) {
  if (line.size() < 5 || line.substr(0, 2) != "/*") {
    return false;
  }
  size_t close = line.find("*/");
  if (close == std::string_view::npos || close <= 2) {
    return false;
  }
  std::string_view hex = line.substr(2, close - 2);
  auto [ptr, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), offset, 16);
  if (ec != std::errc() || ptr != hex.data() + hex.size()) {
    return false;
  }
  std::string_view rest = line.substr(close + 2);
  size_t end = rest.find(';');
  if (end == std::string_view::npos) {
    end = rest.find("/*");
  }
  rest = base::TrimWhitespace(rest.substr(0, end));
  if (!rest.empty() && rest.front() == '{') {  // dual-issue group markers (pre-Volta)
    rest = base::TrimWhitespace(rest.substr(1));
  }
  if (!rest.empty() && rest.back() == '}') {
    rest = base::TrimWhitespace(rest.substr(0, rest.size() - 1));
  }
  if (rest.empty()) {
    return false;
  }
  text = CollapseSpaces(rest);
  return true;
}

std::string FindTool(std::string_view search_path, std::string_view name) {
  for (std::string_view dir : base::SplitString(search_path, ":")) {
    if (dir.empty()) {
      continue;
    }
    std::string candidate = std::string(dir) + "/" + std::string(name);
    if (access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

}  // namespace

base::Result<FunctionSass> ParseSassListing(std::string_view text) {
  FunctionSass out;
  std::string current;
  size_t instructions = 0;
  for (std::string_view raw : base::SplitString(text, "\n")) {
    std::string_view line = base::TrimWhitespace(raw);
    if (line.empty()) {
      continue;
    }
    constexpr std::string_view kFunction = "Function : ";
    constexpr std::string_view kSection = ".section";
    constexpr std::string_view kText = ".text.";
    if (line.rfind(kFunction, 0) == 0) {
      current = std::string(base::TrimWhitespace(line.substr(kFunction.size())));
      continue;
    }
    if (line.rfind(kSection, 0) == 0) {
      std::string_view rest = base::TrimWhitespace(line.substr(kSection.size()));
      if (rest.rfind(kText, 0) == 0) {
        rest.remove_prefix(kText.size());
        current = std::string(rest.substr(0, rest.find_first_of(", \t")));
      } else {
        current.clear();  // a data section: no instructions expected
      }
      continue;
    }
    if (line.rfind(kText, 0) == 0 && line.back() == ':') {
      current = std::string(line.substr(kText.size(), line.size() - kText.size() - 1));
      continue;
    }
    uint64_t offset = 0;
    std::string instruction;
    if (!current.empty() && ParseInstruction(line, offset, instruction)) {
      out[current][offset] = std::move(instruction);
      ++instructions;
    }
  }
  if (instructions == 0) {
    return base::Error(base::InvalidArgument(
        "no SASS instructions found: expected nvdisasm or cuobjdump -sass output"));
  }
  return out;
}

SassMap ToSassMap(uint64_t cubin_hash, const FunctionSass& listing) {
  SassMap out;
  for (const auto& [function, instructions] : listing) {
    for (const auto& [offset, text] : instructions) {
      out.emplace(SassKey{cubin_hash, function, offset}, text);
    }
  }
  return out;
}

SassDisassembler::SassDisassembler(Options options) : options_(std::move(options)) {
  if (options_.search_path.empty()) {
    const char* path = std::getenv("PATH");
    options_.search_path = path != nullptr ? path : "/usr/local/cuda/bin:/usr/bin:/bin";
  }
}

std::string SassDisassembler::ToolPath() const {
  std::string tool = FindTool(options_.search_path, "nvdisasm");
  return tool.empty() ? FindTool(options_.search_path, "cuobjdump") : tool;
}

base::Result<FunctionSass> SassDisassembler::DisassembleFile(const std::string& cubin_path) const {
  std::string tool = ToolPath();
  if (tool.empty()) {
    return base::Error(base::Unavailable(
        "neither nvdisasm nor cuobjdump is on the search path ({}): install the CUDA toolkit or "
        "`pip install nvidia-cuda-nvdisasm` and add its bin directory to PATH; profiles show "
        "PC offsets without SASS until then",
        options_.search_path));
  }
  bool is_nvdisasm = tool.ends_with("nvdisasm");
  std::vector<std::string> args = {tool};
  if (is_nvdisasm) {
    args.push_back("-c");
  } else {
    args.push_back("-sass");
  }
  args.push_back(cubin_path);
  std::vector<char*> argv;
  for (std::string& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);

  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    return base::Error(base::Internal("pipe for {}: {}", tool, std::strerror(errno)));
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return base::Error(base::Internal("pipe for {}: {}", tool, std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t child = 0;
  int rc = posix_spawn(&child, tool.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    return base::Error(base::Internal("cannot run {}: {}", tool, std::strerror(rc)));
  }

  std::string output;
  std::string errors;
  bool too_big = false;
  bool timed_out = false;
  auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      timed_out = n == 0;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) {
        continue;
      }
      ssize_t got = read(fds[i].fd, buf, sizeof(buf));
      if (got > 0) {
        std::string& dst = i == 0 ? output : errors;
        dst.append(buf, static_cast<size_t>(got));
        if (i == 1 && errors.size() > 4096) {
          errors.erase(0, errors.size() - 4096);
        }
        if (output.size() > options_.max_output_bytes) {
          too_big = true;
        }
      } else if (got == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
    if (too_big) {
      break;
    }
  }
  for (pollfd& p : fds) {
    if (p.fd >= 0) {
      close(p.fd);
    }
  }
  if (timed_out || too_big) {
    kill(child, SIGKILL);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return base::Error(
        base::Internal("{} {} timed out after {} ms", tool, cubin_path, options_.timeout.count()));
  }
  if (too_big) {
    return base::Error(base::Internal("{} {} printed more than {} bytes", tool, cubin_path,
                                      options_.max_output_bytes));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return base::Error(base::Internal("{} {} failed (status {}): {}", tool, cubin_path, status,
                                      base::TrimWhitespace(errors)));
  }
  auto parsed = ParseSassListing(output);
  if (!parsed) {
    return base::Error(parsed.error().WithContext(fmt::format("{} {}", tool, cubin_path)));
  }
  return parsed;
}

base::Result<FunctionSass> SassDisassembler::DisassembleBytes(std::string_view cubin) const {
  std::string path = options_.temp_dir + "/warpscope-cubin-XXXXXX";
  int fd = mkstemp(path.data());
  if (fd < 0) {
    return base::Error(base::Unavailable("cannot create a temporary cubin file in {}: {}",
                                         options_.temp_dir, std::strerror(errno)));
  }
  close(fd);
  base::Status written = base::WriteFile(path, cubin);
  if (!written.ok()) {
    unlink(path.c_str());
    return base::Error(written);
  }
  auto result = DisassembleFile(path);
  unlink(path.c_str());
  return result;
}

}  // namespace warpscope::profiling
