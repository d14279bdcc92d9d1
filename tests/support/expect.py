"""`expect_*` helpers, shared by the integration and e2e tests: each states one invariant (most of
them upstream's validators) and waits until it holds. One name, one meaning: where two checks look
alike (the Available condition alone, or every group available), their names say which."""

from __future__ import annotations

from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import (
    CONTROLLER_REVISIONS,
    DISAGGREGATEDSETS,
    EVENTS,
    LEADERWORKERSETS,
    PODS,
    SERVICES,
    STATEFULSETS,
    ResourceRef,
)
from tests.support import processed
from tests.support.builders import NAME
from tests.support.builders.disaggregatedset import DS_NAME
from tests.support.kubelet import current_revision_key
from tests.support.lwsapi import leader_statefulset_revision_key, lws_revisions, pods_by_name
from tests.support.objects import LEADER, is_ready, labels, ordinals, uid
from tests.support.wait import LONG_TIMEOUT, consistently, eventually

Obj = dict[str, Any]


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


async def _get(api: KubeClient, ref: Any, namespace: str, name: str) -> Obj:
    try:
        return await api.get(ref, namespace, name)
    except Exception as err:
        raise AssertionError(f"{ref.kind} {namespace}/{name}: {err}") from err


async def expect_valid_leader_statefulset(api: KubeClient, ns: str, replicas: int, name: str = NAME) -> None:
    async def check() -> bool:
        lws = await _get(api, LEADERWORKERSETS, ns, name)
        sts = await _get(api, STATEFULSETS, ns, name)
        spec, template = sts["spec"], sts["spec"]["template"]
        annotations = template["metadata"].get("annotations") or {}
        lws_annotations = lws["metadata"].get("annotations") or {}
        key = current_revision_key(lws)
        _check(sts["metadata"]["labels"].get(c.LABEL_SET_NAME) == name, "name label")
        _check(
            annotations.get(c.ANNOTATION_EXCLUSIVE_TOPOLOGY)
            == lws_annotations.get(c.ANNOTATION_EXCLUSIVE_TOPOLOGY),
            "exclusive-topology annotation",
        )
        _check(annotations.get(c.ANNOTATION_SIZE) == str(lws["spec"]["leaderWorkerTemplate"]["size"]), "size")
        _check(
            sts["metadata"]["annotations"].get(c.ANNOTATION_REPLICAS) == str(lws["spec"]["replicas"]),
            "replicas annotation",
        )
        _check(
            template["metadata"]["labels"]
            == {c.LABEL_SET_NAME: name, c.LABEL_WORKER_INDEX: "0", c.LABEL_TEMPLATE_REVISION_HASH: key},
            f"template labels {template['metadata']['labels']} (want key {key})",
        )
        _check(sts["metadata"]["labels"].get(c.LABEL_TEMPLATE_REVISION_HASH) == key, "sts revision key")
        _check(spec["serviceName"] == name, "serviceName")
        _check(spec["replicas"] == replicas, f"replicas {spec['replicas']} != {replicas}")
        _check(spec["podManagementPolicy"] == "Parallel", "podManagementPolicy")
        _check(
            spec["selector"] == {"matchLabels": {c.LABEL_SET_NAME: name, c.LABEL_WORKER_INDEX: "0"}},
            "selector",
        )
        lwt = lws["spec"]["leaderWorkerTemplate"]
        want = (lwt.get("leaderTemplate") or lwt["workerTemplate"])["spec"]["containers"][0]["name"]
        _check(template["spec"]["containers"][0]["name"] == want, "leader container")
        return True

    await eventually(check)


async def expect_valid_worker_statefulsets(
    api: KubeClient, ns: str, *, leader_scheduled: bool = True, name: str = NAME
) -> None:
    async def check() -> bool:
        lws = await _get(api, LEADERWORKERSETS, ns, name)
        leader = await _get(api, STATEFULSETS, ns, name)
        all_sts = await api.list(STATEFULSETS, ns, label_selector=f"{c.LABEL_SET_NAME}={name}")
        size = int(lws["spec"]["leaderWorkerTemplate"]["size"])
        want = 0 if size == 1 else int(leader["spec"]["replicas"])
        if leader_scheduled:
            _check(len(all_sts) - 1 == want, f"worker statefulsets {len(all_sts) - 1} != {want}")
        else:
            _check(len(all_sts) == 1, "only the leader statefulset while leaders are unscheduled")
        key = current_revision_key(lws)
        exclusive = (lws["metadata"].get("annotations") or {}).get(c.ANNOTATION_EXCLUSIVE_TOPOLOGY)
        for sts in all_sts:
            sts_name = sts["metadata"]["name"]
            if sts_name == name:
                continue
            index = sts_name.rsplit("-", 1)[1]
            labels, template = sts["metadata"]["labels"], sts["spec"]["template"]
            annotations = template["metadata"].get("annotations") or {}
            _check(labels.get(c.LABEL_GROUP_INDEX) == index, "group-index label")
            _check(bool(labels.get(c.LABEL_GROUP_KEY)), "group-key label")
            _check(template["metadata"]["labels"].get(c.LABEL_GROUP_INDEX) == index, "template group-index")
            _check(annotations.get(c.ANNOTATION_SIZE) == str(size), "size annotation")
            _check(annotations.get(c.ANNOTATION_LEADER_NAME) == sts_name, "leader-name annotation")
            _check(annotations.get(c.ANNOTATION_EXCLUSIVE_TOPOLOGY) == exclusive, "exclusive-topology")
            _check(labels.get(c.LABEL_TEMPLATE_REVISION_HASH) == key, f"revision key of {sts_name}")
            _check(sts["spec"]["replicas"] == size - 1, "worker replicas")
            _check(sts["spec"]["podManagementPolicy"] == "Parallel", "podManagementPolicy")
            _check(sts["spec"]["ordinals"] == {"start": 1}, "ordinals.start")
            want_container = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
            _check(template["spec"]["containers"][0]["name"] == want_container["name"], "worker container")
        return True

    await eventually(check)


async def expect_valid_services(api: KubeClient, ns: str, count: int, name: str = NAME) -> None:
    async def check() -> bool:
        lws = await _get(api, LEADERWORKERSETS, ns, name)
        services = await api.list(SERVICES, ns)
        _check(len(services) == count, f"{len(services)} services, want {count}")
        policy = (lws["spec"].get("networkConfig") or {}).get("subdomainPolicy")
        wanted = (
            {name: {c.LABEL_SET_NAME: name}}
            if policy == c.SUBDOMAIN_SHARED
            else {
                f"{name}-{i}": {c.LABEL_SET_NAME: name, c.LABEL_GROUP_INDEX: str(i)}
                for i in range(lws["spec"]["replicas"])
            }
        )
        for service_name, selector in wanted.items():
            service = await _get(api, SERVICES, ns, service_name)
            _check(service["spec"]["clusterIP"] == "None", "headless")
            _check(service["spec"]["selector"] == selector, f"selector {service['spec']['selector']}")
            _check(service["spec"].get("publishNotReadyAddresses") is True, "publishNotReadyAddresses")
        return True

    await eventually(check)


async def expect_condition(
    api: KubeClient, ns: str, condition_type: str, status: str, message: str = "", name: str = NAME
) -> None:
    """Upstream's CheckLeaderWorkerSetHasCondition: type+status, current generation, message."""

    async def check() -> bool:
        lws = await _get(api, LEADERWORKERSETS, ns, name)
        for cond in (lws.get("status") or {}).get("conditions") or []:
            if cond["type"] == condition_type and cond["status"] == status:
                _check(cond.get("observedGeneration") == lws["metadata"]["generation"], "stale condition")
                _check(not message or cond.get("message") == message, f"message {cond.get('message')}")
                return True
        raise AssertionError(f"no {condition_type}={status} in {(lws.get('status') or {}).get('conditions')}")

    await eventually(check)


async def expect_no_condition(api: KubeClient, ns: str, condition_type: str, name: str = NAME) -> None:
    """The LWS's status holds no condition of `condition_type` (whatever its status)."""

    async def check() -> bool:
        lws = await _get(api, LEADERWORKERSETS, ns, name)
        types = [cond.get("type") for cond in (lws.get("status") or {}).get("conditions") or []]
        _check(condition_type not in types, f"{condition_type} still in {types}")
        return True

    await eventually(check)


async def expect_available_condition(api: KubeClient, ns: str) -> None:
    """The Available condition with upstream's all-groups-ready message (not the status counts:
    `expect_groups_available` checks those too)."""
    await expect_condition(api, ns, c.CONDITION_AVAILABLE, c.CONDITION_TRUE, c.MESSAGE_ALL_GROUPS_READY)


async def expect_progressing(api: KubeClient, ns: str) -> None:
    await expect_condition(api, ns, c.CONDITION_PROGRESSING, c.CONDITION_TRUE, c.MESSAGE_GROUPS_PROGRESSING)


async def expect_event(api: KubeClient, ns: str, reason: str, note: str, type_: str = "Normal") -> None:
    async def check() -> bool:
        events = await api.list(EVENTS, ns)
        for event in events:
            if event.get("reason") == reason and event.get("type") == type_ and event.get("note") == note:
                return True
        seen = [(e.get("reason"), e.get("note")) for e in events]
        raise AssertionError(f"no event {reason}/{note!r}; seen {seen}")

    await eventually(check)


async def events_with(api: KubeClient, ns: str, reason: str) -> list[Obj]:
    return [e for e in await api.list(EVENTS, ns) if e.get("reason") == reason]


async def expect_status_replicas(
    api: KubeClient, ns: str, ready: int, updated: int, name: str = NAME
) -> None:
    async def check() -> bool:
        status = (await _get(api, LEADERWORKERSETS, ns, name)).get("status") or {}
        got = (status.get("readyReplicas", 0), status.get("updatedReplicas", 0))
        _check(got == (ready, updated), f"ready/updated {got} != {(ready, updated)}")
        return True

    await eventually(check)


async def expect_partition(api: KubeClient, ns: str, partition: int, name: str = NAME) -> None:
    async def check() -> bool:
        sts = await _get(api, STATEFULSETS, ns, name)
        got = sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"]
        _check(got == partition, f"partition {got} != {partition}")
        return True

    await eventually(check)


def _lws_revision(revision: Obj) -> bool:
    """Ours: controlled by the LWS, or orphaned (a StatefulSet's own revisions copy our labels)."""
    controllers = [r for r in revision["metadata"].get("ownerReferences") or [] if r.get("controller")]
    return all(r["kind"] == c.LWS_KIND for r in controllers)


async def expect_revisions(api: KubeClient, ns: str, count: int, name: str = NAME) -> list[Obj]:
    """`count` revisions of the LWS: controlled by it or orphaned (compare `expect_lws_owned_revisions`)."""

    async def check() -> list[Obj]:
        listed = await api.list(CONTROLLER_REVISIONS, ns, label_selector=f"{c.LABEL_SET_NAME}={name}")
        revisions = [r for r in listed if _lws_revision(r)]
        _check(len(revisions) == count, f"{len(revisions)} revisions, want {count}")
        return revisions

    return await eventually(check)


async def expect_worker_statefulsets_not_created(api: KubeClient, ns: str, name: str = NAME) -> None:
    """No worker StatefulSet appears, held only after the pod controller processed every leader pod
    (in-process controllers, see `processed`): before that, the negative would hold trivially."""

    async def leaders() -> list[str]:
        selector = f"{c.LABEL_SET_NAME}={name},{c.LABEL_WORKER_INDEX}=0"
        found = [p["metadata"]["name"] for p in await api.list(PODS, ns, label_selector=selector)]
        _check(bool(found), f"no leader pods of {name} yet")
        return found

    async def only_leader() -> bool:
        all_sts = await api.list(STATEFULSETS, ns, label_selector=f"{c.LABEL_SET_NAME}={name}")
        return [s["metadata"]["name"] for s in all_sts] == [name]

    await processed.expect_pods_processed(api, ns, await eventually(leaders))
    await consistently(only_leader)


async def expect_pod_deleting(api: KubeClient, ns: str, pod: str) -> None:
    """Foreground deletion without a garbage collector: the pod stays with a deletionTimestamp."""

    async def check() -> bool:
        try:
            obj = await api.get(PODS, ns, pod)
        except Exception:
            return True
        _check(obj["metadata"].get("deletionTimestamp") is not None, f"{pod} not deleted")
        return True

    await eventually(check)


async def expect_pod_not_deleting(api: KubeClient, ns: str, pod: str) -> None:
    async def alive() -> bool:
        obj = await api.get(PODS, ns, pod)
        return obj["metadata"].get("deletionTimestamp") is None

    await consistently(alive)


async def expect_groups_available(api: KubeClient, ns: str, replicas: int, name: str = NAME) -> None:
    """Available with upstream's message, every group ready and updated, status counts agree."""
    await expect_condition(api, ns, c.CONDITION_AVAILABLE, c.CONDITION_TRUE, c.MESSAGE_ALL_GROUPS_READY, name)
    await expect_status_replicas(api, ns, ready=replicas, updated=replicas, name=name)

    async def counts() -> bool:
        lws = await api.get(LEADERWORKERSETS, ns, name)
        status = lws["status"]
        assert status.get("replicas") == replicas, f"status.replicas {status.get('replicas')} != {replicas}"
        conditions = {cond["type"]: cond["status"] for cond in status["conditions"]}
        assert conditions.get(c.CONDITION_PROGRESSING) != c.CONDITION_TRUE, f"still progressing: {conditions}"
        assert conditions.get(c.CONDITION_UPDATE_IN_PROGRESS) != c.CONDITION_TRUE, f"updating: {conditions}"
        return True

    await eventually(counts)


async def expect_valid_pods(api: KubeClient, ns: str, replicas: int, size: int, name: str = NAME) -> None:
    """upstream's ExpectValidPods and more: every group complete, Ready, on the current revision,
    labelled and annotated by the webhook, with the LWS_* variables first in every container."""

    async def check() -> bool:
        lws = await api.get(LEADERWORKERSETS, ns, name)
        key = await leader_statefulset_revision_key(api, ns, name)
        unique = (lws["spec"].get("networkConfig") or {}).get(
            "subdomainPolicy"
        ) == c.SUBDOMAIN_UNIQUE_PER_REPLICA
        pods = await pods_by_name(api, ns, name)
        want = {f"{name}-{g}" if w == 0 else f"{name}-{g}-{w}" for g in range(replicas) for w in range(size)}
        assert set(pods) == want, f"pods {sorted(pods)} != {sorted(want)}"
        for pod_name, pod in pods.items():
            group, worker = ordinals(pod_name, name)
            assert is_ready(pod), f"{pod_name} not ready"
            assert labels(pod).get(c.LABEL_SET_NAME) == name
            assert labels(pod).get(c.LABEL_GROUP_INDEX) == str(group), f"{pod_name} group index"
            assert labels(pod).get(c.LABEL_WORKER_INDEX) == str(worker), f"{pod_name} worker index"
            assert labels(pod).get(c.LABEL_TEMPLATE_REVISION_HASH) == key, f"{pod_name} not on revision {key}"
            assert labels(pod).get(c.LABEL_GROUP_KEY), f"{pod_name} has no group key"
            annotations = pod["metadata"].get("annotations") or {}
            assert annotations.get(c.ANNOTATION_SIZE) == str(size), f"{pod_name} size annotation"
            if worker:
                assert annotations.get(c.ANNOTATION_LEADER_NAME) == f"{name}-{group}", (
                    f"{pod_name} leader-name"
                )
            subdomain = f"{name}-{group}" if unique else name
            want_env = [
                {"name": c.ENV_LWS_LEADER_ADDRESS, "value": f"{name}-{group}.{subdomain}.{ns}"},
                {"name": c.ENV_LWS_GROUP_SIZE, "value": str(size)},
                {"name": c.ENV_LWS_WORKER_INDEX, "value": str(worker)},
            ]
            for container in pod["spec"]["containers"]:
                env = container.get("env") or []
                assert env[:3] == want_env, f"{pod_name}/{container['name']} env {env}"
        return True

    await eventually(check, timeout=LONG_TIMEOUT)


async def expect_deployed(api: KubeClient, ns: str, replicas: int, size: int, name: str = NAME) -> None:
    await expect_groups_available(api, ns, replicas, name)
    await expect_valid_leader_statefulset(api, ns, replicas, name)
    await expect_valid_worker_statefulsets(api, ns, name=name)
    await expect_valid_pods(api, ns, replicas, size, name)


async def expect_gone(api: KubeClient, ns: str, ref: ResourceRef) -> None:
    async def none_left() -> bool:
        left = [obj["metadata"]["name"] for obj in await api.list(ref, ns)]
        assert not left, f"{ref.kind}s left: {left}"
        return True

    await eventually(none_left, timeout=LONG_TIMEOUT)


async def expect_lws_owned_revisions(api: KubeClient, ns: str, count: int, name: str = NAME) -> None:
    """`count` revisions with a LeaderWorkerSet ownerReference (`lwsapi.lws_revisions`): on a full
    cluster the StatefulSet controller keeps revisions with our labels beside them."""

    async def check() -> bool:
        keys = [labels(r).get(c.LABEL_TEMPLATE_REVISION_HASH) for r in await lws_revisions(api, ns, name)]
        assert len(keys) == count, f"{len(keys)} revisions {keys}, want {count}"
        return True

    await eventually(check)


async def expect_first_group_back(api: KubeClient, ns: str, old_leader_uid: str, size: int) -> str:
    """Group 0 runs again with a new leader, every pod Ready; returns the new leader's UID."""

    async def back() -> str:
        pods = await pods_by_name(api, ns)
        group = {n: p for n, p in pods.items() if n == LEADER or n.startswith(f"{LEADER}-")}
        assert len(group) == size, sorted(group)
        assert uid(group[LEADER]) != old_leader_uid, "leader not recreated yet"
        assert all(is_ready(p) for p in group.values()), "group not ready yet"
        return uid(group[LEADER])

    return await eventually(back, timeout=LONG_TIMEOUT)


async def expect_ds_available(
    api: KubeClient, ns: str, want: dict[str, int], name: str = DS_NAME, slices: int = 1
) -> Obj:
    """Available with upstream's reason, and every role's totals equal desired x slices."""

    async def check() -> Obj:
        ds = await api.get(DISAGGREGATEDSETS, ns, name)
        status = ds.get("status") or {}
        assert status.get("observedGeneration") == ds["metadata"]["generation"], "status is not current"
        conditions = {x["type"]: x for x in status.get("conditions") or []}
        available = conditions.get(c.CONDITION_AVAILABLE) or {}
        assert (available.get("status"), available.get("reason")) == (
            c.CONDITION_TRUE,
            c.REASON_ALL_ROLES_READY,
        ), f"conditions {list(conditions.values())}, roles {status.get('roleStatuses')}"
        roles = {r["name"]: r for r in status.get("roleStatuses") or []}
        for role, per_slice in want.items():
            total = per_slice * slices
            got = roles.get(role, {})
            counts = (got.get("replicas", 0), got.get("readyReplicas", 0), got.get("updatedReplicas", 0))
            assert counts == (total, total, total), f"{role}: {counts} != {total}"
        return ds

    return await eventually(check, timeout=LONG_TIMEOUT)
