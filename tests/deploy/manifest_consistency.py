"""What deploy/'s files and the docs must agree on, beyond each file being valid on its own.

Each check takes the parsed documents (and texts) and returns a list of problems, each a
sentence naming the file and what is wrong, so tests/deploy/manifests_test.py can run it on
the real files and on mutated copies (its controls) alike. Pure: reads nothing itself.

- `metrics_endpoint`: vxfedd is started with `--metrics-listen $(NODE_IP):PORT`, its container
  declares PORT under the name the PodMonitor and the scrape config select, and both select
  the DaemonSet's pods in its namespace (else Prometheus finds no target).
- `image_refs`: every image is fully qualified and is the reference scripts/build-image.sh
  tags (a bare `vxfed:X` is docker.io/library/vxfed:X to containerd).
- `namespaces_and_names`: every namespace an object of a file lives in is created by that
  file or by the DaemonSet's file; no two objects of one file share kind, namespace and name
  (kubectl apply would keep only the last).
- `pod_security`: a namespace holding pods that use the host's network, PIDs or paths, or add
  capabilities, carries `pod-security.kubernetes.io/enforce: privileged`.
- `guaranteed_for_exclusive_cpus`: a pod whose container has an integer CPU request (the
  dataplane's exclusive CPUs under the static CPU manager) is Guaranteed: every container,
  init containers too, has cpu and memory requests equal to its limits.
- `doc_ipam_statements`: where a doc names a NAD file and then IPAM types in parentheses,
  the types said of each file are the ones its NADs use.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set

# The namespaces a cluster always has.
BUILTIN_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease"}
# Kinds that live in no namespace.
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass", "CustomResourceDefinition"}
PSA_LABEL = "pod-security.kubernetes.io/enforce"
IPAM_TYPES = ("host-local", "static", "whereabouts", "dhcp")


def _pod_spec(body: dict) -> Optional[dict]:
    if body.get("kind") == "DaemonSet":
        return ((body.get("spec") or {}).get("template") or {}).get("spec")
    if body.get("kind") == "Pod":
        return body.get("spec")
    return None


def _containers(spec: dict) -> Iterable[dict]:
    yield from spec.get("initContainers") or []
    yield from spec.get("containers") or []


def _argv(c: dict) -> List[str]:
    return list(c.get("command") or []) + list(c.get("args") or [])


def _opt(argv: List[str], name: str) -> Optional[str]:
    value = None
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith(name + "="):
            value = a[len(name) + 1:]
    return value


def metrics_endpoint(daemonset: dict, podmonitor: dict, scrape_config: dict) -> List[str]:
    errs = []
    ns = daemonset["metadata"].get("namespace", "default")
    tmpl_labels = ((daemonset["spec"]["template"].get("metadata") or {}).get("labels") or {})
    spec = daemonset["spec"]["template"]["spec"]
    vxfedd = next((c for c in spec.get("containers") or [] if Path(_argv(c)[0] if _argv(c) else "").name == "vxfedd"), None)
    if vxfedd is None:
        return ["vxfed-daemonset.yaml: no container runs vxfedd"]
    where = f"vxfed-daemonset.yaml container {vxfedd['name']}"
    listen = _opt(_argv(vxfedd), "--metrics-listen")
    port = None
    if listen is None:
        errs.append(f"{where}: no --metrics-listen: vxfedd serves its metrics on 127.0.0.1:9472 only, "
                    "which no Prometheus outside the node reaches; give --metrics-listen $(NODE_IP):9472")
    else:
        host, _, p = listen.rpartition(":")
        if host != "$(NODE_IP)":
            errs.append(f"{where}: --metrics-listen {listen}: the address must be $(NODE_IP), the node's address "
                        "(hostNetwork), where the scrape targets point")
        port = int(p) if p.isdigit() else None
    ports = {pt.get("name"): pt for pt in vxfedd.get("ports") or []}
    mon_ports = [e.get("port") for e in (podmonitor.get("spec") or {}).get("podMetricsEndpoints") or []]
    for name in mon_ports:
        if name not in ports:
            errs.append(f"podmonitor.yaml: scrapes port '{name}', which {where} does not declare (declared: {sorted(ports)})")
        elif port is not None and ports[name].get("containerPort") != port:
            errs.append(f"podmonitor.yaml: port '{name}' is containerPort {ports[name].get('containerPort')} "
                        f"but vxfedd listens on {port} (--metrics-listen {listen})")
    sel = ((podmonitor.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    if any(tmpl_labels.get(k) != v for k, v in sel.items()):
        errs.append(f"podmonitor.yaml: selector {sel} does not match the DaemonSet's pod labels {tmpl_labels}")
    names = (((podmonitor.get("spec") or {}).get("namespaceSelector") or {}).get("matchNames")) or []
    if ns not in names:
        errs.append(f"podmonitor.yaml: namespaceSelector {names} leaves out the DaemonSet's namespace {ns}")
    for job in scrape_config.get("scrape_configs") or []:
        w = f"scrape-config.yaml job {job.get('job_name')}"
        sd_names = [n for sd in job.get("kubernetes_sd_configs") or [] for n in ((sd.get("namespaces") or {}).get("names") or [])]
        if ns not in sd_names:
            errs.append(f"{w}: its namespaces {sd_names} leave out the DaemonSet's namespace {ns}")
        for r in job.get("relabel_configs") or []:
            if r.get("action") != "keep":
                continue
            src = r.get("source_labels") or []
            regex = "^(?:" + r.get("regex", "(.*)") + ")$"
            if src == ["__meta_kubernetes_pod_container_port_name"]:
                if not any(re.match(regex, n or "") for n in ports):
                    errs.append(f"{w}: keeps container ports matching '{r.get('regex')}', {where} declares {sorted(ports)}")
                elif port is not None and not any(re.match(regex, n or "") and pt.get("containerPort") == port
                                                  for n, pt in ports.items()):
                    errs.append(f"{w}: the port it keeps is not vxfedd's --metrics-listen port {port}")
            m = re.fullmatch(r"__meta_kubernetes_pod_label_(\w+)", src[0]) if len(src) == 1 else None
            if m and not re.match(regex, str(tmpl_labels.get(m.group(1), ""))):
                errs.append(f"{w}: keeps pods whose label {m.group(1)} matches '{r.get('regex')}', "
                            f"the DaemonSet's pods have {tmpl_labels}")
    return errs


def built_image_ref(build_image_sh: str, version: str) -> Optional[str]:
    """The reference scripts/build-image.sh tags without --tag, with the version filled in."""
    m = re.search(r'^image_ref=\$\{tag:-([^}]+)\}', build_image_sh, re.M)
    return m.group(1).replace("$version", version).replace("${version}", version) if m else None


def fully_qualified(ref: str) -> bool:
    """A reference every runtime resolves to the same image: registry host first."""
    first, slash, _ = ref.partition("/")
    return bool(slash) and ("." in first or ":" in first or first == "localhost")


def image_refs(docs: Iterable, built: Optional[str]) -> List[str]:
    errs = []
    if not built:
        return ["scripts/build-image.sh: no `image_ref=${tag:-...}` line to read the image's reference from"]
    for d in docs:
        spec = _pod_spec(d.body)
        if spec is None or d.body.get("kind") == "Pod":   # the example pod runs debian:12, not ours
            continue
        for c in _containers(spec):
            img = c.get("image", "")
            if not fully_qualified(img):
                errs.append(f"{d.where} container {c.get('name')}: image {img} is not fully qualified "
                            f"(containerd reads a bare name as docker.io/library/...): use {built}")
            elif img != built:
                errs.append(f"{d.where} container {c.get('name')}: image {img}, but scripts/build-image.sh tags {built}")
    return errs


def namespaces_and_names(docs: List, home_file: str = "vxfed-daemonset.yaml") -> List[str]:
    errs = []
    by_file: Dict[Path, List] = {}
    for d in docs:
        by_file.setdefault(d.path, []).append(d)
    home = {d.body["metadata"]["name"] for d in docs if d.path.name == home_file and d.body.get("kind") == "Namespace"}
    for path, ds in by_file.items():
        created = {d.body["metadata"]["name"] for d in ds if d.body.get("kind") == "Namespace"}
        seen: Dict[tuple, object] = {}
        for d in ds:
            kind, meta = d.body.get("kind"), d.body.get("metadata") or {}
            ns = None if kind in CLUSTER_SCOPED else meta.get("namespace", "default")
            if ns and ns not in created | home | BUILTIN_NAMESPACES:
                errs.append(f"{d.where}: namespace {ns} is created neither in {path.name} nor in {home_file}: "
                            "kubectl apply fails with 'namespaces not found'")
            key = (d.body.get("apiVersion", "").split("/")[0] if "/" in d.body.get("apiVersion", "") else "", kind, ns,
                   meta.get("name"))
            if key in seen:
                errs.append(f"{d.where}: {kind} {ns + '/' if ns else ''}{meta.get('name')} is defined twice in {path.name} "
                            f"(also {seen[key].where}): kubectl apply keeps only the last")
            seen[key] = d
    return errs


def _needs_privileged(spec: dict) -> Optional[str]:
    """Why a pod spec is above the Pod Security "baseline" level, or None."""
    for f in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(f):
            return f
    if any("hostPath" in v for v in spec.get("volumes") or []):
        return "hostPath volumes"
    baseline_caps = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                     "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
    for c in _containers(spec):
        sec = c.get("securityContext") or {}
        if sec.get("privileged"):
            return f"container {c.get('name')} privileged"
        extra = set((sec.get("capabilities") or {}).get("add") or []) - baseline_caps
        if extra:
            return f"container {c.get('name')} adds {', '.join(sorted(extra))}"
    return None


def pod_security(docs: List) -> List[str]:
    errs = []
    namespaces = {}
    for d in docs:
        if d.body.get("kind") == "Namespace":
            namespaces.setdefault(d.body["metadata"]["name"], []).append(d)
    for d in docs:
        spec = _pod_spec(d.body)
        why = _needs_privileged(spec) if spec else None
        if not why:
            continue
        ns = (d.body.get("metadata") or {}).get("namespace", "default")
        for n in namespaces.get(ns, []):
            labels = (n.body["metadata"].get("labels") or {})
            if labels.get(PSA_LABEL) != "privileged":
                errs.append(f"{n.where}: its pods need the Pod Security level privileged ({d.where}: {why}), but the "
                            f"namespace has {PSA_LABEL}={labels.get(PSA_LABEL)!r}: a cluster enforcing baseline or "
                            "restricted by default refuses them")
    return errs


def _cpu_integer(q) -> bool:
    return isinstance(q, int) or (isinstance(q, str) and q.isdigit())


def guaranteed_for_exclusive_cpus(docs: List) -> List[str]:
    errs = []
    for d in docs:
        spec = _pod_spec(d.body)
        if not spec:
            continue
        cs = list(_containers(spec))
        wants = [c["name"] for c in cs if _cpu_integer(((c.get("resources") or {}).get("requests") or {}).get("cpu"))]
        if not wants:
            continue
        for c in cs:
            res = c.get("resources") or {}
            req, lim = res.get("requests") or {}, res.get("limits") or {}
            for r in ("cpu", "memory"):
                if r not in lim or str(req.get(r, lim[r])) != str(lim[r]):
                    errs.append(f"{d.where} container {c['name']}: {r} requests {req.get(r)} / limits {lim.get(r)}: "
                                f"the pod is not Guaranteed, so {', '.join(wants)} gets no exclusive CPUs from the "
                                "static CPU manager; give every container equal requests and limits of cpu and memory")
    return errs


def realtime_workers(docs: List) -> List[str]:
    """The dataplane runs its workers real-time (--worker-rt-priority N > 0: docs/dataplane.md,
    "Real-time workers"), which needs CAP_SYS_NICE; without it the workers fall back to
    ordinary threads and the latency on a busy node is lost with only a log line to say so."""
    errs = []
    for d in docs:
        spec = _pod_spec(d.body)
        for c in (_containers(spec) if spec else []):
            argv = _argv(c)
            if not argv or not argv[0].endswith("vxfed-dataplane"):
                continue
            priority = _opt(argv, "--worker-rt-priority")
            caps = ((c.get("securityContext") or {}).get("capabilities") or {}).get("add") or []
            if priority is None or priority == "0":
                errs.append(f"{d.where} container {c['name']}: no --worker-rt-priority: its workers queue behind "
                            "the node's other processes when a packet wakes them (p99 ~2 ms under CPU load)")
            elif "SYS_NICE" not in caps:
                errs.append(f"{d.where} container {c['name']}: --worker-rt-priority {priority} without the SYS_NICE "
                            "capability: the workers would fall back to ordinary threads")
    return errs


def nad_ipam_types(docs: List) -> Dict[str, Set[str]]:
    """File name -> the IPAM types its NADs use."""
    out: Dict[str, Set[str]] = {}
    for d in docs:
        if d.body.get("kind") == "NetworkAttachmentDefinition":
            conf = json.loads(d.body["spec"]["config"])
            out.setdefault(d.path.name, set()).add((conf.get("ipam") or {}).get("type", ""))
    return out


def doc_ipam_statements(doc_name: str, text: str, types: Dict[str, Set[str]]) -> List[str]:
    """In each paragraph of `text` naming a NAD file, the IPAM types named between one file's
    name and the next are that file's."""
    errs = []
    for para in re.split(r"\n\s*\n", text):
        marks = list(re.finditer(r"deploy/(nad-[\w.-]+\.yaml)", para))
        if not marks:
            continue
        for i, m in enumerate(marks):
            seg = para[m.end(): marks[i + 1].start() if i + 1 < len(marks) else len(para)]
            # What a paragraph says of a file's IPAM is in parentheses: "NADs for cluster A (host-local, static)".
            groups = " ".join(re.findall(r"\(([^()]*)\)", seg))
            said = {t for t in IPAM_TYPES if re.search(r"(?<![\w-])" + re.escape(t) + r"(?![\w-])", groups)}
            if not said:
                continue
            has = types.get(m.group(1))
            if has is None:
                errs.append(f"{doc_name}: names deploy/{m.group(1)}, which holds no NetworkAttachmentDefinition")
            elif said != has:
                errs.append(f"{doc_name}: says deploy/{m.group(1)} uses {', '.join(sorted(said))}; "
                            f"its NADs use {', '.join(sorted(has))}")
    return errs
