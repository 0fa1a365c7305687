// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/cpython_stacks.h"

#include <chrono>
#include <utility>

namespace warpscope::agent::cpu_profiler {
namespace {

uint64_t SteadyNanos() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

pyframes::RemoteReaderOptions ReaderOptions(const CpythonStacks::Options& o) {
  pyframes::RemoteReaderOptions r;
  r.proc_root = (o.host_root == "/" ? std::string() : o.host_root) + "/proc";
  r.max_processes = o.max_processes;
  r.not_python_recheck_ns = o.recheck_ns;
  return r;
}

}  // namespace

CpythonStacks::CpythonStacks(Options options)
    : options_(std::move(options)), reader_(ReaderOptions(options_)) {
  if (!options_.now_ns) {
    options_.now_ns = SteadyNanos;
  }
}

std::vector<PythonStackFrame> CpythonStacks::ReadFrames(uint32_t pid, uint32_t tid) {
  const uint64_t now = options_.now_ns();
  if (auto it = skip_until_.find(pid); it != skip_until_.end()) {
    if (now < it->second) {
      return {};
    }
    skip_until_.erase(it);
  }
  const pyframes::ThreadReadResult r = reader_.ReadThread(
      static_cast<pid_t>(pid), static_cast<pid_t>(tid), now, options_.max_frames, &frames_);
  auto skip = [&] {
    if (skip_until_.size() >= options_.max_processes) {
      skip_until_.clear();  // bounded: every verdict is found again at the next sample
    }
    skip_until_[pid] = now + options_.recheck_ns;
  };
  switch (r.status) {
    case pyframes::ThreadRead::kOk:
      break;
    case pyframes::ThreadRead::kNotPython:
      skip();
      return {};
    case pyframes::ThreadRead::kUnsupported:
      ++stats_.unreadable["unsupported"];
      skip();
      return {};
    case pyframes::ThreadRead::kNoProcess:
      ++stats_.unreadable["no_access"];
      skip();
      return {};
    case pyframes::ThreadRead::kNoThreadState:
      return {};  // a native thread of a Python process
  }
  bool torn = r.walk.chain_broken || r.walk.first_code_invalid;
  std::vector<PythonStackFrame> out;
  out.reserve(frames_.size());
  for (const pyframes::PythonFrame& p : frames_) {
    torn |= p.unreadable;
    PythonStackFrame f;
    f.frame.kind = profiling::FrameKind::kPython;
    f.frame.function = p.function;
    f.frame.file = p.file;
    f.frame.line = p.line;
    f.eval_entry = p.eval_entry;
    out.push_back(std::move(f));
  }
  if (torn) {
    ++stats_.unreadable["torn"];
  }
  if (!out.empty()) {
    ++stats_.stacks;
  }
  return out;
}

std::vector<profiling::Frame> CpythonStacks::Splice(std::vector<profiling::Frame> native,
                                                    const std::vector<PythonStackFrame>& python) {
  // SpliceStacks works innermost first; `native` is root first.
  kinds_.clear();
  for (auto it = native.rbegin(); it != native.rend(); ++it) {
    kinds_.push_back(it->kind != profiling::FrameKind::kNative ? pyframes::NativeKind::kOther
                     : it->system_name.empty() ? pyframes::ClassifyNativeSymbol(it->function)
                                               : pyframes::ClassifyNativeSymbol(it->system_name));
  }
  frames_.resize(python.size());
  for (size_t i = 0; i < python.size(); ++i) {
    frames_[i].eval_entry = python[i].eval_entry;
  }
  const pyframes::SpliceStats st = pyframes::SpliceStacks(kinds_, frames_, &merged_);
  if (st.mismatch) {
    ++stats_.splice_mismatches["mismatch"];
  } else if (st.python_unplaced) {
    ++stats_.splice_mismatches["unplaced"];
  }
  std::vector<profiling::Frame> out;
  out.reserve(merged_.size());
  for (auto it = merged_.rbegin(); it != merged_.rend(); ++it) {
    if (it->python) {
      out.push_back(python[it->index].frame);
    } else {
      out.push_back(std::move(native[native.size() - 1 - it->index]));
    }
  }
  return out;
}

void CpythonStacks::ForgetProcess(uint32_t pid) {
  reader_.Forget(static_cast<pid_t>(pid));
  skip_until_.erase(pid);
}

}  // namespace warpscope::agent::cpu_profiler
