#!/usr/bin/env python3
"""deploy/install-cni.sh installs the plugin and its conflist atomically: the files arrive
complete with the right modes, no temporary file stays behind, a runtime polling the binary
during a re-install only ever sees a complete executable, and the installed conflist parses
unchanged: one conflist for every node, host-local without ranges (the plugin hands it the
node's block). A conflist whose host-local ranges lie outside this node's block is refused
while vxfedd answers (`vxfed --check`), and nothing of it is installed."""

import hashlib
import json
import os
import subprocess
import threading

import vxfed_harness as tl


def main():
    plugin = tl.require_binary("cni/vxfed")
    script = tl.SOURCE_DIR / "deploy/install-cni.sh"
    with tl.Topology("cniinst") as topo:
        w = topo.workdir
        bin_dir, conf_dir = w / "opt-cni-bin", w / "etc-cni-net.d"
        env = dict(os.environ)
        args = [str(script), "--bin-src", str(plugin), "--bin-dir", str(bin_dir),
                "--conf-src", str(tl.SOURCE_DIR / "deploy/10-vxfed.conflist"), "--conf-dir", str(conf_dir)]
        tl.run(args, env=env)
        installed = bin_dir / "vxfed"
        assert hashlib.sha256(installed.read_bytes()).digest() == hashlib.sha256(plugin.read_bytes()).digest()
        assert installed.stat().st_mode & 0o777 == 0o755
        text = (conf_dir / "10-vxfed.conflist").read_text()
        assert text == (tl.SOURCE_DIR / "deploy/10-vxfed.conflist").read_text(), "the conflist was changed on install"
        ipam = json.loads(text)["plugins"][0]["ipam"]
        assert ipam["type"] == "host-local" and "ranges" not in ipam and "subnet" not in ipam, ipam
        assert sorted(os.listdir(bin_dir)) == ["vxfed"] and sorted(os.listdir(conf_dir)) == ["10-vxfed.conflist"]

        # A runtime execs the binary while it is re-installed 20 times: every exec must work.
        stop = threading.Event()
        failures = []

        def runtime():
            while not stop.is_set():
                p = subprocess.run([str(installed)], env={"CNI_COMMAND": "VERSION"}, input="", capture_output=True)
                if p.returncode != 0 or b"supportedVersions" not in p.stdout:
                    failures.append((p.returncode, p.stdout[:200], p.stderr[:200]))

        t = threading.Thread(target=runtime)
        t.start()
        for _ in range(20):
            tl.run(args, env=env)
        stop.set()
        t.join()
        assert not failures, failures[:3]
        assert sorted(os.listdir(bin_dir)) == ["vxfed"], os.listdir(bin_dir)
        # A source that does not run is refused before anything is replaced.
        bad = w / "bad"
        bad.write_text("#!/bin/sh\nexit 1\n")
        bad.chmod(0o755)
        r = tl.run([str(script), "--bin-src", str(bad), "--bin-dir", str(bin_dir), "--conf-src", ""], check=False)
        assert r.returncode != 0 and hashlib.sha256(installed.read_bytes()).digest() == hashlib.sha256(plugin.read_bytes()).digest()
        tl.log("install-cni.sh: atomic, idempotent, refuses a broken binary")

        # A conflist with host-local ranges of another node's block: refused while vxfedd answers
        # (install-cni.sh runs `vxfed --check`), naming the field, the range and the block; not
        # installed.
        fake = tl.require_binary("tests/cni/fake_vxfedd")
        sock = w / "vxfedd.sock"
        (w / "networks.json").write_text(json.dumps({"networks": [
            {"name": "fed-a", "subnet": "10.244.0.0/16", "gateway": "10.244.0.1", "mtu": 8950, "vni": 1001,
             "node_block": "10.244.7.0/24"}]}))
        topo.spawn([str(fake), "--socket", str(sock), "--config", str(w / "networks.json")], name="fake_vxfedd")
        tl.wait_for(sock.exists, 10, "fake vxfedd socket")
        ranged = json.loads((tl.SOURCE_DIR / "deploy/10-vxfed.conflist").read_text())
        ranged["plugins"][0]["socket"] = str(sock)
        ranged["plugins"][0]["ipam"]["ranges"] = [[{"subnet": "10.244.0.0/16", "rangeStart": "10.244.1.2",
                                                    "rangeEnd": "10.244.1.254"}]]
        (w / "ranged.conflist").write_text(json.dumps(ranged))
        before = (conf_dir / "10-vxfed.conflist").read_text()
        for extra in (["--check"], []):
            r = tl.run([str(script), *extra, "--bin-src", str(plugin), "--bin-dir", str(bin_dir),
                        "--conf-src", str(w / "ranged.conflist"), "--conf-dir", str(conf_dir)], check=False)
            assert r.returncode == 2, f"install-cni.sh {extra} accepted another node's ranges: {r.stdout} {r.stderr}"
            for words in ("plugins[0].ipam.ranges[0][0]", "10.244.1.2-10.244.1.254", "this node's block 10.244.7.0/24"):
                assert words in r.stderr, f"{words!r} not in: {r.stderr}"
        assert (conf_dir / "10-vxfed.conflist").read_text() == before, "a refused conflist was installed"
        tl.log("install-cni.sh refuses host-local ranges outside this node's block")


if __name__ == "__main__":
    tl.main_wrapper(main)
