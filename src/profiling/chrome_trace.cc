// SPDX-License-Identifier: Apache-2.0
#include "profiling/chrome_trace.h"

namespace warpscope::profiling {

void AppendJsonString(fmt::memory_buffer& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out.append(std::string_view("\\\""));
        break;
      case '\\':
        out.append(std::string_view("\\\\"));
        break;
      case '\n':
        out.append(std::string_view("\\n"));
        break;
      case '\t':
        out.append(std::string_view("\\t"));
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          fmt::format_to(fmt::appender(out), "\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

TraceArgs::~TraceArgs() { out_.append(std::string_view("}}")); }

void TraceArgs::Key(std::string_view key) {
  if (!first_) {
    out_.push_back(',');
  }
  first_ = false;
  // Keys are the program's own literals: written as they are, without escaping.
  out_.push_back('"');
  out_.append(key);
  out_.append(std::string_view("\":"));
}

TraceArgs& TraceArgs::Num(std::string_view key, int64_t value) {
  Key(key);
  fmt::format_to(fmt::appender(out_), "{}", value);
  return *this;
}

TraceArgs& TraceArgs::Unsigned(std::string_view key, uint64_t value) {
  Key(key);
  fmt::format_to(fmt::appender(out_), "{}", value);
  return *this;
}

TraceArgs& TraceArgs::Str(std::string_view key, std::string_view value) {
  Key(key);
  AppendJsonString(out_, value);
  return *this;
}

TraceArgs& TraceArgs::Fixed3(std::string_view key, double value) {
  Key(key);
  fmt::format_to(fmt::appender(out_), "{:.3f}", value);
  return *this;
}

TraceArgs& TraceArgs::Array(std::string_view key, std::initializer_list<uint64_t> values) {
  Key(key);
  out_.push_back('[');
  bool first = true;
  for (uint64_t v : values) {
    if (!first) {
      out_.push_back(',');
    }
    first = false;
    fmt::format_to(fmt::appender(out_), "{}", v);
  }
  out_.push_back(']');
  return *this;
}

ChromeTraceWriter::ChromeTraceWriter(size_t reserve_bytes) {
  out_.reserve(reserve_bytes);
  out_.append(std::string_view("{\"displayTimeUnit\":\"ns\",\"traceEvents\":["));
}

fmt::memory_buffer& ChromeTraceWriter::NextEvent() {
  if (!first_) {
    out_.push_back(',');
  }
  first_ = false;
  out_.push_back('\n');
  return out_;
}

void ChromeTraceWriter::Micros(int64_t ns) {
  if (ns < 0) {
    out_.push_back('-');
    ns = -ns;
  }
  fmt::format_to(fmt::appender(out_), "{}.{:03}", ns / 1000, ns % 1000);
}

void ChromeTraceWriter::ProcessName(int64_t pid, std::string_view name) {
  fmt::format_to(fmt::appender(NextEvent()),
                 "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":", pid);
  AppendJsonString(out_, name);
  out_.append(std::string_view("}}"));
}

void ChromeTraceWriter::ProcessSortIndex(int64_t pid, int64_t index) {
  fmt::format_to(fmt::appender(NextEvent()),
                 "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{},"
                 "\"args\":{{\"sort_index\":{}}}}}",
                 pid, index);
}

void ChromeTraceWriter::ThreadName(int64_t pid, int64_t tid, std::string_view name) {
  fmt::format_to(fmt::appender(NextEvent()),
                 "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},"
                 "\"args\":{{\"name\":",
                 pid, tid);
  AppendJsonString(out_, name);
  out_.append(std::string_view("}}"));
}

TraceArgs ChromeTraceWriter::Complete(std::string_view category, int64_t pid, int64_t tid,
                                      int64_t start_ns, int64_t duration_ns,
                                      std::string_view name) {
  fmt::format_to(fmt::appender(NextEvent()),
                 "{{\"ph\":\"X\",\"cat\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":", category, pid, tid);
  Micros(start_ns);
  out_.append(std::string_view(",\"dur\":"));
  Micros(duration_ns);
  out_.append(std::string_view(",\"name\":"));
  AppendJsonString(out_, name);
  out_.append(std::string_view(",\"args\":{"));
  return TraceArgs(out_);
}

TraceArgs ChromeTraceWriter::Instant(std::string_view category, int64_t pid, int64_t tid,
                                     int64_t ts_ns, std::string_view name) {
  fmt::format_to(fmt::appender(NextEvent()),
                 "{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":",
                 category, pid, tid);
  Micros(ts_ns);
  out_.append(std::string_view(",\"name\":"));
  AppendJsonString(out_, name);
  out_.append(std::string_view(",\"args\":{"));
  return TraceArgs(out_);
}

void ChromeTraceWriter::FlowStart(std::string_view category, std::string_view name, uint64_t id,
                                  int64_t pid, int64_t tid, int64_t ts_ns) {
  fmt::format_to(
      fmt::appender(NextEvent()),
      "{{\"ph\":\"s\",\"cat\":\"{}\",\"name\":\"{}\",\"id\":{},\"pid\":{},\"tid\":{},\"ts\":",
      category, name, id, pid, tid);
  Micros(ts_ns);
  out_.push_back('}');
}

void ChromeTraceWriter::FlowEnd(std::string_view category, std::string_view name, uint64_t id,
                                int64_t pid, int64_t tid, int64_t ts_ns) {
  fmt::format_to(fmt::appender(NextEvent()),
                 "{{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"{}\",\"name\":\"{}\",\"id\":{},"
                 "\"pid\":{},\"tid\":{},\"ts\":",
                 category, name, id, pid, tid);
  Micros(ts_ns);
  out_.push_back('}');
}

std::string ChromeTraceWriter::Finish(
    std::initializer_list<std::pair<std::string_view, int64_t>> other_data) {
  out_.append(std::string_view("\n],\"otherData\":{"));
  bool first = true;
  for (const auto& [key, value] : other_data) {
    if (!first) {
      out_.push_back(',');
    }
    first = false;
    AppendJsonString(out_, key);
    fmt::format_to(fmt::appender(out_), ":{}", value);
  }
  out_.append(std::string_view("}}\n"));
  return fmt::to_string(out_);
}

}  // namespace warpscope::profiling
