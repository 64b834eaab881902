"""Strict validation of Kubernetes manifests against the API types, without an API server.

kubectl cannot validate without a server, and the Python client's deserializer ignores fields
it does not know. This walks a manifest along the types of Debian's python3-kubernetes models
(`openapi_types`, `attribute_map`): an unknown or misspelled field, a value of the wrong type,
a missing required field (the models' own client-side validation) and a value outside the
few enumerations the API server checks for the fields vxfed uses are errors, each named by its
path ("spec.template.spec.containers[1].securityContext.capabilities.add[0]").

Needs /usr/bin/python3 with python3-kubernetes (scripts/install-deps.sh).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional

try:
    import kubernetes.client as k8s
    from kubernetes.client import ApiClient
    from kubernetes.client.configuration import Configuration
except ImportError:  # reported by require_models()
    k8s = None

# kind -> model, for the API groups vxfed's manifests use.
KINDS = {
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "ServiceAccount"): "V1ServiceAccount",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Pod"): "V1Pod",
    ("apps/v1", "DaemonSet"): "V1DaemonSet",
}

# Linux capability names as Kubernetes takes them (without CAP_), kernel 5.9+.
CAPABILITIES = {
    "AUDIT_CONTROL", "AUDIT_READ", "AUDIT_WRITE", "BLOCK_SUSPEND", "BPF", "CHECKPOINT_RESTORE", "CHOWN",
    "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "IPC_LOCK", "IPC_OWNER", "KILL", "LEASE",
    "LINUX_IMMUTABLE", "MAC_ADMIN", "MAC_OVERRIDE", "MKNOD", "NET_ADMIN", "NET_BIND_SERVICE", "NET_BROADCAST",
    "NET_RAW", "PERFMON", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_ADMIN", "SYS_BOOT", "SYS_CHROOT",
    "SYS_MODULE", "SYS_NICE", "SYS_PACCT", "SYS_PTRACE", "SYS_RAWIO", "SYS_RESOURCE", "SYS_TIME",
    "SYS_TTY_CONFIG", "SYSLOG", "WAKE_ALARM", "ALL",
}

QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$")

# (model, attribute) -> allowed values: the enumerations the API server enforces.
ENUMS = {
    ("V1VolumeMount", "mount_propagation"): {"None", "HostToContainer", "Bidirectional"},
    ("V1HostPathVolumeSource", "type"): {"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket",
                                          "CharDevice", "BlockDevice"},
    ("V1EmptyDirVolumeSource", "medium"): {"", "Memory", "HugePages", "HugePages-2Mi", "HugePages-1Gi"},
    ("V1DaemonSetUpdateStrategy", "type"): {"RollingUpdate", "OnDelete"},
    ("V1Container", "image_pull_policy"): {"Always", "Never", "IfNotPresent"},
    ("V1PodSpec", "dns_policy"): {"ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"},
    ("V1PodSpec", "restart_policy"): {"Always", "OnFailure", "Never"},
    ("V1Toleration", "operator"): {"Exists", "Equal"},
    ("V1ObjectFieldSelector", "field_path"): {
        "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
        "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"},
}


def require_models() -> Optional[str]:
    """None when the models are importable, else why not."""
    if k8s is None:
        return "python3-kubernetes is not installed (scripts/install-deps.sh), or this is not /usr/bin/python3"
    return None


def _model(name: str):
    return getattr(k8s, name)


def _check(value: Any, typ: str, path: str, errors: List[str], owner: tuple) -> None:
    if value is None:
        return
    if typ.startswith("list["):
        if not isinstance(value, list):
            errors.append(f"{path}: must be a list, got {type(value).__name__}")
            return
        for i, v in enumerate(value):
            _check(v, typ[5:-1], f"{path}[{i}]", errors, owner)
        return
    if typ.startswith("dict("):
        inner = typ[5:-1].split(", ", 1)[1]
        if not isinstance(value, dict):
            errors.append(f"{path}: must be a mapping, got {type(value).__name__}")
            return
        for k, v in value.items():
            if not isinstance(k, str):
                errors.append(f"{path}: key {k!r} must be a string")
            _check(v, inner, f"{path}.{k}", errors, owner)
        return
    if typ == "str":
        if not isinstance(value, str):
            errors.append(f"{path}: must be a string, got {type(value).__name__} {value!r} (quote it)")
            return
        allowed = ENUMS.get(owner)
        if allowed is not None and value not in allowed:
            errors.append(f"{path}: {value!r} is not one of {sorted(allowed)}")
        return
    if typ == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append(f"{path}: must be an integer, got {value!r}")
        return
    if typ == "bool":
        if not isinstance(value, bool):
            errors.append(f"{path}: must be true or false, got {value!r}")
        return
    if typ == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            errors.append(f"{path}: must be a number, got {value!r}")
        return
    if typ in ("object", "datetime", "date"):
        return  # IntOrString and free-form fields
    model = _model(typ)
    if not isinstance(value, dict):
        errors.append(f"{path}: must be a mapping ({typ}), got {type(value).__name__}")
        return
    by_key = {json_key: attr for attr, json_key in model.attribute_map.items()}
    for key, v in value.items():
        attr = by_key.get(key)
        if attr is None:
            close = [k for k in by_key if k.lower() == str(key).lower()]
            hint = f" (did you mean {close[0]}?)" if close else ""
            errors.append(f"{path + '.' if path else ''}{key}: unknown field of {typ}{hint}")
            continue
        _check(v, model.openapi_types[attr], f"{path + '.' if path else ''}{key}", errors, (typ, attr))


def _semantic(doc: dict, errors: List[str]) -> None:
    """Rules of the API server's validation that the types do not express."""
    def walk(node: Any, path: str, visit: Callable[[Any, str], None]) -> None:
        visit(node, path)
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{path}.{k}" if path else k, visit)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}[{i}]", visit)

    def visit(node: Any, path: str) -> None:
        if path.endswith("capabilities") and isinstance(node, dict):
            for part in ("add", "drop"):
                for i, cap in enumerate(node.get(part) or []):
                    if cap not in CAPABILITIES:
                        errors.append(f"{path}.{part}[{i}]: {cap!r} is not a capability name")
        if (path.endswith("resources.requests") or path.endswith("resources.limits")) and isinstance(node, dict):
            for name, q in node.items():
                if not isinstance(q, str) or not QUANTITY.match(q):
                    errors.append(f"{path}.{name}: {q!r} is not a quantity")

    walk(doc, "", visit)
    spec = (((doc.get("spec") or {}).get("template") or {}).get("spec")) if doc.get("kind") == "DaemonSet" else (
        doc.get("spec") if doc.get("kind") == "Pod" else None)
    if not spec:
        return
    volumes = {v.get("name") for v in spec.get("volumes") or []}
    for group in ("initContainers", "containers"):
        for ci, c in enumerate(spec.get(group) or []):
            cpath = f"spec.{group}[{ci}] ({c.get('name')})"
            privileged = ((c.get("securityContext") or {}).get("privileged")) is True
            for mi, m in enumerate(c.get("volumeMounts") or []):
                if m.get("name") not in volumes:
                    errors.append(f"{cpath}.volumeMounts[{mi}]: no volume named {m.get('name')!r}")
                if m.get("mountPropagation") == "Bidirectional" and not privileged:
                    errors.append(f"{cpath}.volumeMounts[{mi}]: Bidirectional propagation needs a privileged container")
    if doc.get("kind") == "DaemonSet":
        selector = ((doc["spec"].get("selector") or {}).get("matchLabels")) or {}
        labels = ((doc["spec"]["template"].get("metadata") or {}).get("labels")) or {}
        for k, v in selector.items():
            if labels.get(k) != v:
                errors.append(f"spec.selector.matchLabels.{k}: the pod template's labels do not match it")


def validate(doc: dict) -> List[str]:
    """Errors of one manifest document (empty: valid). Kinds outside KINDS are refused."""
    if not isinstance(doc, dict):
        return ["a document must be a mapping"]
    key = (doc.get("apiVersion"), doc.get("kind"))
    model = KINDS.get(key)
    if model is None:
        return [f"apiVersion {key[0]!r} kind {key[1]!r}: not a type this validator knows ({sorted(KINDS)})"]
    errors: List[str] = []
    _check(doc, model, "", errors, (model, ""))
    if not errors:
        # The models' own checks: required fields (client-side validation raises ValueError).
        config = Configuration()
        config.client_side_validation = True
        try:
            ApiClient(configuration=config)._ApiClient__deserialize(doc, model)
        except (ValueError, TypeError) as e:
            errors.append(f"{model}: {e}")
    _semantic(doc, errors)
    return errors


def validate_object_meta(meta: Any, path: str = "metadata") -> List[str]:
    """An ObjectMeta alone (for custom resources such as a NetworkAttachmentDefinition)."""
    errors: List[str] = []
    _check(meta, "V1ObjectMeta", path, errors, ("V1ObjectMeta", ""))
    if isinstance(meta, dict) and not meta.get("name"):
        errors.append(f"{path}.name: required")
    return errors
