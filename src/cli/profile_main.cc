// SPDX-License-Identifier: Apache-2.0
// `warpscope profile -- CMD ARGS...`: runs CMD with the CUDA kernel profiler injected
// (CUDA_INJECTION64_PATH, WARPSCOPE_AGENT_SOCKET on a private socket) and the CPU profiler on
// CMD's process tree, in this process, with no agent daemon or server; writes the offline report
// (src/report) when CMD exits, when --duration passes, or on SIGINT/SIGTERM (forwarded to CMD).
//
// Threads: the main sequence (a ThreadTaskRunner) polls both profiler sources every second and
// draws the progress line; a signal thread waits for SIGINT, SIGTERM and SIGCHLD (blocked in
// every thread) and posts what happened to the main sequence; the profilers' own threads build
// windows; CollectingExporter keeps them until the end of the run.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "agent/sources/cpu_profiler/cpu_profiler_source.h"
#include "agent/sources/cpu_profiler/cpython_stacks.h"
#include "agent/sources/cuda_profiler/cuda_profiler_source.h"
#include "base/file_util.h"
#include "base/logging.h"
#include "base/task_runner.h"
#include "cli/commands.h"
#include "cli/install_layout.h"
#include "report/profile_report.h"
#include "report/report_writer.h"

namespace warpscope::cli {
namespace {

using namespace std::chrono_literals;

constexpr base::Duration kWindow = 1s;  // the trace's CPU resolution; windows merge at the end

// Keeps every window a profiler finishes, for the report.
class CollectingExporter final : public profiling::ProfileExporter {
 public:
  explicit CollectingExporter(profiling::TraceFormat trace) : trace_(trace) {}
  std::string_view name() const override { return "report"; }
  profiling::ProfileFormats formats() const override {
    return {.pprof = true,
            .trace = trace_ == profiling::TraceFormat::kPerfetto,
            .chrome_trace = trace_ == profiling::TraceFormat::kChrome};
  }
  void Enqueue(profiling::WindowFuture window) override {
    std::lock_guard lock(mu_);
    windows_.push_back(std::move(window));
  }
  uint64_t dropped() const override { return 0; }
  void BeginStop() override {}
  void Stop() override {}

  // What the finished windows hold so far: kernels, and the pids seen.
  void Progress(uint64_t& kernels, std::set<int32_t>& pids) const {
    std::lock_guard lock(mu_);
    for (const profiling::WindowFuture& w : windows_) {
      if (w.wait_for(0s) != std::future_status::ready) continue;
      for (const profiling::WindowProfile& p : w.get()) {
        kernels += p.kernels;
        pids.insert(p.pid);
      }
    }
  }
  // Every window; waits for the ones still being built.
  std::vector<profiling::WindowProfile> Take() {
    std::vector<profiling::WindowFuture> windows;
    {
      std::lock_guard lock(mu_);
      windows.swap(windows_);
    }
    std::vector<profiling::WindowProfile> out;
    for (const profiling::WindowFuture& w : windows) {
      for (const profiling::WindowProfile& p : w.get()) out.push_back(p);
    }
    return out;
  }

 private:
  const profiling::TraceFormat trace_;
  mutable std::mutex mu_;
  std::vector<profiling::WindowFuture> windows_;
};

class NullSink final : public model::SampleSink {
 public:
  void AddEntity(const model::Entity&) override {}
  void AddValue(const model::MetricDesc&, std::string_view, const model::Labels&, double) override {
  }
  void AddEvent(const model::Event&) override {}
};

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// CMD as execvp would find it; 127 (not found) or 126 (not executable) with a message.
base::Result<std::string> FindCommand(const std::string& cmd, int& code) {
  auto runnable = [](const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
  };
  if (cmd.find('/') != std::string::npos) {
    if (runnable(cmd)) return cmd;
    code = access(cmd.c_str(), F_OK) == 0 ? 126 : 127;
    return base::Error(
        base::NotFound("{}: {}", cmd, code == 126 ? "not an executable file" : "no such file"));
  }
  const char* path = getenv("PATH");
  for (std::string_view dir : base::SplitString(path != nullptr ? path : "/usr/bin:/bin", ":")) {
    const std::string candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + cmd;
    if (runnable(candidate)) return candidate;
  }
  code = 127;
  return base::Error(base::NotFound("{}: command not found", cmd));
}

std::string DefaultOutputDir() {
  const time_t t = time(nullptr);
  struct tm tm {};
  localtime_r(&t, &tm);
  char buf[64];
  strftime(buf, sizeof(buf), "warpscope-profile-%Y%m%d-%H%M%S", &tm);
  return buf;
}

base::Status PrepareOutputDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    return base::InvalidArgument("--output {}: cannot create the directory: {}", dir,
                                 ec ? ec.message() : "not a directory");
  }
  const std::string probe = dir + "/.warpscope-write-test";
  int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return base::InvalidArgument("--output {}: not writable: {}", dir, std::strerror(errno));
  }
  close(fd);
  unlink(probe.c_str());
  return base::OkStatus();
}

std::string Outcome(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return fmt::format("was killed by signal {} ({}; exit status {})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)), 128 + WTERMSIG(status));
  }
  return "ended";
}

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The child: waits until the profilers listen, then runs CMD. Only async-signal-safe calls
// and setenv (this process has one thread when it forks).
[[noreturn]] void RunChild(const std::vector<std::string>& argv, const std::string& path,
                           const sigset_t& old_mask, int go_fd, int err_fd,
                           const std::vector<std::pair<std::string, std::string>>& env) {
  for (const auto& [key, value] : env) setenv(key.c_str(), value.c_str(), 1);
  char byte = 0;
  while (read(go_fd, &byte, 1) < 0 && errno == EINTR) {
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  execv(path.c_str(), args.data());
  const int e = errno;
  [[maybe_unused]] ssize_t n = write(err_fd, &e, sizeof(e));
  _exit(127);
}

// Everything one run holds.
struct Run {
  ProfileOptions options;
  std::string output;
  std::string temp_dir;
  pid_t child = -1;
  std::atomic<bool> child_exited{false};
  int child_status = 0;  // valid once child_exited
  report::RunInfo info;
  CollectingExporter* cpu_collector = nullptr;
  CollectingExporter* gpu_collector = nullptr;
  std::unique_ptr<agent::cpu_profiler::CpuProfilerSource> cpu;
  std::unique_ptr<agent::cuda_profiler::CudaProfilerSource> gpu;
  bool stderr_tty = false;
  int64_t progress_ticks = 0;
};

void StartCpuProfiler(Run& run, const base::Clock& clock) {
  namespace cpu = agent::cpu_profiler;
  report::PartStatus& part = run.info.cpu;
  if (!run.options.cpu_profiler) {
    part.reason = "the CPU profiler was turned off (--no-cpu-profiler)";
    return;
  }
  cpu::CpuProfilerSource::Options o;
  o.sampler.sampling.frequency_hz = run.options.cpu_frequency;
  o.sampler.pids = std::set<uint32_t>{static_cast<uint32_t>(run.child)};
  o.sampler.follow_children = true;
  o.window = kWindow;
  o.host_id = run.info.host;
  auto collector = std::make_unique<CollectingExporter>(run.options.trace_format);
  run.cpu_collector = collector.get();
  cpu::CpuProfilerSource::Exporters exporters;
  exporters.push_back(std::move(collector));
  run.cpu = std::make_unique<cpu::CpuProfilerSource>(
      std::move(o), std::move(exporters), cpu::LinuxPerfEventApi("/"),
      std::make_unique<cpu::CpythonStacks>(cpu::CpythonStacks::Options{.host_root = "/"}), clock,
      [](std::string_view) {});
  base::Status st = run.cpu->Start();
  if (!st.ok()) {
    part.reason = st.message();
    part.remedy =
        "run as root, grant CAP_PERFMON (Linux 5.8+; CAP_SYS_ADMIN before), or allow "
        "per-process sampling with `sysctl kernel.perf_event_paranoid=2` (1 also gives kernel "
        "frames)";
    run.cpu.reset();
    return;
  }
  part.present = true;
  const auto stats = run.cpu->sampler()->stats();
  if (!stats.system_wide) {
    part.notes.push_back(
        "System-wide sampling was refused, so the command's threads were sampled one by one: "
        "threads and processes it started are sampled from the next second on.");
  }
  if (!stats.kernel_frames) {
    part.notes.push_back(
        "Kernel frames were not sampled (kernel.perf_event_paranoid >= 2 without CAP_PERFMON); "
        "`sysctl kernel.perf_event_paranoid=1` allows them.");
  }
}

// Returns the environment CMD gets for the injected library; sets the GPU part's reason when
// the library cannot be injected.
std::vector<std::pair<std::string, std::string>> CudaEnvironment(Run& run) {
  if (!run.options.cuda_profiler) {
    run.info.gpu.reason = "the CUDA profiler was turned off (--no-cuda-profiler)";
    return {};
  }
  std::string lib = run.options.cupti_library;
  if (lib.empty()) {
    lib = OwnInstallLayout().cupti_inject;
  }
  if (access(lib.c_str(), R_OK) != 0) {
    run.info.gpu.reason = fmt::format("the CUDA profiler library {} was not found", lib);
    run.info.gpu.remedy = "install it next to the warpscope binary or pass --cupti-library PATH";
    run.options.cuda_profiler = false;
    return {};
  }
  return {{"CUDA_INJECTION64_PATH", lib}, {"WARPSCOPE_AGENT_SOCKET", run.temp_dir + "/cupti.sock"}};
}

void StartCudaProfiler(Run& run, const base::Clock& clock) {
  namespace cuda = agent::cuda_profiler;
  if (!run.options.cuda_profiler) return;
  cuda::CudaProfilerSource::Options o;
  o.listener.socket_path = run.temp_dir + "/cupti.sock";
  o.window = kWindow;
  auto collector = std::make_unique<CollectingExporter>(run.options.trace_format);
  run.gpu_collector = collector.get();
  cuda::CudaProfilerSource::Exporters exporters;
  exporters.push_back(std::move(collector));
  run.gpu = std::make_unique<cuda::CudaProfilerSource>(std::move(o), std::move(exporters), clock,
                                                       [](std::string_view) {});
  base::Status st = run.gpu->Start();
  if (!st.ok()) {
    run.info.gpu.reason = st.message();
    run.gpu.reset();
  }
}

void DrawProgress(Run& run, bool final_line) {
  uint64_t kernels = 0;
  std::set<int32_t> pids;
  if (run.cpu_collector != nullptr) run.cpu_collector->Progress(kernels, pids);
  if (run.gpu_collector != nullptr) run.gpu_collector->Progress(kernels, pids);
  if (run.gpu) {
    for (int32_t pid : run.gpu->listener()->connected_pids()) pids.insert(pid);
  }
  const uint64_t samples = run.cpu ? run.cpu->sampler()->stats().samples : 0;
  const std::string line = fmt::format(
      "warpscope profile: {} s, {} CPU samples, {} kernels, {} processes{}", run.progress_ticks,
      samples, kernels, pids.size(), final_line ? "; writing the report" : "");
  if (run.stderr_tty) {
    std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), final_line ? "\n" : "");
  } else if (final_line || run.progress_ticks % 10 == 0) {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

void FinishParts(Run& run) {
  if (run.gpu) {
    const auto stats = run.gpu->listener()->stats();
    if (stats.hellos == 0) {
      run.info.gpu.reason =
          "no process of the command initialized CUDA: the CUDA driver loads the profiler when "
          "a process initializes CUDA, so either this machine has no GPU or driver, or the "
          "command never used CUDA";
    } else {
      run.info.gpu.present = true;
      if (stats.notices > 0) {
        run.info.gpu.notes.push_back(fmt::format(
            "The injected library reported {} problem(s), e.g. CUPTI held by another tool; "
            "run with --log-level info to see them.",
            stats.notices));
      }
    }
  }
  if (run.cpu && run.cpu->sampler()->stats().samples == 0) {
    run.info.cpu.notes.push_back(
        "No CPU sample was taken: the command used less CPU time than one sampling period.");
  }
}

// Stops the profilers (each finishes a last window), builds and writes the report.
base::Status WriteRunReport(Run& run) {
  if (run.gpu && run.child_exited) {
    // CMD's processes flush their last records as they exit: let their connections close,
    // including those of processes that exited before the listener accepted them.
    run.gpu->listener()->WaitUntilAllClosed(2s);
  }
  run.info.end_ns = RealtimeNs();
  FinishParts(run);
  if (run.gpu) run.gpu->Stop();
  if (run.cpu) run.cpu->Stop();
  std::vector<profiling::WindowProfile> windows;
  for (CollectingExporter* c : {run.cpu_collector, run.gpu_collector}) {
    if (c == nullptr) continue;
    for (profiling::WindowProfile& w : c->Take()) windows.push_back(std::move(w));
  }
  run.info.outcome = run.child_exited ? Outcome(run.child_status)
                                      : fmt::format(
                                            "was still running (pid {}) when profiling "
                                            "stopped",
                                            run.child);
  report::ProfileReport report = report::BuildReport(run.info, windows);
  WARPSCOPE_ASSIGN_OR_RETURN(
      report::WrittenReport written,
      report::WriteReport(run.output, report, windows, run.options.trace_format));
  std::fprintf(stderr, "warpscope profile: report in %s\n", written.html_path.c_str());
  return base::OkStatus();
}

}  // namespace

int RunProfile(const ProfileOptions& options) {
  Run run;
  run.options = options;
  run.info.command = options.command;
  run.info.host = HostName();
  run.stderr_tty = isatty(STDERR_FILENO) == 1;
  int not_found = 127;
  auto path = FindCommand(options.command.at(0), not_found);
  if (!path) {
    std::fprintf(stderr, "warpscope profile: %s\n", path.error().message().c_str());
    return not_found;
  }
  run.output = options.output.empty() ? DefaultOutputDir() : options.output;
  if (base::Status st = PrepareOutputDir(run.output); !st.ok()) {
    std::fprintf(stderr, "warpscope profile: %s\n", st.message().c_str());
    return 2;
  }
  std::string tmpl = (getenv("TMPDIR") != nullptr ? std::string(getenv("TMPDIR")) : "/tmp") +
                     "/warpscope-profile-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "warpscope profile: cannot create a directory in %s: %s\n", tmpl.c_str(),
                 std::strerror(errno));
    return 1;
  }
  run.temp_dir = tmpl;
  const auto env = CudaEnvironment(run);

  // SIGINT, SIGTERM and SIGCHLD go to the signal thread only (blocked before any thread starts).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGCHLD);
  sigset_t old_mask;
  pthread_sigmask(SIG_BLOCK, &signals, &old_mask);
  int go[2];
  int err[2];
  if (pipe2(go, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "warpscope profile: pipe: %s\n", std::strerror(errno));
    return 1;
  }
  run.child = fork();
  if (run.child < 0) {
    std::fprintf(stderr, "warpscope profile: fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (run.child == 0) {
    close(go[1]);
    close(err[0]);
    RunChild(options.command, *path, old_mask, go[0], err[1], env);
  }
  close(go[0]);
  close(err[1]);

  base::RealClock& clock = base::RealClock::Get();
  run.info.start_ns = RealtimeNs();
  StartCpuProfiler(run, clock);
  StartCudaProfiler(run, clock);
  NullSink sink;
  if (run.cpu) run.cpu->Poll(clock.Now(), sink);  // opens the first windows
  if (run.gpu) run.gpu->Poll(clock.Now(), sink);
  close(go[1]);  // CMD runs now
  int exec_errno = 0;
  if (read(err[0], &exec_errno, sizeof(exec_errno)) == static_cast<ssize_t>(sizeof(exec_errno))) {
    std::fprintf(stderr, "warpscope profile: cannot run %s: %s\n", path->c_str(),
                 std::strerror(exec_errno));
    waitpid(run.child, nullptr, 0);
    if (run.gpu) run.gpu->Stop();
    if (run.cpu) run.cpu->Stop();
    std::filesystem::remove_all(run.temp_dir);
    return exec_errno == ENOENT ? 127 : 126;
  }
  close(err[0]);

  base::ThreadTaskRunner runner(clock);
  std::atomic<bool> stop_signals{false};
  std::atomic<bool> profiling{true};
  std::thread signal_thread([&] {
    pthread_setname_np(pthread_self(), "ws-profile-sig");
    const timespec wait{0, 200'000'000};
    while (!stop_signals.load()) {
      siginfo_t info{};
      const int sig = sigtimedwait(&signals, &info, &wait);
      if (sig == SIGCHLD) {
        int status = 0;
        if (waitpid(run.child, &status, WNOHANG) == run.child) {
          run.child_status = status;
          run.child_exited = true;
          runner.PostTask([&runner] { runner.Quit(); });
          if (!profiling.load()) return;
        }
      } else if (sig == SIGINT || sig == SIGTERM) {
        // A terminal's Ctrl-C reaches CMD by itself (same process group); forward the rest.
        if (info.si_code != SI_KERNEL) kill(run.child, sig);
      }
    }
  });

  std::function<void()> tick = [&] {
    ++run.progress_ticks;
    if (run.cpu) run.cpu->Poll(clock.Now(), sink);
    if (run.gpu) run.gpu->Poll(clock.Now(), sink);
    DrawProgress(run, false);
    runner.PostDelayedTask(tick, 1s);
  };
  runner.PostDelayedTask(tick, 1s);
  if (options.duration_s > 0) {
    runner.PostDelayedTask([&runner] { runner.Quit(); },
                           std::chrono::duration_cast<base::Duration>(
                               std::chrono::duration<double>(options.duration_s)));
  }
  if (!run.child_exited) runner.Run();
  profiling = false;
  DrawProgress(run, true);

  base::Status written = WriteRunReport(run);
  if (!written.ok()) {
    std::fprintf(stderr, "warpscope profile: cannot write the report: %s\n",
                 written.message().c_str());
  }
  if (!run.child_exited) {
    std::fprintf(stderr,
                 "warpscope profile: profiling stopped; waiting for the command (pid %d) to exit\n",
                 static_cast<int>(run.child));
    // The signal thread forwards signals until it reaps CMD, then returns.
    signal_thread.join();
  } else {
    stop_signals = true;
    signal_thread.join();
  }
  std::filesystem::remove_all(run.temp_dir);
  const int code = ExitCode(run.child_status);
  return !written.ok() && code == 0 ? 1 : code;
}

}  // namespace warpscope::cli
