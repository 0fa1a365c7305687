// SPDX-License-Identifier: Apache-2.0
#include "base/logging.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace warpscope::base {
namespace {

class StderrSink : public LogSink {
 public:
  void Write(LogSeverity severity, std::string_view file, int line,
             std::string_view message) override {
    static constexpr char kLetters[] = {'V', 'I', 'W', 'E', 'F'};
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    tm tm{};
    gmtime_r(&ts.tv_sec, &tm);
    auto slash = file.rfind('/');
    if (slash != std::string_view::npos) file = file.substr(slash + 1);
    std::string out = fmt::format("{}{:02}{:02} {:02}:{:02}:{:02}.{:03} {}:{}] {}\n",
                                  kLetters[static_cast<int>(severity)], tm.tm_mon + 1, tm.tm_mday,
                                  tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, file,
                                  line, message);
    std::lock_guard<std::mutex> lock(mu_);
    (void)!write(STDERR_FILENO, out.data(), out.size());
  }

 private:
  std::mutex mu_;
};

StderrSink& DefaultSink() {
  static StderrSink* sink = new StderrSink();  // never destroyed: usable during exit
  return *sink;
}

std::atomic<LogSink*> g_sink{nullptr};
std::atomic<int> g_min_severity{static_cast<int>(LogSeverity::kInfo)};
std::atomic<int> g_verbose{0};

}  // namespace

void SetLogSink(LogSink* sink) { g_sink.store(sink); }
void SetMinLogSeverity(LogSeverity min) { g_min_severity.store(static_cast<int>(min)); }
void SetVerboseLevel(int level) { g_verbose.store(level); }
int VerboseLevel() { return g_verbose.load(std::memory_order_relaxed); }
bool ShouldLog(LogSeverity severity) {
  return static_cast<int>(severity) >= g_min_severity.load(std::memory_order_relaxed);
}

void LogMessage(LogSeverity severity, const char* file, int line, std::string message) {
  LogSink* sink = g_sink.load();
  if (sink == nullptr) sink = &DefaultSink();
  sink->Write(severity, file, line, message);
}

void CheckFailed(const char* file, int line, const char* condition) {
  LogMessage(LogSeverity::kFatal, file, line, fmt::format("CHECK failed: {}", condition));
  std::abort();
}

std::string ErrnoString(int err) {
  char buf[256];
  // GNU strerror_r returns a char* that may or may not point into buf.
  const char* s = strerror_r(err, buf, sizeof(buf));
  return fmt::format("{} (errno {})", s, err);
}

}  // namespace warpscope::base
