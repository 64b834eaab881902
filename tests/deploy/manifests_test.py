#!/usr/bin/python3
"""deploy/*.yaml against the Kubernetes API types and against the programs they run.

1. Every document validates strictly against the API types (vxfed_harness.k8s_schema: unknown
   fields, wrong types, missing required fields, bad enumerations are errors); the
   NetworkAttachmentDefinitions' metadata too, and their CNI configs pass `vxfed --check`.
2. Every container command (and exec probe) of the DaemonSet runs with `--check`, the
   programs' dry-run mode, as Kubernetes would start it: $(VAR) expanded from the container's
   env (fieldRefs of a made-up node), image paths mapped to the build's binaries through
   deploy/image/layout, configMap mounts to the ConfigMap's keys written out. Each must exit 0.
3. What the daemons use is there: the vxfedd config's sockets, state dir and FRR paths sit on
   mounts, shared with the containers and the host paths that must see them; the dataplane's
   CPUs match --queues; no container is privileged and every added capability has a comment.
4. The files agree with each other and with the docs (manifest_consistency.py): vxfedd's
   metrics port passed, declared and the one deploy/monitoring/ scrapes; the images fully
   qualified and what scripts/build-image.sh tags; every namespace used is created, no object
   defined twice in a file; the pod-security label the node pods need; a Guaranteed pod where
   the dataplane wants exclusive CPUs; what docs/cni.md and docs/deploy.md say of each NAD
   file's IPAM, and docs/deploy.md's package count against deploy/image/packages.lock.
5. Controls: the defects this test was written for are caught (the old `-l 2,3` with
   `--queues 2`; an -l CPU outside this process's affinity; a misspelled field; a wrong type;
   each mismatch of 4 in a mutated copy), so a green run means something.
"""

import copy
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import vxfed_harness as t
from vxfed_harness import k8s_schema, manifests as mf
from vxfed_harness.env import SOURCE_DIR

import manifest_consistency as mc

failures = []


def fail(msg: str) -> None:
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def opt(argv, name):
    """The value of `name VALUE` in argv (the last one), or None."""
    value = None
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            value = argv[i + 1]
    return value


def run_check(argv, where, expect_ok=True):
    r = subprocess.run(argv + ["--check"], capture_output=True, text=True, timeout=60)
    out = (r.stdout + r.stderr).strip()
    if (r.returncode == 0) != expect_ok:
        fail(f"{where}: `{' '.join(argv)} --check` exited {r.returncode}: {out}")
    else:
        t.log(f"{where}: {out.splitlines()[-1] if out else '(no output)'}")
    return r.returncode, out


def mount_for(container, path):
    """The volumeMount whose mountPath holds `path`, longest first."""
    best = None
    for m in container.get("volumeMounts") or []:
        mp = m["mountPath"].rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            if best is None or len(mp) > len(best["mountPath"]):
                best = m
    return best


def host_path_of(spec, container, path):
    """Where `path` of the container is on the host, when it sits on a hostPath volume."""
    m = mount_for(container, path)
    if not m:
        return None
    vol = next(v for v in spec["volumes"] if v["name"] == m["name"])
    if "hostPath" not in vol:
        return None
    return vol["hostPath"]["path"].rstrip("/") + path[len(m["mountPath"].rstrip("/")):]


def check_types(docs):
    for d in docs:
        if d.body.get("kind") == "NetworkAttachmentDefinition":
            b = d.body
            errs = []
            if b.get("apiVersion") != "k8s.cni.cncf.io/v1":
                errs.append(f"apiVersion {b.get('apiVersion')!r} (expected k8s.cni.cncf.io/v1)")
            unknown = set(b) - {"apiVersion", "kind", "metadata", "spec"}
            errs += [f"{k}: unknown field" for k in sorted(unknown)]
            errs += k8s_schema.validate_object_meta(b.get("metadata"))
            spec = b.get("spec") or {}
            errs += [f"spec.{k}: unknown field (a NetworkAttachmentDefinition has spec.config)" for k in sorted(set(spec) - {"config"})]
            if not isinstance(spec.get("config"), str):
                errs.append("spec.config: must be a string holding the CNI config")
        else:
            errs = k8s_schema.validate(d.body)
        for e in errs:
            fail(f"{d.where}: {e}")
        if not errs:
            t.log(f"{d.where}: valid")


def check_nads(docs, plugin):
    for d, conf in mf.nad_configs(docs):
        r = subprocess.run([str(plugin), "--check", "-"], input=json.dumps(conf), capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"{d.where}: its CNI config: {r.stderr.strip()}")
        else:
            t.log(f"{d.where}: {r.stdout.strip()}")


def check_reflectors(docs, w: Path):
    """Every reflector config in a ConfigMap passes `vxfed-reflector --check`."""
    tool = t.require_binary("bgp/vxfed-reflector")
    for d in docs:
        if d.body.get("kind") != "ConfigMap":
            continue
        for key, text in (d.body.get("data") or {}).items():
            if not key.endswith("reflector.yaml"):
                continue
            path = w / key
            path.write_text(text)
            r = subprocess.run([str(tool), "--config", str(path), "--check"], capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"{d.where}: {key}: {r.stderr.strip()}")
            else:
                t.log(f"{d.where}: {r.stdout.strip()}")


def check_raw_text(docs):
    """Rules about the files as written: comments on capabilities, no privileged."""
    for path in sorted({d.path for d in docs}):
        lines = path.read_text().splitlines()
        in_add = False
        for n, line in enumerate(lines, 1):
            stripped = line.strip()
            if re.match(r"add:\s*$", stripped):
                in_add = True
                continue
            if in_add and re.match(r"- [A-Z_]+\b", stripped):
                if "#" not in stripped:
                    fail(f"{path.name}:{n}: capability {stripped[2:].split()[0]} without a comment saying why")
                continue
            in_add = False
            if re.search(r"add:\s*\[", stripped) and "#" not in stripped:
                fail(f"{path.name}:{n}: capabilities added without a comment saying why")
    for d in docs:
        for spec, c, _ in mf.pod_containers(d.body):
            if (c.get("securityContext") or {}).get("privileged"):
                fail(f"{d.where} container {c['name']}: privileged; give capabilities instead")


def check_commands(docs, workdir):
    layout = mf.image_layout()
    missing = [f"{p} <- {f}" for p, f in layout.items() if not f.exists()]
    if missing:
        t.skip(f"build first: {missing}")
    cms = mf.config_maps(docs)
    version = mf.project_version()
    seen = set()
    for d in docs:
        if d.body.get("kind") != "DaemonSet":
            continue
        ns = d.body["metadata"].get("namespace", "default")
        for spec, c, kind in mf.pod_containers(d.body):
            where = f"{d.where} {kind} container {c['name']}"
            if mf.image_version(c["image"]) != version:
                fail(f"{where}: image {c['image']} but the project's version is {version}")
            env = mf.container_env(c, ns, cms)
            argv = mf.container_argv(c, env)
            for a in argv:
                for var in mf.unexpanded(a):
                    fail(f"{where}: $({var}) is not in the container's env: the program would get it literally")
            mounts = mf.write_config_mounts(spec, c, ns, cms, workdir)
            program = argv[0]
            if program not in layout:
                fail(f"{where}: {program} is not a file of the image (deploy/image/layout)")
                continue
            seen.add(program)
            run_check(mf.host_command(argv, layout, mounts), where)
            probe = ((c.get("readinessProbe") or {}).get("exec") or {}).get("command")
            if probe:
                run_check(mf.host_command([mf.expand(a, env) for a in probe], layout, mounts), where + " readinessProbe")
            check_mounts(spec, c, argv, mounts, cms, ns, where)
    for program in ("/opt/vxfed/bin/vxfed-dataplane", "/opt/vxfed/bin/vxfedd", "/opt/vxfed/install-cni.sh",
                    "/opt/vxfed/frr-node.sh"):
        if program not in seen:
            fail(f"no container of the DaemonSet runs {program}")


def check_mounts(spec, c, argv, mounts, cms, ns, where):
    import yaml

    containers = {x["name"]: x for x in (spec.get("containers") or []) + (spec.get("initContainers") or [])}
    program = Path(argv[0]).name
    if program == "vxfedd":
        conf_path = opt(argv, "--config")
        text = (mounts[str(Path(conf_path).parent)] / Path(conf_path).name).read_text()
        conf = yaml.safe_load(text)
        daemon, dp = conf.get("daemon") or {}, conf.get("dataplane") or {}
        frr = ((conf.get("bgp") or {}).get("frr") or {})
        used = {
            "daemon.socket": daemon.get("socket", "/run/vxfed/vxfedd.sock"),
            "daemon.state_dir": daemon.get("state_dir", "/var/lib/vxfed") + "/x",
            "dataplane.socket": dp.get("socket", "/run/vxfed/dataplane.sock"),
            "bgp.frr.config_path": frr.get("config_path", "/etc/frr/frr.conf"),
            "bgp.frr.vty_socket_dir": (frr.get("vty_socket_dir") or "/run/frr") + "/x",
            "eBPF pins": "/sys/fs/bpf/vxfed",
            "pods' network namespaces": "/run/netns/x",
        }
        for what, path in used.items():
            if not mount_for(c, path):
                fail(f"{where}: {what} ({path}) is not on any volume: it would live and die with the container")
        if not spec.get("hostPID"):
            fail(f"{where}: the pod needs hostPID (vxfedd opens /proc/<pid>/ns/net paths of pods)")
        if not spec.get("hostNetwork"):
            fail(f"{where}: the pod needs hostNetwork")
        for path in ("/sys/fs/bpf/vxfed", "/run/netns/x"):
            m = mount_for(c, path)
            if m and m.get("mountPropagation") not in ("HostToContainer", "Bidirectional"):
                fail(f"{where}: {m['mountPath']} needs mountPropagation HostToContainer (mounts made after the start)")
        # The CNI plugin runs on the host: the socket in its conflist must be vxfedd's, seen from the host.
        sock_host = host_path_of(spec, c, used["daemon.socket"])
        for data in cms.values():
            for key, value in data.items():
                if key.endswith(".conflist"):
                    plugin = json.loads(value)["plugins"][0]
                    want = plugin.get("socket", "/run/vxfed/vxfedd.sock")
                    if sock_host != want:
                        fail(f"{where}: the conflist {key} reaches vxfedd at {want}, but its socket is at {sock_host} on the host")
        # The dataplane's API socket and FRR's directories are shared with the other containers.
        dpc = next((x for x in containers.values() if Path((x.get("command") or [""])[0]).name == "vxfed-dataplane"), None)
        frc = next((x for x in containers.values() if Path((x.get("command") or [""])[0]).name == "frr-node.sh"), None)
        if dpc:
            api = opt(dpc["command"] + (dpc.get("args") or []), "--api-socket")
            a, b = mount_for(dpc, api or "/"), mount_for(c, used["dataplane.socket"])
            if not a or not b or a["name"] != b["name"] or api != used["dataplane.socket"]:
                fail(f"{where}: dataplane.socket {used['dataplane.socket']} is not the dataplane's --api-socket {api} on a shared volume")
        if frc:
            fargv = frc["command"] + (frc.get("args") or [])
            for mine, theirs in ((used["bgp.frr.config_path"], (opt(fargv, "--conf-dir") or "/etc/frr") + "/frr.conf"),
                                 (used["bgp.frr.vty_socket_dir"], (opt(fargv, "--run-dir") or "/run/frr") + "/x")):
                a, b = mount_for(c, mine), mount_for(frc, theirs)
                if not a or not b or a["name"] != b["name"] or str(Path(mine).parent) != str(Path(theirs).parent):
                    fail(f"{where}: {mine} is not FRR's {theirs} on a shared volume")
    if program == "vxfed-dataplane":
        eal = argv[1:argv.index("--")] if "--" in argv else argv[1:]
        ours = argv[argv.index("--") + 1:] if "--" in argv else []
        queues = int(opt(ours, "--queues") or 1)
        res = c.get("resources") or {}
        if not any(a in ("-l", "-c", "--lcores") or a.startswith(("-l", "-c", "--lcores=")) for a in eal):
            req, lim = (res.get("requests") or {}).get("cpu"), (res.get("limits") or {}).get("cpu")
            if req != lim or not (req or "").isdigit() or int(req) < queues + 1:
                fail(f"{where}: without -l the lcores are the container's CPUs: cpu requests = limits = an integer >= "
                     f"--queues + 1 = {queues + 1} (exclusive CPUs under the static CPU manager), got {req}/{lim}")
        if "--no-huge" not in eal:
            if not any(k.startswith("hugepages-") for k in (res.get("limits") or {})):
                fail(f"{where}: hugepage mode without a hugepages-2Mi/1Gi limit")
        api = opt(ours, "--api-socket")
        if api and not mount_for(c, api):
            fail(f"{where}: --api-socket {api} is not on a volume")


def monitoring():
    import yaml

    d = SOURCE_DIR / "deploy" / "monitoring"
    return yaml.safe_load((d / "podmonitor.yaml").read_text()), yaml.safe_load((d / "scrape-config.yaml").read_text())


def locked_packages() -> int:
    lines = (SOURCE_DIR / "deploy" / "image" / "packages.lock").read_text().splitlines()
    return sum(1 for x in lines if x.strip() and not x.startswith("#"))


def doc_package_counts(text: str, locked: int):
    """docs/deploy.md's "N packages" / "N .deb files" of the image: the lock's count."""
    return [f"docs/deploy.md: says {m.group(0)}, deploy/image/packages.lock holds {locked}"
            for m in re.finditer(r"\b(\d+) (?:packages|\.deb files)\b", text) if int(m.group(1)) != locked]


def consistency_problems(docs, podmon, scrape, docs_text):
    """Every problem of manifest_consistency.py's checks (and the package count) on these inputs."""
    ds = next(d for d in docs if d.body.get("kind") == "DaemonSet").body
    built = mc.built_image_ref((SOURCE_DIR / "scripts" / "build-image.sh").read_text(), mf.project_version())
    types = mc.nad_ipam_types(docs)
    errs = mc.metrics_endpoint(ds, podmon, scrape) + mc.image_refs(docs, built) + mc.namespaces_and_names(docs)
    errs += mc.pod_security(docs) + mc.guaranteed_for_exclusive_cpus(docs) + mc.realtime_workers(docs)
    for name, text in docs_text.items():
        errs += mc.doc_ipam_statements(name, text, types)
    errs += doc_package_counts(docs_text["docs/deploy.md"], locked_packages())
    return errs


def docs_texts():
    return {n: (SOURCE_DIR / n).read_text() for n in ("docs/cni.md", "docs/deploy.md")}


def check_consistency(docs):
    podmon, scrape = monitoring()
    errs = consistency_problems(docs, podmon, scrape, docs_texts())
    for e in errs:
        fail(e)
    if not errs:
        t.log("consistency: metrics port passed, declared and scraped; images as build-image.sh tags them; "
              "namespaces created, no name twice; pod-security label; a Guaranteed pod; real-time workers with "
              "SYS_NICE; the docs' NAD IPAM and "
              "package count")


def consistency_controls(docs):
    """Each mismatch manifest_consistency.py exists for, made in a copy, is reported."""
    podmon, scrape = monitoring()
    texts = docs_texts()
    ds_doc = next(d for d in docs if d.body.get("kind") == "DaemonSet")

    def mutated_ds(change):
        body = copy.deepcopy(ds_doc.body)
        change(body["spec"]["template"]["spec"], body)
        return [mf.Document(d.path, d.index, body) if d is ds_doc else d for d in docs]

    def vxfedd(spec):
        return next(c for c in spec["containers"] if c["name"] == "vxfedd")

    def drop_metrics_listen(spec, _):
        c = vxfedd(spec)
        i = c["command"].index("--metrics-listen")
        del c["command"][i:i + 2]

    def bare_image(spec, _):
        spec["containers"][0]["image"] = "vxfed:" + mf.project_version()

    def no_psa_label(d):
        return [mf.Document(d.path, d.index, {**d.body, "metadata": {"name": d.body["metadata"]["name"]}})
                if d.body.get("kind") == "Namespace" else d for d in docs]

    nad_a = [d for d in docs if d.path.name == "nad-cross-cluster.yaml"]
    nad_b = next(d for d in docs if d.path.name == "nad-cross-cluster-b.yaml" and d.body.get("kind") == "NetworkAttachmentDefinition")
    # The file as it was: cluster B's NAD beside cluster A's, and no Namespace.
    old_nad = [d for d in docs if d.path.name != "nad-cross-cluster-b.yaml"
               and not (d.path.name == "nad-cross-cluster.yaml" and d.body.get("kind") == "Namespace")]
    old_nad.append(mf.Document(nad_a[0].path, 99, copy.deepcopy(nad_b.body)))
    old_cni = texts["docs/cni.md"] + ("\n\n`deploy/nad-cross-cluster.yaml`: NADs for cluster A (host-local, static) and "
                                      "cluster B\n(whereabouts), and a pod using one with a MAC and a rate limit.\n")
    other_port = copy.deepcopy(podmon)
    other_port["spec"]["podMetricsEndpoints"][0]["port"] = "http-metrics"
    other_keep = copy.deepcopy(scrape)
    for r in other_keep["scrape_configs"][0]["relabel_configs"]:
        if r.get("source_labels") == ["__meta_kubernetes_pod_container_port_name"]:
            r["regex"] = "prometheus"
    cases = [
        ("vxfedd without --metrics-listen", mutated_ds(drop_metrics_listen), podmon, scrape, texts, "no --metrics-listen"),
        ("vxfedd's metrics port not declared", mutated_ds(lambda spec, _: vxfedd(spec).pop("ports")), podmon, scrape, texts,
         "does not declare"),
        ("the PodMonitor scraping another port name", docs, other_port, scrape, texts, "scrapes port 'http-metrics'"),
        ("the scrape config keeping another port name", docs, podmon, other_keep, texts, "keeps container ports"),
        ("a bare image name", mutated_ds(bare_image), podmon, scrape, texts, "is not fully qualified"),
        ("the old nad-cross-cluster.yaml (no namespace, fed-a twice)", old_nad, podmon, scrape, texts,
         "namespace training is created neither"),
        ("the old nad-cross-cluster.yaml (fed-a twice)", old_nad, podmon, scrape, texts, "is defined twice"),
        ("a namespace without the pod-security label", no_psa_label(ds_doc), podmon, scrape, texts, "pod-security.kubernetes.io/enforce"),
        ("vxfedd without resources (pod not Guaranteed)", mutated_ds(lambda spec, _: vxfedd(spec).pop("resources")), podmon,
         scrape, texts, "is not Guaranteed"),
        ("the dataplane's real-time workers without SYS_NICE",
         mutated_ds(lambda spec, _: spec["containers"][0]["securityContext"]["capabilities"]["add"].remove("SYS_NICE")),
         podmon, scrape, texts, "without the SYS_NICE capability"),
        ("docs/cni.md's old whereabouts sentence", docs, podmon, scrape, {**texts, "docs/cni.md": old_cni}, "uses host-local, static, whereabouts"),
        ("a stale package count", docs, podmon, scrape, {**texts, "docs/deploy.md": texts["docs/deploy.md"] + f"\n({locked_packages() + 5} packages)\n"},
         "deploy/image/packages.lock holds"),
    ]
    for what, ds_docs, pm, sc, tx, expect in cases:
        errs = consistency_problems(ds_docs, pm, sc, tx)
        if not any(expect in e for e in errs):
            fail(f"control: {what} is not reported (expected '{expect}'; got {errs})")
    t.log(f"controls: {len(cases)} mismatches between the files and the docs are caught")


def controls(docs, workdir):
    """The defects the checks exist for are caught."""
    layout = mf.image_layout()
    dp = str(layout["/opt/vxfed/bin/vxfed-dataplane"])
    old = [dp, "-l", "2,3", "--file-prefix", "vxfed", "--vdev",
           "net_af_packet0,iface=eth1,qpairs=2,framesz=9216,blocksz=36864,framecnt=4096",
           "--", "--uplink", "net_af_packet0", "--vtep-ip", "198.18.0.11", "--mtu", "9000",
           "--queues", "2", "--api-socket", "/run/vxfed/dataplane.sock"]
    rc, out = run_check(old, "control: the old manifest's dataplane (-l 2,3 with --queues 2)", expect_ok=False)
    if "needs 3 EAL lcores" not in out:
        fail(f"control: the lcore refusal does not say what is needed: {out}")
    run_check(old[:old.index("--")] + ["--", "--uplink", "net_af_packet0", "--vtep-ip", "198.18.0.11", "--queues", "1"],
              "control: qpairs=2 with --queues 1", expect_ok=False)
    ds = next(d for d in docs if d.body.get("kind") == "DaemonSet").body
    bad = copy.deepcopy(ds)
    bad["spec"]["template"]["spec"]["containers"][0]["volumeMount"] = bad["spec"]["template"]["spec"]["containers"][0].pop("volumeMounts")
    errs = k8s_schema.validate(bad)
    if not any("volumeMount: unknown field" in e for e in errs):
        fail(f"control: a misspelled field is not reported: {errs}")
    bad = copy.deepcopy(ds)
    bad["spec"]["template"]["spec"]["hostNetwork"] = "yes"
    if not any("hostNetwork: must be true or false" in e for e in k8s_schema.validate(bad)):
        fail("control: a wrong type is not reported")
    bad = copy.deepcopy(ds)
    del bad["spec"]["template"]["spec"]["containers"][1]["image"]
    bad["spec"]["template"]["spec"]["containers"][1].pop("name")
    if not k8s_schema.validate(bad):
        fail("control: a container without a name is not reported")
    # An -l CPU this process may not run on: EAL could not place its lcore there.
    outside = max(os.sched_getaffinity(0)) + 1
    lcores = f"0,{outside},{outside + 1}"
    rc, out = run_check([dp, "-l", lcores] + old[old.index("--file-prefix"):],
                        f"control: -l {lcores} (CPUs outside this process's affinity)", expect_ok=False)
    if f"-l '{lcores}'" not in out or "affinity" not in out:
        fail(f"control: the affinity refusal does not name -l and the affinity: {out}")
    t.log("controls: the old lcore list, a qpairs mismatch, -l outside the affinity, a misspelled field, a wrong type "
          "and a missing name are caught")


def main():
    why = k8s_schema.require_models()
    if why:
        t.skip(why)
    docs = mf.load_all()
    if not docs:
        fail("no manifests under deploy/")
    check_types(docs)
    check_raw_text(docs)
    check_consistency(docs)
    consistency_controls(docs)
    plugin = mf.image_layout()["/opt/vxfed/bin/vxfed"]
    with tempfile.TemporaryDirectory(prefix="vxfed-manifests-") as w:
        check_commands(docs, Path(w))
        check_nads(docs, plugin)
        check_reflectors(docs, Path(w))
        controls(docs, Path(w))
    if failures:
        print(f"{len(failures)} problem(s) in deploy/", file=sys.stderr)
        sys.exit(1)
    t.log(f"deploy/: {len(docs)} documents valid, every command passes --check")


if __name__ == "__main__":
    main()
