// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/inference/discovery.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace warpscope::agent::inference {
namespace {

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// "--max_num_seqs" and "--max-num-seqs" are the same option.
std::string Canonical(std::string_view option) {
  std::string s(option);
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

// The value of an option given as "--name value" or "--name=value" (the last one wins).
std::optional<std::string> Option(std::span<const std::string> argv,
                                  std::initializer_list<std::string_view> names) {
  std::optional<std::string> value;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string arg = Canonical(argv[i].substr(0, argv[i].find('=')));
    for (std::string_view name : names) {
      if (arg != name) continue;
      const size_t eq = argv[i].find('=');
      if (eq != std::string::npos) {
        value = argv[i].substr(eq + 1);
      } else if (i + 1 < argv.size()) {
        value = argv[i + 1];
      }
    }
  }
  return value;
}

std::optional<double> Number(const std::optional<std::string>& s) {
  if (!s) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
  if (ec != std::errc() || end != s->data() + s->size() || !(v > 0)) return std::nullopt;
  return v;
}

// The first argument after `from` that is not an option (a positional model).
std::string Positional(std::span<const std::string> argv, size_t from) {
  if (from < argv.size() && !argv[from].starts_with("-")) return argv[from];
  return "";
}

// Where the server command starts, and which engine it is.
std::optional<std::pair<Engine, size_t>> FindCommand(std::span<const std::string> argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string_view base = Basename(argv[i]);
    const std::string_view next = i + 1 < argv.size() ? std::string_view(argv[i + 1]) : "";
    if (base == "vllm" && next == "serve") return std::pair(Engine::kVllm, i + 2);
    if (argv[i] == "-m" && (next == "vllm.entrypoints.openai.api_server")) {
      return std::pair(Engine::kVllm, i + 2);
    }
    if (argv[i] == "-m" && next == "sglang.launch_server") return std::pair(Engine::kSglang, i + 2);
    if (base == "trtllm-serve") {
      return std::pair(Engine::kTrtllm, next == "serve" ? i + 2 : i + 1);
    }
    if (base == "text-generation-launcher") return std::pair(Engine::kTgi, i + 1);
    if (base == "text-generation-server")
      return std::pair(Engine::kTgi, next == "serve" ? i + 2 : i + 1);
  }
  return std::nullopt;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct ProcStat {
  int ppid = 0;
  uint64_t start_ticks = 0;
  std::string comm;
};

// /proc/<pid>/stat: "pid (comm) state ppid ... starttime(22) ..."; comm may hold spaces and
// parentheses, so the fields are counted from the last ')'.
std::optional<ProcStat> ReadStat(const std::string& dir) {
  const std::string text = ReadFile(dir + "/stat");
  const size_t open = text.find('(');
  const size_t close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcStat st;
  st.comm = text.substr(open + 1, close - open - 1);
  std::istringstream rest(text.substr(close + 1));
  std::string field;
  for (int n = 3; rest >> field; ++n) {
    if (n == 4) st.ppid = std::atoi(field.c_str());
    if (n == 22) {
      st.start_ticks = std::strtoull(field.c_str(), nullptr, 10);
      return st;
    }
  }
  return std::nullopt;
}

std::vector<std::string> ReadCmdline(const std::string& dir) {
  const std::string text = ReadFile(dir + "/cmdline");
  std::vector<std::string> argv;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    argv.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return argv;
}

std::vector<int> Pids(const std::string& proc_root) {
  std::vector<int> pids;
  DIR* d = opendir(proc_root.c_str());
  if (d == nullptr) return pids;
  while (dirent* e = readdir(d)) {
    int pid = 0;
    const std::string_view name = e->d_name;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (ec == std::errc() && end == name.data() + name.size() && pid > 0) pids.push_back(pid);
  }
  closedir(d);
  std::sort(pids.begin(), pids.end());
  return pids;
}

// The inodes of the sockets a process holds open ("socket:[12345]" links in fd/).
void SocketInodes(const std::string& dir, std::set<uint64_t>& inodes) {
  DIR* d = opendir((dir + "/fd").c_str());
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char target[128];
    const ssize_t n = readlink((dir + "/fd/" + e->d_name).c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    const std::string_view link(target, static_cast<size_t>(n));
    if (!link.starts_with("socket:[") || !link.ends_with("]")) continue;
    inodes.insert(std::strtoull(link.substr(8).data(), nullptr, 10));
  }
  closedir(d);
}

// The LISTEN sockets (state 0A) of a net/tcp or net/tcp6 table whose inode is in `inodes`.
void ListenPorts(const std::string& table, const std::set<uint64_t>& inodes, std::set<int>& ports) {
  std::istringstream in(ReadFile(table));
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, state, queues, timer, retr, uid, timeout, inode;
    if (!(f >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >>
          inode)) {
      continue;
    }
    if (state != "0A" || !inodes.contains(std::strtoull(inode.c_str(), nullptr, 10))) continue;
    const size_t colon = local.rfind(':');
    if (colon == std::string::npos) continue;
    ports.insert(static_cast<int>(std::strtol(local.c_str() + colon + 1, nullptr, 16)));
  }
}

}  // namespace

std::optional<ServerCommand> ParseServerCommand(std::span<const std::string> argv) {
  auto found = FindCommand(argv);
  if (!found) return std::nullopt;
  const auto [engine, rest] = *found;
  ServerCommand c;
  c.engine = engine;
  c.metrics_path = engine == Engine::kTrtllm ? "/prometheus/metrics" : "/metrics";
  const std::optional<std::string> served = Option(argv, {"--served-model-name"});
  std::optional<std::string> model;
  switch (engine) {
    case Engine::kVllm:
      model = Option(argv, {"--model"});
      c.port = 8000;
      c.limits.max_num_batched_tokens = Number(Option(argv, {"--max-num-batched-tokens"}));
      c.limits.max_num_seqs = Number(Option(argv, {"--max-num-seqs"}));
      // vLLM's API-server defaults on GPUs under 70 GiB and on A100 (EngineArgs); larger GPUs
      // get 8192 and 1024 (docs/design/inference.md).
      if (!c.limits.max_num_batched_tokens) c.limits.max_num_batched_tokens = 2048;
      if (!c.limits.max_num_seqs) c.limits.max_num_seqs = 256;
      break;
    case Engine::kSglang:
      model = Option(argv, {"--model-path", "--model"});
      c.port = 30000;
      c.limits.max_num_seqs = Number(Option(argv, {"--max-running-requests"}));
      break;
    case Engine::kTrtllm:
      c.port = 8000;
      c.limits.max_num_batched_tokens = Number(Option(argv, {"--max-num-tokens"}));
      c.limits.max_num_seqs = Number(Option(argv, {"--max-batch-size"}));
      break;
    case Engine::kTgi:
      model = Option(argv, {"--model-id"});
      c.port = 3000;
      c.limits.max_num_seqs = Number(Option(argv, {"--max-batch-size"}));
      break;
  }
  if (auto port = Number(Option(argv, {"--port"}))) c.port = static_cast<int>(*port);
  if (!model || model->empty()) model = Positional(argv, rest);
  if (served && !served->empty()) model = served;
  c.model = model.value_or("");
  return c;
}

namespace {

// Fills in the descendants of `p` (from `children`: parent pid -> child pids), the ports it and
// they listen on and the URL.
void CompleteProcess(const std::string& proc_root, const std::multimap<int, int>& children,
                     ServingProcess& p) {
  std::vector<int> queue{p.pid};
  std::set<int> seen{p.pid};
  for (size_t i = 0; i < queue.size(); ++i) {
    auto [lo, hi] = children.equal_range(queue[i]);
    for (auto it = lo; it != hi; ++it) {
      if (seen.insert(it->second).second) queue.push_back(it->second);
    }
  }
  std::set<uint64_t> inodes;
  for (int pid : queue) SocketInodes(proc_root + "/" + std::to_string(pid), inodes);
  p.descendants.assign(queue.begin() + 1, queue.end());
  std::sort(p.descendants.begin(), p.descendants.end());
  std::set<int> ports;
  const std::string net = proc_root + "/" + std::to_string(p.pid) + "/net/";
  ListenPorts(net + "tcp", inodes, ports);
  ListenPorts(net + "tcp6", inodes, ports);
  p.listen_ports.assign(ports.begin(), ports.end());
  p.url.clear();
  if (!ports.empty()) {
    const int port =
        p.command.port && ports.contains(*p.command.port) ? *p.command.port : *ports.begin();
    p.url = "http://127.0.0.1:" + std::to_string(port) + p.command.metrics_path;
  }
}

}  // namespace

std::vector<ServingProcess> DiscoverServingProcesses(const std::string& proc_root) {
  std::map<int, ProcStat> stats;
  std::multimap<int, int> children;
  std::vector<ServingProcess> candidates;
  for (int pid : Pids(proc_root)) {
    const std::string dir = proc_root + "/" + std::to_string(pid);
    auto st = ReadStat(dir);
    if (!st) continue;
    children.emplace(st->ppid, pid);
    stats[pid] = *st;
    const std::vector<std::string> argv = ReadCmdline(dir);
    auto command = ParseServerCommand(argv);
    if (!command) continue;
    ServingProcess p;
    p.pid = pid;
    p.start_ticks = st->start_ticks;
    p.comm = st->comm;
    for (const std::string& a : argv) p.command_line += (p.command_line.empty() ? "" : " ") + a;
    p.command = std::move(*command);
    candidates.push_back(std::move(p));
  }
  std::set<int> serving;
  for (const ServingProcess& p : candidates) serving.insert(p.pid);
  std::vector<ServingProcess> found;
  for (ServingProcess& p : candidates) {
    bool nested = false;  // a descendant of another serving process
    std::set<int> seen{p.pid};
    for (int up = stats[p.pid].ppid; up > 0 && stats.contains(up) && seen.insert(up).second;
         up = stats[up].ppid) {
      nested = nested || serving.contains(up);
    }
    if (nested) continue;
    CompleteProcess(proc_root, children, p);
    found.push_back(std::move(p));
  }
  return found;
}

std::optional<ServingProcess> ReadServingProcess(const std::string& proc_root, int pid) {
  const std::string dir = proc_root + "/" + std::to_string(pid);
  auto st = ReadStat(dir);
  if (!st) return std::nullopt;
  ServingProcess p;
  p.pid = pid;
  p.start_ticks = st->start_ticks;
  p.comm = st->comm;
  const std::vector<std::string> argv = ReadCmdline(dir);
  for (const std::string& a : argv) p.command_line += (p.command_line.empty() ? "" : " ") + a;
  if (auto command = ParseServerCommand(argv)) {
    p.command = std::move(*command);
  } else {
    p.serving_command = false;
  }
  std::multimap<int, int> children;
  for (int other : Pids(proc_root)) {
    if (auto other_st = ReadStat(proc_root + "/" + std::to_string(other))) {
      children.emplace(other_st->ppid, other);
    }
  }
  CompleteProcess(proc_root, children, p);
  return p;
}

}  // namespace warpscope::agent::inference
