"""Objects our webhooks would have refused, or that nobody of ours made, reaching the controllers
with the webhooks off.

For each bad object the controllers must log it, record a Warning event (and, for a
LeaderWorkerSet, set a condition saying why), go on, and keep reconciling everything else: after
each bad object a healthy LeaderWorkerSet is created and must get its leader StatefulSet and its
status. The test plays the API clients; the controllers run in-process (apiserver shape).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.setup import RegisteredControllers
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import EVENTS, LEADERWORKERSETS, PODS, STATEFULSETS
from tests.support import builders as b
from tests.support.inprocess import running_controllers
from tests.support.kubelet import create_leader_pods, get_lws
from tests.support.wait import LONG_TIMEOUT, eventually

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]


@pytest.fixture(scope="module")
async def controllers(apiserver_cluster: LocalCluster, kube: Any) -> AsyncIterator[RegisteredControllers]:
    await install_crds(kube)
    async with running_controllers(apiserver_cluster, enable_disaggregatedset=False) as registered:
        yield registered


def stored_lws(namespace: str, name: str) -> b.LeaderWorkerSetBuilder:
    """A LeaderWorkerSet as our webhooks would have stored it (defaults written out): with the
    webhooks off nothing else fills them in."""
    builder = b.LeaderWorkerSetBuilder(namespace, name).defaulted().replicas(1).size(2)
    builder.spec["rolloutStrategy"] = {
        "type": c.ROLLOUT_STRATEGY_ROLLING_UPDATE,
        "rollingUpdateConfiguration": {"partition": 0, "maxUnavailable": 1, "maxSurge": 0},
    }
    builder.spec["networkConfig"] = {"subdomainPolicy": c.SUBDOMAIN_SHARED}
    builder.spec["startupPolicy"] = c.STARTUP_POLICY_LEADER_CREATED
    builder.template["restartPolicy"] = c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART
    return builder


def _create_body(obj: Obj) -> Obj:
    body = copy.deepcopy(obj)
    for key in ("uid", "resourceVersion", "generation", "creationTimestamp"):
        body["metadata"].pop(key, None)
    body.pop("status", None)
    return body


@dataclass(frozen=True)
class Bad:
    """Objects to create (in order) and what the controllers must report about them."""

    objects: Callable[[str], list[tuple[Any, Obj]]]
    lws: str = ""  # the LWS whose condition and events tell about it ("" when none is involved)
    # A fragment every report (event note, condition message, log) must contain, e.g. the field.
    names: str = ""
    event_on: tuple[str, str] = ("", "")  # (kind, name) the Warning event is about, when no LWS
    extra: dict[str, Any] = field(default_factory=dict)


def lws_with(
    name: str, change: Callable[[b.LeaderWorkerSetBuilder], Any]
) -> Callable[[str], list[tuple[Any, Obj]]]:
    def objects(namespace: str) -> list[tuple[Any, Obj]]:
        builder = stored_lws(namespace, name)
        change(builder)
        return [(LEADERWORKERSETS, builder.obj())]

    return objects


def _rolling(**values: Any) -> Callable[[b.LeaderWorkerSetBuilder], Any]:
    def change(builder: b.LeaderWorkerSetBuilder) -> None:
        builder.spec["rolloutStrategy"]["rollingUpdateConfiguration"].update(values)

    return change


BAD_LWS = [
    pytest.param(
        Bad(lws_with("bad-surge", _rolling(maxSurge="abc")), "bad-surge", "maxSurge"),
        id="maxSurge not a number or percent",
    ),
    pytest.param(
        Bad(
            lws_with("bad-unavailable", _rolling(maxUnavailable="1.5%")), "bad-unavailable", "maxUnavailable"
        ),
        id="maxUnavailable fractional percent",
    ),
    pytest.param(
        Bad(
            lws_with(
                "bad-claim", lambda x: x.volume_claims([{"metadata": {"name": "Bad_Claim"}, "spec": {}}])
            ),
            "bad-claim",
            "volumeClaimTemplates",
        ),
        id="volume claim name the StatefulSet API refuses",
    ),
    pytest.param(
        Bad(
            lws_with("bad-container", lambda x: x.leader_container_name("Not_A_Name")),
            "bad-container",
            "name",
        ),
        id="container name the StatefulSet API refuses",
    ),
]


async def _warning_events(api: KubeClient, namespace: str, kind: str, name: str) -> list[Obj]:
    events = await api.list(EVENTS, namespace)
    return [
        e
        for e in events
        if e.get("type") == "Warning"
        and (e.get("regarding") or e.get("involvedObject") or {}).get("kind") == kind
        and (e.get("regarding") or e.get("involvedObject") or {}).get("name") == name
    ]


async def _canary_reconciled(api: KubeClient, namespace: str, name: str) -> None:
    """A healthy LWS created after the bad object gets its leader StatefulSet and a status."""
    await api.create(LEADERWORKERSETS, _create_body(stored_lws(namespace, name).obj()))

    async def reconciled() -> bool:
        sts = await api.get_or_none(STATEFULSETS, namespace, name)
        lws = await api.get(LEADERWORKERSETS, namespace, name)
        return sts is not None and bool((lws.get("status") or {}).get("conditions"))

    await eventually(reconciled, timeout=LONG_TIMEOUT, message=f"healthy LWS {name} not reconciled")


@pytest.mark.parametrize("bad", BAD_LWS)
async def test_a_bad_leaderworkerset_is_reported_and_others_go_on(
    webhook_client: KubeClient, controllers: RegisteredControllers, namespace: str, bad: Bad
) -> None:
    api = webhook_client  # the session's plain client (webhooks are off in these namespaces)
    with structlog.testing.capture_logs() as logs:
        for ref, obj in bad.objects(namespace):
            await api.create(ref, _create_body(obj))

        async def reported() -> Obj:
            events = await _warning_events(api, namespace, c.LWS_KIND, bad.lws)
            assert any(bad.names in (e.get("note") or e.get("message") or "") for e in events), events
            lws = await api.get(LEADERWORKERSETS, namespace, bad.lws)
            conditions = (lws.get("status") or {}).get("conditions") or []
            named = [x for x in conditions if bad.names in (x.get("message") or "")]
            assert named, conditions
            return named[0]

        condition = await eventually(reported, timeout=LONG_TIMEOUT, message=f"{bad.lws} not reported")
        assert condition["status"] in (c.CONDITION_TRUE, c.CONDITION_FALSE)
        await _canary_reconciled(api, namespace, "healthy")
    assert any(bad.names in str(entry) and entry.get("log_level") in ("warning", "error") for entry in logs)


# ----- pods and StatefulSets nobody of ours made -------------------------------------------------


def _pod(namespace: str, name: str, labels: dict[str, str], owner: Obj | None = None) -> Obj:
    pod = b.pod(name, namespace).labels(**labels).obj()
    pod["metadata"]["labels"] = labels
    if owner is not None:
        pod["metadata"]["ownerReferences"] = [owner]
    return pod


FOREIGN_OWNER = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "name": "healthy",
    "uid": "00000000-0000-0000-0000-000000000000",  # not the leader StatefulSet's uid
    "controller": True,
}


def _sts(namespace: str, name: str, labels: dict[str, str]) -> Obj:
    sts = b.StatefulSetBuilder(name, namespace).labels(labels).replicas(1).service_name("healthy")
    return sts.pods({"intruder": name}, b.worker_pod_spec()).obj()


@dataclass(frozen=True)
class Stray:
    ref: Any
    build: Callable[[str], Obj]
    event_reason: str = ""  # a Warning event of this reason on the object, when we report it
    names: str = ""


STRAYS = [
    pytest.param(
        Stray(
            PODS,
            lambda ns: _pod(ns, "stray", {c.LABEL_SET_NAME: "healthy"}),
            c.EVENT_INVALID_LABELS,
            c.LABEL_WORKER_INDEX,
        ),
        id="pod with the name label only",
    ),
    pytest.param(
        Stray(
            PODS,
            lambda ns: _pod(
                ns,
                "healthy-0",
                {
                    c.LABEL_SET_NAME: "healthy",
                    c.LABEL_WORKER_INDEX: "0",
                    c.LABEL_GROUP_INDEX: "0",
                    c.LABEL_GROUP_KEY: "foreign",
                },
                FOREIGN_OWNER,
            ),
        ),
        id="leader pod with a foreign group key and a wrong owner",
    ),
    pytest.param(
        Stray(
            PODS,
            lambda ns: _pod(
                ns,
                "healthy-0-1",
                {c.LABEL_SET_NAME: "healthy", c.LABEL_WORKER_INDEX: "1", c.LABEL_GROUP_INDEX: "0"},
                {**FOREIGN_OWNER, "name": "healthy-0"},
            ),
        ),
        id="worker pod owned by a StatefulSet that is not ours",
    ),
    pytest.param(
        Stray(
            STATEFULSETS,
            lambda ns: _sts(ns, "healthy-0", {c.LABEL_SET_NAME: "other", c.LABEL_GROUP_INDEX: "0"}),
        ),
        id="worker StatefulSet with another LWS's labels",
    ),
]


@pytest.mark.parametrize("stray", STRAYS)
async def test_a_stray_object_is_left_alone_and_others_go_on(
    webhook_client: KubeClient, controllers: RegisteredControllers, namespace: str, stray: Stray
) -> None:
    api = webhook_client  # the session's plain client (webhooks are off in these namespaces)
    await _canary_reconciled(api, namespace, "healthy")
    before = await api.get(LEADERWORKERSETS, namespace, "healthy")
    with structlog.testing.capture_logs() as logs:
        created = await api.create(stray.ref, stray.build(namespace))
        name = created["metadata"]["name"]
        if stray.event_reason:

            async def reported() -> bool:
                events = await _warning_events(api, namespace, created.get("kind") or stray.ref.kind, name)
                return any(
                    e.get("reason") == stray.event_reason and stray.names in (e.get("note") or "")
                    for e in events
                )

            await eventually(reported, timeout=LONG_TIMEOUT, message=f"{name} not reported")
        await _canary_reconciled(api, namespace, "after")
    # Nobody of ours deleted or rewrote the stray object, and the healthy LWS kept its spec and status.
    still = await api.get(stray.ref, namespace, name)
    assert still["metadata"]["uid"] == created["metadata"]["uid"]
    assert still["metadata"].get("deletionTimestamp") is None
    after = await api.get(LEADERWORKERSETS, namespace, "healthy")
    assert after["spec"] == before["spec"]
    assert (after.get("status") or {}).get("replicas") == (before.get("status") or {}).get("replicas")
    if stray.event_reason:
        assert any(stray.names in str(e) and e.get("log_level") == "warning" for e in logs)
    errors = [e for e in logs if e.get("log_level") == "error" and name in str(e)]
    assert not errors, errors[:3]


@pytest.mark.parametrize(
    "labels",
    [
        pytest.param({c.LABEL_SET_NAME: "other", c.LABEL_GROUP_INDEX: "0"}, id="labelled-for-another-lws"),
        pytest.param({"app": "someone-else"}, id="outside-our-caches"),
    ],
)
async def test_a_statefulset_holding_a_groups_worker_name_is_reported_and_left_alone(
    webhook_client: KubeClient, controllers: RegisteredControllers, namespace: str, labels: dict[str, str]
) -> None:
    """Upstream meets the create's AlreadyExists in silence and the group never gets its workers.
    Ours leaves the StatefulSet alone too (it is not ours to delete or adopt), but warns on the LWS,
    and builds the workers once it is gone."""
    api = webhook_client
    name = "blocked"
    await api.create(STATEFULSETS, _sts(namespace, f"{name}-0", labels))
    stray = await api.get(STATEFULSETS, namespace, f"{name}-0")
    await api.create(LEADERWORKERSETS, _create_body(stored_lws(namespace, name).obj()))

    async def revision_stored() -> Obj:
        current = await get_lws(api, namespace, name)
        assert (current.get("status") or {}).get("conditions"), "not reconciled yet"
        return current

    lws = await eventually(revision_stored, timeout=LONG_TIMEOUT)
    with structlog.testing.capture_logs() as logs:
        await create_leader_pods(api, lws, 0, 1)

        async def reported() -> list[Obj]:
            events = await _warning_events(api, namespace, "LeaderWorkerSet", name)
            found = [e for e in events if e.get("reason") == c.EVENT_FOREIGN_WORKER_STATEFULSET]
            assert found, f"no {c.EVENT_FOREIGN_WORKER_STATEFULSET} event yet"
            return found

        found = await eventually(reported, timeout=LONG_TIMEOUT)
    note = found[0].get("note") or found[0].get("message") or ""
    assert note.startswith(f"StatefulSet {name}-0 has the name of group 0's worker StatefulSet"), note
    assert "(controller: none)" in note, note
    assert any(e.get("log_level") == "warning" and f"{name}-0" in str(e) for e in logs)
    # Left alone: not deleted, not adopted, not rewritten.
    still = await api.get(STATEFULSETS, namespace, f"{name}-0")
    assert still["metadata"]["uid"] == stray["metadata"]["uid"]
    assert still["metadata"].get("deletionTimestamp") is None
    assert still["metadata"].get("ownerReferences") is None
    assert still["metadata"]["resourceVersion"] == stray["metadata"]["resourceVersion"]

    # Once it is gone, the group gets its own worker StatefulSet, controlled by the leader.
    await api.delete(STATEFULSETS, namespace, f"{name}-0")

    async def workers_built() -> Obj:
        workers = await api.get_or_none(STATEFULSETS, namespace, f"{name}-0")
        assert workers is not None, "not rebuilt"
        assert workers["metadata"]["uid"] != stray["metadata"]["uid"], "not rebuilt"
        return workers

    workers = await eventually(workers_built, timeout=LONG_TIMEOUT)
    owner = workers["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("Pod", f"{name}-0")
