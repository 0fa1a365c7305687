#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Server RSS and CPU under steady ingest from simulated agents (PRODUCT.md §4): starts
# `warpscope server` on 127.0.0.1 (free port, temporary data dir), runs server_load_agents
# against it (each agent pushes an 8-GPU window of ~1,300 series every INTERVAL through the real
# ServerExporter) for SECONDS, and reports the server's CPU and memory over that run.
#   bench/server_load.sh [AGENTS] [SECONDS] [INTERVAL]      e.g. 64 60 10s, or 64 60 1s (10x)
# Set BUILD_DIR to use another build than build/release.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
agents="${1:-64}"
seconds="${2:-60}"
interval="${3:-10s}"
build="${BUILD_DIR:-$root/build/release}"
server_bin="$build/bin/warpscope"
load_bin="$build/bin/server_load_agents"
for bin in "$server_bin" "$load_bin"; do
  [[ -x "$bin" ]] || {
    echo "missing $bin; build first: cmake --preset release &&" \
      "cmake --build --preset release --target warpscope server_load_agents" >&2
    exit 1
  }
done

data_dir="$(mktemp -d "${TMPDIR:-/tmp}/warpscope-server-load.XXXXXX")"
server_pid=""
load_pid=""
cleanup() {
  [[ -n "$load_pid" ]] && kill "$load_pid" 2>/dev/null || true
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null || true
  [[ -n "$server_pid" ]] && wait "$server_pid" 2>/dev/null || true
  rm -rf "$data_dir"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$server_bin" server --listen-address="127.0.0.1:$port" --data-dir="$data_dir/db" \
  2>"$data_dir/server.log" &
server_pid=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$data_dir/server.log" >&2; exit 1; }
  sleep 0.1
done
curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || { echo "server not ready after 10 s" >&2; exit 1; }

ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime
status_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
rss_start=$(status_kib "$server_pid" VmRSS)
cpu_start=$(cpu_ticks "$server_pid")
t_start=$(date +%s.%N)

# The generator stops pushing after SECONDS and then has up to 30 s to drain; `timeout` bounds
# it in case the server stops answering.
timeout $((seconds + 60)) "$load_bin" --server="http://127.0.0.1:$port" --agents="$agents" \
  --interval="$interval" --duration="${seconds}s" --drain-timeout=30s >"$data_dir/load.out" 2>&1 &
load_pid=$!
rss_max=0
rss_trace=()  # VmRSS once a second, to tell a plateau from growth
while kill -0 "$load_pid" 2>/dev/null; do
  rss=$(status_kib "$server_pid" VmRSS)
  rss_trace+=("$rss")
  ((rss > rss_max)) && rss_max=$rss
  sleep 1
done
load_rc=0
wait "$load_pid" || load_rc=$?
load_pid=""

cpu_end=$(cpu_ticks "$server_pid")
t_end=$(date +%s.%N)
rss_end=$(status_kib "$server_pid" VmRSS)
hwm=$(status_kib "$server_pid" VmHWM)
db_bytes=$(du -sb "$data_dir/db" | awk '{print $1}')
server_series=$(curl -s "http://127.0.0.1:$port/metrics" |
  awk '$1 == "warpscope_server_series_windows_total" {print $2}')

cat "$data_dir/load.out"
result=$(grep '^RESULT ' "$data_dir/load.out" || true)
[[ -n "$result" ]] || { echo "generator failed (exit $load_rc)" >&2; cat "$data_dir/server.log" >&2; exit 1; }
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$result"; }

awk -v agents="$agents" -v interval="$interval" -v seconds="$seconds" \
  -v wps="$(field windows_per_s)" -v swps="$(field series_windows_per_s)" \
  -v failures="$(field failures)" -v gen_cpu="$(field generator_cpu_s)" \
  -v ticks="$ticks" -v c0="$cpu_start" -v c1="$cpu_end" -v t0="$t_start" -v t1="$t_end" \
  -v rss0="$rss_start" -v rss1="$rss_end" -v rssmax="$rss_max" -v hwm="$hwm" \
  -v db="$db_bytes" -v stored="${server_series:-?}" -v trace="${rss_trace[*]:-0}" 'BEGIN {
  wall = t1 - t0; cpu = (c1 - c0) / ticks
  printf "\nwarpscope server, %d agents, one window per agent every %s, %d s pushing (%.1f s measured)\n",
         agents, interval, seconds, wall
  printf "  ingest:        %.2f windows/s, %.0f series-windows/s (server stored %s series-windows), failures %s\n",
         wps, swps, stored, failures
  printf "  server CPU:    %.2f s = %.1f%% of one core\n", cpu, 100 * cpu / wall
  printf "  server RSS:    %.1f MiB at start, %.1f MiB at end (max sampled %.1f MiB), peak VmHWM %.1f MiB\n",
         rss0 / 1024, rss1 / 1024, rssmax / 1024, hwm / 1024
  n = split(trace, r, " ")
  printf "  RSS over run:  %.1f / %.1f / %.1f / %.1f MiB at 25 / 50 / 75 / 100%%\n",
         r[int(n / 4) + 1] / 1024, r[int(n / 2) + 1] / 1024, r[int(3 * n / 4) + 1] / 1024, r[n] / 1024
  printf "  database:      %.1f MiB on disk (incl. WAL)\n", db / 1048576
  printf "  generator CPU: %.2f s = %.1f%% of one core (encoding + HTTP client, same machine)\n",
         gen_cpu, 100 * gen_cpu / wall
}'
exit "$load_rc"
