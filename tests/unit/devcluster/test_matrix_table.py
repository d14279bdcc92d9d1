"""The version matrix's table (tests/matrix): a column per supported version, the upgrade through the
whole window, and the versions whose real nodes cannot be built marked with the reason."""

from __future__ import annotations

from leaderworkerset.devcluster import versions
from tests.matrix.__main__ import SUITES, UPGRADE, Cell, table


def test_the_upgrade_walks_the_whole_window_and_is_named_by_it() -> None:
    assert UPGRADE.name == "upgrade 1.34 → 1.35 → 1.36 → 1.37 → 1.38"


def test_the_table_has_the_1_38_column_with_real_nodes_blocked_and_why() -> None:
    window = list(versions.SUPPORTED_KUBERNETES_VERSIONS)
    suite = SUITES[0]
    text = table({(suite.name, "v1.38.0-beta.0"): Cell(9, 0, 0, 60.0)}, window, [suite])
    header, _, nodes, row = text.splitlines()
    assert header.endswith("| Kubernetes v1.37.2 | Kubernetes v1.38.0-beta.0 |")
    cells = [c.strip() for c in nodes.strip("|").split("|")]
    assert cells[0] == "real nodes (kubelet, kube-proxy)"
    assert cells[1:5] == ["built from its module"] * 4
    assert cells[5].startswith(
        "**blocked**: kubelet and kube-proxy v1.38 import sigs.k8s.io/iptables-wrappers"
    )
    assert row == f"| {suite.name} | — | — | — | — | 9 passed · 1.0 min |"
