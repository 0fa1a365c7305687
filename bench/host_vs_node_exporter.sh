#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Host-metrics cost side by side: node_exporter (cpu, meminfo, loadavg, netdev, diskstats
# collectors) against `warpscope agent --enable-host-metrics` on the same machine, each producing
# and serving the same kind of data once per second for N seconds. Reports CPU time per
# collection (utime+stime from /proc/<pid>/stat) and the ratio.
#   bench/host_vs_node_exporter.sh [SECONDS] [TOP_PROCESSES]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
top="${2:-0}"
bin="$root/build/release/bin/warpscope"
[[ -x "$bin" ]] || { echo "build first: cmake --preset release && cmake --build --preset release" >&2; exit 1; }
ne=/usr/bin/prometheus-node-exporter
[[ -x "$ne" ]] || { echo "install prometheus-node-exporter (scripts/setup.sh --test)" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

ne_port=$(free_port)
"$ne" --web.listen-address="127.0.0.1:$ne_port" --collector.disable-defaults --collector.cpu \
  --collector.meminfo --collector.loadavg --collector.netdev --collector.diskstats \
  --collector.netdev.device-exclude='^(lo|veth.*)$' >/dev/null 2>&1 &
ne_pid=$!
ws_port=$(free_port)
"$bin" agent --collect-metrics-interval=1s --export-metrics-interval=1m \
  --listen-address="127.0.0.1:$ws_port" --top-processes="$top" --log-level=warning &
ws_pid=$!
trap 'kill $ne_pid $ws_pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  curl -sf "127.0.0.1:$ne_port/metrics" >/dev/null && curl -sf "127.0.0.1:$ws_port/metrics" >/dev/null && break
  sleep 0.1
done

ne0=$(ticks $ne_pid); ws0=$(ticks $ws_pid)
ne_bytes=0; ws_bytes=0
for _ in $(seq "$seconds"); do
  # node_exporter collects on scrape; warpscope collects on its own 1s timer and serves the
  # rendered cycle. Both are scraped once per second, as Prometheus would.
  ne_bytes=$(curl -s "127.0.0.1:$ne_port/metrics" | wc -c)
  ws_bytes=$(curl -s "127.0.0.1:$ws_port/metrics" | wc -c)
  sleep 1
done
ne1=$(ticks $ne_pid); ws1=$(ticks $ws_pid)
python3 - "$ne0" "$ne1" "$ws0" "$ws1" "$hz" "$seconds" "$ne_bytes" "$ws_bytes" "$top" <<'PY'
import sys
ne0, ne1, ws0, ws1, hz, n, neb, wsb, top = map(float, sys.argv[1:])
ne = (ne1 - ne0) / hz / n * 1000
ws = (ws1 - ws0) / hz / n * 1000
print(f"node_exporter : {ne:.3f} ms CPU per scrape ({int(neb)} bytes exposition)")
print(f"warpscope     : {ws:.3f} ms CPU per cycle+scrape ({int(wsb)} bytes, top-processes={int(top)})")
print(f"ratio warpscope/node_exporter = {ws/ne:.2f}" if ne > 0 else "node_exporter used no measurable CPU")
PY
