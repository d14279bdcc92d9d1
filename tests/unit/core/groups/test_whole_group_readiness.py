"""Whole-group readiness as upstream main after v1.0 defines it, where it is ours to decide.

The cases follow upstream main's `pkg/replicagroups` observer test (one Ordinal group of 3, whose
leader annotation says its size); `describe_groups` with the set's pods is what `lws status` and the
not-ready diagnosis read. Without pods, the v1.0 rule (which our LWS status counts keep) is unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.groups.state import describe_groups, own_group_size
from tests.support.builders import as_worker_of, leader_pod, worker_statefulset

Obj = dict[str, Any]
SIZE = 3


def _group(size_annotation: str | None = str(SIZE)) -> tuple[Obj, Obj, list[Obj]]:
    """A ready group of SIZE: leader `lws-0`, worker StatefulSet `lws-0`, workers `lws-0-1`, `lws-0-2`."""
    annotations = None if size_annotation is None else {c.ANNOTATION_SIZE: size_annotation}
    leader = leader_pod("lws", 0, "rev", annotations=annotations)
    sts = worker_statefulset(leader, replicas=SIZE - 1)
    workers = []
    for index in range(1, SIZE):
        pod = copy.deepcopy(leader)
        pod["metadata"]["name"] = f"lws-0-{index}"
        pod["metadata"]["uid"] = f"uid-lws-0-{index}"
        pod["metadata"]["labels"][c.LABEL_WORKER_INDEX] = str(index)
        pod["metadata"].pop("annotations", None)
        workers.append(as_worker_of(pod, leader))
    return leader, sts, workers


Change = Callable[[Obj, Obj | None, list[Obj]], Obj | None]  # may return a replacement worker STS


def _unready(pod: Obj) -> None:
    pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]


def _phase(pod: Obj, phase: str) -> None:
    pod["status"]["phase"] = phase


def _deleting(obj: Obj) -> None:
    obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"


def _sts_status(sts: Obj, **status: Any) -> None:
    sts["status"].update(status)


def _leader_only(leader: Obj, sts: Obj | None, workers: list[Obj]) -> Obj | None:
    leader["metadata"]["annotations"][c.ANNOTATION_SIZE] = "1"
    workers.clear()
    return None


CASES: list[Any] = [
    # (change, live size, want ready, want problems in the reasons)
    pytest.param(lambda ld, s, w: s, SIZE, True, (), id="ready"),
    pytest.param(lambda ld, s, w: _unready(ld) or s, SIZE, False, (), id="leader unready"),
    pytest.param(lambda ld, s, w: _phase(ld, "Succeeded") or s, SIZE, False, (), id="leader completed"),
    pytest.param(
        lambda ld, s, w: _phase(w[0], "Failed") or s,
        SIZE,
        False,
        ("worker pods not ready: lws-0-1",),
        id="worker failed",
    ),
    pytest.param(
        lambda ld, s, w: _unready(w[1]) or s,
        1,
        False,
        ("worker pods not ready: lws-0-2",),
        id="old worker unready after the template shrinks to one",
    ),
    pytest.param(lambda ld, s, w: s, 4, True, (), id="healthy old group after the template grows"),
    pytest.param(lambda ld, s, w: s, 2, True, (), id="healthy old group after the template shrinks"),
    pytest.param(_leader_only, 4, True, (), id="healthy old leader-only group after the template grows"),
    pytest.param(
        lambda ld, s, w: w.pop() and s,
        SIZE,
        False,
        ("worker pods missing: lws-0-2",),
        id="worker missing (availableReplicas still says 2)",
    ),
    pytest.param(lambda ld, s, w: None, SIZE, False, (), id="worker set missing"),
    pytest.param(
        lambda ld, s, w: _sts_status(s, availableReplicas=1) or s, SIZE, False, (), id="workers unavailable"
    ),
    pytest.param(
        lambda ld, s, w: _sts_status(s, updateRevision="r2") or s,
        SIZE,
        False,
        (),
        id="worker revisions differ",
    ),
    pytest.param(
        lambda ld, s, w: s["spec"].update(replicas=1) or _sts_status(s, availableReplicas=1) or s,
        SIZE,
        False,
        ("worker statefulset wants 1 workers, not 2",),
        id="wrong worker target",
    ),
    pytest.param(
        lambda ld, s, w: s["spec"].pop("replicas") and s,
        SIZE,
        False,
        ("worker statefulset wants unset workers, not 2",),
        id="nil worker target",
    ),
    pytest.param(lambda ld, s, w: _deleting(ld) or s, SIZE, True, (), id="leader terminating"),
    pytest.param(lambda ld, s, w: _deleting(w[0]) or s, SIZE, True, (), id="worker terminating"),
    pytest.param(lambda ld, s, w: _deleting(s) or s, SIZE, True, (), id="worker set terminating"),
    pytest.param(
        lambda ld, s, w: s["metadata"].update(generation=2) or s,
        SIZE,
        True,
        (),
        id="worker generation pending",
    ),
    pytest.param(
        lambda ld, s, w: as_worker_of(w[0], leader_pod("lws", 9, "rev")) and s,
        SIZE,
        False,
        ("worker pods missing: lws-0-1",),
        id="a worker another StatefulSet controls is not this group's",
    ),
]


@pytest.mark.parametrize(("change", "live_size", "want_ready", "want_problems"), CASES)
def test_whole_group_readiness(
    change: Change, live_size: int, want_ready: bool, want_problems: tuple[str, ...]
) -> None:
    leader, sts, workers = _group()
    worker_sts = change(leader, sts, workers)
    stss = {} if worker_sts is None else {"lws-0": worker_sts}
    (view,) = describe_groups(
        size=live_size,
        revision_key="rev",
        leader_pods=[leader],
        worker_statefulsets=stss,
        pods=[leader, *workers],
    )
    assert view.ready is want_ready
    assert view.reasons[len(view.reasons) - len(want_problems) :] == want_problems
    if want_ready:
        assert view.reasons == (
            ("leader pod terminating",) if "deletionTimestamp" in leader["metadata"] else ()
        )


def test_every_case_ran() -> None:
    assert len(CASES) == 19


@pytest.mark.parametrize(
    ("annotation", "want"),
    [
        pytest.param("3", 3, id="the group's own size"),
        pytest.param(None, SIZE + 1, id="absent (admission skipped): the live size"),
        pytest.param("x", None, id="malformed: unknown"),
        pytest.param("0", None, id="zero: unknown"),
        pytest.param("-1", None, id="negative: unknown"),
    ],
)
def test_own_group_size(annotation: str | None, want: int | None) -> None:
    leader, _, _ = _group(annotation)
    assert own_group_size(leader, SIZE + 1) == want


@pytest.mark.parametrize("annotation", ["x", "0", "-1"])
def test_an_unknown_size_is_never_ready(annotation: str) -> None:
    leader, sts, workers = _group(annotation)
    (view,) = describe_groups(
        size=SIZE,
        revision_key="rev",
        leader_pods=[leader],
        worker_statefulsets={"lws-0": sts},
        pods=[leader, *workers],
    )
    assert not view.ready
    assert view.reasons == (f"group size unknown (leader annotation {c.ANNOTATION_SIZE} {annotation!r})",)


def test_without_pods_the_v1_rule_is_unchanged() -> None:
    """A missing worker pod is invisible to v1.0's rule, which trusts availableReplicas."""
    leader, sts, workers = _group()
    workers.pop()
    stss = {"lws-0": sts}
    (v1,) = describe_groups(size=SIZE, revision_key="rev", leader_pods=[leader], worker_statefulsets=stss)
    (main,) = describe_groups(
        size=SIZE, revision_key="rev", leader_pods=[leader], worker_statefulsets=stss, pods=[leader, *workers]
    )
    assert (v1.ready, v1.reasons) == (True, ())
    assert (main.ready, main.reasons) == (False, ("worker pods missing: lws-0-2",))
