"""Revision bookkeeping: keys, names, numbering, lookup, truncation, semantic cache, reconcile plan."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.gocompat import gojson
from leaderworkerset.core.objects import revision_key_of
from leaderworkerset.core.rollout.revision import (
    RevisionMatchCache,
    find_revision,
    fnv32,
    hash_patch,
    new_revision,
    next_revision_number,
    plan_revision,
    revision_name,
    revision_patch,
    revision_spec,
    revisions_to_truncate,
    safe_encode,
)
from tests.support.builders import LeaderWorkerSetBuilder

NS = "default"
UID = "uid-1"


def sample(image: str | None = None) -> dict[str, Any]:
    builder = LeaderWorkerSetBuilder(NS)
    if image is not None:
        builder = builder.worker_image(image)
    lws = builder.obj()
    lws["metadata"].update(uid=UID, generation=1)
    return lws


def revision(
    number: int, key: str, *, controller: str | None = UID, name: str = "test-sample", data: Any = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": f"{name}-{key}-{number}",
        "namespace": NS,
        "labels": {c.LABEL_SET_NAME: name, c.LABEL_TEMPLATE_REVISION_HASH: key},
        "resourceVersion": str(100 + number),
    }
    if controller is not None:
        meta["ownerReferences"] = [{"kind": c.LWS_KIND, "name": name, "uid": controller, "controller": True}]
    return {"metadata": meta, "revision": number, "data": data if data is not None else {}}


def current_revision(lws: dict[str, Any], number: int = 1, key: str | None = None) -> dict[str, Any]:
    """What the API server returns for a revision we created: parsed data, a resourceVersion."""
    created = new_revision(lws, key or "", [revision(number - 1, "x")] if number > 1 else [])
    created["metadata"]["resourceVersion"] = "42"
    return created


def leader_sts(key: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "test-sample", "namespace": NS, "labels": {c.LABEL_TEMPLATE_REVISION_HASH: key}}
    }


# --------------------------------------------------------------------------------------------------
# key
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "want"),
    [
        pytest.param(b"", 0x811C9DC5, id="offset basis"),
        pytest.param(b"a", 0x050C5D7E, id="FNV-1, not FNV-1a (0xe40c292c)"),
        pytest.param(b"foobar", 0x31F0B262, id="multi-byte"),
    ],
)
def test_fnv32(data: bytes, want: int) -> None:
    assert fnv32(data) == want


def test_safe_encode_maps_digits() -> None:
    assert safe_encode("0123456789") == "456789bcdf"


def test_hash_uses_only_safe_digits() -> None:
    key = hash_patch(revision_patch(sample()))
    assert 1 <= len(key) <= 10
    assert set(key) <= set("456789bcdf")


@pytest.mark.parametrize(
    ("name", "want_prefix"),
    [
        pytest.param("lws", "lws", id="short name kept"),
        pytest.param("n" * 220, "n" * 220, id="220 bytes kept"),
        pytest.param("n" * 250, "n" * 220, id="longer names truncated to 220 bytes"),
    ],
)
def test_revision_name(name: str, want_prefix: str) -> None:
    assert revision_name(name, "5d8f", 12) == f"{want_prefix}-5d8f-12"


# --------------------------------------------------------------------------------------------------
# the restart budget is a live setting, not part of the revision (KEP-820)
# --------------------------------------------------------------------------------------------------


def with_budget(budget: int | None, image: str | None = None) -> dict[str, Any]:
    lws = sample(image)
    if budget is not None:
        lws["spec"]["leaderWorkerTemplate"]["maxGroupRestarts"] = budget
    return lws


def stored_the_old_way(lws: dict[str, Any], budget: int) -> dict[str, Any]:
    """A revision as a build of ours that still hashed the budget wrote it: the budget inside the
    replaced template (keys sorted, as Go writes them), under the key of those bytes."""
    data = gojson.loads(revision_patch(lws))
    data["spec"]["leaderWorkerTemplate"]["maxGroupRestarts"] = budget
    old_key = hash_patch(gojson.dumps(data))
    stored = revision(1, old_key, data=data)
    assert b'"maxGroupRestarts"' in gojson.dumps(stored["data"])
    return stored


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(None, 1, id="budget set"),
        pytest.param(1, 4, id="budget raised"),
        pytest.param(4, 0, id="budget lowered to zero"),
        pytest.param(2, None, id="budget unset"),
    ],
)
def test_changing_the_budget_changes_neither_patch_key_nor_name(
    before: int | None, after: int | None
) -> None:
    first, second = with_budget(before), with_budget(after)
    assert revision_patch(first) == revision_patch(second)
    assert b"maxGroupRestarts" not in revision_patch(second)
    assert new_revision(first, "", [])["metadata"] == new_revision(second, "", [])["metadata"]


def test_a_template_change_still_changes_the_key_with_a_budget() -> None:
    assert key_of(with_budget(3, "nginx:1.0")) != key_of(with_budget(3, "nginx:2.0"))


def test_applying_a_revision_keeps_the_live_budget() -> None:
    stored = current_revision(with_budget(1, "nginx:1.0"))
    spec = revision_spec(with_budget(7, "nginx:2.0"), stored)
    assert spec["leaderWorkerTemplate"]["maxGroupRestarts"] == 7
    worker = spec["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert worker["image"] == "nginx:1.0"


@pytest.mark.parametrize(("live", "want"), [(7, 7), (None, None)], ids=["live budget", "no live budget"])
def test_a_revision_that_still_stores_a_budget_never_restores_it(live: int | None, want: int | None) -> None:
    stored = stored_the_old_way(with_budget(1), budget=1)
    template = revision_spec(with_budget(live), stored)["leaderWorkerTemplate"]
    assert template.get("maxGroupRestarts") == want


def test_a_revision_that_differs_only_by_the_budget_is_the_same_revision() -> None:
    """Upgrade safety: our earlier builds hashed the budget; their revision must not roll the set."""
    lws = with_budget(4)
    stored = stored_the_old_way(with_budget(1), budget=1)
    plan = plan_revision(lws, leader_sts(revision_key_of(stored)), [stored], RevisionMatchCache())
    assert plan.create == ()
    assert not plan.updated
    assert plan.key == revision_key_of(stored) != key_of(lws)


def test_a_revision_that_differs_by_more_than_the_budget_is_a_new_revision() -> None:
    stored = stored_the_old_way(with_budget(1, "nginx:1.0"), budget=1)
    plan = plan_revision(
        with_budget(1, "nginx:2.0"), leader_sts(revision_key_of(stored)), [stored], RevisionMatchCache()
    )
    assert plan.updated
    assert [revision_key_of(created) for created, _ in plan.create] == [key_of(with_budget(1, "nginx:2.0"))]


# --------------------------------------------------------------------------------------------------
# restartBackoff (upstream main after v1.0) is a live setting too
# --------------------------------------------------------------------------------------------------


def with_backoff(backoff: dict[str, int] | None, image: str | None = None) -> dict[str, Any]:
    lws = sample(image)
    if backoff is not None:
        lws["spec"]["leaderWorkerTemplate"]["restartBackoff"] = backoff
    return lws


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(None, {"baseSeconds": 10, "capSeconds": 300}, id="back-off set"),
        pytest.param(
            {"baseSeconds": 10, "capSeconds": 300}, {"baseSeconds": 5, "capSeconds": 60}, id="changed"
        ),
        pytest.param({"baseSeconds": 10}, None, id="back-off unset"),
    ],
)
def test_changing_the_backoff_changes_neither_patch_key_nor_name(
    before: dict[str, int] | None, after: dict[str, int] | None
) -> None:
    first, second = with_backoff(before), with_backoff(after)
    assert revision_patch(first) == revision_patch(second)
    assert b"restartBackoff" not in revision_patch(second)
    assert new_revision(first, "", [])["metadata"] == new_revision(second, "", [])["metadata"]
    plan = plan_revision(second, leader_sts(key_of(first)), [current_revision(first)], RevisionMatchCache())
    assert (plan.create, plan.updated) == ((), False)


def test_a_template_change_still_changes_the_key_with_a_backoff() -> None:
    backoff = {"baseSeconds": 10, "capSeconds": 300}
    assert key_of(with_backoff(backoff, "nginx:1.0")) != key_of(with_backoff(backoff, "nginx:2.0"))


def test_applying_a_revision_keeps_the_live_backoff() -> None:
    stored = current_revision(with_backoff({"baseSeconds": 10, "capSeconds": 300}, "nginx:1.0"))
    live = {"baseSeconds": 5, "capSeconds": 60}
    template = revision_spec(with_backoff(live, "nginx:2.0"), stored)["leaderWorkerTemplate"]
    assert template["restartBackoff"] == live
    assert template["workerTemplate"]["spec"]["containers"][0]["image"] == "nginx:1.0"
    assert "restartBackoff" not in revision_spec(with_backoff(None), stored)["leaderWorkerTemplate"]


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"replicas": 9}, id="replicas"),
        pytest.param({"startupPolicy": c.STARTUP_POLICY_LEADER_READY}, id="startup policy"),
        pytest.param({"rolloutStrategy": {"type": "RollingUpdate"}}, id="rollout strategy"),
        pytest.param({"groupIdentity": "Hash"}, id="group identity"),
    ],
)
def test_fields_outside_the_templates_do_not_change_the_revision(change: dict[str, Any]) -> None:
    lws = sample()
    changed = sample()
    changed["spec"].update(change)
    assert revision_patch(changed) == revision_patch(lws)


def test_controller_revision_object() -> None:
    lws = sample()
    created = new_revision(lws, "", [])
    patch = revision_patch(lws)
    key = hash_patch(patch)
    assert created["metadata"] == {
        "name": f"test-sample-{key}-1",
        "namespace": NS,
        "labels": {c.LABEL_SET_NAME: "test-sample", c.LABEL_TEMPLATE_REVISION_HASH: key},
        "ownerReferences": [
            {
                "apiVersion": c.LWS_API_VERSION,
                "kind": c.LWS_KIND,
                "name": "test-sample",
                "uid": UID,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    assert created["revision"] == 1
    assert gojson.dumps(created["data"]) == patch


# --------------------------------------------------------------------------------------------------
# numbering, lookup, truncation
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("existing", "want"),
    [
        pytest.param([], 1, id="first revision"),
        pytest.param([revision(1, "a"), revision(4, "b")], 5, id="after the highest"),
        pytest.param([revision(6, "a", controller=None)], 7, id="orphans count"),
        pytest.param([revision(9, "a", controller="other")], 1, id="other controllers do not count"),
        pytest.param([revision(9, "a", name="other-set")], 1, id="other sets do not count"),
    ],
)
def test_next_revision_number(existing: list[dict[str, Any]], want: int) -> None:
    assert next_revision_number(sample(), existing) == want


@pytest.mark.parametrize(
    ("key", "existing", "want_number"),
    [
        pytest.param("", [revision(1, "")], None, id="empty key finds nothing"),
        pytest.param("a", [revision(1, "b")], None, id="no revision with the key"),
        pytest.param("a", [revision(1, "a"), revision(3, "a"), revision(2, "a")], 3, id="highest of several"),
        pytest.param("a", [revision(5, "a", controller="other")], None, id="another controller's revision"),
        pytest.param("a", [revision(5, "a", controller=None)], 5, id="orphan adopted"),
    ],
)
def test_find_revision(key: str, existing: list[dict[str, Any]], want_number: int | None) -> None:
    found = find_revision(sample(), key, existing)
    assert (found["revision"] if found else None) == want_number


def test_find_revision_prefers_the_later_of_equal_numbers() -> None:
    first, second = revision(2, "a"), revision(2, "a")
    second["metadata"]["name"] = "second"
    assert find_revision(sample(), "a", [first, second]) is second


def test_truncation_keeps_only_the_current_key_and_foreign_revisions() -> None:
    existing = [
        revision(1, "old"),
        revision(2, "older", controller=None),
        revision(3, "cur"),
        revision(4, "old", controller="someone-else"),
        revision(5, "old", name="other-set"),
    ]
    doomed = revisions_to_truncate(sample(), "cur", existing)
    assert [item["revision"] for item in doomed] == [1, 2]


def test_revision_spec_restores_the_templates_of_a_leaders_revision() -> None:
    old = current_revision(sample("nginx:1.0"))
    spec = revision_spec(sample("nginx:2.0"), old)
    worker = spec["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert worker["image"] == "nginx:1.0"
    assert spec["replicas"] == 2  # everything else comes from the live object


# --------------------------------------------------------------------------------------------------
# semantic-match cache
# --------------------------------------------------------------------------------------------------


def test_cache_evicts_the_least_recently_used() -> None:
    cache = RevisionMatchCache(max_entries=2)
    a, b, d = ("u", 1, "a"), ("u", 1, "b"), ("u", 1, "d")
    cache.add(a)
    cache.add(b)
    assert cache.get(a)
    cache.add(d)
    assert a in cache
    assert d in cache
    assert b not in cache
    assert len(cache) == 2


def test_default_cache_size_is_upstreams() -> None:
    cache = RevisionMatchCache()
    for index in range(10_001):
        cache.add(("u", index, "rv"))
    assert len(cache) == 10_000
    assert ("u", 0, "rv") not in cache


# --------------------------------------------------------------------------------------------------
# the reconcile plan
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanCase:
    lws: dict[str, Any]
    sts: dict[str, Any] | None
    existing: list[dict[str, Any]]
    want_created: list[tuple[str, int, str]]  # (key label, revision number, event message format)
    want_updated: bool
    want_key: str
    cached: list[tuple[str, int, str]] = field(default_factory=list)


def key_of(lws: dict[str, Any]) -> str:
    return hash_patch(revision_patch(lws))


def stale_revision_data(lws: dict[str, Any]) -> dict[str, Any]:
    """Data as an old controller wrote it: same meaning, a `creationTimestamp: null` more."""
    data: dict[str, Any] = gojson.loads(revision_patch(lws))
    data["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["creationTimestamp"] = None
    return data


OLD, NEW = sample("nginx:1.0"), sample("nginx:2.0")


PLAN_CASES = [
    pytest.param(
        PlanCase(NEW, None, [], [(key_of(NEW), 1, c.MSG_CREATING_REVISION_NEW)], False, key_of(NEW)),
        id="new LWS gets its first revision",
    ),
    pytest.param(
        PlanCase(NEW, None, [current_revision(NEW)], [], False, key_of(NEW)),
        id="a revision left by an interrupted first reconcile is reused, not twinned",
    ),
    pytest.param(
        PlanCase(
            NEW,
            None,
            [current_revision(OLD)],
            [(key_of(NEW), 2, c.MSG_CREATING_REVISION_NEW)],
            False,
            key_of(NEW),
        ),
        id="without a leader StatefulSet a revision of another template is not reused",
    ),
    pytest.param(
        PlanCase(NEW, leader_sts(key_of(NEW)), [current_revision(NEW)], [], False, key_of(NEW)),
        id="steady state creates nothing",
    ),
    pytest.param(
        PlanCase(
            NEW,
            leader_sts("legacykey"),
            [],
            [("legacykey", 1, c.MSG_CREATING_REVISION_MISSING)],
            False,
            "legacykey",
        ),
        id="missing revision re-created under the StatefulSet's key",
    ),
    pytest.param(
        PlanCase(
            NEW,
            leader_sts(key_of(OLD)),
            [current_revision(OLD)],
            [(key_of(NEW), 2, c.MSG_CREATING_REVISION_UPDATED)],
            True,
            key_of(NEW),
        ),
        id="template change creates the next revision",
    ),
    pytest.param(
        PlanCase(
            NEW,
            leader_sts(key_of(OLD)),
            [current_revision(OLD), current_revision(NEW, 2)],
            [],
            True,
            key_of(NEW),
        ),
        id="a revision left by an interrupted update is reused, not twinned",
    ),
    pytest.param(
        PlanCase(
            NEW,
            leader_sts("k"),
            [revision(3, "k", data=stale_revision_data(NEW))],
            [],
            False,
            "k",
            cached=[(UID, 1, "103")],
        ),
        id="same meaning in other bytes is the same revision (and is cached)",
    ),
    pytest.param(
        PlanCase(
            NEW,
            leader_sts(key_of(OLD)),
            [revision(1, key_of(OLD), controller="someone-else", data=gojson.loads(revision_patch(OLD)))],
            [(key_of(OLD), 1, c.MSG_CREATING_REVISION_MISSING)],
            False,
            key_of(OLD),
        ),
        id="another controller's revision is not ours",
    ),
]


@pytest.mark.parametrize("case", PLAN_CASES)
def test_plan_revision(case: PlanCase) -> None:
    cache = RevisionMatchCache()
    plan = plan_revision(case.lws, case.sts, case.existing, cache)

    created = [(revision_key_of(item), item["revision"], event.message) for item, event in plan.create]
    assert created == [(key, number, message % key) for key, number, message in case.want_created]
    assert all(event.reason == c.EVENT_CREATING_REVISION for _, event in plan.create)
    assert plan.updated == case.want_updated
    assert plan.key == case.want_key
    assert revision_key_of(plan.revision) == case.want_key
    assert all(key in cache for key in case.cached)


def test_missing_revision_keeps_the_computed_hash_in_its_name() -> None:
    plan = plan_revision(NEW, leader_sts("legacykey"), [], RevisionMatchCache())
    created, _ = plan.create[0]
    assert created["metadata"]["name"] == f"test-sample-{key_of(NEW)}-1"
    assert revision_key_of(created) == "legacykey"


def test_cached_match_skips_the_comparison() -> None:
    cache = RevisionMatchCache()
    unrelated = revision(1, "k", data={"spec": {}})
    cache.add((UID, 1, unrelated["metadata"]["resourceVersion"]))
    plan = plan_revision(NEW, leader_sts("k"), [unrelated], cache)
    assert plan.create == ()
    assert plan.revision is unrelated
