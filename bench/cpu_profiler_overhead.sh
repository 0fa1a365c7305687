#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The agent's CPU and memory with the CPU profiler on, against the same agent without it, while
# cpu_hot_child keeps one CPU busy. Needs root (system-wide perf_event sampling).
#
#   bench/cpu_profiler_overhead.sh [build_dir] [seconds] [extra agent flags...]
#
#   cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release
#   ninja -C build/release warpscope cpu_hot_child
#   sudo bench/cpu_profiler_overhead.sh build/release 60
#
# Prints, for the agent without and with --enable-cpu-profiler (19 Hz, 10 s windows to a temp
# directory): its CPU over the run as a percentage of one core (utime + stime from
# /proc/<pid>/stat, the first 2 s of start-up excluded) and its RSS at the end.
set -euo pipefail
build=${1:-build/release}
secs=${2:-60}
shift 2 || true
child_bin="$build/tests/cpu_profiler_fixtures/cpu_hot_child"
agent_bin="$build/bin/warpscope"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

measure() {
  "$child_bin" burn $((secs + 5)) > /dev/null &
  local child=$!
  "$agent_bin" agent --listen-address off --collect-metrics-interval 1s "$@" \
    > "$out/agent.log" 2>&1 &
  local agent=$!
  sleep 2
  local s0 s1
  read -r -a s0 < "/proc/$agent/stat"
  sleep "$secs"
  read -r -a s1 < "/proc/$agent/stat"
  local rss
  rss=$(awk '/RssAnon|RssFile/ {printf "%s %s kB  ", $1, $2}' "/proc/$agent/status")
  kill -INT "$agent"; wait "$agent" || true
  kill "$child"; wait "$child" 2> /dev/null || true
  local ticks=$(( (s1[13] + s1[14]) - (s0[13] + s0[14]) ))
  local hz
  hz=$(getconf CLK_TCK)
  echo "$(echo "scale=3; 100 * $ticks / $hz / $secs" | bc)% of one core; $rss"
}

echo "agent, host metrics only:      $(measure "$@")"
echo "agent, + CPU profiler (19 Hz): $(measure --enable-cpu-profiler \
  --cpu-profile-dir "$out/profiles" --cpu-profile-interval 10s "$@")"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
