#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Added CPU cost per kernel launch of libwarpscope_cupti.so, and its memory under a launch storm,
# measured on test/fakes/cupti/fake_cuda_app (no GPU needed). The app launches from N threads in
# a tight loop for S seconds over the fake libcupti; each launch is a runtime launch, so it fires
# four callbacks (runtime and nested driver, enter and exit) as with real CUDA.
#
#   bench/cupti_overhead.sh [build_dir] [seconds] [threads] [launch_work] [flush_ms]
#
# build_dir must have the tests built (the fake app lives under test/): e.g.
#   cmake -S . -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=Release
#   ninja -C build/bench fake_cuda_app warpscope_cupti warpscope_fake_cupti cupti_wire_counter
# Rows: no injection; injected but collection off (the fake's own callback dispatch); defaults
# (200 stacks/thread/s); rate 0 (GPU time only); every launch captured with each unwinder; and
# the defaults against an agent that never reads (memory must stay flat).
#
# Second table, "all kernels": every launch also makes a kernel record (as on a GPU) and the
# launch itself does launch_work iterations of CPU work (default 20000, ~20 us, ~50k kernels per
# second per thread: a busy training loop), against cupti_wire_counter, an agent that reads and
# counts bytes. Rows: sampled (defaults), every kernel always (WARPSCOPE_CUPTI_KERNELS=all) and
# duty-cycled windows. cpu_ns/launch is the whole process's CPU time (every thread, the flusher
# and the exit flush included) per launch; added = minus the row without injection; lost =
# kernel records CUPTI dropped (the fake delivers buffers only at a flush: above ~60k kernels
# per flush period the 8-buffer pool overflows; pass a shorter flush_ms, default 1000) and
# bytes dropped for want of room (agent slower than the output).
# Use seconds >= 10 so that the 200 ms / 10 s row holds one window. The fake completes buffers
# synchronously at each flush here (WARPSCOPE_FAKE_CUPTI_BUFFERS=sync), the delivery model the
# published figures were measured with.
set -euo pipefail
export WARPSCOPE_FAKE_CUPTI_BUFFERS=sync
build=${1:-build/bench}
secs=${2:-3}
threads=${3:-1}
work=${4:-20000}
flush_ms=${5:-1000}
app=$build/bin/fake_cuda_app
lib=$build/lib/libwarpscope_cupti.so
fake=$build/lib/libwarpscope_fake_cupti.so
counter=$build/bin/cupti_wire_counter
for f in "$app" "$lib" "$fake" "$counter"; do
  [[ -e $f ]] || { echo "missing $f: build fake_cuda_app warpscope_cupti warpscope_fake_cupti in $build" >&2; exit 1; }
done
tmp=$(mktemp -d)
agent_pid=
trap '[[ -n $agent_pid ]] && kill $agent_pid 2>/dev/null; rm -rf "$tmp"' EXIT
ms=$((secs * 1000))
inject=(CUDA_INJECTION64_PATH="$lib" WARPSCOPE_CUPTI_LIBRARY="$fake" WARPSCOPE_AGENT_SOCKET="$tmp/absent.sock")

run() {  # label, env...
  local label=$1; shift
  local line
  line=$(env "$@" "$app" --storm-ms "$ms" --storm-threads "$threads" | grep '^storm')
  printf '%-44s %s\n' "$label" "${line#storm }"
}

# CUPTI_BENCH_ONLY_ALL_KERNELS=1 skips the first table.
if [[ ${CUPTI_BENCH_ONLY_ALL_KERNELS:-0} != 1 ]]; then
printf '%-44s %s\n' "configuration" "result (ns_per_launch is wall time x threads / launches)"
run "no injection" X=1
run "injected, WARPSCOPE_CUPTI_ENABLED=0" "${inject[@]}" WARPSCOPE_CUPTI_ENABLED=0
run "injected, defaults (agent absent)" "${inject[@]}"
run "injected, WARPSCOPE_CUPTI_RATE=0" "${inject[@]}" WARPSCOPE_CUPTI_RATE=0
run "every launch captured, backtrace" "${inject[@]}" WARPSCOPE_CUPTI_RATE=1000000 WARPSCOPE_CUPTI_BURST=1000000
run "every launch captured, fp" "${inject[@]}" WARPSCOPE_CUPTI_RATE=1000000 WARPSCOPE_CUPTI_BURST=1000000 WARPSCOPE_CUPTI_UNWINDER=fp

# An agent that accepts and never reads: the library must drop, not block or grow.
python3 - "$tmp/flood.sock" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)
PY
agent_pid=$!
for _ in $(seq 50); do [[ -S $tmp/flood.sock ]] && break; sleep 0.1; done
run "defaults, agent never reads" "${inject[@]}" WARPSCOPE_AGENT_SOCKET="$tmp/flood.sock"
run "every launch captured, agent never reads" "${inject[@]}" WARPSCOPE_AGENT_SOCKET="$tmp/flood.sock" WARPSCOPE_CUPTI_RATE=1000000 WARPSCOPE_CUPTI_BURST=1000000
kill $agent_pid 2>/dev/null || true
agent_pid=
fi

echo
echo "all kernels: a kernel record per launch, launch work $work, ${secs}s, $threads thread(s), flush ${flush_ms} ms"
printf '%-34s %10s %10s %14s %10s %13s %10s %14s\n' configuration launches kernels/s cpu_ns/launch added_ns bytes/kernel activity% "lost rec/bytes"
base_cpu=
allk() {  # label, env...
  local label=$1; shift
  "$counter" "$tmp/count.sock" 600 > "$tmp/wire" &
  local cpid=$!
  for _ in $(seq 50); do [[ -S $tmp/count.sock ]] && break; sleep 0.1; done
  local TIMEFORMAT='%3U %3S'
  { time env "$@" WARPSCOPE_AGENT_SOCKET="$tmp/count.sock" "$app" --storm-ms "$ms" \
      --storm-threads "$threads" --storm-record-every 1 --storm-launch-work "$work" \
      --records-per-buffer 8192 > "$tmp/out"; } 2> "$tmp/time"
  if [[ $label == "no injection" ]]; then
    kill $cpid 2>/dev/null || true
    echo "wire bytes=0 kernel_activity=0" > "$tmp/wire"
  fi
  wait $cpid 2>/dev/null || true
  local cpu_s
  cpu_s=$(awk '{print $1 + $2}' "$tmp/time")
  local storm wire
  storm=$(grep '^storm' "$tmp/out")
  wire=$(cat "$tmp/wire")
  local launches kernels bytes activities lost_records lost_bytes
  launches=$(sed -E 's/.*launches=([0-9]+).*/\1/' <<<"$storm")
  kernels=$(sed -E 's/.* kernels=([0-9]+).*/\1/' <<<"$storm")
  bytes=$(sed -E 's/.*wire bytes=([0-9]+).*/\1/' <<<"$wire")
  activities=$(sed -E 's/.*kernel_activity=([0-9]+).*/\1/' <<<"$wire")
  lost_records=$(grep -oE 'cupti_dropped=[0-9]+' <<<"$wire" | cut -d= -f2 || true)
  lost_bytes=$(grep -oE 'bytes_dropped=[0-9]+' <<<"$wire" | cut -d= -f2 || true)
  local cpu_ns
  cpu_ns=$(awk -v c="$cpu_s" -v l="$launches" 'BEGIN { printf "%.0f", c * 1e9 / l }')
  [[ -z $base_cpu ]] && base_cpu=$cpu_ns
  awk -v label="$label" -v l="$launches" -v k="$kernels" -v s="$secs" -v c="$cpu_ns" \
      -v b0="$base_cpu" -v by="$bytes" -v a="$activities" -v lr="${lost_records:-0}" \
      -v lb="${lost_bytes:-0}" 'BEGIN {
    printf "%-34s %10d %10.0f %14d %10d %13.2f %10.2f %14s\n", label, l, k / s, c, c - b0,
           (k > 0 ? by / k : 0), (k > 0 ? 100 * a / k : 0), lr "/" lb }'
}
inj=(CUDA_INJECTION64_PATH="$lib" WARPSCOPE_CUPTI_LIBRARY="$fake" WARPSCOPE_CUPTI_FLUSH_MS="$flush_ms")
allk "no injection" X=1
allk "injected, collection off" "${inj[@]}" WARPSCOPE_CUPTI_ENABLED=0
allk "sampled (defaults)" "${inj[@]}"
allk "all kernels, always" "${inj[@]}" WARPSCOPE_CUPTI_KERNELS=all
allk "all kernels 100 ms every 1 s" "${inj[@]}" WARPSCOPE_CUPTI_ALL_KERNELS_WINDOW_MS=100 WARPSCOPE_CUPTI_ALL_KERNELS_INTERVAL_MS=1000
allk "all kernels 200 ms every 10 s" "${inj[@]}" WARPSCOPE_CUPTI_ALL_KERNELS_WINDOW_MS=200 WARPSCOPE_CUPTI_ALL_KERNELS_INTERVAL_MS=10000
