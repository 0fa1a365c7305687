#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU machine check: runs the agent against the real NVIDIA driver and prints, per GPU, which
# metrics were present, absent or failing, with sanity checks; then the CUDA kernel profiler:
# libwarpscope_cupti.so injected into a loop of tiny kernels and a small PyTorch training loop,
# timed with and without injection (goal: injected throughput >= 0.97x), with the top kernels and
# their launch sites and a check that the training script's own Python functions sit above its
# kernels; then a short run with PC sampling (stall reasons, or the refusal notice where profiling
# is restricted to admins), the training loop under torch.profiler next to the library, and a
# torch.distributed (NCCL) job with libwarpscope_nccl.so: plugin table, collectives, NVTX steps.
# Results go to docs/device-results.md (by hand, from this script's output).
#
# The GPU machine has no package registry, so the binary is built here and carried over:
#   scripts/device-check.sh --bundle     # on the dev machine: release build + its shared libs
#   (device tool) run  scripts/device-check.sh   with carry: ["build/release/bin", "build/release/lib"]
# Without a bundle it tries to build with whatever the GPU machine has.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin="$root/build/release/bin/warpscope"
deps="$root/build/release/lib/deps"

if [[ "${1:-}" == "--bundle" ]]; then
  scripts/setup.sh >&2
  cmake --preset release >/dev/null &&
    cmake --build --preset release -j "$(nproc)" --target warpscope warpscope_cupti warpscope_nccl >&2 ||
    exit 1
  mkdir -p "$deps"
  # Copy the non-libc shared libraries the binary needs (the GPU machine may lack them).
  ldd "$bin" | awk '/=> \//{print $3}' | grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux)[.-]' |
    while read -r lib; do cp -L "$lib" "$deps/"; done
  du -sh "$root/build/release/bin" "$root/build/release/lib" >&2
  exit 0
fi

# The bundled libraries serve our binary alone: the workloads (PyTorch) keep the machine's own
# libstdc++. The driver's folder is added for NVML where the loader's cache lacks it.
driver_libs=""
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu/nvidia; do
  [[ -d "$d" ]] && driver_libs="$driver_libs:$d"
done
# (env execs the binary, so `"${ws[@]}" agent &` leaves the agent's own pid in $!)
ws=(env "LD_LIBRARY_PATH=$deps$driver_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bin")
section() { echo "== $* ($(date +%T))"; }

section machine
nvidia-smi --query-gpu=index,name,driver_version,memory.total,power.limit --format=csv 2>&1 | head -20
uname -r; grep PRETTY_NAME /etc/os-release; ldconfig -p | grep -E 'libnvidia-ml|libcuda\.so' | head -3
if ! "${ws[@]}" --version >/dev/null 2>&1; then
  "${ws[@]}" --version 2>&1 | head -3
  echo "== building (no usable bundle)"
  if ! (cmake --preset release >/dev/null && cmake --build --preset release -j "$(nproc)") \
      >/tmp/warpscope-build.log 2>&1; then
    tail -30 /tmp/warpscope-build.log
    echo "RESULT build=failed"
    exit 1
  fi
fi
"${ws[@]}" --version

out=/tmp/device-check
rm -rf "$out"; mkdir -p "$out"
# Everything the run wrote comes back as one archive (the device tool returns few files).
[[ -n "${OUT:-}" ]] && trap 'tar -czf "$OUT/device-check.tgz" -C /tmp --exclude=device-check/tiny --exclude='*.sock*' device-check' EXIT
duration="${DEVICE_CHECK_SECONDS:-30}"
port=19400
section "agent against the real driver for ${duration}s"
"${ws[@]}" agent --enable-gpu-metrics --collect-metrics-interval=1s --export-metrics-interval=5s \
  --listen-address="127.0.0.1:$port" >"$out/agent.log" 2>&1 &
agent_pid=$!
sleep "$duration"
scrape() {  # scrape PORT FILE
  curl -s "http://127.0.0.1:$1/metrics" >"$2" ||
    python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$1/metrics').read().decode())" >"$2"
}
scrape "$port" "$out/metrics.txt"
rss_kb=$(awk '/VmRSS/{print $2}' "/proc/$agent_pid/status")
rc="running (stopped at the end, after the workloads)"
"${ws[@]}" metrics --format tsv >"$out/catalog.tsv"
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

# ---------------------------------------------------------------------------------------------
# The CUDA kernel profiler: libwarpscope_cupti.so injected into a launch-heavy loop of tiny
# kernels (built with nvcc when present) and a small PyTorch training loop (when torch sees a
# GPU), each timed with and without injection, with the agent collecting profiles.
section "CUDA profiler"
inject="$root/build/release/lib/libwarpscope_cupti.so"
cupti=""
for c in /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* /usr/local/cuda/lib64/libcupti.so* \
    /usr/local/cuda-*/extras/CUPTI/lib64/libcupti.so* /usr/local/cuda-*/lib64/libcupti.so* \
    $(ldconfig -p 2>/dev/null | awk '/libcupti\.so/{print $NF}') \
    $(python3 -c 'import nvidia.cuda_cupti as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null |
      xargs -r -I{} sh -c 'ls {}/libcupti.so* 2>/dev/null'); do
  [[ -f "$c" ]] && { cupti="$c"; break; }
done
if [[ ! -f "$inject" || -z "$cupti" ]]; then
  echo "RESULT profiler=skipped (library: $inject, libcupti: ${cupti:-not found})"
  kill -TERM "$agent_pid"; exit 0
fi
echo "libcupti: $cupti"
# The stack at launch is unwound through libcuda: say whether the driver's library has unwind tables.
libcuda=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')
[[ -n "$libcuda" ]] && echo "libcuda: $(readlink -f "$libcuda"), unwind sections: $(readelf -SW "$(readlink -f "$libcuda")" 2>/dev/null | grep -oE '\.eh_frame(_hdr)?' | tr '\n' ' ')"
# The library finds libcupti itself (the one already in the process, a wheel's, the toolkit's);
# the path above only says that one exists.
sock="$out/cupti.sock"
profiles="$out/profiles"
mkdir -p "$profiles"
"${ws[@]}" agent --cuda-profiler --cuda-profiler-socket="$sock" --cuda-profile-dir="$profiles" \
  --cuda-profile-interval=5s --listen-address=127.0.0.1:19401 \
  >"$out/profiler-agent.log" 2>&1 &
prof_agent=$!
sleep 1

# time_runs NAME CMD...: wall seconds of CMD without, then with injection (best of 2 each).
declare -A timing
time_runs() {
  local name="$1"; shift
  for mode in plain injected; do
    local best=""
    for _ in 1 2; do
      local t0 t1
      t0=$(date +%s.%N)
      if [[ "$mode" == injected ]]; then
        CUDA_INJECTION64_PATH="$inject" WARPSCOPE_AGENT_SOCKET="$sock" timeout 120 "$@" >>"$out/$name.log" 2>&1
      else
        timeout 120 "$@" >>"$out/$name.log" 2>&1
      fi || { echo "$name ($mode) failed: $(tail -3 "$out/$name.log")"; return 1; }
      t1=$(date +%s.%N)
      best=$(awk -v a="$best" -v b="$(awk -v x="$t0" -v y="$t1" 'BEGIN{print y-x}')" \
        'BEGIN{print (a=="" || b<a) ? b : a}')
    done
    timing["$name.$mode"]=$best
  done
}

if command -v nvcc >/dev/null; then
  cat >"$out/tiny.cu" <<'CU'
#include <cstdio>
#include <cstdlib>
__global__ void tiny_kernel(float* x) { x[threadIdx.x] += 1.0f; }
int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200000;
  float* x;
  cudaMalloc(&x, 256 * sizeof(float));
  for (int i = 0; i < n; ++i) tiny_kernel<<<1, 256>>>(x);
  cudaError_t e = cudaDeviceSynchronize();
  printf("%d launches: %s\n", n, cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
CU
  if nvcc -O2 -g -o "$out/tiny" "$out/tiny.cu" >"$out/nvcc.log" 2>&1; then
    time_runs tiny "$out/tiny" 200000
  else
    echo "nvcc failed: $(tail -3 "$out/nvcc.log")"
  fi
else
  echo "nvcc not found: no tiny-kernel loop"
fi

if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  cat >"$out/train.py" <<'PY'
import time, torch
def make_model():
    return torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                               torch.nn.Linear(4096, 1024)).cuda()
def train_step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
def main():
    model = make_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(512, 1024, device="cuda"); y = torch.randn(512, 1024, device="cuda")
    for _ in range(400):
        train_step(model, opt, x, y)
    torch.cuda.synchronize()
main()
PY
  time_runs torch python3 "$out/train.py"
else
  echo "PyTorch with a GPU not found: no training loop"
fi

sleep 6  # let the agent close a window after the last process
kill -TERM "$prof_agent"; wait "$prof_agent"
echo "-- workloads: best wall seconds of 2 runs"
printf "%-8s %10s %10s %8s\n" workload plain injected ratio
for w in tiny torch; do
  [[ -n "${timing[$w.plain]:-}" ]] || continue
  awk -v w="$w" -v p="${timing[$w.plain]}" -v i="${timing[$w.injected]}" \
    'BEGIN{printf "%-8s %10.3f %10.3f %8.3f\n", w, p, i, p / i}'
done
echo "-- profiles written: $(ls "$profiles" | wc -l) files"
python3 - "$profiles" <<'PY'
import collections, glob, os, sys
gpu = collections.Counter(); site = {}
stalls = collections.Counter()
for path in glob.glob(os.path.join(sys.argv[1], "*.folded")):
    for line in open(path):
        stack, _, value = line.rstrip("\n").rpartition(" ")
        frames = stack.split(";")
        is_pc = path.endswith(".pc.folded")
        for i, f in enumerate(frames):
            if "aunch" in f and i + 1 < len(frames):
                kernel = frames[i + 1]
                if is_pc:
                    for g in frames[i + 2:]:
                        if g.startswith("[stall]"): stalls[g] += int(value)
                else:
                    gpu[kernel] += int(value)
                    site.setdefault(kernel, collections.Counter())[" > ".join(frames[max(1, i - 4):i])] += int(value)
                break
        else:
            if not is_pc and len(frames) > 1:
                gpu[frames[-1]] += int(value)
print("-- top 5 kernels by GPU time, with their main launch site (4 frames above the launch)")
for kernel, ns in gpu.most_common(5):
    where = site.get(kernel, collections.Counter()).most_common(1)
    print(f"  {ns/1e6:10.2f} ms  {kernel[:80]}")
    if where: print(f"               from {where[0][0][:160]}")
print(f"-- kernels seen: {len(gpu)}")
if stalls:
    print("-- top stall reasons (PC samples)")
    for r, n in stalls.most_common(6): print(f"  {n:8d}  {r}")
PY
grep -iE "error|passive|notice" "$out/profiler-agent.log" | head -5

# The training script's own functions above its kernels: the share of GPU time whose launch
# stack holds train.py's train_step (PyTorch launches with the GIL released).
python3 - "$profiles" <<'PY'
import glob, os, sys
total = under = 0
for path in glob.glob(os.path.join(sys.argv[1], "*.folded")):
    if path.endswith(".pc.folded"): continue
    for line in open(path):
        stack, _, value = line.rstrip("\n").rpartition(" ")
        if "train" not in stack and "torch" not in stack: continue
        total += int(value)
        if "train_step" in stack: under += int(value)
if total:
    print(f"RESULT python_frames={'ok' if under / total >= 0.5 else 'FAIL'} "
          f"({100 * under / total:.1f}% of the training loop's GPU time under train_step)")
else:
    print("RESULT python_frames=skipped (no training-loop profile)")
PY

# PC sampling where the driver permits it (NVreg_RestrictProfilingToAdminUsers=0 or root).
if [[ -x "$out/tiny" ]]; then
  section "PC sampling"
  pc_profiles="$out/pc-profiles"; mkdir -p "$pc_profiles"
  "${ws[@]}" agent --cuda-profiler --cuda-profiler-socket="$sock.pc" --cuda-profile-dir="$pc_profiles" \
    --cuda-profile-interval=3s --listen-address=127.0.0.1:19402 --cuda-pc-sampling \
    >"$out/pc-agent.log" 2>&1 &
  pc_agent=$!
  sleep 1
  CUDA_INJECTION64_PATH="$inject" WARPSCOPE_AGENT_SOCKET="$sock.pc" WARPSCOPE_CUPTI_PC_INTERVAL_MS=1000 \
    timeout 60 "$out/tiny" 400000 >>"$out/tiny-pc.log" 2>&1
  sleep 4
  kill -TERM "$pc_agent"; wait "$pc_agent"
  samples=$(cat "$pc_profiles"/*.pc.folded 2>/dev/null | awk '{n += $NF} END {print n + 0}')
  echo "RESULT pc_sampling_samples=$samples"
  cat "$pc_profiles"/*.pc.folded 2>/dev/null | sort -t' ' -k2 -nr | head -5
  grep -iE "pc sampling|notice" "$out/pc-agent.log" | head -3
fi

# Next to torch.profiler: the job must run; say who got CUPTI (the library goes passive with a
# notice when torch.profiler subscribed first, or torch.profiler reports missing CUDA events).
if [[ -f "$out/train.py" ]]; then
  section "next to torch.profiler"
  cat >"$out/train_prof.py" <<'PY'
import runpy, sys, torch
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    runpy.run_path(sys.argv[1], run_name="train")
cuda = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
print(f"torch.profiler CUDA events: {len(cuda)}")
PY
  if CUDA_INJECTION64_PATH="$inject" WARPSCOPE_AGENT_SOCKET="$sock" \
      timeout 120 python3 "$out/train_prof.py" "$out/train.py" >"$out/train_prof.log" 2>&1; then
    echo "RESULT torch_profiler=ran ($(grep -E "CUDA events" "$out/train_prof.log"))"
  else
    echo "RESULT torch_profiler=FAIL ($(tail -2 "$out/train_prof.log"))"
  fi
  grep -iE "warpscope|cupti" "$out/train_prof.log" | head -3
fi

# NCCL: torch.distributed with the NCCL backend, libwarpscope_nccl.so loaded through
# NCCL_PROFILER_PLUGIN and the CUDA library injected, one rank per GPU (world size 1, and 2 when
# there are two GPUs: NCCL refuses two ranks on one GPU). Steps are NVTX ProfilerStep#N ranges.
# Prints which plugin table NCCL picked, the agent's NCCL and training-step series.
nccl_plugin="$root/build/release/lib/libwarpscope_nccl.so"
if [[ -f "$out/train.py" && -f "$nccl_plugin" ]]; then
  section "NCCL plugin and training steps"
  cat >"$out/ddp.py" <<'PY'
import os, torch, torch.distributed as dist
dist.init_process_group("nccl")
rank = dist.get_rank(); torch.cuda.set_device(rank % torch.cuda.device_count())
model = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(6)]).cuda()
model = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(256, 2048, device="cuda")
for step in range(60):
    torch.cuda.nvtx.range_push(f"ProfilerStep#{step}")
    opt.zero_grad(); model(x).square().mean().backward(); opt.step()
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize(); dist.destroy_process_group()
print(f"rank {rank} done")
PY
  gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
  "${ws[@]}" agent --cuda-profiler --cuda-profiler-socket="$sock.nccl" --cuda-profile-dir="$out/nccl-profiles" \
    --cuda-profile-interval=3s --listen-address=127.0.0.1:19403 >"$out/nccl-agent.log" 2>&1 &
  nccl_agent=$!
  sleep 1
  for world in 1 2; do
    (( world <= gpus )) || { echo "RESULT nccl_world_$world=skipped ($gpus GPU)"; continue; }
    if CUDA_INJECTION64_PATH="$inject" WARPSCOPE_AGENT_SOCKET="$sock.nccl" \
        NCCL_PROFILER_PLUGIN="$nccl_plugin" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,PROFILE \
        timeout 150 python3 -m torch.distributed.run --standalone --nproc-per-node="$world" \
        "$out/ddp.py" >"$out/ddp-$world.log" 2>&1; then
      echo "RESULT nccl_world_$world=ran ($(grep -ioE "profiler[^\n]{0,60}(v[0-9]|plugin)[^\n]{0,40}" "$out/ddp-$world.log" | head -1))"
    else
      echo "RESULT nccl_world_$world=FAIL ($(tail -2 "$out/ddp-$world.log"))"
    fi
  done
  sleep 7  # two agent windows after the last rank
  curl -s http://127.0.0.1:19403/metrics >"$out/nccl-metrics.txt"
  kill -TERM "$nccl_agent"; wait "$nccl_agent"
  echo "-- NCCL series (collectives, GPU seconds, bus bandwidth) and training steps"
  grep -E "^warpscope_nccl_(collectives_total|collective_gpu_seconds_total|bus_bandwidth)" \
    "$out/nccl-metrics.txt" | head -8
  grep -E "^warpscope_training_" "$out/nccl-metrics.txt" | head -12
  steps=$(grep -E "^warpscope_training_steps_total" "$out/nccl-metrics.txt" | awk '{n += $NF} END {print n + 0}')
  echo "RESULT training_steps=$steps (expected 60 per rank, from NVTX)"
fi

# The metrics agent has watched the whole run: the per-process series of the workloads above and
# the agent's own footprint after them.
section "metrics agent after the workloads"
scrape "$port" "$out/metrics-end.txt"
echo "agent RSS $(awk '/VmRSS/{printf "%.1f MiB", $2 / 1024}' "/proc/$agent_pid/status")"
grep -E 'pid="' "$out/metrics-end.txt" | awk '{split($1, a, "{"); if (!(a[1] in seen)) {seen[a[1]] = 1; print}}' | head -12
grep -E '^warpscope_agent_source_errors_total' "$out/metrics-end.txt" | head -8
kill -TERM "$agent_pid"; wait "$agent_pid"
echo "RESULT metrics_agent_exit=$?"
