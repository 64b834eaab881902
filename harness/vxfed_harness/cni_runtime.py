"""A small CNI runtime for tests: invokes plugins the way containerd/CRI-O (libcni) do.

- A network configuration is a conflist ({"cniVersion","name","plugins":[...]}) or a single
  plugin config; each plugin gets {"name","cniVersion"} of the list injected, and the
  runtimeConfig entries for the capabilities it declares ("capabilities": {"mac": true}).
- ADD runs the plugins in order, each receiving the previous one's result as prevResult; the
  final result is cached (like libcni's /var/lib/cni/results).
- CHECK runs them in order with the cached result as prevResult.
- DEL runs them in reverse order with the cached result as prevResult, then drops the cache.
- GC (1.1.0) passes cni.dev/valid-attachments; STATUS (1.1.0) runs every plugin.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Optional


class CniError(Exception):
    def __init__(self, plugin: str, command: str, rc: int, payload: dict, stderr: str):
        self.plugin = plugin
        self.command = command
        self.rc = rc
        self.payload = payload
        self.code = payload.get("code")
        self.msg = payload.get("msg", "")
        self.details = payload.get("details", "")
        self.stderr = stderr
        super().__init__(f"{plugin} {command} failed: code {self.code}: {self.msg} ({self.details}) stderr: {stderr[-800:]}")


def fnv_host_iface(container_id: str, ifname: str) -> str:
    """The vxfed plugin's host-side interface name (cni/records.cpp host_iface_name)."""
    h = 14695981039346656037
    for b in (container_id + "/" + ifname).encode():
        h ^= b
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return "vxf%012x" % (h & 0xFFFFFFFFFFFF)


class Runtime:
    def __init__(self, cni_path: list[str], cache_dir: Path, env: Optional[dict] = None,
                 prefix: Optional[list[str]] = None):
        self.cni_path = cni_path
        # A command prefix the plugins run under, e.g. ["ip", "netns", "exec", "node"] when the
        # "host" of the test is a node namespace.
        self.prefix = prefix or []
        self.cache_dir = Path(cache_dir)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.extra_env = env or {}

    # -- raw invocation --
    def find(self, plugin_type: str) -> str:
        if "/" in plugin_type:
            raise ValueError(f"plugin type {plugin_type!r} is a path; runtimes refuse that")
        for d in self.cni_path:
            p = Path(d) / plugin_type
            if p.is_file() and os.access(p, os.X_OK):
                return str(p)
        raise FileNotFoundError(f"{plugin_type} not in {self.cni_path}")

    def exec_raw(self, program: str, command: str, stdin: str, container_id: str = "", netns: str = "",
                 ifname: str = "", args: str = "", env_override: Optional[dict] = None,
                 timeout: float = 60) -> subprocess.CompletedProcess:
        env = dict(os.environ)
        env.update(self.extra_env)
        env.update({"CNI_COMMAND": command, "CNI_CONTAINERID": container_id, "CNI_NETNS": netns,
                    "CNI_IFNAME": ifname, "CNI_ARGS": args, "CNI_PATH": ":".join(self.cni_path)})
        for k, v in (env_override or {}).items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return subprocess.run(self.prefix + [program], input=stdin, capture_output=True, text=True, env=env, timeout=timeout)

    def invoke(self, conf: dict, command: str, **kw) -> Optional[dict]:
        program = self.find(conf["type"])
        proc = self.exec_raw(program, command, json.dumps(conf), **kw)
        out = proc.stdout.strip()
        if proc.returncode != 0:
            try:
                payload = json.loads(out)
            except json.JSONDecodeError:
                payload = {"code": None, "msg": f"non-JSON output: {out!r}"}
            raise CniError(conf["type"], command, proc.returncode, payload, proc.stderr)
        return json.loads(out) if out else None

    # -- list handling --
    @staticmethod
    def plugins_of(netconf: dict) -> list[dict]:
        if "plugins" in netconf:
            return [dict(p) for p in netconf["plugins"]]
        return [{k: v for k, v in netconf.items() if k not in ("cniVersion", "name")}]

    @staticmethod
    def build(netconf: dict, plugin: dict, runtime_config: Optional[dict], prev: Optional[dict]) -> dict:
        conf = dict(plugin)
        conf["name"] = netconf["name"]
        conf["cniVersion"] = netconf["cniVersion"]
        caps = plugin.get("capabilities", {})
        rc = {k: v for k, v in (runtime_config or {}).items() if caps.get(k)}
        if rc:
            conf["runtimeConfig"] = rc
        if prev is not None:
            conf["prevResult"] = prev
        return conf

    def cache_path(self, netconf: dict, container_id: str, ifname: str) -> Path:
        return self.cache_dir / f"{netconf['name']}-{container_id}-{ifname}.json"

    @staticmethod
    def cni_args(args: Optional[dict]) -> str:
        return ";".join(f"{k}={v}" for k, v in (args or {}).items())

    def add(self, netconf: dict, container_id: str, netns: str, ifname: str, args: Optional[dict] = None,
            runtime_config: Optional[dict] = None) -> dict:
        prev = None
        for plugin in self.plugins_of(netconf):
            conf = self.build(netconf, plugin, runtime_config, prev)
            prev = self.invoke(conf, "ADD", container_id=container_id, netns=netns, ifname=ifname,
                               args=self.cni_args(args))
        self.cache_path(netconf, container_id, ifname).write_text(
            json.dumps({"result": prev, "runtimeConfig": runtime_config or {}, "args": args or {}}))
        return prev

    def cached(self, netconf: dict, container_id: str, ifname: str) -> Optional[dict]:
        p = self.cache_path(netconf, container_id, ifname)
        return json.loads(p.read_text()) if p.exists() else None

    def check(self, netconf: dict, container_id: str, netns: str, ifname: str) -> None:
        cached = self.cached(netconf, container_id, ifname)
        if cached is None:
            raise RuntimeError("CHECK without a cached ADD result")
        for plugin in self.plugins_of(netconf):
            conf = self.build(netconf, plugin, cached["runtimeConfig"], cached["result"])
            self.invoke(conf, "CHECK", container_id=container_id, netns=netns, ifname=ifname,
                        args=self.cni_args(cached["args"]))

    def delete(self, netconf: dict, container_id: str, netns: str, ifname: str,
               args: Optional[dict] = None, runtime_config: Optional[dict] = None) -> None:
        cached = self.cached(netconf, container_id, ifname)
        prev = cached["result"] if cached else None
        rc = cached["runtimeConfig"] if cached else runtime_config
        a = cached["args"] if cached else args
        for plugin in reversed(self.plugins_of(netconf)):
            conf = self.build(netconf, plugin, rc, prev)
            self.invoke(conf, "DEL", container_id=container_id, netns=netns, ifname=ifname, args=self.cni_args(a))
        self.cache_path(netconf, container_id, ifname).unlink(missing_ok=True)

    def gc(self, netconf: dict, valid: list[tuple[str, str]]) -> None:
        for plugin in self.plugins_of(netconf):
            conf = self.build(netconf, plugin, None, None)
            conf["cni.dev/valid-attachments"] = [{"containerID": c, "ifname": i} for c, i in valid]
            self.invoke(conf, "GC")

    def status(self, netconf: dict) -> None:
        for plugin in self.plugins_of(netconf):
            self.invoke(self.build(netconf, plugin, None, None), "STATUS")

    def version(self, plugin_type: str, cni_version: Optional[str] = None) -> dict:
        stdin = json.dumps({"cniVersion": cni_version}) if cni_version else ""
        proc = self.exec_raw(self.find(plugin_type), "VERSION", stdin)
        if proc.returncode != 0:
            raise RuntimeError(f"VERSION failed: {proc.stdout} {proc.stderr}")
        return json.loads(proc.stdout)
