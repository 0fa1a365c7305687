#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs everything warpscope needs to build, package (help2man, dpkg-shlibdeps), run and
# test on Debian 12. Idempotent: packages already present are not touched, so a second run
# takes a second.
#   scripts/setup.sh            build + run dependencies
#   scripts/setup.sh --test     also the test peers (Prometheus, Alertmanager, node_exporter,
#                               Chromium, gdb, perf for the CPU profiler benchmarks,
#                               systemd-analyze for the service units, man-db and lintian
#                               for the Debian package, tmux for warpscope top's terminal test,
#                               clickhouse-server for the ClickHouse storage tests)
set -euo pipefail

build_pkgs=(cmake ninja-build g++ pkg-config libcpp-httplib-dev nlohmann-json3-dev libyaml-cpp-dev
  libcli11-dev libfmt-dev libexpected-dev zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev
  libprotobuf-dev protobuf-compiler libsqlite3-dev libsnappy-dev libssl-dev libelf-dev libdw-dev
  python3-dev help2man dpkg-dev libncurses-dev libgrpc++-dev protobuf-compiler-grpc libboost-dev)
test_pkgs=(prometheus prometheus-alertmanager prometheus-node-exporter curl chromium gdb linux-perf
  systemd man-db lintian tmux umoci python3-yaml golang-go golang-github-masterminds-sprig-dev
  golang-gopkg-yaml.v2-dev golang-gopkg-yaml.v3-dev clickhouse-server)

want=("${build_pkgs[@]}")
# The web UI is built with npm; Debian's nodejs/npm when the machine has no npm of its own.
if ! command -v npm >/dev/null 2>&1; then
  want+=(nodejs npm)
fi
if [[ "${1:-}" == "--test" ]]; then
  want+=("${test_pkgs[@]}")
fi

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  # Debian's prometheus and clickhouse-server packages start services where systemd runs; tests
  # start their own peers.
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi
