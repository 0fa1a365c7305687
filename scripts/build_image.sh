#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Assembles warpscope's two container images without a container engine or a registry, as OCI
# image layouts (umoci), from scratch plus the Debian package's files: the binary and the shared
# libraries `ldd` names (with the loader), a minimal /etc (passwd and group with the server's
# user, uid and gid 10001; nsswitch.conf; hosts; the CA bundle where the machine has one) and:
# - warpscope-agent: the injected CUDA and NCCL libraries (which the DaemonSet's initContainer
#   copies to the node with `cp`, also in the image), the NVML simulator and its scenarios; runs
#   as root; exposes 9400 (/metrics);
# - warpscope-server: runs as 10001:10001 with /var/lib/warpscope its volume; exposes 9410 and
#   4317 (OTLP/gRPC).
# Entrypoint, command, user, environment, ports and labels match deploy/container/Containerfile.*
# (docs/deploy.md, "Container images"). Copy a layout to a registry with any OCI tool, e.g.
# `skopeo copy oci:OUT_DIR/warpscope-agent:VERSION docker://REGISTRY/warpscope-agent:VERSION`.
#   scripts/build_image.sh DEB OUT_DIR    (writes OUT_DIR/warpscope-agent and warpscope-server)
set -euo pipefail
deb="${1:?usage: build_image.sh DEB OUT_DIR}"
out="${2:?usage: build_image.sh DEB OUT_DIR}"
fail() { echo "build_image: $*" >&2; exit 1; }
for tool in umoci:umoci dpkg-deb:dpkg ldd:libc-bin; do
  command -v "${tool%%:*}" >/dev/null ||
    fail "${tool%%:*} is missing: run scripts/setup.sh --test (apt-get install ${tool#*:})"
done
[[ -r "$deb" ]] ||
  fail "no package at $deb: build it first (docs/deploy.md, \"Building the package\")"
version="$(dpkg-deb --field "$deb" Version)"
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
pkg="$tmp/pkg"
dpkg-deb -x "$deb" "$pkg"

# copy_libs ROOT ELF...: the shared libraries each ELF needs and the loader, at the paths they
# resolve to here (the image is merged-/usr: /lib and /lib64 are links into /usr).
copy_libs() {
  local root="$1" lib dir
  shift
  ldd "$@" > "$tmp/ldd" || fail "ldd failed on $*"
  if grep -q 'not found' "$tmp/ldd"; then
    fail "libraries missing here for $*: $(grep 'not found' "$tmp/ldd" | tr -s '\t\n' '  ')"
  fi
  awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && $2 ~ /^\(/ {print $1}' "$tmp/ldd" |
    sort -u | while read -r lib; do
      dir="$(readlink -f "$(dirname "$lib")")"
      install -D -m 0755 "$(readlink -f "$lib")" "$root$dir/$(basename "$lib")"
    done
}

# base_root ROOT: the directories, links and /etc every image has.
base_root() {
  local root="$1"
  mkdir -p "$root"/{usr/bin,usr/lib,usr/lib64,etc,run,var/lib,usr/share/doc/warpscope,proc,sys,dev}
  ln -s usr/bin "$root/bin"
  ln -s usr/lib "$root/lib"
  ln -s usr/lib64 "$root/lib64"
  install -d -m 1777 "$root/tmp"
  printf '%s\n' 'root:x:0:0:root:/root:/usr/sbin/nologin' \
    'warpscope:x:10001:10001:warpscope server:/var/lib/warpscope:/usr/sbin/nologin' \
    'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin' > "$root/etc/passwd"
  printf '%s\n' 'root:x:0:' 'warpscope:x:10001:' 'nogroup:x:65534:' > "$root/etc/group"
  printf '%s\n' 'passwd: files' 'group: files' 'hosts: files dns' > "$root/etc/nsswitch.conf"
  printf '%s\n' '127.0.0.1 localhost' '::1 localhost' > "$root/etc/hosts"
  if [[ -r /etc/ssl/certs/ca-certificates.crt ]]; then
    install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  fi
  install -m 0755 "$pkg/usr/bin/warpscope" "$root/usr/bin/warpscope"
  install -m 0644 "$pkg/usr/share/doc/warpscope/copyright" "$root/usr/share/doc/warpscope/"
}

# layout NAME ROOT UMOCI-CONFIG-ARGS...: the OCI layout OUT_DIR/NAME, tagged VERSION.
layout() {
  local name="$1" root="$2" dir="$out/$1"
  shift 2
  rm -rf "$dir"
  umoci init --layout "$dir"
  umoci new --image "$dir:$version"
  umoci insert --image "$dir:$version" --history.created_by "scripts/build_image.sh" "$root" /
  umoci config --image "$dir:$version" --no-history --os linux \
    --architecture "$(dpkg-deb --field "$deb" Architecture)" \
    --config.entrypoint /usr/bin/warpscope --config.workingdir / \
    --config.env PATH=/usr/bin \
    --config.label "org.opencontainers.image.title=$name" \
    --config.label "org.opencontainers.image.version=$version" \
    --config.label "org.opencontainers.image.licenses=Apache-2.0" "$@"
  umoci gc --layout "$dir"
  echo "build_image: $dir:$version ($(du -sb "$dir/blobs" | cut -f1) bytes of blobs)"
}

# As the Containerfiles' labels.
agent_description="warpscope agent: GPU and host metrics, CUDA and CPU profiles of one GPU host"
server_description="warpscope server: storage, query API, web UI, insights and alerts"

agent="$tmp/agent"
base_root "$agent"
cp -a "$pkg/usr/lib/warpscope" "$agent/usr/lib/warpscope"
rm -f "$agent"/usr/lib/warpscope/warpscope-* # the demo workloads and the Slurm prolog
mkdir -p "$agent/usr/share/warpscope" "$agent/run/warpscope" "$agent/var/lib/warpscope-agent"
cp -a "$pkg/usr/share/warpscope/scenarios" "$agent/usr/share/warpscope/"
install -m 0755 "$(command -v cp)" "$agent/usr/bin/cp"
copy_libs "$agent" "$agent/usr/bin/warpscope" "$agent/usr/bin/cp" \
  "$agent"/usr/lib/warpscope/sim/*.so*
layout warpscope-agent "$agent" --config.user 0:0 \
  --config.cmd agent --config.cmd=--listen-address=:9400 --config.cmd=--enable-gpu-metrics \
  --config.env NVIDIA_VISIBLE_DEVICES=all --config.env NVIDIA_DRIVER_CAPABILITIES=utility,compute \
  --config.exposedports 9400/tcp \
  --config.label "org.opencontainers.image.description=$agent_description"

server="$tmp/server"
base_root "$server"
install -d -o 10001 -g 10001 -m 0750 "$server/var/lib/warpscope"
copy_libs "$server" "$server/usr/bin/warpscope"
layout warpscope-server "$server" --config.user 10001:10001 \
  --config.cmd server --config.cmd=--listen-address=:9410 \
  --config.cmd=--data-dir=/var/lib/warpscope --config.cmd=--otlp-grpc-listen-address=:4317 \
  --config.volume /var/lib/warpscope --config.exposedports 9410/tcp \
  --config.exposedports 4317/tcp \
  --config.label "org.opencontainers.image.description=$server_description"
