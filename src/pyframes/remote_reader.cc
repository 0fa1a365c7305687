// SPDX-License-Identifier: Apache-2.0
#include "pyframes/remote_reader.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "pyframes/remote_threads.h"

namespace warpscope::pyframes {
namespace {

// process_vm_readv, counted.
class CountingReader final : public MemoryReader {
 public:
  explicit CountingReader(pid_t pid) : mem_(pid) {}
  bool Read(uint64_t addr, void* dst, size_t len) override {
    ++reads;
    return mem_.Read(addr, dst, len);
  }
  uint32_t reads = 0;

 private:
  ProcessMemoryReader mem_;
};

}  // namespace

const uint8_t* PageCacheReader::Page(uint64_t page) {
  for (size_t i = 0; i < used_; ++i) {
    if (addr_[i] == page) {
      return data_[i];
    }
  }
  size_t slot = used_;
  if (used_ < kPages) {
    ++used_;
  } else {
    slot = next_victim_++ % kPages;
  }
  if (!next_.Read(page, data_[slot], kPage)) {
    addr_[slot] = 0;  // never matches: page 0 is not a plausible address
    return nullptr;
  }
  addr_[slot] = page;
  return data_[slot];
}

bool PageCacheReader::Read(uint64_t addr, void* dst, size_t len) {
  if (!PlausibleUserRange(addr, len)) {
    return false;
  }
  const uint64_t first = addr & ~uint64_t{kPage - 1};
  const uint64_t last = (addr + len - (len > 0 ? 1 : 0)) & ~uint64_t{kPage - 1};
  if (len == 0 || last - first > kPage) {
    return len == 0 || next_.Read(addr, dst, len);
  }
  auto* out = static_cast<uint8_t*>(dst);
  for (uint64_t page = first; page <= last; page += kPage) {
    const uint8_t* p = Page(page);
    if (p == nullptr) {
      return next_.Read(addr, dst, len);  // part of the page is unmapped: the range may not be
    }
    const uint64_t from = std::max(addr, page);
    const uint64_t to = std::min(addr + len, page + kPage);
    std::memcpy(out + (from - addr), p + (from - page), to - from);
  }
  return true;
}

struct RemotePythonReader::Process {
  RemoteProbe probe = RemoteProbe::kNoProcess;
  RemotePython py;
  uint64_t probed_ns = 0;
  uint64_t checked_ns = 0;
  uint64_t used_ns = 0;
  bool suspect = false;  // a walk failed its checks: revalidate on the next read
  std::unordered_map<int64_t, uint64_t> tstates;  // native tid -> thread state
  bool listed = false;
  uint64_t listed_ns = 0;
  uint32_t pthread_tid_offset = 0;  // 3.9/3.10
  std::unique_ptr<CodeCache> cache;
};

const char* ThreadReadName(ThreadRead r) {
  switch (r) {
    case ThreadRead::kOk:
      return "ok";
    case ThreadRead::kNoProcess:
      return "no such process or no access";
    case ThreadRead::kNotPython:
      return "not a CPython process";
    case ThreadRead::kUnsupported:
      return "unsupported CPython";
    case ThreadRead::kNoThreadState:
      return "thread runs no Python";
  }
  return "?";
}

RemotePythonReader::RemotePythonReader(RemoteReaderOptions options)
    : options_(std::move(options)) {}

RemotePythonReader::~RemotePythonReader() = default;

void RemotePythonReader::Forget(pid_t pid) { processes_.erase(pid); }

const RemotePython* RemotePythonReader::InterpreterOf(pid_t pid) const {
  const auto it = processes_.find(pid);
  return it != processes_.end() && it->second->probe == RemoteProbe::kReady ? &it->second->py
                                                                            : nullptr;
}

bool RemotePythonReader::StillTheSame(const Process& p) {
  uint64_t start = 0;
  if (!ReadStartTime(options_.proc_root, p.py.pid, &start) || start != p.py.start_time) {
    return false;
  }
  return p.probe != RemoteProbe::kReady ||
         MappingStillThere(options_.proc_root, p.py.pid, p.py.map_start, p.py.dev, p.py.inode);
}

RemotePythonReader::Process& RemotePythonReader::Lookup(pid_t pid, uint64_t now_ns,
                                                        ThreadReadResult* r) {
  auto it = processes_.find(pid);
  if (it == processes_.end()) {
    if (processes_.size() >= options_.max_processes) {
      auto oldest = processes_.begin();
      for (auto i = processes_.begin(); i != processes_.end(); ++i) {
        if (i->second->used_ns < oldest->second->used_ns) {
          oldest = i;
        }
      }
      processes_.erase(oldest);
    }
    it = processes_.emplace(pid, std::make_unique<Process>()).first;
    it->second->checked_ns = now_ns;
    it->second->probed_ns = now_ns;
    it->second->probe = RemoteProbe::kNoProcess;
    r->probed = true;
  } else {
    Process& p = *it->second;
    const bool recheck =
        p.probe != RemoteProbe::kReady && now_ns - p.probed_ns >= options_.not_python_recheck_ns;
    if (recheck || p.suspect || now_ns - p.checked_ns >= options_.revalidate_ns) {
      p.checked_ns = now_ns;
      p.suspect = false;
      if (recheck || !StillTheSame(p)) {
        if (!recheck) {
          ++stats_.process_changes;
        }
        *it->second = Process{};
        it->second->probed_ns = now_ns;
        it->second->checked_ns = now_ns;
        r->probed = true;
      }
    }
  }
  Process& p = *it->second;
  p.used_ns = now_ns;
  if (r->probed) {
    ++stats_.probes;
    CountingReader mem(pid);
    ProbeCost cost;
    p.probe = ProbeRemotePython(options_.proc_root, pid, mem, &p.py, &cost, &files_);
    r->memory_reads += mem.reads;
    stats_.elf_files_read += cost.elf_files_read;
    if (p.probe == RemoteProbe::kReady) {
      p.cache = std::make_unique<CodeCache>();
    }
  }
  return p;
}

ThreadReadResult RemotePythonReader::ReadThread(pid_t pid, pid_t tid, uint64_t now_ns,
                                                size_t max_frames,
                                                std::vector<PythonFrame>* frames) {
  ++stats_.reads;
  frames->clear();
  ThreadReadResult r;
  Process& p = Lookup(pid, now_ns, &r);
  switch (p.probe) {
    case RemoteProbe::kNoProcess:
      r.status = ThreadRead::kNoProcess;
      processes_.erase(pid);  // nothing worth keeping: probe again next time
      return r;
    case RemoteProbe::kNotPython:
      r.status = ThreadRead::kNotPython;
      return r;
    case RemoteProbe::kUnsupported:
      r.status = ThreadRead::kUnsupported;
      return r;
    case RemoteProbe::kReady:
      break;
  }
  // One page cache per read: what the walk sees is copied at most once, close together.
  CountingReader counted(pid);
  PageCacheReader mem(counted);
  uint64_t tstate = 0;
  if (auto t = p.tstates.find(tid); t != p.tstates.end()) {
    if (NativeTidOf(p.py, mem, t->second, p.pthread_tid_offset) == tid) {
      ++stats_.tstate_cache_hits;
      tstate = t->second;
    } else {
      ++stats_.tstate_stale;
      p.tstates.erase(t);
      p.listed = false;  // a thread state was freed or reused: list again now
    }
  }
  if (tstate == 0 && (!p.listed || now_ns - p.listed_ns >= options_.thread_rescan_ns)) {
    ++stats_.thread_list_walks;
    r.listed_threads = true;
    std::vector<RemoteThreadState> list;
    ThreadListStats ls;
    ListThreadStates(p.py, mem, &p.pthread_tid_offset, &list, &ls);
    p.tstates.clear();
    for (const RemoteThreadState& s : list) {
      if (s.native_tid > 0) {
        p.tstates.emplace(s.native_tid, s.tstate);
      }
    }
    p.listed = true;
    p.listed_ns = now_ns;
    if (ls.unreadable && list.empty()) {
      p.suspect = true;  // exited or exec'd: revalidate on the next read
    }
    if (auto t = p.tstates.find(tid); t != p.tstates.end()) {
      tstate = t->second;
    }
  }
  if (tstate == 0) {
    r.memory_reads += counted.reads;
    r.status = ThreadRead::kNoThreadState;
    return r;
  }
  PythonFrameCollector sink(frames, max_frames);
  const uint64_t misses = p.cache->misses();
  r.walk = FrameWalker::Walk(p.py.interp, mem, tstate, *p.cache, max_frames, sink);
  sink.Finish();
  r.code_cache_misses = static_cast<uint32_t>(p.cache->misses() - misses);
  if (r.walk.first_code_invalid || (r.walk.chain_broken && r.walk.frames == 0)) {
    ++stats_.torn_walks;
    p.suspect = true;
  }
  r.memory_reads += counted.reads;
  r.status = ThreadRead::kOk;
  return r;
}

}  // namespace warpscope::pyframes
