// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/listen_socket.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstring>

#include "base/file_util.h"
#include "base/logging.h"

namespace warpscope::agent::cuda_profiler {
namespace {

constexpr const char* kSystemSocket = "/run/warpscope/cupti.sock";

std::string ParentDir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) {
    return "";
  }
  return path.substr(0, slash);
}

// mkdir -p with mode 0755 for the directories it creates (whatever the umask).
base::Status MakeDirs(const std::string& dir) {
  if (dir.empty()) {
    return base::OkStatus();
  }
  size_t pos = 1;
  while (true) {
    pos = dir.find('/', pos);
    const std::string prefix = pos == std::string::npos ? dir : dir.substr(0, pos);
    if (mkdir(prefix.c_str(), 0755) == 0) {
      chmod(prefix.c_str(), 0755);
    } else if (errno != EEXIST) {
      return base::Unavailable(
          "cannot create directory {} for the CUDA profiler socket: {}; run the agent with "
          "permission to create it, or choose another --cuda-profiler-socket",
          prefix, base::ErrnoString(errno));
    }
    if (pos == std::string::npos) {
      break;
    }
    ++pos;
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return base::InvalidArgument("{} is not a directory; choose another --cuda-profiler-socket",
                                 dir);
  }
  return base::OkStatus();
}

std::string PidFile(const std::string& host_root, int32_t pid, const char* file) {
  std::string root = host_root;
  while (!root.empty() && root.back() == '/') {
    root.pop_back();
  }
  return root + "/proc/" + std::to_string(pid) + "/" + file;
}

}  // namespace

sockaddr_un SocketAddress(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

// Removes a stale socket file; refuses a live one or a file that is not a socket.
base::Status ClearSocketPath(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    return base::OkStatus();
  }
  if (!S_ISSOCK(st.st_mode)) {
    return base::InvalidArgument(
        "{} exists and is not a socket; remove it or choose another --cuda-profiler-socket", path);
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return base::Unavailable("socket(AF_UNIX): {}", base::ErrnoString(errno));
  }
  sockaddr_un addr = SocketAddress(path);
  const int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  const int err = errno;
  close(fd);
  if (rc == 0) {
    return base::Unavailable(
        "another warpscope agent is already listening on {}; stop it, or give this agent "
        "another --cuda-profiler-socket (and the applications the same WARPSCOPE_AGENT_SOCKET)",
        path);
  }
  if (err != ECONNREFUSED && err != ENOENT) {
    return base::Unavailable("cannot check the existing socket {}: {}; remove it by hand", path,
                             base::ErrnoString(err));
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return base::Unavailable("cannot remove the stale socket {}: {}", path,
                             base::ErrnoString(errno));
  }
  WARPSCOPE_LOG(INFO, "removed stale CUDA profiler socket {}", path);
  return base::OkStatus();
}

base::Status PrepareSocketPath(const std::string& path) {
  WARPSCOPE_RETURN_IF_ERROR(MakeDirs(ParentDir(path)));
  return ClearSocketPath(path);
}

uint64_t ReadStartTicks(const std::string& host_root, int32_t pid) {
  auto text = base::ReadFile(PidFile(host_root, pid, "stat"), 4096);
  if (!text) {
    return 0;
  }
  const size_t paren = text->rfind(')');
  if (paren == std::string::npos) {
    return 0;
  }
  // Fields after "(comm)": field 3 (state) is index 0, so field 22 is index 19.
  std::vector<std::string_view> fields =
      base::SplitString(std::string_view(*text).substr(paren + 1), " ");
  std::vector<std::string_view> nonempty;
  for (auto f : fields) {
    if (!f.empty()) {
      nonempty.push_back(f);
    }
  }
  uint64_t ticks = 0;
  if (nonempty.size() > 19) {
    std::from_chars(nonempty[19].data(), nonempty[19].data() + nonempty[19].size(), ticks);
  }
  return ticks;
}

model::JobIdentity ReadJobIdentity(const std::string& host_root, int32_t pid) {
  // Readable by the process's owner and root only: otherwise no job is known.
  auto text = base::ReadFile(PidFile(host_root, pid, "environ"), 256u << 10);
  return text ? model::ParseJobEnviron(*text) : model::JobIdentity{};
}

ProcessEnviron ReadProcessEnviron(const std::string& host_root, int32_t pid) {
  constexpr std::string_view kStepRange = "WARPSCOPE_STEP_RANGE=";
  ProcessEnviron out;
  auto text = base::ReadFile(PidFile(host_root, pid, "environ"), 256u << 10);
  if (!text) {
    return out;
  }
  out.job = model::ParseJobEnviron(*text);
  for (std::string_view entry : base::SplitString(*text, std::string_view("\0", 1))) {
    if (entry.starts_with(kStepRange)) {
      out.step_range = std::string(entry.substr(kStepRange.size(), 128));
    }
  }
  return out;
}

std::string DefaultListenSocket(const std::function<const char*(const char*)>& getenv) {
  if (geteuid() == 0 || access("/run/warpscope", W_OK) == 0) {
    return kSystemSocket;
  }
  const char* xdg = getenv("XDG_RUNTIME_DIR");
  if (xdg != nullptr && *xdg == '/') {  // like the library: only an absolute path
    return std::string(xdg) + "/warpscope/cupti.sock";
  }
  return kSystemSocket;
}

}  // namespace warpscope::agent::cuda_profiler
