// SPDX-License-Identifier: Apache-2.0
// The scenario parser's host side: the top-level `host` map (the simulated host's CPUs and
// memory) and a process's `host` map (executable, command line, user, container, threads, RSS and
// CPU over time), which the synthetic /proc tree shows (host_tree.h).
#include <map>
#include <string>

#include "sim/nvml/scenario_parser.h"

namespace warpscope::sim {
namespace scenario_internal {
namespace {

using base::Error;
using base::Result;
using base::Status;

constexpr size_t kMaxPathBytes = 4095;     // PATH_MAX - 1
constexpr size_t kMaxCmdlineBytes = 4096;  // what a real /proc/<pid>/cmdline shows of argv
constexpr unsigned kMaxUid = 65533;        // 65534 is nobody, 65535 is (uid_t)-1 on 16 bits

bool IsLowerHex(std::string_view s, size_t size) {
  if (s.size() != size) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// 8-4-4-4-12 lowercase hex, as Kubernetes writes pod UIDs.
bool IsUuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (s[i] == '-')) return false;
    if (!dash && !IsLowerHex(s.substr(i, 1), 1)) return false;
  }
  return true;
}

// A POSIX-portable user name, as useradd accepts it: [a-z_][a-z0-9_-]*, at most 32 characters.
bool IsUserName(std::string_view s) {
  if (s.empty() || s.size() > 32) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok =
        (c >= 'a' && c <= 'z') || c == '_' || (i > 0 && ((c >= '0' && c <= '9') || c == '-'));
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Status Parser::ParseHost(const YAML::Node& n, std::string_view path, HostSpec& host) const {
  if (!n.IsMap()) {
    return Err(n, path, "expected a map, e.g. {cpus: 96, memory_total: 2TiB}");
  }
  WARPSCOPE_RETURN_IF_ERROR(
      CheckKeys(n, path, {"cpus", "memory_total", "memory_base", "processes"}));
  WARPSCOPE_RETURN_IF_ERROR(OptionalUInt(n, path, "cpus", 1, 4096, host.cpus));
  WARPSCOPE_RETURN_IF_ERROR(
      OptionalQuantity(n, path, "memory_total", Unit::kBytes, host.memory_total));
  if (host.memory_total <= 0 || host.memory_total > kMaxQuantity) {
    return Err(n["memory_total"], Join(path, "memory_total"), "must be more than 0, e.g. 2TiB");
  }
  WARPSCOPE_RETURN_IF_ERROR(
      OptionalQuantity(n, path, "memory_base", Unit::kBytes, host.memory_base));
  if (host.memory_base > host.memory_total) {
    return Err(n["memory_base"], Join(path, "memory_base"),
               "must not exceed memory_total (it is the memory used besides the processes)");
  }
  const YAML::Node procs = n["processes"];
  if (Present(procs)) {
    const std::string ppath = Join(path, "processes");
    if (!procs.IsSequence()) {
      return Err(procs, ppath, "expected a list such as [{pid: 1200, name: sshd, cpu: 0.1}]");
    }
    for (size_t i = 0; i < procs.size(); ++i) {
      ProcessSpec proc;
      WARPSCOPE_RETURN_IF_ERROR(ParseHostProcess(procs[i], Index(ppath, i), proc));
      host.processes.push_back(std::move(proc));
    }
  }
  return base::OkStatus();
}

// A host-only process: pid, name, start and stop as a GPU process has them, and the keys of a
// process's `host` map on the same level.
Status Parser::ParseHostProcess(const YAML::Node& n, const std::string& path,
                                ProcessSpec& proc) const {
  if (!n.IsMap()) {
    return Err(n, path, "expected a map such as {pid: 1200, name: sshd, cpu: 0.1, rss: 12MiB}");
  }
  WARPSCOPE_RETURN_IF_ERROR(CheckKeys(n, path,
                                      {"pid", "name", "start", "stop", "exe", "cmdline", "user",
                                       "uid", "container_id", "pod_uid", "threads", "rss", "cpu"}));
  WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node pid, Required(n, path, "pid", "pid: 1200"));
  WARPSCOPE_ASSIGN_OR_RETURN(proc.pid, UInt(pid, Join(path, "pid"), 1, 4194304));
  WARPSCOPE_ASSIGN_OR_RETURN(YAML::Node name, Required(n, path, "name", "name: sshd"));
  WARPSCOPE_ASSIGN_OR_RETURN(proc.name, Str(name, Join(path, "name")));
  if (proc.name.empty() || proc.name.size() > 255) {
    return Err(name, Join(path, "name"), "must be 1..255 characters");
  }
  WARPSCOPE_RETURN_IF_ERROR(OptionalQuantity(n, path, "start", Unit::kSeconds, proc.start_s));
  if (Present(n["stop"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(proc.stop_s,
                               Quantity(n["stop"], Join(path, "stop"), Unit::kSeconds));
    if (proc.stop_s <= proc.start_s) {
      return Err(n["stop"], Join(path, "stop"), "must be later than start");
    }
  }
  HostProcessSpec host;
  WARPSCOPE_RETURN_IF_ERROR(ParseProcessHost(n, path, proc, host, /*check_keys=*/false));
  proc.host = std::move(host);
  return base::OkStatus();
}

// A host-only process's pid is its own: no other host-only process or GPU process has it.
Status Parser::CheckHostPids(const YAML::Node& root, const Scenario& s) const {
  if (s.host.processes.empty()) return base::OkStatus();
  const YAML::Node procs = root["host"]["processes"];  // present: it gave the processes
  for (size_t i = 0; i < s.host.processes.size(); ++i) {
    const unsigned pid = s.host.processes[i].pid;
    const std::string path = Join(Index("host.processes", i), "pid");
    for (size_t j = 0; j < i; ++j) {
      if (s.host.processes[j].pid == pid) {
        return Err(procs[i]["pid"], path,
                   fmt::format("pid {} is also host.processes[{}]; pids are unique", pid, j));
      }
    }
    for (const DeviceSpec& d : s.devices) {
      for (const ProcessSpec& p : d.processes) {
        if (p.pid == pid) {
          return Err(procs[i]["pid"], path,
                     fmt::format("pid {} is a GPU process of device {}; give it its host side "
                                 "there (devices[].processes[].host)",
                                 pid, d.index));
        }
      }
    }
  }
  return base::OkStatus();
}

Status Parser::ParseProcessHost(const YAML::Node& n, const std::string& path,
                                const ProcessSpec& proc, HostProcessSpec& host,
                                bool check_keys) const {
  if (!n.IsMap()) {
    return Err(n, path,
               "expected a map such as {exe: /usr/bin/python3, cmdline: [python3, train.py], "
               "cpu: 6}");
  }
  if (check_keys) {
    WARPSCOPE_RETURN_IF_ERROR(CheckKeys(
        n, path,
        {"exe", "cmdline", "user", "uid", "container_id", "pod_uid", "threads", "rss", "cpu"}));
  }
  host.exe = "/usr/bin/" + proc.name;
  if (Present(n["exe"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(host.exe, Str(n["exe"], Join(path, "exe")));
    if (host.exe.size() < 2 || host.exe[0] != '/' || host.exe.back() == '/' ||
        host.exe.size() > kMaxPathBytes || host.exe.find('\0') != std::string::npos) {
      return Err(n["exe"], Join(path, "exe"),
                 "must be an absolute path to a file, e.g. /usr/bin/python3.11");
    }
  }
  host.cmdline = {host.exe};
  if (Present(n["cmdline"])) {
    WARPSCOPE_RETURN_IF_ERROR(ParseCmdline(n["cmdline"], Join(path, "cmdline"), host));
  }
  WARPSCOPE_RETURN_IF_ERROR(ParseProcessIds(n, path, host));
  WARPSCOPE_RETURN_IF_ERROR(OptionalUInt(n, path, "threads", 1, 100000, host.threads));
  for (auto [key, signal, unit] :
       {std::tuple{"rss", &host.rss, Unit::kBytes}, std::tuple{"cpu", &host.cpu, Unit::kNumber}}) {
    if (Present(n[key])) {
      WARPSCOPE_ASSIGN_OR_RETURN(*signal, ParseSignal(n[key], Join(path, key), unit));
    }
  }
  return base::OkStatus();
}

// `cmdline`: a list of arguments, or one string split at spaces.
Status Parser::ParseCmdline(const YAML::Node& n, const std::string& path,
                            HostProcessSpec& host) const {
  host.cmdline.clear();
  if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) {
      WARPSCOPE_ASSIGN_OR_RETURN(std::string arg, Str(n[i], Index(path, i)));
      if (arg.find('\0') != std::string::npos) {
        return Err(n[i], Index(path, i), "must not contain NUL characters");
      }
      host.cmdline.push_back(std::move(arg));
    }
  } else {
    WARPSCOPE_ASSIGN_OR_RETURN(std::string line, Str(n, path));
    size_t pos = 0;
    while (pos < line.size()) {
      const size_t end = std::min(line.find(' ', pos), line.size());
      if (end > pos) host.cmdline.push_back(line.substr(pos, end - pos));
      pos = end + 1;
    }
  }
  size_t bytes = 0;
  for (const std::string& arg : host.cmdline) bytes += arg.size() + 1;
  if (host.cmdline.empty() || host.cmdline[0].empty()) {
    return Err(n, path, "needs at least the program, e.g. cmdline: [python3, train.py]");
  }
  if (bytes > kMaxCmdlineBytes) {
    return Err(n, path,
               fmt::format("is {} bytes; at most {} are allowed", bytes, kMaxCmdlineBytes));
  }
  return base::OkStatus();
}

// user, uid, container_id and pod_uid.
Status Parser::ParseProcessIds(const YAML::Node& n, const std::string& path,
                               HostProcessSpec& host) const {
  if (Present(n["user"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(host.user, Str(n["user"], Join(path, "user")));
    if (!IsUserName(host.user)) {
      return Err(n["user"], Join(path, "user"),
                 fmt::format("'{}' is not a user name; use lowercase letters, digits, _ and -, "
                             "starting with a letter or _ (at most 32), e.g. alice",
                             host.user));
    }
  }
  if (Present(n["uid"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(host.uid, UInt(n["uid"], Join(path, "uid"), 0, kMaxUid));
    host.uid_given = true;
    if ((host.uid == 0) != (host.user == "root")) {
      return Err(n["uid"], Join(path, "uid"),
                 "uid 0 is root and root is uid 0; give another uid or user: root");
    }
  }
  if (Present(n["container_id"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(host.container_id,
                               Str(n["container_id"], Join(path, "container_id")));
    if (!IsLowerHex(host.container_id, 64)) {
      return Err(n["container_id"], Join(path, "container_id"),
                 "must be 64 lowercase hex digits, as Docker and containerd write container ids");
    }
  }
  if (Present(n["pod_uid"])) {
    WARPSCOPE_ASSIGN_OR_RETURN(host.pod_uid, Str(n["pod_uid"], Join(path, "pod_uid")));
    if (!IsUuid(host.pod_uid)) {
      return Err(n["pod_uid"], Join(path, "pod_uid"),
                 "must be a lowercase UUID such as 1b4e28ba-2fa1-11d2-883f-0016d3cca427");
    }
    if (host.container_id.empty()) {
      return Err(n["pod_uid"], Join(path, "pod_uid"),
                 "needs container_id: a pod's processes run in one of its containers");
    }
  }
  return base::OkStatus();
}

// Gives every user without a uid one: root is 0, the others 1000, 1001, ... in order of first
// appearance, skipping uids given explicitly. One user name has one uid, one uid one name.
Status Parser::AssignUids(const YAML::Node& root, Scenario& s) const {
  std::map<std::string, unsigned, std::less<>> by_user = {{"root", 0}};
  std::map<unsigned, std::string> by_uid = {{0, "root"}};
  auto conflict = [&](const HostProcessSpec& h, unsigned pid) {
    return Err(root["devices"], "devices",
               fmt::format("pid {} runs as user '{}' with uid {}, but {}; one user name has one "
                           "uid",
                           pid, h.user, h.uid,
                           by_user.contains(h.user)
                               ? fmt::format("'{}' is uid {} elsewhere", h.user, by_user[h.user])
                               : fmt::format("uid {} is '{}' elsewhere", h.uid, by_uid[h.uid])));
  };
  std::vector<std::vector<ProcessSpec>*> lists = {&s.host.processes};
  for (DeviceSpec& d : s.devices) lists.push_back(&d.processes);
  for (bool explicit_pass : {true, false}) {
    for (std::vector<ProcessSpec>* list : lists) {
      for (ProcessSpec& p : *list) {
        if (!p.host || p.host->uid_given != explicit_pass) continue;
        HostProcessSpec& h = *p.host;
        auto it = by_user.find(h.user);
        if (!explicit_pass) {
          if (it != by_user.end()) {
            h.uid = it->second;
            continue;
          }
          unsigned uid = 1000;
          while (by_uid.contains(uid)) ++uid;
          h.uid = uid;
        } else if ((it != by_user.end() && it->second != h.uid) ||
                   (by_uid.contains(h.uid) && by_uid[h.uid] != h.user)) {
          return conflict(h, p.pid);
        }
        by_user[h.user] = h.uid;
        by_uid[h.uid] = h.user;
      }
    }
  }
  return base::OkStatus();
}

}  // namespace scenario_internal
}  // namespace warpscope::sim
