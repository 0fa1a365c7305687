#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fetches NVIDIA's own files that the tests use as the truth (docs/design/cuda-profiler.md,
# "NVIDIA's files as test truth") from Debian's non-free component, without installing anything:
#   libcupti-dev         CUPTI 11.8 headers (cupti*.h, the older record and PC-sampling layouts)
#   libnvidia-ml-dev     nvml.h of driver R520 (with the GPM API)
#   nvidia-cuda-toolkit  nvdisasm, cuobjdump and ptxas of CUDA 11.8 (the rest is deleted)
#
#   scripts/fetch-nvidia-test-files.sh DEST      (CMake runs it at configure: DEST=<build>/nvidia)
#
# The packages come from the same archive the machine already uses: the one source of a private
# apt configuration under DEST/apt reuses the URIs, suites and key of the machine's own Debian
# source (/etc/apt/sources.list.d/debian.sources, else /etc/apt/sources.list) with the non-free
# component. The machine's apt sources, lists and cache are never touched; no root is needed.
# Idempotent: once DEST/.complete exists (it names the versions fetched) nothing is downloaded;
# delete DEST to fetch again.
# Bounded: every network step has a timeout (WARPSCOPE_FETCH_TIMEOUT seconds each, default 300).
# Exit 0 with DEST/include/{cupti*.h,nvml.h} and DEST/bin/{nvdisasm,cuobjdump,ptxas}; else exit 1
# with the reason on stderr (the tests that need the files then fail in CI and skip elsewhere).
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 DEST" >&2
  exit 2
fi
dest=$1
timeout_s=${WARPSCOPE_FETCH_TIMEOUT:-300}
packages=(libcupti-dev libnvidia-ml-dev nvidia-cuda-toolkit)
stamp_version=1  # bump when the layout of DEST changes

fail() {
  echo "fetch-nvidia-test-files: $*" >&2
  exit 1
}

for tool in apt-get apt-cache dpkg-deb timeout; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is not installed (Debian 12 is expected)"
done

mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
aptdir=$dest/apt
mkdir -p "$aptdir/lists/partial" "$aptdir/cache/archives/partial" "$aptdir/sources"

# --- The machine's Debian source: URIs, Suites and Signed-By of its first deb stanza ----------
uris="" suites="" signed_by=""
if [[ -r /etc/apt/sources.list.d/debian.sources ]]; then
  # deb822: the first stanza whose Types has "deb" and whose URIs do not end in -security. Keep
  # its first URI and first suite (the release itself: the tests need nothing from -updates).
  read -r uris suites signed_by < <(awk '
    function flush() {
      if (types ~ /(^| )deb( |$)/ && uris != "" && uris !~ /-security\/?$/ && !done) {
        split(uris, u, /[ \t]+/); split(suites, s, /[ \t]+/)
        print u[1], s[1], (key == "" ? "-" : key); done = 1
      }
      types = ""; uris = ""; suites = ""; key = ""
    }
    /^[ \t]*#/ { next }
    /^[ \t]*$/ { flush(); next }
    {
      field = $0; sub(/:.*/, "", field); value = $0; sub(/^[^:]*:[ \t]*/, "", value)
      sub(/[ \t]+$/, "", value)
      if (field == "Types") types = value
      else if (field == "URIs") uris = value
      else if (field == "Suites") suites = value
      else if (field == "Signed-By") key = value
    }
    END { flush() }' /etc/apt/sources.list.d/debian.sources) || true
fi
if [[ -z "$uris" && -r /etc/apt/sources.list ]]; then
  # One-line format: "deb [signed-by=...] URI SUITE COMPONENTS...".
  read -r uris suites signed_by < <(awk '
    $1 == "deb" {
      key = "-"; i = 2
      if ($2 ~ /^\[/) {
        for (; i <= NF; i++) {
          if ($i ~ /signed-by=/) { key = $i; sub(/.*signed-by=/, "", key); sub(/\]$/, "", key) }
          if ($i ~ /\]$/) { i++; break }
        }
      }
      if ($i !~ /-security\/?$/) { print $i, $(i + 1), key; exit }
    }' /etc/apt/sources.list) || true
fi
[[ -n "$uris" && -n "$suites" ]] ||
  fail "no Debian source found in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list"

{
  echo "Types: deb"
  echo "URIs: $uris"
  echo "Suites: $suites"
  echo "Components: non-free"
  if [[ "$signed_by" != "-" && -n "$signed_by" ]]; then echo "Signed-By: $signed_by"; fi
} >"$aptdir/sources/nonfree.sources"

apt_opts=(
  -o "Dir::Etc::sourcelist=/dev/null"
  -o "Dir::Etc::sourceparts=$aptdir/sources"
  -o "Dir::State::Lists=$aptdir/lists"
  -o "Dir::Cache=$aptdir/cache"
  -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
  -o "Debug::NoLocking=true"
  -o "APT::Sandbox::User=$(id -un)"
  -o "Acquire::Retries=2"
  -o "Acquire::http::Timeout=60"
  -q
)

# --- Versions: when the index is fresh and the stamp names them, there is nothing to do -------
versions() {
  local out="" v
  for p in "${packages[@]}"; do
    v=$(apt-cache "${apt_opts[@]}" show --no-all-versions "$p" 2>/dev/null |
      awk '/^Version:/ { print $2; exit }')
    [[ -n "$v" ]] || return 1
    out+="$p=$v "
  done
  echo "stamp=$stamp_version ${out% }"
}

if [[ -f "$dest/.complete" ]]; then
  # Skip even the index download when the stamp is there: the files are what the tests pin.
  echo "fetch-nvidia-test-files: up to date in $dest ($(cat "$dest/.complete"))"
  exit 0
fi

echo "fetch-nvidia-test-files: reading the non-free index of $uris $suites"
timeout "$timeout_s" apt-get "${apt_opts[@]}" update >"$aptdir/update.log" 2>&1 ||
  fail "apt-get update of the non-free component failed or timed out ($(tail -n 3 "$aptdir/update.log" | tr '\n' ' ')); check the network, or fetch later with $0 $dest"
want=$(versions) ||
  fail "the non-free index of $uris $suites lacks one of ${packages[*]}"

# --- Download and extract -------------------------------------------------------------------
debs=$dest/debs
rm -rf "$debs" "$dest/root" "$dest/include" "$dest/bin"
mkdir -p "$debs"
(cd "$debs" && timeout "$timeout_s" apt-get "${apt_opts[@]}" download "${packages[@]}") \
  >"$aptdir/download.log" 2>&1 ||
  fail "apt-get download ${packages[*]} failed or timed out ($(tail -n 3 "$aptdir/download.log" | tr '\n' ' '))"
root=$dest/root
mkdir -p "$root"
for deb in "$debs"/*.deb; do
  dpkg-deb -x "$deb" "$root" || fail "dpkg-deb -x $deb failed"
done

mkdir -p "$dest/include" "$dest/bin"
# Headers: CUPTI 11.8 and nvml.h R520 (cuda.h is not among them: the CUDA 13 image's is used).
cp -a "$root"/usr/include/. "$dest/include/"
for tool in nvdisasm cuobjdump ptxas; do
  [[ -x "$root/usr/bin/$tool" ]] || fail "nvidia-cuda-toolkit has no usr/bin/$tool"
  cp "$root/usr/bin/$tool" "$dest/bin/$tool"
done
for h in cupti.h cupti_activity.h cupti_pcsampling.h cupti_callbacks.h nvml.h; do
  [[ -f "$dest/include/$h" ]] || fail "the extracted packages lack $h"
done
# The rest of the toolkit (~200 MB extracted) and the .debs are not needed.
rm -rf "$root" "$debs" "$aptdir/cache/archives"
echo "$want" >"$dest/.complete"
echo "fetch-nvidia-test-files: $want in $dest"
