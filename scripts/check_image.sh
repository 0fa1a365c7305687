#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian package from a build directory, the two images from it
# (scripts/build_image.sh) and checks them (ctest image_check):
# - each OCI layout's config: entrypoint, command, user, environment, ports, volume, labels,
#   and that deploy/container/Containerfile.* say the same;
# - unpacked (umoci unpack) and run with chroot (in a mount and PID namespace of its own with its
#   own /proc): warpscope --version in both; in the agent's, an agent cycle on the NVML
#   simulator and the DaemonSet's initContainer command (deploy/kubernetes/30-agent.yaml); in
#   the server's, the server as its user (who owns /var/lib/warpscope) until /healthz answers.
# Needs root (chroot, unshare): CI runs as root; elsewhere `sudo ctest -R image_check`.
#   scripts/check_image.sh BUILD_DIR
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:?usage: check_image.sh BUILD_DIR}" && pwd)"
fail() { echo "check_image: $*" >&2; exit 1; }
if [[ "$(id -u)" != 0 ]]; then
  msg="needs root for chroot and unshare: run it as root (sudo ctest -R image_check)"
  [[ "${CI:-}" == true || "${CI:-}" == 1 ]] && fail "$msg (CI=true: not skipped)"
  echo "check_image: skipped: $msg"
  exit 77
fi
for tool in cpack:cmake dpkg-deb:dpkg umoci:umoci chroot:coreutils unshare:util-linux \
  python3:python3-yaml; do
  command -v "${tool%%:*}" >/dev/null ||
    fail "${tool%%:*} is missing: run scripts/setup.sh --test (apt-get install ${tool#*:})"
done
python3 -c 'import yaml' 2>/dev/null ||
  fail "python3's yaml is missing: run scripts/setup.sh --test (apt-get install python3-yaml)"
[[ -r "$build/CPackConfig.cmake" ]] || fail "$build has no CPackConfig.cmake: configure it again"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

version="$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")"
deb="$(bash "$src/scripts/build_deb.sh" "$build" "$tmp/out")" || fail "no package to build images from"
bash "$src/scripts/build_image.sh" "$deb" "$tmp/images" > "$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log" >&2; fail "scripts/build_image.sh failed"; }

# The image configs, as a runtime reads them: index.json -> manifest -> config.
recipes="$src/deploy/container"
python3 - "$tmp/images" "$version" "$recipes" <<'PY' || fail "the images' configs are wrong (above)"
import json, os, re, sys
images, version, recipes = sys.argv[1], sys.argv[2], sys.argv[3]
want = {
    "warpscope-agent": dict(
        user="0:0", ports={"9400/tcp"}, volumes=set(),
        cmd=["agent", "--listen-address=:9400", "--enable-gpu-metrics"],
        env={"NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=utility,compute"}),
    "warpscope-server": dict(
        user="10001:10001", ports={"9410/tcp", "4317/tcp"}, volumes={"/var/lib/warpscope"},
        cmd=["server", "--listen-address=:9410", "--data-dir=/var/lib/warpscope",
             "--otlp-grpc-listen-address=:4317"], env=set()),
}
ok = True
def check(cond, what):
    global ok
    if not cond:
        print(f"check_image: {what}", file=sys.stderr)
        ok = False
for name, w in want.items():
    root = os.path.join(images, name)
    blob = lambda d: os.path.join(root, "blobs", *d["digest"].split(":"))
    index = json.load(open(os.path.join(root, "index.json")))
    refs = {m["annotations"]["org.opencontainers.image.ref.name"]: m for m in index["manifests"]}
    check(version in refs, f"{name}: no tag {version} (tags: {sorted(refs)})")
    if version not in refs:
        continue
    manifest = json.load(open(blob(refs[version])))
    config = json.load(open(blob(manifest["config"])))
    c = config["config"]
    check(config["os"] == "linux", f"{name}: os {config['os']}")
    check(c.get("Entrypoint") == ["/usr/bin/warpscope"], 
          f"{name}: entrypoint {c.get('Entrypoint')}")
    check(c.get("Cmd") == w["cmd"], f"{name}: cmd {c.get('Cmd')}, want {w['cmd']}")
    check(c.get("User") == w["user"], f"{name}: user {c.get('User')}, want {w['user']}")
    check(set(c.get("ExposedPorts", {})) == w["ports"], f"{name}: ports {c.get('ExposedPorts')}")
    check(set(c.get("Volumes") or {}) == w["volumes"], f"{name}: volumes {c.get('Volumes')}")
    env = set(c.get("Env", []))
    check(w["env"] <= env and "PATH=/usr/bin" in env, f"{name}: env {sorted(env)}")
    labels = c.get("Labels", {})
    for key, value in [("org.opencontainers.image.title", name),
                       ("org.opencontainers.image.version", version),
                       ("org.opencontainers.image.licenses", "Apache-2.0")]:
        check(labels.get(key) == value, f"{name}: label {key} is {labels.get(key)!r}")
    check(bool(labels.get("org.opencontainers.image.description")), f"{name}: no description")
    # The Containerfile (for podman or Docker) says the same; its user is by number.
    text = open(os.path.join(recipes, "Containerfile." + name.split("-")[1])).read()
    instr = lambda key: re.findall(rf"^{key} (.*)$", text, re.M)
    check(instr("ENTRYPOINT") == [json.dumps(c.get("Entrypoint"))] and
          instr("CMD") == [json.dumps(c.get("Cmd"))],
          f"{name}: the Containerfile's ENTRYPOINT/CMD {instr('ENTRYPOINT')} {instr('CMD')}")
    check(instr("USER") == ([w["user"]] if w["user"] != "0:0" else []),
          f"{name}: the Containerfile's USER {instr('USER')}")
    check(set(instr("EXPOSE")) == w["ports"], f"{name}: the Containerfile's EXPOSE")
    check(f'ARG VERSION={version}' in text, f"{name}: the Containerfile's VERSION is not {version}")
    layers = sum(l["size"] for l in manifest["layers"])
    check(len(manifest["layers"]) == 1, f"{name}: {len(manifest['layers'])} layers")
    # A bound that catches a stray debug build or a copied tree; the size is printed.
    check(layers < 40 << 20, f"{name}: {layers} bytes compressed, over 40 MiB")
    print(f"check_image: {name}:{version}: {layers / 2**20:.1f} MiB compressed")
sys.exit(0 if ok else 1)
PY

# in_root ROOTFS [chroot options] COMMAND...: runs COMMAND in ROOTFS with a /proc of its own.
in_root() {
  local root="$1"
  shift
  timeout 60 unshare --mount --pid --fork --kill-child --mount-proc="$root/proc" chroot "$@"
}
for name in warpscope-agent warpscope-server; do
  umoci unpack --image "$tmp/images/$name:$version" "$tmp/$name" > /dev/null ||
    fail "umoci unpack $name failed"
  got="$(in_root "$tmp/$name/rootfs" "$tmp/$name/rootfs" /usr/bin/warpscope --version)" ||
    fail "warpscope --version does not run in $name (a library missing from the image?)"
  [[ "$got" == "$version" ]] || fail "$name: warpscope --version is '$got', not $version"
done

agent="$tmp/warpscope-agent/rootfs"
if ! in_root "$agent" "$agent" /usr/bin/warpscope agent --once --simulate healthy-8xh100 \
  --collect-metrics-interval=1s --enable-host-metrics=false --cuda-profiler=false \
  --enable-cpu-profiler=false > "$tmp/once.out" 2> "$tmp/once.err"; then
  cat "$tmp/once.err" >&2
  fail "the agent on the simulator failed in the agent image"
fi
grep -q '^DCGM_FI_DEV_GPU_UTIL{' "$tmp/once.out" ||
  fail "the agent in the image served no GPU metric"
# The initContainer's command, as the DaemonSet gives it, into the mount it names.
mapfile -t init < <(python3 - "$src/deploy/kubernetes/30-agent.yaml" <<'PY'
import sys, yaml
ds = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "DaemonSet")
init = ds["spec"]["template"]["spec"]["initContainers"][0]
print(init["volumeMounts"][0]["mountPath"])
print("\n".join(init["command"]))
PY
)
mkdir -p "$agent${init[0]}"
in_root "$agent" "$agent" "${init[@]:1}" || fail "the initContainer's command fails: ${init[*]:1}"
for lib in libwarpscope_cupti.so libwarpscope_nccl.so; do
  cmp -s "$agent/usr/lib/warpscope/$lib" "$agent${init[0]}/$lib" ||
    fail "the initContainer did not publish $lib to ${init[0]}"
done

server="$tmp/warpscope-server/rootfs"
[[ "$(stat -c %u:%g "$server/var/lib/warpscope")" == 10001:10001 ]] ||
  fail "/var/lib/warpscope in the server image is not the server user's"
# The server as its user, on a loopback port it picks, with its database in the image's volume.
command -v curl >/dev/null || fail "curl is missing: run scripts/setup.sh --test"
# (timeout's pid: a TERM to it stops its process group, the server included.)
timeout 60 unshare --mount --pid --fork --kill-child --mount-proc="$server/proc" \
  chroot --userspec=10001:10001 "$server" /usr/bin/warpscope server \
  --listen-address=127.0.0.1:0 --data-dir=/var/lib/warpscope > "$tmp/server.log" 2>&1 &
server_pid=$!
port=""
for _ in $(seq 300); do
  port="$(sed -n 's/.*server listening on .* (port \([0-9]*\)).*/\1/p' "$tmp/server.log")"
  [[ -n "$port" ]] || ! kill -0 "$server_pid" 2>/dev/null && break
  sleep 0.1
done
[[ -n "$port" ]] || { cat "$tmp/server.log" >&2; fail "the server in its image did not start"; }
healthz="$(curl -sf "http://127.0.0.1:$port/healthz")" || healthz="(no answer)"
kill "$server_pid"
wait "$server_pid" || true
[[ "$healthz" == *'"ok"'* ]] || fail "the server in its image answers /healthz with $healthz"
echo "check_image: warpscope-agent and warpscope-server $version OK"
