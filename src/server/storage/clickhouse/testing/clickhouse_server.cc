// SPDX-License-Identifier: Apache-2.0
#include "server/storage/clickhouse/testing/clickhouse_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace warpscope::server::clickhouse {
namespace {

// A port that was free a moment ago (the kernel's pick for port 0).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

bool Executable(const std::string& path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0;
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

std::string ReadTail(const std::string& path, size_t max) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > max ? s.substr(s.size() - max) : s;
}

}  // namespace

std::string TestServer::FindBinary() {
  if (const char* env = std::getenv("WARPSCOPE_CLICKHOUSE_SERVER"); env != nullptr && *env) {
    return Executable(env) ? std::string(env) : std::string();
  }
  std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  path += ":/usr/bin:/usr/sbin";
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    if (std::string candidate = dir + "/clickhouse-server"; Executable(candidate)) {
      return candidate;
    }
  }
  return "";
}

base::Result<std::unique_ptr<TestServer>> TestServer::Start(const std::string& password,
                                                            std::chrono::seconds ready_within) {
  std::unique_ptr<TestServer> s(new TestServer());
  s->binary_ = FindBinary();
  if (s->binary_.empty()) {
    return base::Error(base::NotFound("{}", kSetupHint));
  }
  if (s->dir_.path().empty()) {
    return base::Error(base::Internal("cannot create a temporary directory for clickhouse-server"));
  }
  s->ready_within_ = ready_within;
  s->http_port_ = FreePort();
  s->tcp_port_ = FreePort();
  const std::string& d = s->dir_.path();
  std::filesystem::create_directories(d + "/data");
  std::filesystem::create_directories(d + "/tmp");
  std::filesystem::create_directories(d + "/user_files");
  // Only what a test needs: loopback HTTP and native ports, small caches, logs to files. The
  // same keys are understood by 18.16 and current releases.
  const std::string config = fmt::format(
      R"(<?xml version="1.0"?>
<yandex>
  <logger>
    <level>warning</level><log>{0}/server.log</log><errorlog>{0}/server.err.log</errorlog>
  </logger>
  <http_port>{1}</http_port>
  <tcp_port>{2}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>{0}/data/</path>
  <tmp_path>{0}/tmp/</tmp_path>
  <user_files_path>{0}/user_files/</user_files_path>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <users_config>{0}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
</yandex>
)",
      d, s->http_port_, s->tcp_port_);
  const std::string users = fmt::format(
      R"(<?xml version="1.0"?>
<yandex>
  <profiles><default><max_threads>2</max_threads><background_pool_size>2</background_pool_size>
    <background_schedule_pool_size>2</background_schedule_pool_size></default></profiles>
  <users><default><password>{}</password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
)",
      password);
  if (!WriteFile(d + "/config.xml", config) || !WriteFile(d + "/users.xml", users)) {
    return base::Error(base::Internal("cannot write clickhouse-server's config under {}", d));
  }
  WARPSCOPE_RETURN_IF_ERROR(s->Launch());
  return s;
}

base::Status TestServer::Launch() {
  const std::string& d = dir_.path();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string out = d + "/stdout.log";
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  const std::string config_arg = "--config-file=" + d + "/config.xml";
  std::string bin = binary_;
  char* argv[] = {bin.data(), const_cast<char*>(config_arg.c_str()), nullptr};
  const int rc = posix_spawn(&pid_, binary_.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    pid_ = -1;
    return base::Internal("cannot start {}: {}", binary_, strerror(rc));
  }
  // Ready when /ping answers; the deadline bounds a server that never comes up.
  const auto deadline = std::chrono::steady_clock::now() + ready_within_;
  httplib::Client http("127.0.0.1", http_port_);
  http.set_connection_timeout(std::chrono::seconds(1));
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return base::Internal(
          "clickhouse-server exited at start (status {}); its log: {}", status,
          ReadTail(d + "/stdout.log", 2000) + ReadTail(d + "/server.err.log", 2000));
    }
    if (auto res = http.Get("/ping"); res && res->status == 200) {
      return base::OkStatus();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Stop();
  return base::Unavailable("clickhouse-server did not answer /ping within {} s; its log: {}",
                           ready_within_.count(), ReadTail(d + "/server.err.log", 2000));
}

void TestServer::Stop(bool graceful) {
  if (pid_ <= 0) return;
  kill(pid_, graceful ? SIGTERM : SIGKILL);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pid_ = -1;
}

base::Status TestServer::Restart() {
  Stop();
  return Launch();
}

TestServer::~TestServer() { Stop(/*graceful=*/false); }

std::string TestServer::Url(const std::string& database) const {
  return fmt::format("clickhouse://127.0.0.1:{}/{}", http_port_, database);
}

}  // namespace warpscope::server::clickhouse
