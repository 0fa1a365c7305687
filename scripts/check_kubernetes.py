#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the Kubernetes manifests and the Helm chart offline (ctest kubernetes_check).

kubectl cannot help without a cluster (client-side dry runs still ask the API server for its
resource list), and Debian has no Helm: the chart is rendered by scripts/helm_template (Go's
text/template with sprig, as Helm does), built here with Debian's Go packages. Every plain
manifest and every rendered value combination is checked structurally:
- known apiVersion/kind pairs, names, namespaces;
- workloads: selectors match the pod template's labels, every volumeMount names a volume, every
  service account exists, no privileged container, only the expected capabilities, and the
  args name only flags that `warpscope <subcommand> --help` of the built binary lists, with
  every $(VAR) defined in the container's env;
- Services select a workload and target its named ports; ServiceMonitors select a Service port;
- RBAC grants get/list/watch on pods and nothing else;
- the images' tag and the chart's versions are the project's version;
- the chart with default values renders the plain manifests' objects (less the Namespace, which
  `helm install --create-namespace` makes, and Helm's own labels), with serviceMonitor.enabled
  the ServiceMonitors too; the other combinations do what their values say.
  scripts/check_kubernetes.py BUILD_DIR
"""
import difflib
import os
import shutil
import re
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETUP = "run scripts/setup.sh --test"


def die(msg):
    print(f"check_kubernetes: {msg}", file=sys.stderr)
    sys.exit(1)


try:
    import yaml
except ImportError:
    die(f"python3's yaml module is missing: {SETUP} (apt-get install python3-yaml)")

KINDS = {
    ("v1", "Namespace"), ("v1", "ServiceAccount"), ("v1", "Service"),
    ("apps/v1", "DaemonSet"), ("apps/v1", "StatefulSet"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
WORKLOADS = {"DaemonSet", "StatefulSet"}
CAPABILITIES = {"PERFMON", "SYS_PTRACE", "DAC_READ_SEARCH", "IPC_LOCK", "SYS_RESOURCE"}
HELM_LABELS = {"app.kubernetes.io/instance", "app.kubernetes.io/managed-by",
               "app.kubernetes.io/version", "helm.sh/chart"}
NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class Checker:
    def __init__(self, flags, version):
        self.flags = flags  # subcommand -> set of --flags
        self.version = version
        self.errors = []

    def error(self, where, msg):
        self.errors.append(f"{where}: {msg}")

    def check(self, where, objs):
        by_kind = {}
        for o in objs:
            by_kind.setdefault(o.get("kind"), []).append(o)
        for o in objs:
            self.check_object(where, o, by_kind)

    def check_object(self, where, o, by_kind):
        kind, meta = o.get("kind"), o.get("metadata") or {}
        name = meta.get("name", "")
        at = f"{where}: {kind} {name}"
        if (o.get("apiVersion"), kind) not in KINDS:
            self.error(at, f"unknown apiVersion/kind {o.get('apiVersion')}/{kind}")
            return
        if not NAME.match(name) or len(name) > 63:
            self.error(at, "metadata.name is not a DNS label")
        if (kind in CLUSTER_SCOPED) == bool(meta.get("namespace")):
            self.error(at, "namespace set on a cluster-scoped object, or missing")
        if kind in WORKLOADS:
            self.check_workload(at, o, by_kind)
        elif kind == "Service":
            self.check_service(at, o, by_kind)
        elif kind == "ServiceMonitor":
            self.check_servicemonitor(at, o, by_kind)
        elif kind == "ClusterRole":
            for rule in o.get("rules", []):
                if (rule.get("apiGroups") != [""] or not set(rule.get("resources", [])) <=
                        {"pods"} or not set(rule.get("verbs", [])) <=
                        {"get", "list", "watch"}):
                    self.error(at, f"grants more than get/list/watch on pods: {rule}")
        elif kind == "ClusterRoleBinding":
            ref = o.get("roleRef", {})
            if (ref.get("kind") != "ClusterRole" or
                    not named(by_kind, "ClusterRole", ref.get("name"))):
                self.error(at, f"roleRef {ref} names no ClusterRole here")
            for s in o.get("subjects", []):
                if not named(by_kind, "ServiceAccount", s.get("name"), s.get("namespace")):
                    self.error(at, f"subject {s} names no ServiceAccount here")

    def check_workload(self, at, o, by_kind):
        spec = o.get("spec", {})
        tmpl = spec.get("template", {})
        labels = tmpl.get("metadata", {}).get("labels", {})
        match = spec.get("selector", {}).get("matchLabels", {})
        if not match or any(labels.get(k) != v for k, v in match.items()):
            self.error(at, f"selector {match} does not match the template's labels {labels}")
        pod = tmpl.get("spec", {})
        ns = o["metadata"].get("namespace")
        sa = pod.get("serviceAccountName")
        if not sa or not named(by_kind, "ServiceAccount", sa, ns):
            self.error(at, f"serviceAccountName {sa!r} names no ServiceAccount here")
        if (o["kind"] == "StatefulSet" and
                not named(by_kind, "Service", spec.get("serviceName"), ns)):
            self.error(at, f"serviceName {spec.get('serviceName')!r} names no Service here")
        volumes = {v["name"] for v in pod.get("volumes", [])}
        volumes |= {c["metadata"]["name"] for c in spec.get("volumeClaimTemplates", [])}
        if pod.get("privileged") or find_key(o, "privileged") is True:
            self.error(at, "privileged: true (grant capabilities instead)")
        for c in pod.get("initContainers", []) + pod.get("containers", []):
            cat = f"{at} container {c.get('name')}"
            image = c.get("image", "")
            if image.rpartition(":")[2] != self.version:
                self.error(cat, f"image {image!r} is not tagged {self.version}")
            for m in c.get("volumeMounts", []):
                if m.get("name") not in volumes:
                    self.error(cat, f"volumeMount {m.get('name')} names no volume")
            sc = c.get("securityContext", {})
            caps = sc.get("capabilities", {})
            if caps.get("drop") != ["ALL"]:
                self.error(cat, "capabilities do not drop ALL")
            if not set(caps.get("add", [])) <= CAPABILITIES:
                self.error(cat, f"adds capabilities beyond {sorted(CAPABILITIES)}: {caps['add']}")
            if "command" not in c:
                self.check_args(cat, c)
        if o["kind"] == "DaemonSet" and pod.get("hostPID") is True:
            # The host's /proc and /sys are mounted read-only, nothing else of the host writable
            # but the agent's own folders.
            for v in pod.get("volumes", []):
                path = v.get("hostPath", {}).get("path")
                if path in ("/proc", "/sys"):
                    mounts = [m for c in pod["containers"] for m in c.get("volumeMounts", [])
                              if m["name"] == v["name"]]
                    if not all(m.get("readOnly") for m in mounts):
                        self.error(at, f"the host's {path} is mounted writable")

    def check_args(self, at, c):
        args = c.get("args", [])
        if not args or args[0] not in self.flags:
            self.error(at, f"args start with {args[:1]}, not a warpscope subcommand")
            return
        env = {e["name"] for e in c.get("env", [])}
        for a in args[1:]:
            for var in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", a):
                if var not in env:
                    self.error(at, f"{a}: $({var}) is not in the container's env")
            if not a.startswith("--"):
                self.error(at, f"{a!r}: write flags as --name=value")
                continue
            flag = a.split("=", 1)[0]
            if flag not in self.flags[args[0]]:
                self.error(at, f"warpscope {args[0]} has no flag {flag} (its --help)")

    def check_service(self, at, o, by_kind):
        sel = o.get("spec", {}).get("selector", {})
        ns = o["metadata"].get("namespace")
        pods = [w["spec"]["template"] for k in WORKLOADS for w in by_kind.get(k, [])
                if w["metadata"].get("namespace") == ns and sel and all(
                    w["spec"]["template"]["metadata"].get("labels", {}).get(a) == b
                    for a, b in sel.items())]
        if len(pods) != 1:
            self.error(at, f"selector {sel} selects {len(pods)} workloads, not one")
            return
        ports = {p.get("name"): p["containerPort"] for c in pods[0]["spec"]["containers"]
                 for p in c.get("ports", [])}
        for p in o["spec"].get("ports", []):
            target = p.get("targetPort", p.get("port"))
            if target not in ports and target not in ports.values():
                self.error(at, f"targetPort {target} is no container port ({ports})")
            elif ports.get(target, target) != p.get("port"):
                self.error(at, f"port {p.get('port')} differs from the container's {target}")

    def check_servicemonitor(self, at, o, by_kind):
        sel = o.get("spec", {}).get("selector", {}).get("matchLabels", {})
        ns = o["metadata"].get("namespace")
        svcs = [s for s in by_kind.get("Service", [])
                if s["metadata"].get("namespace") == ns and sel and
                all(s["metadata"].get("labels", {}).get(a) == b for a, b in sel.items())]
        if len(svcs) != 1:
            self.error(at, f"selector {sel} selects {len(svcs)} Services, not one")
            return
        names = {p.get("name") for p in svcs[0]["spec"].get("ports", [])}
        for e in o["spec"].get("endpoints", []):
            if e.get("port") not in names:
                self.error(at, f"endpoint port {e.get('port')} is not a port of {names}")


def named(by_kind, kind, name, namespace=None):
    return any(x["metadata"].get("name") == name and
               (namespace is None or x["metadata"].get("namespace") == namespace)
               for x in by_kind.get(kind, []))


def find_key(node, key):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key and v is True:
                return True
            if find_key(v, key):
                return True
    elif isinstance(node, list):
        return any(find_key(v, key) for v in node)
    return None


def load(text, where):
    try:
        return [d for d in yaml.safe_load_all(text) if d]
    except yaml.YAMLError as e:
        die(f"{where} is not YAML: {e}")


def strip_helm(node):
    """A copy without Helm's labels (in labels, selectors and matchLabels alike)."""
    if isinstance(node, dict):
        return {k: strip_helm(v) for k, v in node.items() if k not in HELM_LABELS}
    if isinstance(node, list):
        return [strip_helm(v) for v in node]
    return node


def key(o):
    return (o["kind"], o["metadata"]["name"])


def compare(what, chart, plain):
    chart = {key(o): strip_helm(o) for o in chart}
    plain = {key(o): o for o in plain}
    errors = []
    for k in sorted(set(chart) | set(plain)):
        if k not in chart or k not in plain:
            where = "chart" if k in chart else "manifests"
            errors.append(f"{what}: {k[0]} {k[1]} only in the {where}")
        elif chart[k] != plain[k]:
            a = yaml.safe_dump(plain[k], sort_keys=True).splitlines()
            b = yaml.safe_dump(chart[k], sort_keys=True).splitlines()
            diff = "\n".join(difflib.unified_diff(a, b, "manifests", "chart", lineterm="", n=2))
            errors.append(f"{what}: {k[0]} {k[1]} differs:\n{diff}")
    return errors


def help_flags(binary, sub):
    out = subprocess.run([binary, sub, "--help"], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"(--[a-z0-9][a-z0-9-]*)", out))


def main():
    if len(sys.argv) != 2:
        die("usage: check_kubernetes.py BUILD_DIR")
    build = os.path.abspath(sys.argv[1])
    binary = os.path.join(build, "bin", "warpscope")
    if not os.access(binary, os.X_OK):
        die(f"no {binary}: build the warpscope target first")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    flags = {sub: help_flags(binary, sub) for sub in ("agent", "server")}
    checker = Checker(flags, version)

    kube = os.path.join(SRC, "deploy", "kubernetes")
    plain = {}
    for d in (kube, os.path.join(kube, "prometheus-operator")):
        for f in sorted(os.listdir(d)):
            if f.endswith(".yaml"):
                plain[os.path.relpath(os.path.join(d, f), SRC)] = load(
                    open(os.path.join(d, f)).read(), f)
    every = [o for objs in plain.values() for o in objs]
    checker.check("deploy/kubernetes", every)

    chart_dir = os.path.join(SRC, "deploy", "helm", "warpscope")
    chart = yaml.safe_load(open(os.path.join(chart_dir, "Chart.yaml")))
    for field in ("version", "appVersion"):
        if str(chart.get(field)) != version:
            checker.error("Chart.yaml", f"{field} {chart.get(field)} is not {version}")

    go = shutil.which("go")
    if not go:
        die(f"go is missing: {SETUP} (apt-get install golang-go "
            "golang-github-masterminds-sprig-dev golang-gopkg-yaml.v2-dev "
            "golang-gopkg-yaml.v3-dev)")
    renderer = os.path.join(build, "helm_template")
    env = dict(os.environ, GO111MODULE="off", GOPATH="/usr/share/gocode",
               GOCACHE=os.path.join(build, "go-cache"), GOFLAGS="")
    r = subprocess.run([go, "build", "-o", renderer,
                        os.path.join(SRC, "scripts", "helm_template", "main.go")],
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"building scripts/helm_template failed: {SETUP} (Go's sprig and YAML "
            f"packages):\n{r.stderr}")

    def render(*args):
        r = subprocess.run([renderer, "--name", "warpscope", "--namespace", "warpscope", *args,
                            chart_dir], capture_output=True, text=True)
        if r.returncode != 0:
            die(f"rendering the chart with {list(args)} failed:\n{r.stderr}")
        objs = load(r.stdout, f"the chart with {list(args)}")
        checker.check(f"chart {' '.join(args) or '(defaults)'}", objs)
        return objs

    def find(objs, kind):
        return next((o for o in objs if o["kind"] == kind), None)

    def args_of(objs, kind):
        w = find(objs, kind)
        return w and w["spec"]["template"]["spec"]["containers"][0]["args"]

    errors = []
    without_ns = [o for o in every if o["kind"] not in ("Namespace", "ServiceMonitor")]
    errors += compare("chart (defaults) vs deploy/kubernetes", render(), without_ns)
    errors += compare("chart serviceMonitor.enabled vs deploy/kubernetes",
                      render("--set", "serviceMonitor.enabled=true"),
                      [o for o in every if o["kind"] != "Namespace"])

    objs = render("--set", "auth.tokenSecret=warpscope-token")
    for kind in WORKLOADS:
        w = find(objs, kind)
        vols = [v for v in w["spec"]["template"]["spec"]["volumes"] if "secret" in v]
        if "--auth-token-file=/etc/warpscope/token/token" not in args_of(objs, kind) or \
                [v["secret"]["secretName"] for v in vols] != ["warpscope-token"]:
            errors.append(f"auth.tokenSecret: the {kind} does not mount the token and pass it")

    objs = render("--set", "server.enabled=false", "--set", "server.url=http://10.0.0.5:9410")
    if (find(objs, "StatefulSet") or
            "--server=http://10.0.0.5:9410" not in args_of(objs, "DaemonSet")):
        errors.append("server.enabled=false: a StatefulSet is left, or server.url is ignored")
    objs = render("--set", "server.enabled=false")
    if any(a.startswith("--server") for a in args_of(objs, "DaemonSet")):
        errors.append("server.enabled=false without server.url: the agent still pushes")
    objs = render("--set", "server.otlpGrpcPort=0")
    service = next(o for o in objs if o["kind"] == "Service" and "server" in o["metadata"]["name"])
    if (any(a.startswith("--otlp-grpc") for a in args_of(objs, "StatefulSet")) or
            any(p["name"] == "otlp-grpc" for p in service["spec"]["ports"])):
        errors.append("server.otlpGrpcPort=0: the OTLP/gRPC listener or its port is left")
    if "--otlp-grpc-listen-address=:4317" not in args_of(render(), "StatefulSet"):
        errors.append("the chart's defaults do not start the OTLP/gRPC listener on 4317")
    objs = render("--set", "agent.enabled=false")
    if find(objs, "DaemonSet") or find(objs, "ClusterRole") or not find(objs, "StatefulSet"):
        errors.append("agent.enabled=false: agent objects are left, or the server is gone")

    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        yaml.safe_dump({
            "image": {"agentRepository": "gpu-team/warpscope-agent",
                      "serverRepository": "gpu-team/warpscope-server",
                      "pullPolicy": "Always", "pullSecrets": [{"name": "pull"}]},
            "agent": {"extraArgs": ["--tags=cluster:a", "--top-processes=20"],
                      "nodeSelector": {"nvidia.com/gpu.present": None, "gpu": "yes"},
                      "tolerations": [{"operator": "Exists"}],
                      "runtimeClassName": "nvidia", "kubernetes": False, "cudaProfiler": False},
            "server": {"storage": {"size": "100Gi", "storageClass": "fast"}},
            "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
        }, f)
        f.flush()
        objs = render("-f", f.name)
    ds, sts = find(objs, "DaemonSet"), find(objs, "StatefulSet")
    pod = ds["spec"]["template"]["spec"]
    claim = sts["spec"]["volumeClaimTemplates"][0]["spec"]
    args = args_of(objs, "DaemonSet")
    for ok, what in [
        (pod["containers"][0]["image"] == f"gpu-team/warpscope-agent:{version}", "image"),
        (pod["containers"][0].get("imagePullPolicy") == "Always", "pullPolicy"),
        (pod.get("imagePullSecrets") == [{"name": "pull"}], "pullSecrets"),
        (args[-2:] == ["--tags=cluster:a", "--top-processes=20"], "agent.extraArgs"),
        ("--kubernetes" not in args and "--cuda-profiler" not in args,
         "agent.kubernetes/cudaProfiler"),
        (pod["nodeSelector"] == {"gpu": "yes"}, "agent.nodeSelector"),
        (pod["tolerations"] == [{"operator": "Exists"}], "agent.tolerations"),
        (pod.get("runtimeClassName") == "nvidia", "agent.runtimeClassName"),
        (claim.get("storageClassName") == "fast" and
         claim["resources"]["requests"]["storage"] == "100Gi", "server.storage"),
        (all(m["metadata"]["labels"].get("release") == "prometheus"
             for m in objs if m["kind"] == "ServiceMonitor"), "serviceMonitor.labels"),
    ]:
        if not ok:
            errors.append(f"values file: {what} is not applied")

    errors = checker.errors + errors
    if errors:
        die(f"{len(errors)} problem(s):\n" + "\n".join(errors))
    print(f"check_kubernetes: {len(every)} manifest objects and 7 chart renderings OK")


if __name__ == "__main__":
    main()
