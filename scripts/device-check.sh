#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU machine check: runs the agent against the real NVIDIA driver and prints, per GPU, which
# metrics were present, absent or failing, with sanity checks. Results go to
# docs/device-results.md (by hand, from this script's output).
#
# The GPU machine has no package registry, so the binary is built here and carried over:
#   scripts/device-check.sh --bundle     # on the dev machine: release build + its shared libs
#   (device tool) run  scripts/device-check.sh   with carry: ["build/release"]
# Without a bundle it tries to build with whatever the GPU machine has.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin="$root/build/release/bin/warpscope"
deps="$root/build/release/lib/deps"

if [[ "${1:-}" == "--bundle" ]]; then
  scripts/setup.sh >&2
  cmake --preset release >/dev/null && cmake --build --preset release -j "$(nproc)" >&2 || exit 1
  mkdir -p "$deps"
  # Copy the non-libc shared libraries the binary needs (the GPU machine may lack them).
  ldd "$bin" | awk '/=> \//{print $3}' | grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux)[.-]' |
    while read -r lib; do cp -L "$lib" "$deps/"; done
  du -sh "$root/build/release" >&2
  exit 0
fi

echo "== machine"
nvidia-smi --query-gpu=index,name,driver_version,memory.total,power.limit --format=csv 2>&1 | head -20
export LD_LIBRARY_PATH="$deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! "$bin" --version >/dev/null 2>&1; then
  echo "== building (no usable bundle)"
  if ! (cmake --preset release >/dev/null && cmake --build --preset release -j "$(nproc)") \
      >/tmp/warpscope-build.log 2>&1; then
    tail -30 /tmp/warpscope-build.log
    echo "RESULT build=failed"
    exit 1
  fi
fi
"$bin" --version

out="${OUT:-/tmp}/device-check"
mkdir -p "$out"
duration="${DEVICE_CHECK_SECONDS:-30}"
port=19400
echo "== agent against the real driver for ${duration}s"
"$bin" agent --enable-gpu-metrics --collect-metrics-interval=1s --export-metrics-interval=5s \
  --listen-address="127.0.0.1:$port" >"$out/agent.log" 2>&1 &
agent_pid=$!
sleep "$duration"
curl -s "http://127.0.0.1:$port/metrics" >"$out/metrics.txt" ||
  python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$port/metrics').read().decode())" >"$out/metrics.txt"
rss_kb=$(awk '/VmRSS/{print $2}' "/proc/$agent_pid/status")
kill -TERM "$agent_pid"; wait "$agent_pid"; rc=$?
"$bin" metrics --format tsv >"$out/catalog.tsv"
head -5 "$out/agent.log"

python3 - "$out/metrics.txt" "$out/catalog.tsv" "$rss_kb" "$rc" <<'PY'
import re, sys, collections
metrics_path, catalog_path, rss_kb, rc = sys.argv[1:5]
line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
label_re = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
per_gpu = collections.defaultdict(dict)
errors = []
for line in open(metrics_path):
    m = line_re.match(line.strip())
    if not m: continue
    name, labels, value = m.group(1), dict(label_re.findall(m.group(3) or "")), float(m.group(4))
    if name == "warpscope_agent_source_errors_total":
        errors.append((labels.get("source"), labels.get("reason"), value))
    if "gpu" in labels and "pid" not in labels and "GPU_I_ID" not in labels:
        per_gpu[labels["gpu"]].setdefault(name, value)
catalog = [l.split("\t") for l in open(catalog_path) if l.startswith("GPU")]
gpu_metrics = sorted({c[1] for c in catalog if not c[1].startswith("warpscope_gpu_process") and not c[1].startswith("warpscope_gpu_executable")})
print("== per GPU: present / absent")
for gpu in sorted(per_gpu, key=int):
    have = per_gpu[gpu]
    present = [n for n in gpu_metrics if n in have]
    absent = [n for n in gpu_metrics if n not in have]
    print(f"GPU {gpu}: {len(present)} present, {len(absent)} absent")
    print("  absent:", " ".join(absent) or "-")
    checks = []
    tot, used, free = have.get("DCGM_FI_DEV_FB_TOTAL"), have.get("DCGM_FI_DEV_FB_USED"), have.get("DCGM_FI_DEV_FB_FREE")
    if tot: checks.append(("memory total MiB", tot, tot > 1000))
    if tot and used is not None and free is not None:
        res = have.get("DCGM_FI_DEV_FB_RESERVED", 0)
        checks.append(("used+free+reserved ~ total", used + free + res, abs(used + free + res - tot) <= 0.01 * tot + 2))
    p, lim = have.get("DCGM_FI_DEV_POWER_USAGE"), have.get("DCGM_FI_DEV_ENFORCED_POWER_LIMIT") or have.get("DCGM_FI_DEV_POWER_MGMT_LIMIT")
    if p is not None and lim: checks.append(("power <= limit (W)", f"{p:.0f}/{lim:.0f}", p <= lim * 1.05))
    t = have.get("DCGM_FI_DEV_GPU_TEMP")
    if t is not None: checks.append(("temperature in 10..100 C", t, 10 <= t <= 100))
    for k in ("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"):
        if k in have: checks.append((k + " in 0..1", have[k], 0 <= have[k] <= 1))
    for name, value, ok in checks:
        print(f"  {'OK  ' if ok else 'FAIL'} {name}: {value}")
print("== source errors (source, reason, count)")
for e in errors: print("  ", *e)
print(f"== agent RSS {int(rss_kb)/1024:.1f} MiB, exit status {rc}")
PY
