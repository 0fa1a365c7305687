// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_EXPORTERS_SERVER_BATCH_SPOOL_H_
#define WARPSCOPE_EXPORTERS_SERVER_BATCH_SPOOL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warpscope::exporters {

// The on-disk buffer of the server exporter (--buffer-dir): one file per encoded batch, so a
// batch survives an agent restart or crash until the server acknowledges it.
//
// Layout of the directory:
//   <sequence, 20 digits>.batch  one serialised warpscope.v1.Batch; the zero padding makes the
//                                name order the sequence order
//   *.tmp                        a write in progress; removed by Open() (a crash mid-write)
//   sequence                     decimal text: every sequence used so far is below it
//   lock                         flock()ed while open, so two agents cannot share a directory
//
// Every write goes to a temporary name, is fsync()ed, renamed into place and the directory is
// fsync()ed, so after a crash a .batch file is either complete or absent.
//
// Thread-safety: methods on different sequences may run concurrently (the exporter writes from
// one thread and reads/removes from another); ReserveSequences() from one thread at a time.
class BatchSpool {
 public:
  struct File {
    uint64_t sequence = 0;
    uint64_t size = 0;  // bytes
  };

  // Creates `dir` (one level) if needed, takes its lock and removes leftover temporary files.
  // Errors name the directory and the remedy (permissions, another agent using it).
  [[nodiscard]] static base::Result<std::unique_ptr<BatchSpool>> Open(const std::string& dir);
  ~BatchSpool();  // releases the lock
  BatchSpool(const BatchSpool&) = delete;
  BatchSpool& operator=(const BatchSpool&) = delete;

  // The batch files present, lowest sequence first. Empty files (cut short before the rename
  // existed, or truncated by a full disk) are removed and not listed.
  [[nodiscard]] base::Result<std::vector<File>> List() const;
  [[nodiscard]] base::Status Write(uint64_t sequence, std::string_view bytes);
  [[nodiscard]] base::Result<std::string> Read(uint64_t sequence) const;
  // Removing a file that is already gone is not an error.
  [[nodiscard]] base::Status Remove(uint64_t sequence);

  // The persisted mark: sequences below it may have been used. 0 when none was ever written.
  uint64_t reserved_sequence() const { return reserved_.load(std::memory_order_relaxed); }
  // Persists `mark` (durably) as the new reserved_sequence().
  [[nodiscard]] base::Status ReserveSequences(uint64_t mark);

  const std::string& dir() const { return dir_; }
  std::string PathFor(uint64_t sequence) const;

 private:
  BatchSpool(std::string dir, int dir_fd, int lock_fd, uint64_t reserved);
  // Writes `bytes` to `name` atomically: temp file, fsync, rename, fsync of the directory.
  base::Status WriteAtomically(const std::string& name, std::string_view bytes);

  const std::string dir_;
  const int dir_fd_;
  const int lock_fd_;
  std::atomic<uint64_t> reserved_;
};

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_SERVER_BATCH_SPOOL_H_
