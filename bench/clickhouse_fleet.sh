#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A fleet on ClickHouse (docs/benchmarks.md, "A fleet on ClickHouse"): starts one
# clickhouse-server (Debian's package; private config and data dir, loopback, a password) and
# SERVERS `warpscope server --storage clickhouse://…` in front of it, then runs one
# server_load_agents per server, AGENTS in all (each pushes an 8-GPU window of ~1,300 series
# every INTERVAL through the real ServerExporter) for SECONDS. Reported: windows and
# series-windows per second acknowledged, failures, the CPU and peak RSS of each server and of
# ClickHouse, rows and bytes on disk per table (system.parts), bytes per series-window and per
# value, and the latency of the API requests behind the UI's pages (fleet, a host's summary, the
# GPU tab's batch of range queries, top-N, entities), each the median of 5, against every
# server. With HISTORY (e.g. 1h), every agent first sends its GPU series of that long before the
# run, a window every 2 minutes (server_load_agents --history), so that the pages read a full
# hour; the run's figures then count only the run. The history arrives behind the rollups, so
# after the requests the script waits for the servers' Compact to catch up (the minute watermark
# within 4 minutes of now) and measures the requests again, on the rollups.
#   bench/clickhouse_fleet.sh [AGENTS] [SECONDS] [INTERVAL] [SERVERS] [HISTORY]
#   e.g. 1000 120 10s 2, or 1000 120 10s 2 1h
# Set BUILD_DIR to use another build than build/release; WARPSCOPE_CLICKHOUSE_SERVER to use
# another clickhouse-server binary.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
agents="${1:-1000}"
seconds="${2:-120}"
interval="${3:-10s}"
servers="${4:-2}"
history="${5:-0s}"
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
ch_bin="${WARPSCOPE_CLICKHOUSE_SERVER:-$(command -v clickhouse-server || echo /usr/sbin/clickhouse-server)}"
[[ -x "$ch_bin" ]] || { echo "clickhouse-server not found: scripts/setup.sh --test installs it" >&2; exit 1; }
((servers >= 1 && agents >= servers)) || { echo "need 1 <= SERVERS <= AGENTS" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/warpscope-ch-fleet.XXXXXX")"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime
status_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
ticks=$(getconf CLK_TCK)
wait_url() {  # URL PID LOG
  for _ in $(seq 300); do
    curl -sf "$1" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || { cat "$3" >&2; return 1; }
    sleep 0.1
  done
  echo "not ready after 30 s: $1" >&2
  return 1
}

# ClickHouse: loopback only, the same keys 18.16 and current releases read.
ch_http=$(free_port)
ch_tcp=$(free_port)
password="bench-$$"
mkdir -p "$work/ch/data" "$work/ch/tmp" "$work/ch/user_files"
cat >"$work/ch/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$work/ch/server.log</log><errorlog>$work/ch/server.err.log</errorlog></logger>
  <http_port>$ch_http</http_port><tcp_port>$ch_tcp</tcp_port><listen_host>127.0.0.1</listen_host>
  <path>$work/ch/data/</path><tmp_path>$work/ch/tmp/</tmp_path>
  <user_files_path>$work/ch/user_files/</user_files_path>
  <mark_cache_size>268435456</mark_cache_size>
  <users_config>$work/ch/users.xml</users_config>
  <default_profile>default</default_profile><default_database>default</default_database>
</yandex>
EOF
cat >"$work/ch/users.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <users><default><password>$password</password><networks><ip>127.0.0.1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
EOF
printf '%s\n' "$password" >"$work/password"
chmod 600 "$work/password"
"$ch_bin" --config-file="$work/ch/config.xml" >"$work/ch/stdout.log" 2>&1 &
ch_pid=$!
pids+=("$ch_pid")
wait_url "http://127.0.0.1:$ch_http/ping" "$ch_pid" "$work/ch/stdout.log"
ch_query() {  # SQL -> TSV
  curl -sf -u "default:$password" "http://127.0.0.1:$ch_http/" --data-binary "$1"
}

ports=()
server_pids=()
for ((i = 0; i < servers; i++)); do
  port=$(free_port)
  "$server_bin" server --listen-address="127.0.0.1:$port" --data-dir="$work/server$i" \
    --storage="clickhouse://127.0.0.1:$ch_http/warpscope" \
    --storage-password-file="$work/password" 2>"$work/server$i.log" &
  server_pids+=($!)
  pids+=($!)
  ports+=("$port")
  wait_url "http://127.0.0.1:$port/readyz" "$!" "$work/server$i.log"
done

all_pids=("${server_pids[@]}" "$ch_pid")
declare -A cpu0 rss_max
for p in "${all_pids[@]}"; do
  cpu0[$p]=$(cpu_ticks "$p")
  rss_max[$p]=0
done
load_pids=()
for ((i = 0; i < servers; i++)); do
  n=$((agents / servers + (i < agents % servers ? 1 : 0)))
  timeout $((seconds + 90 + 1800)) "$load_bin" --server="http://127.0.0.1:${ports[$i]}" --agents="$n" \
    --interval="$interval" --duration="${seconds}s" --drain-timeout=60s \
    --history="$history" --history-interval=120s >"$work/load$i.out" 2>&1 &
  load_pids+=($!)
  pids+=($!)
done
if [[ "$history" != 0s ]]; then  # the run starts once each generator's history is acknowledged
  for ((i = 0; i < servers; i++)); do
    until grep -q '^history: ' "$work/load$i.out" 2>/dev/null; do
      kill -0 "${load_pids[$i]}" 2>/dev/null || { cat "$work/load$i.out" >&2; exit 1; }
      sleep 1
    done
    grep '^history: ' "$work/load$i.out" | sed "s/^/  generator $i /"
  done
  for p in "${all_pids[@]}"; do cpu0[$p]=$(cpu_ticks "$p"); done
fi
t_start=$(date +%s.%N)
running=1
while ((running)); do
  running=0
  for lp in "${load_pids[@]}"; do kill -0 "$lp" 2>/dev/null && running=1; done
  for p in "${all_pids[@]}"; do
    rss=$(status_kib "$p" VmRSS)
    ((rss > rss_max[$p])) && rss_max[$p]=$rss
  done
  ((running)) && sleep 1
done
load_rc=0
for lp in "${load_pids[@]}"; do wait "$lp" || load_rc=$?; done
t_end=$(date +%s.%N)
declare -A cpu1
for p in "${all_pids[@]}"; do cpu1[$p]=$(cpu_ticks "$p"); done

wall=$(awk -v a="$t_start" -v b="$t_end" 'BEGIN {printf "%.1f", b - a}')
echo "ClickHouse fleet: $agents agents over $servers servers, one window per agent every" \
  "$interval, $seconds s pushing ($wall s measured until every agent drained)"
wps=0
swps=0
failures=0
for ((i = 0; i < servers; i++)); do
  result=$(grep '^RESULT ' "$work/load$i.out" || true)
  [[ -n "$result" ]] || { echo "generator $i failed" >&2; cat "$work/load$i.out" "$work/server$i.log" >&2; exit 1; }
  field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$result"; }
  wps=$(awk -v a="$wps" -v b="$(field windows_per_s)" 'BEGIN {print a + b}')
  swps=$(awk -v a="$swps" -v b="$(field series_windows_per_s)" 'BEGIN {print a + b}')
  failures=$((failures + $(field failures)))
done
printf '  ingest: %.1f windows/s, %.0f series-windows/s acknowledged, %d failed pushes\n' \
  "$wps" "$swps" "$failures"
for ((i = 0; i < servers; i++)); do
  p=${server_pids[$i]}
  awk -v n="$i" -v c="$(((cpu1[$p] - cpu0[$p])))" -v t="$ticks" -v w="$wall" -v r="${rss_max[$p]}" \
    'BEGIN {printf "  server %d: CPU %.1f s = %.1f%% of one core, peak RSS %.1f MiB\n", n, c / t, 100 * c / t / w, r / 1024}'
done
awk -v c="$(((cpu1[$ch_pid] - cpu0[$ch_pid])))" -v t="$ticks" -v w="$wall" -v r="${rss_max[$ch_pid]}" \
  'BEGIN {printf "  clickhouse: CPU %.1f s = %.1f%% of one core, peak RSS %.1f MiB\n", c / t, 100 * c / t / w, r / 1024}'
if ((failures > 0)); then
  echo "  why pushes failed (the agents' own log lines, most frequent first):"
  cat "$work"/load*.out | grep -v '^history: ' | grep -iE 'fail|error|503|refus|timed out' | sed -E 's/[0-9]+/N/g' |
    sort | uniq -c | sort -rn | head -5 | sed 's/^/    /'
fi

# Bytes per table once ClickHouse has merged what it will (OPTIMIZE FINAL: as the store looks
# after its background merges; ReplacingMergeTree keeps one row per key).
for t in $(ch_query "SELECT name FROM system.tables WHERE database = 'warpscope' AND engine LIKE '%MergeTree' FORMAT TSV"); do
  ch_query "OPTIMIZE TABLE warpscope.$t FINAL" >/dev/null || true
done
echo "  tables (active parts):"
ch_query "SELECT table, sum(rows), sum(bytes_on_disk) FROM system.parts WHERE database = 'warpscope' AND active GROUP BY table ORDER BY sum(bytes_on_disk) DESC FORMAT TSV" |
  awk -F'\t' '{printf "    %-24s %12d rows %10.1f MiB\n", $1, $2, $3 / 1048576}'
stored=$(ch_query "SELECT count() FROM warpscope.samples FINAL FORMAT TSV" 2>/dev/null || echo 0)
all_bytes=$(ch_query "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'warpscope' AND active FORMAT TSV")
sample_bytes=$(ch_query "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'warpscope' AND active AND table = 'samples' FORMAT TSV")
awk -v s="$stored" -v a="$all_bytes" -v b="$sample_bytes" 'BEGIN {
  if (s > 0) printf "  bytes: samples table %.1f B per series-window (%.1f B per value of 5); whole database %.1f B per series-window; %d series-windows stored\n", b / s, b / s / 5, a / s, s }'

# The UI's pages, against each server: the median of 5 of each request.
now=$(date +%s)
host=$(curl -sf "http://127.0.0.1:${ports[0]}/api/v1/entities?kind=host&limit=1" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["entities"][0]["id"])')
batch=$(python3 - "$host" <<'EOF'
import json, sys
host = sys.argv[1]
metrics = ["gpu.utilization", "gpu.memory.used", "gpu.power.usage", "gpu.temperature"]
print(json.dumps({"queries": [{"path": "query_range", "params": {"metric": m, "host": host}}
                              for m in metrics]}))
EOF
)
time_ms() {  # URL [POST BODY]
  local times=()
  for _ in 1 2 3 4 5; do
    if [[ $# -gt 1 ]]; then
      times+=("$(curl -sf -o /dev/null -w '%{time_total}' -H 'Content-Type: application/json' --data-binary "$2" "$1")")
    else
      times+=("$(curl -sf -o /dev/null -w '%{time_total}' "$1")")
    fi
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n 3p | awk '{printf "%.0f", $1 * 1000}'
}
echo "  UI requests, median of 5 (ms), per server:"
for ((i = 0; i < servers; i++)); do
  base="http://127.0.0.1:${ports[$i]}/api/v1"
  printf '    server %d: fleet %s, host summary %s, GPU tab batch (4 range queries) %s, top-10 GPU utilization %s, hosts list %s\n' "$i" \
    "$(time_ms "$base/fleet")" "$(time_ms "$base/summary?host=$host")" \
    "$(time_ms "$base/query_batch" "$batch")" \
    "$(time_ms "$base/top?metric=gpu.utilization&limit=10&sparkline=60")" \
    "$(time_ms "$base/entities?kind=host&limit=1000")"
done
if [[ "$history" != 0s ]]; then
  t0=$(date +%s)
  mark() { ch_query "SELECT argMax(value, ver) FROM warpscope.marks WHERE name = '$1' FORMAT TSV"; }
  for _ in $(seq 120); do
    m=$(mark minute_watermark)
    [[ -n "$m" ]] && (($(date +%s) - m / 1000 < 240)) && break
    sleep 10
  done
  echo "  rollups: minute watermark $(($(date +%s) - ${m:-0} / 1000)) s behind now," \
    "$(($(date +%s) - t0)) s after the requests above"
  base="http://127.0.0.1:${ports[0]}/api/v1"
  for round in 1 2 3; do
    printf '    server 0 on the rollups, round %d: fleet %s, host summary %s, GPU tab batch %s, top-10 %s, hosts list %s\n' \
      "$round" "$(time_ms "$base/fleet")" "$(time_ms "$base/summary?host=$host")" \
      "$(time_ms "$base/query_batch" "$batch")" \
      "$(time_ms "$base/top?metric=gpu.utilization&limit=10&sparkline=60")" \
      "$(time_ms "$base/entities?kind=host&limit=1000")"
  done
fi
exit "$load_rc"
