// SPDX-License-Identifier: Apache-2.0
// Small file readers for /proc and /sys that report errno instead of a Status, because the
// callers branch on it (ENOENT/ESRCH for a process that just exited is normal, not an error) and
// run on hot paths where building a message per read would cost more than the read.
#ifndef WARPSCOPE_AGENT_SOURCES_PROCFS_PROCFS_READ_H_
#define WARPSCOPE_AGENT_SOURCES_PROCFS_PROCFS_READ_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace warpscope::agent::procfs {

// Reads at most `max_bytes` of `path` into `out` (cleared first, capacity reused). Returns 0 or
// the errno of the failed open/read.
int ReadFileBounded(const char* path, size_t max_bytes, std::string& out);

// Reads `relative` under the directory `dirfd` into `buf` (at most `capacity` bytes, no NUL
// added); `length` receives the size read. Returns 0 or the errno of the failed open/read.
int ReadFileAt(int dirfd, const char* relative, char* buf, size_t capacity, size_t& length);

// "" for "/" (so that root + "/proc" is "/proc"), otherwise `root` without trailing slashes.
std::string NormalizeRoot(std::string_view root);

// True for errno values that mean "the process is gone": ENOENT, ESRCH.
bool IsVanishedErrno(int err);

}  // namespace warpscope::agent::procfs

#endif  // WARPSCOPE_AGENT_SOURCES_PROCFS_PROCFS_READ_H_
