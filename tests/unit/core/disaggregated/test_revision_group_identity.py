"""The v1.0 groupIdentity fold of the DisaggregatedSet revision.

The Go oracle serves sigs.k8s.io/lws v0.9.0, whose ComputeRevision predates the fold, so these
vectors are derived by hand from upstream's v1.0 rule (pkg/utils/disaggregatedset/utils.go): the
hashed struct is ``{Name "name"; GroupIdentity "groupIdentity,omitempty"; Template "template"}``
with ``Ordinal`` normalised to ``""``. Go's encoding/json writes struct fields in declaration order
and drops the empty string, so the v1.0 bytes are the oracle's v0.9 bytes with
``"groupIdentity":"Hash",`` spliced in after a Hash role's name, and identical for Ordinal roles.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest

from leaderworkerset.core.disaggregated.revision import disaggregated_revision
from leaderworkerset.core.gocompat.gonormalize import GoDecodeError
from tests.unit.core.golden import golden


def _golden_row(row_id: str) -> dict[str, Any]:
    rows = [row for row in golden()["dsRevisions"] if row["id"] == row_id]
    assert len(rows) == 1, row_id
    return rows[0]


def _with_identity(roles: list[dict[str, Any]], identities: dict[str, str]) -> list[dict[str, Any]]:
    roles = copy.deepcopy(roles)
    for role in roles:
        if role["name"] in identities:
            role.setdefault("spec", {})["groupIdentity"] = identities[role["name"]]
    return roles


def _spliced(hashed: str, hash_roles: list[str]) -> str:
    """The oracle's v0.9 bytes with the v1.0 field inserted, by hand."""
    for name in hash_roles:
        prefix = json.dumps({"name": name}, separators=(",", ":"))[:-1] + ","
        assert hashed.count(prefix) == 1, name
        hashed = hashed.replace(prefix, prefix + '"groupIdentity":"Hash",')
    return hashlib.sha256(hashed.encode("utf-8")).hexdigest()[:8]


TWO_ROLES = "upstream samples/disaggregatedset_v1_disaggregatedset.yaml#0"
THREE_ROLES = "upstream samples/disaggregatedset_v1_3role.yaml#0"
ONE_ROLE = "single role"


FOLD_CASES = [
    pytest.param(TWO_ROLES, {}, [], id="absent: the v0.9 revision"),
    pytest.param(
        TWO_ROLES, {"prefill": "Ordinal", "decode": "Ordinal"}, [], id="Ordinal defaulted: unchanged"
    ),
    pytest.param(TWO_ROLES, {"prefill": ""}, [], id="empty string: unchanged"),
    pytest.param(TWO_ROLES, {"prefill": "Hash"}, ["prefill"], id="one Hash role"),
    pytest.param(
        TWO_ROLES, {"prefill": "Hash", "decode": "Hash"}, ["prefill", "decode"], id="two Hash roles"
    ),
    pytest.param(TWO_ROLES, {"prefill": "Ordinal", "decode": "Hash"}, ["decode"], id="Ordinal next to Hash"),
    pytest.param(THREE_ROLES, {"decode": "Hash"}, ["decode"], id="three roles, the middle one Hash"),
    pytest.param(ONE_ROLE, {}, [], id="single role unchanged"),
]


@pytest.mark.parametrize(
    ("row_id", "identities", "hash_roles"),
    FOLD_CASES,
)
def test_group_identity_fold(row_id: str, identities: dict[str, str], hash_roles: list[str]) -> None:
    row = _golden_row(row_id)
    names = {role["name"] for role in row["roles"]}
    assert set(identities) <= names, names
    want = _spliced(row["want"]["hashed"], hash_roles)
    if not hash_roles:
        assert want == row["want"]["revision"]  # the splice of nothing is the oracle's own answer
    assert disaggregated_revision(_with_identity(row["roles"], identities)) == want


def test_switching_a_role_to_hash_starts_a_rollout() -> None:
    roles = _golden_row(TWO_ROLES)["roles"]
    ordinal = disaggregated_revision(_with_identity(roles, {"prefill": "Ordinal"}))
    hashed = disaggregated_revision(_with_identity(roles, {"prefill": "Hash"}))
    assert ordinal != hashed


def test_a_non_string_group_identity_is_a_decode_error() -> None:
    # Go's typed decode of the role would fail the same way; the webhook rejects it first.
    roles = copy.deepcopy(_golden_row(ONE_ROLE)["roles"])
    roles[0].setdefault("spec", {})["groupIdentity"] = 5
    with pytest.raises(GoDecodeError, match=r"spec\.groupIdentity"):
        disaggregated_revision(roles)


def test_group_identity_fold_case_count() -> None:
    assert len(FOLD_CASES) == 8
