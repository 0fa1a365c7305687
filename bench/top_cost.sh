#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CPU of `warpscope top` per refresh against the agent's per collection cycle, both on the NVML
# simulator with the same scenario and a 1 s period, for the same time, side by side.
#   bench/top_cost.sh [BUILD_DIR] [SECONDS] [SCENARIO]
# top runs in a private tmux server (its socket in a temporary directory; 160x50 pane, UTF-8);
# the agent collects GPU and host metrics as it does by default, serving /metrics on a free
# loopback port that nobody scrapes.
# CPU seconds are utime + stime from /proc/<pid>/stat, read after a 5 s warm-up and at the end.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build/ci}"
seconds="${2:-60}"
scenario="${3:-healthy-8xh100}"
bin="$build/bin/warpscope"
[[ -x "$bin" ]] || { echo "build first: ninja -C $build warpscope warpscope_nvml_sim" >&2; exit 1; }
command -v tmux >/dev/null || { echo "tmux is missing: run scripts/setup.sh --test" >&2; exit 1; }
hz=$(getconf CLK_TCK)
tmp="$(mktemp -d)"
socket="$tmp/tmux.sock"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

"$bin" agent --simulate "$scenario" --collect-metrics-interval=1s --export-metrics-interval=10s \
  --listen-address="127.0.0.1:$port" --log-level=warning &
agent=$!
tmux -S "$socket" -f /dev/null new-session -d -x 160 -y 50 -s top \
  "exec env LANG=C.UTF-8 LC_ALL=C.UTF-8 '$bin' top --simulate '$scenario' --interval 1s"
cleanup() {
  kill "$agent" 2>/dev/null || true
  tmux -S "$socket" kill-server 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
top=$(tmux -S "$socket" display-message -p -t top '#{pane_pid}')

cpu() { awk -v hz="$hz" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }
sleep 5  # warm-up: NVML enumeration, the first cycles
a0=$(cpu "$agent"); t0=$(cpu "$top")
sleep "$seconds"
a1=$(cpu "$agent"); t1=$(cpu "$top")
awk -v s="$seconds" -v a0="$a0" -v a1="$a1" -v t0="$t0" -v t1="$t1" -v sc="$scenario" 'BEGIN {
  a = a1 - a0; t = t1 - t0
  printf "%s, %d s at 1 s:\n", sc, s
  printf "  warpscope top:   %.2f CPU s = %.1f ms per refresh (%.2f%% of a core)\n", t, 1000 * t / s, 100 * t / s
  printf "  warpscope agent: %.2f CPU s = %.1f ms per cycle   (%.2f%% of a core)\n", a, 1000 * a / s, 100 * a / s
  printf "  top / agent: %.2f\n", (a > 0 ? t / a : 0)
}'
