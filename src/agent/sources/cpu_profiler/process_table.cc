// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/process_table.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "base/file_util.h"

namespace warpscope::agent::cpu_profiler {
namespace {

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) {
    s.pop_back();
  }
  return s;
}

// The last value of "NSpid:" (the pid in the innermost pid namespace); 0 without the line.
uint32_t InnermostNsPid(std::string_view status) {
  const size_t at = status.find("\nNSpid:");
  if (at == std::string_view::npos) {
    return 0;
  }
  std::string_view line = status.substr(at + 7);
  line = line.substr(0, line.find('\n'));
  uint32_t last = 0;
  for (std::string_view field : base::SplitString(line, " \t")) {
    uint32_t value = 0;
    if (std::from_chars(field.data(), field.data() + field.size(), value).ec == std::errc()) {
      last = value;
    }
  }
  return last;
}

}  // namespace

void InsertMapping(std::vector<profiling::MapEntry>& maps, const profiling::MapEntry& entry) {
  std::vector<profiling::MapEntry> out;
  out.reserve(maps.size() + 2);
  for (const profiling::MapEntry& m : maps) {
    if (m.end <= entry.start || m.start >= entry.end) {
      out.push_back(m);
      continue;
    }
    if (m.start < entry.start) {  // the part below the new mapping
      profiling::MapEntry low = m;
      low.end = entry.start;
      out.push_back(low);
    }
    if (m.end > entry.end) {  // the part above it
      profiling::MapEntry high = m;
      high.file_offset += entry.end - m.start;
      high.start = entry.end;
      out.push_back(high);
    }
  }
  out.push_back(entry);
  std::sort(out.begin(), out.end(), [](const profiling::MapEntry& a, const profiling::MapEntry& b) {
    return a.start < b.start;
  });
  maps = std::move(out);
}

ProcessTable::ProcessTable(std::string host_root, size_t max_processes,
                           model::ProcessResolver* identities)
    : host_root_(std::move(host_root)),
      max_processes_(std::max<size_t>(1, max_processes)),
      identities_(identities) {}

ProcessInfo& ProcessTable::Track(uint32_t pid) {
  auto [it, inserted] = processes_.try_emplace(pid);
  ProcessInfo& process = it->second;
  process.last_touch = ++clock_;
  process.pid = pid;
  return process;
}

ProcessInfo& ProcessTable::Get(uint32_t pid) {
  ProcessInfo& process = Track(pid);
  if (!process.seeded) {
    process.seeded = true;
    Seed(process);
  }
  return process;
}

const ProcessInfo* ProcessTable::Find(uint32_t pid) const {
  auto it = processes_.find(pid);
  return it == processes_.end() ? nullptr : &it->second;
}

void ProcessTable::Seed(ProcessInfo& process) {
  const std::string dir = fmt::format("{}/proc/{}", host_root_, process.pid);
  auto maps = base::ReadFile(dir + "/maps");
  if (!maps) {
    ++stats_.seed_failed;
    return;
  }
  ++stats_.seeded;
  // The live maps hold whatever records told before: they replace them.
  process.maps.clear();
  for (const profiling::MapEntry& m : profiling::ParseProcMaps(*maps)) {
    if (m.executable) {
      InsertMapping(process.maps, m);
    }
  }
  ++process.maps_generation;
  if (auto comm = base::ReadFile(dir + "/comm")) {
    process.comm = Trimmed(*comm);
  }
  const model::ProcessInfo* identity =
      identities_ != nullptr ? identities_->Resolve(static_cast<int>(process.pid)) : nullptr;
  if (identity != nullptr) {
    process.ns_pid =
        identity->container_pid > 0 ? static_cast<uint32_t>(identity->container_pid) : 0;
    process.container_id = identity->container_id;
    process.pod_uid = identity->pod_uid;
    process.pod_namespace = identity->pod_namespace;
    process.pod_name = identity->pod_name;
    process.container_name = identity->container_name;
  } else if (auto status = base::ReadFile(dir + "/status")) {
    process.ns_pid = InnermostNsPid(*status);
  }
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink(dir + "/exe", ec);
  if (!ec) {
    process.executable = exe.string();
  }
  std::filesystem::directory_iterator tasks(dir + "/task", ec);
  for (; !ec && tasks != std::filesystem::directory_iterator(); tasks.increment(ec)) {
    const std::string name = tasks->path().filename().string();
    char* end = nullptr;
    const unsigned long tid = std::strtoul(name.c_str(), &end, 10);
    if (end != nullptr && *end == '\0') {
      process.thread_names[static_cast<uint32_t>(tid)] =
          ThreadName(process.pid, static_cast<uint32_t>(tid));
    }
  }
}

std::string ProcessTable::ThreadName(uint32_t pid, uint32_t tid) const {
  auto comm = base::ReadFile(fmt::format("{}/proc/{}/task/{}/comm", host_root_, pid, tid));
  return comm ? Trimmed(*comm) : std::string();
}

void ProcessTable::Apply(const MmapRecord& record) {
  if (!record.executable || record.path.empty()) {
    return;  // data mappings are never unwound through
  }
  ProcessInfo& process = Track(record.pid);
  profiling::MapEntry entry;
  entry.start = record.start;
  entry.end = record.start + record.length;
  entry.file_offset = record.file_offset;
  entry.executable = true;
  entry.inode = record.inode;
  entry.path = record.path;
  InsertMapping(process.maps, entry);
  ++process.maps_generation;
  if (process.executable.empty() && entry.path[0] == '/' && record.file_offset == 0) {
    process.executable = entry.path;
  }
}

void ProcessTable::Apply(const CommRecord& record) {
  ProcessInfo& process = Track(record.pid);
  if (record.exec && record.pid == record.tid) {
    // A new image: the old mappings are gone (the new ones follow as mmap records).
    process.maps.clear();
    ++process.maps_generation;
    process.executable.clear();
    process.thread_names.clear();
    process.exited = false;
  }
  if (record.pid == record.tid) {
    process.comm = record.comm;
  }
  process.thread_names[record.tid] = record.comm;
}

void ProcessTable::Apply(const TaskRecord& record) {
  if (!record.exit) {
    if (record.pid != record.ppid || record.tid == record.pid) {
      return;  // a new process: seeded from /proc on its first sample (fork copies maps)
    }
    ProcessInfo& process = Track(record.pid);  // a new thread of a known process
    auto parent = process.thread_names.find(record.ptid);
    if (parent != process.thread_names.end()) {
      process.thread_names[record.tid] = parent->second;
    }
    return;
  }
  auto it = processes_.find(record.pid);
  if (it != processes_.end() && record.pid == record.tid) {
    it->second.exited = true;
  }
}

std::vector<uint32_t> ProcessTable::Collect(const std::set<uint32_t>& keep) {
  std::vector<uint32_t> dropped;
  for (auto it = processes_.begin(); it != processes_.end();) {
    if (it->second.exited && keep.count(it->first) == 0) {
      dropped.push_back(it->first);
      it = processes_.erase(it);
      ++stats_.evicted;
    } else {
      ++it;
    }
  }
  while (processes_.size() > max_processes_) {
    auto oldest =
        std::min_element(processes_.begin(), processes_.end(), [](const auto& a, const auto& b) {
          if (a.second.exited != b.second.exited) {
            return a.second.exited;
          }
          return a.second.last_touch < b.second.last_touch;
        });
    dropped.push_back(oldest->first);
    processes_.erase(oldest);
    ++stats_.evicted;
  }
  return dropped;
}

}  // namespace warpscope::agent::cpu_profiler
