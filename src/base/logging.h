// SPDX-License-Identifier: Apache-2.0
// One logging facade for every binary. Daemons log to stderr; the injected libraries install a
// sink that forwards to the agent and are silent otherwise.
//
//   WARPSCOPE_LOG(INFO, "listening on {}", addr);
//   WARPSCOPE_LOG_FIRST_N(WARNING, 1, "NVML missing: {}", why);
//   WARPSCOPE_PLOG(ERROR, "open({})", path);   // appends strerror(errno)
//   WARPSCOPE_CHECK(ptr != nullptr);           // a bug: logs and aborts
#ifndef WARPSCOPE_BASE_LOGGING_H_
#define WARPSCOPE_BASE_LOGGING_H_

#include <fmt/format.h>

#include <atomic>
#include <string>
#include <string_view>

namespace warpscope::base {

enum class LogSeverity { kVerbose = 0, kInfo = 1, kWarning = 2, kError = 3, kFatal = 4 };

// Receives every emitted line. Called from any thread; implementations must be thread-safe.
class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void Write(LogSeverity severity, std::string_view file, int line,
                     std::string_view message) = 0;
};

// Installs `sink` (not owned; must outlive its use) or, with nullptr, the default stderr sink.
void SetLogSink(LogSink* sink);
// Messages below `min` are dropped. Default kInfo.
void SetMinLogSeverity(LogSeverity min);
// WARPSCOPE_VLOG(n) prints when n <= level. Default 0 (off).
void SetVerboseLevel(int level);
int VerboseLevel();
bool ShouldLog(LogSeverity severity);

void LogMessage(LogSeverity severity, const char* file, int line, std::string message);
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition);

}  // namespace warpscope::base

#define WARPSCOPE_INTERNAL_SEV_VERBOSE ::warpscope::base::LogSeverity::kVerbose
#define WARPSCOPE_INTERNAL_SEV_INFO ::warpscope::base::LogSeverity::kInfo
#define WARPSCOPE_INTERNAL_SEV_WARNING ::warpscope::base::LogSeverity::kWarning
#define WARPSCOPE_INTERNAL_SEV_ERROR ::warpscope::base::LogSeverity::kError

#define WARPSCOPE_LOG(sev, ...)                                                          \
  do {                                                                                   \
    if (::warpscope::base::ShouldLog(WARPSCOPE_INTERNAL_SEV_##sev)) {                    \
      ::warpscope::base::LogMessage(WARPSCOPE_INTERNAL_SEV_##sev, __FILE__, __LINE__,    \
                                    ::fmt::format(__VA_ARGS__));                         \
    }                                                                                    \
  } while (0)

#define WARPSCOPE_VLOG(n, ...)                                                           \
  do {                                                                                   \
    if ((n) <= ::warpscope::base::VerboseLevel()) {                                      \
      ::warpscope::base::LogMessage(::warpscope::base::LogSeverity::kVerbose, __FILE__,  \
                                    __LINE__, ::fmt::format(__VA_ARGS__));               \
    }                                                                                    \
  } while (0)

// Logs the first `n` times this line is reached, then stays quiet.
#define WARPSCOPE_LOG_FIRST_N(sev, n, ...)                                               \
  do {                                                                                   \
    static std::atomic<int> warpscope_log_count_{0};                                     \
    if (warpscope_log_count_.fetch_add(1, std::memory_order_relaxed) < (n)) {            \
      WARPSCOPE_LOG(sev, __VA_ARGS__);                                                   \
    }                                                                                    \
  } while (0)

// Logs once every `n` times this line is reached.
#define WARPSCOPE_LOG_EVERY_N(sev, n, ...)                                               \
  do {                                                                                   \
    static std::atomic<int> warpscope_log_count_{0};                                     \
    if (warpscope_log_count_.fetch_add(1, std::memory_order_relaxed) % (n) == 0) {       \
      WARPSCOPE_LOG(sev, __VA_ARGS__);                                                   \
    }                                                                                    \
  } while (0)

// Like WARPSCOPE_LOG, with ": <strerror(errno)>" appended.
#define WARPSCOPE_PLOG(sev, ...)                                                         \
  do {                                                                                   \
    int warpscope_errno_ = errno;                                                        \
    WARPSCOPE_LOG(sev, "{}: {}", ::fmt::format(__VA_ARGS__),                             \
                  ::warpscope::base::ErrnoString(warpscope_errno_));                     \
  } while (0)

#define WARPSCOPE_CHECK(cond)                                                            \
  do {                                                                                   \
    if (!(cond)) ::warpscope::base::CheckFailed(__FILE__, __LINE__, #cond);              \
  } while (0)

#ifdef NDEBUG
#define WARPSCOPE_DCHECK(cond) \
  do {                         \
  } while (0 && (cond))
#else
#define WARPSCOPE_DCHECK(cond) WARPSCOPE_CHECK(cond)
#endif

namespace warpscope::base {
std::string ErrnoString(int err);
}  // namespace warpscope::base

#endif  // WARPSCOPE_BASE_LOGGING_H_
