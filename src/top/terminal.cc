// SPDX-License-Identifier: Apache-2.0
#include "top/terminal.h"

#include <langinfo.h>
#include <ncursesw/curses.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <clocale>
#include <cstring>

namespace warpscope::top {
namespace {

volatile sig_atomic_t g_stop = 0;
std::atomic<bool> g_open{false};
struct sigaction g_old_int;
struct sigaction g_old_term;
struct sigaction g_old_hup;
SCREEN* g_screen = nullptr;

void OnSignal(int) { g_stop = 1; }

// Colour pairs, by Style.
short PairOf(Style style) {
  switch (style) {
    case Style::kGood:
      return 1;
    case Style::kWarn:
      return 2;
    case Style::kBad:
      return 3;
    case Style::kSparkline:
      return 4;
    default:
      return 0;
  }
}

attr_t AttrOf(Style style, bool colors) {
  attr_t attr = A_NORMAL;
  switch (style) {
    case Style::kTitle:
      attr = A_REVERSE | A_BOLD;
      break;
    case Style::kHeader:
      attr = A_BOLD;
      break;
    case Style::kDim:
      attr = A_DIM;
      break;
    case Style::kBad:
      attr = A_BOLD;
      break;
    default:
      break;
  }
  if (colors) attr |= COLOR_PAIR(PairOf(style));
  return attr;
}

}  // namespace

base::Result<std::unique_ptr<CursesDisplay>> CursesDisplay::Open() {
  if (isatty(STDIN_FILENO) == 0 || isatty(STDOUT_FILENO) == 0) {
    return base::Error(
        base::Status(base::StatusCode::kInvalidArgument,
                     "stdin and stdout must be a terminal; run warpscope top in a terminal "
                     "(for scripts, use `warpscope agent --once`)"));
  }
  if (g_open.exchange(true)) {
    return base::Error(
        base::Status(base::StatusCode::kInvalidArgument, "a terminal view is already open"));
  }
  std::setlocale(LC_ALL, "");
  std::unique_ptr<CursesDisplay> d(new CursesDisplay());
  d->utf8_ = std::strcmp(nl_langinfo(CODESET), "UTF-8") == 0;

  // Handlers first: ncurses installs its own only where the disposition is still the default.
  g_stop = 0;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
  sigaction(SIGHUP, &sa, &g_old_hup);

  g_screen = newterm(nullptr, stdout, stdin);
  if (g_screen == nullptr) {
    sigaction(SIGINT, &g_old_int, nullptr);
    sigaction(SIGTERM, &g_old_term, nullptr);
    sigaction(SIGHUP, &g_old_hup, nullptr);
    g_open = false;
    const char* term = getenv("TERM");
    return base::Error(
        base::Status(base::StatusCode::kUnavailable,
                     std::string("cannot open the terminal TERM=") + (term ? term : "") +
                         "; set TERM to your terminal's type (e.g. xterm-256color)"));
  }
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  set_escdelay(25);
  curs_set(0);
  if (has_colors()) {
    start_color();
    use_default_colors();
    init_pair(1, COLOR_GREEN, -1);
    init_pair(2, COLOR_YELLOW, -1);
    init_pair(3, COLOR_RED, -1);
    init_pair(4, COLOR_CYAN, -1);
    d->colors_ = true;
  }
  return d;
}

CursesDisplay::~CursesDisplay() {
  curs_set(1);
  endwin();
  if (g_screen != nullptr) {
    delscreen(g_screen);
    g_screen = nullptr;
  }
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGHUP, &g_old_hup, nullptr);
  g_open = false;
}

bool CursesDisplay::stop_requested() { return g_stop != 0; }

int CursesDisplay::rows() const { return LINES; }
int CursesDisplay::columns() const { return COLS; }

void CursesDisplay::Draw(const Screen& screen) {
  erase();
  int y = 0;
  for (const Line& line : screen.lines) {
    if (y >= LINES) break;
    move(y, 0);
    for (const Span& span : line.spans) {
      attr_t attr = AttrOf(span.style, colors_);
      attron(attr);
      // ERR at the bottom-right cell (the cursor cannot move past it) is harmless.
      addstr(span.text.c_str());
      attroff(attr);
    }
    ++y;
  }
  refresh();
}

int CursesDisplay::ReadKey(base::Duration wait) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wait).count();
  timeout(static_cast<int>(std::clamp<long long>(ms, 0, 60000)));
  int ch = getch();
  switch (ch) {
    case ERR:
      return kNoKey;
    case KEY_RESIZE:
      return kResize;
    case KEY_BACKSPACE:
    case 8:
    case 127:
      return kKeyBackspace;
    case KEY_ENTER:
    case '\r':
    case '\n':
      return kKeyEnter;
    default:
      return ch > 255 ? kNoKey : ch;
  }
}

}  // namespace warpscope::top
