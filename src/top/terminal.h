// SPDX-License-Identifier: Apache-2.0
// The ncurses front end of `warpscope top`: paints Screens, reads keys.
#ifndef WARPSCOPE_TOP_TERMINAL_H_
#define WARPSCOPE_TOP_TERMINAL_H_

#include <memory>

#include "base/status.h"
#include "top/top_loop.h"

namespace warpscope::top {

// The terminal in curses mode while this object lives: cbreak, no echo, keypad, hidden cursor,
// colours when the terminal has them. UTF-8 sparklines when the locale's codeset is UTF-8
// (setlocale from the environment), ASCII otherwise. SIGINT, SIGTERM and SIGHUP (the terminal
// went away) set a flag (stop_requested) instead of killing the process, so the destructor always
// restores the terminal (endwin) and the previous signal handlers. One at a time per process.
class CursesDisplay final : public Display {
 public:
  // Fails (kInvalidArgument) when stdin or stdout is not a terminal, (kUnavailable) when TERM
  // names no terminal curses knows.
  [[nodiscard]] static base::Result<std::unique_ptr<CursesDisplay>> Open();
  ~CursesDisplay() override;

  int rows() const override;
  int columns() const override;
  bool utf8() const override { return utf8_; }
  void Draw(const Screen& screen) override;
  int ReadKey(base::Duration timeout) override;

  // True once SIGINT, SIGTERM or SIGHUP arrived.
  static bool stop_requested();

 private:
  CursesDisplay() = default;
  bool utf8_ = false;
  bool colors_ = false;
};

}  // namespace warpscope::top

#endif  // WARPSCOPE_TOP_TERMINAL_H_
