#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The CPU profiler's per-function shares against `perf record` and against the designed shares.
# Needs root (or kernel.perf_event_paranoid <= 0 for the agent and <= 1 for perf).
#
#   bench/cpu_profiler_accuracy.sh [build_dir] [seconds] [frequencies...]
#
#   cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release
#   ninja -C build/release warpscope cpu_shares
#   sudo bench/cpu_profiler_accuracy.sh build/release 60 19 99
#
# For each frequency (default 19 and 99 Hz):
# - C: bench/cpu_accuracy/cpu_shares.c (leaves at 50/30/15/5 %, -O2 -fomit-frame-pointer) is
#   sampled for `seconds` at the same time by the agent (--enable-cpu-profiler --cpu-profile-pids
#   <pid>, 10 s windows to a temp --cpu-profile-dir) and by `perf record -F <hz> --call-graph
#   dwarf,16384 -p <pid>` (the agent's default stack copy); `perf script` stacks and the agent's
#   .folded windows are reduced to per-function self and inclusive shares of CPU time
#   (bench/cpu_accuracy/shares.py).
# - Python: bench/cpu_accuracy/cpu_shares.py under /usr/bin/python3, sampled by the agent alone
#   (perf sees only the interpreter's C frames), compared with the designed shares; when the
#   profile holds no Python frames it prints "python: not measured (no Python frames in this
#   build)".
# The target: every function within 2 percentage points of perf (C) and of the design (Python).
# Also printed: the agent's samples and lost records (its /metrics), the CPU time each tool
# sampled, and the share of it that fell in the designed functions.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build/release}
secs=${2:-60}
shift 2 || true
freqs=("$@")
[[ ${#freqs[@]} -gt 0 ]] || freqs=(19 99)
# shellcheck source=bench/perf_tool.sh
source "$here/perf_tool.sh"
agent_bin="$build/bin/warpscope"
c_bin="$build/bin/cpu_shares"
py_bin=/usr/bin/python3
out=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
  rm -rf "$out"
}
trap cleanup EXIT
design="leaf_a=50s,leaf_b=30s,leaf_c=15s,leaf_d=5s,stage_x=65i,inner_x=50i,stage_y=30i"
design+=",work_unit=100i"

# start_workload NAME CMD...: runs CMD in the background until it printed "ready"; sets $wl.
start_workload() {
  local name=$1
  shift
  "$@" > "$out/$name.stdout" 2>&1 &
  wl=$!
  pids+=("$wl")
  for _ in $(seq 100); do
    grep -q ready "$out/$name.stdout" 2> /dev/null && return 0
    sleep 0.1
  done
  echo "$name did not start" >&2
  exit 1
}

# start_agent HZ PID DIR: the agent profiling PID only (its /metrics on a free port, for the
# sample and lost-record counters); sets $agent.
start_agent() {
  "$agent_bin" agent --listen-address 127.0.0.1:0 --collect-metrics-interval 1s \
    --enable-cpu-profiler \
    --cpu-profile-pids "$2" --cpu-profile-frequency "$1" --cpu-profile-interval 10s \
    --cpu-profile-dir "$3" > "$3.log" 2>&1 &
  agent=$!
  pids+=("$agent")
}

# stop_agent: prints the agent's sample and lost-record counters, then stops it.
stop_agent() {
  local port
  port=$(sed -n 's/.*serving Prometheus metrics on .*(port \([0-9]*\)).*/\1/p' "$dir.log" | head -1)
  if [[ -n $port ]]; then
    curl -s "http://127.0.0.1:$port/metrics" | awk '
      /^warpscope_cpu_profiler_samples_total/ { samples = $2 }
      /^warpscope_cpu_profiler_records_lost_total/ { lost = $2 }
      END { printf "agent: %d samples unwound, %d records lost (ring full)\n", samples, lost }'
  fi
  kill -INT "$agent"
  wait "$agent" || true
}

echo "$(date -u +%Y-%m-%dT%H:%MZ), $(uname -r), $(nproc) CPUs, $("$perf_bin" --version)"
for hz in "${freqs[@]}"; do
  echo
  echo "== C (cpu_shares, -O2 -fomit-frame-pointer), ${hz} Hz, ${secs} s, agent and perf at once"
  start_workload c "$c_bin" $((secs + 8))
  c_pid=$wl
  dir="$out/c-$hz"
  start_agent "$hz" "$c_pid" "$dir"
  "$perf_bin" record -q -F "$hz" --call-graph dwarf,16384 -p "$c_pid" -o "$out/perf-$hz.data" \
    -- sleep "$secs" 2> "$out/perf-$hz.log"
  stop_agent
  kill "$c_pid" 2> /dev/null || true
  wait "$c_pid" 2> /dev/null || true
  "$perf_bin" script -i "$out/perf-$hz.data" -F tid,period,ip,sym,dso --no-inline \
    > "$out/perf-$hz.txt" 2> /dev/null
  python3 "$here/cpu_accuracy/shares.py" --design "$design" --perf "$out/perf-$hz.txt" \
    --warpscope "$dir"/cpu-*-"$c_pid"-*.folded

  echo
  echo "== Python ($("$py_bin" --version 2>&1), cpu_shares.py), ${hz} Hz, ${secs} s, agent"
  start_workload py "$py_bin" "$here/cpu_accuracy/cpu_shares.py" $((secs + 8))
  py_pid=$wl
  dir="$out/py-$hz"
  start_agent "$hz" "$py_pid" "$dir"
  sleep "$secs"
  stop_agent
  kill "$py_pid" 2> /dev/null || true
  wait "$py_pid" 2> /dev/null || true
  files=("$dir"/cpu-*-"$py_pid"-*.folded)
  if [[ ! -e ${files[0]} ]]; then
    echo "python: no profile written (agent log: $(tail -3 "$dir.log"))" >&2
    exit 1
  fi
  rc=0
  python3 "$here/cpu_accuracy/shares.py" --python --design "$design" --warpscope "${files[@]}" \
    > "$out/py-$hz.table" || rc=$?
  if [[ $rc -eq 3 ]]; then
    echo "python: not measured (no Python frames in this build)"
  elif [[ $rc -eq 0 ]]; then
    cat "$out/py-$hz.table"
  else
    cat "$out/py-$hz.table"
    exit "$rc"
  fi
done
echo
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
