#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian package the way an operator does and runs it from the installed paths
# (ctest package_install_check):
#   apt-get install ./warpscope_<version>_<arch>.deb   (dependencies from the machine's apt)
#   warpscope --version; warpscope agent --once --simulate healthy-8xh100;
#   warpscope up --simulate healthy-8xh100 (server, agent and demo workloads; /healthz, the
#   agent's GPU metrics and the UI answer), stopped with SIGTERM;
# then purges the package again. It changes the machine, so it runs as root on a machine
# without warpscope installed, and only where asked: CI=true (CI's machines are fresh) or
# WARPSCOPE_TEST_INSTALL=1; elsewhere it is skipped (exit 77).
#   scripts/check_package_install.sh BUILD_DIR
set -euo pipefail
build="$(cd "${1:?usage: check_package_install.sh BUILD_DIR}" && pwd)"
fail() { echo "check_package_install: $*" >&2; exit 1; }
if [[ "${CI:-}" != true && "${WARPSCOPE_TEST_INSTALL:-}" != 1 ]]; then
  echo "check_package_install: installs into /usr; runs with CI=true or WARPSCOPE_TEST_INSTALL=1"
  exit 77
fi
[[ $(id -u) -eq 0 ]] || fail "apt-get install needs root: run the tests as root (CI does)"
if dpkg-query -W -f='${Status}' warpscope 2>/dev/null | grep -q "install ok installed"; then
  fail "warpscope is already installed here; this check installs and purges it, so run it on a" \
    "machine without it (apt-get purge warpscope first)"
fi
for tool in cpack:cmake apt-get:apt curl:curl; do
  command -v "${tool%%:*}" >/dev/null ||
    fail "${tool%%:*} is missing: run scripts/setup.sh --test (apt-get install ${tool#*:})"
done

tmp="$(mktemp -d)"
up_pid=""
cleanup() {
  [[ -n "$up_pid" ]] && kill -KILL "$up_pid" 2>/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq warpscope >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

version="$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")"
deb="$(bash "$(dirname "$0")/build_deb.sh" "$build" "$tmp/out")" || fail "no package to install"
# _apt reads local packages from a folder it can enter.
chmod 755 "$tmp" "$tmp/out"

# Whatever Depends names comes from the machine's apt sources, as for an operator: a dependency
# Debian does not have fails here rather than in the field.
if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" \
    >"$tmp/apt.log" 2>&1; then
  cat "$tmp/apt.log" >&2
  fail "apt-get install $(basename "$deb") failed (above)"
fi
[[ "$(command -v warpscope)" == /usr/bin/warpscope ]] ||
  fail "warpscope is not /usr/bin/warpscope after the install"
getent passwd warpscope >/dev/null || fail "the install created no user warpscope"
[[ "$(warpscope --version)" == *"$version"* ]] || fail "warpscope --version is not $version"

warpscope agent --once --simulate healthy-8xh100 --collect-metrics-interval=1s \
  --enable-host-metrics=false >"$tmp/once.out" 2>"$tmp/once.err" ||
  { cat "$tmp/once.err" >&2; fail "the installed warpscope agent --simulate failed"; }
grep -q '^DCGM_FI_DEV_GPU_UTIL{' "$tmp/once.out" || fail "the installed agent served no GPU metric"

# warpscope up from the installed paths: the simulator, the scenarios, the demo workloads and
# the UI all come from /usr/lib/warpscope and /usr/share/warpscope.
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
server_port=$(port)
agent_port=$(port)
warpscope up --simulate healthy-8xh100 --data-dir "$tmp/up" --port "$server_port" \
  --agent-port "$agent_port" >"$tmp/up.out" 2>"$tmp/up.err" &
up_pid=$!
# Polled with a deadline: the server answers, then the agent's GPU metrics, then the UI.
ready=""
for _ in $(seq 1 300); do
  # (bodies go to files: grep -q closing a pipe early fails the pipeline under pipefail)
  if curl -sf "http://127.0.0.1:$server_port/healthz" >/dev/null &&
     curl -sf -o "$tmp/agent.metrics" "http://127.0.0.1:$agent_port/metrics" &&
     grep -q '^DCGM_FI_DEV_GPU_UTIL{' "$tmp/agent.metrics" &&
     curl -sf -o "$tmp/ui.html" "http://127.0.0.1:$server_port/" &&
     grep -qi '<html' "$tmp/ui.html"; then
    ready=1
    break
  fi
  kill -0 "$up_pid" 2>/dev/null || break
  sleep 0.2
done
[[ -n "$ready" ]] || { tail -20 "$tmp/up.err" >&2; fail "the installed warpscope up did not serve"; }
kill -TERM "$up_pid"
rc=0
wait "$up_pid" || rc=$?
up_pid=""
[[ $rc -eq 0 ]] || { tail -20 "$tmp/up.err" >&2; fail "warpscope up exited $rc on SIGTERM"; }

DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq warpscope >"$tmp/purge.log" 2>&1 ||
  { cat "$tmp/purge.log" >&2; fail "apt-get purge warpscope failed"; }
[[ ! -e /usr/bin/warpscope ]] || fail "/usr/bin/warpscope is still there after the purge"
echo "check_package_install: installed $(basename "$deb"), ran --version, an agent cycle and up" \
  "from /usr/bin/warpscope, purged"
