"""The chaos invariants on synthetic streams: each check passes a legitimate history and names the
violation in one that breaks it (no cluster)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import pytest

from leaderworkerset.api import constants as c
from tests.chaos.faults import invariants as inv
from tests.chaos.faults.invariants import ADDED, DELETED, MODIFIED, Change

NAME = "lws"


def lws(rv: int, replicas: int = 2, size: int = 2, type_: str = ADDED, deleting: bool = False) -> Change:
    return Change(
        rv=rv, kind=inv.LWS, type=type_, name=NAME, uid="lws-uid", replicas=replicas, size=size,
        deleting=deleting,
    )  # fmt: skip


def revision(rv: int, key: str, uid: str = "", type_: str = ADDED) -> Change:
    labels = {c.LABEL_SET_NAME: NAME, c.LABEL_TEMPLATE_REVISION_HASH: key}
    return Change(
        rv=rv, kind=inv.REVISION, type=type_, name=f"{NAME}-{key}", uid=uid or f"cr-{key}", labels=labels,
        owners=((inv.LWS, NAME),),
    )  # fmt: skip


def pod(
    rv: int,
    group: int | str,
    worker: int = 0,
    *,
    key: str = "r1",
    uid: str = "",
    type_: str = ADDED,
    ready: bool = True,
    deleting: bool = False,
) -> Change:
    name = f"{NAME}-{group}" if worker == 0 else f"{NAME}-{group}-{worker}"
    labels = {
        c.LABEL_SET_NAME: NAME,
        c.LABEL_GROUP_INDEX: str(group),
        c.LABEL_WORKER_INDEX: str(worker),
        c.LABEL_TEMPLATE_REVISION_HASH: key,
    }
    return Change(
        rv=rv, kind=inv.POD, type=type_, name=name, uid=uid or f"{name}-{key}", labels=labels,
        ready=ready and not deleting, deleting=deleting,
    )  # fmt: skip


def leaders_sts(rv: int, replicas: int, type_: str = ADDED) -> Change:
    return Change(rv=rv, kind=inv.STATEFULSET, type=type_, name=NAME, uid="sts", replicas=replicas)


def deployed(key: str = "r1", replicas: int = 2) -> list[Change]:
    """An LWS of ``replicas`` groups of 2, every pod Ready on revision ``key`` (rv 1..)."""
    stream = [lws(1, replicas), revision(2, key), leaders_sts(3, replicas)]
    rv = 4
    for group in range(replicas):
        for worker in range(2):
            stream.append(pod(rv, group, worker, key=key))
            rv += 1
    return stream


def rolled_group(rv: int, group: int, old: str = "r1", new: str = "r2") -> list[Change]:
    """A rollout replacing group ``group``: old pods leave, new ones come up."""
    return [
        pod(rv, group, 0, key=old, type_=MODIFIED, deleting=True),
        pod(rv + 1, group, 1, key=old, type_=MODIFIED, deleting=True),
        pod(rv + 2, group, 0, key=old, type_=DELETED, deleting=True),
        pod(rv + 3, group, 1, key=old, type_=DELETED, deleting=True),
        pod(rv + 4, group, 0, key=new),
        pod(rv + 5, group, 1, key=new),
    ]


def rollout() -> list[Change]:
    return [*deployed(), revision(20, "r2"), *rolled_group(21, 1), *rolled_group(30, 0)]


def failed_and_recreated(rv: int = 20, group: int = 0, times: int = 1) -> list[Change]:
    stream = [inv.failure(rv, NAME, str(group))]
    for n in range(times):
        at = rv + 1 + 10 * n
        old = "" if n == 0 else f"again{n}"
        stream += [
            pod(at, group, 0, uid=f"{NAME}-{group}-r1{old}", type_=MODIFIED, deleting=True),
            pod(at + 1, group, 1, uid=f"{NAME}-{group}-1-r1{old}", type_=MODIFIED, deleting=True),
            pod(at + 2, group, 0, uid=f"{NAME}-{group}-r1{old}", type_=DELETED, deleting=True),
            pod(at + 3, group, 1, uid=f"{NAME}-{group}-1-r1{old}", type_=DELETED, deleting=True),
            pod(at + 4, group, 0, uid=f"{NAME}-{group}-r1again{n + 1}"),
            pod(at + 5, group, 1, uid=f"{NAME}-{group}-1-r1again{n + 1}"),
        ]
    return stream


@dataclass(frozen=True)
class Case:
    stream: Sequence[Change]
    want_violations: int
    want_phrase: str = ""


def healthy_pod_deleted() -> list[Change]:
    return [*deployed(), pod(20, 1, 1, type_=MODIFIED, deleting=True), pod(21, 1, 1, type_=DELETED)]


def deleted_during_gap_while_current() -> list[Change]:
    # a relist after a watch gap finds group 1's worker replaced by a new one on the same revision
    gone = replace(pod(40, 1, 1, type_=DELETED), relisted=True)
    back = replace(pod(40, 1, 1, uid="new-incarnation"), relisted=True)
    return [*deployed(), gone, back]


def rolled_during_gap() -> list[Change]:
    gone = replace(pod(40, 1, 1, type_=DELETED), relisted=True)
    back = replace(pod(40, 1, 1, key="r2"), relisted=True)
    return [*deployed(), revision(30, "r2"), gone, back]


def scaled_down() -> list[Change]:
    return [*deployed(replicas=3), lws(20, replicas=2, type_=MODIFIED), pod(21, 2, 0, type_=DELETED)]


def deleted_as_owner_left() -> list[Change]:
    return [*deployed(), lws(20, type_=MODIFIED, deleting=True), pod(21, 0, 0, type_=DELETED)]


def failed_group_torn_down() -> list[Change]:
    return [*deployed(), *failed_and_recreated()]


def stale_delete_after_scale_back_up() -> list[Change]:
    # replicas went 2 -> 1 -> 2 while a controller kept deleting group 1 from its old view
    return [
        *deployed(),
        lws(20, replicas=1, type_=MODIFIED),
        lws(21, replicas=2, type_=MODIFIED),
        pod(22, 1, 0, type_=DELETED),
    ]


DELETION_CASES = [
    pytest.param(Case(deployed(), 0), id="nothing-deleted"),
    pytest.param(Case(rollout(), 0), id="rollout-deletes-old-revision-pods"),
    pytest.param(Case(scaled_down(), 0), id="scale-down-deletes-groups-beyond-replicas"),
    pytest.param(Case(deleted_as_owner_left(), 0), id="owner-deletion-cascades"),
    pytest.param(Case(failed_group_torn_down(), 0), id="failed-group-is-torn-down"),
    pytest.param(Case(rolled_during_gap(), 0), id="gap-hides-a-legitimate-rollout"),
    pytest.param(Case(healthy_pod_deleted(), 1, "lws-1-1"), id="healthy-worker-deleted"),
    pytest.param(Case(stale_delete_after_scale_back_up(), 1, "lws-1 "), id="delete-from-a-stale-replicas"),
    pytest.param(
        Case(deleted_during_gap_while_current(), 1, "after a watch gap"), id="gap-hides-a-bad-delete"
    ),
]


def check_case(check: Callable[[Sequence[Change]], list[str]], case: Case) -> None:
    violations = check(case.stream)
    assert len(violations) == case.want_violations, violations
    assert all(case.want_phrase in v for v in violations), violations


@pytest.mark.parametrize("case", DELETION_CASES)
def test_unjustified_pod_deletions(case: Case) -> None:
    check_case(inv.unjustified_pod_deletions, case)


def test_unjustified_pod_deletions_ran_every_case() -> None:
    assert len(DELETION_CASES) == 9


def unknown_uid_deleted() -> list[Change]:
    return [*deployed(), pod(20, 0, 1, uid="never-seen", type_=DELETED)]


UNKNOWN_CASES = [
    pytest.param(Case(rollout(), 0), id="rollout"),
    pytest.param(Case(unknown_uid_deleted(), 1, "never-se"), id="uid-that-never-existed"),
    pytest.param(
        Case([*deployed(), pod(20, 5, type_=DELETED)], 1, "nothing of that name"), id="name-unknown"
    ),
]


@pytest.mark.parametrize("case", UNKNOWN_CASES)
def test_deletes_of_unknown_objects(case: Case) -> None:
    check_case(inv.deletes_of_unknown_objects, case)


RECREATION_CASES = [
    pytest.param(Case([*deployed(), *failed_and_recreated()], 0), id="recreated-once"),
    pytest.param(
        Case([*deployed(), inv.failure(20, NAME, "0")], 1, "recreated 0 times"), id="never-recreated"
    ),
    pytest.param(
        Case([*deployed(), *failed_and_recreated(times=2)], 1, "recreated 2 times"), id="recreated-twice"
    ),
    pytest.param(
        Case([*deployed(), *failed_and_recreated(20, 0), *failed_and_recreated(60, 1)], 0),
        id="two-groups-once-each",
    ),
]


@pytest.mark.parametrize("case", RECREATION_CASES)
def test_recreations_after_failures(case: Case) -> None:
    check_case(inv.recreations_after_failures, case)


REVISION_CASES = [
    pytest.param(Case(rollout(), 0), id="one-per-template"),
    pytest.param(
        Case(
            [*rollout(), revision(50, "r1", type_=DELETED), revision(51, "r1", uid="again")], 1, "r1 of lws"
        ),
        id="same-key-created-again",
    ),
]


@pytest.mark.parametrize("case", REVISION_CASES)
def test_duplicate_revisions(case: Case) -> None:
    check_case(inv.duplicate_revisions, case)


BUDGET = [inv.Budget(NAME, max_surge=1, max_unavailable=0)]


def surge_rollout(surge_to: int) -> list[Change]:
    """Group 2 comes up as a surge group before groups 1 and 0 are replaced."""
    return [
        *deployed(),
        revision(20, "r2"),
        leaders_sts(21, surge_to, type_=MODIFIED),
        pod(22, 2, 0, key="r2"),
        pod(23, 2, 1, key="r2"),
        *rolled_group(30, 1),
        *rolled_group(40, 0),
    ]


BUDGET_CASES = [
    pytest.param(Case(surge_rollout(3), 0), id="surge-within-budget-keeps-capacity"),
    pytest.param(Case(surge_rollout(4), 1, "asks for 4 leaders"), id="surge-beyond-maxSurge"),
    pytest.param(Case(rollout(), 2, "fewer than replicas 2 - maxUnavailable 0"), id="capacity-dips"),
]


@pytest.mark.parametrize("case", BUDGET_CASES)
def test_budget_violations(case: Case) -> None:
    check_case(lambda stream: inv.budget_violations(stream, BUDGET), case)


def test_final_state_ignores_uids_and_keys_but_not_revisions_or_readiness() -> None:
    a = inv.final_state(rollout())
    renamed = [
        replace(
            ch, uid=ch.uid + "-other", labels={**ch.labels, c.LABEL_TEMPLATE_REVISION_HASH: ch.revision + "x"}
        )
        if ch.revision
        else replace(ch, uid=ch.uid + "-other")
        for ch in rollout()
    ]
    renamed = [replace(ch, name=ch.name + "x") if ch.kind == inv.REVISION else ch for ch in renamed]
    assert inv.final_state(renamed) == a
    assert a[NAME]["pods"] == [("0", "0", True, "rev1"), ("0", "1", True, "rev1"), ("1", "0", True, "rev1"),
                               ("1", "1", True, "rev1")]  # fmt: skip
    not_ready = [*rollout(), pod(60, 0, 1, key="r2", type_=MODIFIED, ready=False)]
    assert inv.final_state(not_ready) != a


def test_a_failure_never_targets_a_group_whose_old_workers_are_still_there() -> None:
    """A rollout re-created group 1's leader on r2 while its r1 worker is still up (the garbage
    collector removes it later): that group is not a candidate until every pod is on r2."""
    halfway = [
        *deployed(),
        revision(20, "r2"),
        pod(21, 1, 0, key="r1", type_=MODIFIED, deleting=True),
        pod(22, 1, 0, key="r1", type_=DELETED, deleting=True),
        pod(23, 1, 0, key="r2"),
    ]
    assert inv.failure_candidates(halfway, NAME) == []
    done = [*halfway, pod(24, 1, 1, key="r1", type_=DELETED), pod(25, 1, 1, key="r2")]
    assert inv.failure_candidates(done, NAME) == ["1"]
    failed = [*done, inv.failure(26, NAME, "1")]
    assert inv.failure_candidates(failed, NAME) == []
