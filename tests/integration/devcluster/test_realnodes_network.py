"""A real-node network left by a cluster that died without its teardown (a killed test run, a session
ended mid-test) is removed by the next cluster instead of refusing it; a live one is never touched.
Needs root. It makes the bridge every real-node cluster uses, so it shares their xdist worker."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from leaderworkerset.devcluster.realnodes import addresses, fleet, network

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
    pytest.mark.xdist_group("realnodes"),
]

NODES = addresses.real_nodes(2)


@pytest.fixture
def left_network() -> Iterator[None]:
    if network.bridge_exists():
        pytest.fail(f"the bridge {addresses.BRIDGE} exists: a real-node cluster runs on this machine")
    network.create(NODES)
    yield
    network.remove(NODES)


def test_a_dead_clusters_network_is_removed_and_a_live_one_refused(left_network: None) -> None:
    assert network.bridge_exists()
    assert network.namespaces() == [n.netns for n in NODES]
    assert not network.in_use()

    # A process in a node's namespace (a live cluster's containerd, say): the network is in use.
    with subprocess.Popen(["ip", "netns", "exec", NODES[0].netns, "sleep", "60"]) as live:
        try:
            assert network.in_use()
            with pytest.raises(fleet.FleetError, match="another local cluster runs real nodes"):
                fleet.prepare_host(NODES)
            assert network.bridge_exists()
        finally:
            live.kill()
    assert not network.in_use()

    removed = network.remove_stale()
    assert not network.bridge_exists()
    assert network.namespaces() == []
    assert set(removed) == {f"netns {n.netns}" for n in NODES} | {f"bridge {addresses.BRIDGE}"}
