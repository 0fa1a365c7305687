#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian package from a build directory and checks it (ctest package_check):
# - dpkg-deb --info/--contents: name, version, Depends from dpkg-shlibdeps, conffiles, the
#   maintainer scripts (users and daemon-reload; nothing enabled or started), every installed
#   path that the units, the snippets and `warpscope up --simulate` rely on;
# - lintian reports no error;
# - extracted into a scratch root: warpscope --version/--help, an agent cycle on the NVML
#   simulator from the installed paths, a man page per subcommand that `man -l` renders, and
#   the bash completion offering every subcommand and every flag that --help lists.
#   scripts/check_package.sh BUILD_DIR
set -euo pipefail
build="$(cd "${1:?usage: check_package.sh BUILD_DIR}" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check_package: $*" >&2; exit 1; }
for tool in cpack:cmake dpkg-deb:dpkg dpkg-shlibdeps:dpkg-dev man:man-db lintian:lintian; do
  command -v "${tool%%:*}" >/dev/null ||
    fail "${tool%%:*} is missing: run scripts/setup.sh --test (apt-get install ${tool#*:})"
done
[[ -r "$build/CPackConfig.cmake" ]] || fail "$build has no CPackConfig.cmake: configure it again"
[[ -r "$build/share/man/man1/warpscope.1.gz" ]] ||
  fail "no man pages in $build: install help2man (scripts/setup.sh), configure and build again"

version="$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")"
deb="$(bash "$(dirname "$0")/build_deb.sh" "$build" "$tmp/out")" || fail "no package to check"

# The control fields.
dpkg-deb --field "$deb" Package Version Section Maintainer Depends > "$tmp/fields"
field() { sed -n "s/^$1: //p" "$tmp/fields"; }
[[ "$(field Package)" == warpscope ]] || fail "Package is '$(field Package)'"
[[ "$(field Version)" == "$version" ]] || fail "Version is '$(field Version)', not $version"
[[ "$(field Section)" == admin ]] || fail "Section is '$(field Section)'"
[[ -n "$(field Maintainer)" ]] || fail "no Maintainer"
# dpkg-shlibdeps: versioned libraries the binaries link, not a hand-written list.
for dep in 'libc6 (>= ' 'libstdc++6 (>= ' 'libyaml-cpp0.7 (>= ' 'libcpp-httplib' 'libgrpc++1.51'; do
  [[ "$(field Depends)" == *"$dep"* ]] || fail "Depends lacks '$dep': $(field Depends)"
done

# Conffiles and maintainer scripts.
dpkg-deb --control "$deb" "$tmp/control"
printf '/etc/warpscope/warpscope.toml\n/etc/profile.d/warpscope-cuda.sh\n' > "$tmp/want-conffiles"
diff -u "$tmp/want-conffiles" "$tmp/control/conffiles" >&2 || fail "conffiles differ (above)"
for script in postinst prerm postrm; do
  [[ -x "$tmp/control/$script" ]] || fail "no executable $script"
  sh -n "$tmp/control/$script" || fail "$script does not parse"
  # Neither a GPU at install time nor services the operator did not choose.
  if grep -Eq 'systemctl +(enable|start|restart)|nvidia|deb-systemd-helper enable' \
    "$tmp/control/$script"; then
    fail "$script enables or starts a service, or touches the GPU"
  fi
done
grep -q 'systemd-sysusers /usr/lib/sysusers.d/warpscope.conf' "$tmp/control/postinst" ||
  fail "postinst does not create the user with systemd-sysusers"
grep -q 'systemctl daemon-reload' "$tmp/control/postinst" || fail "postinst does not daemon-reload"

# The paths.
dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's|^\./|/|' > "$tmp/contents"
for path in /usr/bin/warpscope /usr/lib/warpscope/libwarpscope_cupti.so /usr/lib/warpscope/libwarpscope_nccl.so \
  /usr/lib/warpscope/sim/libnvidia-ml.so.1 /usr/lib/warpscope/sim/libcupti.so \
  /usr/lib/warpscope/warpscope-demo-workload /usr/lib/warpscope/warpscope-fake-inference \
  /usr/lib/warpscope/warpscope-task-prolog.sh /usr/share/warpscope/scenarios/healthy-8xh100.yaml \
  /usr/lib/systemd/system/warpscope-agent.service /usr/lib/systemd/system/warpscope-server.service \
  /usr/lib/sysusers.d/warpscope.conf /etc/warpscope/warpscope.toml \
  /etc/profile.d/warpscope-cuda.sh \
  /usr/share/man/man1/warpscope.1.gz /usr/share/bash-completion/completions/warpscope \
  /usr/share/doc/warpscope/copyright /usr/share/doc/warpscope/deploy.md \
  /usr/share/warpscope/deploy/kubernetes/30-agent.yaml /usr/share/warpscope/deploy/helm/warpscope/Chart.yaml; do
  grep -qx "$path" "$tmp/contents" || fail "the package lacks $path"
done
if grep -Ev '^/usr/bin/$|^/usr/bin/warpscope$' "$tmp/contents" | grep -q '^/usr/bin/'; then
  fail "only warpscope belongs in /usr/bin: $(grep '^/usr/bin/.' "$tmp/contents" | tr '\n' ' ')"
fi
stray='^/usr/lib/(sim|libwarpscope)|gtest|gmock|/include/'
if grep -Eq "$stray" "$tmp/contents"; then
  fail "the package holds build-tree or test files: $(grep -E "$stray" "$tmp/contents" | head -3)"
fi

# lintian: errors fail; warnings and notes are printed.
if ! lintian --fail-on error "$deb" > "$tmp/lintian.out" 2>&1; then
  cat "$tmp/lintian.out" >&2
  fail "lintian reports errors (above)"
fi
cat "$tmp/lintian.out"

# The installed tree, extracted.
root="$tmp/root"
dpkg-deb -x "$deb" "$root"
bin="$root/usr/bin/warpscope"
got="$("$bin" --version)"
[[ "$got" == "$version" ]] || fail "warpscope --version is '$got', not $version"
"$bin" --help > "$tmp/help" || fail "warpscope --help failed"
if ! timeout 60 "$bin" agent --once --simulate healthy-8xh100 --collect-metrics-interval=1s \
  --enable-host-metrics=false --cuda-profiler=false --enable-cpu-profiler=false \
  > "$tmp/once.out" 2> "$tmp/once.err"; then
  cat "$tmp/once.err" >&2
  fail "the extracted warpscope agent --simulate failed (simulator under /usr/lib/warpscope/sim?)"
fi
grep -q '^DCGM_FI_DEV_GPU_UTIL{' "$tmp/once.out" || fail "the extracted agent served no GPU metric"

mapfile -t subs < <(awk '/^Subcommands:/ {s = 1; next} s && /^  [a-z]/ {print $1}' "$tmp/help")
[[ ${#subs[@]} -ge 7 ]] || fail "warpscope --help lists ${#subs[@]} subcommands"
man -l "$root/usr/share/man/man1/warpscope.1.gz" > "$tmp/man.txt" 2>/dev/null
grep -q -- '--config' "$tmp/man.txt" || fail "man warpscope does not show --config"
for sub in "${subs[@]}"; do
  page="$root/usr/share/man/man1/warpscope-$sub.1.gz"
  [[ -r "$page" ]] || fail "no man page warpscope-$sub(1)"
  man -l "$page" > "$tmp/man-$sub.txt" 2>/dev/null
  grep -q "warpscope $sub" "$tmp/man-$sub.txt" ||
    fail "man warpscope-$sub does not render its usage"
done
grep -q -- '--simulate' "$tmp/man-agent.txt" || fail "man warpscope-agent does not show --simulate"

# Completion: the words offered after "warpscope WORDS... CUR".
complete_words() {
  bash --norc --noprofile -c '
    source "$1"; shift
    COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    _warpscope; printf "%s\n" "${COMPREPLY[@]}"' \
    sh "$root/usr/share/bash-completion/completions/warpscope" warpscope "$@"
}
[[ "$(complete_words ag)" == agent ]] ||
  fail "completion: 'warpscope ag' does not complete to agent"
offered="$(complete_words '')"
for sub in "${subs[@]}"; do
  grep -qx "$sub" <<<"$offered" || fail "completion: subcommand $sub is not offered"
done
offered="$(complete_words agent --)"
"$bin" agent --help | grep -oE -- '--[a-z0-9-]+' | sort -u > "$tmp/agent-flags"
while read -r flag; do
  grep -qx -- "$flag" <<<"$offered" || fail "completion: warpscope agent $flag is not offered"
done < "$tmp/agent-flags"
[[ -z "$(complete_words agent --buffer-dir '')" ]] ||
  fail "completion: a file name is due after --buffer-dir"
echo "check_package: $(basename "$deb") OK ($(grep -c . "$tmp/contents") paths)"
