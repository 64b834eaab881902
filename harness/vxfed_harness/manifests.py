"""deploy/'s manifests as data: their containers, the commands Kubernetes would run, and where
the files those commands name come from.

- `load_all()`: every document of deploy/*.yaml, with the file it came from.
- `pod_containers(doc)`: (pod spec, container, "init"|"main") of a DaemonSet or Pod.
- `container_env(container, field_values, config_maps)`: the container's environment as the
  kubelet builds it (literal values, fieldRef from `field_values`, configMapKeyRef).
- `expand(arg, env)`: Kubernetes' $(VAR) substitution in command and args.
- `image_layout()`: deploy/image/layout, image path -> file on this machine (the build
  directory's binaries, the repository's scripts), as scripts/build-image.sh reads it.
- `host_command(...)`: a container's command with image paths mapped to those files and
  configMap mounts to directories holding the ConfigMap's keys, so it runs on this machine.

Pure apart from reading the files and writing the ConfigMaps' keys into a directory.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

from .env import BUILD_DIR, SOURCE_DIR

DEPLOY_DIR = SOURCE_DIR / "deploy"

# Values the test gives the pod's fields (a made-up node).
NODE_FIELDS = {"spec.nodeName": "node-1", "status.hostIP": "198.18.0.11", "metadata.name": "vxfed-node-x1",
               "metadata.namespace": "vxfed-system", "status.podIP": "198.18.0.11"}


@dataclass
class Document:
    path: Path
    index: int
    body: dict

    @property
    def where(self) -> str:
        name = (self.body.get("metadata") or {}).get("name")
        return f"{self.path.name}[{self.index}] {self.body.get('kind')} {name}"


def load_all(deploy_dir: Path = DEPLOY_DIR) -> List[Document]:
    import yaml  # Debian's python3-yaml

    docs = []
    for path in sorted(deploy_dir.glob("*.yaml")):
        for i, body in enumerate(yaml.safe_load_all(path.read_text())):
            if body is not None:
                docs.append(Document(path, i, body))
    return docs


def pod_spec(doc: dict) -> Optional[dict]:
    if doc.get("kind") == "DaemonSet":
        return doc["spec"]["template"]["spec"]
    if doc.get("kind") == "Pod":
        return doc["spec"]
    return None


def pod_containers(doc: dict) -> Iterator[Tuple[dict, dict, str]]:
    spec = pod_spec(doc)
    if not spec:
        return
    for c in spec.get("initContainers") or []:
        yield spec, c, "init"
    for c in spec.get("containers") or []:
        yield spec, c, "main"


def config_maps(docs: List[Document]) -> Dict[Tuple[str, str], dict]:
    """(namespace, name) -> data of every ConfigMap in the documents."""
    out = {}
    for d in docs:
        if d.body.get("kind") == "ConfigMap":
            meta = d.body.get("metadata") or {}
            out[(meta.get("namespace", "default"), meta["name"])] = d.body.get("data") or {}
    return out


def container_env(container: dict, namespace: str, cms: Dict[Tuple[str, str], dict],
                  fields: Dict[str, str] = NODE_FIELDS) -> Dict[str, str]:
    env: Dict[str, str] = {}
    for e in container.get("env") or []:
        if "value" in e:
            env[e["name"]] = expand(str(e["value"]), env)
            continue
        src = e.get("valueFrom") or {}
        if "fieldRef" in src:
            env[e["name"]] = fields[src["fieldRef"]["fieldPath"]]
        elif "configMapKeyRef" in src:
            ref = src["configMapKeyRef"]
            data = cms.get((namespace, ref["name"]))
            if data is None or ref["key"] not in data:
                if ref.get("optional"):
                    continue  # the kubelet leaves the variable out
                raise KeyError(f"env {e['name']}: ConfigMap {ref['name']} key {ref['key']} does not exist")
            env[e["name"]] = data[ref["key"]]
        else:
            raise KeyError(f"env {e['name']}: unsupported source {sorted(src)}")
    return env


_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def expand(arg: str, env: Dict[str, str]) -> str:
    """$(VAR) -> its value when VAR is defined (else left as written); $$ -> $."""
    def repl(m: re.Match) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return _VAR.sub(repl, arg)


def unexpanded(arg: str) -> List[str]:
    """The $(VAR) references an expanded argument still holds."""
    return [m.group(1) for m in _VAR.finditer(arg) if m.group(1)]


def container_argv(container: dict, env: Dict[str, str]) -> List[str]:
    return [expand(a, env) for a in (container.get("command") or []) + (container.get("args") or [])]


def image_layout(build_dir: Path = BUILD_DIR) -> Dict[str, Path]:
    """Image path -> the file scripts/build-image.sh copies there."""
    out = {}
    for line in (DEPLOY_DIR / "image" / "layout").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        path, _mode, src = line.split()
        out[path] = build_dir / src[len("build/"):] if src.startswith("build/") else SOURCE_DIR / src
    return out


def image_version(doc_image: str) -> str:
    return doc_image.rsplit(":", 1)[1] if ":" in doc_image else ""


def project_version() -> str:
    text = (SOURCE_DIR / "meson.build").read_text()
    m = re.search(r"version\s*:\s*'([^']+)'", text)
    return m.group(1) if m else ""


def write_config_mounts(spec: dict, container: dict, namespace: str, cms: Dict[Tuple[str, str], dict],
                        workdir: Path) -> Dict[str, Path]:
    """Each configMap volume the container mounts, its keys written into a directory of its
    own under workdir: mountPath -> that directory."""
    volumes = {v["name"]: v for v in spec.get("volumes") or []}
    out = {}
    for m in container.get("volumeMounts") or []:
        v = volumes.get(m["name"]) or {}
        if "configMap" not in v:
            continue
        data = cms.get((namespace, v["configMap"]["name"]), {})
        d = workdir / f"cm-{container['name']}-{m['name']}"
        d.mkdir(parents=True, exist_ok=True)
        for key, text in data.items():
            (d / key).write_text(text)
        out[m["mountPath"].rstrip("/")] = d
    return out


def host_command(argv: List[str], layout: Dict[str, Path], mounts: Dict[str, Path]) -> List[str]:
    """argv with image files and configMap mount paths replaced by their files here."""
    out = []
    for a in argv:
        if a in layout:
            out.append(str(layout[a]))
            continue
        for mount, d in mounts.items():
            if a == mount or a.startswith(mount + "/"):
                a = str(d) + a[len(mount):]
                break
        out.append(a)
    return out


def nad_configs(docs: List[Document]) -> Iterator[Tuple[Document, dict]]:
    """(document, CNI config with Multus' name filled in) of every NetworkAttachmentDefinition."""
    for d in docs:
        if d.body.get("kind") == "NetworkAttachmentDefinition":
            conf = json.loads(d.body["spec"]["config"])
            conf.setdefault("name", d.body["metadata"]["name"])
            yield d, conf
