// SPDX-License-Identifier: Apache-2.0
// `warpscope top --simulate healthy-8xh100` in a real terminal: a private tmux server (its own
// socket) runs it in a 160x50 pane; the test types keys (send-keys) and reads the screen
// (capture-pane), polling with a deadline until what it expects is there.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/testing/peer.h"
#include "child_process.h"

namespace warpscope::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Runs a shell command; returns its exit status and stdout.
std::pair<int, std::string> Shell(const std::string& command) {
  std::string out;
  FILE* f = popen((command + " 2>&1").c_str(), "r");
  if (f == nullptr) return {-1, ""};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  int status = pclose(f);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// A tmux server of our own, its socket in the test's temporary directory (-S), killed with its
// panes at the end.
class Tmux {
 public:
  Tmux() : socket_(dir_.path() + "/tmux.sock") {}
  ~Tmux() { Shell("tmux -S " + socket_ + " kill-server"); }
  std::pair<int, std::string> operator()(const std::string& args) const {
    return Shell("tmux -S " + socket_ + " -f /dev/null " + args);
  }
  std::string Screen() const { return (*this)("capture-pane -p -t top").second; }
  std::string Format(const std::string& format) const {
    std::string out = (*this)("display-message -p -t top " + Quote(format)).second;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
  void Keys(const std::string& keys) const { (*this)("send-keys -t top " + keys); }

 private:
  TempDir dir_{"warpscope_top_tmux_"};
  std::string socket_;
};

// Polls `ok` on the pane's text until it holds or 20 s pass; returns the last text.
bool WaitFor(const Tmux& tmux, const std::function<bool(const std::string&)>& ok,
             std::string* last = nullptr) {
  auto deadline = std::chrono::steady_clock::now() + seconds(20);
  std::string text;
  while (std::chrono::steady_clock::now() < deadline) {
    text = tmux.Screen();
    if (ok(text)) {
      if (last != nullptr) *last = text;
      return true;
    }
    std::this_thread::sleep_for(milliseconds(50));  // poll interval, not a synchronisation
  }
  if (last != nullptr) *last = text;
  return false;
}

bool Has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// The process table's rows: the lines after the "PID ... COMMAND" header, up to a blank line,
// as their first five numbers-or-dashes (pid, user, gpu, memory, SM%).
struct Row {
  int pid = 0;
  std::string memory;
  double sm = -1;
};
std::vector<Row> ProcessRows(const std::string& text) {
  std::vector<Row> rows;
  std::istringstream in(text);
  std::string line;
  bool table = false;
  while (std::getline(in, line)) {
    if (!table) {
      table = Has(line, "PID") && Has(line, "COMMAND");
      continue;
    }
    std::istringstream fields(line);
    Row r;
    std::string user, gpu, sm;
    if (!(fields >> r.pid >> user >> gpu >> r.memory >> sm)) break;
    r.sm = sm == "-" ? -1 : std::stod(sm);
    rows.push_back(r);
  }
  return rows;
}

// Starts `warpscope top` on the simulator in a 160x50 pane named "top". After top, the pane's
// shell prints top's exit status and stays (cat waits on the terminal), so that the restored
// terminal can be inspected.
bool StartTop(const Tmux& tmux,
              const std::string& args = "--simulate healthy-8xh100 --interval 1s") {
  std::string command = "env LANG=C.UTF-8 LC_ALL=C.UTF-8 " + Quote(WarpscopeBinary()) + " top " +
                        args + "; echo top-exit=$?; exec cat";
  auto [rc, out] = tmux(
      "start-server \\; set-option -g default-terminal screen \\; new-session -d -x 160 -y 50 "
      "-s top " +
      Quote(command));
  EXPECT_EQ(rc, 0) << out;
  return rc == 0;
}

TEST(TopTmuxTest, SimulatedHostKeysAndCleanExit) {
  WARPSCOPE_REQUIRE_PEER(Shell("tmux -V").first == 0, "tmux", "run scripts/setup.sh --test");
  Tmux tmux;
  ASSERT_TRUE(StartTop(tmux));

  std::string screen;
  ASSERT_TRUE(WaitFor(
      tmux,
      [](const std::string& t) {
        return Has(t, "NVIDIA H100 80GB HBM3") && Has(t, "GPU 7") && Has(t, "/700") &&
               Has(t, "79.6G") && Has(t, "simulated: healthy-8xh100") && Has(t, "NVLink") &&
               ProcessRows(t).size() == 8;
      },
      &screen))
      << screen;
  EXPECT_EQ(tmux.Format("#{alternate_on}"), "1");
  for (const Row& r : ProcessRows(screen)) {
    EXPECT_GE(r.pid, 31000);
    EXPECT_LE(r.pid, 31007);
  }
  EXPECT_TRUE(Has(screen, "/usr/bin/python3 -u train.py")) << screen;
  EXPECT_TRUE(Has(screen, "mlops")) << screen;

  // The rates need a second refresh: CPU % and SM % then have values.
  ASSERT_TRUE(WaitFor(
      tmux,
      [](const std::string& t) {
        std::vector<Row> rows = ProcessRows(t);
        if (rows.size() != 8) return false;
        for (const Row& r : rows) {
          if (r.sm <= 0) return false;
        }
        return true;
      },
      &screen))
      << screen;

  // s: SM % largest first.
  tmux.Keys("s");
  ASSERT_TRUE(WaitFor(
      tmux,
      [](const std::string& t) {
        std::vector<Row> rows = ProcessRows(t);
        if (!Has(t, "sort: SM %") || rows.size() != 8) return false;
        for (size_t i = 1; i < rows.size(); ++i) {
          if (rows[i].sm > rows[i - 1].sm) return false;
        }
        return true;
      },
      &screen))
      << screen;
  // p: pid ascending; m: back to memory.
  tmux.Keys("p");
  ASSERT_TRUE(WaitFor(
      tmux,
      [](const std::string& t) {
        std::vector<Row> rows = ProcessRows(t);
        if (!Has(t, "sort: pid") || rows.size() != 8) return false;
        for (size_t i = 0; i < rows.size(); ++i) {
          if (rows[i].pid != 31000 + static_cast<int>(i)) return false;
        }
        return true;
      },
      &screen))
      << screen;
  tmux.Keys("m");
  ASSERT_TRUE(WaitFor(
      tmux, [](const std::string& t) { return Has(t, "sort: GPU memory"); }, &screen))
      << screen;

  // /: filter to one process; Escape clears it.
  tmux.Keys("/ 3 1 0 0 3 Enter");
  ASSERT_TRUE(WaitFor(
      tmux,
      [](const std::string& t) {
        std::vector<Row> rows = ProcessRows(t);
        return Has(t, "filter: 31003") && rows.size() == 1 && rows[0].pid == 31003;
      },
      &screen))
      << screen;
  tmux.Keys("Escape");
  ASSERT_TRUE(WaitFor(
      tmux, [](const std::string& t) { return !Has(t, "filter:") && ProcessRows(t).size() == 8; },
      &screen))
      << screen;

  // ?: help; any key returns.
  tmux.Keys("'?'");
  ASSERT_TRUE(WaitFor(
      tmux, [](const std::string& t) { return Has(t, "warpscope top: help"); }, &screen))
      << screen;
  tmux.Keys("x");
  ASSERT_TRUE(WaitFor(
      tmux, [](const std::string& t) { return Has(t, "NVIDIA H100"); }, &screen))
      << screen;

  // q: exit 0, the terminal back out of the alternate screen with its cursor.
  tmux.Keys("q");
  ASSERT_TRUE(WaitFor(
      tmux, [](const std::string& t) { return Has(t, "top-exit="); }, &screen))
      << screen;
  EXPECT_TRUE(Has(screen, "top-exit=0")) << screen;
  EXPECT_FALSE(Has(screen, "NVIDIA H100")) << screen;
  EXPECT_EQ(tmux.Format("#{alternate_on}"), "0");
  EXPECT_EQ(tmux.Format("#{cursor_flag}"), "1");
}

TEST(TopTmuxTest, SigtermRestoresTheTerminal) {
  WARPSCOPE_REQUIRE_PEER(Shell("tmux -V").first == 0, "tmux", "run scripts/setup.sh --test");
  Tmux tmux;
  ASSERT_TRUE(StartTop(tmux));
  std::string screen;
  ASSERT_TRUE(WaitFor(
      tmux, [](const std::string& t) { return Has(t, "NVIDIA H100"); }, &screen))
      << screen;
  // The pane's process is the shell; top is its only child.
  std::string shell = tmux.Format("#{pane_pid}");
  std::string children = Shell("cat /proc/" + shell + "/task/*/children").second;
  int top = std::atoi(children.c_str());
  ASSERT_GT(top, 0) << "no child of the pane's shell " << shell;
  ASSERT_EQ(kill(top, SIGTERM), 0);
  ASSERT_TRUE(WaitFor(
      tmux, [](const std::string& t) { return Has(t, "top-exit="); }, &screen))
      << screen;
  EXPECT_TRUE(Has(screen, "top-exit=130")) << screen;
  EXPECT_EQ(tmux.Format("#{alternate_on}"), "0");
  EXPECT_EQ(tmux.Format("#{cursor_flag}"), "1");
}

TEST(TopTmuxTest, RemoteHostOfAServer) {
  WARPSCOPE_REQUIRE_PEER(Shell("tmux -V").first == 0, "tmux", "run scripts/setup.sh --test");
  TempDir tmp("warpscope_top_remote_");
  const AgentServerFiles files =
      PrepareAgentAndServer(tmp, TwoGpuCoolingScenario("top-remote", "60"));
  ASSERT_TRUE(files.ok);
  const std::string port = std::to_string(files.server_port);
  auto server = ChildProcess::Start(
      {WarpscopeBinary(), "server", "--data-dir=" + tmp.path() + "/data",
       "--listen-address=127.0.0.1:" + port, "--auth-token-file=" + files.token},
      tmp.path());
  ASSERT_TRUE(server);
  auto agent = ChildProcess::Start(PushingAgentArgv(files, "top-node"), tmp.path());
  ASSERT_TRUE(agent);

  // Until the server is up and has the host's first window, top shows why it has nothing.
  Tmux tmux;
  ASSERT_TRUE(StartTop(tmux, "--server http://127.0.0.1:" + port +
                                 " --host top-node --interval 500ms --auth-token-file " +
                                 Quote(files.token)));
  std::string screen;
  ASSERT_TRUE(WaitFor(
      tmux,
      [](const std::string& t) {
        return Has(t, "top-node") && Has(t, "server http://127.0.0.1:") && Has(t, "GPU 1") &&
               Has(t, "NVIDIA H100 80GB HBM3") && Has(t, "650/700W") && Has(t, "none open");
      },
      &screen))
      << screen << "\nserver: " << (*server)->Stderr() << "\nagent: " << (*agent)->Stderr();
  tmux.Keys("q");
  ASSERT_TRUE(WaitFor(
      tmux, [](const std::string& t) { return Has(t, "top-exit="); }, &screen))
      << screen;
  EXPECT_TRUE(Has(screen, "top-exit=0")) << screen;
  // SIGTERM lets the agent remove its simulated host's directory.
  EXPECT_NE((*agent)->Signal(SIGTERM, seconds(15)), -1);
  EXPECT_NE((*server)->Signal(SIGTERM, seconds(15)), -1);
}

}  // namespace
}  // namespace warpscope::test
