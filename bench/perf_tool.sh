# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034  # perf_bin is for the sourcing script
# Sourced by the CPU profiler benchmarks: sets $perf_bin to Debian's `perf` (package linux-perf),
# installing it when missing (idempotent, as scripts/setup.sh --test does).
find_perf() {
  local p
  for p in perf /usr/bin/perf_[0-9]*; do
    if command -v "$p" > /dev/null 2>&1 && "$p" --version > /dev/null 2>&1; then
      perf_bin=$(command -v "$p")
      return 0
    fi
  done
  return 1
}
if ! find_perf; then
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    linux-perf
  find_perf || { echo "perf not found after installing linux-perf" >&2; exit 1; }
fi
