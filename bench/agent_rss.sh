#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Resident memory of the agent on a simulated 8xH100 node (GPU + host metrics, 1s cycles) after
# N seconds, next to node_exporter's for scale.
#   bench/agent_rss.sh [SECONDS] [SCENARIO]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-30}"
scenario="${2:-healthy-8xh100}"
bin="$root/build/release/bin/warpscope"
[[ -x "$bin" ]] || { echo "build first: cmake --preset release && cmake --build --preset release" >&2; exit 1; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" agent --simulate "$scenario" --collect-metrics-interval=1s --export-metrics-interval=10s \
  --listen-address="127.0.0.1:$port" --log-level=warning &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq "$seconds"); do curl -s "127.0.0.1:$port/metrics" >/dev/null || true; sleep 1; done
rss=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
hwm=$(awk '/VmHWM/{print $2}' /proc/$pid/status)
series=$(curl -s "127.0.0.1:$port/metrics" | grep -vc '^#')
echo "warpscope agent --simulate $scenario after ${seconds}s: RSS $((rss/1024)) MiB (peak $((hwm/1024)) MiB), $series series on /metrics"
