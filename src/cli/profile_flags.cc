// SPDX-License-Identifier: Apache-2.0
#include "cli/profile_flags.h"

#include <cmath>

namespace warpscope::cli {

void ProfileFlags::Register(CLI::App& cmd) {
  // `warpscope profile [flags] [--] CMD ARGS...`: CMD's flags are its own.
  // The first positional is CMD; prefix_command() keeps every later argument for remaining().
  cmd.prefix_command();
  cmd.add_option("command", program_, "The command to profile, then its arguments");
  cmd.add_option("-o,--output", options.output,
                 "Directory for the report, pprof files and trace (default "
                 "./warpscope-profile-<time>)");
  cmd.add_option("--duration", options.duration_s,
                 "Stop profiling after SECONDS and write the report; the command keeps running")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--cpu-profile-frequency", options.cpu_frequency, "CPU samples per second per CPU")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd.add_flag("!--no-cpu-profiler", options.cpu_profiler, "Do not sample the command's CPU time");
  cmd.add_flag("!--no-cuda-profiler", options.cuda_profiler,
               "Do not inject the CUDA kernel profiler into the command");
  cmd.add_option("--cupti-library", options.cupti_library,
                 "The injected CUDA profiler library (default: the one installed with warpscope, "
                 "/usr/lib/warpscope/libwarpscope_cupti.so for /usr/bin/warpscope)")
      ->envname("WARPSCOPE_CUPTI_INJECTION_LIBRARY");
  cmd.add_option("--trace-format", trace_format_,
                 "The run's trace: perfetto (native protobuf, trace.perfetto-trace) or chrome "
                 "(Chrome trace event JSON, trace.json)")
      ->capture_default_str();
  cmd.add_option("--log-level", log_level, "error, warning, info or verbose")
      ->check(CLI::IsMember({"error", "warning", "info", "verbose"}))
      ->capture_default_str();
}

base::Status ProfileFlags::Finish(const CLI::App& cmd, bool separator_before_command,
                                  ProfileOptions& out) const {
  out = options;
  out.command.clear();
  if (!program_.empty()) out.command.push_back(program_);
  for (const std::string& arg : cmd.remaining()) out.command.push_back(arg);
  // CLI11 reports the arguments of a command given after "--" with a "--" in front of them.
  if (separator_before_command && out.command.size() > 1 && out.command[1] == "--") {
    out.command.erase(out.command.begin() + 1);
  }
  if (out.command.empty()) {
    return base::InvalidArgument(
        "no command to profile; usage: warpscope profile [options] -- CMD [ARGS...]");
  }
  if (!std::isfinite(out.duration_s) || out.duration_s < 0) {
    return base::InvalidArgument("--duration: want a number of seconds >= 0");
  }
  std::optional<profiling::TraceFormat> trace = profiling::ParseTraceFormat(trace_format_);
  if (!trace) {
    return base::InvalidArgument("--trace-format={}: want perfetto (the default) or chrome",
                                 trace_format_);
  }
  out.trace_format = *trace;
  return base::OkStatus();
}

bool ProfileFlags::SeparatorBeforeCommand(int argc, const char* const* argv) {
  int i = 1;
  while (i < argc && std::string_view(argv[i]) != "profile") ++i;
  for (++i; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") return true;
    if (a.empty() || a[0] != '-') return false;  // CMD came first
    const bool takes_value = a == "-o" || a == "--output" || a == "--duration" ||
                             a == "--cpu-profile-frequency" || a == "--cupti-library" ||
                             a == "--log-level" || a == "--trace-format";
    if (takes_value) ++i;
  }
  return false;
}

}  // namespace warpscope::cli
