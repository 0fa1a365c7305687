#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian package of a configured and built build directory with cpack and prints its
# path; the package checks (check_package.sh, check_package_install.sh, check_image.sh) start
# from it. On failure, prints cpack's log and the reason on stderr and exits 1.
#   scripts/build_deb.sh BUILD_DIR OUT_DIR
set -euo pipefail
build="${1:?usage: build_deb.sh BUILD_DIR OUT_DIR}"
out="${2:?usage: build_deb.sh BUILD_DIR OUT_DIR}"
fail() { echo "build_deb: $*" >&2; exit 1; }
[[ -r "$build/CPackConfig.cmake" ]] || fail "$build has no CPackConfig.cmake: configure it again"
version="$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")"
mkdir -p "$out"
if ! cpack -G DEB --config "$build/CPackConfig.cmake" -B "$out" >"$out/cpack.log" 2>&1; then
  cat "$out/cpack.log" >&2
  fail "cpack -G DEB failed"
fi
deb="$out/warpscope_${version}_$(dpkg --print-architecture).deb"
[[ -r "$deb" ]] || fail "cpack wrote no $(basename "$deb") (version '$version')"
echo "$deb"
