#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Writes the man pages of the warpscope binary from its own --help (help2man), gzipped as Debian
# installs them: warpscope.1.gz and warpscope-<subcommand>.1.gz for every subcommand that
# `warpscope --help` lists, each with a SEE ALSO of the others.
#   packaging/gen_manpages.sh BINARY OUTDIR VERSION
set -euo pipefail
bin="$(realpath "${1:?usage: gen_manpages.sh BINARY OUTDIR VERSION}")"
out="${2:?usage: gen_manpages.sh BINARY OUTDIR VERSION}"
version="${3:?usage: gen_manpages.sh BINARY OUTDIR VERSION}"
if ! command -v help2man >/dev/null; then
  echo "gen_manpages: help2man is missing: run scripts/setup.sh (apt-get install help2man)" >&2
  exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

help="$("$bin" --help)"
# The lines of the "Subcommands:" section: "  NAME   DESCRIPTION".
mapfile -t subs < <(awk '/^Subcommands:/ {s = 1; next} s && /^  [a-z]/ {print $1}' <<<"$help")
[[ ${#subs[@]} -gt 0 ]] || { echo "gen_manpages: $bin --help lists no subcommands" >&2; exit 1; }
describe() {  # the description --help gives subcommand $1
  awk -v n="$1" '/^Subcommands:/ {s = 1; next} s && $1 == n {$1 = ""; sub(/^ +/, ""); print}' \
    <<<"$help"
}

see_also() {  # the pages other than $1
  local page refs=()
  for page in warpscope "${subs[@]/#/warpscope-}"; do
    [[ $page == "$1" ]] || refs+=("\\fB$page\\fR(1)")
  done
  local IFS=,
  printf '[SEE ALSO]\n%s\n' "${refs[*]}" | sed 's/,/, /g'
}

# help2man runs PROGRAM --help; a subcommand's page runs a wrapper named warpscope-SUB.
page() {  # NAME PROGRAM DESCRIPTION
  see_also "$1" > "$tmp/$1.h2m"
  help2man --no-info --no-discard-stderr --version-string="$version" \
    --section=1 --source="warpscope $version" --manual="warpscope manual" \
    --name="$3" --include="$tmp/$1.h2m" --output="$tmp/$1.1" "$2"
  gzip -9n < "$tmp/$1.1" > "$out/$1.1.gz"
}

mkdir -p "$out"
rm -f "$out"/warpscope*.1.gz
page warpscope "$bin" "$(head -n1 <<<"$help" | sed 's/^warpscope: //')"
for sub in "${subs[@]}"; do
  printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$bin" "$sub" > "$tmp/warpscope-$sub"
  chmod +x "$tmp/warpscope-$sub"
  page "warpscope-$sub" "$tmp/warpscope-$sub" "$(describe "$sub")"
done
