#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs one libFuzzer target against its corpus (docs/design/fuzzing.md).
#
#   scripts/fuzz.sh TARGET [SECONDS] [-- LIBFUZZER_FLAGS...]   fuzz for SECONDS (default 120)
#   scripts/fuzz.sh --merge TARGET                             add the new findings to the corpus
#   scripts/fuzz.sh --list                                     list the targets
#
# TARGET is a corpus name under test/data/fuzz/ (time, procfs_parse, scenario, ...). The script
# configures a clang build with WARPSCOPE_FUZZ=ON in $WARPSCOPE_FUZZ_BUILD_DIR (default
# build/fuzz), builds <TARGET>_fuzzer and runs it with the repo corpus as a read-only seed
# directory. New inputs and crash artifacts land in $WARPSCOPE_FUZZ_WORK_DIR/<TARGET> (default
# <build>/fuzz-work/<TARGET>), never in the repo; --merge copies into test/data/fuzz/<TARGET>
# only those new inputs that add coverage (libFuzzer -merge=1).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WARPSCOPE_FUZZ_BUILD_DIR:-$root/build/fuzz}"
work_root="${WARPSCOPE_FUZZ_WORK_DIR:-$build/fuzz-work}"

usage() {
  sed -n '3,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

list_targets() {
  (cd "$root/test/data/fuzz" && ls -d -- */ | tr -d /)
}

merge=0
case "${1:-}" in
  ""|-h|--help) usage ;;
  --list) list_targets; exit 0 ;;
  --merge) merge=1; shift ;;
esac
target="${1:-}"
[[ -n "$target" ]] || usage
shift
seconds=120
if [[ $# -gt 0 && "$1" != "--" ]]; then
  seconds="$1"
  shift
fi
[[ "${1:-}" == "--" ]] && shift
extra=("$@")

corpus="$root/test/data/fuzz/$target"
if [[ ! -d "$corpus" ]]; then
  echo "fuzz.sh: no corpus directory test/data/fuzz/$target; targets are:" >&2
  list_targets >&2
  exit 2
fi
if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found; install it with: apt-get install clang" >&2
  exit 1
fi

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DWARPSCOPE_FUZZ=ON -DWARPSCOPE_BUILD_BENCH=OFF >/dev/null
ninja -C "$build" -j "${WARPSCOPE_FUZZ_BUILD_JOBS:-2}" "${target}_fuzzer"
fuzzer="$build/fuzz/${target}_fuzzer"

work="$work_root/$target"
mkdir -p "$work/new" "$work/artifacts"

if [[ $merge -eq 1 ]]; then
  before=$(find "$corpus" -type f | wc -l)
  # Edge coverage only (no hit counters), which keeps the repo corpus small.
  "$fuzzer" -merge=1 -use_counters=0 "$corpus" "$work/new" "${extra[@]}"
  after=$(find "$corpus" -type f | wc -l)
  echo "fuzz.sh: test/data/fuzz/$target: $before -> $after inputs"
  exit 0
fi

flags=(-max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$work/artifacts/")
if [[ -f "$root/test/fuzz/$target.dict" ]]; then
  flags+=(-dict="$root/test/fuzz/$target.dict")
fi
echo "fuzz.sh: $target for ${seconds}s; new inputs in $work/new, crashes in $work/artifacts"
cd "$work"
exec "$fuzzer" "${flags[@]}" "${extra[@]}" "$work/new" "$corpus"
