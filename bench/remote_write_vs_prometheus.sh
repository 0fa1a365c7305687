#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Ingest throughput side by side: the same Prometheus remote-write requests (built once by
# remote_write_load: dcgm-like series from HOSTS hosts x 8 GPUs x 20 metrics, SAMPLES samples
# each) go to `warpscope server` (/api/v1/write) and to Prometheus 2.42's own remote-write
# receiver (--web.enable-remote-write-receiver), one after the other on this machine, ROUNDS
# times each, alternating. Each receiver starts fresh (empty data dir) for each round.
# Reported per receiver: wall throughput (samples/s) and the receiver's own CPU per sample
# (utime + stime of its process over the run); then the ratios warpscope / Prometheus.
# Every sample must be acknowledged (2xx) and be counted by the receiver's own metrics
# (warpscope_server_series_windows_total, prometheus_tsdb_head_samples_appended_total).
# Bytes on disk, per sample sent: the receiver's data dir right after the run (WAL and head
# included). When the samples span at least 4 h (SAMPLES >= 1440 at the 10 s step), the
# receivers are then left running (up to COMPACT_WAIT seconds, default 240) until each has
# compacted what it can: warpscope's Compact has moved every closed 2 h span into sample_chunks
# and its minute rollups into rollup_1m_chunks (and no row is left below its chunk watermark),
# Prometheus has cut its head into a block. Then
# reported: the compressed store per sample it holds (warpscope: sample_chunks with its index,
# from SQLite's dbstat; Prometheus: its blocks' files over their meta.json numSamples), and the
# whole data dir per sample sent after a clean shutdown.
#   bench/remote_write_vs_prometheus.sh [HOSTS] [SAMPLES] [CONNECTIONS] [ROUNDS]   e.g. 64 60 4 3
#   bench/remote_write_vs_prometheus.sh 8 1500 4 1     # 4 h 10 min of samples: bytes compacted
# Set BUILD_DIR to use another build than build/release.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
hosts="${1:-64}"
samples="${2:-60}"
connections="${3:-4}"
rounds="${4:-3}"
build="${BUILD_DIR:-$root/build/release}"
server_bin="$build/bin/warpscope"
load_bin="$build/bin/remote_write_load"
for bin in "$server_bin" "$load_bin"; do
  [[ -x "$bin" ]] || {
    echo "missing $bin; build first: cmake --preset release &&" \
      "cmake --build --preset release --target warpscope remote_write_load" >&2
    exit 1
  }
done
command -v prometheus >/dev/null || { echo "prometheus not found: scripts/setup.sh --test" >&2; exit 1; }
compact=0
if ((samples >= 1440)); then
  compact=1
  command -v sqlite3 >/dev/null || { echo "sqlite3 not found (apt-get install sqlite3)" >&2; exit 1; }
fi
compact_wait="${COMPACT_WAIT:-240}"

work="$(mktemp -d "${TMPDIR:-/tmp}/warpscope-rw-bench.XXXXXX")"
peer_pid=""
cleanup() {
  [[ -n "$peer_pid" ]] && kill "$peer_pid" 2>/dev/null || true
  [[ -n "$peer_pid" ]] && wait "$peer_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime
ticks=$(getconf CLK_TCK)

wait_ready() {  # URL LOG
  for _ in $(seq 200); do
    curl -sf "$1" >/dev/null 2>&1 && return 0
    kill -0 "$peer_pid" 2>/dev/null || { cat "$2" >&2; return 1; }
    sleep 0.1
  done
  echo "not ready after 20 s: $1" >&2
  return 1
}

dir_bytes() { du -s -B1 --apparent-size "$1" | cut -f1; }

# warpscope, running: "bytes windows" of sample_chunks (table + index) once Compact has moved
# every closed span and left nothing of the head (and no minute rollup row) below the chunk
# watermark; "0 0" if it has not in time.
warpscope_chunks() {  # DB END_MS
  local db="file:$1?mode=ro" expected=$(( ($2 - 180000) / 7200000 * 7200000 ))
  for _ in $(seq $((compact_wait / 2))); do
    local wm left
    wm=$(sqlite3 "$db" "SELECT value FROM meta WHERE key = 'chunk_watermark_ms'" 2>/dev/null || true)
    if [[ -n "$wm" ]] && ((wm >= expected)); then
      left=$(sqlite3 "$db" "SELECT (SELECT COUNT(*) FROM head_chunks WHERE start_ms < $wm) + \
        (SELECT COUNT(*) FROM samples WHERE start_ms < $wm) + \
        (SELECT COUNT(*) FROM rollup_1m WHERE bucket_ms < $wm)" 2>/dev/null || echo 1)
      if [[ "$left" == 0 ]]; then
        sqlite3 -separator ' ' "$db" "SELECT (SELECT SUM(pgsize) FROM dbstat WHERE name IN \
          ('sample_chunks', 'sample_chunks_by_series')), (SELECT SUM(count) FROM sample_chunks)"
        return
      fi
    fi
    sleep 2
  done
  echo "0 0"
}

# Prometheus, running: "bytes samples" of its blocks once the head has been compacted into one.
prometheus_blocks() {  # DATA_DIR
  for _ in $(seq $((compact_wait / 2))); do
    if compgen -G "$1/01*/meta.json" >/dev/null; then
      python3 - "$1" <<'PY'
import json, os, sys
size = samples = 0
for block in os.listdir(sys.argv[1]):
    meta = os.path.join(sys.argv[1], block, "meta.json")
    if not os.path.exists(meta):
        continue
    samples += json.load(open(meta))["stats"]["numSamples"]
    for d, _, files in os.walk(os.path.join(sys.argv[1], block)):
        size += sum(os.path.getsize(os.path.join(d, f)) for f in files)
print(size, samples)
PY
      return
    fi
    sleep 2
  done
  echo "0 0"
}

# Prints "samples_per_s cpu_us_per_sample stored total bytes_after_run compact_bytes
# compact_samples bytes_after_stop" for one run against a fresh receiver.
run_one() {  # warpscope|prometheus ROUND
  local kind="$1" dir="$work/$1-$2" port
  mkdir -p "$dir"
  port=$(free_port)
  if [[ "$kind" == warpscope ]]; then
    "$server_bin" server --listen-address="127.0.0.1:$port" --data-dir="$dir/db" \
      2>"$dir/log" &
    peer_pid=$!
    wait_ready "http://127.0.0.1:$port/readyz" "$dir/log"
  else
    printf 'global:\n  scrape_interval: 1h\n' >"$dir/prometheus.yml"
    prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/db" \
      --web.listen-address="127.0.0.1:$port" --web.enable-remote-write-receiver \
      2>"$dir/log" &
    peer_pid=$!
    wait_ready "http://127.0.0.1:$port/-/ready" "$dir/log"
  fi
  local cpu0 cpu1 end_ms
  end_ms=$(($(date +%s%3N)))
  cpu0=$(cpu_ticks "$peer_pid")
  # run_one runs in a subshell (process substitution), where the EXIT trap does not see peer_pid:
  # a failed load stops its receiver here.
  timeout 600 "$load_bin" --url="http://127.0.0.1:$port/api/v1/write" --hosts="$hosts" \
    --samples="$samples" --connections="$connections" >"$dir/load.out" 2>&1 ||
    { cat "$dir/load.out" >&2; kill "$peer_pid"; wait "$peer_pid" 2>/dev/null; return 1; }
  cpu1=$(cpu_ticks "$peer_pid")
  local stored
  if [[ "$kind" == warpscope ]]; then
    stored=$(curl -sf "http://127.0.0.1:$port/metrics" |
      awk '$1 == "warpscope_server_series_windows_total" {print $2}')
  else
    stored=$(curl -sf "http://127.0.0.1:$port/metrics" |
      awk '$1 ~ /^prometheus_tsdb_head_samples_appended_total({|$)/ {s += $2} END {print s}')
  fi
  local after_run compacted="0 0" after_stop
  after_run=$(dir_bytes "$dir/db")
  if ((compact)); then
    if [[ "$kind" == warpscope ]]; then
      compacted=$(warpscope_chunks "$dir/db/warpscope.db" "$end_ms")
    else
      compacted=$(prometheus_blocks "$dir/db")
    fi
  fi
  kill "$peer_pid"
  wait "$peer_pid" 2>/dev/null || true
  peer_pid=""
  after_stop=$(dir_bytes "$dir/db")
  local result total rate
  result=$(grep '^RESULT' "$dir/load.out")
  total=$(sed -E 's/.* samples=([0-9]+).*/\1/' <<<"$result")
  rate=$(sed -E 's/.*samples_per_s=([0-9.]+).*/\1/' <<<"$result")
  awk -v r="$rate" -v c=$((cpu1 - cpu0)) -v t="$ticks" -v n="$total" -v s="$stored" \
    -v a="$after_run" -v k="$compacted" -v z="$after_stop" \
    'BEGIN {split(k, kk, " "); printf "%.0f %.3f %.0f %d %d %d %d %d\n", r, c / t * 1e6 / n, s, n, a, kk[1], kk[2], z}'
}

per_sample() {  # BYTES SAMPLES
  awk -v b="$1" -v n="$2" 'BEGIN {if (n > 0) printf "%.2f B", b / n; else printf "–"}'
}

declare -A rate_sum cpu_sum
rate_sum=([warpscope]=0 [prometheus]=0)
cpu_sum=([warpscope]=0 [prometheus]=0)
echo "| round | receiver | samples/s (wall) | receiver CPU per sample | samples stored / sent | disk after the run, per sample | compressed store, per sample it holds | data dir after compaction and shutdown, per sample |"
echo "|---|---|---|---|---|---|---|---|"
for round in $(seq "$rounds"); do
  for kind in warpscope prometheus; do
    read -r rate cpu stored total after_run kbytes ksamples after_stop < <(run_one "$kind" "$round")
    compacted="–"
    if ((compact)); then
      compacted="$(per_sample "$kbytes" "$ksamples") ($ksamples samples)"
    fi
    printf '| %d | %s | %s | %s µs | %s / %s | %s | %s | %s |\n' "$round" "$kind" "$rate" "$cpu" \
      "$stored" "$total" "$(per_sample "$after_run" "$total")" "$compacted" \
      "$( ((compact)) && per_sample "$after_stop" "$total" || echo "–")"
    if [[ "$stored" != "$total" ]]; then
      echo "$kind stored $stored of $total samples" >&2
      exit 1
    fi
    rate_sum[$kind]=$(awk -v a="${rate_sum[$kind]}" -v b="$rate" 'BEGIN {print a + b}')
    cpu_sum[$kind]=$(awk -v a="${cpu_sum[$kind]}" -v b="$cpu" 'BEGIN {print a + b}')
  done
done
awk -v rw="${rate_sum[warpscope]}" -v rp="${rate_sum[prometheus]}" \
  -v cw="${cpu_sum[warpscope]}" -v cp="${cpu_sum[prometheus]}" -v n="$rounds" 'BEGIN {
  printf "\nmean over %d rounds: warpscope %.0f samples/s, %.3f µs CPU/sample; prometheus %.0f samples/s, %.3f µs CPU/sample\n", n, rw / n, cw / n, rp / n, cp / n
  printf "ratio warpscope / prometheus: throughput %.2fx, CPU efficiency (samples per CPU-second) %.2fx\n", rw / rp, cp / cw
}'
