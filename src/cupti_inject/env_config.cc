// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/env_config.h"

#include <sys/stat.h>

#include <charconv>
#include <string_view>

namespace warpscope::cupti_inject {
namespace {

class EnvReader {
 public:
  EnvReader(const std::function<const char*(const char*)>& getenv,
            std::vector<std::string>* warnings)
      : getenv_(getenv), warnings_(warnings) {}

  void Uint(const char* name, uint32_t min, uint32_t max, uint32_t* out) {
    const char* v = getenv_(name);
    if (v == nullptr || *v == '\0') {
      return;
    }
    std::string_view s(v);
    uint32_t parsed = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), parsed);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size() || parsed < min || parsed > max) {
      Warn(name, v, "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
      return;
    }
    *out = parsed;
  }

  void Bool(const char* name, bool* out) {
    const char* v = getenv_(name);
    if (v == nullptr || *v == '\0') {
      return;
    }
    std::string_view s(v);
    if (s == "1" || s == "true" || s == "on" || s == "yes") {
      *out = true;
    } else if (s == "0" || s == "false" || s == "off" || s == "no") {
      *out = false;
    } else {
      Warn(name, v, "0 or 1");
    }
  }

  void String(const char* name, std::string* out) {
    const char* v = getenv_(name);
    if (v != nullptr && *v != '\0') {
      *out = v;
    }
  }

  template <typename T>
  void Choice(const char* name, std::initializer_list<std::pair<std::string_view, T>> choices,
              T* out, const char* accepted) {
    const char* v = getenv_(name);
    if (v == nullptr || *v == '\0') {
      return;
    }
    for (const auto& [text, value] : choices) {
      if (text == v) {
        *out = value;
        return;
      }
    }
    Warn(name, v, accepted);
  }

 private:
  void Warn(const char* name, const char* value, const std::string& accepted) {
    warnings_->push_back(std::string(name) + "=\"" + std::string(value).substr(0, 64) +
                         "\" is invalid and ignored; use " + accepted);
  }

  const std::function<const char*(const char*)>& getenv_;
  std::vector<std::string>* warnings_;
};

}  // namespace

InjectConfig ReadInjectConfig(const std::function<const char*(const char*)>& getenv,
                              std::vector<std::string>* warnings) {
  InjectConfig c;
  EnvReader r(getenv, warnings);
  r.String("WARPSCOPE_AGENT_SOCKET", &c.agent_socket);
  r.String("WARPSCOPE_CUPTI_LIBRARY", &c.cupti_library);
  r.Bool("WARPSCOPE_CUPTI_ENABLED", &c.enabled);
  r.Uint("WARPSCOPE_CUPTI_RATE", 0, 1'000'000, &c.rate);
  r.Uint("WARPSCOPE_CUPTI_BURST", 1, 1'000'000, &c.burst);
  r.Choice<Unwinder>("WARPSCOPE_CUPTI_UNWINDER",
                     {{"backtrace", Unwinder::kBacktrace}, {"fp", Unwinder::kFramePointer}},
                     &c.unwinder, "backtrace or fp");
  r.Uint("WARPSCOPE_CUPTI_MAX_FRAMES", 4, 128, &c.max_frames);
  r.Bool("WARPSCOPE_CUPTI_PYTHON", &c.python);
  r.Uint("WARPSCOPE_CUPTI_RING_KB", 4, 4096, &c.ring_kb);
  r.Uint("WARPSCOPE_CUPTI_MAX_THREADS", 1, 4096, &c.max_threads);
  r.Uint("WARPSCOPE_CUPTI_ACTIVITY_BUFFERS", 2, 256, &c.activity_buffers);
  r.Uint("WARPSCOPE_CUPTI_ACTIVITY_BUFFER_KB", 64, 65536, &c.activity_buffer_kb);
  r.Uint("WARPSCOPE_CUPTI_OUT_KB", 64, 262144, &c.out_kb);
  r.Uint("WARPSCOPE_CUPTI_FLUSH_MS", 10, 60000, &c.flush_ms);
  r.Choice<bool>("WARPSCOPE_CUPTI_KERNELS", {{"sampled", false}, {"all", true}}, &c.all_kernels,
                 "sampled or all");
  r.Uint("WARPSCOPE_CUPTI_ALL_KERNELS_WINDOW_MS", 0, 3'600'000, &c.all_kernels_window_ms);
  r.Uint("WARPSCOPE_CUPTI_ALL_KERNELS_INTERVAL_MS", 10, 3'600'000, &c.all_kernels_interval_ms);
  if (c.all_kernels_window_ms > c.all_kernels_interval_ms) {
    warnings->push_back(
        "WARPSCOPE_CUPTI_ALL_KERNELS_WINDOW_MS is longer than "
        "WARPSCOPE_CUPTI_ALL_KERNELS_INTERVAL_MS; the window is cut to the interval (every kernel "
        "is sent, as with WARPSCOPE_CUPTI_KERNELS=all)");
    c.all_kernels_window_ms = c.all_kernels_interval_ms;
  }
  if (c.all_kernels && c.all_kernels_window_ms != 0) {
    warnings->push_back(
        "WARPSCOPE_CUPTI_KERNELS=all sends every kernel all the time; "
        "WARPSCOPE_CUPTI_ALL_KERNELS_WINDOW_MS is ignored (unset WARPSCOPE_CUPTI_KERNELS to "
        "send every kernel only in windows)");
    c.all_kernels_window_ms = 0;
  }
  r.Bool("WARPSCOPE_CUPTI_MEMCPY", &c.memcpy);
  r.Bool("WARPSCOPE_CUPTI_NVTX", &c.nvtx);
  r.Bool("WARPSCOPE_CUPTI_DEVICE_MEMORY", &c.device_memory);
  r.Bool("WARPSCOPE_CUPTI_LAUNCH_API_RECORDS", &c.launch_api_records);
  r.Bool("WARPSCOPE_CUPTI_PC_SAMPLING", &c.pc_sampling);
  r.Uint("WARPSCOPE_CUPTI_PC_WINDOW_MS", 10, 60000, &c.pc_window_ms);
  r.Uint("WARPSCOPE_CUPTI_PC_INTERVAL_MS", 10, 3'600'000, &c.pc_interval_ms);
  r.Uint("WARPSCOPE_CUPTI_PC_PERIOD", 0, 31, &c.pc_period);
  if (c.pc_period != 0 && c.pc_period < 5) {
    warnings->push_back("WARPSCOPE_CUPTI_PC_PERIOD=" + std::to_string(c.pc_period) +
                        " is invalid and ignored; use 0 (CUPTI default) or 5..31");
    c.pc_period = 0;
  }
  if (c.pc_window_ms > c.pc_interval_ms) {
    warnings->push_back(
        "WARPSCOPE_CUPTI_PC_WINDOW_MS is longer than WARPSCOPE_CUPTI_PC_INTERVAL_MS; the window is "
        "cut to the interval");
    c.pc_window_ms = c.pc_interval_ms;
  }
  r.Uint("WARPSCOPE_CUPTI_CUBIN_CAP_MB", 0, 4096, &c.cubin_cap_mb);
  r.Choice<bool>("WARPSCOPE_CUPTI_LOG", {{"stderr", true}, {"off", false}}, &c.log_stderr,
                 "stderr or off");
  return c;
}

std::string DefaultAgentSocket(const std::function<const char*(const char*)>& getenv,
                               const std::function<bool(const char*)>& exists) {
  static constexpr const char* kSystemSocket = "/run/warpscope/cupti.sock";
  struct stat st;
  if (exists ? exists(kSystemSocket) : stat(kSystemSocket, &st) == 0) {
    return kSystemSocket;
  }
  const char* xdg = getenv("XDG_RUNTIME_DIR");
  if (xdg != nullptr && *xdg == '/') {
    return std::string(xdg) + "/warpscope/cupti.sock";
  }
  return kSystemSocket;
}

}  // namespace warpscope::cupti_inject
