#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The agent's CPU and memory with the CPU profiler on, against the same agent without it and
# against `perf record` at the same frequency and stack size, while cpu_shares
# (bench/cpu_accuracy) keeps one CPU busy. Needs root (system-wide perf_event sampling).
#
#   bench/cpu_profiler_overhead.sh [build_dir] [seconds] [hz] [extra agent flags...]
#
#   cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release
#   ninja -C build/release warpscope cpu_shares
#   sudo bench/cpu_profiler_overhead.sh build/release 60 19
#   sudo ONLY_CHILD=1 bench/cpu_profiler_overhead.sh build/release 60 19   # one process
#
# Prints, for the agent without and with --enable-cpu-profiler (hz, default 19; 10 s windows to
# a temp directory) and for `perf record -F <hz> --call-graph dwarf,16384` (the agent's default
# stack copy) over the same span: CPU over the run as a percentage of one core and per CPU
# profiled (utime + stime from /proc/<pid>/stat, the first 2 s of start-up excluded), RSS at the
# end; for perf also the CPU that `perf report` then takes to unwind and symbolize what perf
# recorded (perf record only copies stacks into its file; the agent unwinds as it goes). Every
# CPU of the host is profiled (agent: every process; perf: -a), or with ONLY_CHILD=1 the busy
# child only (agent: --cpu-profile-pids; perf: -p).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build/release}
secs=${2:-60}
hz=${3:-19}
shift 3 || shift $#
# shellcheck source=bench/perf_tool.sh
source "$here/perf_tool.sh"
child_bin="$build/bin/cpu_shares"
agent_bin="$build/bin/warpscope"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
clk=$(getconf CLK_TCK)
cpus=$(nproc)
only_child=${ONLY_CHILD:-0}
profiled=$cpus
[[ $only_child == 1 ]] && profiled=1

# cpu_ticks PID: utime + stime of PID.
cpu_ticks() {
  local s
  read -r -a s < "/proc/$1/stat"
  echo $((s[13] + s[14]))
}

# measure KIND [flags...]: KIND base or profiler (the agent, with these flags) or perf. Prints
# the result line; the CPU ticks go to $out/ticks-KIND for the ratio.
measure() {
  local kind=$1
  shift
  "$child_bin" $((secs + 5)) > /dev/null &
  local child=$!
  local target=(-a)
  local agent_target=()
  if [[ $only_child == 1 ]]; then
    target=(-p "$child")
    [[ $kind == profiler ]] && agent_target=(--cpu-profile-pids "$child")
  fi
  local proc
  if [[ $kind != perf ]]; then
    "$agent_bin" agent --listen-address off --collect-metrics-interval 1s "$@" \
      "${agent_target[@]}" > "$out/agent.log" 2>&1 &
  else
    "$perf_bin" record -q -F "$hz" --call-graph dwarf,16384 "${target[@]}" \
      -o "$out/perf.data" > "$out/perf.log" 2>&1 &
  fi
  proc=$!
  sleep 2
  local t0 t1 rss
  t0=$(cpu_ticks "$proc")
  sleep "$secs"
  t1=$(cpu_ticks "$proc")
  rss=$(awk '/RssAnon|RssFile/ {printf "%s %s kB  ", $1, $2}' "/proc/$proc/status")
  kill -INT "$proc"
  wait "$proc" || true
  kill "$child"
  wait "$child" 2> /dev/null || true
  local ticks=$((t1 - t0))
  echo "$ticks" > "$out/ticks-$kind"
  local line
  line="$(echo "scale=3; 100 * $ticks / $clk / $secs" | bc)% of one core"
  line+=" ($(echo "scale=3; 100 * $ticks / $clk / $secs / $profiled" | bc)% per CPU profiled); $rss"
  if [[ $kind == perf ]]; then
    local size report
    size=$(du -m "$out/perf.data" | cut -f1)
    TIMEFORMAT='%U %S'
    report=$({ time "$perf_bin" report -i "$out/perf.data" --stdio --no-children \
      > /dev/null 2>&1; } 2>&1)
    line+="; perf.data ${size} MB; perf report afterwards: $(echo "$report" |
      awk '{printf "%.1f", $1 + $2}') CPU s"
  fi
  echo "$line"
}

what="every process, $cpus CPUs"
[[ $only_child == 1 ]] && what="the busy process only"
echo "$(date -u +%Y-%m-%dT%H:%MZ), ${secs} s, ${hz} Hz, $what"
echo "agent, host metrics only:        $(measure base "$@")"
echo "agent, + CPU profiler (${hz} Hz):  $(measure profiler --enable-cpu-profiler \
  --cpu-profile-frequency "$hz" --cpu-profile-dir "$out/profiles" --cpu-profile-interval 10s \
  "$@")"
echo "perf record (${hz} Hz, dwarf 16 KiB): $(measure perf)"
base=$(cat "$out/ticks-base")
prof=$(cat "$out/ticks-profiler")
perf=$(cat "$out/ticks-perf")
echo "profiler's added CPU / perf record's CPU: $((prof - base)) / $perf ticks" \
  "= $(echo "scale=2; ($prof - $base) / ($perf + 0.0001)" | bc)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
