"""The real nodes' pure parts: addresses, per-node configuration, OCI archives, CoreDNS objects, and
the pod reaper leaving real nodes' pods to their kubelets."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import tarfile
from pathlib import Path

import pytest

from leaderworkerset.devcluster import kube
from leaderworkerset.devcluster.realnodes import addons, addresses, images, node
from leaderworkerset.devcluster.realnodes.addresses import RealNode, real_nodes
from leaderworkerset.devcluster.realnodes.node import NodePaths
from leaderworkerset.devcluster.reaper import terminating

TEST_BLOCK = ipaddress.IPv4Network(addresses.TEST_BLOCK)


def test_every_address_is_inside_the_reserved_test_block_and_nodes_do_not_overlap() -> None:
    nodes = real_nodes(addresses.MAX_NODES)
    pod_ranges = [ipaddress.IPv4Network(n.pod_cidr) for n in nodes]
    assert len(nodes) == 8
    for n, pods in zip(nodes, pod_ranges, strict=True):
        assert ipaddress.IPv4Address(n.ip) in addresses.NODE_NETWORK
        assert pods.subnet_of(addresses.POD_NETWORK)
        assert ipaddress.IPv4Address(n.pod_gateway) in pods
    assert all(a.subnet_of(TEST_BLOCK) for a in [addresses.NODE_NETWORK, addresses.POD_NETWORK])
    assert ipaddress.IPv4Network(addresses.SERVICE_NETWORK).subnet_of(TEST_BLOCK)
    assert not any(a.overlaps(b) for i, a in enumerate(pod_ranges) for b in pod_ranges[i + 1 :])
    assert len({n.ip for n in nodes} | {addresses.HOST_ADDRESS}) == 9
    assert all(len(n.host_veth) <= 15 for n in nodes)  # Linux interface names


@pytest.mark.parametrize("count", [-1, addresses.MAX_NODES + 1])
def test_a_node_count_outside_the_window_is_refused_naming_the_option(count: int) -> None:
    with pytest.raises(ValueError, match="--real-nodes must be between 0 and 8"):
        real_nodes(count)


def test_a_nodes_configuration_keeps_everything_it_owns_under_its_directory(tmp_path: Path) -> None:
    real, paths = RealNode(2), NodePaths(tmp_path / "nodes" / "real-node-2")
    config = node.containerd_config(paths, tmp_path / "cni")
    for needle in (
        f"root = '{paths.containerd_root}'",
        f"address = '{paths.containerd_socket}'",
        f"Root = '{paths.containerd_state / 'runc'}'",
        "netns_mounts_under_state_dir = true",
        "restrict_oom_score_adj = true",
        f"sandbox = '{node.PAUSE_IMAGE}'",
    ):
        assert needle in config
    kubelet = node.kubelet_config(real, paths, tmp_path / "ca.crt")
    assert kubelet["cgroupRoot"] == "/lws-real-node-2"
    assert kubelet["failCgroupV1"] is False
    assert kubelet["clusterDNS"] == [addresses.DNS_SERVICE_IP]
    assert kubelet["containerRuntimeEndpoint"] == f"unix://{paths.containerd_socket}"
    assert Path(kubelet["podLogsDir"]).is_relative_to(paths.root)
    cni = node.cni_config(real, paths)["plugins"][0]
    assert cni["ipam"]["ranges"] == [[{"subnet": "198.18.130.0/24", "gateway": "198.18.130.1"}]]
    assert cni["ipMasq"] is False
    assert node.proxy_config(real, paths)["clusterCIDR"] == str(addresses.POD_NETWORK)


def _members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_a_single_binary_image_is_a_reproducible_oci_archive_named_in_full(tmp_path: Path) -> None:
    binary = tmp_path / "probe"
    binary.write_bytes(b"\x7fELF not really")
    spec = images.ImageSpec(ref="lws.local/probe:v1", binary=binary, entrypoint=("/probe",))
    first = _members(images.build_archive(spec, tmp_path / "a.tar"))
    assert first == _members(images.build_archive(spec, tmp_path / "b.tar"))
    for name, data in first.items():
        if name.startswith("blobs/sha256/"):
            assert hashlib.sha256(data).hexdigest() == name.removeprefix("blobs/sha256/")
    index = json.loads(first["index.json"])
    assert index["manifests"][0]["annotations"] == {
        images.CONTAINERD_NAME: "lws.local/probe:v1",
        images.OCI_REF_NAME: "v1",
    }
    manifest = json.loads(first["blobs/sha256/" + index["manifests"][0]["digest"].removeprefix("sha256:")])
    config = json.loads(first["blobs/sha256/" + manifest["config"]["digest"].removeprefix("sha256:")])
    assert config["config"]["Entrypoint"] == ["/probe"]
    assert config["config"]["User"] == images.NONROOT


def test_coredns_answers_for_the_cluster_only_at_the_kubelets_dns_address() -> None:
    objects = {o["kind"]: o for o in addons.coredns_objects("lws.local/coredns:v1")}
    assert objects["Service"]["spec"]["clusterIP"] == addresses.DNS_SERVICE_IP
    assert "forward" not in addons.COREFILE
    assert f"kubernetes {addresses.CLUSTER_DOMAIN}" in addons.COREFILE
    assert kube.collection_path(objects["Deployment"]) == "/apis/apps/v1/namespaces/kube-system/deployments"
    assert kube.collection_path(objects["ClusterRole"]) == "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    assert kube.collection_path(objects["Service"]) == "/api/v1/namespaces/kube-system/services"


@pytest.mark.parametrize(("node_name", "reaped"), [("kwok-node-0", True), ("real-node-1", False), ("", True)])
def test_the_pod_reaper_leaves_real_nodes_pods_to_their_kubelets(node_name: str, reaped: bool) -> None:
    pod = {"metadata": {"deletionTimestamp": "2026-12-03T00:00:00Z"}, "spec": {"nodeName": node_name}}
    assert terminating(pod, addresses.NODE_NAME_PREFIX) is reaped
