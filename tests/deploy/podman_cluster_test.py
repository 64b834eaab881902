#!/usr/bin/env python3
"""Two nodes of the DaemonSet under podman, and pods made by a container runtime that is not
ours: podman's CNI backend running the conflist the install-cni init container installed.

Each node (harness/vxfed_harness/podman_node.py) is a network namespace with its own podman:
install-cni run from the image (the plugin and the conflist onto the node's "host" dirs), then
vxfed-dataplane and vxfedd containers from the image as the manifest has them. The nodes share
one underlay link; vxfedd's ConfigMap gives each node its block of the network and a static
route to the other's (no FRR container here: BGP off; no federation store). Checked:
- `podman run --network <the installed conflist's network>` on each node: the pod gets an address of its node's block
  (host-local, handed the block by the plugin), vxfedd holds the endpoint, and the pods of the
  two nodes reach each other across the overlay, both ways;
- restarting the daemon containers of node A (vxfedd, then the dataplane) keeps, or restores
  within a few seconds, the pods' connectivity; no endpoint is lost;
- `podman rm` of the pods runs CNI DEL: no endpoint is left in either vxfedd."""

import vxfed_harness as t
from vxfed_harness.podman import require_podman
from vxfed_harness.podman_node import PodmanNode, require_image

VNI = 100
SUBNET = "10.244.0.0/16"
GATEWAY = "10.244.0.1"
NODES = {"a": ("198.18.0.1", "10.244.1.0/24"), "b": ("198.18.0.2", "10.244.2.0/24")}


def network(block: str, other_block: str, other_vtep: str) -> dict:
    return {"name": "fed-a", "vni": VNI, "subnet": SUBNET, "gateway": GATEWAY, "block": block,
            "static_routes": [{"prefix": other_block, "vteps": [other_vtep]}]}


def reaches(src, dst_ip: str, count: int = 3) -> bool:
    return src.ping(dst_ip, count=count).returncode == 0


def main() -> None:
    t.require_root()
    require_podman()
    image = require_image()
    with t.Topology("clupm") as topo:
        archive = topo.workdir / "image.tar"
        t.run(["podman", "save", "--format", "docker-archive", "-o", str(archive), image], timeout=300)
        na, nb = topo.netns("nodeA"), topo.netns("nodeB")
        topo.veth(na, "up0", nb, "up0", mtu=9000)
        for ns, (vtep, _) in ((na, NODES["a"]), (nb, NODES["b"])):
            ns.run(f"ip addr add {vtep}/24 dev up0")
            ns.run("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
        nodes = {}
        for name, ns in (("a", na), ("b", nb)):
            other = "b" if name == "a" else "a"
            node = PodmanNode(topo, ns, name, NODES[name][0], image, archive)
            node.configure([network(NODES[name][1], NODES[other][1], NODES[other][0])], [SUBNET])
            installed = node.install_cni()
            node.create(1)
            node.start(1)
            nodes[name] = node
        archive.unlink()
        t.log("installed conflist: " + " -> ".join(p["type"] for p in installed["plugins"]))

        pods = {name: node.pod(f"pod-{name}") for name, node in nodes.items()}
        ips = {name: pod.network(nodes[name].network)["IPAddress"] for name, pod in pods.items()}
        for name, node in nodes.items():
            block_prefix = NODES[name][1].rsplit(".", 2)[0]
            assert ips[name].startswith(block_prefix + "."), f"pod on node {name} got {ips[name]}, not in {NODES[name][1]}"
            eps = node.endpoints()
            assert [e["ip"] for e in eps] == [ips[name]], eps
            assert eps[0]["container_id"] == pods[name].container_id, eps
        t.log(f"pods: a {ips['a']} on node A, b {ips['b']} on node B (each from its node's block)")
        t.wait_for(lambda: reaches(pods["a"], ips["b"], 1), 30, "pod a -> pod b across the overlay", interval=0.2)
        assert reaches(pods["a"], ips["b"]) and reaches(pods["b"], ips["a"]), "pods do not reach each other both ways"
        t.log("pod a <-> pod b across the overlay: both ways")

        a = nodes["a"]
        for container in ("vxfedd-1", "dp-1"):
            a.pm.cmd("restart", "-t", "10", container, timeout=120)
            t.wait_for(lambda: reaches(pods["a"], ips["b"], 1), 30, f"pod a -> pod b after restarting {container}",
                       interval=0.1)
            assert reaches(pods["b"], ips["a"]), f"pod b -> pod a after restarting {container}"
            assert [e["ip"] for e in a.endpoints()] == [ips["a"]], a.endpoints()
            t.log(f"node A's {container} restarted: the pods reach each other, the endpoint kept")

        for name, pod in pods.items():
            pod.remove()
            assert nodes[name].endpoints() == [], f"podman rm left an endpoint in node {name}'s vxfedd"
        t.log("podman rm: CNI DEL removed both endpoints")
        for node in nodes.values():
            node.pm.cmd("stop", "-t", "10", "vxfedd-1", "dp-1", timeout=60)


if __name__ == "__main__":
    t.main_wrapper(main)
