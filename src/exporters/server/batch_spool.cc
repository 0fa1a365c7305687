// SPDX-License-Identifier: Apache-2.0
#include "exporters/server/batch_spool.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <optional>

#include "base/file_util.h"
#include "base/logging.h"

namespace warpscope::exporters {

namespace {

constexpr std::string_view kBatchSuffix = ".batch";
constexpr std::string_view kTempSuffix = ".tmp";
constexpr std::string_view kSequenceFile = "sequence";
constexpr std::string_view kLockFile = "lock";
constexpr size_t kSequenceDigits = 20;  // UINT64_MAX has 20 decimal digits

std::optional<uint64_t> ParseUint64(std::string_view s) {
  uint64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    return std::nullopt;
  }
  return v;
}

// "<20 digits>.batch" -> sequence.
std::optional<uint64_t> ParseBatchName(std::string_view name) {
  if (name.size() != kSequenceDigits + kBatchSuffix.size() || !name.ends_with(kBatchSuffix)) {
    return std::nullopt;
  }
  return ParseUint64(name.substr(0, kSequenceDigits));
}

// "<what>(<path>): <strerror>[; <remedy>]"
base::Status ErrnoStatus(int err, std::string_view what, const std::string& path,
                         std::string_view remedy = {}) {
  const base::StatusCode code = err == EACCES || err == EPERM ? base::StatusCode::kPermissionDenied
                                : err == ENOENT               ? base::StatusCode::kNotFound
                                                              : base::StatusCode::kUnavailable;
  return base::ErrStatus(code, "{}({}): {}{}{}", what, path, base::ErrnoString(err),
                         remedy.empty() ? "" : "; ", remedy);
}

constexpr std::string_view kWritableRemedy =
    "--buffer-dir must be a directory the agent can create and write";

}  // namespace

base::Result<std::unique_ptr<BatchSpool>> BatchSpool::Open(const std::string& dir) {
  if (dir.empty()) {
    return base::Error(base::InvalidArgument("--buffer-dir: empty path"));
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return base::Error(ErrnoStatus(errno, "--buffer-dir: mkdir", dir, kWritableRemedy));
  }
  const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    return base::Error(ErrnoStatus(errno, "--buffer-dir: open", dir, kWritableRemedy));
  }
  const std::string lock_path = dir + "/" + std::string(kLockFile);
  const int lock_fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0) {
    const int err = errno;
    close(dir_fd);
    return base::Error(ErrnoStatus(err, "--buffer-dir: open", lock_path, kWritableRemedy));
  }
  if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    close(lock_fd);
    close(dir_fd);
    if (err == EWOULDBLOCK) {
      return base::Error(base::Unavailable(
          "--buffer-dir {}: in use by another warpscope agent; give each agent its own directory",
          dir));
    }
    return base::Error(ErrnoStatus(err, "--buffer-dir: flock", lock_path));
  }

  uint64_t reserved = 0;
  const std::string seq_path = dir + "/" + std::string(kSequenceFile);
  if (auto text = base::ReadFile(seq_path, 64)) {
    if (auto v = ParseUint64(base::TrimWhitespace(*text))) {
      reserved = *v;
    } else {
      WARPSCOPE_LOG(WARNING, "{}: not a number; batch sequences restart from the clock", seq_path);
    }
  }

  // Leftovers of writes that a crash interrupted: never renamed, so never acknowledged.
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* ent = readdir(d)) {
      std::string_view name = ent->d_name;
      if (name.ends_with(kTempSuffix)) {
        unlinkat(dir_fd, ent->d_name, 0);
      }
    }
    closedir(d);
  }
  return std::unique_ptr<BatchSpool>(new BatchSpool(dir, dir_fd, lock_fd, reserved));
}

BatchSpool::BatchSpool(std::string dir, int dir_fd, int lock_fd, uint64_t reserved)
    : dir_(std::move(dir)), dir_fd_(dir_fd), lock_fd_(lock_fd), reserved_(reserved) {}

BatchSpool::~BatchSpool() {
  flock(lock_fd_, LOCK_UN);
  close(lock_fd_);
  close(dir_fd_);
}

std::string BatchSpool::PathFor(uint64_t sequence) const {
  return fmt::format("{}/{:020d}{}", dir_, sequence, kBatchSuffix);
}

base::Result<std::vector<BatchSpool::File>> BatchSpool::List() const {
  DIR* d = opendir(dir_.c_str());
  if (d == nullptr) {
    return base::Error(ErrnoStatus(errno, "--buffer-dir: opendir", dir_, kWritableRemedy));
  }
  std::vector<File> files;
  while (dirent* ent = readdir(d)) {
    auto seq = ParseBatchName(ent->d_name);
    if (!seq) {
      continue;
    }
    struct stat st {};
    if (fstatat(dir_fd_, ent->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    if (st.st_size == 0) {
      unlinkat(dir_fd_, ent->d_name, 0);
      continue;
    }
    files.push_back({*seq, static_cast<uint64_t>(st.st_size)});
  }
  closedir(d);
  std::sort(files.begin(), files.end(),
            [](const File& a, const File& b) { return a.sequence < b.sequence; });
  return files;
}

base::Status BatchSpool::WriteAtomically(const std::string& name, std::string_view bytes) {
  const std::string tmp = name + std::string(kTempSuffix);
  const int fd = openat(dir_fd_, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return ErrnoStatus(errno, "open", dir_ + "/" + tmp);
  }
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      const int err = errno;
      close(fd);
      unlinkat(dir_fd_, tmp.c_str(), 0);
      return ErrnoStatus(err, "write", dir_ + "/" + tmp);
    }
    off += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) {
    const int err = errno;
    close(fd);
    unlinkat(dir_fd_, tmp.c_str(), 0);
    return ErrnoStatus(err, "fsync", dir_ + "/" + tmp);
  }
  if (close(fd) != 0) {
    const int err = errno;
    unlinkat(dir_fd_, tmp.c_str(), 0);
    return ErrnoStatus(err, "close", dir_ + "/" + tmp);
  }
  if (renameat(dir_fd_, tmp.c_str(), dir_fd_, name.c_str()) != 0) {
    const int err = errno;
    unlinkat(dir_fd_, tmp.c_str(), 0);
    return ErrnoStatus(err, "rename", dir_ + "/" + name);
  }
  // The rename is durable only once the directory entry is.
  if (fsync(dir_fd_) != 0) {
    return ErrnoStatus(errno, "fsync", dir_);
  }
  return base::OkStatus();
}

base::Status BatchSpool::Write(uint64_t sequence, std::string_view bytes) {
  return WriteAtomically(fmt::format("{:020d}{}", sequence, kBatchSuffix), bytes);
}

base::Result<std::string> BatchSpool::Read(uint64_t sequence) const {
  return base::ReadFile(PathFor(sequence), SIZE_MAX);
}

base::Status BatchSpool::Remove(uint64_t sequence) {
  const std::string name = fmt::format("{:020d}{}", sequence, kBatchSuffix);
  if (unlinkat(dir_fd_, name.c_str(), 0) != 0 && errno != ENOENT) {
    return ErrnoStatus(errno, "unlink", dir_ + "/" + name);
  }
  return base::OkStatus();
}

base::Status BatchSpool::ReserveSequences(uint64_t mark) {
  WARPSCOPE_RETURN_IF_ERROR(WriteAtomically(std::string(kSequenceFile), fmt::format("{}\n", mark)));
  reserved_.store(mark, std::memory_order_relaxed);
  return base::OkStatus();
}

}  // namespace warpscope::exporters
