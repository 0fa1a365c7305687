// SPDX-License-Identifier: Apache-2.0
#include "top/screen.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace warpscope::top {
namespace {

constexpr int kSparkWidth = 12;
constexpr size_t kMaxFindingLines = 5;
// Rows that the title, the process table (header and a few rows) and the findings need at least.
constexpr int kMinProcessRows = 12;

int Columns(std::string_view text) {
  int n = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Percent(const std::optional<double>& ratio) {
  return ratio ? fmt::format("{:3.0f}%", *ratio * 100) : "   -";
}

// Green under 60 % of full scale, yellow under 90 %, red above.
Style Level(std::optional<double> ratio) {
  if (!ratio) return Style::kDim;
  if (*ratio >= 0.9) return Style::kBad;
  if (*ratio >= 0.6) return Style::kWarn;
  return Style::kGood;
}

std::optional<double> SortValue(const ProcessRow& p, SortKey key) {
  switch (key) {
    case SortKey::kGpuMemory:
      return p.gpu_memory;
    case SortKey::kSm:
      return p.sm;
    case SortKey::kCpu:
      return p.cpu;
    case SortKey::kPid:
      return p.pid;
  }
  return std::nullopt;
}

bool Matches(const ProcessRow& p, const std::string& needle) {
  if (needle.empty()) return true;
  for (const std::string& hay : {std::to_string(p.pid), p.user, p.executable, p.command_line}) {
    if (Lower(hay).find(needle) != std::string::npos) return true;
  }
  return false;
}

class LineBuilder {
 public:
  LineBuilder& Add(std::string text, Style style = Style::kNormal) {
    line_.spans.push_back({std::move(text), style});
    return *this;
  }
  Line Take() { return std::move(line_); }

 private:
  Line line_;
};

// One gauge: "LABEL value sparkline".
void AddGauge(LineBuilder& b, std::string_view label, std::string value,
              std::optional<double> level, const std::vector<std::optional<double>>& history,
              bool utf8) {
  b.Add(fmt::format("  {} ", label), Style::kHeader);
  b.Add(std::move(value), Level(level));
  b.Add(" ");
  b.Add(Sparkline(history, kSparkWidth, utf8), Style::kSparkline);
}

std::optional<double> Ratio(const std::optional<double>& v, const std::optional<double>& full) {
  if (!v || !full || *full <= 0) return std::nullopt;
  return *v / *full;
}

// "used/total<unit>", right-aligned in `width` columns.
std::string Pair(const std::optional<double>& used, const std::optional<double>& total,
                 std::string (*format)(double), std::string_view unit, int width) {
  std::string a = used ? format(*used) : "-";
  std::string b = total ? format(*total) : "-";
  return fmt::format("{:>{}}", fmt::format("{}/{}{}", a, b, unit), width);
}

std::string Watts(double w) { return fmt::format("{:.0f}", w); }

// The GPU's two lines; `compact`: the first only (utilisation, SM, memory).
void AddGpuLines(const GpuRow& gpu, const History& history, bool utf8, bool compact,
                 std::vector<Line>& out) {
  LineBuilder a;
  a.Add(fmt::format("GPU {:<2} ", gpu.index), Style::kHeader);
  a.Add(fmt::format("{:<24.24}", gpu.name));
  if (gpu.degraded) {
    a.Add("  DEGRADED (not answering NVML)", Style::kBad);
    out.push_back(a.Take());
    return;
  }
  AddGauge(a, "UTIL", Percent(gpu.utilization), gpu.utilization,
           history.Values(gpu, Gauge::kUtilization), utf8);
  AddGauge(a, "SM", Percent(gpu.sm_active), gpu.sm_active, history.Values(gpu, Gauge::kSmActive),
           utf8);
  std::optional<double> mem = Ratio(gpu.memory_used, gpu.memory_total);
  AddGauge(a, "MEM", Pair(gpu.memory_used, gpu.memory_total, FormatBytes, "", 12) + Percent(mem),
           mem, history.Values(gpu, Gauge::kMemory), utf8);
  out.push_back(a.Take());
  if (compact) return;

  LineBuilder b;
  b.Add("       ");
  std::optional<double> power = Ratio(gpu.power, gpu.power_limit);
  AddGauge(b, "POW", Pair(gpu.power, gpu.power_limit, Watts, "W", 9), power,
           history.Values(gpu, Gauge::kPower), utf8);
  std::optional<double> temp = Ratio(gpu.temperature, 90.0);
  AddGauge(b, "TEMP",
           gpu.temperature ? fmt::format("{:3.0f}C", *gpu.temperature) : std::string("   -"), temp,
           history.Values(gpu, Gauge::kTemperature), utf8);
  auto rate = [](const std::optional<double>& v) { return v ? FormatRate(*v) : std::string("-"); };
  b.Add("  PCIe ", Style::kHeader)
      .Add(fmt::format("tx {:>5} rx {:>5}", rate(gpu.pcie_tx), rate(gpu.pcie_rx)));
  b.Add("  NVLink ", Style::kHeader)
      .Add(fmt::format("tx {:>5} rx {:>5}", rate(gpu.nvlink_tx), rate(gpu.nvlink_rx)));
  out.push_back(b.Take());
}

Line ProcessHeader(const ViewState& state) {
  auto col = [&state](SortKey key, std::string text) {
    return Span{std::move(text), state.sort == key ? Style::kTitle : Style::kHeader};
  };
  Line line;
  line.spans = {col(SortKey::kPid, fmt::format("{:>8}", "PID")),
                {fmt::format(" {:<10} {:>3} ", "USER", "GPU"), Style::kHeader},
                col(SortKey::kGpuMemory, fmt::format("{:>8}", "GPU-MEM")),
                {" ", Style::kHeader},
                col(SortKey::kSm, fmt::format("{:>5}", "SM%")),
                {" ", Style::kHeader},
                col(SortKey::kCpu, fmt::format("{:>6}", "CPU%")),
                {" COMMAND", Style::kHeader}};
  return line;
}

Line ProcessLine(const ProcessRow& p) {
  std::string cpu = p.cpu ? fmt::format("{:6.1f}", *p.cpu * 100) : fmt::format("{:>6}", "-");
  std::string sm = p.sm ? fmt::format("{:5.0f}", *p.sm * 100) : fmt::format("{:>5}", "-");
  std::string mem = p.gpu_memory ? FormatBytes(*p.gpu_memory) : "-";
  std::string gpu = p.gpu_index >= 0 ? std::to_string(p.gpu_index) : "-";
  std::string command = p.command_line.empty() ? p.executable : p.command_line;
  Line line;
  line.spans = {
      {fmt::format("{:>8} {:<10.10} {:>3} {:>8} {} {} ", p.pid, p.user, gpu, mem, sm, cpu)},
      {command, Style::kNormal}};
  return line;
}

Line FindingLine(const FindingRow& f) {
  Style style = f.severity == "page"     ? Style::kBad
                : f.severity == "ticket" ? Style::kWarn
                                         : Style::kNormal;
  Line line;
  line.spans = {{fmt::format(" {:<6} {:<7} ", f.severity, f.state), style},
                {fmt::format("{:<22} ", f.rule), Style::kHeader},
                {f.entity.empty() ? f.summary : f.entity + ": " + f.summary}};
  return line;
}

Line TitleLine(const Snapshot& snapshot, const ViewState& state, const ScreenOptions& options) {
  std::string gpu = state.gpu ? fmt::format("GPU {}", *state.gpu) : std::string("all GPUs");
  std::string filter;
  if (state.editing_filter) {
    filter = fmt::format("  filter: {}_", state.filter);
  } else if (!state.filter.empty()) {
    filter = fmt::format("  filter: {}", state.filter);
  }
  Line line;
  line.spans = {
      {"warpscope top", Style::kTitle},
      {fmt::format("  {}  {}  every {}  {}  sort: {}{}", snapshot.host, snapshot.origin,
                   base::FormatDuration(options.interval), gpu, SortKeyName(state.sort), filter)},
      {"   h: help  q: quit", Style::kDim}};
  return line;
}

Line Truncated(Line line, int columns) {
  Line out;
  int left = columns;
  for (Span& span : line.spans) {
    if (left <= 0) break;
    int n = Columns(span.text);
    if (n > left) {
      span.text = Truncate(span.text, left);
      n = left;
    }
    left -= n;
    out.spans.push_back(std::move(span));
  }
  return out;
}

Screen Fit(std::vector<Line> lines, const ScreenOptions& options) {
  Screen screen;
  int rows = std::max(options.rows, 0);
  for (Line& line : lines) {
    if (static_cast<int>(screen.lines.size()) >= rows) break;
    screen.lines.push_back(Truncated(std::move(line), std::max(options.columns, 0)));
  }
  return screen;
}

Screen HelpScreen(const ScreenOptions& options) {
  std::vector<Line> lines;
  for (std::string& text : HelpLines()) {
    lines.push_back(Line{{{std::move(text), Style::kNormal}}});
  }
  if (!lines.empty()) lines.front().spans.front().style = Style::kTitle;
  return Fit(std::move(lines), options);
}

}  // namespace

std::string Line::Text() const {
  std::string out;
  for (const Span& s : spans) out += s.text;
  return out;
}

std::string_view SortKeyName(SortKey key) {
  switch (key) {
    case SortKey::kGpuMemory:
      return "GPU memory";
    case SortKey::kSm:
      return "SM %";
    case SortKey::kCpu:
      return "CPU %";
    case SortKey::kPid:
      return "pid";
  }
  return "?";
}

void HandleKey(ViewState& state, int key, std::span<const int> gpus) {
  if (state.editing_filter) {
    if (key == kKeyEnter) {
      state.editing_filter = false;
    } else if (key == kKeyEscape) {
      state.editing_filter = false;
      state.filter.clear();
    } else if (key == kKeyBackspace) {
      if (!state.filter.empty()) state.filter.pop_back();
    } else if (key >= 0x20 && key < 0x7f) {
      state.filter.push_back(static_cast<char>(key));
    }
    return;
  }
  if (key == 'q' || key == 'Q') {
    state.quit = true;
    return;
  }
  if (state.help) {
    state.help = false;
    return;
  }
  switch (key) {
    case 'h':
    case '?':
      state.help = true;
      break;
    case 'm':
      state.sort = SortKey::kGpuMemory;
      break;
    case 's':
      state.sort = SortKey::kSm;
      break;
    case 'c':
      state.sort = SortKey::kCpu;
      break;
    case 'p':
      state.sort = SortKey::kPid;
      break;
    case '/':
      state.editing_filter = true;
      state.filter.clear();
      break;
    case kKeyEscape:
      state.filter.clear();
      break;
    case 'a':
      state.gpu.reset();
      break;
    case 'g': {
      if (gpus.empty()) {
        state.gpu.reset();
        break;
      }
      if (!state.gpu) {
        state.gpu = gpus.front();
        break;
      }
      auto it = std::find(gpus.begin(), gpus.end(), *state.gpu);
      if (it == gpus.end() || it + 1 == gpus.end()) {
        state.gpu.reset();
      } else {
        state.gpu = *(it + 1);
      }
      break;
    }
    default:
      break;
  }
}

std::vector<ProcessRow> VisibleProcesses(const Snapshot& snapshot, const ViewState& state) {
  std::string needle = Lower(state.filter);
  std::vector<ProcessRow> rows;
  for (const ProcessRow& p : snapshot.processes) {
    if (state.gpu && p.gpu_index != *state.gpu) continue;
    if (!Matches(p, needle)) continue;
    rows.push_back(p);
  }
  SortKey key = state.sort;
  std::stable_sort(rows.begin(), rows.end(), [key](const ProcessRow& a, const ProcessRow& b) {
    if (key != SortKey::kPid) {
      // Largest first; absent values last.
      double va = SortValue(a, key).value_or(-1);
      double vb = SortValue(b, key).value_or(-1);
      if (va != vb) return va > vb;
    }
    if (a.pid != b.pid) return a.pid < b.pid;
    return a.gpu_index < b.gpu_index;
  });
  return rows;
}

std::string Sparkline(std::span<const std::optional<double>> values, int width, bool utf8) {
  static constexpr std::string_view kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static constexpr std::string_view kAscii = "_.:-=+*#";
  if (width <= 0) return "";
  size_t n = std::min(values.size(), static_cast<size_t>(width));
  std::string out(static_cast<size_t>(width) - n, ' ');
  for (size_t i = values.size() - n; i < values.size(); ++i) {
    const std::optional<double>& v = values[i];
    if (!v || !std::isfinite(*v)) {
      out += ' ';
      continue;
    }
    double clamped = std::clamp(*v, 0.0, 1.0);
    size_t level = std::min<size_t>(7, static_cast<size_t>(std::lround(clamped * 7)));
    if (utf8) {
      out += kBlocks[level];
    } else {
      out += kAscii[level];
    }
  }
  return out;
}

std::string Truncate(std::string_view text, int columns) {
  if (columns <= 0) return "";
  int n = 0;
  size_t i = 0;
  for (; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      if (n == columns) break;
      ++n;
    }
  }
  return std::string(text.substr(0, i));
}

std::vector<std::string> HelpLines() {
  return {
      "warpscope top: help (any key returns, q quits)",
      "",
      "  q          quit",
      "  h ?        this help",
      "  m          sort processes by GPU memory (largest first)",
      "  s          sort processes by SM % (largest first)",
      "  c          sort processes by CPU % (largest first)",
      "  p          sort processes by pid",
      "  /          filter processes by text (pid, user, executable, command line);",
      "             Enter keeps the filter, Escape clears it",
      "  g          show the next GPU only (after the last: all GPUs)",
      "  a          show all GPUs",
      "",
      "Per GPU: UTIL utilisation, SM activity (GPM), MEM used/total, POW power/limit, TEMP,",
      "each with the recent values as a sparkline; PCIe and NVLink (all links) traffic.",
      "Processes: GPU memory and SM % per GPU, CPU % as top shows it (100 = one core).",
      "Findings: the host's open findings, with --server.",
  };
}

std::string FormatBytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "K", "M", "G", "T", "P"};
  size_t u = 0;
  while (std::fabs(bytes) >= 1024 && u + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f}B", bytes) : fmt::format("{:.1f}{}", bytes, kUnits[u]);
}

std::string FormatRate(double bytes_per_second) {
  static constexpr const char* kUnits[] = {"B", "K", "M", "G", "T"};
  size_t u = 0;
  double v = bytes_per_second;
  while (std::fabs(v) >= 1000 && u + 1 < std::size(kUnits)) {
    v /= 1000;
    ++u;
  }
  if (v < 10 && u > 0) return fmt::format("{:.1f}{}", v, kUnits[u]);
  return fmt::format("{:.0f}{}", v, kUnits[u]);
}

Screen BuildScreen(const Snapshot& snapshot, const History& history, const ViewState& state,
                   const ScreenOptions& options) {
  if (state.help) return HelpScreen(options);
  std::vector<Line> top;
  top.push_back(TitleLine(snapshot, state, options));
  if (!snapshot.error.empty()) {
    top.push_back(Line{{{"! " + snapshot.error, Style::kBad}}});
  }
  std::vector<const GpuRow*> gpus;
  for (const GpuRow& gpu : snapshot.gpus) {
    if (!state.gpu || gpu.index == *state.gpu) gpus.push_back(&gpu);
  }
  // Two lines per GPU leave a short terminal no room for processes: then one line per GPU.
  bool compact = static_cast<int>(2 * gpus.size()) + kMinProcessRows > options.rows;
  for (const GpuRow* gpu : gpus) AddGpuLines(*gpu, history, options.utf8, compact, top);
  if (snapshot.gpus.empty() && snapshot.error.empty()) {
    top.push_back(Line{{{"no GPUs reported", Style::kDim}}});
  }
  top.push_back(Line{});

  // The findings panel sits at the bottom; the process table gets the rows in between.
  std::vector<Line> bottom;
  bottom.push_back(Line{{{"FINDINGS", Style::kHeader}}});
  if (!snapshot.findings_available) {
    bottom.push_back(Line{{{" (connect to a server with --server URL --host H)", Style::kDim}}});
  } else if (snapshot.findings.empty()) {
    bottom.push_back(Line{{{" none open", Style::kGood}}});
  } else {
    size_t n = std::min(snapshot.findings.size(), kMaxFindingLines);
    for (size_t i = 0; i < n; ++i) bottom.push_back(FindingLine(snapshot.findings[i]));
    if (snapshot.findings.size() > n) {
      bottom.push_back(
          Line{{{fmt::format(" ... {} more", snapshot.findings.size() - n), Style::kDim}}});
    }
  }

  std::vector<ProcessRow> processes = VisibleProcesses(snapshot, state);
  int room = options.rows - static_cast<int>(top.size()) - static_cast<int>(bottom.size()) - 2;
  std::vector<Line> lines = std::move(top);
  lines.push_back(ProcessHeader(state));
  size_t shown = std::min(processes.size(), static_cast<size_t>(std::max(room, 1)));
  for (size_t i = 0; i < shown; ++i) lines.push_back(ProcessLine(processes[i]));
  if (processes.empty()) {
    lines.push_back(
        Line{{{state.filter.empty() ? " no GPU processes" : " no process matches", Style::kDim}}});
  }
  lines.push_back(Line{});
  for (Line& line : bottom) lines.push_back(std::move(line));
  return Fit(std::move(lines), options);
}

}  // namespace warpscope::top
