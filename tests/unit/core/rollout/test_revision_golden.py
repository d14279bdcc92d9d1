"""Our revisions against upstream's own: vectors produced by tests/oracle (sigs.k8s.io/lws Go code).

Every revision row is an LWS object; the oracle recorded upstream's ControllerRevision for it
(patch bytes, hash, name, labels, number, owner). Every semantic row is an LWS plus stored
revision bytes; the oracle recorded whether upstream's ``SetMatchesRevision`` accepts them and what
``ApplyRevision`` restores. DS rows hold DisaggregatedSet roles and upstream's ``ComputeRevision``.
Regenerate with tests/oracle/regen.sh.
"""

from __future__ import annotations

from typing import Any

import pytest

from leaderworkerset.core.disaggregated.revision import disaggregated_revision
from leaderworkerset.core.gocompat import gojson
from leaderworkerset.core.gocompat.gonormalize import GoDecodeError
from leaderworkerset.core.rollout.revision import (
    RevisionMatchCache,
    apply_revision,
    hash_patch,
    new_revision,
    revision_patch,
    set_matches_revision,
    without_live_settings,
)
from tests.unit.core.golden import golden


def rows(section: str) -> list[Any]:
    return [pytest.param(row, id=row["id"]) for row in golden()[section]]


def test_vectors_come_from_upstream_code() -> None:
    oracle = golden()["oracle"]
    assert oracle["sigs.k8s.io/lws"].startswith("v")
    assert oracle["k8s.io/api"].startswith("v0.37.")


@pytest.mark.parametrize(
    ("section", "minimum"),
    [
        pytest.param("revisions", 95, id="LWS revisions"),
        pytest.param("dsRevisions", 80, id="DS revisions"),
        pytest.param("semantic", 22, id="semantic matches"),
        pytest.param("quantities", 522, id="quantities (gocompat/test_quantity)"),
        pytest.param("gojson", 502, id="Go JSON texts (test_gojson)"),
    ],
)
def test_every_golden_section_has_its_known_rows(section: str, minimum: int) -> None:
    # The data-driven tests over these sections run one case per row: a regenerated file that lost
    # rows would shrink them silently.
    assert len(golden()[section]) >= minimum


def test_enough_varied_templates() -> None:
    good = [row for row in golden()["revisions"] if "error" not in row["want"]]
    assert len(good) >= 20
    assert len({row["want"]["hash"] for row in good}) >= 20


@pytest.mark.parametrize("row", rows("revisions"))
def test_revision_matches_upstream(row: dict[str, Any]) -> None:
    want = row["want"]
    if "error" in want:
        with pytest.raises(GoDecodeError):
            revision_patch(row["lws"])
        return
    patch = revision_patch(row["lws"])
    assert patch.decode("utf-8") == want["patch"]
    assert hash_patch(patch) == want["hash"]

    revision = new_revision(row["lws"], row["revisionKey"], row.get("existing", []))
    assert revision["metadata"]["name"] == want["name"]
    assert revision["metadata"]["labels"] == want["labels"]
    assert revision["metadata"]["namespace"] == want["namespace"]
    assert revision["metadata"]["ownerReferences"] == want["owner"]
    assert revision["revision"] == want["revision"]
    # Sent with Go's encoding, the stored data are the very bytes that were hashed.
    assert gojson.dumps(revision["data"]).decode("utf-8") == want["patch"]


@pytest.mark.parametrize("row", rows("dsRevisions"))
def test_disaggregated_revision_matches_upstream(row: dict[str, Any]) -> None:
    want = row["want"]
    if "error" in want:
        with pytest.raises(GoDecodeError):
            disaggregated_revision(row["roles"])
        return
    assert disaggregated_revision(row["roles"]) == want["revision"]


@pytest.mark.parametrize("row", rows("semantic"))
def test_semantic_match_matches_upstream(row: dict[str, Any]) -> None:
    want = row["want"]
    proposed = revision_patch(row["lws"])
    assert proposed.decode("utf-8") == want["proposedPatch"]
    existing = {"metadata": {"resourceVersion": "1"}, "data": row["stored"]}

    assert (proposed.decode("utf-8") == row["stored"]) == want["bytesEqual"]
    assert set_matches_revision(row["lws"], proposed, existing, RevisionMatchCache()) == want["matches"]


@pytest.mark.parametrize("row", rows("semantic"))
def test_apply_revision_matches_upstream(row: dict[str, Any]) -> None:
    want = row["want"]
    existing = {"data": row["stored"]}
    if "applyError" in want:
        with pytest.raises(ValueError):
            apply_revision(row["lws"], existing)
        return
    restored = apply_revision(row["lws"], existing)
    assert revision_patch(restored).decode("utf-8") == want["restoredPatch"]
    go_spec = want["restoredSpec"]
    template = restored["spec"]["leaderWorkerTemplate"]
    # The oracle's module predates maxGroupRestarts and drops it; v1.0 keeps the live budget
    # whatever the revision stores (TestApplyRevisionPreservesMaxGroupRestarts): asserted apart.
    live_budget = ((row["lws"].get("spec") or {}).get("leaderWorkerTemplate") or {}).get("maxGroupRestarts")
    assert template.get("maxGroupRestarts") == live_budget
    assert without_live_settings(template) == go_spec["leaderWorkerTemplate"]
    assert restored["spec"].get("networkConfig") == go_spec.get("networkConfig")


@pytest.mark.parametrize("row", rows("revisions"))
def test_applying_a_revision_back_matches_upstream(row: dict[str, Any]) -> None:
    """A revision applied to its own LWS regenerates what upstream regenerates (usually the same
    bytes; not for a set pointer to a zero time, or an int64 that float64 pushed out of range)."""
    want = row["want"]
    if "error" in want:
        return
    created = new_revision(row["lws"], "", [])
    if want["applyError"]:
        with pytest.raises(GoDecodeError):
            apply_revision(row["lws"], created)
        return
    restored = apply_revision(row["lws"], created)
    assert revision_patch(restored).decode("utf-8") == want["restoredPatch"]
