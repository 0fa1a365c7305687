#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks the files of deploy/ against a build (ctest deploy_units_check):
# - both systemd units pass `systemd-analyze verify` without a warning, with the build's
#   binary in place of /usr/bin/warpscope;
# - deploy/config/warpscope.toml is accepted whole by `warpscope agent` (every key of every
#   section is checked, whichever subcommand runs);
# - the profile.d snippet and the Slurm TaskProlog parse, set CUDA_INJECTION64_PATH, keep an
#   application's own, and stay off with WARPSCOPE_CUDA_PROFILER=0.
#   scripts/check_deploy.sh BUILD_DIR
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:?usage: check_deploy.sh BUILD_DIR}" && pwd)"
bin="$build/bin/warpscope"
lib="$build/lib/libwarpscope_cupti.so"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check_deploy: $*" >&2; exit 1; }

command -v systemd-analyze >/dev/null ||
  fail "systemd-analyze is missing: run scripts/setup.sh --test (apt-get install systemd)"
for unit in warpscope-agent.service warpscope-server.service; do
  sed "s|/usr/bin/warpscope|$bin|" "$root/deploy/systemd/$unit" > "$tmp/$unit"
  if ! systemd-analyze verify "$tmp/$unit" > "$tmp/verify.out" 2>&1; then
    cat "$tmp/verify.out" >&2
    fail "$unit does not verify"
  fi
  # A misspelt key is only a warning to systemd; here it is an error.
  if [[ -s "$tmp/verify.out" ]]; then
    cat "$tmp/verify.out" >&2
    fail "$unit: systemd-analyze verify warns (above)"
  fi
done

if ! timeout 60 "$bin" --config="$root/deploy/config/warpscope.toml" agent --once \
  --simulate healthy-8xh100 --collect-metrics-interval=1s --enable-host-metrics=false \
  --cuda-profiler=false --enable-cpu-profiler=false > "$tmp/once.out" 2> "$tmp/once.err"; then
  cat "$tmp/once.err" >&2
  fail "deploy/config/warpscope.toml is not accepted by warpscope agent"
fi
grep -q '^DCGM_FI_DEV_GPU_UTIL{' "$tmp/once.out" || fail "the agent on the example config served no GPU metric"

[[ -r "$lib" ]] || fail "$lib is missing: build the warpscope_cupti target"
for script in "$root/deploy/profile.d/warpscope-cuda.sh" "$root/deploy/slurm/warpscope-task-prolog.sh"; do
  sh -n "$script" || fail "$script does not parse"
done
profile() { env -i PATH=/usr/bin:/bin WARPSCOPE_CUPTI_INJECTION_LIBRARY="$lib" "$@" \
  sh -c ". '$root/deploy/profile.d/warpscope-cuda.sh'; echo \"\${CUDA_INJECTION64_PATH:-unset}\""; }
[[ "$(profile)" == "$lib" ]] || fail "profile.d: CUDA_INJECTION64_PATH is not set to $lib"
[[ "$(profile WARPSCOPE_CUDA_PROFILER=0)" == unset ]] || fail "profile.d: WARPSCOPE_CUDA_PROFILER=0 does not turn it off"
[[ "$(profile CUDA_INJECTION64_PATH=/opt/other.so)" == /opt/other.so ]] ||
  fail "profile.d: an application's own CUDA_INJECTION64_PATH is replaced"
# WARPSCOPE_CUPTI_LIBRARY names NVIDIA's libcupti for the injected library, not the library.
[[ "$(profile WARPSCOPE_CUPTI_LIBRARY=/opt/cuda/libcupti.so)" == "$lib" ]] ||
  fail "profile.d: takes WARPSCOPE_CUPTI_LIBRARY (libcupti) for the injected library"
[[ "$(profile WARPSCOPE_CUPTI_INJECTION_LIBRARY=/nonexistent.so)" == unset ]] ||
  fail "profile.d: sets a library that does not exist"
prolog() { env -i PATH=/usr/bin:/bin WARPSCOPE_CUPTI_INJECTION_LIBRARY="$lib" "$@" \
  "$root/deploy/slurm/warpscope-task-prolog.sh"; }
[[ "$(prolog)" == "export CUDA_INJECTION64_PATH=$lib" ]] || fail "Slurm prolog: no export line"
[[ -z "$(prolog WARPSCOPE_CUDA_PROFILER=0)" ]] || fail "Slurm prolog: WARPSCOPE_CUDA_PROFILER=0 does not turn it off"
[[ -z "$(prolog CUDA_INJECTION64_PATH=/opt/other.so)" ]] || fail "Slurm prolog: replaces the job's own library"
echo "check_deploy: units, config and opt-in snippets OK"
