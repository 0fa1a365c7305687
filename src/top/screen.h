// SPDX-License-Identifier: Apache-2.0
// The model of `warpscope top`'s screen: a pure function from a snapshot, the GPUs' history and
// the view state (sort, filter, selected GPU, help) to lines of styled text that fit the
// terminal. No terminal here: the ncurses front end (terminal.h) only paints these lines.
#ifndef WARPSCOPE_TOP_SCREEN_H_
#define WARPSCOPE_TOP_SCREEN_H_

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/time.h"
#include "top/history.h"
#include "top/snapshot.h"

namespace warpscope::top {

// How a span is painted; the front end maps these to colours and attributes.
enum class Style : uint8_t { kNormal, kTitle, kHeader, kDim, kGood, kWarn, kBad, kSparkline };

struct Span {
  std::string text;  // UTF-8; one column per code point
  Style style = Style::kNormal;
};
struct Line {
  std::vector<Span> spans;
  std::string Text() const;  // the spans' text joined
};
struct Screen {
  std::vector<Line> lines;  // at most the terminal's rows, each at most its columns wide
};

enum class SortKey : uint8_t { kGpuMemory, kSm, kCpu, kPid };
std::string_view SortKeyName(SortKey key);  // "GPU memory", "SM %", "CPU %", "pid"

// Keys the model understands besides printable characters (the front end maps its own codes).
inline constexpr int kKeyBackspace = 127;
inline constexpr int kKeyEnter = '\n';
inline constexpr int kKeyEscape = 27;

struct ViewState {
  SortKey sort = SortKey::kGpuMemory;
  std::string filter;           // case-insensitive substring of pid, user, executable, command
  bool editing_filter = false;  // after '/', until Enter or Escape
  std::optional<int> gpu;       // the selected GPU's index; none = all GPUs
  bool help = false;
  bool quit = false;
};

// Applies one key: q quit, h/? help, m/s/c/p sort, / filter (Enter keeps it, Escape clears it),
// g next GPU (after the last: all), a all GPUs. While the help is shown any key but q closes it.
// `gpus` are the indices `g` cycles through.
void HandleKey(ViewState& state, int key, std::span<const int> gpus);

// The process rows the table shows, in order: the selected GPU's, matching the filter, sorted by
// the sort key (largest first; pid ascending), ties by pid then GPU.
std::vector<ProcessRow> VisibleProcesses(const Snapshot& snapshot, const ViewState& state);

// `width` columns of bars for `values` (oldest first, fractions of full scale, clamped to 0..1);
// the newest values when there are more, right-aligned when fewer, a gap as a space. UTF-8 uses
// the eight block elements, ASCII "_.:-=+*#".
std::string Sparkline(std::span<const std::optional<double>> values, int width, bool utf8);

// At most `columns` code points of `text`.
std::string Truncate(std::string_view text, int columns);

// The help screen's text.
std::vector<std::string> HelpLines();

struct ScreenOptions {
  int rows = 24;
  int columns = 80;
  bool utf8 = true;
  base::Duration interval = std::chrono::seconds(1);
};

Screen BuildScreen(const Snapshot& snapshot, const History& history, const ViewState& state,
                   const ScreenOptions& options);

// Human units: "79.6G" (bytes, powers of 1024), "350M" (rates, powers of 1000).
std::string FormatBytes(double bytes);
std::string FormatRate(double bytes_per_second);

}  // namespace warpscope::top

#endif  // WARPSCOPE_TOP_SCREEN_H_
